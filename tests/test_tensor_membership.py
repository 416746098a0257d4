"""DYN102: ``item in t`` of a tensor ``t``.  ``Tensor.__contains__`` reads ``(item == t).any()`` into a Python bool
with ``.item()`` inside torch's code, so the graph breaks at the ``in`` and Dynamo runs the rest of the function
eagerly (a later break there is not reported); so does a NumPy array's, which Dynamo holds as a tensor.  With ``capture_scalar_outputs`` the test is traced, and a branch on
it breaks.  ``in`` on a list of tensors, or on an argument nothing shows to be a tensor, is not reported.  Each case
is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("returned-and-branched", """
    import torch


    def has_blank(seq: torch.Tensor, blank: int) -> bool:
        return blank in seq  # breaks


    def f(tokens: torch.Tensor, eos: int):
        if eos in tokens:  # breaks
            print("stop")
            return tokens * 2, has_blank(tokens, 0)
        return tokens, has_blank(tokens, 0)
    """, "f", "[(torch.tensor([1, 2, 3]), 2)]"),
    ("tensor-item", """
    import torch


    def f(tokens: torch.Tensor, t: torch.Tensor):
        seen = t in tokens  # breaks
        return tokens * 2, seen
    """, "f", "[(torch.tensor([1, 2, 3]), torch.tensor(2))]"),
    ("numpy-array", """
    import torch


    def f(iou: torch.Tensor):
        best = iou.argmax(1).cpu().numpy()
        unmatched = []
        for d in range(iou.shape[1]):
            if d not in best:  # breaks
                unmatched.append(d)
        return best, unmatched
    """, "f", "[(torch.rand(3, 5),)]"),
    ("captured", """
    import torch
    import torch._dynamo

    torch._dynamo.config.capture_scalar_outputs = True


    def f(tokens: torch.Tensor, eos: int):
        found = eos in tokens
        if found:  # breaks
            return tokens * 2
        return tokens
    """, "f", "[(torch.tensor([1, 2, 3]), 2)]"),
    ("list-of-tensors-and-untyped", """
    import torch


    def f(x: torch.Tensor, pool, k: int):
        bank = [x, x + 1]
        hit = x in bank
        return x * 2 if k in pool else x, hit
    """, "f", "[(torch.tensor([1, 2, 3]), (1, 2), 2)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
