"""What ``torch.compile(...)`` returned, handed to a function of the module that calls it (``drive(step_c,
x)`` with ``def drive(step_fn, x): ... step_fn(x, i)``): those calls run the compiled function, so the
values the driver's loop passes are compared as the script's own calls' are (DYN206; measured on torch
2.13: ``i == 0``, then the int is dynamic)."""
from __future__ import annotations

from helpers import script_case_tests

DRIVER = """\
import torch


def step(x, i):
    return x * (i + 1) / 4


def drive(step_fn, x):
    for i in range(4):
        x = step_fn(x, i)
    return x


if __name__ == "__main__":
    step_c = torch.compile(step, backend="eager")
    drive(step_c, torch.randn(3))
"""

#: name -> (script, DYN206 lines, recompiles)
CASES = {"a-loop-of-the-driver": (DRIVER, [4], 1),
         "one-value": (DRIVER.replace("step_fn(x, i)", "step_fn(x, 2)"), [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")
