"""eager-tail moves the end of a function that breaks the graph several times into one eager helper, and
refuses what would change what that end sees (measured through real Dynamo, torch 2.13, backend ``eager``)."""
from __future__ import annotations

import textwrap
from typing import Any

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
    """A function the file does not compile (its callers do): the disable form."""
    from helpers import run_example_under_dynamo

    from dynalint.rules.base import Example

    fixed = fix_source(STEP, "step.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "eager-tail" in {a.fixer for a in fixed.applied}, fixed.refused
    assert "@torch.compiler.disable\ndef _step_eager(loss):\n" in fixed.source
    inputs = "[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]"
    before, _ = run_example_under_dynamo(Example(STEP, inputs=inputs, target="step"), tmp_path / "before")
    after, _ = run_example_under_dynamo(Example(fixed.source, inputs=inputs, target="step"), tmp_path / "after")
    assert not before.errors and not after.errors, (before.errors, after.errors)
    assert len({b.line for b in before.breaks}) >= 4 and len({b.line for b in after.breaks}) == 1, (
        before.breaks, after.breaks)
    assert len(before.outputs) == len(after.outputs) == 3
    import torch

    for a, b in zip(before.outputs, after.outputs):
        assert torch.equal(a, b), (a, b)


# The split form: where the file compiles the function itself, the end runs outside the compiled code.

SPLIT_HEADER = ("import torch\n\n"
                "w = torch.nn.Parameter(torch.ones(4))\nopt = torch.optim.Adam([w], lr=0.1)\n\n\n")

SPLIT_STEP = """\
def step(x, scale=2.0):
    \"\"\"One update.\"\"\"
    y = w * x
    # the loss
    loss = ((y.sum() - 1.0) ** 2) * scale
    # update the weights
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([w], 1.0)
    opt.step()
    return loss.detach() * w.sum().item(), y.detach()
"""

SPLIT_AFTER = """\
def step(x, scale=2.0):
    \"\"\"One update.\"\"\"
    loss, y = _step_compiled(x, scale)
    # update the weights
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([w], 1.0)
    opt.step()
    return loss.detach() * w.sum().item(), y.detach()


{decorator}def _step_compiled(x, scale):
    y = w * x
    # the loss
    loss = ((y.sum() - 1.0) ** 2) * scale
    return loss, y
"""

SPLIT_FORMS = {
    "alias": (SPLIT_STEP + '\n\nstep_fn = torch.compile(step, backend="eager")\n', "step_fn",
              SPLIT_AFTER.format(decorator="") + '\n\n_step_compiled = torch.compile(_step_compiled, backend="eager")\n'
              "step_fn = step\n"),
    "rebound": (SPLIT_STEP + '\n\nstep = torch.compile(step, backend="eager")\n', "step",
                SPLIT_AFTER.format(decorator="")
                + '\n\n_step_compiled = torch.compile(_step_compiled, backend="eager")\n'),
    "decorator": ('@torch.compile(backend="eager")\n' + SPLIT_STEP, "step",
                  SPLIT_AFTER.format(decorator='@torch.compile(backend="eager")\n')),
}


def _fix_default(source: str):
    return fix_source(source, "m.py", Settings(), unsafe=True)


@pytest.mark.parametrize("form", sorted(SPLIT_FORMS))
def test_a_function_the_file_compiles_is_split_and_the_compile_moves_to_its_first_part(form):
    source, _, expected = SPLIT_FORMS[form]
    fixed = _fix_default(SPLIT_HEADER + source)
    assert fixed.source == SPLIT_HEADER + expected, fixed.source
    again = _fix_default(fixed.source)
    assert again.source == fixed.source and not again.applied
    scoped = fix_source(fixed.source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "eager-tail" not in {a.fixer for a in scoped.applied}, scoped.source


def test_a_method_compiled_on_its_instance_is_split_on_the_instance():
    source = SPLIT_HEADER + textwrap.dedent("""\
        class Learner:
            def __init__(self):
                self.lin = torch.nn.Linear(4, 1)
                self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)

            def learn(self, x):
                loss = self.lin(x).pow(2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return loss.item()


        learner = Learner()
        learner.learn = torch.compile(learner.learn)
    """)
    fixed = _fix_default(source)
    assert textwrap.dedent("""\
            def learn(self, x):
                loss = self._learn_compiled(x)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                return loss.item()

            def _learn_compiled(self, x):
                loss = self.lin(x).pow(2).mean()
                return loss


        learner = Learner()
        learner._learn_compiled = torch.compile(learner._learn_compiled)
    """) in fixed.source, fixed.source


def test_a_nested_compiled_function_is_split_beside_it_once():
    fixed = _fix("""
        def make(scale):
            @torch.compile
            def step(x):
                loss = (w * x).sum() * scale
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss.detach()
            return step
    """)
    assert textwrap.dedent("""
        def make(scale):
            def step(x):
                loss = _step_compiled(x)
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss.detach()

            @torch.compile
            def _step_compiled(x):
                loss = (w * x).sum() * scale
                return loss
            return step
    """) in fixed.source, fixed.source


TRAINER = """\
class Trainer:
    def __init__(self):
        self.lin = torch.nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)
        self.step = torch.compile(self.step)

    def step(self, x):
        loss = self.lin(x).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()
"""


def test_a_method_compiled_on_self_in_init_is_split_unless_a_subclass_overrides_it():
    fixed = _fix_default(SPLIT_HEADER + TRAINER)
    assert "        self._step_compiled = torch.compile(self._step_compiled)\n" in fixed.source, fixed.source
    assert "        loss = self._step_compiled(x)\n" in fixed.source
    overridden = _fix_default(SPLIT_HEADER + TRAINER + "\n\nclass Frozen(Trainer):\n    def step(self, x):\n"
                              "        return 0.0\n")
    assert "_step_compiled" not in overridden.source
    assert "    @torch.compiler.disable\n    def _step_eager(self, loss):\n" in overridden.source, overridden.source


@pytest.mark.parametrize("change", [
    # `step` is also called eagerly: it would run the compiled part there
    lambda s: s + '\n\nstep_fn = torch.compile(step, backend="eager")\nreference = step(torch.ones(4))\n',
    # compiled twice, with different options
    lambda s: s + '\n\nfast = torch.compile(step)\nslow = torch.compile(step, backend="eager")\n',
    # the compiled part would return early
    lambda s: (s.replace("    # the loss\n", "    if scale < 0:\n        return None\n")
               + "\n\nstep = torch.compile(step)\n"),
    # a decorator that wraps the whole function
    lambda s: "@torch.no_grad()\n" + s + "\n\nstep = torch.compile(step)\n",
    lambda s: '@torch.compile\n@torch.enable_grad()\n' + s,
    # compiled in a loop: the compiled part would be compiled again
    lambda s: s + '\n\nfor _ in range(2):\n    step = torch.compile(step)\n',
])
def test_the_split_form_stays_out_where_it_would_change_what_callers_see(change):
    """The disable form then, as for a function the file does not compile."""
    fixed = _fix_default(SPLIT_HEADER + change(SPLIT_STEP))
    assert "_step_compiled" not in fixed.source
    assert "eager-tail" in {a.fixer for a in fixed.applied}, (fixed.refused, fixed.source)
    assert "@torch.compiler.disable\ndef _step_eager(loss, y):\n" in fixed.source, fixed.source


def _eager_outputs(source: str, target: str, inputs: list, tmp_path) -> tuple[list, Any]:
    """The calls of ``target`` with ``torch.compile`` returning what it is given (the eager reference)."""
    from unittest import mock

    import torch

    from dynalint.verify.probe import load_module_from_source

    def identity(model=None, **_kwargs):
        return model if model is not None else (lambda m: m)

    tmp_path.mkdir(parents=True, exist_ok=True)
    with mock.patch.object(torch, "compile", identity):
        module = load_module_from_source(source, directory=str(tmp_path))
    outputs = []
    for i, args in enumerate(inputs):
        torch.manual_seed(i)
        outputs.append(getattr(module, target)(*args))
    return outputs, module


@requires_torch
@pytest.mark.parametrize("form", sorted(SPLIT_FORMS))
def test_under_dynamo_the_split_breaks_nowhere_and_gives_eager_results(form, tmp_path):
    import torch
    from helpers import run_example_under_dynamo

    from dynalint.rules.base import Example

    source, target, _ = SPLIT_FORMS[form]
    original = SPLIT_HEADER + source
    fixed = _fix_default(original)
    inputs = "[(torch.randn(4),), (torch.randn(4), 0.5), (torch.randn(4),)]"
    before, _ = run_example_under_dynamo(Example(original, inputs=inputs, target=target, compile_target=False),
                                         tmp_path / "before")
    after, module = run_example_under_dynamo(Example(fixed.source, inputs=inputs, target=target,
                                                     compile_target=False), tmp_path / "after")
    assert not before.errors and not after.errors, (before.errors, after.errors)
    assert len({b.line for b in before.breaks}) >= 3 and not after.breaks, (before.breaks, after.breaks)
    torch.manual_seed(0)  # as the inputs of the runs above were drawn
    eager, reference = _eager_outputs(original, target, eval(inputs, {"torch": torch}), tmp_path / "eager")
    assert len(after.outputs) == len(eager) == 3
    for got, want in zip(after.outputs, eager):
        assert all(torch.equal(a, b) for a, b in zip(got, want)), (got, want)
    assert torch.equal(module.w, reference.w)
