"""last-true-pooling on a classification head that pools at the last end-of-sequence token, through
real Dynamo (torch 2.13, backend ``eager``): the breaks before and after, outputs and gradients bitwise
equal on random masks whose rows hold the same count, and the exceptions on the inputs the original
rejects (the same types, eager and compiled); the head as usually written, which never rejects a mask
with no end-of-sequence token, and an ``assert`` count check are refused, for what the original raises."""
from __future__ import annotations

import re
import sys
import textwrap
import types

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

HEAD = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self, d=8, labels=3, eos=2):
            super().__init__()
            self.eos = eos
            self.dense = nn.Linear(d, d)
            self.out = nn.Linear(d, labels)

        def forward(self, hidden, input_ids):
            eos_mask = input_ids.eq(self.eos)
            if not eos_mask.any():
                raise RuntimeError("no <eos> token in the batch")
            if len(torch.unique_consecutive(eos_mask.sum(1))) > 1:
                raise RuntimeError("All examples must have the same number of <eos> tokens.")
            sentence = hidden[eos_mask, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
            return self.out(torch.tanh(self.dense(sentence)))
""")


def _load(source: str, name: str):
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _pair():
    import torch

    result = fix_source(HEAD, "head.py", Settings(scope=Scope.ALL), unsafe=True)
    # async-assert keeps the check for a True in the graph, as torch._assert_async(eos_mask.any(), ...)
    assert sorted(a.fixer for a in result.applied) == ["async-assert", "last-true-pooling"], result.refused
    assert "torch._assert_async(eos_mask.any()" in result.source
    torch.manual_seed(0)
    before = _load(HEAD, "pooling_before").Head()
    after = _load(result.source, "pooling_after").Head()
    after.load_state_dict(before.state_dict())
    return before, after


def _ids(b: int, t: int, k: int):
    """``b`` rows of ``t`` token ids with the end-of-sequence id at ``k`` random places of every row."""
    import torch

    places = torch.rand(b, t).argsort(1)[:, :k]
    return torch.randint(3, 9, (b, t)).scatter(1, places, 2)


def _run(model, hidden, ids):
    hidden = hidden.detach().clone().requires_grad_(True)
    for p in model.parameters():
        p.grad = None
    out = model(hidden, ids)
    out.sum().backward()
    return [out.detach(), hidden.grad] + [p.grad for p in model.parameters()]


def _break_ops(fn, *args) -> set[str]:
    """The operators Dynamo names in the reasons of the graph breaks of one compiled call."""
    import re

    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.compile(fn, backend="eager")(*args)
    return {op for reason in counters["graph_break"] for op in re.findall(r"aten\.(\w+)\.default", reason)}


@requires_torch
def test_breaks_go_and_outputs_and_gradients_stay_bitwise():
    import torch

    before, after = _pair()
    torch.manual_seed(1)
    hidden, ids = torch.randn(3, 7, 8), _ids(3, 7, 2)
    assert _break_ops(before, hidden, ids) == {"unique_consecutive", "nonzero"}  # the check, the selection
    assert _break_ops(after, hidden, ids) == set()
    compiled = torch.compile(after, backend="eager", fullgraph=True)
    for b, t, k in [(1, 5, 1), (2, 6, 2), (3, 7, 3), (4, 4, 4), (2, 9, 1), (5, 6, 5)]:
        hidden, ids = torch.randn(b, t, 8), _ids(b, t, k)
        want = _run(before, hidden, ids)
        for got in (_run(after, hidden, ids), _run(compiled, hidden, ids)):
            assert all(torch.equal(x, y) for x, y in zip(want, got)), (b, t, k)


@requires_torch
@pytest.mark.parametrize("ids, raised_type", [
    ("[[2, 3, 2, 3], [3, 3, 3, 2]]", "RuntimeError"),  # rows of different counts
    ("[[3, 3, 3, 3], [4, 4, 4, 4]]", "RuntimeError"),  # no end-of-sequence token: the check for a True
    ("[[2, 3, 3], [3, 2, 3]]", "IndexError"),  # a mask shorter than the sequence
    ("[[3, 2, 3, 2]]", "IndexError"),  # one mask row for three sequences
    ("[[2, 2, 3], [3, 2, 3]]", "RuntimeError"),  # a mask too short whose rows differ in count too
    ("[[], []]", "RuntimeError"),  # no token at all: the check for a True
])
def test_rejected_inputs_raise_the_same_type(ids, raised_type):
    import torch

    before, after = _pair()
    ids = torch.tensor(eval(ids), dtype=torch.long)
    hidden = torch.randn(2 if ids.shape[0] == 2 else 3, 4, 8)
    for model in (before, after, torch.compile(before, backend="eager"), torch.compile(after, backend="eager")):
        torch._dynamo.reset()
        with pytest.raises(Exception) as raised:
            model(hidden, ids)
        assert type(raised.value).__name__ == raised_type


#: the head as usually written: nothing before the count check rejects a mask with no <eos>
UNCHECKED = re.sub(r"\n *if not eos_mask.any\(\):\n *raise RuntimeError\(.*\)", "", HEAD)
#: the count check as an ``assert``
ASSERTED = re.sub(r"if (len\(.*\)) > 1:\n *raise RuntimeError\(.*\)", r'assert \1 == 1, "same count of <eos>"',
                  UNCHECKED)


@requires_torch
@pytest.mark.parametrize("source, reason, rejected, raised_type", [
    # a mask with no True: every count is 0, so the count check passes and `[:, -1]` of no rows raises
    (UNCHECKED, "nothing right before the count check rejects a mask with no True",
     "[[3, 3, 3, 3], [4, 4, 4, 4]]", "IndexError"),
    (ASSERTED,
     "the count check is an `assert`", "[[2, 3, 2, 3], [3, 3, 3, 2]]", "AssertionError"),
], ids=["no-check-for-a-true", "assert"])
def test_refused_where_the_original_raises_another_type(source, reason, rejected, raised_type):
    """What the rewrite would raise is RuntimeError (torch._assert_async); the original raises another
    type, eager and compiled, so the fixer refuses."""
    import torch

    result = fix_source(source, "head.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "last-true-pooling" not in {a.fixer for a in result.applied}
    assert any(r.fixer == "last-true-pooling" and reason in r.reason for r in result.refused), result.refused
    model = _load(source, "pooling_refused").Head()
    for run in (model, torch.compile(model, backend="eager")):
        torch._dynamo.reset()
        with pytest.raises(Exception) as raised:
            run(torch.randn(2, 4, 8), torch.tensor(eval(rejected)))
        assert type(raised.value).__name__ == raised_type


@requires_torch
def test_a_check_for_a_true_of_another_type_is_kept_and_raises_in_both():
    """``if not eos_mask.any(): raise ValueError`` is no graph code async-assert keeps; it stays, and a
    mask with no True raises its ValueError in both versions, eager and compiled."""
    import torch

    source = HEAD.replace('raise RuntimeError("no <eos> token in the batch")',
                          'raise ValueError("no <eos> token in the batch")')
    result = fix_source(source, "head.py", Settings(scope=Scope.ALL), unsafe=True)
    assert [a.fixer for a in result.applied] == ["last-true-pooling"], result.refused
    torch.manual_seed(0)
    before = _load(source, "pooling_value_before").Head()
    after = _load(result.source, "pooling_value_after").Head()
    after.load_state_dict(before.state_dict())
    hidden, ids = torch.randn(3, 7, 8), _ids(3, 7, 2)
    assert _break_ops(after, hidden, ids) == set() and _break_ops(before, hidden, ids) == {
        "unique_consecutive", "nonzero"}
    want = _run(before, hidden, ids)
    assert all(torch.equal(x, y) for x, y in zip(want, _run(torch.compile(after, backend="eager"), hidden, ids)))
    for model in (before, after, torch.compile(before, backend="eager"), torch.compile(after, backend="eager")):
        torch._dynamo.reset()
        with pytest.raises(ValueError):
            model(hidden, torch.zeros(3, 7, dtype=torch.long))
