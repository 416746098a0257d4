"""A training step compiled whole (``opt.zero_grad()``, forward, ``loss.backward()``, ``opt.step()``) is
split by eager-head and eager-tail into an eager step around one compiled forward-and-loss function:
the compile call may sit in ``main()``, the loss may be bound on both branches of an ``if``, the model
may be an untyped parameter, and the step may be a method.  Each program is run through real Dynamo
(torch 2.13, backend ``eager``) before and after the fix."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

FUNCTION_STEP = """\
import torch
import torch.nn as nn


def train_step(model, opt, x, y, aux=False):
    model.train()
    opt.zero_grad()
    if aux:
        loss = nn.functional.cross_entropy(model(x), y) * 2
    else:
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()


def main(batches):
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step_fn = torch.compile(train_step, backend="eager")
    losses = [step_fn(model, opt, x, y, aux=i % 2 == 0) for i, (x, y) in enumerate(batches)]
    return losses + [p.detach().clone() for p in model.parameters()]
"""
FUNCTION_STEP_FIXED = """\
def train_step(model, opt, x, y, aux=False):
    model.train()
    opt.zero_grad()
    loss = _train_step_compiled(aux, model, x, y)
    loss.backward()
    opt.step()
    return loss.detach()


@torch.compile(backend="eager")
def _train_step_compiled(aux, model, x, y):
    if aux:
        loss = nn.functional.cross_entropy(model(x), y) * 2
    else:
        loss = nn.functional.cross_entropy(model(x), y)
    return loss
"""

METHOD_STEP = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.detach()


def main(batches):
    torch.manual_seed(0)
    trainer = Trainer(nn.Linear(4, 3))
    trainer.train_step = torch.compile(trainer.train_step, backend="eager")
    losses = [trainer.train_step(x, y) for x, y in batches]
    return losses + [p.detach().clone() for p in trainer.model.parameters()]
"""
METHOD_STEP_FIXED = """\
    def train_step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = self._train_step_compiled(x, y)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def _train_step_compiled(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        return loss
"""

# compiled in `__init__` under another name: the instance's `step` becomes the partly compiled method
ALIASED_METHOD_STEP = METHOD_STEP.replace(
    "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    "        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "        self.step = torch.compile(self.train_step, backend=\"eager\")\n").replace(
    "    trainer.train_step = torch.compile(trainer.train_step, backend=\"eager\")\n", "").replace(
    "trainer.train_step(x, y)", "trainer.step(x, y)")

# the loss comes from a function of the file returning a tuple, and zero_grad() follows it
HELPER_STEP = """\
import torch
import torch.nn as nn


def compute(model, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    return loss, {"n": x.shape[0]}


@torch.compile(backend="eager")
def train_step(model, opt, x, y):
    loss, stats = compute(model, x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.detach(), stats


def main(batches):
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = [train_step(model, opt, x, y)[0] for x, y in batches]
    return losses + [p.detach().clone() for p in model.parameters()]
"""


def _fix(code: str):
    return fix_source(textwrap.dedent(code), "train.py", Settings(), unsafe=True)


def test_a_step_compiled_in_main_becomes_an_eager_step_around_a_compiled_forward():
    result = _fix(FUNCTION_STEP)
    start, end = FUNCTION_STEP.index("def train_step"), FUNCTION_STEP.index("\n\ndef main")
    expected = (FUNCTION_STEP[:start] + FUNCTION_STEP_FIXED + FUNCTION_STEP[end:]).replace(
        'step_fn = torch.compile(train_step, backend="eager")', "step_fn = train_step")
    assert result.source == expected
    assert sorted({a.fixer for a in result.applied}) == ["eager-head", "eager-tail"]
    again = _fix(result.source)
    assert again.source == result.source and not again.applied


def test_a_method_step_is_split_in_its_class():
    result = _fix(METHOD_STEP)
    start, end = METHOD_STEP.index("    def train_step"), METHOD_STEP.index("\n\ndef main")
    expected = (METHOD_STEP[:start] + METHOD_STEP_FIXED + METHOD_STEP[end:]).replace(
        "trainer.train_step = torch.compile(trainer.train_step,",
        "trainer._train_step_compiled = torch.compile(trainer._train_step_compiled,")
    assert result.source == expected


def test_a_method_compiled_in_init_under_another_name_is_split_there():
    result = _fix(ALIASED_METHOD_STEP)
    assert '        self._train_step_compiled = torch.compile(self._train_step_compiled, backend="eager")\n' \
           "        self.step = self.train_step\n" in result.source
    assert METHOD_STEP_FIXED in result.source


def test_a_loss_from_a_helper_of_the_file_stays_compiled():
    result = _fix(HELPER_STEP)
    assert "    loss, stats = _train_step_compiled(model, x, y)\n    opt.zero_grad()\n" in result.source
    assert [a.fixer for a in result.applied] == ["eager-tail"]


def test_a_compile_call_whose_options_read_a_local_variable_stays():
    code = FUNCTION_STEP.replace('step_fn = torch.compile(train_step, backend="eager")',
                                 'backend = "eager"\n    step_fn = torch.compile(train_step, backend=backend)')
    result = _fix(code)
    assert "step_fn = torch.compile(train_step, backend=backend)" in result.source
    assert "@torch.compile" not in result.source


def test_a_loss_bound_on_one_branch_only_is_refused():
    code = FUNCTION_STEP.replace("    else:\n        loss = nn.functional.cross_entropy(model(x), y)\n", "")
    result = _fix(code)
    assert "loss.backward()" in result.source
    assert any(r.fixer == "eager-tail" and "`loss` may be unbound" in r.reason for r in result.refused)


@requires_torch
def test_under_dynamo_the_split_steps_break_nowhere_and_train_the_same_weights(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    batches = [(torch.randn(b, 4), torch.randint(0, 3, (b,))) for b in (2, 2, 3, 2)]
    for code in (FUNCTION_STEP, METHOD_STEP, ALIASED_METHOD_STEP, HELPER_STEP):
        before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, code, _fix(code).source, "main",
                                                                        [(batches,)])
        assert len(seen_before.break_lines(before.__file__)) >= 2  # zero_grad and backward at least
        assert not seen_after.break_lines(after.__file__)
        got, want = seen_after.outputs[0], seen_before.outputs[0]
        assert len(got) == len(want) == len(batches) + 2
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
