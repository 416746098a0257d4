"""The committed table of torch parameters that take numbers matches the installed torch."""
from __future__ import annotations

import pytest
from conftest import requires_torch
from helpers import assert_generated_module_current

import dynalint.analysis.number_args as committed


@requires_torch
@pytest.mark.table_generator("dynalint.verify.number_args_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


def test_table_knows_sizes_dims_and_tensor_overloads() -> None:
    narrow = committed.TORCH["narrow"]
    assert 3 in narrow[0] and "length" in narrow[2]  # narrow(self, dim, start, length)
    assert committed.TORCH["zeros"][1]  # torch.zeros(2, 3): the size may be spread
    assert "max" not in committed.TORCH or 1 not in committed.TORCH["max"][0]  # x.max(other) takes a tensor
    assert "clamp" not in committed.TORCH  # clamp(min=tensor) has a tensor overload
    assert "pad" in committed.FUNCTIONAL["pad"][2]
