"""Which files make the project around the files a face is given."""
from __future__ import annotations

import os
import subprocess

import pytest

from dynalint.config.resolver import resolve
from dynalint.engine.session import Session

HELPERS = "def scale(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n"
MODEL = ("from torch import nn\n\nfrom .helpers import scale\n\n\nclass Net(nn.Module):\n"
         "    def forward(self, x):\n        return scale(x)\n")


@pytest.fixture
def loose(tmp_path, monkeypatch):
    """A package in a folder with no configuration file and no git, beside unrelated files."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "model.py").write_text(MODEL)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "script.py").write_text("from pkg.helpers import scale\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _session(path: str) -> Session:
    return Session(resolve([path], overrides={"scope": "compiled"}))


def test_without_configuration_or_git_the_project_is_the_package(loose):
    if any(os.path.exists(os.path.join(d, ".git")) for d in _ancestors(str(loose))):
        pytest.skip("the temporary folder is inside a git work tree")
    helper = os.path.join("pkg", "helpers.py")
    session = _session(helper)
    assert session.project_roots([helper]) == [str(loose / "pkg")]
    assert {os.path.relpath(p, loose) for p in session.project_files([helper])} == {
        os.path.join("pkg", n) for n in ("__init__.py", "helpers.py", "model.py")}
    [result] = session.check([helper])
    assert [d.code for d in result.diagnostics] == ["DYN101"]
    (loose / "loose.py").write_text(HELPERS)
    assert _session("loose.py").project_roots(["loose.py"]) == []


def test_in_a_git_work_tree_the_project_is_the_current_directory(loose):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("needs git")
    subprocess.run(["git", "init", "-q", str(loose)], check=True)
    helper = os.path.join("pkg", "helpers.py")
    session = _session(helper)
    assert session.project_roots([helper]) == [str(loose)]
    assert str(loose / "elsewhere" / "script.py") in session.project_files([helper])


def test_a_file_outside_the_root_is_alone(tmp_path, loose):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text(HELPERS)
    try:
        session = Session(resolve(["."]))
        assert session.scope([str(outside)]) == ([str(outside)], [str(outside)])
    finally:
        outside.unlink()


def _ancestors(path: str):
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def test_a_cached_analysis_depends_on_the_package_reexports_it_read(tmp_path, monkeypatch):
    """Two files resolve a helper through an unchecked package ``__init__`` re-export; when the
    re-export changes, neither file's cached result may be served."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "__init__.py").write_text("from .ops import score\n")
    (lib / "ops.py").write_text("def score(x):\n    return x.sum()\n")
    (lib / "other.py").write_text("def score(x):\n    return 1.0\n")
    body = ("import torch\nfrom lib import score\n\n\n@torch.compile\ndef f(x):\n"
            "    if score(x) > 0:\n        return x\n    return -x\n")
    (tmp_path / "use1.py").write_text(body)
    (tmp_path / "use2.py").write_text(body.replace("def f", "def g"))
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    monkeypatch.chdir(tmp_path)
    users = ["use1.py", "use2.py"]
    cache = str(tmp_path / "cache")

    def codes(cache_dir):
        session = Session(resolve(["."]), cache_dir=cache_dir)
        return {r.path: sorted(d.code for d in r.diagnostics) for r in session.check(users)}

    assert codes(cache) == {"use1.py": ["DYN101"], "use2.py": ["DYN101"]}
    (lib / "__init__.py").write_text("from .other import score\n")
    fresh = codes(None)
    assert fresh == {"use1.py": [], "use2.py": []}
    assert codes(cache) == fresh


def test_refresh_finds_a_new_importer(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    monkeypatch.chdir(tmp_path)
    helper = os.path.join("pkg", "helpers.py")
    session = Session(resolve(["."]))
    assert session.check_buffer(helper, HELPERS) == []
    (pkg / "model.py").write_text(MODEL)
    session.refresh()
    assert [d.code for d in session.check_buffer(helper, HELPERS)] == ["DYN101"]


def _hub_package(tmp_path, monkeypatch, unrelated: int = 3):
    """A package whose ``__init__`` re-exports ``helpers.scale`` and a logger of its own, a model two
    imports away that calls ``scale`` through the package, and modules that only take the logger."""
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\n')
    pkg = tmp_path / "pkg"
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .helpers import scale\nfrom .log import logger\n")
    (pkg / "log.py").write_text("logger = None\n")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "models" / "__init__.py").write_text("")
    (pkg / "models" / "net.py").write_text(MODEL.replace("from .helpers import scale", "from .. import scale"))
    for i in range(unrelated):
        (pkg / f"tool{i}.py").write_text("from . import logger\n\n\ndef run():\n    return logger\n")
    monkeypatch.chdir(tmp_path)
    return os.path.join("pkg", "helpers.py")


def test_a_file_is_analysed_with_the_modules_that_reach_it_through_a_reexport(tmp_path, monkeypatch):
    helper = _hub_package(tmp_path, monkeypatch)
    session = Session(resolve(["."]))
    analysed, index = session.scope([helper])
    names = {os.path.relpath(p, tmp_path) for p in analysed}
    assert os.path.join("pkg", "models", "net.py") in names and os.path.join("pkg", "__init__.py") in names
    assert not any(os.path.basename(n).startswith("tool") for n in names), names  # they only take the logger
    assert len(index) == 8
    [result] = session.check([helper])
    assert [d.code for d in result.diagnostics] == ["DYN101"]  # the compiled caller two imports away


def test_the_files_analysed_around_one_file_are_bounded(tmp_path, monkeypatch):
    from dynalint.engine.session import callers_of

    helper = _hub_package(tmp_path, monkeypatch, unrelated=0)
    for i in range(6):  # six modules that call `scale`: each can hand it arguments
        (tmp_path / "pkg" / f"user{i}.py").write_text("from .helpers import scale\n\n\ndef f(x):\n    return scale(x)\n")
    session = Session(resolve(["."]))
    source = session.index(session.scope([helper])[1])
    start = [source.module_of(helper)]
    assert len(callers_of(source, start)) == 1 + 8  # the package, the model, six users
    bounded = callers_of(source, start, limit=3)
    assert len(bounded) == 1 + 3 and start[0] in bounded
    assert {m for m in bounded if m.startswith("pkg.user")} <= {f"pkg.user{i}" for i in range(6)}


def test_the_search_for_callers_is_made_again_only_when_a_file_changes(tmp_path, monkeypatch):
    """An editor asks for the scope of a document on each edit: the same answer, found once while the
    project's files are as they were, and found again once a file changes on disk."""
    import dynalint.engine.session as session_module

    helper = _hub_package(tmp_path, monkeypatch, unrelated=0)
    searches = []
    search = session_module.callers_of
    monkeypatch.setattr(session_module, "callers_of", lambda *a, **k: searches.append(a) or search(*a, **k))
    session = Session(resolve(["."]))
    first = session.scope([helper])
    first[0].append("scratch")  # what a caller does with the lists is not kept
    assert session.scope([helper]) == session.scope([helper]) != first
    assert len(searches) == 1
    user = tmp_path / "pkg" / "user.py"
    user.write_text("from .helpers import scale\n\n\ndef f(x):\n    return scale(x)\n")
    session.refresh()
    analysed, _ = session.scope([helper])
    assert len(searches) == 2 and str(user) in analysed  # a new caller
    user.write_text("def f(x):\n    return x\n")
    os.utime(user, ns=(1, 1))  # the stamp changes even within the clock's resolution
    analysed, _ = session.scope([helper])
    assert len(searches) == 3 and str(user) not in analysed
