"""Calls into the third-party packages Dynamo's trace rules skip whole (``THIRDPARTY_SKIPLIST``: tqdm, pandas,
scikit-learn, tabulate...) break the graph, whatever the function; the list is read from torch when the
skipped-calls table is generated.  A function of the checked code, and NumPy (traced through ``torch._numpy``),
are not such calls.  Dynamo builds its skip list from the packages installed when it is imported, so the
Dynamo test installs small stand-ins for two of them and runs in a process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from conftest import requires_torch
from helpers import Example, checked_breaks

from dynalint.analysis.skipped_calls import SKIPPED_PACKAGES

CODE = """\
    import numpy as np
    import torch
    from tabulate import tabulate
    from tqdm import tqdm


    def table(rows):
        return len(rows)


    @torch.compile(backend="eager")
    def report(x: torch.Tensor) -> torch.Tensor:
        text = tabulate([[1, 2], [3, 4]])
        for i in tqdm(range(2)):
            x = x + i
        return x * len(text) + table([1, 2]) + np.float32(2.0)


    def main(x):
        return report(x)
"""
BREAKS = {(13, "DYN105"), (14, "DYN105")}

STAND_INS = {
    "tabulate/__init__.py": """
        def tabulate(rows):
            return "\\n".join(" ".join(map(str, row)) for row in rows)
    """,
    "tqdm/__init__.py": """
        class tqdm:
            def __init__(self, iterable):
                self.iterable = iterable

            def __iter__(self):
                return iter(self.iterable)
    """,
}

RUNNER = """
    import json
    import sys

    import torch

    from dynalint.verify.probe import observe, unwrap_compiled

    import checked

    obs = observe(unwrap_compiled(checked.report), [(torch.ones(3),)], files_of_interest=[checked.__file__])
    print(json.dumps({"errors": [str(e) for e in obs.errors], "lines": sorted(obs.break_lines(checked.__file__))}))
"""


def test_the_list_comes_from_dynamo_without_numpy() -> None:
    assert {"tqdm", "pandas", "sklearn"} <= SKIPPED_PACKAGES and "numpy" not in SKIPPED_PACKAGES


def test_check(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, CODE) == BREAKS


@requires_torch
def test_dynamo(tmp_path) -> None:
    for path, text in {**STAND_INS, "checked.py": Example(CODE).source, "runner.py": RUNNER}.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(tmp_path / "runner.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    observed = json.loads(done.stdout.strip().splitlines()[-1])
    assert not observed["errors"]
    assert set(observed["lines"]) == {line for line, _ in BREAKS}
