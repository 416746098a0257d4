"""The flake8 plugin reports the same diagnostics as `dynalint check`."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from dynalint.engine import check_source
from dynalint.settings import Settings

MODEL = textwrap.dedent("""\
    import logging

    import torch
    import torch.nn as nn

    logger = logging.getLogger(__name__)


    class M(nn.Module):
        def forward(self, x):
            logger.info("x")
            if x.sum() > 0:  # noqa: DYN101
                x = x * 2
            return x[x > 0].mean()
""")


def flake8(path, *args):
    return subprocess.run([sys.executable, "-m", "flake8", *args, str(path)], capture_output=True, text=True)


def test_flake8_select_dyn_reports_dynalint_codes(tmp_path):
    p = tmp_path / "model.py"
    p.write_text(MODEL)
    proc = flake8(p, "--select", "DYN")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 1
    expected = [d for d in check_source(MODEL, str(p), Settings()) if d.code != "DYN101"]
    assert [l.split(": ", 1)[1].split()[0] for l in lines] == [d.code for d in expected]
    assert [tuple(map(int, l.split(":")[1:3])) for l in lines] == [(d.line, d.column) for d in expected]


def test_flake8_noqa_and_extend_ignore(tmp_path):
    p = tmp_path / "model.py"
    p.write_text(MODEL)
    out = flake8(p, "--select", "DYN", "--extend-ignore", "DYN105").stdout
    assert "DYN105" not in out and "DYN104" in out and "DYN101" not in out


def test_flake8_honours_the_dynalint_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dynalint]\nignore = ["DYN105"]\nper-file-ignores = {"sub/*" = ["DYN104"]}\n')
    top = tmp_path / "model.py"
    top.write_text(MODEL)
    (tmp_path / "sub").mkdir()
    nested = tmp_path / "sub" / "model.py"
    nested.write_text(MODEL)
    out = flake8(top, "--select", "DYN").stdout
    assert "DYN104" in out and "DYN105" not in out
    out = flake8(nested, "--select", "DYN").stdout
    assert "DYN104" not in out and "DYN105" not in out


def test_flake8_reports_a_broken_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nselect = ["DYN999"]\n')
    p = tmp_path / "model.py"
    p.write_text(MODEL)
    proc = flake8(p, "--select", "DYN")
    assert proc.returncode == 1
    assert ":1:1: DYN002 dynalint configuration error:" in proc.stdout and "DYN999" in proc.stdout
    assert "DYN104" not in proc.stdout


def test_an_internal_error_is_reported_on_the_file_not_dropped(tmp_path, monkeypatch):
    import dynalint.adapters.flake8_plugin as plugin

    def crash(*args, **kwargs):
        raise KeyError("x")

    monkeypatch.setattr(plugin.Session, "check_buffer", crash)
    p = tmp_path / "model.py"
    p.write_text(MODEL)
    results = list(plugin.DynalintChecker(None, str(p), MODEL.splitlines(keepends=True)).run())
    assert [(line, col, text.split(" (")[0]) for line, col, text, _ in results] == \
        [(1, 0, "DYN000 internal error, file not analysed")]
    assert "KeyError: 'x'" in results[0][2] and "please report" in results[0][2]


#: CPython accepts a form feed that resets the indentation; dynalint's parser (libcst) does not.
FORM_FEED = "import torch\n\n\ndef f(x):\n    if x:\n\x0c        return x.item()\n    return x\n"


def test_a_file_dynalint_cannot_parse_is_reported_not_silent(tmp_path):
    p = tmp_path / "model.py"
    p.write_text(FORM_FEED)
    compile(FORM_FEED, str(p), "exec")  # CPython parses it, so flake8 reports no E999 of its own
    [expected] = check_source(FORM_FEED, str(p), Settings())
    assert expected.code == "DYN000", "this input no longer shows the case: pick one dynalint cannot parse"
    proc = flake8(p, "--select", "DYN")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"{p}:{expected.line}:{expected.column}: DYN000 {expected.message}"]


def test_a_file_cpython_cannot_parse_is_flake8s_e999(tmp_path):
    p = tmp_path / "model.py"
    p.write_text("def f(:\n    pass\n")
    proc = flake8(p, "--select", "DYN,E999")
    assert proc.returncode == 1
    assert [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == ["E999"]
