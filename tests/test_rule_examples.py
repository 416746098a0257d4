"""Every rule's INVALID examples are flagged with its code on the lines they state, and its VALID
examples are not.  Test ids carry the code (``-k DYN204``)."""
from __future__ import annotations

import pytest

from dynalint.adapters.rules_reference import documentation
from dynalint.engine.pipeline import check_source
from dynalint.rules.base import EngineCode, all_codes, all_rules

from helpers import settings_for

CASES = [
    pytest.param(rule, example, invalid, id=f"{rule.code}-{'invalid' if invalid else 'valid'}-{i}")
    for rule in all_rules()
    for invalid, examples in ((True, rule.INVALID), (False, rule.VALID))
    for i, example in enumerate(examples)
]


@pytest.mark.parametrize("rule, example, invalid", CASES)
def test_example_statically(rule, example, invalid):
    diagnostics = check_source(example.source, "example.py", settings_for(example))
    flagged = [d for d in diagnostics if d.code == rule.code]
    if invalid:
        assert flagged, f"{rule.code} did not flag its INVALID example:\n{example.source}"
        assert sorted({d.line for d in flagged}) == sorted(example.lines), (
            f"{rule.code} flags lines {sorted({d.line for d in flagged})}, the example states {example.lines}")
    else:
        assert not flagged, f"{rule.code} flagged its VALID example: {flagged}"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented(rule):
    assert rule.code.startswith("DYN") and len(rule.code) == 6
    assert rule.kind in ("graph-break", "recompile")
    for attr in ("name", "summary", "rationale", "fix"):
        assert getattr(rule, attr).strip(), f"{rule.code} has no {attr}"
    assert rule.INVALID and rule.VALID, f"{rule.code} needs VALID and INVALID examples"
    for example in rule.INVALID:
        assert example.lines, f"an INVALID example of {rule.code} states no line:\n{example.source}"
    assert not any(example.lines for example in rule.VALID), f"a VALID example of {rule.code} states a line"
    doc = documentation(rule)
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Options"):
        assert f"### {heading}" in doc, (rule.code, heading)


@pytest.mark.parametrize("rule", all_codes(), ids=lambda r: r.code)
def test_rule_lives_in_a_module_named_after_it(rule):
    """``dynalint.rules.scalar_crosses_break.ScalarCrossesBreak`` is DYN204 `scalar-crosses-break`; the
    engine's own codes share ``dynalint.rules.engine_codes``."""
    if issubclass(rule, EngineCode):
        assert rule.__module__ == "dynalint.rules.engine_codes"
        return
    assert rule.__module__ == "dynalint.rules." + rule.name.replace("-", "_")
    assert rule.__name__ == "".join(part.capitalize() for part in rule.name.split("-"))
