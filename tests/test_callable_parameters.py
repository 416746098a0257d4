"""A parameter annotated ``Callable[[...], Tensor]`` (a fixed-point or ODE solver's function): calling it gives
a tensor, whether the caller hands it a function of the module, a lambda of its own, or nothing the checked
code shows.  A branch on what it returns breaks (measured on torch 2.13); ``Callable[..., float]`` promises a
Python number, which does not."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

CODE = """\
    from typing import Callable

    import torch
    import torch.nn as nn


    def fixed_point(f: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor, tol: float = 1e-4) -> torch.Tensor:
        x = x0
        for _ in range(30):
            fx = f(x)
            rel = (fx - x).norm() / (fx.norm() + 1e-8)
            x = fx
            if rel < tol:
                break
        return x


    def settle(f: Callable[[torch.Tensor], float], x0: torch.Tensor) -> torch.Tensor:
        if f(x0) > 0.5:
            return x0
        return x0 * 2


    class DEQ(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            z = fixed_point(lambda z: torch.tanh(self.lin(z) + x), torch.zeros_like(x))
            return settle(lambda t: 0.25, z)


    def main(x):
        return torch.compile(DEQ(), backend="eager")(x)
"""
BREAK_LINES = {13}


def test_check(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, CODE) == {(line, "DYN103") for line in BREAK_LINES}


@requires_torch
def test_dynamo(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, "[(torch.randn(2, 4),)]") == BREAK_LINES


@pytest.mark.parametrize("returned, breaks", [("torch.Tensor", True), ("float", False)])
def test_library_helper(tmp_path, capsys, returned: str, breaks: bool) -> None:
    code = f"""\
    from typing import Callable

    import torch


    def settle(f: Callable[[torch.Tensor], {returned}], x0: torch.Tensor) -> torch.Tensor:
        if f(x0) > 0.5:
            return x0
        return x0 * 2
"""
    assert bool(checked_breaks(tmp_path, capsys, code)) == breaks
