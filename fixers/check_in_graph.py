"""A check that reads a tensor on the host (DYN102 ``scalar-extraction``) -> the same check inside the graph.

Before::

    torch._check_tensor_all(mask >= 0)
    torch._check((x > 0).all().item())

After::

    torch._assert_async((mask >= 0).all())
    torch._assert_async((x > 0).all())

``torch._check_tensor_all(cond)`` reads ``cond._is_all_true().item()`` in Python,
and ``torch._check(t.item())`` / ``assert t.item()`` read ``t``: each ends the
graph (measured on torch 2.13: an ``Unsupported Tensor.item()`` break).
``torch._assert_async`` tests the same value inside the graph (no break; a
failing check still raises).

Proves, or refuses: the call is one of torch's checks; a ``.item()`` or
``bool()`` read is of a tensor for certain (and ``torch._check(t.item())`` of a
bool tensor: any other dtype makes ``torch._check`` raise ``TypeError``); the message is absent, a string
literal or a ``lambda`` returning one (a computed message would be lost); the
check's result is not used.  The value tested is the same: an all-true test of
a bool tensor keeps ``_is_all_true()`` where the condition is not provably
bool (that op, too, rejects any other dtype), an empty condition passes both
ways, and a tensor of several elements raises both ways in ``.item()`` form.

Unsafe (hazards): a failing check raises ``RuntimeError``: a rewritten
``assert`` no longer raises ``AssertionError``, ``_check_tensor_all_with`` no
longer raises its own exception type, and a condition that is not a bool tensor
no longer raises ``TypeError``; on accelerators the check is asynchronous
(raised at a later synchronisation point, as a device-side assert); an
``assert`` rewritten this way still runs under ``python -O``.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent
from dynalint.analysis.knowledge import TENSOR_CHECKS
from dynalint.analysis.syntax import string_literal
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import certain_tensor, paren, use_torch


@register
class CheckInGraph(Fixer):
    name = "check-in-graph"
    codes = ("DYN102",)
    safety = "unsafe"
    summary = "Rewrite checks that read a tensor on the host (`torch._check_tensor_all`, " \
              "`torch._check(t.item())`, `assert t.item()`) into `torch._assert_async`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def positions(x):
                    torch._check_tensor_all(x.abs() < 100, lambda: "out of range")
                    return x * 2
            """,
            after="""
                import torch

                @torch.compile
                def positions(x):
                    torch._assert_async((x.abs() < 100).all(), "out of range")
                    return x * 2
            """,
        ),
        FixExample(
            before="""
                import torch

                def check(cond, msg):
                    if isinstance(cond, torch.Tensor):
                        torch._check_tensor_all(cond)
                    else:
                        torch._check(cond)

                @torch.compile
                def scaled(x):
                    check(x > -100, "out of range")
                    return x * 2
            """,
            after="""
                import torch

                def check(cond, msg):
                    if isinstance(cond, torch.Tensor):
                        torch._assert_async(cond._is_all_true())
                    else:
                        torch._check(cond)

                @torch.compile
                def scaled(x):
                    check(x > -100, "out of range")
                    return x * 2
            """,
        ),
        FixExample(
            before="""
                import torch

                def check(cond):
                    import torch

                    if isinstance(cond, torch.Tensor):
                        torch._check_tensor_all(cond)

                @torch.compile
                def scaled(x):
                    check(x > -100)
                    return x * 2
            """,
            after="""
                import torch

                def check(cond):
                    import torch

                    if isinstance(cond, torch.Tensor):
                        torch._assert_async(cond._is_all_true())

                @torch.compile
                def scaled(x):
                    check(x > -100)
                    return x * 2
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def bounded(x):
                    torch._check((x.abs() < 100).all().item())
                    assert (x == x).all().item(), "NaN"
                    return x + 1
            """,
            after="""
                import torch

                @torch.compile
                def bounded(x):
                    torch._assert_async((x.abs() < 100).all())
                    torch._assert_async((x == x).all(), "NaN")
                    return x + 1
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        node = finding.node
        if not isinstance(node, cst.Call):
            return None
        parent = ctx.parent(node)
        qualname = _qualname(node, ctx)
        plan = FixPlan("check the value inside the graph with torch._assert_async (raises RuntimeError)", "unsafe")
        if qualname in TENSOR_CHECKS:
            stmt = _statement_of(parent)
            args = _plain_args(node)
            with_type = qualname.endswith("_with")
            if len(args) not in ((2, 3) if with_type else (1, 2)):
                raise Refused("the check's arguments are not plain positional ones")
            cond = args[1] if with_type else args[0]
            message = _message(args[-1] if len(args) == (3 if with_type else 2) else None, lambda_ok=True)
            torch = use_torch(plan, ctx, finding.node)
            return plan.replace(stmt, _assert(torch, _all_true(cond, ctx), message, stmt))
        # ``torch._check(t.item())`` / ``assert t.item()`` (and ``bool(t)``)
        tensor = _read_tensor(node, ctx)
        if tensor is None:
            return None
        outer = parent.value if isinstance(parent, cst.Arg) else None
        holder = ctx.parent(parent) if isinstance(parent, cst.Arg) else parent
        if isinstance(holder, cst.Call) and _qualname(holder, ctx) == "torch._check":
            args = _plain_args(holder)
            if not args or args[0] is not outer or len(args) > 2:
                return None
            value = ctx.value(tensor)
            if _is_item(node) and not (value is not None and value.is_bool):
                raise Refused("torch._check of a non-bool .item() raises TypeError; the tensor is not provably bool")
            stmt = _statement_of(ctx.parent(holder))
            message = _message(args[1] if len(args) == 2 else None, lambda_ok=True)
        elif isinstance(holder, cst.Assert) and holder.test is node:
            stmt = holder
            message = _message(holder.msg, lambda_ok=False)
        else:
            return None
        torch = use_torch(plan, ctx, finding.node)
        return plan.replace(stmt, _assert(torch, ctx.code(tensor).strip(), message, stmt))


def _qualname(call: cst.Call, ctx) -> str | None:
    ev = ctx.event(call, CallEvent)
    return ev.qualname if ev is not None else None


def _statement_of(parent: cst.CSTNode | None) -> cst.Expr:
    """The expression statement a check stands in alone (its result unused)."""
    if not isinstance(parent, cst.Expr):
        raise Refused("the check's result is used")
    return parent


def _plain_args(call: cst.Call) -> list[cst.BaseExpression]:
    if any(a.star or a.keyword is not None for a in call.args):
        raise Refused("the check has keyword or starred arguments")
    return [a.value for a in call.args]


def _message(expr: cst.BaseExpression | None, *, lambda_ok: bool) -> str | None:
    """The literal message, or None; anything computed is refused (it would be lost)."""
    if expr is None or isinstance(expr, cst.Name) and expr.value == "None":
        return None
    if lambda_ok and isinstance(expr, cst.Lambda) and not expr.params.params and string_literal(expr.body):
        expr = expr.body
    if string_literal(expr):
        return cst.Module([]).code_for_node(expr).strip()
    raise Refused("the message is not a string literal (it would be computed, or lost)")


def _all_true(cond: cst.BaseExpression, ctx) -> str:
    """``cond.all()`` for a provably bool tensor, else ``cond._is_all_true()`` (which rejects other
    dtypes as the check does)."""
    value = ctx.value(cond)
    code = paren(ctx.code(cond).strip())
    if value is not None and value.is_tensor and value.is_bool and certain_tensor(cond, ctx):
        return f"{code}.all()"
    return f"{code}._is_all_true()"


def _is_item(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "item"


def _read_tensor(call: cst.Call, ctx) -> cst.BaseExpression | None:
    """``t`` for ``t.item()`` / ``bool(t)`` with ``t`` certainly a tensor."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "item" and not call.args:
        inner = call.func.value
    elif isinstance(call.func, cst.Name) and call.func.value == "bool" and len(call.args) == 1 \
            and not call.args[0].star and call.args[0].keyword is None \
            and "bool" not in ctx.program.index.functions:
        inner = call.args[0].value
    else:
        return None
    if not certain_tensor(inner, ctx):
        raise Refused("the value read is not certainly a tensor")
    return inner


def _assert(torch: str, cond: str, message: str | None, stmt: cst.CSTNode) -> cst.CSTNode:
    text = f"{torch}._assert_async({cond}{'' if message is None else ', ' + message})"
    new = cst.Expr(cst.parse_expression(text))
    if isinstance(stmt, cst.Expr):
        return stmt.with_changes(value=new.value)
    return new.with_changes(semicolon=getattr(stmt, "semicolon", cst.MaybeSentinel.DEFAULT))
