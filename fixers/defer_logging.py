"""Side effects that break the graph (DYN105 ``untraceable-call``): let Dynamo defer them, or skip them under
compile.

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
would defer it too).  And, for every call of the function in the compiled code
of the file (the config line defers them all): its function is what
``torch.compile`` compiles itself - decorated with it, handed to it in the
file (``torch.compile(Model())`` compiles ``Model.forward``), an entry
pattern, or compiled by another checked file - and no compiled code of the
file calls it, because a deferred call in code Dynamo inlines (a submodule's
``forward``, a helper) is dropped, never made (measured on torch 2.13); and
nothing between the call and the end of its graph (the end of its function,
or a branch or loop test on a tensor, where Dynamo makes the deferred calls:
measured) can
raise, because a call deferred past an op that raises is never made: what
follows is only
``return``, ``pass`` and assignments to names of names, constants, a tensor
with a number under ``+ * /`` (``-`` on a floating-point tensor) and a few
tensor methods that raise for no tensor (``.sum()``, ``.float()``; ``.mean()``
on a floating-point one).

Unsafe (hazards): the config line is process-wide: every call of that
function in compiled code is deferred, in other modules too, and calls marked
``# noqa`` there; a deferred call in another module's inlined code (a
submodule's ``print``) is dropped, and one deferred past an op that raises is
never made (its output is lost); in a module of torch's own package the added
line runs while torch is still being imported (a circular import); a printed
tensor that requires grad shows the compiled graph's ``grad_fn``
(``CompiledFunctionBackward``).
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent
from dynalint.analysis.logging_calls import REORDERABLE_CALLS, reorderable_arguments
from dynalint.analysis.syntax import encloses, root_name, walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.branches import certainly_floating
from dynalint.fixers.support.codegen import known_tensor, use_torch


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
                    return x.float().mean()
            """,
            after="""
                import warnings

                import torch

                torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)

                @torch.compile
                def loss(x):
                    warnings.warn("experimental")
                    return x.float().mean()
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
        # the config line defers every call of the function in compiled code: each must still be made
        for other in _calls_of(q, ctx):
            where = "" if other.node is call else \
                f" (`{ctx.code(call.func).strip()}` is also called there, and the config line defers that call too)"
            if not _compile_entry(other.function, ctx):
                raise Refused(f"`{other.function.name}` is not known to be what torch.compile compiles itself{where}: "
                              "in a function Dynamo inlines (a submodule's forward, a helper) a deferred call is "
                              "dropped, never made (measured on torch 2.13)")
            reason = _may_raise_after(other.node, ctx)
            if reason is not None:
                raise Refused(f"{reason} after the call{where}, before the graph ends: the deferred call would "
                              "never be made")
        plan = FixPlan(f"let Dynamo run `{ctx.code(call.func).strip()}` after the graph "
                       "(torch._dynamo.config.reorderable_logging_functions; process-wide)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        plan.module_statements.append(
            f"{torch}._dynamo.config.reorderable_logging_functions.add({ctx.code(call.func).strip()})")
        # the config line is for this call where it stands: the plan holds the call (unchanged), so a fix of
        # the same round that moves it (eager-tail, into a function Dynamo skips) waits for the next round,
        # where the call no longer breaks and needs no line
        plan.replace(call, call)
        return plan


def _qualname(call: cst.Call, ctx) -> str | None:
    return ctx.program.index.resolve_expr(call.func) or (
        f"builtins.{call.func.value}" if isinstance(call.func, cst.Name) else None)


def _calls_of(qualname: str, ctx) -> list[CallEvent]:
    """The calls of a function in the compiled code of the file (each once)."""
    found: dict[int, CallEvent] = {}
    for ev in ctx.program.events:
        if isinstance(ev, CallEvent) and isinstance(ev.node, cst.Call) and _qualname(ev.node, ctx) == qualname:
            found.setdefault(id(ev.node), ev)
    return list(found.values())


def _noqa_call_of(qualname: str, ctx) -> int | None:
    """The line of a call of the same function in the file whose finding a ``# noqa`` suppresses (the
    comments and positions are the analysis's own)."""
    for r in ctx.ranges(ev.node for ev in _calls_of(qualname, ctx)).values():
        if ctx.noqa.suppresses((r.line, r.end_line), "DYN105", record=False):
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


def _compile_entry(function, ctx) -> bool:
    """``function`` is the code of a frame Dynamo compiles - decorated with ``torch.compile``, handed to it
    in this file (a module's ``forward`` for ``torch.compile(Model())``), matching a configured entry
    pattern or compiled by another checked file - and no compiled code of this file calls it (a call
    inlines it, and Dynamo drops a deferred call made in inlined code)."""
    program = ctx.program
    entry = function.compile_decorated or program.entry_points.matches_pattern(function) \
        or program.entries.get(function.qualname) == "*"
    for call, where in program.index.compile_targets:
        target = program.entry_points.compile_target(call, where)
        entry = entry or (target is not None and target[0] is function)
    if not entry:
        return False
    for ev in program.events:
        if not isinstance(ev, CallEvent):
            continue
        module = ev.module.cls if ev.module is not None else None
        if ev.callee is function or (module is not None and function.cls is not None
                                     and module.find_method(function.name) is function):
            return False
    return True


#: Tensor methods that raise for no tensor (of any dtype or shape) when called without arguments.
_NEVER_RAISING = frozenset({"sum", "clone", "detach", "float", "double", "half", "bfloat16", "long", "int",
                            "bool", "numel", "dim"})
#: Tensor methods that raise for no floating-point tensor when called without arguments.
_NEVER_RAISING_ON_FLOATS = frozenset({"mean", "abs", "neg", "exp", "sigmoid", "tanh", "relu"})


def _may_raise_after(call: cst.Call, ctx) -> str | None:
    """What may raise between the call and the end of the graph (the end of the function), as a reason;
    None when nothing can: what follows the call's statement, up to the end of the function or to a
    branch or loop test on a tensor (where the graph ends, and Dynamo makes the deferred calls), is only
    ``return``, ``pass`` and assignments to names of expressions that raise for no input (names,
    constants, a tensor with a number under ``+ * /`` - ``-`` when it is floating point -, a few tensor
    methods)."""
    line = ctx.statement_line(_statement(call, ctx))
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
            and isinstance(line.body[0], cst.Expr) and line.body[0].value is call):
        return "the call is part of a larger statement"
    following: list[cst.CSTNode] = []
    node: cst.CSTNode = line
    while True:
        found = ctx.block_of(node)
        if found is None:
            return "the call is not in a block of its function"
        block, i = found
        following.extend(block.body[i + 1:])
        owner = ctx.parent(block)
        if isinstance(owner, cst.FunctionDef):
            break
        if isinstance(owner, cst.Else):
            owner = ctx.parent(owner)
        while isinstance(owner, cst.If) and isinstance(ctx.parent(owner), cst.If):
            owner = ctx.parent(owner)  # an elif: the statement is the whole chain
        if not isinstance(owner, cst.If):
            return f"the call is inside a `{type(owner).__name__.lower()}` block"
        node = owner
    for stmt in following:
        if isinstance(stmt, (cst.If, cst.While)) and any(encloses(stmt.test, b.node)
                                                         for b in ctx.breaks.in_statement(stmt)):
            # the graph ends at a branch or loop test on a tensor: Dynamo makes the deferred calls there
            # (measured on torch 2.13)
            return None if _never_raises(stmt.test, ctx, call) else f"`{ctx.code(stmt.test).strip()}` may raise"
        reason = _statement_may_raise(stmt, ctx, call)
        if reason is not None:
            return reason
    return None


def _statement(call: cst.Call, ctx) -> cst.CSTNode:
    node: cst.CSTNode = call
    while not isinstance(node, cst.BaseSmallStatement):
        node = ctx.parent(node)
    return node


def _statement_may_raise(stmt: cst.CSTNode, ctx, start: cst.CSTNode) -> str | None:
    code = ctx.code(stmt).strip().splitlines()[0]
    if not isinstance(stmt, cst.SimpleStatementLine):
        return f"`{code}` runs"
    for small in stmt.body:
        if isinstance(small, cst.Pass):
            continue
        if isinstance(small, cst.Return):
            value = small.value
        elif isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets):
            value = small.value
        else:
            return f"`{code}` runs"
        if value is not None and not _never_raises(value, ctx, start):
            return f"`{ctx.code(value).strip()}` may raise"
    return None


def _never_raises(expr: cst.BaseExpression, ctx, start: cst.CSTNode) -> bool:
    """``expr`` raises for no value its names may have (``start``: the deferred call; a tensor is floating
    point for certain by what ran before it)."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None") or ctx.value(expr) is not None
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(not isinstance(e, cst.StarredElement) and _never_raises(e.value, ctx, start) for e in expr.elements)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Multiply, cst.Divide,
                                                                            cst.Subtract)):
        sides = [expr.left, expr.right]
        tensors = [e for e in sides if known_tensor(ctx, e)]
        numbers = [e for e in sides if isinstance(e, (cst.Integer, cst.Float))]
        if len(tensors) != 1 or len(numbers) != 1 or not _never_raises(tensors[0], ctx, start):
            return False
        return not isinstance(expr.operator, cst.Subtract) or certainly_floating(tensors[0], ctx, start)
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 and isinstance(
            expr.comparisons[0].operator, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual,
                                           cst.Equal, cst.NotEqual)):
        sides = [expr.left, expr.comparisons[0].comparator]
        tensors = [e for e in sides if known_tensor(ctx, e)]
        numbers = [e for e in sides if isinstance(e, (cst.Integer, cst.Float))]
        return len(tensors) == 1 and len(numbers) == 1 and _never_raises(tensors[0], ctx, start)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
        receiver = expr.func.value
        name = expr.func.attr.value
        if not (known_tensor(ctx, receiver) and _never_raises(receiver, ctx, start)):
            return False
        return name in _NEVER_RAISING or (name in _NEVER_RAISING_ON_FLOATS and certainly_floating(receiver, ctx, start))
    return False
