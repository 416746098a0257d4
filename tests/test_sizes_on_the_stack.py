"""DYN204 and a tensor of data-dependent size that a break leaves on the stack of the frame resumed after it
(``return x[x > 0].sum()``): that frame holds a tensor, so Dynamo compiles it and guards on the tensor's size,
which changes with the data the calls draw afresh (measured on torch 2.13: ``tensor '___stack0' size
mismatch``, once); a number taken at the break and only rounded there leaves nothing tensor-related, and the
frame is skipped."""
from __future__ import annotations

from helpers import script_case_tests

MASKED = """\
import torch


def positive_sum(x):
    return x[x > 0].sum()


if __name__ == "__main__":
    torch.manual_seed(0)
    f = torch.compile(positive_sum, backend="eager")
    f(torch.randn(4, 3))
    f(torch.randn(4, 3))
"""

ROUNDED = MASKED.replace("return x[x > 0].sum()", "return round(x.sum().item(), 2)")

#: name -> (script, DYN204 lines, recompiles)
CASES = {"mask-index-reduced-after-the-break": (MASKED, [5], 1),
         "number-rounded-after-the-break": (ROUNDED, [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN204")
