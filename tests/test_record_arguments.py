"""DYN206 compares dataclass and NamedTuple arguments built at the calls with literals, field by field (and
those of a plain class whose ``__init__`` only stores its parameters): Dynamo
guards on the class and on each field the compiled function reads (``Cfg()`` then ``Cfg(scale=3.0)``
recompiles on ``cfg.scale == 2.0``), and a field it never reads installs no guard (measured on torch
2.13)."""
from __future__ import annotations

from helpers import check, script_case_tests

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
#: a plain class whose `__init__` only stores its parameters is a record of them; one whose attribute a
#: descriptor of the class stores its own way is not known field by field
PLAIN = """\
import torch


class Cfg:
    def __init__(self, scale, shift=0.0):
        self.scale = scale
        self.shift = shift


def apply(x, cfg):
    return x * cfg.scale


if __name__ == "__main__":
    f = torch.compile(apply, backend="eager")
    f(torch.randn(4), Cfg(2.0))
    f(torch.randn(4), Cfg(2.0, shift=1.0))
    f(torch.randn(4), Cfg(-1.0))
"""

#: script -> (DYN206 lines, recompiles of `apply`)
CASES = {"read-fields-differ": (SCRIPT, [19], 1),
         "an-unread-field-differs": (SCRIPT.replace("    f(a, Cfg(3.0, use_act=False))\n", ""), [], 0),
         "plain-class-read-field-differs": (PLAIN, [10], 1),
         "plain-class-unread-field-differs": (PLAIN.replace("    f(torch.randn(4), Cfg(-1.0))\n", ""), [], 0)}


test_check, test_dynamo = script_case_tests(CASES, "DYN206")


def test_the_message_shows_the_record() -> None:
    [found] = [d for d in check(SCRIPT) if d.code == "DYN206"]
    assert "`Cfg(scale=3.0, use_act=False, name='base')`" in found.message
    assert "guards on the class and on the fields it reads" in found.message
