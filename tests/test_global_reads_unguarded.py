"""DYN201 and DYN204 stay silent where Dynamo guards nothing (measured on torch 2.13): a global read only in a
helper that the frame resumed after a break calls, when that frame has no graph (`record(stamp=time.time())`,
whose helper only appends to a global list), and a global tensor, which is guarded on its shape, dtype and
device only (`POS_TABLE = torch.randn(8, 4)` again)."""
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
