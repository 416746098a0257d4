"""DYN206 for more forms of what calls pass: the extra positional arguments and keywords a
``*args``/``**kwargs`` function receives (Dynamo guards the tuple's length and the dict's keys), a list at one
call and a dict at another, or a number at one and a tensor at another (one graph for each kind of value), a
list a comprehension builds with a length the loop changes, floats one call passes in turn beside a tensor
another call passes, a flag a loop computes by testing its variable against ``None``, and an int a function
compiled with ``dynamic=True`` counts a ``range()`` loop with (the loop is unrolled for each value, so each
new one recompiles).  The replay keeps a list sliced from a comprehension's (a new list) through a shuffle of
the slice.  A number a wrapper computes from its own parameter (``step + 1``) is a number, so ``math``
functions of it fold, no break, and it takes the values the wrapper's callers give it, computed.  Each script
also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import break_tests, script_case_tests

STAR_ARGUMENTS = """\
import torch


@torch.compile(backend="eager")
def fn(x, *args, **kwargs):
    out = x * 2
    for a in args:
        out = out + a
    if "bias" in kwargs:
        out = out + kwargs["bias"]
    return out


if __name__ == "__main__":
    x = torch.randn(4)
    fn(x)
    fn(x, torch.ones(4))
    fn(x, bias=torch.zeros(4))
"""

COMPREHENSION_LENGTH = """\
import torch


@torch.compile(backend="eager")
def fn(xs):
    return torch.stack(xs).mean(0)


if __name__ == "__main__":
    for n in (2, 3, 4):
        fn([torch.randn(3) for _ in range(n)])
"""

FLOATS_BESIDE_A_TENSOR = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, sigma):
        return x * (sigma / 255.0)


net = torch.compile(Net(), backend="eager")

if __name__ == "__main__":
    for s in [15.0, 25.0, 50.0]:
        net(torch.rand(4), s)
    for n in [4, 4]:
        sig = torch.full((n,), 10.0)
        net(torch.rand(n), sig)
"""

UNROLLED_UNDER_DYNAMIC = """\
import torch


@torch.compile(backend="eager", dynamic=True)
def tta(x, n_aug):
    outs = []
    for mode in range(n_aug):
        y = x.flip(-1) if mode & 1 else x
        outs.append(y * 2)
    return torch.stack(outs).mean(0)


if __name__ == "__main__":
    for n_aug in [1, 1, 2, 4]:
        tta(torch.rand(3, 8, 8), n_aug)
"""

SLICE_SHUFFLED = """\
import random

import torch


@torch.compile(backend="eager")
def step(x, smoothing):
    target = torch.zeros(len(x), dtype=torch.long)
    return torch.nn.functional.cross_entropy(x, target, label_smoothing=smoothing)


if __name__ == "__main__":
    rng = random.Random(0)
    data = [torch.randn(3) for _ in range(12)]
    train = data[:8]
    for epoch in range(2):
        rng.shuffle(train)
        ls = 0.1 if epoch == 0 else 0.0
        for i in range(0, len(train), 4):
            step(torch.stack(train[i:i + 4]), ls)
"""

KINDS_OF_VALUE = """\
import torch


@torch.compile(backend="eager")
def fn(x):
    if isinstance(x, (list, tuple)):
        return torch.stack(list(x)).sum(0)
    if isinstance(x, dict):
        return torch.cat(list(x.values()))
    return x


if __name__ == "__main__":
    fn([torch.randn(2), torch.randn(2)])
    fn({"a": torch.randn(2)})
    fn(torch.randn(3))
"""

A_NUMBER_OR_A_TENSOR = """\
import torch


@torch.compile(backend="eager")
def f(x, y):
    return x + y


if __name__ == "__main__":
    x = torch.randn(4)
    f(x, 1)
    f(x, torch.ones(4))
"""

A_FLAG_FROM_A_TEST_OF_NONE = """\
import torch


@torch.compile(backend="eager")
def predict(pos, compute_stress=False):
    e = (pos ** 2).sum()
    if compute_stress:
        e = e * 2
    return e


if __name__ == "__main__":
    systems = [(torch.randn(4, 3), None), (torch.randn(4, 3), torch.eye(3))]
    for pos, cell in systems:
        predict(pos, compute_stress=cell is not None)
"""

test_check, test_dynamo = script_case_tests({
    "a-flag-from-a-test-of-none": (A_FLAG_FROM_A_TEST_OF_NONE, [5], 1),
    "kinds-of-value": (KINDS_OF_VALUE, [5], 2),
    "a-number-or-a-tensor": (A_NUMBER_OR_A_TENSOR, [5], 1),
    "star-arguments": (STAR_ARGUMENTS, [5], 2),
    "comprehension-length": (COMPREHENSION_LENGTH, [5], 2),
    "floats-beside-a-tensor": (FLOATS_BESIDE_A_TENSOR, [6], 2),
    "unrolled-under-dynamic": (UNROLLED_UNDER_DYNAMIC, [5], 2),
    "slice-shuffled": (SLICE_SHUFFLED, [7], 1),
}, "DYN206")

ARITHMETIC_HANDED_ON = """
import math
import torch


@torch.compile(backend="eager")
def adam_like(p, g, step, lr, beta2=0.999):
    bc2 = 1 - beta2 ** step
    p.add_(g / math.sqrt(bc2), alpha=-lr)
    return p


def train_step(p, step, lr):
    return adam_like(p, p.sin(), step + 1, lr)


def main():
    p = torch.zeros(4)
    for step in range(3):
        train_step(p, step, 0.1)
    return p


if __name__ == "__main__":
    main()
"""

test_check_handed_on, test_dynamo_handed_on = break_tests(ARITHMETIC_HANDED_ON, set(), "[()]")
test_check_varies_handed_on, test_dynamo_varies_handed_on = script_case_tests(
    {"arithmetic-handed-on": (ARITHMETIC_HANDED_ON.lstrip("\n"), [6], 1)}, "DYN206")


def test_each_new_value_recompiles_an_unrolled_loop() -> None:
    from helpers import check

    [finding] = [d for d in check(UNROLLED_UNDER_DYNAMIC) if d.code == "DYN206"]
    assert "each new value recompiles it" in finding.message
