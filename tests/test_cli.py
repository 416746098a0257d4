"""The command line: formats, exit status, selection, configuration, noqa, bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import finding_lines, run, write

from dynalint.adapters.cli import main

BROKEN = textwrap.dedent("""\
    import torch

    @torch.compile
    def f(x):
        if x.sum() > 0:
            return x.item()
        return x
""")
CLEAN = "import torch\n\n@torch.compile\ndef g(x):\n    return x * 2\n"


def test_text_format_and_exit_status(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BROKEN)
    code, out, err = run(capsys, bad)
    assert code == 1
    lines = finding_lines(out)
    assert lines[0].startswith(f"{bad}:5:8: DYN101 ")
    assert lines[1].startswith(f"{bad}:6:16: DYN102 ")
    assert "2 graph breaks" in err
    code, out, _ = run(capsys, write(tmp_path, "ok.py", CLEAN))
    assert code == 0 and out == ""


def test_json_format(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BROKEN)
    code, out, _ = run(capsys, "--format", "json", bad)
    data = json.loads(out)
    assert code == 1 and [d["code"] for d in data] == ["DYN101", "DYN102"]
    first = data[0]
    assert {"path", "line", "column", "end_line", "end_column", "code", "kind", "message", "gb_type", "fix"} <= set(first)
    assert first["kind"] == "graph-break" and first["gb_type"] == "Data-dependent branching"
    assert (first["line"], first["column"], first["end_line"], first["end_column"]) == (5, 8, 5, 19)


def test_select_and_ignore_by_code_and_prefix(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BROKEN)
    assert [l.split()[1] for l in finding_lines(run(capsys, "--select", "DYN102", bad)[1])] == ["DYN102"]
    assert [l.split()[1] for l in finding_lines(run(capsys, "--ignore", "DYN10", bad)[1])] == []
    out = run(capsys, "--select", "DYN1", "--ignore", "DYN101", bad)[1]
    assert [l.split()[1] for l in finding_lines(out)] == ["DYN102"]


def test_noqa_comments(tmp_path, capsys):
    text = BROKEN.replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: DYN101").replace(
        "return x.item()", "return x.item()  # noqa")
    code, out, _ = run(capsys, write(tmp_path, "noqa.py", text))
    assert code == 0 and out == ""
    other = BROKEN.replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: DYN102")
    assert "DYN101" in run(capsys, write(tmp_path, "other.py", other))[1]


def test_noqa_after_a_form_feed_stays_on_its_line(tmp_path, capsys):
    # CPython reads a form feed as whitespace within a line; counting it as a line break would move
    # every later comment one line down and detach it from its finding
    text = "# section\x0c\n" + BROKEN.replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: DYN101")
    code, out, _ = run(capsys, write(tmp_path, "paged.py", text))
    assert "DYN101" not in out and "DYN102" in out


def test_directories_skip_vcs_venvs_and_build_folders(tmp_path, capsys):
    write(tmp_path, "pkg/model.py", BROKEN)
    write(tmp_path, ".git/hooks/x.py", BROKEN)
    write(tmp_path, "build/lib/model.py", BROKEN)
    write(tmp_path, "env1/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "env1/lib/model.py", BROKEN)
    write(tmp_path, "notes.txt", "if x:")
    code, out, err = run(capsys, str(tmp_path))
    paths = {l.split(":")[0] for l in finding_lines(out)}
    assert paths == {str(tmp_path / "pkg" / "model.py")}
    assert "in 1 file" in err


def test_syntax_error_is_a_diagnostic_and_the_run_goes_on(tmp_path, capsys):
    broken = write(tmp_path, "a_broken.py", "def f(:\n    pass\n")
    bad = write(tmp_path, "b_bad.py", BROKEN)
    code, out, err = run(capsys, "--format", "json", broken, bad)
    data = json.loads(out)
    assert code == 1
    assert data[0]["code"] == "DYN000" and data[0]["path"] == broken and data[0]["line"] == 1
    assert {d["code"] for d in data[1:]} == {"DYN101", "DYN102"}
    assert "Traceback" not in err


def test_undecodable_and_unreadable_files_are_dyn001_diagnostics(tmp_path, capsys):
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"x = '\xff\xfe'\n")
    missing = str(tmp_path / "missing.py")
    code, out, err = run(capsys, "--format", "json", str(latin), missing)
    data = json.loads(out)
    assert code == 1
    assert [(d["path"], d["code"], d["line"], d["kind"]) for d in data] == [
        (str(latin), "DYN001", 1, "error"), (missing, "DYN001", 1, "error")]
    assert data[0]["message"].startswith("cannot decode") and "No such file" in data[1]["message"]
    assert "2 files not read" in err and "Traceback" not in err
    code, out, _ = run(capsys, "--ignore", "DYN001", str(latin))
    assert code == 0 and out == ""


def test_encoding_declaration_is_honoured(tmp_path, capsys):
    p = tmp_path / "cp.py"
    p.write_bytes("# -*- coding: latin-1 -*-\n".encode() + BROKEN.replace("return x\n", "return x  # é\n").encode(
        "latin-1"))
    code, out, _ = run(capsys, str(p))
    assert code == 1 and "DYN101" in out


def test_configuration_in_pyproject(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml", '[tool.dynalint]\nignore = ["DYN102"]\n')
    bad = write(tmp_path, "src/bad.py", BROKEN)
    monkeypatch.chdir(tmp_path)
    out = run(capsys, bad)[1]
    assert "DYN101" in out and "DYN102" not in out


def test_configuration_in_setup_cfg_and_per_file_ignores(tmp_path, capsys):
    write(tmp_path, "setup.cfg", "[dynalint]\nper-file-ignores =\n    tests/*: DYN1\n")
    a = write(tmp_path, "tests/test_model.py", BROKEN)
    b = write(tmp_path, "model.py", BROKEN)
    out = run(capsys, str(tmp_path))[1]
    assert a not in out and b in out


def test_capture_settings_change_what_breaks(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BROKEN)
    out = run(capsys, "--capture-scalar-outputs", bad)[1]
    assert "DYN102" not in out and "DYN101" in out


@pytest.mark.parametrize("config, message", [
    ('[tool.dynalint]\nscope = "everything"\n', "scope: expected one of"),
    ('[tool.dynalint]\nselect = ["E501"]\n', "not a dynalint code"),
    ('[tool.dynalint]\ncolour = true\n', "unknown option 'colour'"),
    ('[tool.dynalint\n', "invalid TOML"),
])
def test_bad_configuration_exits_2_with_a_message(tmp_path, capsys, config, message):
    write(tmp_path, "pyproject.toml", config)
    bad = write(tmp_path, "bad.py", BROKEN)
    code, out, err = run(capsys, bad)
    assert code == 2 and message in err and "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--format", "xml"])
    assert exc.value.code == 2
    assert main([]) == 2


def test_rules_and_rule_commands(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "DYN101" in out and "DYN205" in out
    assert main(["rule", "dyn104"]) == 0
    assert "`Dynamic shape operator` (GB0036)" in capsys.readouterr().out
    assert main(["rule", "DYN999"]) == 2
    assert main(["rule", "DYN000"]) == 0
    out = capsys.readouterr().out
    assert "syntax-error" in out and "### What it does" in out


def test_python_dash_m_and_console_script(tmp_path):
    bad = write(tmp_path, "bad.py", BROKEN)
    proc = subprocess.run([sys.executable, "-m", "dynalint", "check", "--no-cache", bad], capture_output=True,
                          text=True)
    assert proc.returncode == 1 and "DYN101" in proc.stdout


_TEARDOWN = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write('torn down\\n'))\n"
             "from dynalint.adapters.cli import main\n"
             "sys.argv[0] = 'dynalint'\n"
             "sys.exit(main())\n")


def test_check_ends_its_process_without_the_teardown_once_the_report_is_written(tmp_path):
    """A ``check`` run from the command line ends the process as soon as its report is written:
    freeing what a large run leaves alive, object by object, is work for nothing.  The report, on a
    pipe or in a file, is whole, and the exit status is the command's."""
    files = [write(tmp_path, f"m{i}.py", BROKEN) for i in range(3)]
    proc = subprocess.run([sys.executable, "-c", _TEARDOWN, "check", "--no-cache", "--jobs", "2", *files],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout.count("DYN101") == 3
    assert "torn down" not in proc.stderr and "in 3 files" in proc.stderr
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-c", _TEARDOWN, "check", "--no-cache", "--format", "json",
                           "-o", str(report), *files], capture_output=True, text=True)
    found = json.loads(report.read_text())
    assert proc.returncode == 1 and sum(d["code"] == "DYN101" for d in found) == 3
    assert {d["path"] for d in found} == set(files)
    proc = subprocess.run([sys.executable, "-c", _TEARDOWN, "rules"], capture_output=True, text=True)
    assert proc.returncode == 0 and "torn down" in proc.stderr  # other commands end as usual


def test_parallel_jobs_give_the_same_result(tmp_path, capsys):
    for i in range(6):
        write(tmp_path, f"m{i}.py", BROKEN)
    one = run(capsys, str(tmp_path))[1]
    code = main(["check", "--no-cache", "--jobs", "3", str(tmp_path)])
    assert code == 1 and capsys.readouterr().out == one
    assert os.path.exists(tmp_path)


def test_force_exclude_applies_to_named_files(tmp_path, capsys, monkeypatch):
    write(tmp_path, "pyproject.toml", '[tool.dynalint]\nexclude = ["vendor/*"]\n')
    vendored = write(tmp_path, "vendor/m.py", BROKEN)
    monkeypatch.chdir(tmp_path)
    assert run(capsys, vendored)[0] == 1
    code, out, _ = run(capsys, "--force-exclude", vendored)
    assert code == 0 and out == ""


def test_readme_usage_lists_every_flag():
    import re

    from dynalint.adapters.cli import build_parser

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    usage = readme.split("## Usage", 1)[1].split("```", 2)[1]
    usage = re.sub(r"--\[no-\]([\w-]+)", r"--\1 --no-\1", usage)
    listed = set(re.findall(r"(?<![\w-])(--?[\w][\w-]*)", usage))
    parser = build_parser()
    missing = {}
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        flags = {s for a in sub._actions for s in a.option_strings}
        if flags - listed:
            missing[name] = sorted(flags - listed)
    assert not missing, f"README usage block lacks {missing}"
