"""The ops torch tags as data-dependent: the committed table matches the installed torch, and the
breaks the analysis derives from it are where Dynamo breaks, with and without the capture flags."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.engine.pipeline import check_source
from dynalint.rules.base import Example

import dynalint.analysis.data_dependent_ops as committed
from helpers import assert_generated_module_current, run_example_under_dynamo, settings_for

CODE = """\
    import torch
    import torch.nn.functional as F

    @torch.compile
    def f(x, y, logp, targets, lengths):
        same = torch.allclose(x, y)
        if x.equal(y):
            x = x + 1
        z = torch.linalg.lstsq(x, y).solution
        loss = F.ctc_loss(logp, targets, lengths, torch.full_like(lengths, 2))
        return z * same + loss + x.nonzero().sum()
"""
INPUTS = ("[(torch.randn(4, 3), torch.randn(4, 3), torch.randn(5, 2, 4).log_softmax(2), "
          "torch.tensor([[1, 2], [1, 1]]), torch.tensor([5, 5]))]")
FLAGS = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}


@requires_torch
@pytest.mark.table_generator("dynalint.verify.data_dependent_ops_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


def test_the_table_tells_captured_from_uncaptured_ops() -> None:
    assert {"equal", "allclose"} <= committed.DATA_DEPENDENT_OUTPUT
    assert committed.DYNAMIC_OUTPUT_SHAPE["nonzero"] is True
    assert committed.DYNAMIC_OUTPUT_SHAPE["linalg_lstsq"] is False


@pytest.mark.parametrize("settings", [{}, FLAGS], ids=["default", "capture-flags"])
def test_data_reading_and_uncaptured_ops_are_breaks(settings) -> None:
    example = Example(CODE, inputs=INPUTS, settings=settings)
    found = {(d.line, d.code, d.remedy) for d in check_source(example.source, "m.py", settings_for(example))
             if d.kind == "graph-break"}
    expected = {(6, "DYN102", None), (7, "DYN102", None), (9, "DYN104", None), (10, "DYN104", None)}
    if not settings:
        expected.add((11, "DYN104", "capture_dynamic_output_shape_ops"))
    assert found == expected


@requires_torch
@pytest.mark.parametrize("settings", [{}, FLAGS], ids=["default", "capture-flags"])
def test_dynamo_breaks_on_those_lines(settings, tmp_path) -> None:
    """Each call is its own break in Dynamo's log (resumed after the one before), so every line the
    analysis reports is one Dynamo broke on, and with the flags only `nonzero` stops breaking."""
    example = Example(CODE, inputs=INPUTS, settings=settings)
    reported = {d.line for d in check_source(example.source, "m.py", settings_for(example))
                if d.kind == "graph-break"}
    obs, module = run_example_under_dynamo(example, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == reported
