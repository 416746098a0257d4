"""DYN206 for what a loop binds into the functions it compiles: the argument of a factory whose nested
function it compiles (``torch.compile(make_huber(delta))`` for each ``delta``) and a keyword of a
``functools.partial`` it compiles. Each compiled closure (partial) runs one code object, which Dynamo
caches once, guarded on the captured value (``delta == 1.0``, ``fn.keywords['gamma'] == 2.0``): the second
value recompiles it, and the number is then dynamic (measured on torch 2.13). One value for every iteration
recompiles nothing."""
from __future__ import annotations

from helpers import script_case_tests

SWEEP = """\
import functools

import torch


def make_huber(delta):
    def huber(pred, target):
        err = (pred - target).abs()
        quad = torch.clamp(err, max=delta)
        return (0.5 * quad ** 2 + delta * (err - quad)).mean()
    return huber


def focal(logits, target, gamma=2.0):
    return ((1 - torch.sigmoid(logits)) ** gamma * target).mean()


if __name__ == "__main__":
    pred, target = torch.randn(4), torch.randn(4)
    for delta in (1.0, 0.5, 0.25):
        torch.compile(make_huber(delta), backend="eager")(pred, target)
    for gamma in (2.0, 1.0, 0.5):
        torch.compile(functools.partial(focal, gamma=gamma), backend="eager")(pred, target)
"""

#: name -> (script, DYN206 lines, recompiles)
ONE_VALUE = SWEEP.replace("(1.0, 0.5, 0.25)", "(1.0, 1.0)").replace("(2.0, 1.0, 0.5)", "(2.0,) * 3")
CASES = {"values-that-change": (SWEEP, [6, 14], 2),
         "one-value": (ONE_VALUE, [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")
