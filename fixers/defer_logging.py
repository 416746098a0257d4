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
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent
from dynalint.analysis.logging_calls import REORDERABLE_CALLS, reorderable_arguments
from dynalint.analysis.syntax import root_name, walk
from dynalint.fixers.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.codegen import use_torch
from dynalint.noqa import NoqaMap
from dynalint.positions import node_ranges


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
        if q not in REORDERABLE_CALLS:
            return None
        ev = ctx.event(finding.node, CallEvent)
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
