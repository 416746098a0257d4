"""What a cache entry depends on among the project's files: adding a file re-analyses only the
files whose imports it changes, and a cached run gives what a run without the cache gives."""
from __future__ import annotations

import textwrap

from dynalint.engine.runner import check_files
from dynalint.config.settings import Settings

CALLER = textwrap.dedent("""
    import torch
    from pkg.util import helper


    @torch.compile
    def step(x):
        return helper(x) * 2
""").lstrip()
OTHER = textwrap.dedent("""
    import torch


    @torch.compile
    def other(x):
        if x.sum() > 0:
            x = x + 1
        return x
""").lstrip()
HELPER = textwrap.dedent("""
    def helper(x):
        if x.max() > 1:
            return x.nonzero()
        return x
""").lstrip()


def _project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(CALLER)
    for name in ("b", "c"):
        (pkg / f"{name}.py").write_text(OTHER)
    return pkg


def _run(pkg, cache):
    paths = sorted(str(p) for p in pkg.glob("*.py"))
    results = list(check_files(paths, Settings(), cache_dir=cache))
    assert all(r.error is None for r in results), [r.error for r in results]
    return [d.to_json() for r in results for d in r.diagnostics]


def test_a_file_nothing_imports_leaves_the_other_entries_valid(tmp_path, counted):
    pkg, cache = _project(tmp_path), str(tmp_path / "cache")
    _run(pkg, cache)
    counted.clear()
    (pkg / "unrelated.py").write_text("VALUE = 1\n")
    found = _run(pkg, cache)
    assert counted == [str(pkg / "unrelated.py")]
    assert found == _run(pkg, None)


def test_a_file_an_import_now_resolves_to_re_analyses_its_importers_only(tmp_path, counted):
    pkg, cache = _project(tmp_path), str(tmp_path / "cache")
    before = _run(pkg, cache)
    counted.clear()
    (pkg / "util.py").write_text(HELPER)
    found = _run(pkg, cache)
    assert set(counted) == {str(pkg / "caller.py"), str(pkg / "util.py")}
    assert found != before  # the helper's tensor branch is reached from compiled code now
    assert found == _run(pkg, None)
    counted.clear()
    assert _run(pkg, cache) == found and not counted
    (pkg / "util.py").unlink()  # and gone again: the import resolves to nothing, as at first
    assert _run(pkg, cache) == before
    assert set(counted) == {str(pkg / "caller.py")}


def test_a_module_that_moves_invalidates_the_files_that_import_it(tmp_path, counted):
    """``pkg.util`` as a package instead of a module: another file answers the same import."""
    pkg, cache = _project(tmp_path), str(tmp_path / "cache")
    (pkg / "util.py").write_text(HELPER)
    _run(pkg, cache)
    (pkg / "util.py").unlink()
    (pkg / "util").mkdir()
    (pkg / "util" / "__init__.py").write_text(HELPER.replace("nonzero()", "clone()"))
    counted.clear()
    paths = sorted(str(p) for p in pkg.rglob("*.py"))
    cached = [d.to_json() for r in check_files(paths, Settings(), cache_dir=cache) for d in r.diagnostics]
    assert str(pkg / "caller.py") in counted
    assert not {str(pkg / "b.py"), str(pkg / "c.py")} & set(counted)
    assert cached == [d.to_json() for r in check_files(paths, Settings()) for d in r.diagnostics]
