"""DYN206 for a container the caller keeps and changes in place between two calls of a compiled function
(``history.append(y)`` after ``f(x, history)``, ``coeffs["mse"] = 0.5``, ``disabled.add(2)``): Dynamo guards
on its length (a dict's keys) and on the Python values of the elements the function reads, so the next call
recompiles.  A container built afresh before each call, or an element replaced by a tensor, changes nothing
Dynamo guards.  Each script is also run under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

STEP = """\
import torch


def step(x, history):
    out = x
    for h in history:
        out = out + 0.5 * h
    return out.tanh()
"""

GROWING = STEP + """

if __name__ == "__main__":
    f = torch.compile(step, backend="eager")
    x = torch.randn(4)
    history = []
    for t in range(4):
        y = f(x, history)
        history.append(y)
"""

SETTINGS = """\
import torch


def loss(p, coeffs, disabled):
    total = coeffs["mse"] * p.pow(2).mean()
    if coeffs.get("smooth", 0.0) > 0:
        total = total + coeffs["smooth"] * p.abs().mean()
    return torch.stack([p[i] * 0 if i in disabled else p[i] for i in range(p.shape[0])]).sum() + total


if __name__ == "__main__":
    f = torch.compile(loss, backend="eager")
    p = torch.randn(4)
    coeffs = {"mse": 1.0}
    disabled = {1}
    f(p, coeffs, disabled)
    coeffs["mse"] = 0.5
    f(p, coeffs, disabled)
    coeffs["smooth"] = 0.1
    disabled.add(2)
    f(p, coeffs, disabled)
"""

FRESH_EACH_CALL = STEP + """

if __name__ == "__main__":
    f = torch.compile(step, backend="eager")
    x = torch.randn(4)
    for t in range(4):
        history = []
        history.append(x * t)
        history[0] = x + t
        f(x, history)
"""

TENSOR_REPLACED = FRESH_EACH_CALL.replace("""    for t in range(4):
        history = []
        history.append(x * t)
        history[0] = x + t
        f(x, history)
""", """    history = [x.clone(), x.clone()]
    for t in range(4):
        f(x, history)
        history[0] = x * t
""")

#: name -> (script, DYN206 lines, recompiles Dynamo logs)
CASES = {
    "a-list-grown-in-the-loop-of-the-calls": (GROWING, [4], 3),
    "dict-items-and-set-members-changed-between-calls": (SETTINGS, [4], 2),
    "a-list-made-afresh-before-each-call": (FRESH_EACH_CALL, [], 0),
    "a-tensor-element-replaced-between-calls": (TENSOR_REPLACED, [], 0),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")
