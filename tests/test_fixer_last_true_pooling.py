"""last-true-pooling on a classification head that pools at the last end-of-sequence token, through
real Dynamo (torch 2.13, backend ``eager``): the breaks before and after, outputs and gradients bitwise
equal on random masks whose rows hold the same count, and the exceptions on the inputs the original
rejects (the documented hazards, exactly)."""
from __future__ import annotations

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
    assert [a.fixer for a in result.applied] == ["last-true-pooling"], result.refused
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
@pytest.mark.parametrize("ids, original, fixed", [
    ("[[2, 3, 2, 3], [3, 3, 3, 2]]", "RuntimeError", "RuntimeError"),  # rows of different counts
    ("[[3, 3, 3, 3], [4, 4, 4, 4]]", "IndexError", "RuntimeError"),  # no end-of-sequence token
    ("[[2, 3, 3], [3, 2, 3]]", "IndexError", "IndexError"),  # a mask shorter than the sequence
    ("[[3, 2, 3, 2]]", "IndexError", "IndexError"),  # one mask row for three sequences
])
def test_rejected_inputs_raise_as_documented(ids, original, fixed):
    import torch

    from dynalint.fixers.last_true_pooling import LastTruePooling

    before, after = _pair()
    ids = torch.tensor(eval(ids))
    hidden = torch.randn(2 if ids.shape[0] == 2 else 3, 4, 8)
    for model, expected in ((before, original), (after, fixed),
                            (torch.compile(after, backend="eager"), fixed)):
        torch._dynamo.reset()
        with pytest.raises(Exception) as raised:
            model(hidden, ids)
        assert type(raised.value).__name__ == expected
    if original != fixed:
        assert "raises ``RuntimeError``" in LastTruePooling.reasoning
