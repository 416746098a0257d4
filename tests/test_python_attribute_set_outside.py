"""DYN205 and the class a setter method belongs to: ``self.m = m`` in ``Arc.set_margin`` changes the
``m`` of an ``Arc`` (or of a subclass), never the ``m`` of a ``Cos`` that only shares the attribute's name, so
only ``Arc.forward`` is reported; under real Dynamo only it recompiles (torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_run, recompiles_of_script

CODE = """\
import math

import torch
import torch.nn as nn


class Arc(nn.Module):
    def __init__(self, m=0.5):
        super().__init__()
        self.set_margin(m)

    def set_margin(self, m):
        self.m = m
        self.cos_m = math.cos(m)

    def forward(self, x):
        return x * self.cos_m


class WideArc(Arc):
    def forward(self, x):
        return x * self.cos_m + self.m


class Cos(nn.Module):
    def __init__(self, m=0.35):
        super().__init__()
        self.m = m

    def forward(self, x):
        return x - self.m


def run():
    for head in (Arc(), WideArc(), Cos()):
        f = torch.compile(head, backend="eager")
        for epoch in range(3):
            if isinstance(head, Arc):
                head.set_margin(0.1 * (epoch + 1))
            f(torch.randn(4))
"""

#: the lines of the forwards of Arc and WideArc that read a margin
ARC, WIDE_ARC = 17, 22


def test_only_the_setters_class_and_its_subclasses_are_reported() -> None:
    assert {d.line for d in check(CODE) if d.code == "DYN205"} == {ARC, WIDE_ARC}


@requires_torch
def test_dynamo_recompiles_only_those() -> None:
    messages = recompiles_of_run(CODE, "setter-of-another-class")
    recompiled = {int(m.split("<setter-of-another-class>:")[1].split()[0].rstrip(")")) for m in messages}
    assert recompiled == {ARC - 1, WIDE_ARC - 1}, messages


CONFIG = """\
from dataclasses import dataclass

import torch


@dataclass
class Cfg:
    loss: str = "sin"
    scale: float = 1.0


def step(cfg, x):
    y = x.sin() if cfg.loss == "sin" else x.cos()
    return y * cfg.scale


if __name__ == "__main__":
    cfg = Cfg()
    cfg.scale = 2.0
    f = torch.compile(step, backend="eager")
    x = torch.randn(4)
    for name in ("sin", "cos"):
        cfg.loss = name
        f(cfg, x)
"""


def test_an_attribute_of_an_argument_set_between_calls() -> None:
    """``cfg.loss`` of the config object every call passes, set by the script's loop between compiled calls,
    is reported where ``step`` reads it; ``cfg.scale``, set once before the first call, is not."""
    found = [(d.line, d.message.split("`")[1]) for d in check(CONFIG) if d.code == "DYN205"]
    assert found == [(13, "cfg.loss")], found


@requires_torch
def test_dynamo_recompiles_on_the_argument_attribute(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "config_attribute", CONFIG)
    assert len(messages) == 1 and "cfg.loss" in messages[0], messages


NEVER_OR_BEFORE = """\
import torch


class EmaFilter:
    def __init__(self, fps: float):
        self.te = 1.0 / fps

    def reset(self, fps: float):
        self.te = 1.0 / fps

    def update(self, x, prev):
        return prev + (x - prev) * self.te


class Buffer:
    def __init__(self, capacity):
        self.data = torch.zeros(capacity)
        self.ptr, self.size, self.capacity = 0, 0, capacity

    def add(self, x):
        self.data[self.ptr] = x
        self.ptr = (self.ptr + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, u):
        idx = (u * self.size).long().clamp(max=self.size - 1)
        return self.data[idx]


if __name__ == "__main__":
    f = EmaFilter(30.0)
    step = torch.compile(f.update, backend="eager")
    prev = torch.zeros(4)
    buf = Buffer(64)
    for t in range(40):
        buf.add(float(t))
    sample = torch.compile(buf.sample, backend="eager")
    for _ in range(3):
        prev = step(torch.randn(4), prev)
        sample(torch.rand(8))
"""


def test_a_setter_never_called_or_called_before_the_first_compiled_call() -> None:
    """``reset()`` is never called, and every ``add()`` runs before anything is compiled: neither changes a
    value between two compiled calls. Called after a compiled call, ``add()`` does."""
    assert [d for d in check(NEVER_OR_BEFORE) if d.code == "DYN205"] == []
    after = NEVER_OR_BEFORE.replace("        sample(torch.rand(8))\n",
                                    "        sample(torch.rand(8))\n        buf.add(1.0)\n")
    assert {d.message.split("`")[1] for d in check(after) if d.code == "DYN205"} == {"self.size"}


@requires_torch
def test_dynamo_recompiles_neither(tmp_path) -> None:
    assert recompiles_of_script(tmp_path, "never_or_before", NEVER_OR_BEFORE) == []
