"""A record built with its defaults (``Cfg()`` of a dataclass whose fields default to literals) holds those
constants where a compiled function reads it: Dynamo guards on them and decides a branch on one while
tracing, so ``cfg.tf_ratio >= 1.0 or torch.rand(()) < cfg.tf_ratio`` never runs its tensor test.  A field
that the calls pass differently, or that code changes between calls, is no constant: the branch it guards
breaks on the call that takes it.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests

RECORD = """
from dataclasses import dataclass, field

import torch


@dataclass
class Cfg:
    tf_ratio: float = 1.0
    noise: float = field(default=0.0)


def pick(cfg, gold, pred):
    if cfg.tf_ratio >= 1.0 or torch.rand(()) < cfg.tf_ratio:
        out = gold * 1
    else:
        out = pred * 1
    if cfg.noise > 0 and out.std() > cfg.noise:
        out = out + 1
    return out
"""
INPUTS = "[(torch.ones(3), torch.zeros(3))]"

DEFAULTS = RECORD + """

def main(gold, pred):
    f = torch.compile(pick, backend="eager")
    return f(Cfg(), gold, pred)
"""

CHANGED_BETWEEN_CALLS = RECORD + """

def main(gold, pred):
    f = torch.compile(pick, backend="eager")
    cfg = Cfg()
    outs = []
    for _ in range(2):
        outs.append(f(cfg, gold, pred))
        cfg.tf_ratio = 0.5
    return outs
"""

PASSED_DIFFERENTLY = RECORD + """

def main(gold, pred):
    f = torch.compile(pick, backend="eager")
    return f(Cfg(), gold, pred), f(Cfg(noise=0.1), gold, pred)
"""

test_defaults_decide, test_defaults_decide_under_dynamo = break_tests(DEFAULTS, set(), INPUTS)
test_field_changed, test_field_changed_under_dynamo = break_tests(
    CHANGED_BETWEEN_CALLS, {(13, "DYN101")}, INPUTS)
test_field_passed_differently, test_field_passed_differently_under_dynamo = break_tests(
    PASSED_DIFFERENTLY, {(17, "DYN101")}, INPUTS)
