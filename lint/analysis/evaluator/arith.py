"""Operators on abstract values: the value of ``a <op> b`` and constant folding.

Pure functions of :class:`~dynalint.analysis.values.Value`, kept apart from the evaluator's state and
shared by binary operators, comparisons and augmented assignment.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.values import (
    DYNAMIC_SIZE,
    NO_CONST,
    SIZE_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join,
    python,
    derived,
    sequence,
    tensor,
)


def arith(left: Value, right: Value, op: cst.CSTNode | None) -> Value:
    """The value of ``left <op> right`` (also used for comparisons, op=None)."""
    kinds = (left.kind, right.kind)
    if Kind.TENSOR in kinds:
        if any(v.kind is Kind.TENSOR and v.maybe_none for v in (left, right)):
            return Value(Kind.UNKNOWN, params=left.params | right.params)
        if Kind.MODULE in kinds or Kind.FUNCTION in kinds:
            return UNKNOWN_VALUE
        # a tensor combined with anything that works is a tensor
        # bitwise operators and products of boolean tensors (`(~y) * (d < margin)`) keep the bool dtype
        bool_op = isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Multiply))
        ranks = [0 if v.zero_dim else v.ndim for v in (left, right) if v.kind is Kind.TENSOR]
        return tensor(
            is_bool=bool_op and left.is_bool and right.is_bool,
            params=left.params | right.params,
            from_weights=all(v.from_weights if v.kind is Kind.TENSOR else v.kind is not Kind.UNKNOWN
                             for v in (left, right)),
            zero_dim=all(v.zero_dim for v in (left, right) if v.kind is Kind.TENSOR),
            **derived((left, right)),
        ).with_(qualname=_array_of(left, right),
                ndim=max(ranks) if None not in ranks and ranks else None,  # (broadcasting: the larger rank)
                lifted=all(v.lifted if v.kind is Kind.TENSOR else v.kind is Kind.PYTHON and not v.is_mapping
                           for v in (left, right)))
    if Kind.UNKNOWN in kinds or Kind.MODULE in kinds or Kind.FUNCTION in kinds:
        return Value(Kind.UNKNOWN, params=left.params | right.params)
    if Kind.SEQUENCE in kinds:
        if left.kind is Kind.SEQUENCE and right.kind is Kind.SEQUENCE:
            items = None
            if left.items is not None and right.items is not None:
                items = left.items + right.items
            return sequence(items=items, element=join(left.elements(), right.elements()))
        seq = left if left.kind is Kind.SEQUENCE else right
        return sequence(element=seq.elements())
    if Kind.SCALAR in kinds:
        scalars = [v for v in (left, right) if v.kind is Kind.SCALAR]
        return Value(Kind.SCALAR, origin=scalars[0].origin, origin_in_loop=scalars[0].origin_in_loop,
                     is_bool=op is None, from_weights=all(v.from_weights for v in scalars))
    dynamic = op is not None and (left.dynamic or right.dynamic)  # (a comparison gives a bool)
    if Kind.SIZE in kinds:
        return DYNAMIC_SIZE if dynamic else SIZE_VALUE
    const = NO_CONST
    if left.has_const and right.has_const and op is not None:
        const = _fold(op, left.const, right.const)
    elif isinstance(op, (cst.BitOr, cst.BitAnd)) and left.is_bool and right.is_bool:
        # `flag |= other_flag`: True absorbs `|`, False absorbs `&`
        absorbing = isinstance(op, cst.BitOr)
        if any(v.has_const and v.const is absorbing for v in (left, right)):
            const = absorbing
    is_bool = left.is_bool and right.is_bool and isinstance(op, (cst.BitOr, cst.BitAnd, cst.BitXor))
    out = python(const, is_bool=is_bool or isinstance(const, bool))
    if not dynamic or const is not NO_CONST:
        return out
    floats = isinstance(op, cst.Divide) or "builtins.float" in (left.qualname, right.qualname)
    return out.with_(dynamic=True, qualname="builtins.float") if floats else out.with_(dynamic=True)


def _array_of(left: Value, right: Value) -> str | None:
    """NumPy's array qualname when every tensor operand is a NumPy array (the result is one too)."""
    tensors = [v for v in (left, right) if v.kind is Kind.TENSOR]
    return K.NUMPY_ARRAY if all(v.qualname == K.NUMPY_ARRAY for v in tensors) else None


#: ``x |= y`` computes ``x | y`` (the operators constant folding understands).
_AUGMENTED: dict[type, type] = {cst.BitOrAssign: cst.BitOr, cst.BitAndAssign: cst.BitAnd,
                                cst.BitXorAssign: cst.BitXor}


def _fold(op: cst.CSTNode, a: Any, b: Any) -> Any:
    try:
        if not (isinstance(a, (int, float, str)) and isinstance(b, (int, float, str))):
            return NO_CONST
        if isinstance(op, cst.Add):
            return a + b
        if isinstance(op, cst.Subtract):
            return a - b
        if isinstance(op, cst.Multiply) and not isinstance(a, str) and not isinstance(b, str):
            return a * b
        if isinstance(a, bool) and isinstance(b, bool) and isinstance(op, (cst.BitOr, cst.BitAnd, cst.BitXor)):
            return a | b if isinstance(op, cst.BitOr) else a & b if isinstance(op, cst.BitAnd) else a ^ b
    except Exception:
        return NO_CONST
    return NO_CONST


def _compare(op: cst.CSTNode, a: Any, b: Any) -> Any:
    """A comparison of two constants, as Python (and Dynamo, while tracing) decides it; an ordering only of
    numbers or of tuples of them (versions: ``version.parse(torch.__version__) >= version.parse("2.3")``)."""
    if isinstance(op, cst.Equal):
        return a == b
    if isinstance(op, cst.NotEqual):
        return a != b
    order = _ORDERINGS.get(type(op))
    if order is not None and _orderable(a) and _orderable(b) and isinstance(a, tuple) == isinstance(b, tuple):
        return order(a, b)
    return NO_CONST


_ORDERINGS: dict[type, Callable[[Any, Any], bool]] = {
    cst.LessThan: operator.lt, cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}


def _orderable(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(_orderable(i) and not isinstance(i, tuple) for i in v)
    return isinstance(v, (int, float)) and not isinstance(v, bool)
