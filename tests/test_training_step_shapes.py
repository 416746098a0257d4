"""How user scripts hand objects and numbers to a compiled training step, each checked against real Dynamo
(torch 2.13, backend ``eager``):

- a factory returns the step (``torch.compile(make_step(model, opt))``): the compiled function is the
  nested definition, and the objects the call passes type its names from the factory;
- ``__init__`` stores its objects by unpacking (``self.model, self.opt = model, opt``);
- a method call ``opt.step()`` is not a call of a function of the module named ``step``;
- a script's ``__main__`` loop passes Python numbers: a branch on them reads no tensor;
- a ``None`` default no call passes stays ``None``: the branch that uses a generator instead never runs;
- a function compiled from a table (``for fn, args in CASES: torch.compile(fn)(*args)``) is compiled;
- a compiled module every call passes a tensor (``torch.compile(Pool())(x, torch.tensor([0, 2, 6]))``)
  has a tensor there, not an argument only taken for one: a slice bound read from it breaks."""
from helpers import break_tests

FACTORY = """\
import torch
import torch.nn as nn


def make_step(model, opt):
    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def main(x):
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(make_step(model, opt), backend="eager")
    return step(x)
"""
STEP_BREAKS = {(7, "DYN105"), (9, "DYN105"), (10, "DYN105")}
test_check_factory, test_dynamo_factory = break_tests(FACTORY, STEP_BREAKS, "[(torch.randn(3, 4),)]")

FACTORY_NAMED = FACTORY.replace("    step = torch.compile(make_step(model, opt), ",
                                "    fn = make_step(model, opt)\n    step = torch.compile(fn, ")
test_check_factory_named, test_dynamo_factory_named = break_tests(FACTORY_NAMED, STEP_BREAKS,
                                                                  "[(torch.randn(3, 4),)]")

UNPACKED = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def step(self, x):
        self.opt.zero_grad()
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()
        return loss.detach()


def main(x):
    model = nn.Linear(4, 2)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    return torch.compile(trainer.step, backend="eager")(x)
"""
test_check_unpacked, test_dynamo_unpacked = break_tests(
    UNPACKED, {(10, "DYN105"), (12, "DYN105"), (13, "DYN105")}, "[(torch.randn(3, 4),)]")

NAMED_LIKE_A_METHOD = """\
import torch
import torch.nn as nn


def step(model, opt, x):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss.detach()


def main(x):
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return torch.compile(step, backend="eager")(model, opt, x)
"""
test_check_named, test_dynamo_named = break_tests(
    NAMED_LIKE_A_METHOD, {(6, "DYN105"), (8, "DYN105"), (9, "DYN105")}, "[(torch.randn(3, 4),)]")

MAIN_LOOP = """\
import torch


def lr(step, warmup=2):
    if step < warmup:
        return (step + 1) / warmup
    return 1.0


def train_step(x, step):
    return (x * 2).sum() * lr(step)


f = torch.compile(train_step, backend="eager")
for _ in range(2):
    step = 7
    f(torch.randn(4), step)


def main():
    return f(torch.randn(4), 7)
"""
test_check_main_loop, test_dynamo_main_loop = break_tests(MAIN_LOOP, set(), "[()]")

TENSOR_PASSED = """\
import torch
import torch.nn as nn


def seg_means(x, cu):
    return torch.stack([x[cu[i]:cu[i + 1]].mean(0) for i in range(cu.numel() - 1)])


class Pool(nn.Module):
    def forward(self, x, cu):
        return seg_means(x, cu)


def main(x):
    pool = torch.compile(Pool(), backend="eager")
    return pool(x, torch.tensor([0, 2, 6]))
"""
test_check_tensor_passed, test_dynamo_tensor_passed = break_tests(TENSOR_PASSED, {(6, "DYN102")},
                                                                  "[(torch.randn(6, 4),)]")

#: the same module given a list of Python ints: nothing to break on
LIST_PASSED = TENSOR_PASSED.replace("torch.tensor([0, 2, 6])", "[0, 2, 6]").replace("cu.numel()", "len(cu)")
test_check_list_passed, test_dynamo_list_passed = break_tests(LIST_PASSED, set(), "[(torch.randn(6, 4),)]")

TABLE = """\
import random

import torch


def feature_dropout(x, p: float):
    if random.random() < p:
        return x * 0
    return x


def check_positive(x):
    if not (x > 0).all():
        raise ValueError("negative input")
    return x.log()


CASES = [(feature_dropout, (0.5,)), (check_positive, ())]


def main(x):
    for fn, extra in CASES:
        torch.compile(fn, backend="eager")(x.abs() + 0.1, *extra)
"""
test_check_table, test_dynamo_table = break_tests(TABLE, {(7, "DYN105"), (13, "DYN101")},
                                                  "[(torch.randn(4),)]")

NONE_KEPT = """\
from typing import Optional

import torch


def sample(shape, generator: Optional[torch.Generator] = None):
    if generator is None:
        x = torch.randn(shape)
    else:
        x = torch.randn(shape, generator=generator)
    return x * 2


def main():
    f = torch.compile(sample, backend="eager")
    return f((2, 4)), f((3, 4))
"""
test_check_none_kept, test_dynamo_none_kept = break_tests(NONE_KEPT, set(), "[()]")

#: a call that passes one: the branch runs, and breaks
NONE_PASSED = NONE_KEPT.replace("return f((2, 4)), f((3, 4))",
                                "return f((2, 4), torch.Generator().manual_seed(0))")
test_check_none_passed, test_dynamo_none_passed = break_tests(NONE_PASSED, {(10, "DYN105")}, "[()]")
