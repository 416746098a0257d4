"""DYN203 at ``hasattr(self, name)`` in compiled code that then creates the attribute (``self.register_buffer``,
``self.name = ...``, ``setattr``): Dynamo guards on its absence, and the call after the one that creates it
recompiles (measured on torch 2.13: the failing guard is ``not hasattr(self, 'rel_index')``).  An attribute
``__init__`` binds, or one the compiled code only tests for, is not reported.  Likewise an attribute ``__init__``
sets to ``None`` that compiled code tests and then sets to a tensor (guard: ``self.weight is None``)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """
    import torch
    import torch.nn as nn


    class LazyRelPosBias(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.zeros(2, 32))
            INIT

        def forward(self, scores: torch.Tensor) -> torch.Tensor:
            T = scores.shape[-1]
            if not hasattr(self, "rel_index"):
                idx = torch.arange(T)
                MAKE
            return scores + self.table[:, self.rel_index]


    def run():
        m = torch.compile(LazyRelPosBias(), backend="eager")
        for _ in range(3):
            m(torch.randn(1, 2, 5, 5))
"""
MAKE = {
    "buffer": 'self.register_buffer("rel_index", (idx[None] - idx[:, None]).clamp(-15, 15) + 15)',
    "attribute": "self.rel_index = (idx[None] - idx[:, None]).clamp(-15, 15) + 15",
}
#: (what `__init__` adds, how forward makes the attribute) -> whether it recompiles
VARIANTS = {("pass", "buffer"): True, ("pass", "attribute"): True,
            ("self.rel_index = torch.zeros(5, 5, dtype=torch.long)", "buffer"): False}

NONE_CODE = """
    import torch
    import torch.nn as nn


    class LazyInit(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = INIT

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.weight is None:
                self.weight = torch.ones(x.shape[-1])
            return x * self.weight


    def run():
        m = torch.compile(LazyInit(), backend="eager")
        for _ in range(3):
            m(torch.randn(2, 4))
"""
#: what `__init__` binds the weight to -> whether the compiled forward recompiles
NONE_VARIANTS = {"None": True, "torch.ones(4)": False}


def _code(init: str, make: str) -> str:
    return CODE.replace("INIT", init).replace("MAKE", MAKE[make])


@pytest.mark.parametrize("init, make", list(VARIANTS))
def test_check(init: str, make: str) -> None:
    found = [d for d in check(_code(init, make)) if d.code == "DYN203" and "hasattr" in d.message]
    assert bool(found) == VARIANTS[init, make]


@requires_torch
@pytest.mark.parametrize("init, make", list(VARIANTS))
def test_dynamo(init: str, make: str) -> None:
    messages = recompiles_of_run(_code(init, make), "lazy")
    assert any("hasattr" in m for m in messages) == VARIANTS[init, make]


@pytest.mark.parametrize("init", list(NONE_VARIANTS))
def test_check_none_first(init: str) -> None:
    found = [d for d in check(NONE_CODE.replace("INIT", init)) if d.code == "DYN203"]
    assert bool(found) == NONE_VARIANTS[init]


@requires_torch
@pytest.mark.parametrize("init", list(NONE_VARIANTS))
def test_dynamo_none_first(init: str) -> None:
    messages = recompiles_of_run(NONE_CODE.replace("INIT", init), "lazy-none")
    assert bool(messages) == NONE_VARIANTS[init]


SET_FIRST_CODE = """
    import torch
    import torch.nn as nn


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.context = None

        def condition(self, c):
            self.context = c

        def forward(self, x):
            if self.context is None:
                raise ValueError("not conditioned")
            return self.lin(x) + self.context


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = Layer()

        def forward(self, x, c):
            self.layer.condition(c)
            y = self.layer(x)
            CLEAR
            return y


    def run():
        m = torch.compile(Model(), backend="eager")
        for _ in range(3):
            m(torch.randn(2, 4), torch.randn(2, 4))
"""
#: what the compiled frame does after the submodule read the attribute it set first: neither recompiles (the
#: submodule, analysed alone too, only reads it; the frame that sets it reads what it stored)
SET_FIRST_VARIANTS = {"cleared": "self.layer.condition(None)", "kept": "pass"}


@pytest.mark.parametrize("variant", list(SET_FIRST_VARIANTS))
def test_check_set_first_in_the_frame(variant: str) -> None:
    code = SET_FIRST_CODE.replace("CLEAR", SET_FIRST_VARIANTS[variant])
    assert [d for d in check(code) if d.code == "DYN203"] == []


@requires_torch
@pytest.mark.parametrize("variant", list(SET_FIRST_VARIANTS))
def test_dynamo_set_first_in_the_frame(variant: str) -> None:
    code = SET_FIRST_CODE.replace("CLEAR", SET_FIRST_VARIANTS[variant])
    assert recompiles_of_run(code, f"set-first-{variant}") == []
