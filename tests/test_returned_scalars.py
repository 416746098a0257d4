"""DYN204 for a number taken from tensor data at a graph break and then returned (``correct = (...).item()``,
``return correct, probs.mean()``): Python needs its value to hand it back, so the frame resumed after the break,
compiled for the tensor work that follows, is guarded on it and recompiles when it first changes.  A number
returned at once, with nothing compiled after the break, guards nothing; one returned after a later break
(a ``print``) is guarded both in the frame resumed at its own break, which runs up to the print, and in the one
resumed after the print.  Each script also
runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

RETURNED = """\
import torch


@torch.compile(backend="eager")
def evaluate(logits, labels):
    probs = logits.softmax(-1)
    correct = (probs.argmax(-1) == labels).sum().item()
{before}    return {returned}


if __name__ == "__main__":
    torch.manual_seed(0)
    for _ in range(3):
        evaluate(torch.randn(16, 4), torch.randint(0, 4, (16,)))
"""

test_check, test_dynamo = script_case_tests({
    "returned-beside-tensor-work": (
        RETURNED.format(before="", returned="correct, probs.max(-1).values.mean()"), [8], 1),
    "returned-alone": (RETURNED.format(before="", returned="correct"), [], 0),
}, "DYN204")
# (Dynamo recompiles it there too, in the frame resumed at the break and in the one after the print: 2 to 4 times,
# as the process's earlier compiles leave it; the count is not pinned)
test_check_after_a_print = script_case_tests({"returned-after-another-break": (RETURNED.format(
    before='    print("evaluated")\n', returned="correct, probs.max(-1).values.mean()"), [9], 0)}, "DYN204")[0]

# made by the `return` itself, in one branch, with tensor work only in the other: the frame resumed after the
# break hands the number back and does nothing else
MADE_BY_THE_RETURN = """\
import torch


@torch.compile(backend="eager")
def evaluate(u, ref, exact):
    if exact:
        return ((u - ref).norm() / ref.norm()).item()
    return u.abs().max() * 2


if __name__ == "__main__":
    torch.manual_seed(0)
    for _ in range(3):
        evaluate(torch.randn(8), torch.randn(8), True)
"""

test_check_made, test_dynamo_made = script_case_tests({"made-by-the-return": (MADE_BY_THE_RETURN, [], 0)}, "DYN204")
