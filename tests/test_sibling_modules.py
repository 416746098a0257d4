"""A script checked alone in a folder of loose scripts (no package, no configuration, no git) reads the
modules beside it that it imports, as Python finds them when it runs it: a schedule computed by a helper of
``_utils.py`` is followed into the helper, so the float it hands a compiled function is known to change
(DYN206); a module it does not import is not read.  The script also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

import json

from conftest import requires_torch
from helpers import recompiles_of_script, run, write

UTILS = """\
import math


def warmup_cosine(step, warmup, total, base_lr, min_lr=0.0):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * progress))
"""

SCRIPT = """\
import torch
from _utils import warmup_cosine


def step_fn(x, scale):
    return (x * 2).sum() * scale


compiled = torch.compile(step_fn, backend="eager")

if __name__ == "__main__":
    for step in range(4):
        lr = warmup_cosine(step, 1, 4, 0.05)
        compiled(torch.randn(8), lr / 0.05)
"""


def test_a_helper_beside_the_script_is_followed(tmp_path, capsys) -> None:
    write(tmp_path, "_utils.py", UTILS)
    script = write(tmp_path, "train.py", SCRIPT)
    _, out, _ = run(capsys, "--format", "json", script)
    assert [(d["line"], d["code"]) for d in json.loads(out)] == [(5, "DYN206")]


def test_a_module_the_script_does_not_import_is_not_read(tmp_path, capsys) -> None:
    write(tmp_path, "_other.py", UTILS)
    script = write(tmp_path, "train.py", SCRIPT.replace("from _utils import", "from _missing import"))
    _, out, _ = run(capsys, "--format", "json", script)
    assert json.loads(out) == []


@requires_torch
def test_dynamo_recompiles_on_the_scale(tmp_path, monkeypatch) -> None:
    write(tmp_path, "_utils.py", UTILS)
    monkeypatch.syspath_prepend(str(tmp_path))  # (as `python train.py` puts the script's folder first)
    assert len(recompiles_of_script(tmp_path, "train", SCRIPT)) == 1
