"""The committed table of the members of ``torch.Tensor`` matches the installed torch, and a parameter the
analysis could only guess to be a tensor is none once its code reads an attribute no tensor has
(``cfg.temperature``): Dynamo traces ``copy.deepcopy`` of such a config, and breaks on one of a tensor."""
from __future__ import annotations

import pytest
from conftest import requires_torch
from helpers import break_tests, assert_generated_module_current

import dynalint.analysis.tensor_members as committed


@requires_torch
@pytest.mark.table_generator("dynalint.verify.tensor_members_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


CONFIG = """\
import copy
import dataclasses

import torch


@dataclasses.dataclass
class Config:
    temperature: float = 1.0


def scale(logits, cfg):
    local = copy.deepcopy(cfg)
    return logits / local.temperature


def copied(x, c):
    v = copy.deepcopy(c)
    return x * v.sum()


def main():
    cases = [(scale, (torch.randn(2, 8), Config())), (copied, (torch.randn(3), torch.tensor(3.0)))]
    for fn, args in cases:
        torch.compile(fn, backend="eager")(*args)
"""
test_check, test_dynamo = break_tests(CONFIG, {(18, "DYN105")}, "[()]")
