"""DYN203 in the part of a function Dynamo runs eagerly because a loop of it breaks: an ``if`` between a read
and that loop whose branch returns (``if accumulate: return loss``) lets the calls that take it finish before
the loop, so Dynamo compiles the frame for them and guards what they read there (``self.micro_step == 0``);
without it, every call reaches the loop and nothing is guarded.  The scripts also run under real Dynamo (torch
2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

ACCUMULATING_STEP = """\
import torch


class Trainer:
    def __init__(self):
        self.w = torch.ones(4, requires_grad=True)
        self.micro_step = 0

    def step(self, x, accumulate):
        loss = (self.w * x).sum()
        loss.backward()
        self.micro_step += 1
        if accumulate:
            {early}
        for g in [self.w.grad]:
            if not torch.isfinite(g).all():
                print("skipping a step")
        self.w.grad = None
        return loss.detach()


if __name__ == "__main__":
    t = Trainer()
    fn = torch.compile(t.step, backend="eager")
    for it in range(4):
        fn(torch.randn(4), it % 2 == 0)
"""

test_check, test_dynamo = script_case_tests({
    "returns-before-the-loop": (ACCUMULATING_STEP.format(early="return loss.detach()"), [12], 1),
    "always-reaches-the-loop": (ACCUMULATING_STEP.format(early="loss = loss.detach()"), [], 0),
}, "DYN203")
