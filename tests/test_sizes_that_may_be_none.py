"""A variable that holds a size on one path and a Python value on another (an ``Optional[int]`` argument, a
local bound to ``None``) may still be ``None`` after the join: ``if n is None:`` is not decided, and what its
branch does is analysed (``int(index.max())`` breaks there).  A known number on the other path is never
``None``, so the branch is dead code.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("an-optional-int-argument-set-from-a-size", """
    from typing import Optional

    import torch
    from torch import Tensor


    def f(x: Tensor, index: Tensor, ptr: Optional[Tensor] = None, dim_size: Optional[int] = None):
        if ptr is not None:
            dim_size = ptr.numel() - 1
        if dim_size is None:
            dim_size = int(index.max()) + 1  # breaks
        return x * dim_size
    """, "f", "[(torch.ones(2), torch.tensor([0, 2]))]"),
    ("a-local-none-set-from-a-size", """
    from typing import Optional

    import torch
    from torch import Tensor


    def f(x: Tensor, index: Tensor, ptr: Optional[Tensor] = None):
        dim_size = None
        if ptr is not None:
            dim_size = ptr.numel()
        if dim_size is None:
            dim_size = int(index.max()) + 1  # breaks
        return x * dim_size
    """, "f", "[(torch.ones(2), torch.tensor([0, 2]))]"),
    ("a-known-number-is-never-none", """
    from typing import Optional

    import torch
    from torch import Tensor


    def f(x: Tensor, ptr: Optional[Tensor] = None):
        n = 0
        if ptr is not None:
            n = ptr.numel()
        if n is None:
            n = int(x.max())
        return x * n
    """, "f", "[(torch.ones(2),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
