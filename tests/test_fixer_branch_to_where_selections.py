"""branch-to-where on the guards of a selection: ``if gate.any():`` a loss over ``logits[gate]``, else a
0-d zero.  Both sides are evaluated, so a side must not raise on an empty selection (``.max()`` does, a
mean loss gives NaN with no gradient to anything); a function of the file that only computes is as
pure as what it computes; a loss with its default reduction and ``x.new_zeros(())`` are both 0-d and of
the logits' dtype.  Checked as text and through real Dynamo (torch 2.13, backend ``eager``)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

GATED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def shifted(labels, k):
    moved = labels + k
    return moved % 3


class GatedLoss(nn.Module):
    def forward(self, logits, teacher, labels):
        gate = teacher.softmax(-1).max(-1).values < 0.6
        if gate.any():
            ce = F.cross_entropy(logits[gate], shifted(labels, 1)[gate])
        else:
            ce = logits.new_zeros(())
        return ce + logits.mean() * 0


def main(batches):
    torch.manual_seed(0)
    head = nn.Linear(4, 3)
    loss_fn = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(
        torch.compile(GatedLoss(), backend="eager"))
    out = []
    for x, teacher, labels in batches:
        head.zero_grad()
        loss = loss_fn(head(x), teacher, labels)
        loss.backward()
        out += [loss.detach(), head.weight.grad.clone()]
    return out
"""
GATED_FIXED = """\
        ce_then = F.cross_entropy(logits[gate], shifted(labels, 1)[gate])
        ce_else = logits.new_zeros(())
        ce = torch.where(gate.any(), ce_then, ce_else)
"""


def _fix(code: str):
    return fix_source(code, "loss.py", Settings(), unsafe=True)


def test_a_guarded_loss_over_a_selection_becomes_a_where():
    result = _fix(GATED)
    assert [a.fixer for a in result.applied] == ["branch-to-where"]
    assert GATED_FIXED in result.source


@pytest.mark.parametrize("reduction", ["logits[gate].max()", "logits[gate].argmin()", "logits[gate].min()"])
def test_a_side_that_raises_on_an_empty_selection_is_refused(reduction):
    code = GATED.replace("ce = F.cross_entropy(logits[gate], shifted(labels, 1)[gate])",
                         f"ce = logits.sum() * {reduction}")
    result = _fix(code)
    assert "branch-to-where" not in {a.fixer for a in result.applied}
    assert any(r.fixer == "branch-to-where" and "raises on an empty selection" in r.reason for r in result.refused)


def test_a_helper_that_updates_in_place_is_not_pure():
    code = GATED.replace("    moved = labels + k\n", "    moved = labels + k\n    moved += 1\n")
    result = _fix(code)
    assert "branch-to-where" not in {a.fixer for a in result.applied}


@requires_torch
def test_the_reductions_refused_raise_on_an_empty_tensor_and_the_loss_does_not():
    import torch
    import torch.nn.functional as F

    empty = torch.ones(0, 3)
    for reduction in (lambda t: t.max(), lambda t: t.argmin(), lambda t: t.min()):
        with pytest.raises((RuntimeError, IndexError)):
            reduction(empty)
    assert F.cross_entropy(empty, torch.ones(0, dtype=torch.long)).isnan()


@requires_torch
def test_under_dynamo_the_where_breaks_nowhere_with_the_same_loss_and_gradients(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    torch.manual_seed(1)
    batches = []
    for teacher_scale in (1.0, 0.0, 100.0):  # some gated, all gated (uniform teacher), none gated
        x, labels = torch.randn(6, 4), torch.randint(0, 3, (6,))
        batches.append((x, torch.randn(6, 3) * teacher_scale, labels))
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, GATED, _fix(GATED).source, "main",
                                                                    [(batches,)])
    assert 14 in seen_before.break_lines(before.__file__)
    assert not seen_after.break_lines(after.__file__)
    for a, b in zip(seen_after.outputs[0], seen_before.outputs[0]):
        assert torch.equal(a, b)
