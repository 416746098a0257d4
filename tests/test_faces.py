"""Every face reports what ``dynalint check .`` reports on a multi-file project.

The helper's tensor branch is reached only from the other file's ``forward`` (scope
``compiled``): a face that analysed ``pkg/helpers.py`` alone would report nothing there.
"""
from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from conftest import requires_torch
from helpers import PACKAGE_HELPERS as HELPERS, PACKAGE_MODEL as MODEL
from dynalint.adapters.cli import main
from dynalint.config.resolver import resolve
from dynalint.engine.session import Session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


HELPER = os.path.join("pkg", "helpers.py")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "model.py").write_text(MODEL)
    (tmp_path / "about.py").write_text("VERSION = '1'\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = main(list(argv))
    finally:
        sys.stdin = sys.__stdin__
    return rc, out.getvalue(), err.getvalue()


def _json_findings(stdout: str, path: str = HELPER) -> list[tuple[int, int, str]]:
    return sorted((d["line"], d["column"], d["code"]) for d in json.loads(stdout)
                  if os.path.normpath(d["path"]) == path)


@pytest.fixture
def expected(project) -> list[tuple[int, int, str]]:
    """What ``check .`` reports in the helper file (not nothing: the scenario must matter)."""
    rc, out, _ = _run("check", ".", "--format", "json", "--no-cache")
    found = _json_findings(out)
    assert rc == 1 and [c for _, _, c in found] == ["DYN101"], out
    return found


def test_check_file(expected):
    rc, out, _ = _run("check", HELPER, "--format", "json", "--no-cache")
    assert rc == 1
    assert _json_findings(out) == expected


def test_check_file_reports_only_the_given_file(expected):
    _, out, _ = _run("check", HELPER, "--format", "json", "--no-cache")
    assert {os.path.normpath(d["path"]) for d in json.loads(out)} == {HELPER}


def test_check_standard_input_named_as_the_file(expected):
    rc, out, _ = _run("check", "--stdin-filename", HELPER, "--format", "json", "-", stdin=HELPERS)
    assert rc == 1
    assert _json_findings(out) == expected


def test_check_file_cached_run_agrees(expected, project):
    first = _run("check", HELPER, "--format", "json")[1]
    assert os.path.isdir(project / ".dynalint_cache")
    assert _json_findings(_run("check", HELPER, "--format", "json")[1]) == _json_findings(first) == expected


def test_flake8_file(expected, project):
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "DYN", HELPER], cwd=project,
                          capture_output=True, text=True)
    found = sorted((int(line.split(":")[1]), int(line.split(":")[2]), line.split(": ", 1)[1].split()[0])
                   for line in proc.stdout.splitlines())
    assert found == expected, proc.stdout + proc.stderr


def _hook_entry(hook_id: str) -> list[str]:
    """The hook's command as ``.pre-commit-hooks.yaml`` declares it, run with this interpreter."""
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as fh:
        hooks = {h["id"]: h for h in yaml.safe_load(fh)}
    entry = shlex.split(hooks[hook_id]["entry"])
    assert entry[0] == "dynalint"
    return [sys.executable, "-m", "dynalint", *entry[1:]]


def test_precommit_hook_on_the_changed_file(expected, project):
    """pre-commit passes the changed files by name: the hook must still see their callers."""
    proc = subprocess.run(_hook_entry("dynalint") + ["--format", "json", HELPER], cwd=project,
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert _json_findings(proc.stdout) == expected


def test_fix_file(expected, project):
    rc, diff_one, err = _run("fix", "--diff", "--unsafe-fixes", HELPER)
    assert rc == 1 and "torch.where" in diff_one, err
    _, diff_all, _ = _run("fix", "--diff", "--unsafe-fixes", ".")
    assert diff_one in diff_all
    fixed = [line for line in err.splitlines() if " fixed (" in line]
    assert [(int(f.split(":")[1]), int(f.split(":")[2]), f.split(": ")[1].split()[0]) for f in fixed] == expected


def test_session_buffer(expected, project):
    session = Session(resolve([str(project / HELPER)]))
    found = session.check_buffer(HELPER, HELPERS)
    assert sorted((d.line, d.column, d.code) for d in found) == expected
    # the unsaved text is what is analysed (the callers come from the files on disk)
    edited = session.check_buffer(HELPER, "# a comment\n" + HELPERS)
    assert sorted((d.line - 1, d.column, d.code) for d in edited) == expected
    with_fixes = session.check_buffer(HELPER, HELPERS, with_fixes=True)
    assert [d.fix is not None for d in with_fixes] == [True]


def test_session_scope_is_the_file_and_its_importers(project):
    session = Session(resolve([str(project / HELPER)]))
    analysed, index = session.scope([HELPER])
    assert analysed[0] == HELPER
    assert {os.path.relpath(p, project) for p in analysed[1:]} == {os.path.join("pkg", "model.py")}
    assert {os.path.relpath(p, project) for p in index} == {
        "about.py", os.path.join("pkg", "__init__.py"), os.path.join("pkg", "model.py"), HELPER}


def test_verify_planning(expected, project):
    from dynalint.config.settings import Scope, Settings
    from dynalint.verify.api import Options, _plan_file, _session
    from dynalint.verify.targets import Ref

    session = _session([Ref(HELPER, "scale")], Settings(scope=Scope.COMPILED))
    plan = _plan_file(HELPER, session, Options(fix=True, unsafe=True), str(project))
    assert sorted((d.line, d.column, d.code) for d in plan.diagnostics) == expected
    assert plan.fixed is not None and [f.code for f in plan.fixed.applied] == ["DYN101"]


@requires_torch
def test_fix_verify_file(expected, project):
    """``fix --verify`` measures the fix of the helper through the other file's model, and keeps it."""
    with open(project / "pkg" / "model.py", "a") as fh:
        fh.write("\n\ndef dynalint_inputs():\n    return [(torch.ones(3),), (-torch.ones(3),)]\n")
    rc, diff, err = _run("fix", "--diff", "--unsafe-fixes", "--verify", "pkg/model.py::Net", HELPER)
    assert "torch.where" in diff, err
    fixed = [line for line in err.splitlines() if " fixed (" in line]
    assert [(int(f.split(":")[1]), f.split(": ")[1].split()[0]) for f in fixed] == [(l, c) for l, _, c in expected]


def test_precommit_try_repo_on_the_changed_file(expected, project):
    """pre-commit itself (installed from this repository) runs the hook on the one changed file."""
    import shutil

    from test_precommit import ROOT as HOOKS_ROOT, _git, _hook_outputs

    if shutil.which("git") is None:
        pytest.skip("needs git")
    pytest.importorskip("pre_commit")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", PRE_COMMIT_HOME=str(project / ".pre-commit-home"))
    try:
        _git("ls-files", "--error-unmatch", ".pre-commit-hooks.yaml", cwd=HOOKS_ROOT, env=env)
    except subprocess.CalledProcessError:
        pytest.skip("the project is not a git checkout with .pre-commit-hooks.yaml committed")
    (project / ".gitignore").write_text(".pre-commit-home/\n")
    _git("init", "-q", ".", cwd=str(project), env=env)
    _git("add", ".", cwd=str(project), env=env)
    command = [sys.executable, "-m", "pre_commit", "try-repo", HOOKS_ROOT, "dynalint", "--files", HELPER,
               "--color", "never", "--verbose"]
    result = subprocess.run(command, cwd=str(project), env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    hook = _hook_outputs(output)["dynalint"]
    found = sorted((int(line.split(":")[1]), int(line.split(":")[2]), line.split(": ", 1)[1].split()[0])
                   for line in hook.splitlines() if line.startswith(HELPER + ":"))
    assert found == expected, output
