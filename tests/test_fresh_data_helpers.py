"""DYN204 where the data a loop hands a compiled function comes from a helper that draws it afresh and returns
it in a tuple the loop unpacks (``x, y = make_batch(h, w)``): a size taken from that data at a break changes
from call to call, so the resumed frame recompiles once; the confusion matrix ``torch.bincount(idx,
minlength=n * n)`` counts from it keeps its size (labels below ``n`` never lengthen it), so it is not
reported.  The script also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

HELPER_BATCH = """\
import torch


def confusion(pred, target, n, ignore):
    valid = target != ignore
    idx = target[valid] * n + pred[valid]
    return torch.bincount(idx, minlength=n * n).reshape(n, n)


def evaluate(logits, masks):
    return confusion(logits.argmax(1), masks, 4, 255)


def make_batch(h, w):
    return torch.randn(1, 4, h, w), {target}


if __name__ == "__main__":
    torch.manual_seed(0)
    f = torch.compile(evaluate, backend="eager")
    for _ in range(3):
        x, y = make_batch(16, 16)
        f(x, y)
"""

test_check, test_dynamo = script_case_tests({
    "drawn-by-a-helper": (HELPER_BATCH.format(
        target="torch.where(torch.rand(1, h, w) > 0.3, torch.randint(0, 4, (1, h, w)), 255)"), [6], 2),
}, "DYN204")
