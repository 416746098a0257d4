"""DYN201 and DYN204 stay silent where Dynamo guards nothing (measured on torch 2.13): a global read only in a
helper that the frame resumed after a break calls, when that frame has no graph (`record(stamp=time.time())`,
whose helper only appends to a global list), and a global tensor, which is guarded on its shape, dtype and
device only (`POS_TABLE = torch.randn(8, 4)` again); and a global torch module of which only attributes are
changed (`model.step_count += 1`), read by code that does not read those attributes."""
from __future__ import annotations

from helpers import script_case_tests

CALLBACK = """\
import time
from collections import defaultdict

import torch

seen = defaultdict(list)


def record(loss, stamp):
    seen["stamp"].append(stamp)


def loss_fn(x):
    loss = (x * x).mean()
    record(loss=loss, stamp=time.time())
    return loss


if __name__ == "__main__":
    f = torch.compile(loss_fn, backend="eager")
    for _ in range(4):
        f(torch.randn(4))
"""

TABLE = """\
import torch

POS_TABLE = torch.randn(8, 4)


def add_positions(x):
    return x + POS_TABLE[: x.shape[0]]


if __name__ == "__main__":
    f = torch.compile(add_positions, backend="eager")
    f(torch.randn(5, 4))
    POS_TABLE = torch.randn(8, 4)
    f(torch.randn(5, 4))
"""

#: name -> (script, lines, recompiles)
CASES = {"a-callback-in-a-graphless-resumed-frame": (CALLBACK, [], 0),
         "a-global-tensor-replaced-by-one-of-its-shape": (TABLE, [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN201")
test_check_values_at_breaks, _ = script_case_tests(CASES, "DYN204")

# a global torch module whose changes are attribute stores (`model.step_count += 1`): guarded on the attributes
# the traced code reads, which torch's own module code never reads, so only a read of `model.step_count` is
MODULE_ATTRIBUTE = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
model.step_count = 0


@torch.compile(backend="eager")
def train_step(x):
    out = model(x).sum()
    {count}
    return out.detach()


@torch.compile(backend="eager")
def evaluate(x):
    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train()
    return out.sum()


if __name__ == "__main__":
    for _ in range(3):
        train_step(torch.randn(2, 4))
        model.step_count += 1
        evaluate(torch.randn(2, 4))
"""

test_check_module_attributes, test_dynamo_module_attributes = script_case_tests({
    "attribute-read-by-one": (MODULE_ATTRIBUTE.format(count="out = out * (1 + model.step_count)"), [11], 2),
    "attribute-read-by-none": (MODULE_ATTRIBUTE.format(count="pass"), [], 0),
}, "DYN201")
