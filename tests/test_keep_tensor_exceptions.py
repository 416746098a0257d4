"""keep-tensor keeps exception types: an operation that raised on the Python number (``math.log(0)``,
``1.0 / 0.0``, ``math.exp(1000)``) returns inf or NaN on a tensor, so the fixer rewrites only what it
proves inside its domain, and refuses the rest with the operation named."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

#: Edge inputs: zeros, negative, huge, infinite and NaN values, float32 as the code's `.float()` makes them.
EDGES = [
    "torch.zeros(4)", "-torch.ones(4)", "torch.tensor([-3.0, 2.0])", "torch.full((3,), 3e38)",
    "torch.tensor([1e-30, 1e-30])", "torch.tensor([inf, 1.0])", "torch.tensor([-inf, 1.0])",
    "torch.tensor([nan, 1.0])", "torch.randn(5)",
]


def _fix(source: str):
    return fix_source(textwrap.dedent(source).lstrip("\n"), "m.py", Settings(scope=Scope.ALL), unsafe=True)


def _run(code: str, inputs: str):
    """The output of ``f`` on ``inputs``, or the type of the exception it raised."""
    import torch

    namespace: dict = {}
    exec(compile(code, "m.py", "exec"), namespace)  # noqa: S102 - the cases are ours
    torch.manual_seed(0)
    x = eval(inputs, {"torch": torch, "inf": float("inf"), "nan": float("nan")})  # noqa: S307
    try:
        return namespace["f"](*x) if isinstance(x, tuple) else namespace["f"](x)
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error)


ACCEPTED = [
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().var().item()
            return x * (1.0 / math.sqrt(max(v, 1e-6)))
    """, "torch.sqrt(torch.clamp(v, min=1e-6))", id="divisor-clamped-positive"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().abs().mean().item()
            return x * math.exp(-v)
    """, "torch.exp(-v)", id="exp-of-a-non-positive"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().abs().max().item()
            return x / math.log(v + 1.0)
    """, "torch.log(v + 1.0)", id="log-of-non-negative-plus-one"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().mean().item()
            return x * math.sqrt(v * v)
    """, "torch.sqrt(v * v)", id="sqrt-of-a-square"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().std().item()
            return x * math.log1p(v) * (v % 3.0)
    """, "torch.log1p(v)", id="log1p-of-std-and-remainder-by-a-constant"),
    pytest.param("""
        import torch

        def f(x):
            v = x.float().norm().item()
            return x * (1.0 / (v + 1))
    """, "1.0 / (v + 1)", id="divisor-norm-plus-one"),
    pytest.param("""
        import torch

        def f(x):
            v = x.float().sum().item()
            return x * max(v, 0.0) ** 0.5
    """, "torch.clamp(v, min=0.0) ** 0.5", id="fractional-power-of-a-clamped-base"),
    pytest.param("""
        import math
        import torch

        def f(x):
            n = (x > 0).sum().item()
            return x * math.log(max(n, 1))
    """, "torch.log(torch.clamp(n, min=1))", id="log-of-a-count-at-least-one"),
]


@requires_torch
@pytest.mark.parametrize("source, rewritten", ACCEPTED)
@pytest.mark.parametrize("inputs", EDGES)
def test_a_proven_rewrite_keeps_outputs_and_exception_types(source, rewritten, inputs):
    import torch

    result = _fix(source)
    assert [a.fixer for a in result.applied] == ["keep-tensor"], result.refused
    assert rewritten in result.source, result.source
    original, kept = _run(textwrap.dedent(source).lstrip("\n"), inputs), _run(result.source, inputs)
    if isinstance(original, type):
        assert kept is original, (inputs, result.source)
    else:
        assert isinstance(kept, torch.Tensor), (kept, result.source)
        torch.testing.assert_close(kept, original, equal_nan=True)


REFUSED = [
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().min().item()
            return torch.tanh(x) * math.log(v)
    """, "`math.log` raises ValueError for an argument <= 0 where torch.log returns -inf/NaN: the argument `v` is "
         "not proven positive", "torch.zeros(3)", ValueError, id="log-of-a-minimum"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().mean().item()
            return x * math.sqrt(v)
    """, "`math.sqrt` raises ValueError for an argument < 0", "-torch.ones(3)", ValueError, id="sqrt-of-a-mean"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().sum().item()
            return x * math.exp(v)
    """, "`math.exp` raises OverflowError", "torch.full((4,), 300.0)", OverflowError, id="exp-of-a-sum"),
    pytest.param("""
        import math
        import torch

        def f(x):
            v = x.float().max().item()
            return x * math.sin(v)
    """, "`math.sin` raises ValueError for an infinite argument", "torch.tensor([inf, 1.0])", ValueError,
        id="sin-of-a-maximum"),
    pytest.param("""
        import math
        import torch

        def f(x, y):
            var = x.float().var().item()
            return y * (1.0 / math.sqrt(max(var, 1e-6) * y.shape[-1]))
    """, "`/` raises ZeroDivisionError for a divisor of 0 where the tensor division returns inf/NaN: the divisor "
         "`math.sqrt(max(var, 1e-6) * y.shape[-1])` is not proven nonzero", "(torch.randn(3), torch.zeros(2, 0))",
        ZeroDivisionError,
        id="an-empty-dimension-divides-by-zero"),
    pytest.param("""
        import torch

        def f(x):
            s = x.float().sum().item()
            return x * (1.0 / s)
    """, "the divisor `s` is not proven nonzero", "torch.zeros(3)", ZeroDivisionError, id="divisor-a-sum"),
    pytest.param("""
        import torch

        def f(x):
            s = x.float().sum().item()
            return x * (s // 0.5 + 1.0 % s)
    """, "`%` raises ZeroDivisionError", "torch.zeros(3)", ZeroDivisionError, id="modulo-by-a-sum"),
    pytest.param("""
        import torch

        def f(x):
            m = x.float().mean().item()
            return x * m ** 0.5
    """, "`**` gives a complex number for a negative base", "-torch.ones(3)", None, id="fractional-power"),
    pytest.param("""
        import torch

        def f(x):
            m = x.float().abs().min().item()
            return x * m ** -1.0
    """, "`**` raises ZeroDivisionError for 0 to a negative power", "torch.zeros(3)", ZeroDivisionError,
        id="negative-power-of-zero"),
    pytest.param("""
        import torch

        def f(x):
            m = x.float().abs().max().item()
            return x * m ** 9
    """, "`**` raises OverflowError past the float range", "torch.full((2,), 1e38)", OverflowError,
        id="power-overflow"),
    pytest.param("""
        import torch

        def f(x):
            v = x.float()[0].item()
            return x * v
    """, "is not proven 0-d", "torch.ones(2, 3)", RuntimeError, id="item-of-a-row"),
]


@requires_torch
@pytest.mark.parametrize("source, reason, edge, raised", REFUSED)
def test_an_unproven_domain_is_refused_with_the_operation_named(source, reason, edge, raised):
    """Refused, and for a reason: on the edge input the original code raises (or, for a negative base to a
    fractional power, turns complex), which the kept tensor would not."""
    import torch

    result = _fix(source)
    assert "keep-tensor" not in {a.fixer for a in result.applied}, result.source
    reasons = [r.reason for r in result.refused if r.fixer == "keep-tensor"]
    assert any(reason in r for r in reasons), reasons
    original = _run(textwrap.dedent(source).lstrip("\n"), edge)
    if raised is None:
        assert isinstance(original, torch.Tensor) and original.is_complex(), original
    else:
        assert original is raised, original
