"""Side effects that break the graph: let Dynamo defer them, or skip them under compile.

``print``, ``logging.<level>`` and ``warnings.warn`` can be *reordered* by Dynamo
when their arguments are tensors, constants or format strings:
with the function in ``torch._dynamo.config.reorderable_logging_functions`` it
records the call, finishes the graph, and makes the call afterwards with the same
arguments - the output is kept and the graph does not break (measured on torch
2.13: ``print("y:", y.sum())`` then no longer breaks).  The fix adds that line once
at module level.  The same values are printed, after the graph runs rather
than in the middle of it.

Proves, or refuses: Dynamo can reorder the call (its arguments are tensors,
constants or format strings); no tensor the call prints is updated in place
later in the function (the deferred call would print the updated value); no
call of the same function in the file is marked ``# noqa`` (the config line
would defer it too).

Unsafe (hazards): the config line is process-wide: every call of that function
in compiled code is deferred, in other modules too (a submodule's ``print``
included), and calls marked ``# noqa`` there; a call deferred past an op that raises is never made (its output
is lost); in a module of torch's own package the added line runs while torch
is still being imported (a circular import); a printed tensor that requires
grad shows the compiled graph's ``grad_fn`` (``CompiledFunctionBackward``).

``logger.info(...)``-style methods of a ``logging.Logger`` cannot be reordered
on torch 2.13, nor can the functions above when an argument is something else
(``warnings.warn(msg, DeprecationWarning)``).  The only local rewrite is to
skip them while compiling:
``if not torch.compiler.is_compiling(): logger.info(...)``.  Refused inside a
branch on a tensor (``if torch.isnan(x).any(): logger.warning(...)``): the branch
breaks the graph before the call is reached, so the guard would remove no break.
Unsafe: the message is then never emitted from compiled code.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent, ConditionEvent

from dynalint.analysis.syntax import root_name, walk
from dynalint.fixers.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.codegen import use_torch
from dynalint.noqa import NoqaMap
from dynalint.positions import node_ranges
from dynalint.rules.unsupported_calls import _LOGGER_METHODS, _LOGGING_FUNCTIONS, _is_logger, reorderable_arguments

_REORDERABLE = {"builtins.print", "warnings.warn"} | {f"logging.{f}" for f in _LOGGING_FUNCTIONS}
_GUARDABLE = {"sys.stdout.write", "sys.stderr.write"}


def _call_event(finding, ctx):
    return ctx.event(finding.node, CallEvent)


@register
class DeferLogging(Fixer):
    name = "defer-logging"
    codes = ("DYN105",)
    safety = "unsafe"
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
        q = _qualname(call, ctx)
        if q not in _REORDERABLE:
            return None
        ev = _call_event(finding, ctx)
        if ev is None or not reorderable_arguments(ev):
            return None  # Dynamo would refuse to reorder it
        marked = _noqa_call_of(q, ctx)
        if marked is not None:
            raise Refused(f"`{ctx.code(call.func).strip()}` is also called on line {marked} marked `# noqa`: "
                          "the process-wide config line would defer that call too")
        updated = _updated_later(call, ctx)
        if updated is not None:
            raise Refused(f"`{updated}` is updated in place after the call: the deferred call would print the "
                          "new value")
        plan = FixPlan(f"let Dynamo run `{ctx.code(call.func).strip()}` after the graph "
                       "(torch._dynamo.config.reorderable_logging_functions; process-wide)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        plan.module_statements.append(
            f"{torch}._dynamo.config.reorderable_logging_functions.add({ctx.code(call.func).strip()})")
        return plan


def _qualname(call: cst.Call, ctx) -> str | None:
    return ctx.program.index.resolve_expr(call.func) or (
        f"builtins.{call.func.value}" if isinstance(call.func, cst.Name) else None)


def _noqa_call_of(qualname: str, ctx) -> int | None:
    """The line of a call of the same function in the file whose finding a ``# noqa`` suppresses."""
    calls = [ev.node for ev in ctx.program.events if isinstance(ev, CallEvent) and isinstance(ev.node, cst.Call)
             and _qualname(ev.node, ctx) == qualname]
    source = ctx.module.code
    noqa = NoqaMap(source)
    for r in node_ranges(ctx.module, source, calls).values():
        if noqa.suppresses((r.line, r.end_line), "DYN105"):
            return r.line
    return None


def _updated_later(call: cst.Call, ctx) -> str | None:
    """A name the call's arguments read that code after it (in the function) updates in place."""
    function = ctx.enclosing_function(call)
    if function is None:
        return None
    read = {n.value for a in call.args for n in walk(a.value) if isinstance(n, cst.Name)}
    seen = False
    inside = {id(n) for n in walk(call)}
    for n in walk(function.body):
        if id(n) == id(call):
            seen = True
            continue
        if not seen or id(n) in inside:
            continue
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value.endswith("_"):
            root = root_name(n.func.value)
            if root in read:
                return root
        if isinstance(n, cst.Call) and any(a.keyword is not None and a.keyword.value == "out" for a in n.args):
            return next((root_name(a.value) for a in n.args if a.keyword is not None and a.keyword.value == "out"
                         and root_name(a.value) in read), None)
        if isinstance(n, cst.AugAssign) and root_name(n.target) in read:
            return root_name(n.target)
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, (cst.Subscript, cst.Attribute)) \
                and root_name(n.target) in read:
            return root_name(n.target)
    return None


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
    """The test of an enclosing ``if``/``while`` of the function that the analysis found to be a tensor."""
    cur = ctx.parent(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        if isinstance(cur, (cst.If, cst.While)):
            ev = ctx.event(cur.test, ConditionEvent)
            if ev is not None and ev.value is not None and ev.value.is_tensor:
                return ctx.code(cur.test).strip()
        cur = ctx.parent(cur)
    return None
