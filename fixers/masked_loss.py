"""``F.cross_entropy(logits[m], labels[m])`` (DYN104 ``data-dependent-shape``) -> mark masked-out targets with
``ignore_index``.

Before::

    keep = labels != -100
    loss = F.cross_entropy(logits[keep], labels[keep])

After::

    keep = labels != -100
    loss = F.cross_entropy(logits.flatten(0, -2), labels.masked_fill(~keep, -100).flatten(), ignore_index=-100)

Selecting rows with a boolean mask gives a data-dependent number of rows; the
loss already knows how to skip targets equal to ``ignore_index``, with the same
mean (over the kept targets) and the same sum.  The mask may cover several
dimensions (a padded token loss: ``(B, T, C)`` logits, ``(B, T)`` labels and
mask): the rows are flattened into one, as the selection does, which leaves
``(N, C)`` logits and ``(N,)`` labels unchanged.

Proves, or refuses: both operands are selected by the same mask; the mask
provably has the target's shape (it is computed elementwise from the target,
as ``labels != -100`` is: a mask from elsewhere could cover only leading
dimensions); the mask and the operands are pure; the reduction is a literal
``"mean"`` or ``"sum"``.

Unsafe (hazards): it assumes class-index targets, so that the selected target is
1-D and the logits have one class dimension after the mask's (probability
targets do not support ``ignore_index``: a float target of the logits' shape now
raises); the unselected rows now go through ``log_softmax``, so a NaN or inf in
them gives NaN gradients for those rows.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import single_index
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.branches import shape_token
from dynalint.fixers.support.codegen import paren
from dynalint.fixers.support.purity import impurity

_LOSSES = ("torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss")


@register
class MaskedLoss(Fixer):
    name = "masked-loss"
    codes = ("DYN104",)
    safety = "unsafe"
    summary = "Replace row selection by a boolean mask inside `cross_entropy`/`nll_loss` by `ignore_index`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def drop_ignored(logits, labels, ignore_index=-100):
                    keep = labels != ignore_index
                    return F.cross_entropy(logits[keep], labels[keep])
            """,
            after="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def drop_ignored(logits, labels, ignore_index=-100):
                    keep = labels != ignore_index
                    return F.cross_entropy(logits.flatten(0, -2), labels.masked_fill(~keep, -100).flatten(), ignore_index=-100)
            """,
            inputs="[(torch.randn(6, 3), torch.tensor([0, -100, 2, 1, -100, 0])),"
                   " (torch.randn(6, 3), torch.tensor([1, 1, -100, 2, 0, 0]))]",
        ),
        FixExample(
            before="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def token_loss(logits, tags):
                    padded = tags < 0
                    return F.cross_entropy(logits[~padded], tags[~padded])
            """,
            after="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def token_loss(logits, tags):
                    padded = tags < 0
                    return F.cross_entropy(logits.flatten(0, -2), tags.masked_fill(padded, -100).flatten(), ignore_index=-100)
            """,
            inputs="[(torch.randn(2, 3, 3), torch.tensor([[0, 2, -1], [1, -1, -1]])),"
                   " (torch.randn(2, 3, 5), torch.tensor([[4, 2, 1], [0, 3, -1]]))]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        sub = finding.node
        parts = single_index(sub)
        if parts is None:
            return None
        mask = parts[1]
        arg = ctx.parent(sub)
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or ctx.program.index.resolve_expr(call.func) not in _LOSSES:
            return None
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) < 2 or positional[0] is not arg:
            return None
        target = positional[1].value
        target_parts = single_index(target)
        if target_parts is None or ctx.code(target_parts[1]).strip() != ctx.code(mask).strip():
            return None
        if not _shaped_like(mask, target_parts[0], ctx):
            raise Refused("the mask is not provably of the target's shape (computed from the target elementwise): "
                          "it could cover only leading dimensions of the target, which ignore_index cannot express")
        for expr, what in ((sub.value, "the input"), (target_parts[0], "the target"), (mask, "the mask")):
            reason = impurity(expr, ctx)
            if reason is not None:
                raise Refused(f"{what} is not pure: {reason}")
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        reduction = keywords.get("reduction")
        if reduction is not None and not (isinstance(reduction.value, cst.SimpleString)
                                          and reduction.value.evaluated_value in ("mean", "sum")):
            return None
        ignore = keywords.get("ignore_index")
        ignore_code = ctx.code(ignore.value).strip() if ignore is not None else "-100"
        labels = ctx.code(target_parts[0]).strip()
        new_args = [positional[0].with_changes(value=cst.parse_expression(
                        f"{paren(ctx.code(sub.value).strip())}.flatten(0, -2)")),
                    positional[1].with_changes(value=cst.parse_expression(
                        f"{paren(labels)}.masked_fill({_kept_out(mask, ctx)}, {ignore_code}).flatten()"))]
        rest = [a for a in call.args if a not in positional[:2]]
        if ignore is None:
            rest.append(cst.Arg(keyword=cst.Name("ignore_index"), value=cst.parse_expression(ignore_code),
                                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                      whitespace_after=cst.SimpleWhitespace(""))))
        # default commas: libcst puts ", " between the arguments
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in (*new_args, *rest)]
        new = call.with_changes(args=args)
        return FixPlan("mark masked-out targets with ignore_index instead of selecting rows (assumes class-index "
                       "targets)", "unsafe").replace(call, new)


def _shaped_like(mask: cst.BaseExpression, target: cst.BaseExpression, ctx) -> bool:
    """The mask provably has the target's shape: their shape tokens name the same tensor."""
    token = shape_token(mask, ctx)
    return token is not None and not token.startswith("<") and "|" not in token and \
        token in (shape_token(target, ctx, resolve=False), shape_token(target, ctx))


def _kept_out(mask: cst.BaseExpression, ctx) -> str:
    """The negation of the mask, as a person writes it (``~(~m)`` is ``m``)."""
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return ctx.code(mask.expression).strip()
    return f"~{paren(ctx.code(mask).strip())}"
