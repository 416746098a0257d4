"""Rule examples checked against real TorchDynamo on the installed torch.

Graph-break rules: every line an INVALID example states (and is flagged on) must
be a line where Dynamo's graph-break log reports a break, and VALID examples must compile
without any break.  Recompile rules: INVALID examples must recompile (or, for
the environment rule, silently keep a stale value) over their input stream;
VALID examples must not recompile.
"""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.engine.pipeline import check_source
from dynalint.rules.base import all_rules

from helpers import run_example_under_dynamo, settings_for

pytestmark = requires_torch

CASES = [
    pytest.param(rule, example, invalid, id=f"{rule.code}-{'invalid' if invalid else 'valid'}-{i}")
    for rule in all_rules()
    for invalid, examples in ((True, rule.INVALID), (False, rule.VALID))
    for i, example in enumerate(examples)
    if example.dynamo
]


@pytest.mark.parametrize("rule, example, invalid", CASES)
def test_example_matches_dynamo(rule, example, invalid, tmp_path):
    diagnostics = check_source(example.source, "example.py", settings_for(example))
    flagged_lines = {d.line for d in diagnostics if d.code == rule.code}
    obs, module = run_example_under_dynamo(example, tmp_path)
    assert not obs.errors, obs.errors
    break_lines = obs.break_lines(module.__file__)
    if rule.kind == "graph-break":
        if invalid:
            assert break_lines, f"Dynamo did not break on the INVALID example of {rule.code}"
            assert flagged_lines | set(example.lines) <= break_lines, (
                f"{rule.code} flags lines {sorted(flagged_lines)} but Dynamo broke on {sorted(break_lines)}: "
                + "; ".join(f"{b.line}: {b.gb_type}" for b in obs.breaks))
        else:
            assert not obs.breaks, "VALID example breaks: " + "; ".join(
                f"line {b.line}: {b.gb_type}" for b in obs.breaks)
    else:
        if invalid:
            assert obs.recompiles, f"Dynamo did not recompile the INVALID example of {rule.code}"
        else:
            assert not obs.recompiles, f"VALID example recompiles: {obs.recompiles}"
