"""An argument of a tensor method that breaks the graph while it is computed breaks the method call too: Dynamo
resumes with the bound method already on its stack, a builtin it then calls as a function marked as skipped.
A ``torch.*`` function, a module call, an operator or a list's method do not (the resumed frame calls them
again); nor does a call inside a loop, whose frame Dynamo runs eagerly.  Each case is also run under real
Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

_HELPER = """
    import torch
    from torch import Tensor


    def pad_mask(lengths: Tensor) -> Tensor:
        n = int(lengths.max())  # breaks
        return torch.arange(n)[None, :] >= lengths[:, None]
    """

CASES = [
    ("a-helper-that-breaks-in-an-argument", _HELPER + """


    def f(x: Tensor, lengths: Tensor):
        y = x.masked_fill(pad_mask(lengths), 0.0)  # breaks
        z = torch.masked_fill(y, pad_mask(lengths), 1.0)
        w = z + pad_mask(lengths).float()
        return w.mul(2).add(pad_mask(lengths).float().sum())  # breaks
    """, "f", "[(torch.randn(2, 5), torch.tensor([5, 3]))]"),
    ("a-keyword-argument-and-a-nested-method", _HELPER + """


    def f(x: Tensor, lengths: Tensor):
        w = torch.ones(5)
        y = x.masked_fill(mask=pad_mask(lengths), value=0.0)  # breaks
        return y.mul(w.masked_fill(pad_mask(lengths)[0], 0.0))  # breaks
    """, "f", "[(torch.randn(2, 5), torch.tensor([5, 3]))]"),
    ("an-argument-that-breaks-on-another-line", """
    import torch
    from torch import Tensor


    def f(x: Tensor, lengths: Tensor):
        y = x.masked_fill(  # breaks
            x > lengths.max().item(),  # breaks
            0.0,
        )
        out = []
        out.append(x > lengths.max().item())  # breaks
        return y + out[0]
    """, "f", "[(torch.randn(2, 5), torch.tensor([5, 3]))]"),
    ("in-a-loop-the-frame-runs-eagerly", _HELPER + """


    def f(x: Tensor, lengths: Tensor):
        for _ in range(2):
            x = x.masked_fill(pad_mask(lengths), 0.0)
        return x + 1
    """, "f", "[(torch.randn(2, 5), torch.tensor([5, 3]))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


LOGGER_CASES = [
    ("every-method-of-a-logger", """
    import logging

    import torch

    logger = logging.getLogger(__name__)


    def f(x):
        if logger.isEnabledFor(logging.DEBUG):  # breaks
            x = x + 1
        level = logger.getEffectiveLevel()  # breaks
        return x * 2
    """, "f", "[(torch.randn(2, 5),)]"),
]

test_logger_lines, test_logger_lines_break_under_dynamo = marked_case_tests(LOGGER_CASES)
