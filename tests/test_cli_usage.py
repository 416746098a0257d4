"""Command-line usage: suggestions for typos, rules by name, a missing path, exit statuses."""
from __future__ import annotations

import pytest

from dynalint.adapters.cli import main

from helpers import run, write

BROKEN = "import torch\n\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"


def _usage_error(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_a_mistyped_option_gets_a_suggestion(capsys):
    err = _usage_error(capsys, "check", "--selct", "DYN1", "x.py")
    assert "unrecognized arguments: --selct" in err and "did you mean --select?" in err
    err = _usage_error(capsys, "fix", "--unsafe-fxes", "x.py")
    assert "did you mean --unsafe-fixes?" in err


def test_an_option_of_another_command_says_which_commands_take_it(capsys):
    err = _usage_error(capsys, "fix", "--no-cache", "x.py")
    assert "--no-cache is an option of check" in err and "not of fix" in err
    assert "did you mean --no-cache" not in err


def test_a_mistyped_command_gets_a_suggestion(capsys):
    assert "did you mean 'check'?" in _usage_error(capsys, "chek", ".")


def test_nothing_close_suggests_nothing(capsys):
    assert "did you mean" not in _usage_error(capsys, "check", "--zzzzzzzz")


def test_rule_by_name(capsys):
    assert main(["rule", "tensor-condition"]) == 0
    assert "## DYN101" in capsys.readouterr().out
    assert main(["rule", "DYN101"]) == 0
    capsys.readouterr()
    assert main(["rule", "tensor-conditon"]) == 2
    assert "did you mean 'tensor-condition'?" in capsys.readouterr().err


def test_a_missing_path_is_reported_without_a_position(tmp_path, capsys):
    missing = str(tmp_path / "nope") + "/"
    code, out, err = run(capsys, missing)
    assert code == 1
    assert out == f"{missing}: DYN001 No such file or directory\n"
    assert "1 file not read" in err


def test_fix_diff_exits_1_when_findings_remain(tmp_path, capsys):
    path = write(tmp_path, "m.py", BROKEN)
    # the only fix is unsafe: nothing would change, the finding remains
    assert main(["fix", "--diff", path]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "1 remain" in err
    assert main(["fix", "--diff", "--exit-zero", path]) == 0
    capsys.readouterr()
    assert main(["fix", "--diff", "--unsafe-fixes", path]) == 1  # something would change
    assert "torch.where" in capsys.readouterr().out
    clean = write(tmp_path, "ok.py", "x = 1\n")
    assert main(["fix", "--diff", clean]) == 0


def test_check_fix_no_cache_writes_no_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "m.py", BROKEN)
    code, _, _ = run(capsys, "--fix", "--unsafe-fixes", "m.py")
    assert code == 0 and "torch.where" in (tmp_path / "m.py").read_text()
    assert not (tmp_path / ".dynalint_cache").exists()
