"""The pre-commit hooks, installed by pre-commit itself from this repository (needs the package index)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = x * 2
            return x[x > 0].sum()
""").lstrip()


def _git(*args: str, cwd: str, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _hook_outputs(output: str) -> dict[str, str]:
    """pre-commit's output, split per hook id."""
    sections: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("- hook id: "):
            current = line[len("- hook id: "):].strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


@pytest.fixture
def git_env(tmp_path) -> dict[str, str]:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    pytest.importorskip("pre_commit")
    # try-repo commits uncommitted changes of this checkout to a shadow clone: give git an identity
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    try:
        _git("ls-files", "--error-unmatch", ".pre-commit-hooks.yaml", cwd=ROOT, env=env)
    except subprocess.CalledProcessError:
        pytest.skip("the project is not a git checkout with .pre-commit-hooks.yaml committed")
    return env


def test_try_repo_runs_both_hooks(tmp_path, git_env):
    """`pre-commit try-repo` builds the hook environment from this repository and runs
    `dynalint` (fails, naming the codes) and then `dynalint-fix` (rewrites the file, fails)."""
    repo = tmp_path / "user-repo"
    repo.mkdir()
    _git("init", "-q", ".", cwd=str(repo), env=git_env)
    (repo / "model.py").write_text(MODEL)
    _git("add", "model.py", cwd=str(repo), env=git_env)

    command = [sys.executable, "-m", "pre_commit", "try-repo", ROOT, "--all-files", "--color", "never"]
    result = subprocess.run(command, cwd=str(repo), env=git_env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    hooks = _hook_outputs(output)
    # no fix is safe for every input: the fix hook passes and writes nothing
    assert set(hooks) == {"dynalint"}, output
    assert re.search(r"dynalint fix\.+Passed", output), output

    check = hooks["dynalint"]
    assert "model.py:7:12: DYN101" in check and "model.py:9:16: DYN104" in check, output
    assert "- exit code: 1" in check

    fixed = (repo / "model.py").read_text()
    assert fixed == fix_source(MODEL, "model.py", Settings()).source == MODEL
    assert "Traceback" not in output


def test_hooks_do_not_print_the_same_finding_twice(tmp_path, capsys):
    """Run the two hooks' entries in order, as pre-commit does: each remaining finding is printed once
    (by `dynalint`); `dynalint-fix` prints what it fixed."""
    import shlex

    import yaml

    from dynalint.adapters.cli import main

    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8") as fh:
        hooks = {h["id"]: shlex.split(h["entry"]) for h in yaml.safe_load(fh)}
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    printed: list[str] = []
    for hook in ("dynalint", "dynalint-fix"):
        argv = hooks[hook]
        assert argv[0] == "dynalint"
        main([*argv[1:], "--no-cache", "--jobs", "1", str(path)] if hook == "dynalint" else
             [*argv[1:], "--jobs", "1", str(path)])
        out, err = capsys.readouterr()
        printed += [line for line in (out + err).splitlines() if f"{path}:" in line and " fixed " not in line]
    assert printed and len(printed) == len(set(printed)), printed


def test_the_fix_hook_says_nothing_is_safe_and_applies_fixes_with_the_documented_opt_in(tmp_path, capsys):
    """The hook's own entry: without args it writes nothing and says why; with the `args: [--unsafe-fixes]`
    the README and the hook's description document, it rewrites the file (and fails, as it changed it)."""
    import shlex

    import yaml

    from dynalint.adapters.cli import main

    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml"), encoding="utf-8") as fh:
        hook = next(h for h in yaml.safe_load(fh) if h["id"] == "dynalint-fix")
    assert "--unsafe-fixes" in hook["description"]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        assert "args: [--unsafe-fixes]" in fh.read()
    argv = shlex.split(hook["entry"])[1:]
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    assert main([*argv, "--jobs", "1", str(path)]) == 0
    assert path.read_text() == MODEL and "Nothing safe to apply" in capsys.readouterr().err
    main([*argv, "--unsafe-fixes", "--jobs", "1", str(path)])
    assert path.read_text() != MODEL and " fixed (unsafe)" in capsys.readouterr().err
