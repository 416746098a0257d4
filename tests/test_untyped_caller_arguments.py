"""A helper that compiled code of another checked file calls is analysed with the values its callers
pass. When they pass what the analysis cannot type (the result of a function of a file not checked), the
parameter is what the helper's own use of it says, as for a helper no checked code calls: its break is
found (measured with real Dynamo, torch 2.13). Under ``scope = "compiled"`` nothing is taken for a tensor
that way."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import requires_torch
from dynalint.config.settings import Scope, Settings
from dynalint.engine.runner import check_files

HELPERS = '''
import torch


def pick(labels):
    unique = labels.unique()  # (`torch.unique(labels)` takes only a tensor: reported in any scope)
    return labels.unsqueeze(1) == unique.unsqueeze(0)
'''

MOVES = '''
def to_device(x, like):
    return x.to(like.device)
'''

LOSS = '''
from torch import nn

from lossy import moves
from lossy.helpers import pick


class PairLoss(nn.Module):
    def forward(self, embeddings, labels):
        labels = moves.to_device(labels, embeddings)
        same = pick(labels).float()
        return (embeddings * same.sum(dim=1, keepdim=True)).mean()
'''


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "lossy"
    pkg.mkdir()
    for name, text in (("__init__", ""), ("helpers", HELPERS), ("moves", MOVES), ("loss", LOSS)):
        (pkg / f"{name}.py").write_text(text.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("helpers", "moves", "loss")}


def _unique_line(path: str) -> int:
    with open(path) as fh:
        return next(i for i, line in enumerate(fh, 1) if ".unique()" in line)


def _flagged(package: dict[str, str], scope: Scope) -> set[int]:
    # `moves.py` is not checked: what `to_device` returns is not known
    results = list(check_files([package["helpers"], package["loss"]], Settings(scope=scope)))
    assert all(r.error is None for r in results), [r.error for r in results]
    return {d.line for r in results for d in r.diagnostics
            if d.path == package["helpers"] and d.kind == "graph-break"}


@pytest.mark.parametrize("scope", [Scope.AUTO, Scope.ALL])
def test_the_helper_breaks_on_what_its_callers_pass(package, scope) -> None:
    assert _flagged(package, scope) == {_unique_line(package["helpers"])}


def test_the_compiled_scope_takes_nothing_for_a_tensor(package) -> None:
    assert _flagged(package, Scope.COMPILED) == set()


@requires_torch
def test_the_helper_breaks_under_dynamo(package) -> None:
    import torch

    from dynalint.verify.probe import observe

    sys.path.insert(0, os.path.dirname(os.path.dirname(package["helpers"])))
    try:
        from lossy.loss import PairLoss

        loss = PairLoss()
        obs = observe(lambda e, y: loss(e, y), [(torch.randn(4, 3), torch.tensor([0, 1, 0, 2]))],
                      files_of_interest=list(package.values()))
    finally:
        sys.path.pop(0)
        for name in [m for m in sys.modules if m == "lossy" or m.startswith("lossy.")]:
            del sys.modules[name]
    assert not obs.errors, obs.errors
    assert obs.break_lines(package["helpers"]) == {_unique_line(package["helpers"])}
    assert obs.break_lines(package["loss"]) == set()
