"""A run the cache answers whole: the same report as the run that filled it, and neither libcst nor
the analysis nor the rules loaded (what a one-file ``check`` of a project costs at start-up)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

MODEL = textwrap.dedent("""
    import torch


    @torch.compile
    def step(x):
        if x.sum() > 0:  # noqa: DYN102
            x = x * 2
        return x.max().item()
""").lstrip()

RUN = textwrap.dedent("""
    import sys
    from dynalint.adapters.cli import main

    status = main(sys.argv[1:])
    heavy = sorted(m for m in sys.modules if m == "libcst" or m.startswith(
        ("libcst.", "dynalint.analysis", "dynalint.rules", "dynalint.engine.pipeline", "dynalint.engine.runner")))
    print("LOADED " + " ".join(heavy), file=sys.stderr)
    sys.exit(status)
""")


def _check(cwd, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", RUN, "check", *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=120)
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    rest = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("LOADED"))
    return proc.returncode, proc.stdout, rest, loaded[0].split()[1:]


def _project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(MODEL)
    (pkg / "helpers.py").write_text("def scale(x):\n    return x * 2\n")
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN101"]\n')
    return pkg


def test_a_cached_run_loads_no_engine_and_reports_the_same(tmp_path):
    _project(tmp_path)
    for args in (["pkg/model.py"], ["--format", "json", "pkg"], ["--select", "DYN1", "pkg/model.py"]):
        uncached = _check(tmp_path, "--no-cache", *args)
        first = _check(tmp_path, *args)
        second = _check(tmp_path, *args)
        assert first[:3] == uncached[:3] == second[:3], args
        assert first[3], "the run that fills the cache analyses"
        assert second[3] == [], f"loaded by a cached run: {second[3]}"
    assert json.loads(_check(tmp_path, "--format", "json", "pkg")[1])  # settings applied, findings left


def test_a_changed_file_or_a_new_one_is_analysed_again(tmp_path):
    pkg = _project(tmp_path)
    _check(tmp_path, "pkg/model.py")
    (pkg / "other.py").write_text("from pkg.model import step\n")
    assert _check(tmp_path, "pkg/model.py")[3], "a new file of the project: the record is not used"
    assert _check(tmp_path, "pkg/model.py")[3] == []
    (pkg / "model.py").write_text(MODEL.replace("  # noqa: DYN102", ""))
    status, out, _, loaded = _check(tmp_path, "pkg/model.py")
    assert loaded and "DYN102" in out
    assert _check(tmp_path, "pkg/model.py")[:3] == _check(tmp_path, "--no-cache", "pkg/model.py")[:3]
