"""Every rule's INVALID examples are flagged with its code and its VALID examples are not."""
from __future__ import annotations

import pytest

from dynalint.docs import documentation
from dynalint.engine import check_source
from dynalint.rules.base import all_rules

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
    else:
        assert not flagged, f"{rule.code} flagged its VALID example: {flagged}"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented(rule):
    assert rule.code.startswith("DYN") and len(rule.code) == 6
    assert rule.kind in ("graph-break", "recompile")
    for attr in ("name", "summary", "rationale", "fix"):
        assert getattr(rule, attr).strip(), f"{rule.code} has no {attr}"
    assert rule.INVALID and rule.VALID, f"{rule.code} needs VALID and INVALID examples"
    doc = documentation(rule)
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Options"):
        assert f"### {heading}" in doc, (rule.code, heading)
