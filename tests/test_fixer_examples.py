"""Every fixer's examples: (a) the rewrite gives the expected text and is idempotent,
(b) original and rewritten code give equal eager outputs on the example inputs,
(c) under real Dynamo the rewrite has fewer graph breaks (or fewer recompiles)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.fixers.base import all_fixers
from dynalint.fixing import fix_source
from dynalint.rules.base import Example
from dynalint.settings import Settings

CASES = [
    pytest.param(fixer, example, id=f"{fixer.name}-{i}")
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


@pytest.mark.parametrize("fixer", all_fixers(), ids=lambda f: f.name)
def test_fixer_is_documented(fixer):
    assert fixer.EXAMPLES and fixer.summary.strip() and fixer.reasoning.strip()
    assert fixer.safety in ("safe", "unsafe") and fixer.codes


@requires_torch
@pytest.mark.parametrize("fixer, example", CASES)
def test_rewrite_keeps_outputs_and_removes_breaks(fixer, example, tmp_path):
    import torch

    from helpers import run_example_under_dynamo, outputs_close

    def as_example(code: str) -> Example:
        return Example(code, inputs=example.inputs, target=example.target, init=example.init,
                       between_calls=example.between_calls, compile_target=example.compile_target)

    before_obs, before_mod = run_example_under_dynamo(as_example(example.before), tmp_path / "before")
    after_obs, after_mod = run_example_under_dynamo(as_example(example.after), tmp_path / "after")
    assert not before_obs.errors and not after_obs.errors, (before_obs.errors, after_obs.errors)
    if example.expect == "fewer-breaks":
        assert len(after_obs.breaks) < len(before_obs.breaks), (before_obs.breaks, after_obs.breaks)
    else:
        assert len(after_obs.recompiles) < len(before_obs.recompiles), (before_obs.recompiles, after_obs.recompiles)
    # eager outputs: the same inputs through both versions
    from helpers import eager_outputs

    before_out = eager_outputs(as_example(example.before), tmp_path / "eager_before")
    after_out = eager_outputs(as_example(example.after), tmp_path / "eager_after")
    assert len(before_out) == len(after_out)
    for a, b in zip(before_out, after_out):
        assert outputs_close(a, b), (a, b)
    # and compiled outputs equal eager ones
    for a, b in zip(after_obs.outputs, after_out):
        assert outputs_close(a, b), (a, b)
    del torch
