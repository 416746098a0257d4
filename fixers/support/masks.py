"""A boolean mask that selects leading dimensions of a tensor (``x[m]``), written so that it
broadcasts over the tensor (shared by the rewrites of masked selections)."""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import Refused
from dynalint.fixers.support.branches import shape_token
from dynalint.fixers.support.codegen import paren


def same_shape_mask(base: cst.BaseExpression, mask: cst.BaseExpression, ctx) -> bool:
    """The mask provably has the tensor's shape: computed elementwise from it (``pos = x > 0``)."""
    token = shape_token(mask, ctx)
    return token is not None and not token.startswith("<") and "|" not in token and \
        token in (shape_token(base, ctx, resolve=False), shape_token(base, ctx))


def broadcast_mask(base: cst.BaseExpression, mask: cst.BaseExpression, ctx) -> str:
    """``mask`` (which selects leading dimensions of ``base``, as in ``base[mask]``) as an expression
    that broadcasts over ``base``: the mask itself when it has the tensor's shape, otherwise the
    mask with as many trailing unit dimensions as the tensor has more.  Refused for a mask that is not a
    tensor (a list of Python bools indexes like a bool tensor, but has neither ``reshape`` nor ``sum``)."""
    value = ctx.value(mask)
    if value is not None and value.kind is not Kind.TENSOR:
        raise Refused("the mask is not a tensor (a list of Python bools selects as one, but cannot be reshaped)")
    m = ctx.code(mask).strip()
    if same_shape_mask(base, mask, ctx):
        return m
    pm = paren(m)
    return f"{pm}.reshape({pm}.shape + (1,) * ({paren(ctx.code(base).strip())}.dim() - {pm}.dim()))"


def masked_mean(masked: str, mask: str, base: str, same_shape: bool) -> str:
    """The mean of the selected elements, as ``(torch.where(mask, x, 0) / count).sum()``: dividing
    before summing keeps a half-precision sum of large values from overflowing where the mean of the
    selection does not; an empty selection gives NaN (0 / 0), as the mean of an empty tensor does."""
    count = f"{paren(mask)}.sum()" if same_shape else f"{paren(mask)}.expand_as({paren(base)}).sum()"
    return f"({masked} / {count}).sum()"
