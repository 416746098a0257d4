"""What a ruff user expects of the command line: configuration that resolves like ruff's, stdin,
statistics, fixes in JSON, file-level noqa, unused-noqa warnings, ``check --fix``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import finding_lines, run, write

from dynalint.adapters.cli import build_parser, main

BROKEN = textwrap.dedent("""\
    import torch

    @torch.compile
    def f(x):
        if x.sum() > 0:
            return x.item()
        return x
""")
MASKED = textwrap.dedent("""\
    import torch

    @torch.compile
    def f(x):
        y = x[x > 0].sum()
        if x.sum() > 0:
            y = y * 2
        return y
""")


# -- configuration --------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (("--select", "DYN999"), "unknown rule code 'DYN999'"),
    (("--extend-ignore", "DYN7"), "unknown rule code 'DYN7'"),
    (("--target-torch", "3.1"), "unknown torch version '3.1'"),
    (("--target-torch", "1.13"), "unknown torch version"),
])
def test_unknown_codes_and_torch_versions_are_usage_errors(tmp_path, capsys, args, message):
    code, out, err = run(capsys, *args, write(tmp_path, "bad.py", BROKEN))
    assert code == 2 and message in err and out == ""


def test_unknown_code_in_the_configuration_file(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", '[tool.dynalint]\nper-file-ignores = {"x/*" = ["DYN1O1"]}\n')
    code, _, err = run(capsys, write(tmp_path, "bad.py", BROKEN))
    assert code == 2 and "DYN1O1" in err


def test_patterns_are_anchored_at_the_configuration_directory(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml",
          '[tool.dynalint]\nper-file-ignores = {"src/*" = ["DYN102"]}\nexclude = ["vendor/*"]\n')
    write(tmp_path, "src/dirty.py", BROKEN)
    write(tmp_path, "vendor/lib/v.py", BROKEN)
    monkeypatch.chdir(tmp_path / "src")
    out = run(capsys, "dirty.py")[1]
    assert "DYN101" in out and "DYN102" not in out
    monkeypatch.chdir(tmp_path / "vendor")
    code, out, err = run(capsys, ".")
    assert code == 0 and out == "" and "in 0 files" in err
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--show-files", ".")[1].splitlines() == [os.path.join("src", "dirty.py")]


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_gitignore_is_respected_unless_turned_off(tmp_path, capsys, monkeypatch):
    _git(tmp_path, "init", "-q", ".")
    write(tmp_path, ".gitignore", "generated/\nscratch_*.py\n")
    write(tmp_path, "model.py", BROKEN)
    write(tmp_path, "generated/out.py", BROKEN)
    write(tmp_path, "scratch_1.py", BROKEN)
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--show-files")[1].splitlines() == ["model.py"]
    shown = sorted(run(capsys, "--show-files", "--no-respect-gitignore")[1].splitlines())
    assert shown == [os.path.join("generated", "out.py"), "model.py", "scratch_1.py"]
    write(tmp_path, "pyproject.toml", "[tool.dynalint]\nrespect-gitignore = false\n")
    assert len(run(capsys, "--show-files")[1].splitlines()) == 3


def test_show_settings_prints_the_resolved_configuration(tmp_path, capsys, monkeypatch):
    write(tmp_path, "setup.cfg", "[dynalint]\nignore = DYN105\nscope = all\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "--show-settings", "--target-torch", "2.12")
    assert code == 0
    assert f"# configuration: {tmp_path / 'setup.cfg'}" in out
    assert 'ignore = ["DYN105"]' in out and 'scope = "all"' in out and 'target-torch = "2.12"' in out
    assert "respect-gitignore = true" in out and "extend-select" not in out
    assert "per-file-ignores = {}" in out and "reorderable-logging-functions = []" in out


@pytest.mark.parametrize("pattern", ["vendor", "vendor/", "vendor/*", "/VENDOR_ABS/*"])
def test_exclude_pattern_forms(tmp_path, capsys, monkeypatch, pattern):
    pattern = pattern.replace("/VENDOR_ABS", str(tmp_path / "vendor"))
    write(tmp_path, "pyproject.toml", f'[tool.dynalint]\nexclude = ["{pattern}"]\n')
    write(tmp_path, "vendor/x/m.py", BROKEN)
    write(tmp_path, "m.py", BROKEN)
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--show-files")[1].splitlines() == ["m.py"]


def test_every_configuration_key_is_a_command_line_option_or_file_only():
    from dynalint.config.options import OPTIONS

    check = build_parser()._subparsers._group_actions[0].choices["check"]
    flags = {s for a in check._actions for s in a.option_strings}
    file_only = {"per-file-ignores", "reorderable-logging-functions"}
    assert {o.key for o in OPTIONS if f"--{o.key}" not in flags} == file_only


# -- output ---------------------------------------------------------------------------------------

def test_paths_have_no_dot_slash_prefix(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pkg/bad.py", BROKEN)
    monkeypatch.chdir(tmp_path)
    out = run(capsys, ".")[1]
    assert out.startswith(os.path.join("pkg", "bad.py") + ":5:8: DYN101")


def test_json_carries_fixes_where_fix_applies_one(tmp_path, capsys):
    path = write(tmp_path, "m.py", MASKED)
    data = json.loads(run(capsys, "--format", "json", path)[1])
    by_code = {d["code"]: d for d in data}
    masked = by_code["DYN104"]["fix"]
    assert masked["applicability"] == "unsafe" and masked["message"] and masked["fixer"] == "masked-reduction"
    edit = masked["edits"][0]
    assert edit["location"]["row"] == 5 and "torch.where" in edit["content"]
    assert by_code["DYN101"]["fix"]["applicability"] == "unsafe"
    # the edits are what `dynalint fix` applies for that finding
    from dynalint.engine.fixing import apply_text_edits
    from dynalint.core.diagnostics import Fix

    assert main(["fix", "--unsafe-fixes", "--select", "DYN104", "--jobs", "1", "--quiet", path]) == 0
    fixed = open(path).read()
    assert apply_text_edits(MASKED, Fix.from_json(masked).edits) == fixed


def test_stdin_with_stdin_filename(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml", '[tool.dynalint]\nper-file-ignores = {"tests/*" = ["DYN102"]}\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("dynalint.adapters.console.read_stdin", lambda: BROKEN.encode())
    code, out, _ = run(capsys, "-", "--stdin-filename", "tests/test_x.py")
    assert code == 1 and out.startswith("tests/test_x.py:5:8: DYN101") and "DYN102" not in out
    code, out, _ = run(capsys, "-")
    assert out.startswith("-:5:8: DYN101") and "DYN102" in out


def test_stdin_through_a_real_pipe(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dynalint", "check", "--no-cache", "-", "--stdin-filename",
                           "model.py"], input=BROKEN, capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 1 and proc.stdout.startswith("model.py:5:8: DYN101")


def test_statistics_and_output_file(tmp_path, capsys):
    a = write(tmp_path, "a.py", BROKEN)
    b = write(tmp_path, "b.py", BROKEN.replace("return x.item()", "return x"))
    code, out, _ = run(capsys, "--statistics", a, b)
    assert code == 1
    assert out.splitlines() == ["2\tDYN101\ttensor-condition", "1\tDYN102\tscalar-extraction",
                                "capture flags: 1 of 3 graph breaks removed (1 by capture_scalar_outputs), 2 remain"]
    rows = json.loads(run(capsys, "--statistics", "--format", "json", a, b)[1])
    assert rows[0] == {"code": "DYN101", "name": "tensor-condition", "count": 2, "fixable": False,
                       "unsafe_fixable": True,  # its fixes are unsafe: `dynalint fix` applies none
                       "removed_by_flags": 0}
    report = tmp_path / "report.json"
    code, out, _ = run(capsys, "--format", "json", "--output-file", str(report), a)
    assert code == 1 and out == "" and [d["code"] for d in json.loads(report.read_text())] == ["DYN101", "DYN102"]


def test_sarif_reports_unreadable_files_as_results_and_notifications(tmp_path, capsys):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"x = '\xff'\n")
    log = json.loads(run(capsys, "--format", "sarif", str(latin))[1])
    run_ = log["runs"][0]
    assert [r["ruleId"] for r in run_["results"]] == ["DYN001"]
    (invocation,) = run_["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["descriptor"]["id"] == "DYN001" and "cannot decode" in note["message"]["text"]


# -- suppression ----------------------------------------------------------------------------------

@pytest.mark.parametrize("comment, left", [
    ("# dynalint: noqa", []),
    ("# flake8: noqa", []),
    ("# dynalint: noqa: DYN102", ["DYN101"]),
    ("#flake8:NOQA:DYN101", ["DYN102"]),
    ("x = 1  # dynalint: noqa", ["DYN101", "DYN102"]),  # not on a line of its own: no file-level effect
])
def test_file_level_noqa(tmp_path, capsys, comment, left):
    out = run(capsys, write(tmp_path, "m.py", comment + "\n" + BROKEN))[1]
    assert [line.split()[1] for line in finding_lines(out)] == left


def test_unused_noqa_is_opt_in(tmp_path, capsys):
    text = BROKEN.replace("return x\n", "return x  # noqa: DYN101, E501\n").replace(
        "if x.sum() > 0:", "if x.sum() > 0:  # noqa: DYN101")
    path = write(tmp_path, "m.py", text)
    assert [l.split()[1] for l in finding_lines(run(capsys, path)[1])] == ["DYN102"]
    assert [l.split()[1] for l in finding_lines(run(capsys, "--extend-select", "DYN", path)[1])] == ["DYN102"]
    out = run(capsys, "--extend-select", "DYN003", path)[1]
    assert f"{path}:7:23: DYN003 unused `noqa` code DYN101: nothing on this line is reported as DYN101" in out
    codes = [(l.split(":")[1], l.split()[1]) for l in finding_lines(out)]
    assert codes == [("6", "DYN102"), ("7", "DYN003")]
    # a string that looks like a noqa comment is not one
    quoted = 'import torch\n\n@torch.compile\ndef f(x):\n    return "# noqa: DYN101"\n'
    assert run(capsys, "--extend-select", "DYN003", write(tmp_path, "q.py", quoted))[1] == ""


def test_add_noqa_then_nothing_is_reported(tmp_path, capsys):
    path = write(tmp_path, "m.py", BROKEN)
    code, _, err = run(capsys, "--add-noqa", path)
    assert code == 0 and "added 2 noqa directives" in err
    text = open(path).read()
    assert "if x.sum() > 0:  # noqa: DYN101\n" in text and "return x.item()  # noqa: DYN102\n" in text
    assert run(capsys, path)[0:2] == (0, "")
    assert run(capsys, "--add-noqa", path)[2].count("added 0 noqa directives") == 1


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_add_noqa_keeps_the_line_endings(tmp_path, newline, capsys):
    path = tmp_path / "m.py"
    path.write_bytes(BROKEN.replace("\n", newline).encode())
    code, _, err = run(capsys, "--add-noqa", str(path))
    assert code == 0 and "added 2 noqa directives" in err
    data = path.read_bytes().decode()
    assert f"if x.sum() > 0:  # noqa: DYN101{newline}" in data and data.count(newline) == BROKEN.count("\n")
    assert run(capsys, str(path))[0:2] == (0, "")


# -- fixing from check ----------------------------------------------------------------------------

def test_check_fix_and_show_fixes(tmp_path, capsys):
    path = write(tmp_path, "m.py", MASKED)
    code, out, err = run(capsys, "--show-fixes", path)
    assert f"{path}:5:9: DYN104 [-] " in out and f"{path}:6:8: DYN101 [-] " in out
    assert "[-] 2 fixable with `dynalint fix --unsafe-fixes`" in out
    assert open(path).read() == MASKED
    code, out, err = run(capsys, "--fix", "--show-fixes", path)  # no safe fix: nothing is written
    assert code == 1 and open(path).read() == MASKED
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "--select", "DYN104", "--show-fixes", path)
    assert code == 0 and "torch.where" in open(path).read()
    assert f"{path}:5:9: DYN104 fixed (unsafe)" in err and "1 fixed" in err


def test_check_fix_on_stdin_prints_the_fixed_code(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("dynalint.adapters.console.read_stdin", lambda: MASKED.encode())
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "--select", "DYN104,DYN101", "-",
                         "--stdin-filename", "m.py")
    assert "torch.where" in out and "x[x > 0]" not in out and "if x.sum() > 0" not in out
    assert code == 0


def test_fix_diff_numbers_findings_as_in_the_file_with_columns(tmp_path, capsys):
    """With --diff nothing is written, so every position printed is one of the file on disk (the
    rewrite adds two lines above the remaining finding), and "fixed" lines carry a column too."""
    text = MASKED.replace("import torch\n", "import torch\nimport logging\n", 1).replace(
        "y = x[x > 0].sum()", "y = x[x > 0].sum()\n    logging.info('y')").replace(
        "if x.sum() > 0:\n        y = y * 2", "while x.sum() > 0:\n        x = x - 1")  # DYN103 has no fix
    path = write(tmp_path, "m.py", text)
    assert main(["fix", "--diff", "--unsafe-fixes", "--jobs", "1", path]) == 1
    err = capsys.readouterr().err
    positions = [(line.split(": ", 1)[1].split()[0], tuple(map(int, line.split(":")[1:3])), " fixed " in line)
                 for line in err.splitlines() if ": DYN" in line]
    assert positions == [("DYN104", (6, 9), True), ("DYN105", (7, 5), True), ("DYN103", (8, 11), False)]
    assert text.splitlines()[7].strip() == "while x.sum() > 0:"


def test_fix_on_stdin_and_stdin_filename_alone(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("dynalint.adapters.console.read_stdin", lambda: MASKED.encode())
    assert main(["fix", "--unsafe-fixes", "--select", "DYN104", "-", "--stdin-filename", "m.py"]) == 0
    out, err = capsys.readouterr()
    assert "torch.where" in out and "if x.sum() > 0" in out
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "--stdin-filename", "m.py")
    assert code == 1 and out.startswith("m.py:5:9: DYN104")


def test_command_line_exclude_is_relative_to_the_current_directory(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml", "[tool.dynalint]\n")
    write(tmp_path, "src/gen/a.py", BROKEN)
    write(tmp_path, "src/b.py", BROKEN)
    monkeypatch.chdir(tmp_path / "src")
    assert run(capsys, "--show-files", "--exclude", "gen/*", ".")[1].splitlines() == ["b.py"]
    assert sorted(run(capsys, "--show-files", "--exclude", "src/gen/*", ".")[1].splitlines()) == [
        "b.py", os.path.join("gen", "a.py")]
