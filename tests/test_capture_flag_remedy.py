"""Configuration remedies: a graph break that one of Dynamo's capture flags removes says so (hint,
JSON, SARIF, summary and ``--statistics``), and the claim is checked against real Dynamo with the
flag on."""
from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import requires_torch
from dynalint.engine.pipeline import check_source
from dynalint.rules.base import Example, all_rules

from helpers import check, run, run_example_under_dynamo, settings_for, write

SOURCE = """\
import torch

@torch.compile
def f(x):
    n = x.sum().item()
    y = x[x > 0]
    print(x)
    return y * n
"""

FLAGGED_EXAMPLES = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")
    for rule in all_rules() if rule.kind == "graph-break"
    for i, example in enumerate(rule.INVALID)
    if example.dynamo and any(d.remedy for d in check_source(example.source, "example.py", settings_for(example)))
]


def test_findings_name_the_flag_that_removes_them():
    by_line = {d.line: d for d in check(SOURCE)}
    assert by_line[5].code == "DYN102" and by_line[5].remedy == "capture_scalar_outputs"
    assert by_line[6].code == "DYN104" and by_line[6].remedy == "capture_dynamic_output_shape_ops"
    assert by_line[7].code == "DYN105" and by_line[7].remedy is None
    assert "capture_scalar_outputs = True" in by_line[5].hint
    assert "capture_dynamic_output_shape_ops = True" in by_line[6].hint
    assert "capture_" not in (by_line[7].hint or "")


def test_json_sarif_summary_and_statistics_carry_the_remedy(tmp_path, capsys):
    path = write(tmp_path, "m.py", SOURCE)
    _, out, err = run(capsys, "--no-cache", "--format", "json", path)
    remedies = {d["line"]: d["remedy"] for d in json.loads(out)}
    assert remedies[5] == "capture_scalar_outputs" and remedies[7] is None
    assert "3 graph breaks (2 removed by Dynamo's capture flags)" in err
    _, out, _ = run(capsys, "--no-cache", "--format", "sarif", path)
    props = [r["properties"] for r in json.loads(out)["runs"][0]["results"]]
    assert sorted(p.get("remedy", "") for p in props if p["kind"] == "graph-break") == [
        "", "capture_dynamic_output_shape_ops", "capture_scalar_outputs"]
    _, out, _ = run(capsys, "--no-cache", "--statistics", path)
    assert "capture flags: 2 of 3 graph breaks removed (1 by capture_dynamic_output_shape_ops, " \
           "1 by capture_scalar_outputs), 1 remain" in out


@pytest.mark.parametrize("rule, example", FLAGGED_EXAMPLES)
def test_the_named_flag_removes_the_finding_statically(rule, example):
    """The analysis with the named flag on no longer reports the finding (one model of the flags)."""
    for d in check_source(example.source, "example.py", settings_for(example)):
        if d.remedy:
            after = check_source(example.source, "example.py", settings_for(example, **{d.remedy: True}))
            assert (d.line, d.code) not in {(a.line, a.code) for a in after}


def test_rule_examples_with_a_remedy_exist():
    """The Dynamo check below runs on something: scalar extraction and dynamic shapes have examples."""
    codes = {p.values[0].code for p in FLAGGED_EXAMPLES}
    assert {"DYN102", "DYN104"} <= codes


@requires_torch
@pytest.mark.parametrize("rule, example", FLAGGED_EXAMPLES)
def test_dynamo_with_the_flag_does_not_break_there(rule, example, tmp_path):
    diagnostics = check_source(example.source, "example.py", settings_for(example))
    flagged = [d for d in diagnostics if d.remedy]
    obs, module = run_example_under_dynamo(example, tmp_path / "before")
    assert {d.line for d in flagged} <= obs.break_lines(module.__file__), "the flagged lines break by default"
    for flag in {d.remedy for d in flagged}:
        on = dataclasses.replace(example, settings={**example.settings, flag: True})
        obs, module = run_example_under_dynamo(on, tmp_path / flag)
        assert not obs.errors, obs.errors
        remaining = obs.break_lines(module.__file__)
        assert not {d.line for d in flagged if d.remedy == flag} & remaining, (
            f"{flag} on: Dynamo still breaks on {sorted(remaining)}")


def test_a_hint_without_a_rule_hint_reads_as_a_sentence():
    from dynalint.engine.pipeline import remedy_hint

    assert remedy_hint(None, "capture_scalar_outputs").startswith("Set `torch._dynamo.config.")
    assert remedy_hint("keep it a tensor", None) == "keep it a tensor"


DATA_INDEX = Example("""\
    import torch

    @torch.compile
    def peak(x):
        return x[x.argmax()] * 2
""", inputs="[(torch.randn(5),)]", settings={"capture_scalar_outputs": True})


@requires_torch
def test_an_index_read_from_data_breaks_with_capture_scalar_outputs_too(tmp_path):
    """Dynamo cannot bound-check an unbacked index, so the flag does not remove this break, and
    the finding names no remedy."""
    found = [d for d in check_source(DATA_INDEX.source, "example.py", settings_for(DATA_INDEX))
             if d.kind == "graph-break"]
    assert [(d.line, d.remedy) for d in found] == [(5, None)]
    obs, module = run_example_under_dynamo(DATA_INDEX, tmp_path)
    assert obs.break_lines(module.__file__) == {5}
