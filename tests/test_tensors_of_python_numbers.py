"""Indexing with a 0-d integer tensor breaks when its value is data (Dynamo needs it as a number), but not
when it is a tensor of one Python number made by ``torch.tensor``/``torch.as_tensor``, or arithmetic of such a
tensor with numbers: Dynamo's fake tensor keeps that value (``int(k)`` and ``if k > 1:`` on it still break).
Factories of other kinds (``torch.ones(())``, ``torch.scalar_tensor(n)``) make data.  A row of a 1-d tensor
(``torch.arange(n)``, ``torch.tensor([3, 1])``, iterated or indexed with an integer) is 0-d, and ``t in (600,
300)`` compares a tensor with numbers: a branch on it breaks.  A torch function of sizes
(``torch.div(x.shape[-1], 2)``) is a constant of the graph, taken as a size without a break, but ``int()`` or
``.item()`` of it still break.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("a-tensor-of-a-python-number-indexes-without-data", """
    import torch
    from torch import Tensor


    def f(boxes: Tensor, n: int):
        a = boxes[torch.tensor(2)]
        b = boxes[torch.tensor(n) * 2, :]
        c = boxes[torch.as_tensor(1, dtype=torch.long)]
        k = torch.tensor(n)
        if k > 1:  # breaks
            a = a * 2
        return a + b + c * int(k)  # breaks
    """, "f", "[(torch.randn(5, 4), 1)]"),
    ("other-factories-make-data", """
    import torch
    from torch import Tensor


    def f(boxes: Tensor, n: int):
        a = boxes[torch.ones((), dtype=torch.long)]  # breaks
        b = boxes[torch.zeros((), dtype=torch.long) + n]  # breaks
        c = boxes[torch.scalar_tensor(2).long()]  # breaks
        return a + b + c
    """, "f", "[(torch.randn(5, 4), 1)]"),
    ("rows-of-a-1d-tensor-are-0d", """
    import torch
    from torch import Tensor


    def f(boxes: Tensor, n: int):
        out = boxes[torch.tensor([3, 1])[0]]  # breaks
        for t in torch.arange(3):
            out = out + boxes[t]  # breaks
        return out
    """, "f", "[(torch.randn(5, 4), 1)]"),
    ("a-tensor-in-a-tuple-of-numbers", """
    import torch
    from torch import Tensor


    def f(x: Tensor, n: int):
        kept = []
        for t in torch.tensor([600, 3, 300]):
            if t in (600, 300):  # breaks
                kept.append(t)
        if n in (1, 2):
            x = x * 2
        return x, kept
    """, "f", "[(torch.randn(3), 1)]"),
    ("a-torch-function-of-sizes-read-into-python", """
    import torch
    from torch import Tensor


    def f(x: Tensor, n: int):
        h = torch.div(x.shape[-1], 2, rounding_mode="floor")
        y = x.new_zeros(h)
        return x[: int(h)] + y.sum() * torch.floor_divide(x.shape[-1], 2).item()  # breaks
    """, "f", "[(torch.randn(4), 1)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
