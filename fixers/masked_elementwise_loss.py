"""An elementwise loss over boolean-mask selections (DYN104 ``data-dependent-shape``) -> the loss over the
full shape, masked.

Before::

    pos_pred = box_pred[pos]
    pos_tgt = box_target[pos]
    reg = F.smooth_l1_loss(pos_pred, pos_tgt, reduction="sum")

After (``M`` the mask broadcast over the rows, ``pos.reshape(...)``)::

    reg = torch.where(M, F.smooth_l1_loss(torch.where(M, box_pred, 0), torch.where(M, box_target, 0),
                                          reduction="none"), 0).sum()

``x[mask]`` has a data-dependent number of rows, so Dynamo breaks the graph
there (and the code after it recompiles as that number changes).  An
elementwise loss (``l1_loss``, ``mse_loss``, ``smooth_l1_loss``, ``huber_loss``,
``binary_cross_entropy_with_logits``) of the selected rows is the same as the
loss of every row with the unselected ones zeroed by ``torch.where``: the sum is
the same, and the mean is that sum over the number of selected elements (NaN
for an empty selection, as before), divided before it is summed so that a
half-precision sum cannot overflow where the mean did not.  The selections may
be written inline or bound to names used only by the loss.

The unselected rows enter the loss as zeros (a double ``torch.where``), so a
NaN or inf there gives neither a NaN loss nor a NaN gradient.

Proves: the mask and both operands are pure (they are written several times),
and nothing between a selection and the loss rebinds what it reads.

Unsafe (hazards): the sum runs over more elements in another order, so the
result can differ in the last bits.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import single_index, walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch, variable_names
from dynalint.fixers.support.masks import broadcast_mask, masked_mean, same_shape_mask
from dynalint.fixers.support.purity import impurity

_F = "torch.nn.functional."
#: elementwise losses, with the keyword arguments that can stay as they are
_LOSSES = {
    _F + "l1_loss": (),
    _F + "mse_loss": (),
    _F + "smooth_l1_loss": ("beta",),
    _F + "huber_loss": ("delta",),
    _F + "binary_cross_entropy_with_logits": ("pos_weight",),
}


@register
class MaskedElementwiseLoss(Fixer):
    name = "masked-elementwise-loss"
    codes = ("DYN104",)
    safety = "unsafe"
    summary = "Compute an elementwise loss over the full shape and mask it, instead of over `x[mask]` rows."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def box_loss(box_pred, box_target, iou):
                    pos = iou > 0.5
                    pos_pred = box_pred[pos]
                    pos_tgt = box_target[pos]
                    return F.smooth_l1_loss(pos_pred, pos_tgt, reduction="sum") / pos.sum().clamp(min=1)
            """,
            after="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def box_loss(box_pred, box_target, iou):
                    pos = iou > 0.5
                    return torch.where(pos.reshape(pos.shape + (1,) * (box_pred.dim() - pos.dim())), F.smooth_l1_loss(torch.where(pos.reshape(pos.shape + (1,) * (box_pred.dim() - pos.dim())), box_pred, 0), torch.where(pos.reshape(pos.shape + (1,) * (box_target.dim() - pos.dim())), box_target, 0), reduction="none"), 0).sum() / pos.sum().clamp(min=1)
            """,
            inputs="[(torch.randn(12, 4), torch.randn(12, 4), torch.rand(12)) for _ in range(3)]",
        ),
        FixExample(
            before="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def valid_mse(pred, target):
                    valid = target > 0
                    return F.mse_loss(pred[valid], target[valid])
            """,
            after="""
                import torch
                import torch.nn.functional as F

                @torch.compile
                def valid_mse(pred, target):
                    valid = target > 0
                    return (torch.where(valid.reshape(valid.shape + (1,) * (pred.dim() - valid.dim())), F.mse_loss(torch.where(valid.reshape(valid.shape + (1,) * (pred.dim() - valid.dim())), pred, 0), torch.where(valid, target, 0), reduction="none"), 0) / valid.reshape(valid.shape + (1,) * (pred.dim() - valid.dim())).expand_as(pred).sum()).sum()
            """,
            inputs="[(torch.randn(3, 5), torch.randn(3, 5)) for _ in range(3)]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        sub = finding.node
        if single_index(sub) is None:
            return None
        call = _loss_call(sub, ctx)
        if call is None or ctx.program.index.resolve_expr(call.func) not in _LOSSES:
            return None  # not an elementwise loss of a selection
        return _rewrite(call, ctx)


def _loss_call(sub: cst.Subscript, ctx) -> cst.Call | None:
    """The call the selection is an argument of, directly or through a name bound to it."""
    parent = ctx.parent(sub)
    if isinstance(parent, cst.Assign):
        binding = _binding(parent, ctx)
        if binding is None:
            return None
        parent = ctx.parent(binding[1])
    call = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    return call if isinstance(call, cst.Call) else None


def _binding(assign: cst.Assign, ctx) -> tuple[cst.SimpleStatementLine, cst.Name] | None:
    """For ``name = <expr>`` alone on its line, with no comment: the line and the one later use of ``name``
    in the function (None if it is used more than once, or rebound)."""
    line = ctx.parent(assign)
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
            or not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if any(ll.comment is not None for ll in line.leading_lines) or line.trailing_whitespace.comment is not None:
        return None
    function = ctx.enclosing_function(assign)
    if function is None:
        return None
    name = assign.targets[0].target.value
    uses = [n for n, _ in variable_names(function.body) if n.value == name and n is not assign.targets[0].target]
    if len(uses) != 1 or isinstance(ctx.parent(uses[0]), cst.AssignTarget):
        return None
    return line, uses[0]


def _rewrite(call: cst.Call, ctx) -> FixPlan:
    q = ctx.program.index.resolve_expr(call.func)
    if q not in _LOSSES or any(a.star for a in call.args):
        raise Refused("not an elementwise loss of torch.nn.functional")
    positional = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    if len(positional) != 2 or not set(keywords) <= {"reduction", *_LOSSES[q]}:
        raise Refused("the loss has arguments whose meaning would change over the full shape")
    reduction = keywords.get("reduction")
    if reduction is None:
        mean = True
    elif isinstance(reduction.value, cst.SimpleString) and reduction.value.evaluated_value in ("mean", "sum"):
        mean = reduction.value.evaluated_value == "mean"
    else:
        raise Refused("the reduction is not a literal 'mean' or 'sum'")
    (base_in, mask, line_in), (base_tgt, mask_tgt, line_tgt) = (_selected(a.value, ctx) for a in positional)
    if ctx.code(mask).strip() != ctx.code(mask_tgt).strip():
        raise Refused("the two operands are selected by different masks")
    for expr, what in ((base_in, "the input"), (base_tgt, "the target"), (mask, "the mask")):
        reason = impurity(expr, ctx)
        if reason is not None:
            raise Refused(f"{what} is written several times and is not pure: {reason}")
    removed = [line for line in (line_in, line_tgt) if line is not None]
    _check_not_rebound(removed, call, (base_in, base_tgt, mask), ctx)
    plan = FixPlan("compute the loss over the full shape and mask it with torch.where instead of selecting rows",
                   "unsafe")
    torch = use_torch(plan, ctx, call)
    extra = "".join(f", {k}={ctx.code(a.value).strip()}" for k, a in keywords.items() if k != "reduction")
    m_in = broadcast_mask(base_in, mask, ctx)
    m_tgt = broadcast_mask(base_tgt, mask, ctx)
    pred = f"{torch}.where({m_in}, {ctx.code(base_in).strip()}, 0)"
    target = f"{torch}.where({m_tgt}, {ctx.code(base_tgt).strip()}, 0)"
    loss = f'{ctx.code(call.func).strip()}({pred}, {target}{extra}, reduction="none")'
    masked = f"{torch}.where({m_in}, {loss}, 0)"
    same = same_shape_mask(base_in, mask, ctx)
    code = masked_mean(masked, m_in, ctx.code(base_in).strip(), same) if mean else f"{masked}.sum()"
    new = cst.parse_expression(code).with_changes(lpar=call.lpar, rpar=call.rpar)
    plan.replace(call, new)
    for line in removed:
        plan.replace(line, cst.RemovalSentinel.REMOVE)
    return plan


def _selected(expr: cst.BaseExpression, ctx):
    """``(base, mask, line to remove)`` for ``base[mask]`` or a name bound to it."""
    parts = single_index(expr)
    if parts is not None:
        return (*parts, None)
    if isinstance(expr, cst.Name):
        function = ctx.enclosing_function(expr)
        assigns = [n for n in walk(function.body) if isinstance(n, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == expr.value for t in n.targets)] if function else []
        if len(assigns) == 1 and single_index(assigns[0].value) is not None:
            binding = _binding(assigns[0], ctx)
            if binding is not None and binding[1] is expr:
                return (*single_index(assigns[0].value), binding[0])
    raise Refused("an operand is not a boolean-mask selection")


def _check_not_rebound(lines: list[cst.SimpleStatementLine], call: cst.Call, exprs, ctx) -> None:
    """The selections move from their lines to the loss call: nothing in between may rebind what they read,
    and everything must sit in one block."""
    if not lines:
        return
    stmt = call
    while stmt is not None and not isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        stmt = ctx.parent(stmt)
    block = ctx.parent(stmt)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)) or any(ctx.parent(line) is not block for line in lines):
        raise Refused("the selections and the loss are not in one block")
    body = list(block.body)
    start = min(body.index(line) for line in lines)
    end = body.index(stmt)
    if start > end:
        raise Refused("a selection comes after the loss")
    read = {n.value for e in exprs for n in walk(e) if isinstance(n, cst.Name)}
    for between in body[start:end + 1]:
        for n in walk(between):
            targets = []
            if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For)):
                targets = [n.target]
            elif isinstance(n, cst.NamedExpr):
                targets = [n.target]
            elif isinstance(n, cst.AsName):
                targets = [n.name]
            if any(isinstance(t, cst.Name) and t.value in read for tgt in targets for t in walk(tgt)):
                raise Refused("a name the selection reads is rebound before the loss")
