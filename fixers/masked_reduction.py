"""Boolean-mask indexing (DYN104 ``data-dependent-shape``) -> shape-static masked operations.

``x[m]`` has as many elements as ``m`` has ``True`` values, so its size is data
dependent.  When the selection is immediately reduced or updated, the same
result is computed over the full, static shape:

- ``x[m].sum()`` -> ``torch.where(M, x, 0).sum()``;
- ``x[m].mean()`` -> ``(torch.where(M, x, 0) / M.expand_as(x).sum()).sum()``;
- ``x[m] += v`` (a number) -> ``x.copy_(torch.where(M, x + v, x))`` (still in place).

``M`` is ``m`` itself when it provably has the shape of ``x`` (computed from ``x``
elementwise: ``pos = x > 0``), and otherwise the mask reshaped to broadcast over
the trailing dimensions it does not cover
(``m.reshape(m.shape + (1,) * (x.dim() - m.dim()))``: the ranks are not known).  The mean divides before it sums
(``(torch.where(M, x, 0) / count).sum()``), so a half-precision sum of the
selection cannot overflow where its mean did not; an empty selection still
gives NaN.

Proves: the mask and ``x`` are pure (they are written several times: a mask
drawn from ``torch.rand`` would be drawn again for the count), and an in-place
update adds a plain Python number.  Refuses otherwise.

Unsafe (hazards): the sum runs over more elements in another order, so a
floating-point result can differ in the last bits; the mean of an integer ``x``
raised an error and now returns a float; a mean whose sum overflows the dtype
(float32 values near its maximum) was ``inf`` and is now the finite mean.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import single_index
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import paren, use_torch
from dynalint.fixers.support.masks import broadcast_mask, masked_mean, same_shape_mask
from dynalint.fixers.support.purity import impurity

_AUG = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/"}


@register
class MaskedReduction(Fixer):
    name = "masked-reduction"
    codes = ("DYN104",)
    safety = "unsafe"
    summary = "Rewrite `x[mask]` that is reduced or updated right away into a static-shape masked operation."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def positive_sum(x):
                    return x[x > 0].sum() * 2
            """,
            after="""
                import torch

                @torch.compile
                def positive_sum(x):
                    return torch.where(x > 0, x, 0).sum() * 2
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def positive_mean(x):
                    pos = x > 0
                    return x[pos].mean()
            """,
            after="""
                import torch

                @torch.compile
                def positive_mean(x):
                    pos = x > 0
                    return (torch.where(pos, x, 0) / pos.sum()).sum()
            """,
            inputs="[(torch.randn(4, 3),), (torch.randn(2, 5),)]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def row_mean(x, scores):
                    keep = scores > 0
                    return x[keep].mean()
            """,
            after="""
                import torch

                @torch.compile
                def row_mean(x, scores):
                    keep = scores > 0
                    return (torch.where(keep.reshape(keep.shape + (1,) * (x.dim() - keep.dim())), x, 0) / keep.reshape(keep.shape + (1,) * (x.dim() - keep.dim())).expand_as(x).sum()).sum()
            """,
            inputs="[(torch.randn(5, 3), torch.tensor([1.0, -1.0, 2.0, 0.5, -3.0])),"
                   " (torch.randn(5, 3), torch.tensor([-1.0, 1.0, 1.0, 1.0, 1.0]))]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def bump(x):
                    x = x.clone()
                    mask = x < 0
                    x[mask] += 1
                    return x
            """,
            after="""
                import torch

                @torch.compile
                def bump(x):
                    x = x.clone()
                    mask = x < 0
                    x.copy_(torch.where(mask, x + 1, x))
                    return x
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        sub = finding.node
        parts = single_index(sub)
        if parts is None:
            return None
        mask = parts[1]
        plan = FixPlan("", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        return self._reduction(sub, mask, ctx, torch, plan) or self._update(finding, sub, mask, ctx, torch, plan)

    def _reduction(self, sub, mask, ctx, torch, plan: FixPlan) -> FixPlan | None:
        attr = ctx.parent(sub)
        call = ctx.parent(attr) if isinstance(attr, cst.Attribute) else None
        if not (isinstance(attr, cst.Attribute) and attr.value is sub and isinstance(call, cst.Call)
                and call.func is attr and not call.args and attr.attr.value in ("sum", "mean")):
            return None
        _check_pure(sub, mask, ctx)
        base = ctx.code(sub.value).strip()
        m = broadcast_mask(sub.value, mask, ctx)
        masked = f"{torch}.where({m}, {base}, 0)"
        if attr.attr.value == "mean":
            selected = masked_mean(masked, m, base, same_shape_mask(sub.value, mask, ctx))
        else:
            selected = f"{masked}.sum()"
        new = cst.parse_expression(selected).with_changes(lpar=call.lpar, rpar=call.rpar)
        plan.description = f"reduce over the full shape with {torch}.where instead of a boolean-mask selection"
        return plan.replace(call, new)

    def _update(self, finding, sub, mask, ctx, torch, plan: FixPlan) -> FixPlan | None:
        stmt = finding.statement
        if not (isinstance(stmt, cst.AugAssign) and stmt.target is sub and type(stmt.operator) in _AUG):
            return None
        _check_pure(sub, mask, ctx)
        v = ctx.value(stmt.value)
        if v is None or v.kind is not Kind.PYTHON or not isinstance(stmt.value, (cst.Integer, cst.Float)):
            raise Refused("the update is not a number literal (a tensor or unknown value could change the dtype)")
        base = ctx.code(sub.value).strip()
        m = broadcast_mask(sub.value, mask, ctx)
        op = _AUG[type(stmt.operator)]
        code = f"{base}.copy_({torch}.where({m}, {paren(base)} {op} {paren(ctx.code(stmt.value).strip())}, {base}))"
        new = cst.Expr(cst.parse_expression(code))
        plan.description = "update in place with torch.where over the full shape instead of through a boolean mask"
        return plan.replace(stmt, new)


def _check_pure(sub: cst.Subscript, mask: cst.BaseExpression, ctx) -> None:
    """The selected tensor and the mask are written several times: they must be pure."""
    for expr, what in ((sub.value, "the selected tensor"), (mask, "the mask")):
        reason = impurity(expr, ctx)
        if reason is not None:
            raise Refused(f"{what} is written several times and is not pure: {reason}")
