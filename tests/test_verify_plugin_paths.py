"""The pytest plugin's ``FILE::NAME`` lookup: next to the test file, then the rootdir, then the
current directory (no measurement runs here)."""
from __future__ import annotations

import os

from dynalint.verify.pytest_plugin import _ref


def _tree(tmp_path):
    tests, root, cwd = tmp_path / "root" / "tests", tmp_path / "root", tmp_path / "elsewhere"
    tests.mkdir(parents=True)
    cwd.mkdir()
    (tests / "model.py").write_text("")
    (root / "model.py").write_text("")
    (root / "inputs.py").write_text("")
    (cwd / "only_here.py").write_text("")
    return [str(tests), str(root), str(cwd)], tests, root, cwd


def test_next_to_the_test_file_first_then_the_rootdir_then_the_current_directory(tmp_path):
    dirs, tests, root, cwd = _tree(tmp_path)
    assert _ref("model.py::Net", dirs, "target") == f"{tests / 'model.py'}::Net"
    assert _ref("inputs.py::make", dirs, "inputs") == f"{root / 'inputs.py'}::make"
    assert _ref("only_here.py::f", dirs, "inputs") == f"{cwd / 'only_here.py'}::f"
    assert _ref("missing.py::f", dirs, "inputs") == "missing.py::f"  # left for verify to report
    absolute = f"{root / 'model.py'}::Net"
    assert _ref(absolute, dirs, "target") == absolute


def test_per_target_entries_and_lists(tmp_path):
    dirs, tests, root, _ = _tree(tmp_path)
    assert _ref("Net=inputs.py::make", dirs, "inputs") == f"Net={root / 'inputs.py'}::make"
    assert _ref("model.py::Net=inputs.py::make", dirs, "inputs") == \
        f"{tests / 'model.py'}::Net={root / 'inputs.py'}::make"
    assert _ref(["A=inputs.py::a", "model.py::b"], dirs, "inputs") == \
        [f"A={root / 'inputs.py'}::a", f"{tests / 'model.py'}::b"]
    assert os.path.isabs(_ref(("inputs.py::a",), dirs, "inputs")[0].rpartition("::")[0])
