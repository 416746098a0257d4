"""``torch.compile(obj)`` of an object of a plain class (not an ``nn.Module``) compiles what calling it runs,
its class's ``__call__``: what breaks there is reported under ``--scope compiled`` too, and the method's
parameters are the graph's inputs. Checked against real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests

THRESHOLDER = """
import torch


class Thresholder:
    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold

    def __call__(self, probs):
        seg = (probs > self.threshold).float()
        print("foreground voxels:", seg.sum())
        return seg


def main():
    run = torch.compile(Thresholder(0.4), backend="eager")
    return run(torch.rand(4, 4))
"""
test_check, test_dynamo = break_tests(THRESHOLDER, {(10, "DYN105")}, "[()]")


def test_check_under_scope_compiled(tmp_path, capsys) -> None:
    from helpers import checked_breaks

    assert checked_breaks(tmp_path, capsys, THRESHOLDER, "--scope", "compiled") == {(10, "DYN105")}
