"""Tensor-valued ``if``/``elif``/``else`` and conditional expressions (DYN101 ``tensor-condition``) ->
``torch.where``.

Before::

    if x.sum() > 0:
        y = x * 2
    else:
        y = x - 1

After::

    y_then = x * 2
    y_else = x - 1
    y = torch.where(x.sum() > 0, y_then, y_else)

Both sides are computed and the result is selected elementwise, so the graph
has no branch.

Proves, or refuses: the condition is a tensor for certain (not an unannotated
parameter the analysis only takes for one) and pure (no walrus: it is read
after the branches run, which bind only fresh names); the branches only
bind names or return, with pure values (no random, in-place, I/O or unknown
calls, no module calls); every selected pair has provably the same shape (the
same tensor's shape, or both 0-d: never a reduction against a full tensor, never
a Python number) and the same dtype (an ``int`` literal on one side and a
``float`` on the other would promote); no side evaluates an op that is singular
on part of its domain (a division by a non-literal not proven non-zero, ``sqrt``,
``log``, ``exp``, a non-integer power...), because under ``torch.where`` the side a
guard kept from running is evaluated too, and its inf/NaN turns the gradient into
NaN; no side reduces a selection that may be empty (a boolean mask, an index
tensor) with an op that raises on an empty tensor (``max``, ``argmin``,
``median``...: the guard ``if mask.any():`` is there for it), while a mean loss
of an empty selection gives a NaN that reaches no gradient; a call of a function
of the file counts as pure when its body only computes; a name bound in a branch
and not merged is read nowhere else.

Unsafe (hazards): both sides are computed for every input, so an error raised
by the side not taken (an out-of-range index, a failed check) now raises, and
a side whose derivative overflows without a singular op (a huge product) can
still give a NaN gradient; a tensor that only the side not selected reads gets
a zero gradient instead of ``None``.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.breaks import Cause
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.branches import (
    Unsupported,
    branch_tag,
    chain,
    check_augmented,
    names_around,
    next_statement,
    renamed_assignment,
    resolved,
    floating_names,
    same_dtype,
    same_shape,
    singular_op,
    statements,
    target_name,
)
from dynalint.fixers.support.codegen import rename, tensor_condition, use_torch
from dynalint.fixers.support.purity import impurity
from dynalint.fixers.support.ranges import bounds


@register
class BranchToWhere(Fixer):
    name = "branch-to-where"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = "Rewrite a tensor-valued `if`/`else` (or `a if cond else b`) into `torch.where`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def step(x):
                    if x.sum() > 0:
                        y = x * 2
                    else:
                        y = x - 1
                    return y
            """,
            after="""
                import torch

                @torch.compile
                def step(x):
                    y_then = x * 2
                    y_else = x - 1
                    y = torch.where(x.sum() > 0, y_then, y_else)
                    return y
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def pick(h):
                    spread = h.std()
                    if spread > 1.5:
                        return torch.tanh(h)
                    elif h.min() < -2.0:
                        return torch.nn.functional.gelu(h)
                    else:
                        return torch.sigmoid(h)
            """,
            after="""
                import torch

                @torch.compile
                def pick(h):
                    spread = h.std()
                    return torch.where(spread > 1.5, torch.tanh(h), torch.where(h.min() < -2.0, torch.nn.functional.gelu(h), torch.sigmoid(h)))
            """,
            inputs="[(torch.randn(8),), (torch.randn(8) * 3,), (torch.randn(8) - 2,)]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def clean(g):
                    if not torch.isfinite(g).all():
                        g = torch.nan_to_num(g, nan=0.0)
                    return g.clamp(-10.0, 10.0)
            """,
            after="""
                import torch

                @torch.compile
                def clean(g):
                    g_then = torch.nan_to_num(g, nan=0.0)
                    g = torch.where(~torch.isfinite(g).all(), g_then, g)
                    return g.clamp(-10.0, 10.0)
            """,
            inputs="[(torch.randn(6),), (torch.tensor([1.0, float('nan'), 2.0]),)]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def safe_loss(loss, logits):
                    if torch.isnan(loss) or torch.isinf(loss):
                        return torch.zeros_like(loss)
                    return loss
            """,
            after="""
                import torch

                @torch.compile
                def safe_loss(loss, logits):
                    return torch.where(torch.isnan(loss) | torch.isinf(loss), torch.zeros_like(loss), loss)
            """,
            inputs="[(torch.tensor(0.5), torch.randn(3)), (torch.tensor(float('nan')), torch.randn(3))]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def scale(x):
                    return x * 2 if x.mean() > 0 else x
            """,
            after="""
                import torch

                @torch.compile
                def scale(x):
                    return torch.where(x.mean() > 0, x * 2, x)
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        stmt = finding.statement
        try:
            if isinstance(stmt, cst.If):
                return self._plan_if(stmt, ctx)
            parent = ctx.parent(finding.node)
            if isinstance(parent, cst.IfExp) and parent.test is finding.node:
                return self._plan_ifexp(parent, ctx)
        except Unsupported:
            return None  # a statement shape the rewrite does not handle (torch.cond may)
        return None

    # ------------------------------------------------------------------ a if c else b
    def _plan_ifexp(self, node: cst.IfExp, ctx) -> FixPlan | None:
        cond = _condition(node.test, ctx)
        for side in (node.body, node.orelse):
            _check_value(side, ctx)
        _check_selection(ctx, node, [node.body, node.orelse])
        plan = FixPlan("select with torch.where instead of a conditional expression", "unsafe")
        torch = use_torch(plan, ctx, node)
        code = f"{torch}.where({cond}, {ctx.code(node.body).strip()}, {ctx.code(node.orelse).strip()})"
        new = cst.parse_expression(code).with_changes(lpar=node.lpar, rpar=node.rpar)
        return plan.replace(node, new)

    # ------------------------------------------------------------------ if / elif / else
    def _plan_if(self, node: cst.If, ctx) -> FixPlan | None:
        parent = ctx.parent(node)
        is_elif = isinstance(parent, cst.If) and parent.orelse is node
        if is_elif:
            pv = ctx.value(parent.test)
            if pv is None or pv.is_tensor:
                return None  # the outer `if` is rewritten as a whole
        conds, bodies, else_body = chain(node)
        branches = [statements(b) for b in bodies]
        else_stmts = statements(else_body) if else_body is not None else None
        for stmts in branches + ([else_stmts] if else_stmts is not None else []):
            for _, small in stmts:
                _check_statement(small, ctx)
        cond_codes = [_condition(c, ctx) for c in conds]
        ends_in_return = [bool(s) and isinstance(s[-1][1], cst.Return) for s in branches]
        any_return = any(isinstance(small, cst.Return) for s in branches + [else_stmts or []] for _, small in s)
        plan = FixPlan("", "unsafe")
        torch = use_torch(plan, ctx, node)
        if any_return:
            if not all(ends_in_return):
                return None
            fallthrough = None
            if else_stmts is None:
                if is_elif:
                    return None
                fallthrough = next_statement(node, ctx)
                if fallthrough is None or not isinstance(fallthrough[1], cst.Return):
                    return None
                else_stmts = [fallthrough]
            elif not (else_stmts and isinstance(else_stmts[-1][1], cst.Return)):
                return None
            new_lines = self._returns(node, ctx, torch, cond_codes, branches + [else_stmts])
            if new_lines is None:
                return None
            if fallthrough is not None:
                plan.replace(fallthrough[0], cst.RemovalSentinel.REMOVE)
            plan.description = f"return {torch}.where(...) instead of branching on a tensor"
        else:
            new_lines = self._assignments(node, ctx, torch, cond_codes, branches, else_stmts)
            if new_lines is None:
                return None
            plan.description = f"compute both branches and select with {torch}.where"
        if is_elif:
            replacement = cst.Else(body=node.body.with_changes(body=new_lines))
            return plan.replace(node, replacement)
        new_lines[0] = new_lines[0].with_changes(leading_lines=node.leading_lines)
        return plan.replace(node, cst.FlattenSentinel(new_lines))

    def _returns(self, node, ctx, torch, conds, branches):
        function = ctx.enclosing_function(node)
        taken: set[str] = set()
        lines: list[cst.BaseStatement] = []
        results: list[cst.BaseExpression] = []
        for i, stmts in enumerate(branches):
            tag = branch_tag(i, len(branches))
            mapping: dict[str, str] = {}
            for line, small in stmts[:-1]:
                new_line, mapping = renamed_assignment(line, small, mapping, tag, ctx, function, taken, True)
                lines.append(new_line)
            ret = stmts[-1][1]
            if ret.value is None:
                return None
            results.append(rename(ret.value, mapping))
        returned = [s[-1][1].value for s in branches]
        if all(isinstance(r, cst.Tuple) for r in returned) and len({len(r.elements) for r in returned}) == 1:
            for k in range(len(returned[0].elements)):
                _check_selection(ctx, node, [resolved([r.elements[k].value], branches)[0] for r in returned])
        else:
            _check_selection(ctx, node, resolved(returned, branches))
        codes = [ctx.code(r).strip() for r in results]
        tuples = [r for r in results if isinstance(r, cst.Tuple)]
        if tuples and len(tuples) == len(results) and len({len(t.elements) for t in tuples}) == 1:
            parts = [[ctx.code(el.value).strip() for el in t.elements] for t in tuples]
            selected = [_nested_where(torch, conds, [p[k] for p in parts]) for k in range(len(parts[0]))]
            value = "(" + ", ".join(selected) + ("," if len(selected) == 1 else "") + ")"
        elif tuples:
            return None
        else:
            value = _nested_where(torch, conds, codes)
        lines.append(cst.parse_statement(f"return {value}"))
        return lines

    def _assignments(self, node, ctx, torch, conds, branches, else_stmts):
        function = ctx.enclosing_function(node)
        all_branches = branches + ([else_stmts] if else_stmts is not None else [])
        assigned = [[target_name(small) for _, small in stmts if not isinstance(small, cst.Pass)]
                    for stmts in all_branches]
        names: list[str] = []
        for a in assigned:
            names.extend(n for n in a if n not in names)
        if not names:
            return None
        before, after = names_around(node, function)
        elsewhere = _names_read_outside(node, function)
        merged = []
        for n in names:
            in_all = else_stmts is not None and all(n in a for a in assigned)
            if in_all or n in before:
                merged.append(n)
            elif n in after or n in elsewhere:
                raise Refused(f"`{n}` is bound on some paths only and read elsewhere")
        taken: set[str] = set()
        lines: list[cst.BaseStatement] = []
        finals: list[dict[str, str]] = []
        for i, stmts in enumerate(all_branches):
            tag = branch_tag(i, len(all_branches))
            mapping: dict[str, str] = {}
            for line, small in stmts:
                if isinstance(small, cst.Pass):
                    continue
                new_line, mapping = renamed_assignment(line, small, mapping, tag, ctx, function, taken, True)
                lines.append(new_line)
            finals.append(mapping)
        values_by_name = {n: [] for n in merged}
        for stmts in all_branches:
            for _, small in stmts:
                if not isinstance(small, cst.Pass) and target_name(small) in values_by_name:
                    values_by_name[target_name(small)].append(_effective_value(small))
        for n in merged:
            kept = not (all(n in a for a in assigned) and else_stmts is not None)
            _check_selection(ctx, node, resolved(values_by_name[n], all_branches), n if kept else None)
        hoist = len(merged) > 1
        cond_names = conds
        if hoist:
            cond_names = []
            for c in conds:
                name = ctx.fresh_name("cond", function or ctx.module, taken)
                taken.add(name)
                cond_names.append(name)
                lines.insert(len(cond_names) - 1, cst.parse_statement(f"{name} = {c}"))
        for n in merged:
            alternatives = [finals[i].get(n, n) for i in range(len(branches))]
            alternatives.append(finals[len(branches)].get(n, n) if else_stmts is not None else n)
            lines.append(cst.parse_statement(f"{n} = {_nested_where(torch, cond_names, alternatives)}"))
        return lines


# --------------------------------------------------------------------------- helpers


_BINARY = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
           cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo,
           cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.BitAndAssign: cst.BitAnd,
           cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor}


def _effective_value(small: cst.CSTNode) -> cst.BaseExpression:
    """The value a statement binds: ``x + v`` for ``x += v``."""
    if isinstance(small, cst.AugAssign):
        return cst.BinaryOperation(left=small.target, operator=_BINARY[type(small.operator)](), right=small.value)
    return small.value


def _condition(test: cst.BaseExpression, ctx) -> str:
    """The condition as a boolean tensor expression, when it is certainly a tensor and pure."""
    cond = tensor_condition(test, ctx)
    if cond is None:
        raise Refused("the condition is not certainly a tensor")
    reason = impurity(test, ctx)
    if reason is not None:
        raise Refused(f"the condition is evaluated at another point and is not pure: {reason}")
    return cond


def _check_value(value: cst.BaseExpression, ctx) -> None:
    """A side of the selection is evaluated for every input: pure, and no singular op."""
    reason = impurity(value, ctx)
    if reason is not None:
        raise Refused(f"both sides would be evaluated and one is not pure: {reason}")
    singular = singular_op(value, lambda divisor: bounds(divisor, ctx).nonzero)
    if singular is not None:
        raise Refused(f"both sides would be evaluated: {singular} on the side not taken (NaN gradient)")
    empty = _raises_when_empty(value, ctx)
    if empty is not None:
        raise Refused(f"both sides would be evaluated: `{ctx.code(empty).strip()}` raises on an empty selection, "
                      "which the side not taken may be (the test guards it)")


#: reductions without an identity: of an empty tensor they raise (``max(): Expected reduction dim``)
_RAISE_WHEN_EMPTY = frozenset({"max", "min", "argmax", "argmin", "amax", "amin", "aminmax", "median", "nanmedian",
                               "mode", "kthvalue", "topk", "quantile", "nanquantile"})


def _raises_when_empty(value: cst.BaseExpression, ctx) -> cst.Call | None:
    """A reduction of ``value`` that raises on an empty tensor, applied to a selection that may be empty:
    an op of a data-dependent number of elements (``nonzero()``, a boolean mask: a break the analysis
    found there), or indexing with a tensor, or with what the analysis cannot tell from one (a mask
    argument, an empty index)."""
    sized = {id(b.node) for b in ctx.breaks if b.cause in (Cause.MASK_INDEX, Cause.DYNAMIC_SHAPE_OP)}

    def selects(node: cst.CSTNode) -> bool:
        if id(node) in sized:
            return True
        if isinstance(node, cst.Subscript):
            for element in node.slice:
                if isinstance(element.slice, cst.Index):
                    index = ctx.value(element.slice.value)
                    if index is None or index.kind in (Kind.TENSOR, Kind.UNKNOWN, Kind.SEQUENCE):
                        return True
        return False

    for node in walk(value):
        if isinstance(node, cst.Call) and isinstance(node.func, (cst.Attribute, cst.Name)):
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
            if name in _RAISE_WHEN_EMPTY and any(selects(n) for n in walk(node)):
                return node
    return None


def _check_selection(ctx, node: cst.CSTNode, values, fallback: str | None = None) -> None:
    """The alternatives ``torch.where`` selects between have one shape and one dtype."""
    if not same_shape(ctx, *values, fallback=fallback, strict=True):
        raise Refused("the alternatives are not provably of one shape (torch.where would broadcast)")
    if not same_dtype(ctx, *values, fallback=fallback, floating=floating_names(node, ctx)):
        raise Refused("the alternatives are not provably of one dtype (torch.where would promote)")


def _names_read_outside(node: cst.CSTNode, function: cst.FunctionDef | None) -> set[str]:
    """Names read in the function outside ``node`` (before it too: a loop reads them again)."""
    if function is None:
        return set()
    inside = {id(n) for n in walk(node)}
    return {n.value for n in walk(function.body) if isinstance(n, cst.Name) and id(n) not in inside}


def _check_statement(small: cst.CSTNode, ctx) -> None:
    if isinstance(small, cst.Pass):
        return
    if isinstance(small, cst.Return):
        if small.value is None:
            raise Unsupported
        _check_value(small.value, ctx)
        return
    if isinstance(small, cst.Assign):
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            raise Unsupported
    elif isinstance(small, cst.AugAssign):
        check_augmented(small, ctx)
    elif isinstance(small, cst.AnnAssign):
        if small.value is None or not isinstance(small.target, cst.Name):
            raise Unsupported
    else:
        raise Unsupported
    _check_value(small.value, ctx)


def _nested_where(torch: str, conds: list[str], values: list[str]) -> str:
    """``torch.where(c1, v1, torch.where(c2, v2, v3))``."""
    out = values[-1]
    for cond, value in zip(reversed(conds), reversed(values[:-1])):
        out = f"{torch}.where({cond}, {value}, {out})"
    return out
