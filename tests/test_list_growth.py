"""A list bound to a local name and grown with ``append``/``insert``/``extend`` holds what was added: a list made
empty and filled with tensors in a loop holds tensors after it, so a branch on the data of one of them breaks
(DYN101), as it does under Dynamo; a list of numbers stays one.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("appended-in-loop", """
    from typing import List

    import torch
    import torch.nn as nn


    class MultiStage(nn.Module):
        def __init__(self, n: int = 3):
            super().__init__()
            self.stages = nn.ModuleList([nn.Conv2d(4, 4, 3, padding=1) for _ in range(n)])

        def forward(self, x: torch.Tensor) -> List[torch.Tensor]:
            outputs: List[torch.Tensor] = []
            for stage in self.stages:
                x = stage(x)
                outputs.append(x)
            if outputs[-1].max() > 1e4:  # breaks
                outputs = [o.clamp(-1e4, 1e4) for o in outputs]
            return outputs
    """, "MultiStage", "[(torch.rand(1, 4, 8, 8),)]"),
    ("extended-and-inserted", """
    import torch


    def f(x: torch.Tensor):
        parts = []
        parts.extend(x.unbind(0))
        parts.insert(0, x.sum(0))
        sizes = []
        sizes.append(x.shape[0])
        if parts[1].sum() > 0:  # breaks
            return x * sizes[0]
        return x
    """, "f", "[(torch.ones(3, 2),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
