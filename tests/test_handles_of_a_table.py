"""A compile handle bound in a loop over a table of functions (``for fn in (g, f): cf = torch.compile(fn);
cf(x)``) runs each function of the table in turn: its calls are calls of each, for DYN206 (``None`` at the
loop's call, a tensor at a later one) and DYN208 (a call under ``torch.no_grad()``). Measured on torch
2.13."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_script, script_case_tests

SCRIPT = """\
import torch


def g(x):
    return x + 1


def f(x, mask=None):
    if mask is not None:
        x = x * mask
    return x.sum()


if __name__ == "__main__":
    for fn in (g, f):
        cf = torch.compile(fn, backend="eager")
        cf(torch.randn(4))
    cf = torch.compile(f, backend="eager")
    cf(torch.randn(4), torch.ones(4))
"""
#: name -> (script, DYN206 lines, recompiles)
CASES = {"none-then-a-tensor": (SCRIPT, [8], 1),
         "none-each-time": (SCRIPT.replace("cf(torch.randn(4), torch.ones(4))", "cf(torch.randn(4))"), [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")

GRAD = SCRIPT.replace("    cf = torch.compile(f, backend=\"eager\")\n    cf(torch.randn(4), torch.ones(4))\n",
                      "        with torch.no_grad():\n            cf(torch.randn(4))\n")


def test_check_grad_mode() -> None:
    assert sorted((d.line, d.code) for d in check(GRAD) if d.code.startswith("DYN2")) == [(4, "DYN208"),
                                                                                          (8, "DYN208")]


@requires_torch
def test_dynamo_grad_mode(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "grad", GRAD)
    assert len(messages) == 2 and all("grad_mode" in m for m in messages), messages
