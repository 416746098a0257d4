"""A script's own statements (its ``__main__`` block) that change what compiled code reads between two
compiled calls: a global rebound (``SCALE = 3.0``), a global dict's item (``CONFIG["clip"] = 2.0``), an
attribute of a global object (``RUN.temperature = 0.7``) - DYN201 - and an attribute of the compiled module
(``m.use_residual = False``) or of an object passed to it (``opts.top_k = 3``, whatever ``__init__``
stored), and a list or dict the module holds changed in place (``m.skip.append(1)``, an item it reads) -
DYN205. Dynamo guards on each and recompiles once (measured on torch 2.13). The
same writes before the first compiled call configure what is compiled, once: nothing is reported and nothing
recompiles; so do writes before the first call of the handle that reads them, after another handle's calls."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_script

GLOBALS = """\
import torch

SCALE = 2.0
CONFIG = {"clip": None}


class RunConfig:
    def __init__(self):
        self.temperature = 1.0


RUN = RunConfig()


def scaled(x):
    return x * SCALE + 1


def clipped(x):
    x = x * 2
    if CONFIG["clip"] is not None:
        x = x.clamp(-CONFIG["clip"], CONFIG["clip"])
    return x


def tempered(x):
    return x / RUN.temperature


if __name__ == "__main__":
    opt_scaled = torch.compile(scaled, backend="eager")
    opt_clipped = torch.compile(clipped, backend="eager")
    opt_tempered = torch.compile(tempered, backend="eager")
    x = torch.randn(4)
    opt_scaled(x), opt_clipped(x), opt_tempered(x)
    SCALE = 3.0
    CONFIG["clip"] = 2.0
    RUN.temperature = 0.7
    opt_scaled(x), opt_clipped(x), opt_tempered(x)
"""

MODULE = """\
import torch
import torch.nn as nn


class Res(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.use_residual = True

    def forward(self, x):
        y = self.lin(x)
        if self.use_residual:
            y = y + x
        return y


if __name__ == "__main__":
    m = Res()
    opt = torch.compile(m, backend="eager")
    x = torch.randn(2, 4)
    for use_residual in (True, False):
        m.use_residual = use_residual
        opt(x)
"""

OWN_HANDLE_LATER = MODULE.replace("    m = Res()\n",
                                  "    double = torch.compile(lambda t: t * 2, backend=\"eager\")\n"
                                  "    double(torch.randn(2))\n    m = Res()\n"
                                  "    m.use_residual = False\n").replace(
    "    for use_residual in (True, False):\n        m.use_residual = use_residual\n        opt(x)\n",
    "    opt(x)\n    opt(x)\n")


def _configured_first(script: str, writes: list[str]) -> str:
    """The script with its writes moved before the first compiled call (and that call's repeat dropped)."""
    lines = script.splitlines(keepends=True)
    calls = [i for i, line in enumerate(lines) if line.startswith("    opt_scaled(x)")]
    kept = [line for i, line in enumerate(lines) if i != calls[-1] and line.strip() not in writes]
    at = kept.index(lines[calls[0]])
    return "".join(kept[:at] + [f"    {w}\n" for w in writes] + kept[at:])


PASSED_OBJECT = """\
import torch


class Opts:
    def __init__(self, top_k):
        self.top_k = top_k


def sample(logits, opts):
    if opts.top_k > 0:
        logits = logits.topk(opts.top_k, dim=-1).values
    return logits.softmax(-1)


if __name__ == "__main__":
    f = torch.compile(sample, backend="eager")
    opts = Opts(0)
    f(torch.randn(2, 8), opts)
    opts.top_k = 3
    f(torch.randn(2, 8), opts)
"""

HELD_CONTAINERS = """\
import torch
import torch.nn as nn


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.skip = []
        self.hp = {"temperature": 0.5, "tag": "base"}

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            if i not in self.skip:
                x = layer(x)
        return x / self.hp["temperature"]


if __name__ == "__main__":
    m = Stack()
    f = torch.compile(m, backend="eager")
    f(torch.randn(2, 4))
    CHANGE
    f(torch.randn(2, 4))
"""

TEMPERATURE = """\
import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.actor = nn.Linear(4, 4)
        self.log_alpha = torch.zeros(1)
        self.alpha = self.log_alpha.exp().item()

    def actor_loss(self, x):
        return (self.alpha * self.actor(x)).mean()

    def update(self, x):
        loss = self.actor_loss(x)
        self.alpha = loss.abs().item()
        return loss


if __name__ == "__main__":
    agent = Agent()
    agent.actor_loss = torch.compile(agent.actor_loss, backend="eager")
    policy = torch.compile(agent.actor, backend="eager")
    for step in range(3):
        agent.update(torch.randn(4))
"""
"""A float an object takes from tensor data (``.item()``) and a method the loop calls sets again, read by a
compiled method rebound to its handle; another module compiled too."""

DRIVER = """\
import torch


class Cfg:
    def __init__(self):
        self.scale = 1.0


CFG = Cfg()


@torch.compile(backend="eager")
def step(x):
    return x * CFG.scale


def train(n):
    x = torch.randn(4)
    for _ in range(n):
        x = step(x)
    return x


if __name__ == "__main__":
    train(2)
    CFG.scale = 0.5
    train(2)
"""
"""A global's attribute set between two calls of a function whose loop calls the compiled one."""

WRITES = ["SCALE = 3.0", 'CONFIG["clip"] = 2.0', "RUN.temperature = 0.7"]

#: name -> (script, (line, code) findings, recompiles Dynamo logs)
CASES = {
    "globals-changed-between-calls": (GLOBALS, {(16, "DYN201"), (21, "DYN201"), (27, "DYN201")}, 3),
    "globals-set-before-the-first-call": (_configured_first(GLOBALS, WRITES), set(), 0),
    "a-module-attribute-set-in-the-loop": (MODULE, {(13, "DYN205")}, 1),
    # set after another handle's call, before the first call of the module's own: configuration, once
    "set-before-its-own-handle-is-called": (OWN_HANDLE_LATER, set(), 0),
    # what `__init__` stores is the caller's argument, not known there; the script then stores a number
    "an-argument-of-init-set-to-a-number": (PASSED_OBJECT, {(10, "DYN205")}, 1),
    # a list and a dict a module holds, changed in place: a change of length, an item it reads, one it
    # does not
    "a-held-list-appended-to": (HELD_CONTAINERS.replace("CHANGE", "m.skip.append(1)"), {(14, "DYN205")}, 1),
    "a-held-dict-item-it-reads": (HELD_CONTAINERS.replace("CHANGE", 'm.hp["temperature"] = 2.0'),
                                  {(16, "DYN205")}, 1),
    "a-held-dict-item-it-never-reads": (HELD_CONTAINERS.replace("CHANGE", 'm.hp["tag"] = "tuned"'), set(), 0),
    # a second instance of the class, which no compiled code is handed, changed or set between the calls
    "another-instance-changed": (HELD_CONTAINERS.replace("    m = Stack()\n", "    m = Stack()\n    spare = Stack()\n")
                                 .replace("CHANGE", 'spare.skip.append(1)\n    spare.hp["temperature"] = 2.0'),
                                 set(), 0),
    "another-instance-set": (PASSED_OBJECT.replace("    opts = Opts(0)\n", "    opts = Opts(0)\n    spare = Opts(0)\n")
                             .replace("    opts.top_k = 3\n", "    spare.top_k = 3\n"), set(), 0),
    # a global dict: a key compiled code never reads is stored into, then one it reads
    "a-number-from-tensor-data-set-by-a-method": (TEMPERATURE, {(12, "DYN205")}, 1),
    "set-between-calls-of-a-driver": (DRIVER, {(14, "DYN201")}, 1),
    "a-global-key-it-never-reads": (GLOBALS.replace('CONFIG["clip"] = 2.0', 'CONFIG["tag"] = "tuned"'),
                                    {(16, "DYN201"), (27, "DYN201")}, 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    script, found, _ = CASES[name]
    assert {(d.line, d.code) for d in check(script) if d.code in ("DYN201", "DYN205")} == found


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str, tmp_path) -> None:
    script, _, recompiles = CASES[name]
    messages = recompiles_of_script(tmp_path, name.replace("-", "_"), script)
    assert len(messages) == recompiles, messages
