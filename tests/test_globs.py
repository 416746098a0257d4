"""Path globs of ``exclude``/``per-file-ignores``: ruff's semantics, not fnmatch's."""
from __future__ import annotations

import os

import pytest

from dynalint.config.resolver import Configuration, path_matches
from dynalint.config.files import iter_python_files
from dynalint.config.path_globs import escape, glob_match
from dynalint.config.settings import Settings


@pytest.mark.parametrize("pattern, path, matches", [
    ("tests/*.py", "tests/a.py", True),
    ("tests/*.py", "tests/unit/a.py", False),  # fnmatch: True
    ("tests/**/*.py", "tests/a.py", True),
    ("tests/**/*.py", "tests/unit/deep/a.py", True),
    ("tests/**", "tests/unit/deep/a.py", True),
    ("**/generated/*", "src/pkg/generated/x.py", True),
    ("**/generated/*", "generated/x.py", True),
    ("**/generated/*", "src/generated/sub/x.py", False),
    ("src/**", "lib/src/x.py", False),
    ("a?c.py", "abc.py", True),
    ("a?c.py", "a/c.py", False),
    ("[ab]x.py", "bx.py", True),
    ("[!ab]x.py", "bx.py", False),
    ("[!ab]x.py", "cx.py", True),
    ("{foo,bar}/*.py", "bar/x.py", True),
    ("{foo,bar}/*.py", "baz/x.py", False),
    ("x\\*.py", "x*.py", True),
    ("x\\*.py", "xy.py", False),
    ("[x.py", "[x.py", True),  # an unclosed class is literal
    ("*", "a/b", False),
])
def test_glob_semantics(pattern, path, matches):
    assert glob_match(pattern, path) is matches


def test_escape_matches_itself():
    name = "/tmp/we[ir]d {dir}*?"
    assert glob_match(escape(name) + "/*.py", name + "/m.py")
    assert not glob_match(escape(name) + "/*.py", "/tmp/wei/m.py")


def test_path_matches_anchors_patterns_with_a_slash(tmp_path):
    root = str(tmp_path)
    deep = os.path.join(root, "tests", "unit", "test_x.py")
    assert not path_matches(deep, "tests/*", root)  # a star stays in one folder
    assert path_matches(deep, "tests/**", root)
    assert path_matches(deep, "tests/**/test_*.py", root)
    assert path_matches(deep, "./tests/unit/*.py", root)
    assert path_matches(deep, "test_*.py", root)  # no slash: the name, anywhere
    assert not path_matches(os.path.join(root, "other", "tests", "unit", "test_x.py"), "tests/**", root)


def test_per_file_ignores_and_exclude_use_the_globs(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    for rel in ("tests/top.py", "tests/unit/deep.py", "main.py"):
        (tmp_path / rel).write_text("x = 1\n")
    config = Configuration(Settings(exclude=("tests/*.py",)), str(tmp_path))
    found = {os.path.relpath(p, tmp_path) for p in iter_python_files([str(tmp_path)], config)}
    assert found == {"main.py", os.path.join("tests", "unit", "deep.py")}
    config = Configuration(Settings(per_file_ignores=(("tests/**", ("DYN1",)),)), str(tmp_path))
    assert "DYN1" in config.settings_for(str(tmp_path / "tests" / "unit" / "deep.py")).ignore
    assert "DYN1" not in config.settings_for(str(tmp_path / "main.py")).ignore
