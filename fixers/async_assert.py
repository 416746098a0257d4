"""Data-dependent validation (DYN101 ``tensor-condition``) -> an assertion that stays in the graph.

Before::

    if torch.isnan(x).any():
        raise ValueError("NaN in input")

After::

    torch._assert_async(~torch.isnan(x).any(), "NaN in input")

``torch._assert_async`` checks the condition inside the graph instead of
branching on it in Python (measured on torch 2.13: no break, and a failing
check raises).  Also applies to ``assert not <tensor>``, which breaks the graph
where ``assert <tensor>`` does not.

Proves, or refuses: the condition is a tensor for certain; the message is a
string literal (an f-string or a computed message would format tensors - which
breaks the graph again - or be lost); the raised exception is a plain
``Name`` or ``Name("literal")``.

Unsafe (hazards): the error becomes a ``RuntimeError`` (not the original
exception type, so an ``except ValueError`` no longer catches it); on
accelerators it is raised asynchronously, at a later synchronisation point; an
``assert`` rewritten this way still runs under ``python -O``.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import simple_statements, string_literal
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import paren, tensor_condition, use_torch


@register
class AsyncAssert(Fixer):
    name = "async-assert"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = "Rewrite `if <tensor>: raise ...` and `assert not <tensor>` into `torch._assert_async`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def checked(x):
                    if torch.isnan(x).any():
                        raise ValueError("NaN in input")
                    return x * 2
            """,
            after="""
                import torch

                @torch.compile
                def checked(x):
                    torch._assert_async(~torch.isnan(x).any(), "NaN in input")
                    return x * 2
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def checked(w):
                    assert not torch.isnan(w).any(), "bad weights"
                    return w + 1
            """,
            after="""
                import torch

                @torch.compile
                def checked(w):
                    torch._assert_async(~torch.isnan(w).any(), "bad weights")
                    return w + 1
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        stmt = finding.statement
        plan = FixPlan("check the condition inside the graph with torch._assert_async (raises RuntimeError)",
                       "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        if isinstance(stmt, cst.If) and stmt.orelse is None:
            body = simple_statements(stmt.body)
            if len(body) != 1 or not isinstance(body[0], cst.Raise):
                return None
            ok = _negated(stmt.test, ctx)
            if ok is None:
                raise Refused("the condition is not certainly a tensor")
            message = raise_message(body[0], ctx)
            new: cst.CSTNode = cst.parse_statement(f"{torch}._assert_async({ok}{message})")
            new = new.with_changes(leading_lines=stmt.leading_lines)
            target: cst.CSTNode = stmt
        elif isinstance(stmt, cst.Assert):
            cond = tensor_condition(stmt.test, ctx)
            if cond is None:
                raise Refused("the condition is not certainly a tensor")
            message = ""
            if stmt.msg is not None:
                if not string_literal(stmt.msg):
                    raise Refused("the message is not a string literal (it would format values, or be lost)")
                message = f", {ctx.code(stmt.msg).strip()}"
            target = stmt
            new = cst.parse_expression(f"{torch}._assert_async({cond}{message})")
            new = cst.Expr(new)
        else:
            return None
        return plan.replace(target, new)


def _negated(test: cst.BaseExpression, ctx) -> str | None:
    """A boolean tensor that is true when ``test`` is false (``not x`` gives ``x`` back)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return tensor_condition(test.expression, ctx)
    cond = tensor_condition(test, ctx)
    return None if cond is None else f"~{paren(cond)}"


def raise_message(raise_stmt: cst.Raise, ctx) -> str:
    """The message argument (``", msg"`` or ``""``) of ``raise E`` / ``raise E("literal")``; anything
    else is refused."""
    exc = raise_stmt.exc
    if isinstance(exc, (cst.Name, cst.Attribute)) or isinstance(exc, cst.Call) and not exc.args:
        return ""
    if isinstance(exc, cst.Call) and len(exc.args) == 1 and exc.args[0].keyword is None \
            and not exc.args[0].star and string_literal(exc.args[0].value):
        return f", {ctx.code(exc.args[0].value).strip()}"
    raise Refused("the exception's message is not a string literal (it would format values, or be lost)")
