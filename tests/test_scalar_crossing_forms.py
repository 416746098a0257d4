"""DYN204 on a Python number made at a graph break and used after it, in the forms the code after the break
uses it: inside a tuple handed to a call (``size=(n, n)``), where the resumed frame is guarded on it and recompiles
when it changes; and not on a bool a ``math`` test makes (``math.isnan(t)``), which stays the same on ordinary data
(measured on torch 2.13 over the input streams below)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CASES = {
    "drawn-size-in-a-tuple": ("""
        import random

        import torch
        import torch.nn.functional as F


        def resize(img: torch.Tensor):
            size = random.choice([6, 8])
            return F.interpolate(img, size=(size, size), mode="bilinear", align_corners=False)


        def run():
            random.seed(0)
            f = torch.compile(resize, backend="eager")
            for _ in range(6):
                f(torch.randn(1, 3, 4, 4))
    """, True),
    "nan-test": ("""
        import math

        import torch


        def grad_scale_check(loss: torch.Tensor, scale: float):
            scaled = loss * scale
            if math.isnan(scaled):
                return torch.zeros_like(loss)
            return scaled


        def run():
            f = torch.compile(grad_scale_check, backend="eager")
            for v in (0.5, 0.7, 0.9):
                f(torch.tensor(v), 1024.0)
    """, False),
}


@pytest.mark.parametrize("name", CASES)
def test_check(name: str) -> None:
    code, recompiles = CASES[name]
    assert bool([d for d in check(code) if d.code == "DYN204"]) == recompiles


@requires_torch
@pytest.mark.parametrize("name", CASES)
def test_dynamo(name: str) -> None:
    code, recompiles = CASES[name]
    messages = recompiles_of_run(code, f"{name}")
    assert bool(messages) == recompiles
