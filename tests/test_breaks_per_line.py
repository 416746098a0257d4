"""Each line of a statement that breaks the graph is a break of its own.

Dynamo resumes after the instruction that broke, so the rest of a statement that spans lines is traced
in the resumed frame, and each of its operations that breaks ends one more graph; Dynamo's log names
each line.  Breaks on one line are one finding, as the log gives them.  Each case is also run under
real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("masks-one-per-line", """
    import torch


    def f(x):
        m = x > 0
        return (
            x[m],  # breaks
            (x * 2)[m],  # breaks
            (x + 1)[m],  # breaks
        )
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("numbers-one-per-line", """
    import torch


    def f(x):
        s = (
            x.sum().item()  # breaks
            + x.max().item()  # breaks
        )
        return x * s
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("a-condition-over-two-lines", """
    import torch


    def f(x):
        if (x.sum() > 0  # breaks
                and x.max() > 1):  # breaks
            return x + 1
        return x
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("two-on-one-line-are-one", """
    import torch


    def f(x):
        n = int(x.sum()) + int(  # breaks
            x.max())
        return x * n
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
    ("keyword-arguments", """
    import torch


    def f(x):
        return dict(
            a=x.sum().item(),  # breaks
            b=x[x > 0],  # breaks
            c=x.tolist(),  # breaks
        )
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0]),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
