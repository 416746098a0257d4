"""The bindings a project's parsed tree keeps for its functions are those of its own functions."""
from __future__ import annotations

from pathlib import Path

import libcst as cst

from dynalint.analysis.module_index import local_names_of, state_nodes
from dynalint.analysis.project import SourceIndex


def test_a_tree_keeps_the_bindings_of_its_own_functions_only(tmp_path: Path) -> None:
    """Asking for the bindings of another module's function after a tree was indexed leaves that
    tree's kept bindings as they were: the dict is the tree's only while its index is built."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_text("def g(x):\n    y = x + 1\n    return y\n")
    project = SourceIndex([str(pkg / "__init__.py"), str(pkg / "b.py")]).fresh()
    assert project.load("pkg.b") is not None
    kept = project._trees.get(str(pkg / "b.py"))
    assert kept is not None
    before = dict(kept[2])
    other = cst.parse_module("def f(a):\n    b = a\n    return b\n").body[0]
    assert isinstance(other, cst.FunctionDef)
    assert local_names_of(other)[0] == {"a", "b"}
    assert len(state_nodes(other)) == 1
    assert kept[2] == before
