"""eager-tail moves the end of a function that breaks the graph several times into one eager helper, and
refuses what would change what that end sees (measured through real Dynamo, torch 2.13, backend ``eager``)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

HEADER = ("import torch\nimport torch.nn as nn\n\n"
          "w = torch.nn.Parameter(torch.ones(4))\nopt = torch.optim.SGD([w], lr=0.1)\n\n")


def _fix(code: str):
    return fix_source(HEADER + textwrap.dedent(code), "m.py", Settings(scope=Scope.ALL), unsafe=True)


@pytest.mark.parametrize("code, reason", [
    ("""
        def f(x, flag):
            loss = (w * x).sum()
            if flag:
                scale = 2.0
            opt.zero_grad()
            (loss * scale).backward()
            opt.step()
            return loss.detach()
    """, "`scale` may be unbound where the moved statements start"),
    ("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                y = x * 2
                print("y", y)
                z = self.lin(y)
                print("z", z)
                return z
    """, "call the module `self.lin`"),
    ("""
        def f(x):
            loss = (w * x).sum()
            loss.backward()
            return loss.detach()
    """, "break the graph once"),
    ("""
        def f(x):
            loss = (w * x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            yield loss.detach()
    """, "generator"),
    ("""
        def f(x):
            loss = (w * x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return locals()["loss"]
    """, "reads the calling frame"),
    ("""
        class Step:
            @staticmethod
            def run(x):
                loss = (w * x).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss.detach()
    """, "static method"),
    ("""
        def f(x):
            n = 3
            opt.zero_grad()
            (w * x).sum().backward()
            opt.step()
            return n
    """, "no tensor operation comes before the call"),
])
def test_refused_with_a_reason(code, reason):
    result = _fix(code)
    assert "eager-tail" not in {a.fixer for a in result.applied}, result.source
    reasons = [r.reason for r in result.refused if r.fixer == "eager-tail"]
    assert any(reason in r for r in reasons), result.refused


def test_calls_that_break_only_on_some_runs_are_not_moved():
    """A ``warnings.warn`` under a Python flag breaks only when the flag is on: no reason to run the loss
    eagerly on every call."""
    code = """
        import warnings

        def loss_fn(x, target, squash):
            x = x * 2.0
            if squash:
                warnings.warn("squashing")
                x = torch.sigmoid(x)
            d = (x - target).abs()
            if d.dim() > 1:
                print("reducing", d.shape)
            return d.mean()
    """
    result = _fix(code)
    assert "eager-tail" not in {a.fixer for a in result.applied}
    assert not [r for r in result.refused if r.fixer == "eager-tail"]


def test_a_break_marked_noqa_keeps_the_function_as_written():
    code = """
        def f(x):
            loss = ((w * x).sum() - 1.0) ** 2
            opt.zero_grad()
            loss.backward()  # noqa: DYN105
            opt.step()
            return loss.detach()
    """
    result = _fix(code)
    assert result.source == HEADER + textwrap.dedent(code) and not result.applied


def test_a_function_that_already_runs_eagerly_is_left_alone():
    code = """
        def make(scale):
            @torch.compiler.disable
            def step(x):
                loss = (w * x).sum() * scale
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss.detach()
            return step
    """
    result = _fix(code)
    assert "eager-tail" not in {a.fixer for a in result.applied}
    assert not [r for r in result.refused if r.fixer == "eager-tail"]


def test_comment_lines_above_the_moved_code_stay_as_written_above_it():
    result = _fix("""
        def f(x):
            loss = (w * x).sum()
            # update the weights

            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    assert textwrap.dedent("""
        def f(x):
            loss = (w * x).sum()
            return _f_eager(loss)


        @torch.compiler.disable
        def _f_eager(loss):
            # update the weights

            opt.zero_grad()
    """) in result.source


def test_a_tensor_check_right_before_the_update_moves_with_it():
    result = _fix("""
        def f(x):
            loss = ((w * x).sum() - 1.0) ** 2
            if not torch.isfinite(loss):
                return None
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()
    """)
    assert textwrap.dedent("""
        def f(x):
            loss = ((w * x).sum() - 1.0) ** 2
            return _f_eager(loss)


        @torch.compiler.disable
        def _f_eager(loss):
            if not torch.isfinite(loss):
                return None
            opt.zero_grad()
    """) in result.source


def test_a_nested_function_gets_its_helper_beside_it_and_comments_stay():
    result = _fix("""
        def make(scale):
            def step(x):  # one training step
                loss = (w * x).sum() * scale
                # apply the update
                opt.zero_grad()
                loss.backward()  # gradients
                opt.step()
                return loss.detach() * scale
            return step
    """)
    assert "eager-tail" in {a.fixer for a in result.applied}
    assert textwrap.dedent("""
        def make(scale):
            def step(x):  # one training step
                loss = (w * x).sum() * scale
                return _step_eager(loss)

            @torch.compiler.disable
            def _step_eager(loss):
                # apply the update
                opt.zero_grad()
                loss.backward()  # gradients
                opt.step()
                return loss.detach() * scale
            return step
    """) in result.source
    again = fix_source(result.source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert again.source == result.source and not again.applied


def test_variables_bound_in_a_with_block_and_only_by_the_moved_code():
    result = _fix("""
        def f(x):
            with torch.no_grad():
                ref = x.mean()
            loss = ((w * x).sum() - ref) ** 2
            opt.zero_grad()
            loss.backward()
            opt.step()
            gap = loss.detach() - ref
            return gap
    """)
    assert "    return _f_eager(loss, ref)\n" in result.source
    assert "def _f_eager(loss, ref):\n" in result.source


STEP = """
import torch

w = torch.nn.Parameter(torch.ones(4))
opt = torch.optim.SGD([w], lr=0.1)


@torch.compile(backend="eager")
def step(x):
    loss = ((w * x).sum() - 1.0) ** 2
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([w], 1.0)
    opt.step()
    return loss.detach() * w.sum().item()
"""


@requires_torch
def test_under_dynamo_one_break_is_left_and_outputs_are_equal(tmp_path):
    from helpers import run_example_under_dynamo

    from dynalint.rules.base import Example

    fixed = fix_source(STEP, "step.py", Settings(), unsafe=True)
    assert "eager-tail" in {a.fixer for a in fixed.applied}, fixed.refused
    inputs = "[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]"
    before, _ = run_example_under_dynamo(Example(STEP, inputs=inputs, target="step", compile_target=False),
                                         tmp_path / "before")
    after, _ = run_example_under_dynamo(Example(fixed.source, inputs=inputs, target="step", compile_target=False),
                                        tmp_path / "after")
    assert not before.errors and not after.errors, (before.errors, after.errors)
    assert len({b.line for b in before.breaks}) >= 4 and len({b.line for b in after.breaks}) == 1, (
        before.breaks, after.breaks)
    assert len(before.outputs) == len(after.outputs) == 3
    import torch

    for a, b in zip(before.outputs, after.outputs):
        assert torch.equal(a, b), (a, b)
