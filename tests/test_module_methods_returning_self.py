"""``nn.Module`` methods that return the module itself (``Acoustic().eval()``, ``model.to(device)``) keep the
module the analysis knows, so what its ``forward`` returns is still known; a value the analysis cannot type
handed to a function that takes a tensor first and has a data-dependent output size (``F.ctc_loss``) is a
tensor wherever the call runs.  The names are checked against torch, and each text runs under real Dynamo."""
from __future__ import annotations

from conftest import requires_torch
from dynalint.analysis.calls import MODULE_METHODS_RETURNING_SELF
from helpers import break_tests

CHAINED = """
import torch
import torch.nn as nn


class Acoustic(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)

    def forward(self, feats):
        return self.proj(feats).log_softmax(-1)


def ctc_train_loss(model, feats, targets, in_lens, tgt_lens):
    log_probs = model(feats).transpose(0, 1)
    return nn.functional.ctc_loss(log_probs, targets, in_lens, tgt_lens, zero_infinity=True)


def main():
    fn = torch.compile(ctc_train_loss, backend="eager")
    model = Acoustic().eval().to("cpu")
    return fn(model, torch.randn(2, 10, 4), torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([10, 8]),
              torch.tensor([3, 2]))
"""
test_check_chained, test_dynamo_chained = break_tests(CHAINED, {(16, "DYN104")}, "[()]")

LIBRARY_MODULE = """
import torch
import torch.nn.functional as F


def ctc_train_loss(model, feats, targets, in_lens, tgt_lens):
    log_probs = model(feats).transpose(0, 1)
    return F.ctc_loss(log_probs, targets, in_lens, tgt_lens, zero_infinity=True)


def main():
    fn = torch.compile(ctc_train_loss, backend="eager")
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LogSoftmax(-1)).eval()
    return fn(model, torch.randn(2, 10, 4), torch.tensor([[1, 2, 3], [4, 5, 0]]), torch.tensor([10, 8]),
              torch.tensor([3, 2]))
"""
test_check_library_module, test_dynamo_library_module = break_tests(LIBRARY_MODULE, {(7, "DYN104")}, "[()]")


@requires_torch
def test_the_methods_are_those_torch_says_return_the_module() -> None:
    import inspect
    import typing

    import torch

    annotated = {name for name, f in inspect.getmembers(torch.nn.Module, inspect.isfunction)
                 if not name.startswith("_") and inspect.signature(f).return_annotation is typing.Self}
    module = torch.nn.Linear(2, 2)
    assert module.to("cpu") is module and module.to(torch.float32) is module  # (overloaded: not annotated)
    assert MODULE_METHODS_RETURNING_SELF == annotated | {"to"}
