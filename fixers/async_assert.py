"""Data-dependent validation -> an assertion that stays in the graph.

Before::

    if torch.isnan(x).any():
        raise ValueError("NaN in input")

After::

    torch._assert_async(~torch.isnan(x).any(), "NaN in input")

``torch._assert_async`` checks the condition inside the graph instead of
branching on it in Python (measured on torch 2.13: no break, and a failing
check raises).  Also applies to ``assert not <tensor>``, which breaks the graph
where ``assert <tensor>`` does not.  Unsafe: the error becomes a
``RuntimeError`` (not the original exception type), and on accelerators it is
raised asynchronously, at a later synchronisation point.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import simple_statements
from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.codegen import paren, tensor_condition, torch_name


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
        torch = torch_name(ctx) or "torch"
        if isinstance(stmt, cst.If) and stmt.orelse is None:
            body = simple_statements(stmt.body)
            if len(body) != 1 or not isinstance(body[0], cst.Raise):
                return None
            ok = _negated(stmt.test, ctx)
            if ok is None:
                return None
            message = _message(body[0], ctx)
            new: cst.CSTNode = cst.parse_statement(f"{torch}._assert_async({ok}{message})")
            new = new.with_changes(leading_lines=stmt.leading_lines)
            target: cst.CSTNode = stmt
        elif isinstance(stmt, cst.Assert):
            cond = tensor_condition(stmt.test, ctx)
            if cond is None:
                return None
            message = ""
            if stmt.msg is not None and isinstance(stmt.msg, (cst.SimpleString, cst.ConcatenatedString)):
                message = f", {ctx.code(stmt.msg).strip()}"
            target = stmt
            new = cst.parse_expression(f"{torch}._assert_async({cond}{message})")
            new = cst.Expr(new)
        else:
            return None
        plan = FixPlan(f"check the condition inside the graph with {torch}._assert_async (raises RuntimeError)",
                       "unsafe")
        if torch_name(ctx) is None:
            plan.imports.append("import torch")
        return plan.replace(target, new)


def _negated(test: cst.BaseExpression, ctx) -> str | None:
    """A boolean tensor that is true when ``test`` is false (``not x`` gives ``x`` back)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return tensor_condition(test.expression, ctx)
    cond = tensor_condition(test, ctx)
    return None if cond is None else f"~{paren(cond)}"


def _message(raise_stmt: cst.Raise, ctx) -> str:
    exc = raise_stmt.exc
    if isinstance(exc, cst.Call) and exc.args and isinstance(exc.args[0].value, (cst.SimpleString,
                                                                                  cst.ConcatenatedString)):
        return f", {ctx.code(exc.args[0].value).strip()}"
    return ""
