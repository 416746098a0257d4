"""The special methods of a class of the checked code that Python calls for an operation on an instance:
``with obj:`` runs ``__enter__``/``__exit__``, ``len(obj)`` ``__len__``, ``for x in obj`` and a comprehension over
it ``__iter__``, ``obj[i]`` ``__getitem__``, ``if obj:`` ``__bool__`` (else ``__len__``).  Dynamo inlines them,
so what breaks in their bodies breaks the caller's graph; a break in ``__enter__`` makes Dynamo run the rest of
the caller eagerly (the block, ``__exit__`` and what follows).  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("context-length-and-items", """
    import time

    import torch


    class Bank:
        def __init__(self, s: torch.Tensor):
            self.s = s

        def __enter__(self):
            self.t0 = time.perf_counter()  # breaks
            return self

        def __exit__(self, *exc):
            return False

        def __len__(self) -> int:
            return int((self.s > 0).sum())  # breaks

        def __getitem__(self, i: int) -> torch.Tensor:
            return self.s[: int(self.s[i])]  # breaks


    def f(x: torch.Tensor):
        n = len(Bank(x))
        first = Bank(x)[0]
        with Bank(x) as bank:
            y = bank.s + 1
        return x * n, first, y
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("enter-breaks", """
    import time

    import torch


    class Timer:
        def __enter__(self):
            self.t0 = time.perf_counter()  # breaks
            return self

        def __exit__(self, *exc):
            self.elapsed = time.perf_counter() - self.t0
            return False


    def f(x: torch.Tensor):
        h = x.relu()
        with Timer():
            y = torch.nn.functional.layer_norm(h, h.shape[-1:])
            print("in the block")
        print("after")
        return y * 2.0
    """, "f", "[(torch.randn(4, 8),)]"),
    ("iterated", """
    import torch


    class Positives:
        def __init__(self, s: torch.Tensor):
            self.s = s

        def __iter__(self):
            for i in range(self.s.shape[0]):
                if self.s[i] > 0:  # breaks
                    yield self.s[i]


    def f(x: torch.Tensor):
        out = []
        for v in Positives(x):
            out.append(v * 2)
        return out
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("truth", """
    import torch


    class Buffer:
        def __init__(self, n: torch.Tensor):
            self.n = n

        def __bool__(self) -> bool:
            return bool(self.n > 0)  # breaks


    def f(x: torch.Tensor, n: torch.Tensor):
        buf = Buffer(n)
        if buf:
            return x + 1
        return x
    """, "f", "[(torch.zeros(2), torch.tensor(3))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
