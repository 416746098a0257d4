"""The capture-flags fix sets ``capture_scalar_outputs`` where a script compiles its step; the step may
call a model of another file of the project, which the flag then reaches too.  A number that file
takes from tensor data and uses where Python needs its value (a Python list index) makes Dynamo fail
to compile under the flag (``GuardOnDataDependentSymNode``, measured on torch 2.13 with this very
pair of files), so the fix refuses, naming that file and line; without such a use it sets the flag.
The same holds for an element of ``.tolist()`` of a tensor the analysis proves integer."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check
from dynalint.adapters.cli import main
from dynalint.config.settings import Scope

MODEL = """\
import torch

SIZES = [2, 3, 4]


def scale(x):
    n = int(x.sum().item())
    return x * SIZES[n % 3]
"""

TRAIN = """\
import torch

from model import scale


def step(x):
    n = x.sum().item()
    y = torch.full((2,), n) + x
    return scale(y)


step = torch.compile(step)
"""


def _fix(tmp_path, capsys, model: str) -> tuple[str, str]:
    """``dynalint fix --unsafe-fixes`` of the two files: the script as written after it, and the output."""
    (tmp_path / "model.py").write_text(model)
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    main(["fix", "--unsafe-fixes", str(train), str(tmp_path / "model.py")])
    out, err = capsys.readouterr()
    return train.read_text(), out + err


def test_a_use_in_the_model_file_refuses_the_flag_and_is_named(tmp_path, capsys):
    text, output = _fix(tmp_path, capsys, MODEL)
    assert text == TRAIN
    refusals = [line for line in output.splitlines() if "fix refused (capture-flags)" in line]
    assert any("model.py:8" in line and "`SIZES[n % 3]`" in line and "fails to compile" in line
               for line in refusals), output


def test_without_such_a_use_the_script_gets_the_flag(tmp_path, capsys):
    text, output = _fix(tmp_path, capsys, MODEL.replace("SIZES[n % 3]", "n"))
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step))" in text, output


# --- `.tolist()` of an integer tensor -------------------------------------------------------------

LISTS = """\
import torch

SEQ = [1.0, 2.0, 3.0]


def permuted(x):
    for i in torch.randperm(3).tolist():
        x = x * SEQ[i]  # raises
    return x


def ranked(x):
    idx = x.argsort().tolist()
    return x * SEQ[idx[0]]  # raises


def rounded(x):
    return x * SEQ[(x * 2).long().tolist()[0]]  # raises


def floating(x):
    v = (x * 2).tolist()
    return x * SEQ[int(v[0])]


def given(x, p):
    for i in p.tolist():
        x = x * SEQ[i]
    return x
"""
LIST_FUNCTIONS = ("permuted", "ranked", "rounded", "floating", "given")


def _list_failures(**settings) -> set[int]:
    found = check(LISTS, "model.py", scope=Scope.ALL, **settings)
    return {d.line for d in found if d.code == "DYN102" and "fails to compile" in d.message}


def test_an_integer_tolist_element_used_as_a_list_index_is_reported_under_the_flag_only():
    marked = {i for i, line in enumerate(LISTS.splitlines(), 1) if line.endswith("# raises")}
    assert _list_failures(capture_scalar_outputs=True) == marked  # a float's or an unknown dtype's: silent
    assert not _list_failures()


@requires_torch
def test_dynamo_fails_to_compile_exactly_the_reported_tolist_uses(tmp_path):
    import torch

    from dynalint.verify.probe import load_module_from_source, observe

    module = load_module_from_source(LISTS, directory=str(tmp_path))
    args = {"given": (torch.tensor([1.0, 0.5, 0.2]), torch.tensor([2, 0, 1]))}
    raised = set()
    for name in LIST_FUNCTIONS:
        with torch._dynamo.config.patch(capture_scalar_outputs=True):
            obs = observe(getattr(module, name), [args.get(name, (torch.tensor([1.0, 0.5, 0.2]),))])
        if any("GuardOnDataDependentSymNode" in e for e in obs.errors):
            raised.add(name)
    text = LISTS.splitlines()
    starts = {name: text.index(f"def {name}(" + ("x, p):" if name == "given" else "x):")) + 1 for name in LIST_FUNCTIONS}
    reported = {name for name, start in starts.items()
                if any(start < line < start + 4 for line in _list_failures(capture_scalar_outputs=True))}
    # `given` raises too: its tensor is integer, which the analysis cannot know (silent by design)
    assert raised - {"given"} == reported and "given" in raised
