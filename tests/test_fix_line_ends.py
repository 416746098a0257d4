"""Line ends: files without a final newline, CR line ends, form feeds and Unicode separators.

libcst writes a newline after the last statement and drops it again when the file
has none; positions must not count it (they once ran one character past the source).
Fix edits count lines as Python and diagnostics do.
"""
from __future__ import annotations

import libcst as cst
import pytest

from dynalint.adapters.cli import main
from dynalint.engine.fixing import apply_text_edits, diagnostics_with_fixes, fix_source
from dynalint.core.positions import node_ranges
from dynalint.config.settings import Settings

#: One file per fixer (two forms for some), each ending with the statement the fixer rewrites.
LAST_STATEMENT = {
    "branch-to-where": """\
import torch


@torch.compile
def f(x):
    if x.sum() > 0:
        x = x * 2""",
    "branch-to-where:return": """\
import torch


@torch.compile
def f(x):
    return x * 2 if x.mean() > 0 else x""",
    "skip-logging-while-compiling": """\
import logging

import torch

logger = logging.getLogger(__name__)


@torch.compile
def f(x):
    y = x * 2
    logger.info("y %s", tuple(y.shape))""",
    "defer-logging": """\
import torch


@torch.compile
def f(x):
    y = x + 1
    print("y:", y.sum())""",
    "async-assert": """\
import torch


@torch.compile
def f(x):
    if torch.isnan(x).any():
        raise RuntimeError("NaN")""",
    "async-assert:assert": """\
import torch


@torch.compile
def f(x):
    assert not torch.isnan(x).any(), 'bad'""",
    "keep-tensor": """\
import torch


@torch.compile
def f(x):
    return x / x.abs().max().item()""",
    "masked-reduction": """\
import torch


@torch.compile
def f(x):
    mask = x < 0
    x[mask] += 1""",
    "masked-loss": """\
import torch
import torch.nn.functional as F


@torch.compile
def f(logits, labels):
    keep = labels != -100
    return F.cross_entropy(logits[keep], labels[keep])""",
    "masked-elementwise-loss": """\
import torch
import torch.nn.functional as F


@torch.compile
def f(pred, target):
    valid = target > 0
    return F.mse_loss(pred[valid], target[valid])""",
    "hoist-decision": """\
import torch


@torch.compile
def f(x, t):
    if t < 100:
        x = torch.cat([x, x * 0.1])""",
    "branch-to-cond": """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.a(x)
        return self.a(x) * 2""",
    "python-state-to-buffer": """\
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1""",
    "global-to-tensor": """\
import torch

drop_rate = 0.0


@torch.compile
def residual(x):
    return x * (1.0 - drop_rate)


def set_drop_rate(rate: float):
    global drop_rate
    drop_rate = rate""",
    "env-read-once": """\
import os

import torch


@torch.compile
def f(x):
    return x * float(os.environ.get("SCALE", "1"))"""
}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("name", sorted(LAST_STATEMENT))
def test_fixing_the_last_statement_of_a_file_without_final_newline(name, newline):
    source = LAST_STATEMENT[name].replace("\n", newline)
    ended = fix_source(source + newline, "m.py", Settings(), unsafe=True)
    assert ended.applied and ended.applied[0].fixer == name.split(":")[0] and not ended.remaining
    assert ended.source.endswith(newline)
    unended = fix_source(source, "m.py", Settings(), unsafe=True)
    # the same rewrite, still without the final newline
    assert unended.source == ended.source[:-len(newline)]
    assert [a.fixer for a in unended.applied] == [a.fixer for a in ended.applied]


def test_ranges_stay_inside_the_source():
    source = LAST_STATEMENT["skip-logging-while-compiling"]
    module = cst.parse_module(source)
    nodes = [module.body[-1], module.body[-1].body.body[-1]]
    last_line = source.count("\n") + 1
    ranges = node_ranges(module, source, nodes)
    width = len(source.splitlines()[-1])
    assert ranges[id(nodes[0])].end_line == last_line and ranges[id(nodes[0])].end_column == width + 1
    assert ranges[id(nodes[1])].end_line == last_line and ranges[id(nodes[1])].end_column == width + 1


def test_cli_fixes_the_file_of_the_report(tmp_path, capsys):
    p = tmp_path / "m.py"
    p.write_text(LAST_STATEMENT["branch-to-where"])
    code = main(["fix", "--unsafe-fixes", str(p)])
    err = capsys.readouterr().err
    assert code == 0 and "error" not in err and "fixed 1 issue in 1 file; 0 remain" in err
    text = p.read_text()
    assert text.endswith("x = torch.where(x.sum() > 0, x_then, x)") and "if x.sum()" not in text


def test_fix_edits_count_lines_as_python_does():
    """A form feed or a Unicode line separator in a comment does not end a line (``str.splitlines``
    would split there and shift every edit below it)."""
    source = ("import torch\n# page\x0cbreak \u2028 and more\n\n\n@torch.compile\ndef f(x):\n"
              "    if x.sum() > 0:\n        x = x * 2\n    return x\n")
    [d] = diagnostics_with_fixes(source, "m.py", Settings())
    assert d.line == 7 and [e.line for e in d.fix.edits] == [7]
    assert apply_text_edits(source, d.fix.edits) == fix_source(source, "m.py", Settings(), unsafe=True).source


def test_a_cr_file_keeps_its_final_blank_lines():
    source = LAST_STATEMENT["branch-to-where"].replace("\n", "\r") + "\r\r"
    fixed = fix_source(source, "m.py", Settings(), unsafe=True).source
    assert fixed.endswith("x = torch.where(x.sum() > 0, x_then, x)\r\r")
