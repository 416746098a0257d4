"""With ``capture_scalar_outputs`` on, a number taken from tensor data stays symbolic, and a use of it
where Python needs its value makes Dynamo fail to compile (a Python list or tuple index, read or
updated in place, a seed) or
break (a store at it, ``range(n)``) where the code without the flag broke at the extraction and ran.
``check`` reports those uses when the flag is on (declared or set by the code itself), and the
capture-flags fix refuses to turn the flag on for code that reaches one, naming it.  Checked as text
and the same source through real Dynamo."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check
from dynalint.config.settings import Scope, Settings
from dynalint.engine.fixing import fix_source

SOURCE = """\
import random

import torch

SIZES = [2, 3, 4]


def pick(x):
    n = int(x.sum().item())
    return x * SIZES[n % 3]  # raises


def choose(x):
    k = (2, 3, 4)
    i = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
    return x * k[i]  # raises


def seeded(x):
    n = int(x.sum().item())
    return x * random.Random(n).random()  # raises


def repeat(x):
    n = int(x.sum().item())
    for _ in range(n):  # breaks
        x = x + 1
    return x


def store(x):
    n = int(x.sum().item())
    out = [0, 0, 0]
    out[n] = 1  # breaks
    return x * out[0]


def head(x):
    n = int(x.sum().item())
    return x * sum(SIZES[:n])  # breaks


def counted(x):
    n = int(x.sum().item())
    out = [0, 0, 0]
    out[n] += 1  # raises
    return x * out[1]


def indexed(x):
    n = int(x.sum().item())
    return x[n] + x[:n].sum() + torch.full((2,), n)


def logged(x):
    n = int(x.sum().item())
    print(n)
    return x * SIZES[n]

"""
FUNCTIONS = ("pick", "choose", "seeded", "repeat", "store", "head", "counted", "indexed", "logged")
INPUTS = "[(torch.tensor([1.0, 0.0]),)]"
USE = "where Python needs its value"


def _marked(tag: str) -> set[int]:
    return {i for i, line in enumerate(SOURCE.splitlines(), 1) if line.endswith(f"# {tag}")}


def _use_findings(source: str, **settings) -> dict[int, str]:
    found = check(source, "model.py", scope=Scope.ALL, **settings)
    return {d.line: d.message for d in found if d.code == "DYN102" and USE in d.message}


def test_each_use_that_fails_under_the_flag_is_reported_with_the_flag_only():
    found = _use_findings(SOURCE, capture_scalar_outputs=True)
    assert set(found) == _marked("raises") | _marked("breaks")
    assert {line for line, message in found.items() if "fails to compile" in message} == _marked("raises")
    assert not _use_findings(SOURCE)  # without the flag the extraction breaks first, and the use is traced


def test_the_flag_the_code_sets_around_its_compile_call_counts():
    code = SOURCE + "\npick_c = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(pick))\n"
    assert set(_use_findings(code)) == {min(_marked("raises"))}


@requires_torch
def test_dynamo_raises_or_breaks_exactly_at_the_reported_uses(tmp_path):
    import torch

    from dynalint.verify.probe import load_module_from_source, observe

    module = load_module_from_source(SOURCE, directory=str(tmp_path))
    args = eval(INPUTS, {"torch": torch})
    lines = {}
    for name in FUNCTIONS:
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            obs = observe(getattr(module, name), args)
        raised = any("GuardOnDataDependentSymNode" in e or "AsPythonConstantNotImplementedError" in e
                     for e in obs.errors)
        lines[name] = ("raises" if raised else "", obs.break_lines(module.__file__))
    text = SOURCE.splitlines()

    def body(name: str) -> set[int]:
        start = text.index(f"def {name}(x):") + 1
        end = next((i for i in range(start, len(text)) if text[i].startswith("def ")), len(text))
        return set(range(start + 1, end + 1))

    reported = _use_findings(SOURCE, capture_scalar_outputs=True)
    fails = {line for line, message in reported.items() if "fails to compile" in message}
    for name, (raised, breaks) in lines.items():
        assert bool(raised) == bool(body(name) & fails), name
        if not raised:
            print_line = {i for i in body(name) if "print(" in text[i - 1]}
            assert breaks - print_line == body(name) & (set(reported) - fails), name


PICKER = """\
import torch

SIZES = [2, 3, 4]


def pick(x):
    n = x.sum().item()
    y = torch.full((2,), n) + x
    i = int(x.max().item())
    return y * SIZES[i % 3]


pick_c = torch.compile(pick, backend="eager")
"""


def test_the_fix_refuses_the_flag_and_names_the_failing_use():
    result = fix_source(PICKER, "train.py", Settings(), unsafe=True)
    assert result.source == PICKER and not result.applied
    reasons = [r.reason for r in result.refused if r.fixer == "capture-flags"]
    assert any("at line 10 (`SIZES[i % 3]`)" in r and "fails to compile" in r for r in reasons), reasons
    # where no use needs the value, the same code gets the flag
    code = PICKER.replace(" * SIZES[i % 3]", " * SIZES[1]")
    result = fix_source(code, "train.py", Settings(), unsafe=True)
    assert [f.fixer for f in result.applied] == ["capture-flags"]
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(pick" in result.source
