"""Side effects that break the graph: let Dynamo defer them, or skip them under compile.

``print``, ``logging.<level>`` and ``warnings.warn`` can be *reordered* by Dynamo
when their arguments are tensors, constants or format strings:
with the function in ``torch._dynamo.config.reorderable_logging_functions`` it
records the call, finishes the graph, and makes the call afterwards with the same
arguments - the output is kept and the graph does not break (measured on torch
2.13: ``print("y:", y.sum())`` then no longer breaks).  The fix adds that line once
at module level.  Safe: the same values are printed, after the graph runs
rather than in the middle of it.

``logger.info(...)``-style methods of a ``logging.Logger`` cannot be reordered
on torch 2.13, nor can the functions above when an argument is something else
(``warnings.warn(msg, DeprecationWarning)``).  The only local rewrite is to
skip them while compiling:
``if not torch.compiler.is_compiling(): logger.info(...)``.  Unsafe: the message
is then never emitted from compiled code.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent

from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.codegen import torch_name
from dynalint.rules.unsupported_calls import _LOGGER_METHODS, _LOGGING_FUNCTIONS, _is_logger, reorderable_arguments

_REORDERABLE = {"builtins.print", "warnings.warn"} | {f"logging.{f}" for f in _LOGGING_FUNCTIONS}
_GUARDABLE = {"sys.stdout.write", "sys.stderr.write"}


def _call_event(finding, ctx):
    return ctx.event(finding.node, CallEvent)


@register
class DeferLogging(Fixer):
    name = "defer-logging"
    codes = ("DYN105",)
    safety = "safe"
    summary = "Let Dynamo defer `print`/`logging.*`/`warnings.warn` to after the graph (output kept)."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def step(x):
                    y = x + 1
                    print("y:", y.sum())
                    return y * 2
            """,
            after="""
                import torch

                torch._dynamo.config.reorderable_logging_functions.add(print)

                @torch.compile
                def step(x):
                    y = x + 1
                    print("y:", y.sum())
                    return y * 2
            """,
        ),
        FixExample(
            before="""
                import warnings

                import torch

                @torch.compile
                def loss(x):
                    warnings.warn("experimental")
                    return x.mean()
            """,
            after="""
                import warnings

                import torch

                torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)

                @torch.compile
                def loss(x):
                    warnings.warn("experimental")
                    return x.mean()
            """,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        call = finding.node
        if not isinstance(call, cst.Call):
            return None
        q = ctx.program.index.resolve_expr(call.func) or (
            f"builtins.{call.func.value}" if isinstance(call.func, cst.Name) else None)
        if q not in _REORDERABLE:
            return None
        ev = _call_event(finding, ctx)
        if ev is None or not reorderable_arguments(ev):
            return None  # Dynamo would refuse to reorder it
        torch = torch_name(ctx)
        plan = FixPlan(f"let Dynamo run `{ctx.code(call.func).strip()}` after the graph "
                       "(torch._dynamo.config.reorderable_logging_functions)", "safe")
        if torch is None:
            plan.imports.append("import torch")
        plan.module_statements.append(
            f"{torch or 'torch'}._dynamo.config.reorderable_logging_functions.add({ctx.code(call.func).strip()})")
        return plan


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
        ev = _call_event(finding, ctx)
        if ev is None:
            return None
        is_logger = ev.method in _LOGGER_METHODS and _is_logger(ev.receiver)
        not_deferrable = ev.qualname in _REORDERABLE and not reorderable_arguments(ev)
        if not (is_logger or not_deferrable or ev.qualname in _GUARDABLE):
            return None
        line = ctx.statement_line(stmt)
        if not isinstance(line, cst.SimpleStatementLine):
            return None
        torch = torch_name(ctx) or "torch"
        guarded = cst.If(
            test=cst.parse_expression(f"not {torch}.compiler.is_compiling()"),
            body=cst.IndentedBlock(body=[line.with_changes(leading_lines=[])]),
            leading_lines=line.leading_lines,
        )
        plan = FixPlan(f"skip `{ctx.code(call.func).strip()}` while compiling (the message is not emitted "
                       "from compiled code)", "unsafe")
        if torch_name(ctx) is None:
            plan.imports.append("import torch")
        return plan.replace(line, guarded)
