"""The flake8 plugin reports the same diagnostics as `dynalint check`."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from dynalint.engine.pipeline import check_source
from dynalint.config.settings import Settings

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


#: CPython accepts a form feed that resets the indentation (libcst alone rejects it).
FORM_FEED = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n\x0c        return x.item()\n    return x\n"


def test_a_file_with_a_form_feed_in_an_indentation_reports_what_check_reports(tmp_path):
    p = tmp_path / "model.py"
    p.write_text(FORM_FEED)
    compile(FORM_FEED, str(p), "exec")  # CPython parses it, so flake8 runs the plugin
    expected = check_source(FORM_FEED, str(p), Settings())
    assert expected and not any(d.code == "DYN000" for d in expected)
    proc = flake8(p, "--select", "DYN")
    assert [line.split(": ", 1)[1].split()[0] for line in proc.stdout.splitlines()] == [d.code for d in expected]


def test_the_plugin_reports_a_file_dynalint_cannot_parse():
    """flake8 runs plugins only on files CPython parses; the plugin itself still never stays silent
    on a file its parser rejects (here one CPython rejects too, handed to the plugin directly)."""
    from dynalint.adapters.flake8_plugin import DynalintChecker

    code = "def f(:\n    pass\n"
    found = list(DynalintChecker(None, "m.py", code.splitlines(True)).run())
    assert [message.split()[0] for _, _, message, _ in found] == ["DYN000"]


def test_a_file_cpython_cannot_parse_is_flake8s_e999(tmp_path):
    p = tmp_path / "model.py"
    p.write_text("def f(:\n    pass\n")
    proc = flake8(p, "--select", "DYN,E999")
    assert proc.returncode == 1
    assert [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == ["E999"]
