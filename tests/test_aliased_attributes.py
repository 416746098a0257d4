"""DYN205 where compiled code reads an attribute of the object ``self`` holds through a local name bound to it
(``cfg = self.cfg``; ``cfg.gamma``): Dynamo follows the name back to ``self.cfg.gamma`` and guards there, so the
script's ``cfg.gamma = 1.0`` between calls recompiles, as it does for ``self.cfg.gamma`` written out; so does
a change a function of the script makes between two calls to an object it built and handed to the module.  Each
script also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

ALIASED = """\
from dataclasses import dataclass

import torch


@dataclass
class Cfg:
    gamma: float = 2.0


class Loss(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def forward(self, x):
        cfg = self.cfg
        return (1 - x.sigmoid()) ** cfg.gamma


if __name__ == "__main__":
    cfg = Cfg()
    crit = torch.compile(Loss(cfg), backend="eager")
    for epoch in range(3):
        if epoch == 1:
            cfg.gamma = {value}
        crit(torch.randn(4))
"""

test_check, test_dynamo = script_case_tests({
    "aliased-and-set-between-calls": (ALIASED.format(value="1.0"), [18], 1),
}, "DYN205")

# the object `self` holds, built and changed by a function of the script that compiles and calls the module
# itself (`cfg = Cfg()`, `Block(4, cfg)`, `m(x)`, `cfg.scale = 0.5`, `m(x)`); changed before the first call, it
# configures what is compiled
SET_IN_A_FUNCTION = """\
import torch
import torch.nn as nn


class Cfg:
    def __init__(self, scale=1.0):
        self.scale = scale


class Block(nn.Module):
    def __init__(self, d, cfg):
        super().__init__()
        self.cfg = cfg
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x) * self.cfg.scale


def run():
    cfg = Cfg()
    m = torch.compile(Block(4, cfg), backend="eager")
    x = torch.randn(2, 4)
{calls}


if __name__ == "__main__":
    run()
"""

test_check_in_a_function, test_dynamo_in_a_function = script_case_tests({
    "set-between-calls-in-a-function": (SET_IN_A_FUNCTION.format(calls="    m(x)\n    cfg.scale = 0.5\n    m(x)"),
                                        [17], 1),
    "set-before-the-calls-in-a-function": (
        SET_IN_A_FUNCTION.format(calls="    cfg.scale = 0.5\n    m(x)\n    m(x)"), [], 0),
}, "DYN205")
