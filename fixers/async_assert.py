"""Data-dependent validation (DYN101 ``tensor-condition``) -> an assertion that stays in the graph.

Before::

    if torch.isnan(x).any():
        raise RuntimeError("NaN in input")

After::

    torch._assert_async(~torch.isnan(x).any(), "NaN in input")

``torch._assert_async`` checks the condition inside the graph instead of
branching on it in Python (measured on torch 2.13: no break, and a failing
check raises).  Also applies to ``assert not <tensor>``, which breaks the graph
where ``assert <tensor>`` does not.  An ``elif`` check becomes the ``else`` of
the branches above it (it is tested only where they did not run).

A ``RuntimeError`` whose message formats values (an f-string, a literal's
``.format(...)``) is the exception ``torch._assert_async`` raises, so the check
moves into the graph only while compiling and keeps its own message otherwise::

    if torch.compiler.is_compiling():
        torch._assert_async(~check, "Detected the values ... in `target`")
    elif check:
        raise RuntimeError(f"Detected the values {values} in `target`")

Eager runs are unchanged (same exception, same message); compiled, Dynamo
takes the first branch (``torch.compiler.is_compiling()`` is true while it
traces), checks the same condition in the graph (measured on torch 2.13: no
break, with or without the capture flags, and a failing check raises
``RuntimeError``) and reports the message's text with each formatted value
written ``...`` (formatting a tensor in the graph would break it again).

Proves, or refuses: the condition is a tensor for certain; the raised exception
is the builtin ``RuntimeError`` (``raise RuntimeError`` or
``RuntimeError(msg)``), the type ``torch._assert_async`` raises: a
``ValueError`` check is refused, since its callers' ``except ValueError`` would
no longer catch it; its one argument is a string literal (eager runs then raise
the same exception with the same message), an f-string or a string literal's
``.format(...)`` (a computed message would format tensors - which breaks the
graph again - or be lost).  ``assert not <tensor>`` raises ``RuntimeError`` in
place of ``AssertionError``, as Dynamo itself makes a failed
``assert <tensor>`` in compiled code raise (measured on torch 2.13).

Unsafe (hazards): on accelerators the error is raised asynchronously, at a
later synchronisation point; an ``assert`` rewritten this way raises
``RuntimeError`` and still runs under ``python -O``; a compiled
``RuntimeError`` whose message formatted values shows ``...`` in their place.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import simple_statements, string_literal
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import (builtin_class, check_while_compiling, message_text, paren,
                                              string_literal_code, tensor_condition, use_torch)


@register
class AsyncAssert(Fixer):
    name = "async-assert"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = "Rewrite `if <tensor>: raise RuntimeError(...)` and `assert not <tensor>` into `torch._assert_async`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def checked(x):
                    if torch.isnan(x).any():
                        raise RuntimeError("NaN in input")
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
        FixExample(
            before="""
                import torch

                @torch.compile
                def normalised(x):
                    total = x.abs().sum()
                    if total == 0:  # nothing to scale
                        raise RuntimeError(f"cannot normalise {x.shape[0]} zeros")
                    return x / total
            """,
            after="""
                import torch

                @torch.compile
                def normalised(x):
                    total = x.abs().sum()
                    if torch.compiler.is_compiling():
                        torch._assert_async(~(total == 0), "cannot normalise ... zeros")
                    elif total == 0:  # nothing to scale
                        raise RuntimeError(f"cannot normalise {x.shape[0]} zeros")
                    return x / total
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
            target: cst.CSTNode = stmt
            formatted = _formatted_runtime_error(body[0], ctx)
            if formatted is not None:
                check = cst.parse_statement(f"{torch}._assert_async({ok}, {formatted})")
                new: cst.CSTNode = check_while_compiling(stmt, check, torch)
                plan.description = ("check the condition inside the graph with torch._assert_async while "
                                    "compiling (the same RuntimeError, its formatted values written `...`)")
                return plan.replace(target, new)
            message = raise_message(body[0], ctx)
            new = cst.parse_statement(f"{torch}._assert_async({ok}{message})")
            parent = ctx.parent(stmt)
            if isinstance(parent, cst.If) and parent.orelse is stmt:
                # an `elif`: the check runs only where the branches above did not, as the `else` of them
                # (with the comments of the `elif` line and of its body)
                block = stmt.body
                line = block.body[0] if isinstance(block, cst.IndentedBlock) else None
                if isinstance(line, cst.SimpleStatementLine):
                    new = new.with_changes(leading_lines=line.leading_lines,
                                           trailing_whitespace=line.trailing_whitespace)
                body = block.with_changes(body=[new]) if isinstance(block, cst.IndentedBlock) \
                    else cst.IndentedBlock(body=[new])
                new = cst.Else(body=body, leading_lines=stmt.leading_lines)
            else:
                new = new.with_changes(leading_lines=stmt.leading_lines)
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


def _formatted_runtime_error(raise_stmt: cst.Raise, ctx) -> str | None:
    """For ``raise RuntimeError(<f-string or "...".format(...)>)``: a string literal of the message's
    text with each formatted value written ``...``, which ``torch._assert_async`` can raise in the graph
    (the same exception type; formatting the values would break the graph).  None for any other raise
    (a literal message, a message computed otherwise, another exception type: :func:`raise_message`
    refuses that one)."""
    exc = raise_stmt.exc
    if not (isinstance(exc, cst.Call) and len(exc.args) == 1 and exc.args[0].keyword is None
            and not exc.args[0].star and builtin_class(exc.func, ctx, "RuntimeError")):
        return None
    text = message_text(ctx.code(exc.args[0].value).strip())
    return string_literal_code(text) if text is not None else None


def raise_message(raise_stmt: cst.Raise, ctx) -> str:
    """The message argument (``", msg"`` or ``""``) of ``raise RuntimeError`` /
    ``raise RuntimeError("literal")``, the builtin exception ``torch._assert_async`` raises; anything else
    is refused (the check would raise another type: an ``except ValueError`` would no longer catch it)."""
    exc = raise_stmt.exc
    raised = exc.func if isinstance(exc, cst.Call) else exc
    if not builtin_class(raised, ctx, "RuntimeError"):
        raise Refused(f"`{ctx.code(raised).strip() if raised is not None else 'raise'}` is not the builtin "
                      "RuntimeError that torch._assert_async raises: the check would raise another type")
    if isinstance(exc, cst.Name) or isinstance(exc, cst.Call) and not exc.args:
        return ""
    if isinstance(exc, cst.Call) and len(exc.args) == 1 and exc.args[0].keyword is None \
            and not exc.args[0].star and string_literal(exc.args[0].value):
        return f", {ctx.code(exc.args[0].value).strip()}"
    raise Refused("the exception's message is not a string literal (it would format values, or be lost)")
