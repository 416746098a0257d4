"""What a compiled function receives through the code around it: a compiled handle handed to a helper
(``run(step, x, n)`` with ``def run(step_fn, x, n): return step_fn(x, n)``) is called with what the helper's
callers give it, so a number there is a number (a test of it is decided while tracing, no break), also where the
helper's parameter has the handle's name, where the helper is a method, and where it hands the handle on to a
second helper; and a module
compiled on its own and handed to compiled code (``torch.compile(m)``) is that module, whose ``forward`` gives
tensors (a branch on them breaks).  Each case also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests

HANDED_TO_A_HELPER = """
import torch


def decode_step(x, n_extra):
    dist = x.softmax(-1)
    if n_extra > 0:
        dist = torch.cat([dist, dist.new_zeros(dist.size(0), n_extra)], -1)
    return dist


def run(step_fn, x, n_extra):
    return step_fn(x, n_extra).sum()


def main():
    step = torch.compile(decode_step, backend="eager")
    return [run(step, torch.randn(4, 8), n) for n in (0, 2, 3)]
"""

A_COMPILED_MODULE_PASSED = """
import torch
import torch.nn as nn


class Ensemble(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, x, return_std=False):
        e = self.lin(x).squeeze(-1)
        if return_std:
            return e.mean(), e.std()
        return e.mean()


def uncertain(model, x, thresh):
    e, std = model(x, return_std=True)
    if std > thresh:
        return e
    return -e


def main():
    model = torch.compile(Ensemble(), backend="eager")
    check = torch.compile(uncertain, backend="eager")
    return check(model, torch.randn(5, 3), 0.05)
"""

test_check_helper, test_dynamo_helper = break_tests(HANDED_TO_A_HELPER, set(), "[()]")
# the helper's parameter named as the handle it is given (`def generate(step, ...)`, `generate(step, ...)`)
test_check_same_name, test_dynamo_same_name = break_tests(HANDED_TO_A_HELPER.replace("step_fn", "step").replace(
    """def main():
    step = torch.compile(decode_step, backend="eager")
""", """step = torch.compile(decode_step, backend="eager")


def main():
"""), set(), "[()]")
test_check_module, test_dynamo_module = break_tests(A_COMPILED_MODULE_PASSED, {(19, "DYN101")}, "[()]")

# handed to a method that calls it (`sampler.sample(f, x)`), or on through a second helper
# (`run(f, x)` -> `sample(fn, x, g)` -> `fn(x, g)`): a float at the end of the chain is a float
THROUGH_A_METHOD = """
import torch


def guided(x, guidance_scale):
    if guidance_scale == 1.0:
        return x
    return x * guidance_scale


class Sampler:
    @torch.no_grad()
    def sample(self, fn, x, guidance_scale=3.0):
        return fn(x, guidance_scale)


def main():
    f = torch.compile(guided, backend="eager")
    s = Sampler()
    return [s.sample(f, torch.randn(4, 2)), s.sample(f, torch.randn(4, 2), guidance_scale=7.5)]
"""

THROUGH_TWO_HELPERS = """
import torch


def guided(x, guidance_scale):
    if guidance_scale == 1.0:
        return x
    return x * guidance_scale


def sample(fn, x, guidance_scale):
    return fn(x, guidance_scale)


def run(fn, x, g=3.0):
    return sample(fn, x, g)


def main():
    f = torch.compile(guided, backend="eager")
    return [run(f, torch.randn(4, 2)), run(f, torch.randn(4, 2), 7.5)]
"""

test_check_method, test_dynamo_method = break_tests(THROUGH_A_METHOD, set(), "[()]")
test_check_chain, test_dynamo_chain = break_tests(THROUGH_TWO_HELPERS, set(), "[()]")
