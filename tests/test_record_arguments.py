"""DYN206 compares dataclass and NamedTuple arguments built at the calls with literals, field by field: Dynamo
guards on the class and on each field the compiled function reads (``Cfg()`` then ``Cfg(scale=3.0)``
recompiles on ``cfg.scale == 2.0``), and a field it never reads installs no guard (measured on torch
2.13)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_script

SCRIPT = """\
import dataclasses
import typing

import torch


@dataclasses.dataclass
class Cfg:
    scale: float = 2.0
    use_act: bool = True
    name: str = "base"


class Pair(typing.NamedTuple):
    lo: float
    hi: float = 1.0


def apply(x, cfg):
    y = x * cfg.scale
    if cfg.use_act:
        y = torch.relu(y)
    return y


def clamp(x, p):
    return x.clamp(p.lo, p.hi)


if __name__ == "__main__":
    f = torch.compile(apply, backend="eager")
    g = torch.compile(clamp, backend="eager")
    a = torch.randn(3)
    f(a, Cfg())
    f(a, Cfg(name="other"))
    f(a, Cfg(3.0, use_act=False))
    g(a, Pair(0.0))
    g(a, Pair(0.0, hi=1.0))
"""
#: script -> (DYN206 lines, recompiles of `apply`)
CASES = {"read-fields-differ": (SCRIPT, {19}, 1),
         "an-unread-field-differs": (SCRIPT.replace("    f(a, Cfg(3.0, use_act=False))\n", ""), set(), 0)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    code, lines, _ = CASES[name]
    found = [d for d in check(code) if d.code == "DYN206"]
    assert {d.line for d in found} == lines
    assert all("`Cfg(scale=3.0, use_act=False, name='base')`" in d.message
               and "guards on the class and on the fields it reads" in d.message for d in found)


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str, tmp_path) -> None:
    code, _, recompiles = CASES[name]
    messages = recompiles_of_script(tmp_path, name, code)
    assert len(messages) == recompiles, messages
    assert all("apply" in m for m in messages)
