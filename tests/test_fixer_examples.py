"""Every fixer's examples: (a) the rewrite gives the expected text and is idempotent,
(b) original and rewritten code give equal eager outputs on the example inputs,
(c) under real Dynamo the rewrite has fewer graph breaks (or fewer recompiles)."""
from __future__ import annotations

import contextlib
import os

import pytest

from conftest import requires_torch
from dynalint.fixers.support.base import all_fixers
from dynalint.engine.fixing import fix_source
from dynalint.rules.base import Example
from dynalint.config.settings import Settings

def fixer_id(fixer) -> str:
    """A fixer's test id: the codes of the rules it serves, then its name (``-k DYN102`` finds it)."""
    return "-".join((*fixer.codes, fixer.name))


CASES = [
    pytest.param(fixer, example, id=f"{fixer_id(fixer)}-{i}")
    for fixer in all_fixers()
    for i, example in enumerate(fixer.EXAMPLES)
]


@pytest.mark.parametrize("fixer, example", CASES)
def test_rewrite_text_and_idempotence(fixer, example):
    result = fix_source(example.before_source, "example.py", Settings(), unsafe=True)
    assert result.source == example.after_source
    assert any(f.fixer == fixer.name for f in result.applied)
    assert all(f.safety == fixer.safety for f in result.applied if f.fixer == fixer.name)
    again = fix_source(result.source, "example.py", Settings(), unsafe=True)
    assert again.source == result.source and not again.applied


@pytest.mark.parametrize("fixer", all_fixers(), ids=fixer_id)
def test_fixer_is_documented(fixer):
    assert fixer.EXAMPLES and fixer.summary.strip() and fixer.reasoning.strip()
    assert fixer.safety in ("safe", "unsafe") and fixer.codes


@pytest.mark.parametrize("fixer", all_fixers(), ids=fixer_id)
def test_fixer_lives_in_a_module_named_after_it(fixer):
    """``dynalint.fixers.keep_tensor.KeepTensor`` is the fixer `keep-tensor`."""
    assert fixer.__module__ == "dynalint.fixers." + fixer.name.replace("-", "_")
    assert fixer.__name__ == "".join(part.capitalize() for part in fixer.name.split("-"))


@requires_torch
@pytest.mark.parametrize("fixer, example", CASES)
def test_rewrite_keeps_outputs_and_removes_breaks(fixer, example, tmp_path):
    from helpers import eager_outputs, outputs_close, run_example_under_dynamo

    def as_example(code: str, between_calls: str | None = example.between_calls) -> Example:
        return Example(code, inputs=example.inputs, target=example.target, init=example.init,
                       between_calls=between_calls, compile_target=example.compile_target)

    with _environment_restored():
        before_obs, _ = run_example_under_dynamo(as_example(example.before), tmp_path / "before")
    with _environment_restored():
        after_obs, _ = run_example_under_dynamo(as_example(example.after), tmp_path / "after")
    assert not after_obs.errors, after_obs.errors
    # compiles: the code before fails to compile under Dynamo, the rewrite does not
    assert bool(before_obs.errors) == (example.expect == "compiles"), before_obs.errors
    if example.expect == "fewer-breaks":
        assert len(after_obs.breaks) < len(before_obs.breaks), (before_obs.breaks, after_obs.breaks)
    elif example.expect == "fewer-recompiles":
        assert len(after_obs.recompiles) < len(before_obs.recompiles), (before_obs.recompiles, after_obs.recompiles)
    elif example.expect == "read-once":  # what between_calls changes is no longer read by the compiled code
        assert before_obs.recompiles and not after_obs.recompiles, (before_obs.recompiles, after_obs.recompiles)
    # compiled outputs equal eager ones (under the same between_calls)
    with _environment_restored():
        after_eager = eager_outputs(as_example(example.after), tmp_path / "eager_after_calls")
    for a, b in zip(after_obs.outputs, after_eager):
        assert outputs_close(a, b), (a, b)
    # eager outputs: the same inputs through both versions (read-once: in a stable environment)
    stable = None if example.expect == "read-once" else example.between_calls
    with _environment_restored():
        before_out = eager_outputs(as_example(example.before, stable), tmp_path / "eager_before")
        after_out = eager_outputs(as_example(example.after, stable), tmp_path / "eager_after")
    assert len(before_out) == len(after_out) == len(after_obs.outputs)
    for a, b in zip(before_out, after_out):
        assert outputs_close(a, b), (a, b)


@contextlib.contextmanager
def _environment_restored():
    """Examples may change ``os.environ`` between calls: undo it so runs do not leak into each other."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_fixers_of_one_code_are_tried_in_an_explicit_order():
    from collections import Counter

    from dynalint.fixers import PREFERENCE
    from dynalint.fixers.support.base import fixers_for

    counts = Counter(code for f in all_fixers() for code in f.codes)
    for code, n in counts.items():
        if n > 1:
            assert sorted(PREFERENCE[code]) == sorted(f.name for f in fixers_for(code)), code
            assert [f.name for f in fixers_for(code)] == list(PREFERENCE[code])


def test_torch_import_is_added_once_by_the_engine():
    code = "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x[x > 0].sum()\n"
    out = fix_source(code, "m.py", Settings(), unsafe=True).source
    assert out.count("import torch\n") == 1 and "torch.where(x > 0, x, 0).sum()" in out


def test_a_fixers_tests_are_selected_by_the_codes_it_serves():
    """``pytest -k DYN105`` runs the tests of DYN105's fixers, as ruff keys its fixtures by code: their
    examples here, their own test module, the refusals that name them; not another rule's fixers'."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    files = ["test_fixer_examples.py", "test_fixer_defer_logging.py", "test_fixer_keep_tensor.py",
             "test_fixer_preconditions.py"]
    listing = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              "-k", "DYN105", *files], cwd=here, capture_output=True, text=True, timeout=300)
    selected = [os.path.basename(line.partition("::")[0]) + "::" + line.partition("::")[2]
                for line in listing.stdout.splitlines() if "::" in line]
    assert any(t.startswith("test_fixer_defer_logging.py::") for t in selected), listing.stdout
    assert any("defer-logging" in t for t in selected if t.startswith("test_fixer_examples.py::"))
    assert any("defer-logging" in t for t in selected if t.startswith("test_fixer_preconditions.py::"))
    assert not any("keep-tensor" in t or t.startswith("test_fixer_keep_tensor.py::") for t in selected)
