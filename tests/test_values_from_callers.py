"""What every caller in the file passes types an untyped parameter: a boolean mask handed to a compiled
function (made with a comparison, ``dtype=torch.bool``, kept by ``&=``, passed through an alias of the
function or a wrapper), and a module handed to a constructor (``Wrap(net, Crit())`` stores a ``Crit`` in
``self.criterion``, so the compile call of the wrapper reaches ``Crit.forward`` and the capture-flags
fixer can patch it), a number a recursive call hands on as arithmetic of itself (``depth - 1``), what a
helper of the caller returns, a plain object built with a tensor, and the objects ``functools.partial`` binds
to a compiled step.  Each text is checked against real Dynamo (torch 2.13, backend ``eager``)."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source
from helpers import break_tests, dynamo_recompile_log

MASK_FROM_CALLERS = """
import torch
import torch.nn.functional as F


def masked_loss(logits, y, mask):
    return F.cross_entropy(logits[mask], y[mask])


def train(logits, y, mask):
    return step(logits, y, mask) * 2


step = torch.compile(masked_loss, backend="eager")


def main():
    loss_fn = train
    out = []
    for n in (5, 6):
        m = torch.zeros(n, dtype=torch.bool)
        m[:3] = True
        m &= torch.arange(n) != 1
        out.append(loss_fn(torch.randn(n, 3), torch.randint(0, 3, (n,)), m))
    return out
"""
# an integer index tensor gathers rows: no break
INDEX_FROM_CALLERS = MASK_FROM_CALLERS.replace("m &= torch.arange(n) != 1", "m = m.nonzero().squeeze(1)")

test_check_mask, test_dynamo_mask = break_tests(MASK_FROM_CALLERS, {(6, "DYN104")}, "[()]")
test_check_index, test_dynamo_index = break_tests(INDEX_FROM_CALLERS, set(), "[()]")

INJECTED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Crit(nn.Module):
    def forward(self, s, y):
        keep = s.detach().max(-1).values > 0
        return F.cross_entropy(s[keep], y[keep])


class Wrap(nn.Module):
    def __init__(self, net, criterion):
        super().__init__()
        self.net = net
        self.criterion = criterion

    def forward(self, x, y):
        return self.criterion(self.net(x), y)


torch.manual_seed(0)
wrap = Wrap(nn.Linear(4, 3), Crit())


def main(batches):
    compiled = torch.compile(wrap, backend="eager")
    return [compiled(x, y) for x, y in batches]
"""


def test_a_module_handed_to_a_constructor_is_reached_by_the_compile_call_of_its_holder():
    result = fix_source(INJECTED, "train.py", Settings(), unsafe=True)
    assert [a.fixer for a in result.applied] == ["capture-flags"]
    assert "compiled = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(wrap, " \
           "backend=\"eager\"))" in result.source


def test_a_constructor_called_with_other_classes_types_nothing():
    other = "other = Wrap(nn.Linear(4, 3), nn.CrossEntropyLoss())"
    code = INJECTED.replace("wrap = Wrap(nn.Linear(4, 3), Crit())", f"wrap = Wrap(nn.Linear(4, 3), Crit())\n{other}")
    result = fix_source(code, "train.py", Settings(), unsafe=True)
    assert not result.applied
    assert any(r.fixer == "capture-flags" and "no `torch.compile` call" in r.reason for r in result.refused)


@requires_torch
def test_under_dynamo_the_patched_holder_breaks_nowhere_with_the_same_outputs(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    fixed = fix_source(INJECTED, "train.py", Settings(), unsafe=True).source
    torch.manual_seed(1)
    batches = [(torch.randn(b, 4), torch.randint(0, 3, (b,))) for b in (5, 7)]
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, INJECTED, fixed, "main", [(batches,)])
    assert seen_before.break_lines(before.__file__) == {9}
    assert not seen_after.break_lines(after.__file__)
    for a, b in zip(seen_after.outputs[0], seen_before.outputs[0]):
        torch.testing.assert_close(a, b, equal_nan=True)


def test_the_fixed_text_is_stable():
    fixed = fix_source(textwrap.dedent(INJECTED), "train.py", Settings(), unsafe=True).source
    assert fixed != INJECTED
    again = fix_source(fixed, "train.py", Settings(), unsafe=True)
    assert again.source == fixed and not again.applied


# a schedule object handed through an eager wrapper to the compiled part: `schedule.T` is its number of
# steps, not a transpose (the wrapper's own use of it would say "a tensor")
WRAPPED_OBJECT = """
import torch


class Schedule:
    def __init__(self, T):
        self.T = T
        self.betas = torch.linspace(1e-4, 0.02, T)


@torch.compile(backend="eager")
def _noised(schedule, x0):
    t = torch.randint(0, schedule.T, (x0.shape[0],))
    return x0 * schedule.betas[t].view(-1, 1), t


def step(schedule, x0):
    x, t = _noised(schedule, x0)
    return x.sum() + (t * 4 // schedule.T).sum()


def main():
    torch.manual_seed(0)
    schedule = Schedule(100)
    return [step(schedule, torch.randn(4, 3)) for _ in range(2)]
"""
test_check_wrapped_object, test_dynamo_wrapped_object = break_tests(WRAPPED_OBJECT, set(), "[()]")

# `generator=None` that every call passes a torch.Generator: an op given it breaks
GENERATOR = """
import torch


def noisy(x, scale=1.0, generator=None):
    return x + scale * torch.randn(x.shape, generator=generator)


def main():
    g = torch.Generator().manual_seed(0)
    f = torch.compile(noisy, backend="eager")
    return [f(torch.ones(3), generator=g) for _ in range(2)]
"""
test_check_generator, test_dynamo_generator = break_tests(GENERATOR, {(5, "DYN105")}, "[()]")


# a recursive call hands on `depth - 1`: a number wherever the other calls pass one, so the test reads none
RECURSIVE = """
import torch


def halve(x, depth):
    if depth == 0:
        return x
    return halve(x * 0.5, depth - 1)


def main():
    f = torch.compile(halve, backend="eager")
    return [f(torch.ones(3), 2), f(torch.ones(3), 2)]
"""
test_check_recursive, test_dynamo_recursive = break_tests(RECURSIVE, set(), "[()]")

# the loop that calls the compiled function also holds a loop that leaves early (a KL early stop)
LOOP_WITH_INNER_BREAK = """\
import torch


def scale(x, k):
    return x * k


def run():
    fn = torch.compile(scale, backend="eager")
    out = []
    for it in range(3):
        out.append(fn(torch.ones(3), float(it)))
        for epoch in range(2):
            if epoch > 0:
                break
    return out
"""


def test_a_loop_around_a_compiled_call_with_an_inner_early_exit_is_replayed(tmp_path, capsys):
    from helpers import run, write

    path = write(tmp_path, "m.py", LOOP_WITH_INNER_BREAK)
    code, out, err = run(capsys, "--format", "json", path)
    assert "internal error" not in out + err
    import json

    assert [(d["line"], d["code"]) for d in json.loads(out)] == [(4, "DYN206")]


@requires_torch
def test_under_dynamo_the_varying_number_recompiles(tmp_path):
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(LOOP_WITH_INNER_BREAK, str(tmp_path / "m.py"), "exec"), namespace)
        namespace["run"]()
    assert messages


# what a helper of the caller returns types the argument; a plain object built with a tensor holds one, also
# where the compiled function's parameter is annotated with the class
HELPER_MASK = """
import torch


class Graph:
    def __init__(self, rowptr):
        self.rowptr = rowptr


def make_mask(n):
    return torch.rand(n) < 0.6


def sample(g: Graph, nbr, mask):
    kept = nbr[mask]
    if g.rowptr.sum() > 0:
        kept = kept + 1
    return kept


def main():
    g = Graph(torch.tensor([0, 2, 2, 5]))
    f = torch.compile(sample, backend="eager")
    return f(g, torch.zeros(4), make_mask(4))
"""
test_check_helper_mask, test_dynamo_helper_mask = break_tests(
    HELPER_MASK, {(14, "DYN104"), (15, "DYN101")}, "[()]")


# a step compiled through functools.partial holds the objects the partial binds: the optimizer's methods break
PARTIAL_STEP = """
from functools import partial

import torch


def train_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss.detach()


def main():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(partial(train_step, model, opt), backend="eager")
    return step(torch.randn(3, 4))
"""
test_check_partial_step, test_dynamo_partial_step = break_tests(
    PARTIAL_STEP, {(7, "DYN105"), (9, "DYN105"), (10, "DYN105")}, "[()]")


# a method compiled through `torch.compile(ema.update_target)`: what its handle's calls pass are numbers
COMPILED_METHOD = """
import math

import torch
import torch.nn as nn


class EMAPair(nn.Module):
    def __init__(self, base_tau=0.99):
        super().__init__()
        self.online, self.target = nn.Linear(4, 4), nn.Linear(4, 4)
        self.base_tau = base_tau

    @torch.no_grad()
    def update_target(self, step, max_steps):
        tau = 1 - (1 - self.base_tau) * (math.cos(math.pi * step / max_steps) + 1) / 2
        for po, pt in zip(self.online.parameters(), self.target.parameters()):
            pt.mul_(tau).add_(po, alpha=1 - tau)


def main():
    ema = EMAPair()
    update = torch.compile(ema.update_target, backend="eager")
    for step in range(3):
        update(step, 4)
"""
test_check_compiled_method, test_dynamo_compiled_method = break_tests(COMPILED_METHOD, set(), "[()]")
