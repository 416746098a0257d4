"""`dynalint fix`: writes safe fixes, unsafe ones on request, diffs, and keeps files intact."""
from __future__ import annotations

import os
import shutil
import stat
import textwrap

import pytest

from dynalint.adapters.cli import main

MODEL = textwrap.dedent("""\
    import torch


    @torch.compile
    def step(x):  # keep this comment
        print("x:", x.sum())
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
""")


def fix(capsys, *args):
    code = main(["fix", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_safe_fixes_only_by_default(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    code, _, err = fix(capsys, str(p))
    text = p.read_text()
    assert text == MODEL and code == 1  # both fixes are unsafe: nothing is written
    assert "2 with an unsafe fix: use --unsafe-fixes" in err
    assert "Nothing safe to apply: every fix these findings have is unsafe" in err


def test_unsafe_fixes_and_idempotence(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    code, _, err = fix(capsys, "--unsafe-fixes", str(p))
    first = p.read_text()
    assert code == 0 and "torch.where(x.sum() > 0, y_then, y_else)" in first
    assert "fixed 2 issues in 1 file; 0 remain" in err
    code, _, err = fix(capsys, "--unsafe-fixes", str(p))
    assert p.read_text() == first and "fixed 0 issues" in err


def test_diff_writes_nothing(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    code, out, _ = fix(capsys, "--diff", "--unsafe-fixes", str(p))
    assert code == 1 and out.startswith(f"--- {p}") and "+    y = torch.where" in out
    assert p.read_text() == MODEL
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    assert fix(capsys, "--diff", str(clean))[0] == 0


def test_diff_keeps_a_form_feed_inside_its_line(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text("# page\x0cbreak\n" + MODEL)
    out = fix(capsys, "--diff", "--unsafe-fixes", str(p))[1]
    assert " # page\x0cbreak\n" in out  # one context line, not two
    assert "\n break\n" not in out


def test_line_endings_encoding_and_permissions_are_kept(tmp_path, capsys):
    p = tmp_path / "m.py"
    data = ("# -*- coding: latin-1 -*-\n# café\n" + MODEL).replace("\n", "\r\n").encode("latin-1")
    p.write_bytes(data)
    os.chmod(p, 0o640)
    fix(capsys, "--unsafe-fixes", str(p))
    out = p.read_bytes()
    assert b"caf\xe9" in out and b"torch.where" in out
    assert out.count(b"\r\n") == out.count(b"\n")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_select_limits_fixes(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    fix(capsys, "--unsafe-fixes", "--select", "DYN101", str(p))
    text = p.read_text()
    assert "torch.where" in text and "reorderable_logging_functions" not in text


def test_unparseable_file_is_left_alone(tmp_path, capsys):
    p = tmp_path / "bad.py"
    p.write_text("def f(:\n")
    code, _, err = fix(capsys, str(p))
    assert p.read_text() == "def f(:\n" and code == 1 and "Traceback" not in err


def test_exit_zero_keeps_remaining_findings_out_of_the_status(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    code, _, err = fix(capsys, "--exit-zero", str(p))
    assert code == 0 and "2 remain" in err


def test_a_refused_fix_says_why(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class M(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    y = x.sum()
                else:
                    y = x
                return y
    """))
    code, _, err = fix(capsys, "--unsafe-fixes", str(p))
    assert code == 1 and "fixed 0 issues" in err
    assert "DYN101 fix refused (branch-to-where): the alternatives are not provably of one shape" in err
    assert "DYN101 fix refused (branch-to-cond): `y` gets values not provably of one shape and dtype" in err


def test_fix_sees_what_the_compiled_code_of_other_files_passes(tmp_path, capsys):
    """A helper in one file, reached only from another file's ``forward``: ``fix`` analyses it with the
    tensors that ``forward`` passes (as ``check`` does), so the fix is proven and applied."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(textwrap.dedent("""\
        import torch


        def scale(x, factor):
            if factor.sum() > 0:
                x = x * 2
            return x
    """))
    (pkg / "model.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn

        from .utils import scale


        class M(nn.Module):
            def forward(self, x: torch.Tensor, f: torch.Tensor):
                return scale(x, f) + 1
    """))
    code, _, err = fix(capsys, "--unsafe-fixes", "--jobs", "1", str(pkg))
    fixed = (pkg / "utils.py").read_text()
    assert code == 0 and "torch.where(factor.sum() > 0, x_then, x)" in fixed, err
    assert "fixed 1 issue in 1 file; 0 remain" in err


def test_fix_verify_end_to_end_writes_only_what_dynamo_confirms(tmp_path, capsys):
    """The real path: the fix engine, the measurements in worker processes, the CLI's report."""
    pytest.importorskip("torch")
    here = os.path.dirname(__file__)
    p = tmp_path / "two_branches.py"
    shutil.copy(os.path.join(here, "verify_cases", "two_branches.py"), p)
    code, _, err = fix(capsys, "--unsafe-fixes", "--verify", f"{p}::Damped", "--timeout", "60", str(p))
    text = p.read_text()
    assert "Traceback" not in err and "error" not in err
    assert "y = torch.where(x.sum() > 0, y_then, y_else)" in text and "if x.mean() > 0:" in text
    assert ":8:12: DYN101 fixed (unsafe)" in err  # where ``fix`` without --verify reports it: the condition
    assert "fix left out: it lies in code the targets' input streams do not run" in err
    assert "fixed 1 issue in 1 file; 1 remain." in err and code == 1
