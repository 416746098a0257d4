"""Jupyter notebooks: the code cells are checked as one module, findings point into their cell."""
from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from dynalint.adapters.cli import main
from dynalint.core.notebooks import read_notebook


def _cell(source, kind="code"):
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


CELLS = [
    _cell(["# A title\n"], "markdown"),
    _cell(["import torch\n", "%matplotlib inline\n", "@torch.compile\n", "def f(x):\n",
           "    if x.sum() > 0:\n", "        return x\n", "    return -x\n"]),
    _cell("!pip install something\n@torch.compile\ndef g(x):\n    return x.item()"),
    _cell(["%%bash\n", "if [ -x y ]; then echo hi; fi\n"]),
]


def _write(tmp_path, cells=CELLS, name="nb.ipynb"):
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_code_cells_concatenated_magics_blanked():
    nb = read_notebook(json.dumps({"cells": CELLS}).encode())
    lines = nb.text.splitlines()
    assert lines[1] == "" and lines[7] == ""  # %matplotlib, !pip
    assert lines[-2:] == ["", ""]  # the %%bash cell
    assert nb.locate(5) == (2, 5) and nb.locate(11) == (3, 4)


def test_a_form_feed_in_a_cell_is_kept_within_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = [_cell(["import torch\n", "SEP = '\x0c'\n", "@torch.compile\n", "def f(x):\n",
                    "    return x.item()\n"])]
    _write(tmp_path, cells)
    rc, out, _ = _run("check", "nb.ipynb", "--no-cache")
    assert "DYN000" not in out
    assert out.startswith("nb.ipynb:cell 1:5:12: DYN102 ")


def test_check_notebook_reports_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path)
    rc, out, _ = _run("check", "nb.ipynb", "--no-cache")
    assert rc == 1
    lines = [line for line in out.splitlines() if not line.startswith("  help:")]
    assert lines[0].startswith("nb.ipynb:cell 2:5:8: DYN101 ")
    assert lines[1].startswith("nb.ipynb:cell 3:4:12: DYN102 ")
    rc, out, _ = _run("check", "nb.ipynb", "--no-cache", "--format", "json")
    found = [(d["path"], d["cell"], d["line"], d["column"], d["code"]) for d in json.loads(out)]
    assert found == [("nb.ipynb", 2, 5, 8, "DYN101"), ("nb.ipynb", 3, 4, 12, "DYN102")]


def test_directory_walk_includes_notebooks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path)
    (tmp_path / "m.py").write_text("x = 1\n")
    rc, out, _ = _run("check", ".", "--show-files")
    assert sorted(out.split()) == ["m.py", "nb.ipynb"]
    rc, out, _ = _run("check", ".")  # cached on the second run: the cell survives the cache
    rc2, out2, _ = _run("check", ".")
    assert rc == rc2 == 1 and out == out2 and "nb.ipynb:cell 2:5:8: DYN101" in out


def test_an_invalid_notebook_is_a_read_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ipynb").write_text("{")
    rc, out, _ = _run("check", "bad.ipynb", "--no-cache")
    assert rc == 1 and out.startswith("bad.ipynb: DYN001 not a valid notebook")


def test_fix_leaves_a_notebook_as_it_was_and_lists_its_findings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path)
    before = path.read_bytes()
    rc, _, err = _run("fix", "--unsafe-fixes", "nb.ipynb")
    assert path.read_bytes() == before
    assert rc == 1 and "nb.ipynb: not rewritten" in err and "nb.ipynb:cell 2:5:8: DYN101" in err


def test_notebook_on_standard_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = json.dumps({"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    monkeypatch.setattr("dynalint.adapters.console.read_stdin", lambda: text.encode())
    rc, out, _ = _run("check", "--stdin-filename", "nb.ipynb", "--format", "json", "-")
    assert rc == 1
    assert [(d["cell"], d["line"], d["code"]) for d in json.loads(out)] == [(2, 5, "DYN101"), (3, 4, "DYN102")]
