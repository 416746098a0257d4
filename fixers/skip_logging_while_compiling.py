"""Logging Dynamo cannot defer (DYN105 ``untraceable-call``) -> skipped while compiling.

``logger.info(...)``-style methods of a ``logging.Logger`` cannot be reordered
on torch 2.13, nor can ``print``, ``logging.<level>`` and ``warnings.warn`` when an
argument is something Dynamo cannot replay (``warnings.warn(msg, DeprecationWarning)``; see
``defer-logging``).  The only local rewrite is to
skip them while compiling:
``if not torch.compiler.is_compiling(): logger.info(...)``.  Refused inside a
branch on a tensor (``if torch.isnan(x).any(): logger.warning(...)``): the branch
breaks the graph before the call is reached, so the guard would remove no break.

Such a branch (DYN101 ``tensor-condition``) whose body only logs - each
statement a call of ``print``, ``logging.<level>``, ``warnings.warn``, a
logger's message method or a write to ``sys.stdout``/``sys.stderr``, and no
``else`` - is itself skipped while compiling:
``if not torch.compiler.is_compiling() and torch.isnan(x).any():``.  Dynamo
takes ``torch.compiler.is_compiling()`` as true, so it never evaluates the
tensor condition and the graph does not break (measured on torch 2.13); eager
runs test it and log as before.  Proves, or refuses: the condition and the
arguments of the calls are pure (no call that updates in place, draws random
numbers or does I/O, no walrus): they are no longer evaluated under compile.
Both rewrites are refused in a module that imports no torch in any form (a
command-line module that prints, checked with ``--scope all``): nothing in it
is compiled code, and the guard would add an ``import torch`` it does not need.

Unsafe: the message is then never emitted from compiled code (and a condition
that would raise, a tensor of several elements tested for truth, raises
nothing there).
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.breaks import Cause
from dynalint.analysis.events import CallEvent
from dynalint.analysis.logging_calls import (REORDERABLE_CALLS, STREAM_WRITES, is_logger_call, is_message_call,
                                             reorderable_arguments)
from dynalint.analysis.syntax import encloses
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import module_imports_torch, use_torch
from dynalint.fixers.support.purity import impurity

#: writes to the standard streams: not reorderable, but a guard keeps them out of the graph
_GUARDABLE = STREAM_WRITES


@register
class SkipLoggingWhileCompiling(Fixer):
    name = "skip-logging-while-compiling"
    codes = ("DYN105", "DYN101")
    safety = "unsafe"
    summary = "Guard `logger.*` calls, and branches on a tensor that only log, with " \
              "`not torch.compiler.is_compiling()` (the message is lost under compile)."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import logging

                import torch

                logger = logging.getLogger(__name__)

                @torch.compile
                def encode(x):
                    h = torch.tanh(x)
                    logger.info("encoded %s", tuple(h.shape))
                    return h * 2
            """,
            after="""
                import logging

                import torch

                logger = logging.getLogger(__name__)

                @torch.compile
                def encode(x):
                    h = torch.tanh(x)
                    if not torch.compiler.is_compiling():
                        logger.info("encoded %s", tuple(h.shape))
                    return h * 2
            """,
        ),
        FixExample(
            before="""
                import warnings

                import torch

                @torch.compile
                def clipped(x):
                    y = x.clamp(-3, 3)
                    if (y != x).any():  # outliers
                        warnings.warn("outliers in x were clipped", RuntimeWarning)
                    return y * 2
            """,
            after="""
                import warnings

                import torch

                @torch.compile
                def clipped(x):
                    y = x.clamp(-3, 3)
                    if not torch.compiler.is_compiling() and (y != x).any():  # outliers
                        warnings.warn("outliers in x were clipped", RuntimeWarning)
                    return y * 2
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        if isinstance(finding.statement, cst.If) and encloses(finding.statement.test, finding.node):
            return _logging_branch(finding.statement, ctx)
        call = finding.node
        stmt = finding.statement
        if not (isinstance(call, cst.Call) and isinstance(stmt, cst.Expr) and stmt.value is call):
            return None
        ev = ctx.event(finding.node, CallEvent)
        if ev is None:
            return None
        is_logger = is_logger_call(ev)
        not_deferrable = ev.qualname in REORDERABLE_CALLS and not reorderable_arguments(ev)
        if not (is_logger or not_deferrable or ev.qualname in _GUARDABLE):
            return None
        line = ctx.statement_line(stmt)
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        branch = _tensor_branch_around(line, ctx)
        if branch is not None:
            raise Refused(f"the call is inside a branch on a tensor (`{branch}`), which breaks the graph before "
                          "the call is reached: guarding the call removes no break (fix the branch first)")
        _refuse_without_torch(ctx, call)
        plan = FixPlan(f"skip `{ctx.code(call.func).strip()}` while compiling (the message is not emitted "
                       "from compiled code)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        guarded = cst.If(
            test=cst.parse_expression(f"not {torch}.compiler.is_compiling()"),
            body=cst.IndentedBlock(body=[line.with_changes(leading_lines=[])]),
            leading_lines=line.leading_lines,
        )
        return plan.replace(line, guarded)


def _logs(stmt: cst.BaseSmallStatement, ctx) -> bool:
    """Whether a statement is a call that only emits a message (see :func:`_logging_call`)."""
    return isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and _logging_call(stmt.value, ctx)


def _logging_call(call: cst.Call, ctx) -> bool:
    """``print``, ``logging.<level>``, ``warnings.warn``, a logger's message method, a write to a standard
    stream: calls whose only effect is the message."""
    ev = ctx.event(call, CallEvent)
    return ev is not None and is_message_call(ev)


def _logging_branch(branch: cst.If, ctx) -> FixPlan | None:
    """``if <tensor>: <log>`` (no ``else``) -> ``if not torch.compiler.is_compiling() and <tensor>:``."""
    if branch.orelse is not None or not isinstance(branch.body, cst.IndentedBlock):
        return None
    lines = branch.body.body
    if not all(isinstance(line, cst.SimpleStatementLine) and all(_logs(s, ctx) for s in line.body)
               for line in lines):
        return None
    reason = impurity(branch.test, ctx)
    if reason is not None:
        raise Refused(f"the condition is not pure ({reason}): under compile it would no longer be evaluated")
    for line in lines:
        for small in line.body:
            for arg in small.value.args:
                reason = impurity(arg.value, ctx)
                if reason is not None:
                    raise Refused(f"an argument of the logging call is not pure ({reason}): under compile it "
                                  "would no longer be evaluated")
    _refuse_without_torch(ctx, branch)
    plan = FixPlan("skip the branch that only logs while compiling (its message is not emitted from compiled "
                   "code)", "unsafe")
    torch = use_torch(plan, ctx, branch)
    test = ctx.code(branch.test).strip()
    if isinstance(branch.test, (cst.IfExp, cst.Lambda)) or (
            isinstance(branch.test, cst.BooleanOperation) and isinstance(branch.test.operator, cst.Or)
            and not branch.test.lpar):
        test = f"({test})"
    guarded = cst.parse_expression(f"not {torch}.compiler.is_compiling() and {test}")
    return plan.replace(branch, branch.with_changes(test=guarded))


def _refuse_without_torch(ctx, at: cst.CSTNode) -> None:
    """A module that imports no torch (a command-line module that prints) gets no ``import torch`` for a
    guard: ``--scope all`` reports its calls, but nothing tells that Dynamo ever compiles them."""
    if not module_imports_torch(ctx, at):
        raise Refused("the module does not import torch: nothing in it is compiled code that the guard would "
                      "keep the call out of, and the guard would add an `import torch` the module does not "
                      "need")


def _tensor_branch_around(node: cst.CSTNode, ctx) -> str | None:
    """The test of an enclosing ``if``/``while`` of the function that breaks the graph."""
    cur = ctx.parent(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        if isinstance(cur, (cst.If, cst.While)) and any(
                b.cause in (Cause.CONDITION, Cause.LOOP_CONDITION)
                for b in (*ctx.breaks.at(cur.test), *ctx.breaks.inside(cur.test))):
            return ctx.code(cur.test).strip()
        cur = ctx.parent(cur)
    return None
