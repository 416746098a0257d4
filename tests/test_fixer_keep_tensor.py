"""keep-tensor keeps a value in a dtype that does not promote the tensors it meets: the rewritten code,
run through torch, gives the dtype and the values of the original Python-number arithmetic."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

#: (source, inputs): the function ``f`` of each source, called on the inputs.
CASES = [
    pytest.param("""
        import torch

        def f(loss, labels):
            mask = labels != -100
            m = mask.float()
            n = mask.sum().item()
            return (loss * m).sum() / max(n, 1)
    """, "(torch.rand(6), torch.tensor([1, -100, 3, 4, -100, 2]))", id="count-of-a-known-mask"),
    pytest.param("""
        import torch

        def f(x):
            big = x > 1
            c = float(big.sum())
            return x * c
    """, "(torch.arange(4),)", id="float-of-an-integer-meets-an-integer-tensor"),
]


@requires_torch
@pytest.mark.parametrize("source, inputs", CASES)
def test_the_kept_value_gives_the_original_dtype_and_values(source, inputs):
    import torch

    before = textwrap.dedent(source).lstrip("\n")
    result = fix_source(before, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert [a.fixer for a in result.applied] == ["keep-tensor"], (result.applied, result.refused)
    outputs = []
    for code in (before, result.source):
        namespace: dict = {}
        exec(compile(code, "m.py", "exec"), namespace)  # noqa: S102 - the cases are ours
        torch.manual_seed(0)
        outputs.append(namespace["f"](*eval(inputs, namespace)))  # noqa: S307
    original, kept = outputs
    assert kept.dtype == original.dtype, result.source
    assert torch.allclose(kept, original, rtol=1e-6, atol=0), (kept, original)


REFUSED = [
    pytest.param("""
        import torch

        def f(x):
            s = x.double().sum().item()
            return x * s
    """, "a float64 value", id="float64"),
    pytest.param("""
        import torch

        def f(loss, mask):
            n = mask.sum().item()
            return (loss * mask).sum() / max(n, 1)
    """, "unknown dtype computed on", id="count-of-an-untyped-mask-meets-a-0-d-tensor"),
    pytest.param("""
        import math
        import torch

        def f(q):
            var = q.var().item()
            return q.sum() * (1.0 / math.sqrt(max(var, 1e-6) * q.shape[-1]))
    """, "unknown dtype computed on", id="float-computed-on-meets-a-0-d-tensor"),
]


@pytest.mark.parametrize("source, reason", REFUSED)
def test_a_value_no_dtype_keeps_as_the_python_number_is_refused(source, reason):
    """No dtype gives what the Python number gave: float64 promotes the 0-d or integer tensors it meets,
    the value's own dtype may be half precision, float32 rounds a float64 value."""
    result = fix_source(textwrap.dedent(source), "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "keep-tensor" not in {a.fixer for a in result.applied}, result.source
    assert any(reason in r.reason for r in result.refused if r.fixer == "keep-tensor"), result.refused
