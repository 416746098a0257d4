"""``check --format sarif`` output validates against the SARIF 2.1.0 schema and carries rule metadata."""
from __future__ import annotations

import json
import os
import textwrap

import jsonschema
import pytest

from dynalint.adapters.cli import main
from dynalint.rules.base import all_rules

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "data", "sarif-schema-2.1.0.json")

MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = x * 2
            y = x[x > 0].sum()
            return y + x.max().item()
""").lstrip()


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        schema = json.load(fh)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def _run(capsys, *args: str) -> tuple[int, str]:
    status = main(["check", "--no-cache", "-q", *args])
    return status, capsys.readouterr().out


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "src dir").mkdir()
    (tmp_path / "src dir" / "my model.py").write_text(MODEL)
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_sarif_validates_and_matches_json_output(tree, capsys, validator):
    status, out = _run(capsys, "--format", "sarif", ".")
    assert status == 1
    log = json.loads(out)
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, "\n".join(e.message for e in errors)

    _, json_out = _run(capsys, "--format", "json", ".")
    expected = json.loads(json_out)
    run = log["runs"][0]
    results = run["results"]
    assert {d["code"] for d in expected} >= {"DYN000", "DYN101", "DYN104"}
    assert len(results) == len(expected)
    rules = run["tool"]["driver"]["rules"]
    for result, diag in zip(results, expected):
        assert result["ruleId"] == diag["code"]
        assert rules[result["ruleIndex"]]["id"] == diag["code"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == \
            (diag["line"], diag["column"], diag["end_line"], diag["end_column"])
        assert result["message"]["text"].startswith(diag["message"])
        levels = {"graph-break": "warning", "recompile": "note", "error": "error"}
        assert result["level"] == levels[diag["kind"]]
    locations = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert locations == {"src%20dir/my%20model.py", "broken.py"}
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_rule_metadata(tree, capsys, validator):
    _, out = _run(capsys, "--format", "sarif", "src dir")
    rules = {r["id"]: r for r in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]}
    for rule in all_rules():
        descriptor = rules[rule.code]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary.strip()
        assert descriptor["fullDescription"]["text"]
        assert descriptor["help"]["markdown"].startswith(f"## {rule.code}\n")
        assert descriptor["helpUri"].endswith(f"docs/rules.md#{rule.code.lower()}")
        assert descriptor["properties"]["kind"] == rule.kind
        assert descriptor["properties"]["gb_ids"] == [g.id for g in rule.gb_types]
    assert rules["DYN101"]["properties"]["gb_ids"][0].startswith("GB")


def test_schema_rejects_broken_logs(tree, capsys, validator):
    """The validation is not vacuous: a log missing required fields or with a bad level fails."""
    _, out = _run(capsys, "--format", "sarif", "src dir")
    log = json.loads(out)
    assert validator.is_valid(log)
    bad_level = json.loads(out)
    bad_level["runs"][0]["results"][0]["level"] = "severe"
    assert not validator.is_valid(bad_level)
    no_message = json.loads(out)
    del no_message["runs"][0]["results"][0]["message"]
    assert not validator.is_valid(no_message)


def test_sarif_with_no_findings_is_valid(tmp_path, monkeypatch, capsys, validator):
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    status, out = _run(capsys, "--format", "sarif", ".")
    log = json.loads(out)
    assert status == 0
    assert log["runs"][0]["results"] == []
    assert validator.is_valid(log)


def test_absolute_paths_become_file_uris(tree, capsys, validator):
    _, out = _run(capsys, "--format", "sarif", str(tree / "src dir"))
    log = json.loads(out)
    assert validator.is_valid(log)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"].startswith("file:///") and location["uri"].endswith("/src%20dir/my%20model.py")
    assert "uriBaseId" not in location
