"""A break a Dynamo capture flag removes -> that flag, scoped to the compile call that reaches it.

Before::

    import torch

    def step(x):
        n = x.sum().item()
        return torch.full((2,), n) + x[:2]

    step = torch.compile(step)

After::

    import torch

    def step(x):
        n = x.sum().item()
        return torch.full((2,), n) + x[:2]

    step = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step))

``.item()``, ``nonzero()``, a boolean mask... end the graph unless
``torch._dynamo.config.capture_scalar_outputs`` (or ``capture_dynamic_output_shape_ops``) is on.
Set globally, a flag changes every other function compiled in the process; wrapped around the
compiled callable, ``torch._dynamo.config.patch(...)`` holds the flag only while that callable runs,
which is when Dynamo traces it (measured on torch 2.13: the wrapped function keeps its ``.item()`` in
the graph, a function compiled separately in the same process still breaks, and the global flag is
unchanged afterwards).  Only the breaks a flag removes count: ``F.ctc_loss``, ``torch.linalg.lstsq``
(ops whose fake tensor cannot make a data-dependent size, read from torch into
:mod:`dynalint.analysis.data_dependent_ops`), ``torch.equal`` and ``allclose`` break with both flags
on (measured: "Dynamic shape operator (no meta kernel)", "Data dependent operator"), so a file whose
only such breaks are those is not patched.  ``@torch.compile`` on a ``def`` gets the same patch as a
decorator above it.

Applies only where the file itself calls ``torch.compile`` (a script, a training loop), with the flags
of the breaks in the code that compile call reaches (the compiled function and the functions of this
file it calls; the refusals below also read the functions of other files of the project it calls).
A file that compiles nothing (a library) is left alone: its callers choose Dynamo's configuration where
they compile.

Proves, or refuses: the compile call's result is assigned (``f = torch.compile(f)``), or
``@torch.compile`` is the outermost decorator; the file refers to the torch module by a name it can
use there.  A compiled module wrapped by the patch is a plain function, without ``.parameters()``,
``.train()`` or ``state_dict()``: accepted only when the assignment binds one name, outside any loop,
and every use of that name that may run after it is a call (``model(x)``), in its own scope and in
the functions nested there; ``model.eval()`` or ``train(model)`` after it refuses.

Unsafe (hazards): the flags change what the compiled code does with data-dependent values.  A check
inside the graph raises ``RuntimeError`` rather than its own exception type (measured:
``torch._check_value(n > 100)`` on a captured ``n`` raises ``ValueError`` eagerly, ``RuntimeError``
patched), and sizes computed from data become unbacked symbols, so code that branches on them may fail
to compile where it used to break the graph and run.  Refused where that is known: a size the code then
reads in Python under ``capture_dynamic_output_shape_ops`` (a loop over it, ``.tolist()``, ``.squeeze()``,
which keeps a dimension of length 1 eager code drops), a number it then uses where Python needs its
value (an index into a Python list, ``random.Random(n)``) under ``capture_scalar_outputs``, and under
that flag a ``.tolist()`` in the same compiled code whose numbers the code then reads (iterates,
indexes, compares; a helper returning the list to compiled code): they would become symbolic too (a
list the compiled function itself returns leaves the graph and is fine).  The patched
callable cannot be compiled again: ``torch.compile`` of it raises ``AssertionError`` (torch 2.13: the
patch copies the compiled function's attributes onto its wrapper).  A module-level compiled module that
another module imports by name is a plain function there.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.breaks import (CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, CAPTURE_FLAGS, CAPTURE_SCALAR_OUTPUTS, Break,
                                      Breaks, Cause, capture_flag, constant_failure, fails_to_compile, find_breaks,
                                      needs_constant)
from dynalint.analysis import capture_settings
from dynalint.analysis.events import CallEvent
from dynalint.analysis.module_index import local_names_of
from dynalint.analysis.syntax import decorator_target, walk
from dynalint.core.positions import node_ranges
from dynalint.fixers.eager_helper import disable_helper
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import is_variable, use_torch
from dynalint.fixers.support.split import shortened, shown

if TYPE_CHECKING:  # pragma: no cover
    from typing import Callable

    from dynalint.analysis.events import Event
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo

    Site = tuple[cst.CSTNode, tuple[FunctionInfo, ClassInfo | None], set[int]]
    """A compile call or ``@torch.compile`` decorator, what it compiles (function, class of a module),
    and the ids of the functions it reaches."""


@register
class CaptureFlags(Fixer):
    name = "capture-flags"
    codes = ("DYN102", "DYN104")
    safety = "unsafe"
    last_resort = True
    summary = ("Turn on the Dynamo capture flag that removes a break, scoped to the compile call of this file "
               "that reaches it.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                def step(x):
                    n = x.sum().item()
                    return torch.full((2,), n) + x[:2]

                step = torch.compile(step, backend="eager")
            """,
            after="""
                import torch

                def step(x):
                    n = x.sum().item()
                    return torch.full((2,), n) + x[:2]

                step = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step, backend="eager"))
            """,
            target="step",
            compile_target=False,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile(backend="eager")
                def positives(x):
                    return torch.nonzero(x).sum()
            """,
            after="""
                import torch

                @torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)
                @torch.compile(backend="eager")
                def positives(x):
                    return torch.nonzero(x).sum()
            """,
            target="positives",
            compile_target=False,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        if finding.remedy is None or finding.brk is None:
            return None
        plan = FixPlan("", "unsafe")
        added = patch_compile_calls(plan, ctx, finding.brk.event.function, lambda reach: _flags(ctx, reach))
        if not plan.replacements:
            return None  # every compile call reaching the break already has its flags
        flags = ", ".join(f"`{f}`" for f in sorted(added))
        helpers = ", ".join(f"`{old.name.value}`" for old, _ in plan.replacements.values()
                            if isinstance(old, cst.FunctionDef))
        carried = (f"; {helpers} runs outside the compiled code (eager-helper): it uses a number the flag "
                   "would make symbolic where Python needs its value") if helpers else ""
        plan.description = (f"turn on {flags} for the compiled code only (torch._dynamo.config.patch around the "
                            "compile call): checks inside the graph then raise RuntimeError rather than their own "
                            f"type, and sizes computed from data become unbacked{carried}")
        return plan


def patch_compile_calls(plan: FixPlan, ctx, function: "FunctionInfo",
                        flags_for: "Callable[[set[int]], list[str]]",
                        rewritten: "Callable[[Break], bool] | None" = None) -> set[str]:
    """Put on ``plan`` the patch of every compile call of this file that reaches ``function``, with the
    flags ``flags_for`` gives for the functions that call reaches (their ids); the flags added.  Raises
    :class:`Refused` when no compile call of this file reaches ``function`` or one of them cannot be
    patched (shared by the rewrites that need a flag: they are applied with it or not at all; ``rewritten``
    tells the breaks such a rewrite removes, which the flag then does not meet)."""
    sites = _compile_sites(ctx)
    if not sites:
        raise Refused("this file calls no `torch.compile`: the code that compiles it chooses Dynamo's "
                      "configuration")
    reaching = [(node, target, reach) for node, target, reach in sites if id(function) in reach]
    if not reaching:
        raise Refused(f"no `torch.compile` call of this file reaches `{function.name}`")
    added: set[str] = set()
    for node, target, reach in reaching:
        needed = flags_for(reach)
        if not needed:
            continue
        if CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS in needed:
            _refuse_read_sizes(ctx, reach, rewritten)
        if CAPTURE_SCALAR_OUTPUTS in needed:
            _refuse_constant_uses(plan, ctx, reach, rewritten)
            _refuse_kept_lists(ctx, reach)
        if isinstance(node, cst.Decorator):
            added |= _patch_decorator(plan, ctx, node, target, needed)
        else:
            added |= _patch_call(plan, ctx, node, target, needed)
    return added


def _with_untraced(breaks: Breaks) -> list[Break]:
    """The breaks, and those Dynamo never reaches today because an earlier break makes the rest of the
    function run eagerly (:attr:`Breaks.untraced`): with the flag on, the earlier break may be gone and
    that code traced."""
    return [*breaks, *breaks.untraced]


def _refuse_read_sizes(ctx, reach: set[int], rewritten: "Callable[[Break], bool] | None") -> None:
    """Refused when the reached code reads in Python the length of a data-dependent size that stays in
    the graph under ``capture_dynamic_output_shape_ops`` (:attr:`Break.read_in_python`): with the flag
    on, ``.tolist()`` of it or ``if len(it):`` fails to compile (``GuardOnDataDependentSymNode``,
    measured on torch 2.13) where the original broke the graph and ran."""
    for b in _with_untraced(ctx.breaks):
        if id(b.event.function) in reach and b.read_in_python \
                and b.cause in (Cause.MASK_INDEX, Cause.DYNAMIC_SHAPE_OP) and not (rewritten is not None and rewritten(b)):
            raise Refused(f"`capture_dynamic_output_shape_ops` would keep `{shown(ctx, b.node)}` in the graph, and "
                          "the code then reads its length in Python: Dynamo can fail to compile there "
                          "(GuardOnDataDependentSymNode) instead of breaking the graph")


def _refuse_kept_lists(ctx, reach: set[int]) -> None:
    """Refused when the reached code also calls ``.tolist()`` where the graph breaks today: with
    ``capture_scalar_outputs`` on, the list of an integer tensor stays in the graph as symbolic numbers,
    and a later Python test of one of them breaks there instead, in a loop giving up on the whole function
    (measured on torch 2.13: ``ts = torch.linspace(99, 0, n).long().tolist()`` then ``if t_prev >= 0:`` in
    the loop over ``ts``).  The analysis does not follow those numbers (nor the tensor's dtype), so it
    cannot show the flag leaves them alone."""
    for b in _with_untraced(ctx.breaks):
        if id(b.event.function) in reach and b.cause is Cause.SCALAR_EXTRACTION \
                and isinstance(b.event, CallEvent) and b.event.method == "tolist" and _numbers_read(ctx, b):
            raise Refused(f"`capture_scalar_outputs` would also keep `{shown(ctx, b.node)}` in the graph (for an "
                          "integer tensor), and the numbers of that list are then symbolic wherever the code "
                          "uses them: a Python test of one breaks there instead, and in a loop Dynamo gives up "
                          "on the whole function")


def _numbers_read(ctx, brk: Break) -> bool:
    """Whether the code may read the numbers of the list ``.tolist()`` makes where Python needs them: a
    name it is bound to is iterated, indexed, compared or passed to ``range``/``len``...; a list the
    compiled function itself returns (alone or inside what it returns) leaves the graph and is not read
    there; anything else (a helper returning it to compiled code) may be."""
    statement = brk.statement
    if isinstance(statement, cst.Return):
        return id(brk.event.function) not in ctx.program.entry_points.entered
    if not (isinstance(statement, cst.Assign) and statement.value is brk.node and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)):
        return True
    name = statement.targets[0].target.value
    function = ctx.enclosing_function(statement)
    for node in walk(function.body if function is not None else ctx.module):
        if not (isinstance(node, cst.Name) and node.value == name) or node is statement.targets[0].target:
            continue
        parent = ctx.parent(node)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node or \
                isinstance(parent, cst.Subscript) and parent.value is node or isinstance(parent, cst.Comparison) \
                or isinstance(parent, cst.Arg) and isinstance(ctx.parent(parent), cst.Call) \
                and isinstance(ctx.parent(parent).func, cst.Name) \
                and ctx.parent(parent).func.value in ("range", "len", "enumerate", "zip", "iter", "sorted"):
            return True
    return False


def _refuse_constant_uses(plan: FixPlan, ctx, reach: set[int],
                          rewritten: "Callable[[Break], bool] | None") -> None:
    """Refused when the reached code uses a number it takes from tensor data where Python needs its value
    (:attr:`Break.needs_constant`: an index into a Python list, ``random.Random(n)``): with
    ``capture_scalar_outputs`` on, Dynamo fails to compile there (``GuardOnDataDependentSymNode``,
    measured on torch 2.13) where the original broke the graph and ran.  The reason names the use, and
    whether Dynamo raises or breaks there (:func:`constant_failure`).  Where Dynamo would fail to compile
    and the number is made and used by one helper ``eager-helper`` can run outside the compiled code, that
    rewrite is put on ``plan`` instead: the flag and it are applied together."""
    for b in _with_untraced(ctx.breaks):
        if id(b.event.function) in reach and b.needs_constant and not (rewritten is not None and rewritten(b)):
            use = _constant_use(ctx, b)
            at = ""
            outcome = "can fail to compile there instead of breaking the graph"
            if use is not None:
                line = ctx.ranges([use.node]).get(id(use.node))
                at = f" at line {line.line} (`{shown(ctx, use.node)}`)" if line is not None else ""
                failure = constant_failure(use)
                if failure is not None and failure[0] is b.node:
                    if failure[1] and _disabled_helper(plan, ctx, use.node, b.node):
                        continue
                    outcome = "fails to compile there (GuardOnDataDependentSymNode)" if failure[1] \
                        else "breaks the graph there instead"
            raise Refused(f"`capture_scalar_outputs` would keep the number from `{shown(ctx, b.node)}` symbolic, "
                          f"and the code then uses it where Python needs its value{at}: Dynamo {outcome}")
    _refuse_constant_uses_elsewhere(ctx, reach)


def _disabled_helper(plan: FixPlan, ctx, use: cst.CSTNode, origin: cst.CSTNode) -> bool:
    """Whether ``eager-helper``'s rewrite of the function that makes the number at ``origin`` and uses it at
    ``use`` is now on ``plan`` (False where that fixer refuses it)."""
    try:
        disable_helper(plan, ctx, use, origin)
    except Refused:
        return False
    return True


def _refuse_constant_uses_elsewhere(ctx, reach: set[int]) -> None:
    """Refused when a reached function of another file of the project (a model the compiled step of
    this file calls) uses a number where Python needs its value once ``capture_scalar_outputs`` is on:
    that file's events, as this analysis made them with the arguments of the calls, classified with the
    flag on (:attr:`Cause.CAPTURED_CONSTANT`, as ``check`` reports them under the flag).  Its own findings
    without the flag say nothing of this: there the extraction breaks first and the use is traced."""
    flagged = dataclasses.replace(ctx.settings, capture_scalar_outputs=True)
    for other in _other_programs(ctx):
        if not any(id(ev.function) in reach for ev in other.events if ev.function is not None):
            continue
        found = ctx.cached(("capture_scalar_outputs breaks", id(other)), lambda: find_breaks(other, flagged))
        for b in _with_untraced(found):
            if b.cause is Cause.CAPTURED_CONSTANT and id(b.event.function) in reach:
                module = other.module
                line = node_ranges(module, module.code, [b.node]).get(id(b.node))
                where = f"{other.index.path}:{line.line}" if line is not None else other.index.path
                code = shortened(module.code_for_node(b.node).strip())
                outcome = "fails to compile there" if fails_to_compile(b) else "breaks the graph there instead"
                raise Refused(f"`capture_scalar_outputs` would keep a number symbolic that `{b.event.function.name}` "
                              f"({where}) then uses where Python needs its value (`{code}`): Dynamo {outcome}")


def _other_programs(ctx) -> list:
    """The analyses of the other files of the project this file's analysis reached (its calls into them
    are analysed there, with their arguments)."""
    run = ctx.program.run_state
    return [p for p in run.programs.values() if p is not ctx.program] if run is not None else []


def _constant_use(ctx, made: Break) -> "Event | None":
    """The first event after ``made``'s, in this file, that uses its number where Python needs its value."""
    events = ctx.program.events
    index = ctx.program.index
    start = next((i for i, ev in enumerate(events) if ev is made.event), len(events))
    return next((ev for ev in events[start + 1:] if ev.function is not None and ev.function.owner is index
                 and needs_constant(ev, made.node)), None)


def _compile_sites(ctx) -> "list[Site]":
    """The ``torch.compile`` calls and decorators of this file that compile a function of it (a
    module's ``forward`` included: its call is refused later unless the module is only called)."""
    program = ctx.program
    index = program.index
    out: list[Site] = []
    for call, where in index.compile_targets:
        if index.resolve_expr(call.func) not in capture_settings.COMPILE_FUNCTIONS:
            continue
        target = program.entry_points.compile_target(call, where)
        if target is not None and target[0].owner is index:
            out.append((call, target, _reach(ctx, target[0])))
    for fn in index.all_functions:
        if fn.compile_decorated:
            for deco in fn.node.decorators:
                if index.resolve_expr(_callee(decorator_target(deco))) in capture_settings.COMPILE_FUNCTIONS:
                    out.append((deco, (fn, None), _reach(ctx, fn)))
    return out


def _callee(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``torch.compile`` of ``torch.compile(backend=...)``."""
    return expr.func if isinstance(expr, cst.Call) else expr


def _reach(ctx, fn: "FunctionInfo") -> set[int]:
    """Ids of ``fn`` and of the functions its analysed calls reach, in this file and in the other files of
    the project the analysis reached (the call edges :mod:`dynalint.analysis.capture_settings` reads, made
    once per analysis round)."""
    edges = ctx.cached("call edges", lambda: capture_settings.call_edges(
        [ev for p in (ctx.program, *_other_programs(ctx)) for ev in p.events]))
    return capture_settings.reach(edges, fn)


def _flags(ctx, reach: set[int]) -> list[str]:
    """The capture flags of the breaks in the reached functions, in :data:`CAPTURE_FLAGS` order."""
    found = {capture_flag(b) for b in ctx.breaks if id(b.event.function) in reach}
    return [f for f in CAPTURE_FLAGS if f in found]


def _patch_call(plan: FixPlan, ctx, call: cst.Call, target: "tuple[FunctionInfo, ClassInfo | None]",
                needed: list[str]) -> set[str]:
    """Wrap ``torch.compile(f, ...)`` in ``torch._dynamo.config.patch(flags)(...)``, or add the missing
    flags to a patch already around it.  The flags added."""
    target_arg = call.args[0].value
    parent = ctx.parent(call)
    outer = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Call) and _is_patch(ctx, outer.func.func) \
            and len(outer.args) == 1:
        return _add_flags(plan, ctx, outer.func, needed)
    if not (isinstance(parent, cst.Assign) and parent.value is call):
        raise Refused("the result of `torch.compile` is not assigned (`f = torch.compile(f)`), so the wrapped "
                      "call would not read like the code around it")
    if not isinstance(target_arg, cst.Attribute) and target[1] is not None and not _only_called_after(ctx, parent):
        raise Refused("`torch.compile` compiles a module here, used after the call other than by calling it: "
                      "wrapped by `torch._dynamo.config.patch` it would be a plain function, without "
                      "`.parameters()`, `.train()` or `state_dict()`")
    torch = use_torch(plan, ctx, call)
    wrapper = cst.Call(func=_patch_expr(torch, needed), args=[cst.Arg(call)])
    plan.replace(call, wrapper)
    return set(needed)


def _only_called_after(ctx, assign: cst.Assign) -> bool:
    """``assign`` binds one name, outside any loop of its scope, and every use of that name that may run
    after it calls it (``model(x)``): a use textually after it in the same scope, or any use in a function
    nested there that does not bind the name itself.  Then the plain function the patch returns serves."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return False
    name = assign.targets[0].target.value
    scope = ctx.enclosing_function(assign) or ctx.module
    if isinstance(scope, cst.FunctionDef) and name not in local_names_of(scope)[0]:
        return False  # `global model`: the module's other functions see it
    current = ctx.parent(assign)
    while current is not None and current is not scope:
        if isinstance(current, (cst.For, cst.While)):
            return False  # the code before the assignment runs again after it
        current = ctx.parent(current)
    own = {id(n) for n in walk(assign)}
    after = False
    for node in walk(scope):
        if node is assign:
            after = True
        if id(node) in own or not isinstance(node, cst.Name) or node.value != name:
            continue
        parent = ctx.parent(node)
        if not is_variable(node, parent):
            continue  # `x.model`, `f(model=...)`: another name
        nested = _nested_scope(ctx, node, scope)
        if nested is not None and name in local_names_of(nested)[0]:
            continue  # the nested function's own `model`
        if (after or nested is not None) and not (isinstance(parent, cst.Call) and parent.func is node):
            return False
    return True


def _nested_scope(ctx, node: cst.CSTNode, scope: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost function between ``node`` and ``scope``, if any (a lambda or a class body counts
    as no binding of its own: conservative)."""
    current = ctx.parent(node)
    while current is not None and current is not scope:
        if isinstance(current, cst.FunctionDef):
            return current
        current = ctx.parent(current)
    return None


def _patch_decorator(plan: FixPlan, ctx, deco: cst.Decorator, target: "tuple[FunctionInfo, ClassInfo | None]",
                     needed: list[str]) -> set[str]:
    """Put ``@torch._dynamo.config.patch(flags)`` right above ``@torch.compile`` (which must be the
    outermost decorator, or have only such a patch above it)."""
    fn = target[0].node
    i = next(k for k, d in enumerate(fn.decorators) if d is deco)
    above = fn.decorators[i - 1] if i else None
    if above is not None and isinstance(above.decorator, cst.Call) and _is_patch(ctx, above.decorator.func) \
            and i == 1:
        return _add_flags(plan, ctx, above.decorator, needed)
    if i:
        raise Refused("`@torch.compile` is not the outermost decorator, so a patch above it would wrap "
                      "more than the compiled function")
    torch = use_torch(plan, ctx, fn)
    patch = cst.Decorator(decorator=_patch_expr(torch, needed), leading_lines=deco.leading_lines)
    plan.replace(deco, cst.FlattenSentinel([patch, deco.with_changes(leading_lines=())]))
    return set(needed)


def _is_patch(ctx, func: cst.BaseExpression) -> bool:
    return ctx.program.index.resolve_expr(func) == capture_settings.PATCH_FUNCTION


def _add_flags(plan: FixPlan, ctx, patch: cst.Call, needed: list[str]) -> set[str]:
    """The flags a patch call lacks, added as ``flag=True`` (nothing when it has them all; refused when
    it turns one of them off or is not written with keywords)."""
    given = {a.keyword.value: a.value for a in patch.args if a.keyword is not None}
    if len(given) != len(patch.args) or any(a.star for a in patch.args):
        raise Refused("the `torch._dynamo.config.patch` around the compile call is not written with keywords")
    for flag in needed:
        value = given.get(flag)
        if value is not None and not (isinstance(value, cst.Name) and value.value == "True"):
            raise Refused(f"the `torch._dynamo.config.patch` around the compile call sets `{flag}` itself")
    missing = [f for f in needed if f not in given]
    if missing:
        last = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in patch.args[-1:]]
        args = [*patch.args[:-1], *last, *_patch_expr("torch", missing).args]
        plan.replace(patch, patch.with_changes(args=args))
    return set(missing)


def _patch_expr(torch: str, flags: list[str]) -> cst.Call:
    """``<torch>._dynamo.config.patch(flag=True, ...)``."""
    call = cst.parse_expression(f"{torch}._dynamo.config.patch({', '.join(f'{f}=True' for f in flags)})")
    assert isinstance(call, cst.Call)
    return call
