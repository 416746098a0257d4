"""Logging Dynamo cannot defer (DYN105 ``untraceable-call``) -> skipped while compiling.

``logger.info(...)``-style methods of a ``logging.Logger`` cannot be reordered
on torch 2.13, nor can ``print``, ``logging.<level>`` and ``warnings.warn`` when an
argument is something Dynamo cannot replay (``warnings.warn(msg, DeprecationWarning)``; see
``defer-logging``).  The only local rewrite is to
skip them while compiling:
``if not torch.compiler.is_compiling(): logger.info(...)``.  Refused inside a
branch on a tensor (``if torch.isnan(x).any(): logger.warning(...)``): the branch
breaks the graph before the call is reached, so the guard would remove no break.
Unsafe: the message is then never emitted from compiled code.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.breaks import Cause
from dynalint.analysis.events import CallEvent
from dynalint.analysis.logging_calls import REORDERABLE_CALLS, is_logger_call, reorderable_arguments
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch

#: writes to the standard streams: not reorderable, but a guard keeps them out of the graph
_GUARDABLE = frozenset({"sys.stdout.write", "sys.stderr.write"})


@register
class SkipLoggingWhileCompiling(Fixer):
    name = "skip-logging-while-compiling"
    codes = ("DYN105",)
    safety = "unsafe"
    summary = "Guard `logger.*` calls with `if not torch.compiler.is_compiling():` (the message is lost under compile)."
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
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
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
        plan = FixPlan(f"skip `{ctx.code(call.func).strip()}` while compiling (the message is not emitted "
                       "from compiled code)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        guarded = cst.If(
            test=cst.parse_expression(f"not {torch}.compiler.is_compiling()"),
            body=cst.IndentedBlock(body=[line.with_changes(leading_lines=[])]),
            leading_lines=line.leading_lines,
        )
        return plan.replace(line, guarded)


def _tensor_branch_around(node: cst.CSTNode, ctx) -> str | None:
    """The test of an enclosing ``if``/``while`` of the function that breaks the graph."""
    cur = ctx.parent(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        if isinstance(cur, (cst.If, cst.While)) and any(
                b.cause in (Cause.CONDITION, Cause.LOOP_CONDITION) for b in ctx.breaks.at(cur.test)):
            return ctx.code(cur.test).strip()
        cur = ctx.parent(cur)
    return None
