"""The quick import scan behind the project's import graph (which files import which)."""
from __future__ import annotations

import os
import textwrap

from dynalint.analysis.project import SourceIndex
from dynalint.config.resolver import resolve
from dynalint.engine.session import Session


def _package(tmp_path, model: str) -> dict[str, str]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    files = {"__init__": "", "helpers": "def scale(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n",
             "other": "A = 1\n", "third": "B = 2\n", "model": textwrap.dedent(model).lstrip()}
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(text)
    return {name: str(pkg / f"{name}.py") for name in files}


def test_parenthesised_multi_line_from_import(tmp_path):
    paths = _package(tmp_path, """
        from .helpers import (
            scale,  # the one that matters
            scale as again,
        )
        from . import (other,
                       third)
    """)
    graph = SourceIndex(paths.values()).import_graph()
    assert graph["pkg.model"] == {"pkg", "pkg.helpers", "pkg.other", "pkg.third"}


def test_import_of_several_modules(tmp_path):
    paths = _package(tmp_path, """
        import os, pkg.helpers as h, pkg.other
        import pkg.third
        from pkg.helpers import *
    """)
    graph = SourceIndex(paths.values()).import_graph()
    assert graph["pkg.model"] == {"pkg.helpers", "pkg.other", "pkg.third"}


def test_an_importer_through_a_parenthesised_import_supplies_the_entries(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\n')
    paths = _package(tmp_path, """
        from torch import nn
        from . import (
            helpers,
        )


        class Net(nn.Module):
            def forward(self, x):
                return helpers.scale(x)
    """)
    monkeypatch.chdir(tmp_path)
    session = Session(resolve([paths["helpers"]]))
    [result] = session.check([os.path.join("pkg", "helpers.py")])
    assert [d.code for d in result.diagnostics] == ["DYN101"]
