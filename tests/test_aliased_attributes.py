"""DYN205 where compiled code reads an attribute of the object ``self`` holds through a local name bound to it
(``cfg = self.cfg``; ``cfg.gamma``): Dynamo follows the name back to ``self.cfg.gamma`` and guards there, so the
script's ``cfg.gamma = 1.0`` between calls recompiles, as it does for ``self.cfg.gamma`` written out.  Each
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
