"""What a torch function gives when the code calls it indirectly: through ``map`` (``map(torch.std, (a,
b))``), through a ``functools.partial`` that binds keywords (``partial(F.smooth_l1_loss, beta=0.5)``: one
tensor whatever the keywords, unlike ``partial(torch.max, dim=0)``), and what a NamedTuple's field holds
when it is read by position (``dec[0]``).  A branch on any of them reads tensor data (measured on torch
2.13)."""
from helpers import break_tests

CODE = """\
import functools
from typing import NamedTuple

import torch
import torch.nn.functional as F


class Decision(NamedTuple):
    speech: torch.Tensor
    level: torch.Tensor


def classify(chunk: torch.Tensor) -> Decision:
    level = chunk.pow(2).mean()
    return Decision(level > 0.5, level)


class Trainer:
    def __init__(self):
        self.point_loss = functools.partial(F.smooth_l1_loss, beta=0.5)

    def step(self, pred, target):
        loss = self.point_loss(pred, target)
        if loss > 50.0:
            return pred.sum() * 0
        return loss


def shrink(approx, detail):
    approx_sd, detail_sd = map(torch.std, (approx, detail))
    if detail_sd > approx_sd:
        return detail * 0.5
    return detail


def vad(chunk):
    dec = classify(chunk)
    if dec[0]:
        return dec[1]
    return dec[1] * 0


def main(x):
    step = torch.compile(Trainer().step, backend="eager")
    return (step(x, x + 1), torch.compile(shrink, backend="eager")(x, x * 2),
            torch.compile(vad, backend="eager")(x))
"""
test_check, test_dynamo = break_tests(CODE, {(24, "DYN101"), (31, "DYN101"), (38, "DYN101")},
                                      "[(torch.randn(8),)]")
