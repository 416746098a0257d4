"""What sampling code of training loops does under Dynamo: a ``collections.deque`` is a Python sequence, so a
tensor (or a traced NumPy array's element) indexing it is read into a Python int (``.item()``); an array a
NumPy generator's method draws with a ``size`` is made outside the graph (the call breaks) and is a tensor
input of the frame resumed there, whose ``.tolist()`` breaks again; a ``torch.Generator`` argument cannot be
handed to an op in the graph (one that may be None can, as None, unless every caller in the project passes
one), and each of its methods breaks; of a
``random.Random`` Dynamo traces ``random()``, ``randint``, ``randrange`` and ``uniform`` (a branch on the number
breaks) and breaks on any other method; a ``torch.quasirandom.SobolEngine`` is neither built nor drawn from in
the graph.  Each case is also run under real Dynamo
(torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("deque-indexed-by-tensors", """
    import collections

    import numpy as np
    import torch


    class Replay:
        def __init__(self, items: list):
            self.buffer = collections.deque(items, maxlen=16)

        def sample(self, batch_size: int):
            idx = torch.randint(0, len(self.buffer), (batch_size,))
            batch = [self.buffer[i] for i in idx]  # breaks
            more = np.random.randint(0, len(self.buffer), size=batch_size)
            extra = [self.buffer[i] for i in more]  # breaks
            return torch.stack(batch), torch.stack(extra)


    def f(x: torch.Tensor):
        return Replay([x[0], x[1], x[2]]).sample(4)  # breaks
    """, "f", "[(torch.randn(3, 2),)]"),
    ("numpy-generator-array", """
    from typing import List

    import numpy as np
    import torch

    RNG = np.random.default_rng(0)


    def f(x: torch.Tensor, episodes: List[torch.Tensor]):
        ep_idx = RNG.integers(0, len(episodes), size=4)  # breaks
        chosen = [episodes[i] for i in ep_idx.tolist()]  # breaks
        return torch.stack(chosen) + x
    """, "f", "[(torch.randn(3), [torch.randn(3) for _ in range(5)])]"),
    ("numpy-generator-choice", """
    import numpy as np
    import torch

    RNG = np.random.default_rng(0)


    def g(x: torch.Tensor):
        idx = RNG.choice(x.shape[0], 2, replace=False)  # breaks
        return x[torch.as_tensor(idx)]
    """, "g", "[(torch.randn(5, 3),)]"),
    ("torch-generator-argument", """
    from typing import Optional

    import torch


    def noise(action: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return action + torch.randn(action.shape, generator=gen)  # breaks


    def maybe_noise(action: torch.Tensor, gen: Optional[torch.Generator] = None) -> torch.Tensor:
        return action + torch.randn(action.shape, generator=gen)


    def f(x: torch.Tensor, g: torch.Generator):
        return noise(x, g) + maybe_noise(x)
    """, "f", "[(torch.zeros(2), torch.Generator().manual_seed(0))]"),
    ("optional-generator-every-caller-passes", """
    from typing import Optional

    import torch

    G = torch.Generator().manual_seed(0)


    def noise(action: torch.Tensor, gen: Optional[torch.Generator] = None) -> torch.Tensor:
        return action + torch.randn(action.shape, generator=gen)  # breaks


    def run():
        return noise(torch.zeros(2), G), noise(torch.ones(2), gen=G)
    """, "noise", "[(torch.zeros(2), torch.Generator().manual_seed(0))]"),
    ("generator-methods", """
    import torch


    def f(x: torch.Tensor, g: torch.Generator):
        g.manual_seed(3)  # breaks
        seed = g.initial_seed()  # breaks
        return x + seed
    """, "f", "[(torch.zeros(2), torch.Generator().manual_seed(0))]"),
    ("sobol-engine", """
    import torch


    def f(bounds: torch.Tensor):
        sobol = torch.quasirandom.SobolEngine(dimension=bounds.shape[1], scramble=True, seed=0)  # breaks
        raw = sobol.draw(8, dtype=bounds.dtype)  # breaks
        return bounds[0] + (bounds[1] - bounds[0]) * raw
    """, "f", "[(torch.tensor([[0.0, 0.0], [1.0, 2.0]]),)]"),
    ("random-instance", """
    import random

    import torch

    RNG = random.Random(0)


    def f(x: torch.Tensor):
        if RNG.random() > 0.5:  # breaks
            x = x * 0.5
        if RNG.gauss(0.0, 1.0) > 0.0:  # breaks
            x = x + 1
        return x * RNG.uniform(0.5, 1.5)
    """, "f", "[(torch.zeros(2),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
