"""Bounds on the values of number and tensor expressions, and what they prove about operations on
Python numbers.

A rewrite that computes on a 0-d tensor what the code computed on a Python number changes what
happens outside the number's domain: ``math.log(0)`` raises ``ValueError`` where ``torch.log``
returns ``-inf``, ``1.0 / 0.0`` raises ``ZeroDivisionError`` where a tensor division returns inf,
``math.exp(1000)`` and ``1e200 ** 2`` raise ``OverflowError`` where torch returns inf.  Such a
rewrite keeps exception types only when every operation it moves is proven inside its domain.

:func:`bounds` is a small interval analysis over the expression: the range ``[lo, hi]`` that every
value of the expression that is not NaN lies in (NaN never raises: ``math.log(nan)`` and ``1.0 /
nan`` are NaN).  It knows the ranges of what is non-negative or bounded by construction (``abs``,
even powers, ``exp``, norms, variances, sizes, softmax and sigmoid results, clamps and ``max`` with
a constant) and carries them through arithmetic.  On Python numbers the bounds are computed with
Python's own float operations: rounding to nearest is monotone, so the rounded operation on the
bounds bounds the rounded operation on the values.  A tensor may compute in lower precision, so the
bounds of a tensor expression are widened at each step, unless they are exact in every floating
dtype (0, +-1, +-inf, small integers, powers of two): a positive bound below half precision's
smallest step becomes 0 (it may underflow), a finite bound beyond its largest value becomes
infinite, and any other bound moves outwards by a relative margin that covers its rounding.

:func:`number_operation_raises` says why an operation on Python numbers may raise where the same
operation on tensors does not, or None when its operands are proven inside its domain.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import libcst as cst

from dynalint.analysis.values import Kind
from dynalint.fixers.support.branches import only_binding
from dynalint.fixers.support.codegen import builtin_class
from dynalint.fixers.support.purity import is_pure

INF = math.inf
_DEPTH = 12
_HALF_TINY = 2.0 ** -24
"""Half precision's smallest positive value: a positive bound above it stays positive once rounded."""
_HALF_MAX = 65504.0
_MARGIN = 1e-2
"""Relative widening of a tensor expression's bounds, above the rounding of one step in half
precision (2**-11) and bfloat16 (2**-8, about 0.004)."""


@dataclass(frozen=True)
class Bounds:
    """Every value that is not NaN lies in ``[lo, hi]`` (either end may be infinite)."""

    lo: float = -INF
    hi: float = INF

    @property
    def positive(self) -> bool:
        return self.lo > 0

    @property
    def non_negative(self) -> bool:
        return self.lo >= 0

    @property
    def nonzero(self) -> bool:
        return self.lo > 0 or self.hi < 0

    @property
    def finite(self) -> bool:
        return -INF < self.lo and self.hi < INF

    def within(self, lo: float, hi: float) -> bool:
        return lo <= self.lo and self.hi <= hi


ANY = Bounds()
NON_NEGATIVE = Bounds(0.0, INF)
UNIT = Bounds(0.0, 1.0)


def bounds(expr: cst.BaseExpression, ctx, depth: int = 0) -> Bounds:
    """The bounds of ``expr`` (:class:`Bounds`); :data:`ANY` when nothing is proven."""
    if depth > _DEPTH:
        return ANY
    found = _bounds(expr, ctx, depth + 1)
    value = ctx.value(expr)
    if value is not None and value.kind is Kind.TENSOR and not isinstance(expr, cst.Name):
        return _rounded(found)  # a name stands for an expression already rounded
    return found


def _bounds(expr: cst.BaseExpression, ctx, depth: int) -> Bounds:
    value = ctx.value(expr)
    const = getattr(value, "const", None)
    if isinstance(const, (int, float)) and not isinstance(const, bool) and not math.isnan(const):
        return Bounds(const, const)
    if value is not None and value.is_bool:
        return UNIT  # a mask, or a Python bool
    if isinstance(expr, (cst.Integer, cst.Float)):
        number = expr.evaluated_value
        return Bounds(number, number)
    if isinstance(expr, cst.Name):
        bound = only_binding(expr, ctx)
        return ANY if bound is None else bounds(bound, ctx, depth)
    if isinstance(expr, cst.UnaryOperation):
        inner = bounds(expr.expression, ctx, depth)
        if isinstance(expr.operator, cst.Minus):
            return Bounds(-inner.hi, -inner.lo)
        return inner if isinstance(expr.operator, cst.Plus) else ANY
    if isinstance(expr, cst.BinaryOperation):
        return _binary(expr, ctx, depth)
    if isinstance(expr, cst.IfExp):
        a, b = bounds(expr.body, ctx, depth), bounds(expr.orelse, ctx, depth)
        return Bounds(min(a.lo, b.lo), max(a.hi, b.hi))
    if isinstance(expr, cst.Attribute) and expr.attr.value == "ndim":
        return NON_NEGATIVE
    if isinstance(expr, cst.Subscript):
        if isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
            return NON_NEGATIVE  # a size
        base = ctx.value(expr.value)
        if base is not None and base.kind is Kind.TENSOR:
            return bounds(expr.value, ctx, depth)  # elements of the tensor
        return ANY
    if isinstance(expr, cst.Call):
        return _call(expr, ctx, depth)
    return ANY


def _binary(expr: cst.BinaryOperation, ctx, depth: int) -> Bounds:
    op = expr.operator
    if isinstance(op, cst.Multiply) and _same(expr.left, expr.right, ctx):
        return _power(bounds(expr.left, ctx, depth), 2)
    a, b = bounds(expr.left, ctx, depth), bounds(expr.right, ctx, depth)
    if isinstance(op, cst.Add):
        return Bounds(_sum(a.lo, b.lo, -INF), _sum(a.hi, b.hi, INF))
    if isinstance(op, cst.Subtract):
        return Bounds(_sum(a.lo, -b.hi, -INF), _sum(a.hi, -b.lo, INF))
    if isinstance(op, cst.Multiply):
        products = [0.0 if math.isnan(p) else p for p in (x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi))]
        return Bounds(min(products), max(products))  # 0 * inf: the product of 0 and a finite number is 0
    if isinstance(op, cst.Divide) and b.nonzero:
        quotients = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return ANY if any(math.isnan(q) for q in quotients) else Bounds(min(quotients), max(quotients))
    if isinstance(op, cst.Modulo) and b.positive:
        return Bounds(0.0, b.hi)  # the remainder takes the divisor's sign, in Python and in torch
    if isinstance(op, cst.Power):
        exponent = _literal(expr.right)
        return ANY if exponent is None else _power(a, exponent)
    return ANY


def _sum(x: float, y: float, nan_as: float) -> float:
    total = x + y
    return nan_as if math.isnan(total) else total


def _same(a: cst.BaseExpression, b: cst.BaseExpression, ctx) -> bool:
    """``a`` and ``b`` are one value: the same code, evaluated without side effects."""
    return ctx.code(a).strip() == ctx.code(b).strip() and is_pure(a, ctx)


def _literal(expr: cst.BaseExpression) -> float | int | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _literal(expr.expression)
        return None if inner is None else -inner
    return expr.evaluated_value if isinstance(expr, (cst.Integer, cst.Float)) else None


def _power(base: Bounds, exponent: float | int) -> Bounds:
    """Bounds of ``x ** exponent`` for ``x`` within ``base`` (a float result: overflow gives inf)."""
    if exponent == 0:
        return Bounds(1.0, 1.0)
    integral = float(exponent).is_integer()
    if integral and int(exponent) % 2 == 0:
        low = 0.0 if base.lo <= 0 <= base.hi else min(abs(base.lo), abs(base.hi))
        high = max(abs(base.lo), abs(base.hi))
        ends = sorted((_pow(low, exponent), _pow(high, exponent)))
        return Bounds(*ends)
    if base.non_negative or integral:  # monotone over the base's range
        if exponent < 0 and not base.nonzero:
            return ANY
        ends = sorted((_pow(base.lo, exponent), _pow(base.hi, exponent)))
        return Bounds(*ends)
    return ANY


def _pow(x: float, exponent: float | int) -> float:
    try:
        return float(x) ** exponent
    except OverflowError:
        return math.copysign(INF, x) if float(exponent).is_integer() and int(exponent) % 2 else INF
    except ZeroDivisionError:
        return INF


def _rounded(b: Bounds) -> Bounds:
    """``b`` widened to hold for a tensor computed in any floating dtype (see the module docstring)."""
    return Bounds(_round_end(b.lo, -1), _round_end(b.hi, 1))


def _round_end(end: float, outwards: int) -> float:
    if _exact(end):
        return end
    if (end > 0) == (outwards > 0):  # widening moves the end away from 0
        return outwards * INF if abs(end) > _HALF_MAX else end * (1 + _MARGIN)
    return 0.0 if abs(end) <= _HALF_TINY else end * (1 - _MARGIN)  # a tiny end may underflow to 0


def _exact(x: float) -> bool:
    """``x`` is exact in every floating dtype (0, +-inf, +-1, small integers, powers of two): a correctly
    rounded operation whose exact result lies within ``x`` gives a result within ``x``."""
    if x == 0 or math.isinf(x):
        return True
    mantissa, exponent = math.frexp(abs(x))
    return (mantissa * 256).is_integer() and -14 < exponent and abs(x) <= _HALF_MAX


def _monotone(fn: Callable[[float], float]) -> Callable[[Bounds], Bounds]:
    """The bounds of an increasing function, evaluated at the ends (overflow gives inf, and an end outside
    the domain gives the function's limit there)."""

    def at(x: float, limit: float) -> float:
        try:
            return fn(x)
        except OverflowError:
            return INF
        except ValueError:
            return limit

    return lambda b: Bounds(at(b.lo, -INF), at(b.hi, INF))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


_INCREASING: dict[str, Callable[[Bounds], Bounds]] = {
    name: _monotone(fn) for name, fn in {
        "exp": math.exp, "expm1": math.expm1, "log": math.log, "log2": math.log2, "log10": math.log10,
        "log1p": math.log1p, "sqrt": math.sqrt, "tanh": math.tanh, "atan": math.atan, "erf": math.erf,
        "sinh": math.sinh, "sigmoid": _sigmoid, "asinh": math.asinh}.items()}
_WITHIN: dict[str, Bounds] = {"sin": Bounds(-1.0, 1.0), "cos": Bounds(-1.0, 1.0), "erfc": Bounds(0.0, 2.0),
                              "softmax": UNIT, "log_softmax": Bounds(-INF, 0.0), "cosh": Bounds(1.0, INF),
                              "norm": NON_NEGATIVE, "vector_norm": NON_NEGATIVE, "matrix_norm": NON_NEGATIVE,
                              "var": NON_NEGATIVE, "std": NON_NEGATIVE, "numel": NON_NEGATIVE,
                              "nelement": NON_NEGATIVE, "dim": NON_NEGATIVE, "size": NON_NEGATIVE,
                              "len": NON_NEGATIVE, "count_nonzero": NON_NEGATIVE}
_BUILTINS = frozenset({"abs", "max", "min", "len", "float", "int"})
"""The builtins whose result the bounds follow (by the value the analysis gave the name, as for any builtin)."""
_KEEP = frozenset({"amax", "amin", "mean", "nanmean", "detach", "clone", "contiguous", "flatten", "reshape", "view",
                   "squeeze", "unsqueeze", "item"})
"""Tensor methods whose values lie within the range of their tensor's (reductions and views)."""
_KEEP_WHOLE = frozenset({"max", "min", "median"})
"""Reductions that keep the range when they reduce the whole tensor (along a dimension they give a pair)."""
_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "to", "type"})
_ACCUMULATE = frozenset({"sum", "nansum", "prod", "cumsum", "cumprod"})


def _call(call: cst.Call, ctx, depth: int) -> Bounds:
    name, operand, rest = _callee(call, ctx)
    if name is None:
        return ANY
    if name in _WITHIN:
        return _WITHIN[name]
    if operand is None:
        return ANY
    inner = bounds(operand, ctx, depth)
    if name in _INCREASING:
        return _INCREASING[name](inner)
    if name in ("abs", "fabs"):
        return _abs(inner)
    if name == "square":
        return _power(inner, 2)
    if name == "relu":
        return Bounds(max(inner.lo, 0.0), max(inner.hi, 0.0))
    if name in ("max", "min") and rest and builtin_class(call.func, ctx, name):
        others = [bounds(a, ctx, depth) for a in rest]
        pick = max if name == "max" else min
        return Bounds(pick([inner.lo, *(o.lo for o in others)]), pick([inner.hi, *(o.hi for o in others)]))
    if name in ("clamp", "clip", "clamp_min", "clamp_max"):
        return _clamp(call, name, inner, ctx, depth)
    if name in _KEEP or name in _KEEP_WHOLE and not rest:
        return inner
    if name in ("float", "int") and builtin_class(call.func, ctx, name):
        return _cast(inner) if name == "int" else inner  # float() of a number or a 0-d tensor is exact
    if name in _CASTS:
        return _cast(inner)
    if name in _ACCUMULATE:
        if inner.non_negative:
            return NON_NEGATIVE
        return Bounds(-INF, 0.0) if inner.hi <= 0 and name in ("sum", "nansum", "cumsum") else ANY
    return ANY


def _callee(call: cst.Call, ctx) -> tuple[str | None, cst.BaseExpression | None, list[cst.BaseExpression]]:
    """(function name, the operand it computes on, its other positional arguments) for a tensor method
    (``x.exp()``), a ``torch``/``math`` function (``torch.exp(x)``), or a builtin (``abs(x)``)."""
    if any(a.star for a in call.args):
        return None, None, []
    positional = [a.value for a in call.args if a.keyword is None]
    func = call.func
    qualname = ctx.program.index.resolve_expr(func)
    if qualname is not None:
        module, _, name = qualname.rpartition(".")
        if module in ("math", "torch", "torch.special", "torch.linalg", "torch.nn.functional"):
            return name, positional[0] if positional else None, positional[1:]
        return None, None, []
    if isinstance(func, cst.Attribute):
        owner = ctx.value(func.value)
        if owner is not None and owner.kind is Kind.TENSOR:
            return func.attr.value, func.value, positional
        return None, None, []
    if isinstance(func, cst.Name) and func.value in _BUILTINS and builtin_class(func, ctx, func.value):
        return func.value, positional[0] if positional else None, positional[1:]
    return None, None, []


def _abs(b: Bounds) -> Bounds:
    if b.non_negative:
        return b
    if b.hi <= 0:
        return Bounds(-b.hi, -b.lo)
    return Bounds(0.0, max(-b.lo, b.hi))


def _cast(b: Bounds) -> Bounds:
    """A conversion to another dtype keeps the order and the sign of values, not their size (an integer
    dtype truncates, a narrower float rounds or overflows)."""
    lo = 1.0 if b.lo >= 1 else 0.0 if b.lo >= 0 else -INF
    hi = -1.0 if b.hi <= -1 else 0.0 if b.hi <= 0 else INF
    return Bounds(lo, hi)


def _clamp(call: cst.Call, name: str, inner: Bounds, ctx, depth: int) -> Bounds:
    positional = [a.value for a in call.args if a.keyword is None]
    if ctx.program.index.resolve_expr(call.func) is not None:
        positional = positional[1:]  # torch.clamp(x, ...)
    keyword = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    names = {"clamp_min": ("min",), "clamp_max": ("max",)}.get(name, ("min", "max"))
    given = dict(zip(names, positional)) | {k: v for k, v in keyword.items() if k in names}
    lo, hi = inner.lo, inner.hi
    if "min" in given:
        low = bounds(given["min"], ctx, depth)
        lo, hi = max(lo, low.lo), max(hi, low.hi)
    if "max" in given:
        high = bounds(given["max"], ctx, depth)
        lo, hi = min(lo, high.lo), min(hi, high.hi)
    return Bounds(lo, hi)


@dataclass(frozen=True)
class _Domain:
    holds: Callable[[Bounds], bool]
    raises: str
    torch_gives: str
    proven: str


_MATH_DOMAINS: dict[str, _Domain] = {
    "sqrt": _Domain(lambda b: b.non_negative, "ValueError for an argument < 0", "NaN", "non-negative"),
    "log": _Domain(lambda b: b.positive, "ValueError for an argument <= 0", "-inf/NaN", "positive"),
    "log2": _Domain(lambda b: b.positive, "ValueError for an argument <= 0", "-inf/NaN", "positive"),
    "log10": _Domain(lambda b: b.positive, "ValueError for an argument <= 0", "-inf/NaN", "positive"),
    "log1p": _Domain(lambda b: b.lo > -1, "ValueError for an argument <= -1", "-inf/NaN", "greater than -1"),
    "exp": _Domain(lambda b: b.hi <= 700, "OverflowError for an argument above about 709.78", "inf",
                   "at most 700"),
    "expm1": _Domain(lambda b: b.hi <= 700, "OverflowError for an argument above about 709.78", "inf",
                     "at most 700"),
    "sinh": _Domain(lambda b: b.within(-700, 700), "OverflowError for an argument beyond about +-710",
                    "+-inf", "within [-700, 700]"),
    "cosh": _Domain(lambda b: b.within(-700, 700), "OverflowError for an argument beyond about +-710", "inf",
                    "within [-700, 700]"),
    "sin": _Domain(lambda b: b.finite, "ValueError for an infinite argument", "NaN", "finite"),
    "cos": _Domain(lambda b: b.finite, "ValueError for an infinite argument", "NaN", "finite"),
    "tan": _Domain(lambda b: b.finite, "ValueError for an infinite argument", "NaN", "finite"),
    "asin": _Domain(lambda b: b.within(-1, 1), "ValueError outside [-1, 1]", "NaN", "within [-1, 1]"),
    "acos": _Domain(lambda b: b.within(-1, 1), "ValueError outside [-1, 1]", "NaN", "within [-1, 1]"),
    "lgamma": _Domain(lambda b: b.positive and b.hi <= 1e300,
                      "ValueError at 0 and the negative integers and OverflowError above about 2.5e305", "inf",
                      "positive and at most 1e300"),
}
"""Where each ``math`` function raises (measured on CPython 3 against torch 2.13); the others
(``tanh``, ``atan``, ``fabs``, ``erf``, ``erfc``) raise for no number."""


def number_operation_raises(node: cst.CSTNode, ctx) -> str | None:
    """Why ``node`` -- a ``math`` call or an arithmetic operation on Python numbers, to be computed on
    tensors instead -- may raise where the tensor operation returns inf or NaN; None when its operands
    are proven inside its domain."""
    if isinstance(node, cst.Call):
        qualname = ctx.program.index.resolve_expr(node.func) or ""
        module, _, name = qualname.rpartition(".")
        domain = _MATH_DOMAINS.get(name) if module == "math" else None
        if domain is None or domain.holds(bounds(node.args[0].value, ctx)):
            return None
        return (f"`math.{name}` raises {domain.raises} where torch.{name} returns {domain.torch_gives}: "
                f"the argument `{ctx.code(node.args[0].value).strip()}` is not proven {domain.proven}")
    if not isinstance(node, cst.BinaryOperation):
        return None
    op = node.operator
    symbol = ctx.code(op).strip()
    right = ctx.code(node.right).strip()
    if isinstance(op, (cst.Divide, cst.FloorDivide, cst.Modulo)):
        if bounds(node.right, ctx).nonzero:
            return None
        return (f"`{symbol}` raises ZeroDivisionError for a divisor of 0 where the tensor division returns inf/NaN: "
                f"the divisor `{right}` is not proven nonzero")
    if isinstance(op, cst.Power):
        return _power_raises(node, ctx)
    if isinstance(op, (cst.Add, cst.Subtract, cst.Multiply)):
        return None  # inf or NaN on floats, exact on integers
    return (f"`{symbol}` on Python numbers raises for a float (TypeError) or a negative shift where the tensor "
            "operation raises another error or none: not carried over")


def _power_raises(node: cst.BinaryOperation, ctx) -> str | None:
    base, exponent = bounds(node.left, ctx), bounds(node.right, ctx)
    left, right = ctx.code(node.left).strip(), ctx.code(node.right).strip()
    integral = exponent.lo == exponent.hi and float(exponent.lo).is_integer()
    if exponent.lo < 0 and not base.nonzero:
        return (f"`**` raises ZeroDivisionError for 0 to a negative power where torch.pow returns inf: "
                f"the base `{left}` is not proven nonzero or the exponent `{right}` non-negative")
    if not base.non_negative and not integral:
        return (f"`**` gives a complex number for a negative base to a fractional power where torch.pow returns "
                f"NaN: the base `{left}` is not proven non-negative or the exponent `{right}` an integer")
    smallest = 0.0 if base.lo <= 0 <= base.hi else min(abs(base.lo), abs(base.hi))
    largest = max(abs(base.lo), abs(base.hi))
    if exponent.finite and not any(_overflows(smallest, largest, e) for e in (exponent.lo, exponent.hi)):
        return None  # for one base, the power is monotone in the exponent: its ends bound it
    return (f"`**` raises OverflowError past the float range where torch.pow returns inf: `{left} ** {right}` "
            "is not proven to stay finite")


def _overflows(smallest: float, largest: float, exponent: float) -> bool:
    """A finite base of a magnitude within ``[smallest, largest]`` to ``exponent`` may overflow (an infinite
    base gives inf or 0 without raising)."""
    if 0 <= exponent <= 1:
        return False
    if exponent > 1:
        return not math.isfinite(_pow(largest, exponent))
    return smallest == 0 or not math.isfinite(_pow(smallest, exponent))
