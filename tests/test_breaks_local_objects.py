"""Values that reach a test through a helper or a local object, each call of the helper or store on the
object followed as Dynamo runs it.

A helper that draws a traced random number (``rng.random() < p``) draws anew at each call: a branch on the
second call's draw breaks as the first does, though the analysis records the helper's body once.  An
attribute stored on a local object of a plain class (``st.total = x.sum()``) is what a later read gives; on a
dataclass instance, a field one branch sets leaves the other fields known after the branch.
"""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import random
    from dataclasses import dataclass
    from typing import Optional

    import torch

    rng = random.Random(0)


    def coin(p):
        return rng.random() < p


    class Stats:
        def __init__(self):
            self.total = None


    @dataclass
    class Record:
        flag: bool = False
        total: Optional[torch.Tensor] = None


    @torch.compile(backend="eager")
    def flipped(x):
        if coin(0.9):
            x = x * 2
        if coin(0.9):
            x = x + 1
        return x


    @torch.compile(backend="eager")
    def stored(x):
        st = Stats()
        st.total = x.sum()
        if st.total > 0:
            x = x * 2
        return x


    @torch.compile(backend="eager")
    def recorded(x, verbose: bool = False):
        rec = Record()
        if verbose:
            rec.flag = True
        rec.total = x.sum()
        if rec.total > 0:
            x = x * 2
        return x, rec.flag


    def main(x):
        return flipped(x), stored(x), recorded(x)
"""
BREAKS = {(27, "DYN101"), (29, "DYN101"), (38, "DYN101"), (49, "DYN101")}

test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.ones(4),)]")


SCRIPT = """\
    import torch
    import torch.nn as nn


    class Scaler:
        def fit(self, x: torch.Tensor) -> "Scaler":
            self.mu = x.mean()
            return self


    def loss_fn(model, x):
        return model(x).pow(2).mean()


    def fit(model: nn.Module, x: torch.Tensor):
        Scaler().fit(x)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        step = torch.compile(loss_fn, backend="eager")
        for _ in range(2):
            opt.zero_grad()
            step(model, x).backward()
            opt.step()


    def main(x):
        fit(nn.Linear(4, 1), x)
"""
"""A script's function that it only calls itself runs eagerly, a method of the same name on a class
(``Scaler.fit`` beside ``fit``) notwithstanding: its optimizer calls are not compiled code."""

test_check_script, test_dynamo_script = break_tests(SCRIPT, set(), "[(torch.ones(3, 4),)]")
