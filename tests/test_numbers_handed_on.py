"""An untyped parameter of a compiled function is a Python number when every call passes one, also when
the function is compiled in place (``step = torch.compile(step)``: the calls of ``step`` are its calls)
and when the caller hands on its own parameter, which its callers, or its default, make a number (a
wrapper, such as the eager part of a split training step).  A test of it is then guarded, not a graph
break (measured with real Dynamo, torch 2.13)."""
from __future__ import annotations

from helpers import break_tests

COMPILED_IN_PLACE = """
import torch


def jitter(x, noise_std):
    if noise_std > 0:
        x = x + noise_std * torch.randn_like(x)
    return x.sum()


jitter = torch.compile(jitter, backend="eager")


def main():
    return [jitter(torch.ones(3), n) for n in (0.0, 0.02)]
"""

HANDED_ON = """
import torch


@torch.compile(backend="eager")
def _loss_compiled(x, free_bits):
    kl = x.pow(2).mean(0)
    if free_bits > 0:
        kl = kl.clamp(min=free_bits)
    return kl.sum()


def loss(x, free_bits):
    return _loss_compiled(x, free_bits) * 2


def step(x, free_bits=0.0):
    return loss(x, free_bits) + 1


def main():
    return [step(torch.randn(4, 3)), step(torch.randn(4, 3), free_bits=0.1)]
"""

test_check_in_place, test_dynamo_in_place = break_tests(COMPILED_IN_PLACE, set(), "[()]")
test_check_handed_on, test_dynamo_handed_on = break_tests(HANDED_ON, set(), "[()]")


# the wrapper's callers pass a tensor: the compiled function's test of it breaks
HANDED_A_TENSOR = HANDED_ON.replace("def step(x, free_bits=0.0):", "def step(x, free_bits):").replace(
    "step(torch.randn(4, 3)),", "step(torch.randn(4, 3), torch.tensor(0.0)),")
test_check_handed_a_tensor, test_dynamo_handed_a_tensor = break_tests(HANDED_A_TENSOR, {(7, "DYN101")}, "[()]")


MODULE_API_USED = """
import torch
import torch.nn as nn


class Rows(nn.Module):
    def forward(self, feats, batch_size):
        return torch.stack([feats[b] for b in range(batch_size)])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.rows = Rows()

    def forward(self, feats, batch_size):
        return self.rows(self.lin(feats), batch_size)


def main():
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.eval()
    compiled = torch.compile(model, backend="eager")
    return [compiled(torch.randn(4, 3), n) for n in (2, 3)], opt
"""
"""The instance used through ``nn.Module``'s own API (``model.parameters()``, ``model.eval()``), which does
not call it, still has all its calls in view: they pass numbers, and the loop over ``range(batch_size)`` in
the module it hands them to is a Python loop."""

test_check_module_api, test_dynamo_module_api = break_tests(MODULE_API_USED, set(), "[()]")
