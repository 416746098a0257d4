"""DYN206 for values a script's loops pass that the replay has to see through more kinds of code: a tensor a
torch function or a tensor method makes against ``None`` (``real.flip(-1) if it >= 6 else None``,
``F.one_hot(...).float()``, a comparison of one, bound in a branch the replay decides), a schedule of
``math`` functions and powers, a call made only on the iterations a test of the loop variable selects (``if it
% 3 == 0:``), two such calls passing different values, an attribute of a configuration object (what its
``__init__`` stores, a class attribute), the index of ``enumerate`` over a list held in a variable, and a
function compiled into an attribute in ``__init__`` (``self.prop = torch.compile(propagate)``), called through
the instance.  A break inside a function called in the loop of a compiled function makes Dynamo run that
frame eagerly: none of its arguments are guarded.  Each script is also run under real Dynamo (torch 2.13),
which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

TENSOR_METHOD_OR_NONE = """\
import torch


def d_step(real, z, real_aug=None):
    loss = (real - z).pow(2).mean()
    if real_aug is not None:
        loss = loss + real_aug.mean()
    return loss


if __name__ == "__main__":
    dstep = torch.compile(d_step, backend="eager")
    for it in range(9):
        real = torch.randn(4, 3)
        aug = real.flip(-1) if it >= 6 else None
        dstep(real, torch.randn(4, 3), aug)
"""

FUNCTIONAL_OR_NONE = """\
import torch
import torch.nn.functional as F


@torch.compile(backend="eager")
def loss_fn(x, c):
    if c is not None:
        x = x + c.sum(-1, keepdim=True)
    return x.sum()


if __name__ == "__main__":
    for step in range(4):
        x = torch.randn(5, 1)
        c = F.one_hot(torch.randint(0, 3, (5,)), 3).float() if step % 2 else None
        loss_fn(x, c)
"""

EVERY_THIRD_STEP = """\
import torch


def g_loss(z, y):
    if y is not None:
        z = z + y
    return z.sum()


if __name__ == "__main__":
    g_step = torch.compile(g_loss, backend="eager")
    for it in range(8):
        y = torch.randn(4) if it % 2 == 0 else None
        if it % 3 == 0:
            g_step(torch.randn(4), y)
"""

PERIODIC_EVALUATION = """\
import torch


def evaluate(x, t_eval):
    t = torch.full_like(x, t_eval)
    if t_eval == 0.0:
        return (x - t).norm()
    return (x * t).sum()


if __name__ == "__main__":
    f = torch.compile(evaluate, backend="eager")
    x = torch.randn(16)
    for step in range(4):
        t_max = 0.25 if step < 2 else 0.5
        if step % 3 == 2:
            f(x, 0.0)
            f(x, t_max)
"""

CONFIG_IN_A_HELPER = """\
import torch


class Config:
    def __init__(self, warmup=2):
        self.anneal_steps = 5
        self.warmup = warmup


def beta_at(step, cfg):
    return min(1.0, step / cfg.anneal_steps)


@torch.compile(backend="eager")
def loss_fn(x, beta):
    return x.pow(2).mean() + beta * x.abs().mean()


if __name__ == "__main__":
    cfg = Config()
    for step in range(6):
        beta = beta_at(step, cfg)
        loss_fn(torch.randn(8), beta)
"""

CLASS_ATTRIBUTE_OR_NONE = """\
import torch
import torch.nn as nn


class Cfg:
    noise_std = 3e-4


cfg = Cfg()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, noise_std=None):
        if noise_std is not None:
            x = x + noise_std * torch.randn_like(x)
        return self.lin(x)


if __name__ == "__main__":
    step = torch.compile(Net(), backend="eager")
    x = torch.randn(8, 4)
    for it in range(3):
        step(x, noise_std=cfg.noise_std if it > 0 else None)
"""

ENUMERATE_A_SCHEDULE = """\
import torch


@torch.compile(backend="eager")
def train_step(x, label_smoothing):
    return x.sum() * (1 - label_smoothing)


if __name__ == "__main__":
    schedule = [8, 8, 16]
    for epoch, bs in enumerate(schedule):
        ls = 0.1 if epoch == 0 else 0.0
        train_step(torch.randn(8), ls)
"""

#: a function a module compiles into an attribute in its ``__init__``
PROPAGATE = """\
import torch


def propagate(h, w=None):
    w = torch.ones(h.size(0)) if w is None else w
    return h * w


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.prop = torch.compile(propagate, backend="eager")
"""

COMPILED_IN_INIT = PROPAGATE + """
    def forward(self, x, w=None):
        return self.prop(x, w)


if __name__ == "__main__":
    m, x = Model(), torch.randn(8)
    m(x)
    m(x, w=torch.rand(8))
"""

CALLED_THROUGH_THE_INSTANCE = PROPAGATE + """

if __name__ == "__main__":
    m = Model()
    m.prop(torch.randn(8))
    m.prop(torch.randn(8), w=torch.rand(8))
"""

A_MASK_OR_NONE = """\
import torch


def forward(x, mask):
    y = x * 2
    if mask is not None:
        y = y.masked_fill(~mask, 0.0)
    return y.sum(-1)


if __name__ == "__main__":
    f = torch.compile(forward, backend="eager")
    x = torch.randn(4, 3)
    for i in range(4):
        mask = torch.rand(4, 3) > 0.2 if i % 2 == 0 else None
        f(x, mask)
"""

#: the same, the mask bound by the branches of an `if` the replay decides
A_MASK_SET_IN_A_BRANCH = A_MASK_OR_NONE.replace(
    "        mask = torch.rand(4, 3) > 0.2 if i % 2 == 0 else None\n",
    "        if i % 2 == 0:\n            mask = torch.rand(4, 3) > 0.2\n"
    "        else:\n            mask = None\n")

A_COSINE_SCHEDULE = """\
import math

import torch


@torch.compile(backend="eager")
def step(x, temperature, momentum):
    return (x @ x.t() / temperature).softmax(-1) * momentum


def temperature_at(epoch, total):
    return 0.2 + 0.15 * (1 + math.cos(math.pi * epoch / total))


if __name__ == "__main__":
    for epoch in range(3):
        step(torch.rand(4, 4), temperature_at(epoch, 3), 1 - 0.01 * 0.9 ** epoch)
"""

BREAK_IN_A_CALLEE_OF_THE_LOOP = """\
import torch


def deriv(q):
    print("evaluating")
    return torch.cos(q)


def rollout(q, dt, n_steps):
    for _ in range(n_steps):
        q = q + dt * deriv(q)
    return q


if __name__ == "__main__":
    f = torch.compile(rollout, backend="eager")
    q0 = torch.tensor([1.0, 0.5])
    for dt, n_steps in [(0.1, 5), (0.05, 10)]:
        f(q0, dt, n_steps)
"""

CASES = {
    "tensor-method-or-none": (TENSOR_METHOD_OR_NONE, [4], 1),
    "functional-or-none": (FUNCTIONAL_OR_NONE, [6], 1),
    "every-third-step": (EVERY_THIRD_STEP, [4], 1),
    "periodic-evaluation": (PERIODIC_EVALUATION, [4], 1),
    "config-in-a-helper": (CONFIG_IN_A_HELPER, [15], 1),
    "class-attribute-or-none": (CLASS_ATTRIBUTE_OR_NONE, [17], 1),
    "enumerate-a-schedule": (ENUMERATE_A_SCHEDULE, [5], 1),
    "compiled-in-init": (COMPILED_IN_INIT, [4], 1),
    "called-through-the-instance": (CALLED_THROUGH_THE_INSTANCE, [4], 1),
    "a-mask-or-none": (A_MASK_OR_NONE, [4], 1),
    "a-mask-set-in-a-branch": (A_MASK_SET_IN_A_BRANCH, [4], 1),
    "a-cosine-schedule": (A_COSINE_SCHEDULE, [7], 1),
    "break-in-a-callee-of-the-loop": (BREAK_IN_A_CALLEE_OF_THE_LOOP, [], 0),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")
