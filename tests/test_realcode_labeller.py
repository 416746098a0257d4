"""The real-code labeller records what Dynamo does, in eval-zoo's format.

A toy library installed under a ``site-packages`` folder is labelled by ``benchmarks/realcode/label.py``
in a subprocess. The breaks must sit on the library lines Dynamo breaks on (the innermost library frame,
not the caller), the traced lines must cover what ran, and eval-zoo's scorer must score dynalint output
against the record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import requires_torch

pytestmark = requires_torch

ROOT = Path(__file__).resolve().parents[1]
LABEL = ROOT / "benchmarks" / "realcode" / "label.py"

TOYLIB = textwrap.dedent("""\
    import torch


    def keep_positive(x):
        idx = torch.nonzero(x > 0)
        return x[idx[:, 0]]


    def normalise(x, y):
        s = x.sum()
        z = keep_positive(x)
        if y.max() > 0:
            return z * 2
        return z + s
    """)
NONZERO_LINE, BRANCH_LINE, CALLER_LINE = 5, 12, 11

SPECS = textwrap.dedent("""\
    import platform
    import sys
    from dataclasses import dataclass, field

    import torch

    sys.path.insert(0, {site!r})
    LIBRARIES = ("toylib",)


    @dataclass
    class Spec:
        name: str
        library: str
        model: str
        setting: str
        build: object
        inputs: object
        config: dict = field(default_factory=dict)
        dynamo_config: dict = field(default_factory=dict)
        notes: object = None


    def versions():
        return {{"torch": torch.__version__, "python": platform.python_version()}}


    def build():
        import toylib.ops
        return toylib.ops.normalise


    def inputs():
        return [([torch.tensor([1.0, -2.0, 3.0]), torch.tensor([1.0])], {{}}),
                ([torch.tensor([-1.0, 2.0, 3.0, 4.0]), torch.tensor([-1.0])], {{}})]


    SPECS = {{"toy.normalise:eval": Spec("toy.normalise:eval", "toylib", "normalise", "eval", build, inputs)}}
    """)


def test_labels_breaks_and_traced_lines_and_scores(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "toylib").mkdir(parents=True)
    (site / "toylib" / "__init__.py").write_text("")
    (site / "toylib" / "ops.py").write_text(TOYLIB)
    specs = tmp_path / "toyspecs.py"
    specs.write_text(SPECS.format(site=str(site)))
    out = tmp_path / "labels.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "REALCODE_TMP": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            str(LABEL),
            "--specs",
            str(specs),
            "--out",
            str(out),
            "--files",
            str(tmp_path / "files.txt"),
            "--timeout",
            "240",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (rec,) = json.loads(out.read_text())
    assert rec["status"] == "ok", rec.get("error")
    assert rec["completed_input_sets"] == 2
    assert rec["input_sets"][0]["args"] == ["Tensor[3]:float32", "Tensor[1]:float32"]

    breaks = {(b["file"], b["line"]): b for b in rec["breaks"] if b["in_library"]}
    assert set(breaks) == {("toylib/ops.py", NONZERO_LINE), ("toylib/ops.py", BRANCH_LINE)}
    nonzero = breaks[("toylib/ops.py", NONZERO_LINE)]
    assert nonzero["gb_type"] == "Dynamic shape operator"
    assert nonzero["user_stack"][-2:] == [f"toylib/ops.py:{CALLER_LINE}", f"toylib/ops.py:{NONZERO_LINE}"]
    assert breaks[("toylib/ops.py", BRANCH_LINE)]["gb_type"] == "Data-dependent branching"

    traced = set(rec["traced_lines"]["toylib/ops.py"])
    assert {NONZERO_LINE, 10, CALLER_LINE, BRANCH_LINE} <= traced
    assert (tmp_path / "files.txt").read_text().split() == ["toylib/ops.py"]

    # eval-zoo's scorer reads the record: a prediction on the branch line is a hit,
    # one on `s = x.sum()` (traced, no break) a false alarm.
    scorer = next(
        (
            p
            for p in (
                ROOT.parent / "shared" / "eval-zoo" / "score_zoo.py",
                Path("/work/shared/eval-zoo/score_zoo.py"),
            )
            if p.is_file()
        ),
        None,
    )
    if scorer is None:
        return
    diags = tmp_path / "diags.json"
    diags.write_text(
        json.dumps(
            [
                {
                    "path": str(site / "toylib" / "ops.py"),
                    "line": BRANCH_LINE,
                    "code": "X",
                    "kind": "graph-break",
                },
                {"path": str(site / "toylib" / "ops.py"), "line": 10, "code": "X", "kind": "graph-break"},
            ]
        )
    )
    res = tmp_path / "score.json"
    subprocess.run(
        [
            sys.executable,
            str(scorer),
            str(diags),
            "--labels",
            str(out),
            "--site-packages",
            str(site),
            "--json",
            str(res),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    score = json.loads(res.read_text())
    assert (score["real_break_locations"], score["tp_breaks"], score["fp"]) == (2, 1, 1)
