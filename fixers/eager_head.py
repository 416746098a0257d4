"""A graph break in the Python prelude of a compiled function (DYN101 ``tensor-condition``, DYN102
``scalar-extraction``, DYN105 ``untraceable-call``) -> that prelude run before the compiled code.

Before::

    import random

    import torch

    def act(q, explore):
        if explore and random.random() < 0.1:
            return random.randrange(q.shape[-1])
        return q.argmax(-1)

    act = torch.compile(act)

After::

    import random

    import torch

    def act(q, explore):
        if explore and random.random() < 0.1:
            return random.randrange(q.shape[-1])
        return _act_compiled(q)


    def _act_compiled(q):
        return q.argmax(-1)

    _act_compiled = torch.compile(_act_compiled)

A compiled function often starts with Python bookkeeping before its tensor work: a counter, a
decision drawn from Python's ``random`` (which Dynamo cannot trace: ``random.random`` is a builtin
method it skips, measured on torch 2.13), a log line.  Dynamo breaks the graph there, and where the
function is compiled in a loop or the break sits in one, the whole frame runs eagerly.  Where the file
compiles the function itself (``@torch.compile`` on it, ``f = torch.compile(f)``, ``f_c =
torch.compile(f)``, ``obj.m = torch.compile(obj.m)``), the statements from the first one that may
compute with tensors (a tensor operation, a module call, or a call of something the analysis does not
know, such as an untyped ``model`` parameter, given an argument that may be a tensor) to the end
become the compiled function, taking
the variables they read, and the function runs its prelude as plain Python, then returns what the
compiled part returns: callers call the same name with the same arguments and get the same result,
and the prelude's break is gone (measured: no break, outputs bitwise those of the code run eagerly).
The compile call or decorator moves to the compiled part, with the ``torch._dynamo.config.patch`` around
it; the function keeps its other decorators (``@torch.no_grad()`` then holds around the compiled part
as it held around the whole function).

Applies when a break of the function lies in the statements of its own body before the first one that
may compute with tensors (the prelude), and the prelude does no tensor work (it runs eagerly as Dynamo ran
it between its graphs: nothing that was compiled moves out of the graph).

Proves, or refuses: the function is neither a generator nor ``async`` and declares nothing ``global``
or ``nonlocal``; the compiled part holds a tensor operation or module call and uses no ``locals()``,
``vars()``, ``eval``/``exec``, nor ``super()`` outside a method; each local variable of the function
it reads and the prelude may bind is bound for certain when it starts (a parameter, or bound by a
statement of the prelude itself) and is passed to it; a method is neither static nor a class method,
and its instance parameter is never rebound.  The function is compiled at one place of the file, as
:mod:`dynalint.fixers.eager_tail`'s split form requires (``@torch.compile`` the innermost decorator,
under nothing but ``torch._dynamo.config.patch``; or a compile call whose result is assigned, run
once, for a module-level function or, on one instance, a method no subclass in the file overrides).
The compiled part's name is new to the file.  A break in the prelude marked ``# noqa`` leaves the
function as written.

Unsafe (hazards): the compiled part is a new name: ``torch._dynamo`` logs and guards name it, code that
inspects the compiled callable (``f_c._orig_mod``) finds the plain function, and another module
importing ``f`` gets the partly compiled function.  A traceback through the compiled part shows its
frame.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis import capture_settings
from dynalint.analysis.syntax import walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.split import (
    compile_places,
    compile_site,
    docstring_count,
    marked_noqa,
    may_compute,
    moved_compile_call,
    passed_names,
    refuse_frame_dependence,
    shown,
    split_at,
    split_target,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.fixers.support.context import FixContext
    from dynalint.rules.base import Finding


@register
class EagerHead(Fixer):
    name = "eager-head"
    codes = ("DYN101", "DYN102", "DYN105")
    safety = "unsafe"
    summary = ("Run the Python prelude of a compiled function that breaks the graph (a draw from `random`, a "
               "counter, a log line) before the compiled code: compile the function from its first tensor "
               "operation on.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import random

                import torch

                random.seed(0)

                def act(q):
                    if random.random() < 0.5:
                        return random.randrange(4)
                    return q.argmax()

                act = torch.compile(act, backend="eager")
            """,
            after="""
                import random

                import torch

                random.seed(0)

                def act(q):
                    if random.random() < 0.5:
                        return random.randrange(4)
                    return _act_compiled(q)


                def _act_compiled(q):
                    return q.argmax()

                _act_compiled = torch.compile(_act_compiled, backend="eager")
            """,
            target="act",
            compile_target=False,
        ),
    ]

    def plan(self, finding: "Finding", ctx: "FixContext") -> FixPlan | None:
        brk = finding.brk
        if brk is None:
            return None
        target = split_target(ctx, brk.event.function)
        if target is None:
            return None
        function, fdef, body = target.function, target.fdef, target.body
        calls, decorators = compile_places(ctx, function, fdef)
        if not calls and not decorators:
            return None  # compiled by its callers (or not at all): they choose what is compiled
        doc = docstring_count(body)
        start = next((i for i in range(doc, len(body)) if may_compute(ctx, body[i])), None)
        prelude = {id(n) for stmt in body[doc:start] for n in walk(stmt)}
        if id(brk.node) not in prelude:
            return None  # not a break of the prelude
        if start is None:
            raise Refused("the function computes nothing with tensors: it would run eagerly in all but name")
        if _already_split(ctx, body[start:]):
            return None
        own = [b for b in ctx.breaks if b.event.function is function and id(b.node) in prelude]
        if marked_noqa(ctx, own) is not None:
            return None  # a break the user keeps (``# noqa``): the function stays as written
        head, tail = body[:start], body[start:]
        refuse_frame_dependence(fdef, tail)
        self_name = target.instance_name()
        target.refuse_super(tail, "the compiled part calls")
        passed = passed_names(fdef, head, tail, self_name)
        site = compile_site(ctx, function, fdef, self_name, calls, decorators, decorated=True)
        if site is None:
            raise Refused("the file does not compile the function at exactly one place that the split can move "
                          "(`@torch.compile` innermost under patches only, or `f = torch.compile(f)` run once)")
        name = fdef.name.value
        compiled_name = ctx.helper_name(name, "compiled")
        plan = FixPlan(f"compile `{compiled_name}`, the statements of `{name}` from `{shown(ctx, body[start])}` on, "
                       f"and run those before it as plain Python: no graph break instead of {len(own)}", self.safety)
        kept = [] if site.decorators else list(fdef.decorators)
        plan.replace(fdef, split_at(fdef, start, compiled_name, passed, self_name, site.decorators, kept,
                                    target.blank))
        if site.line is not None:
            plan.replace(site.line, moved_compile_call(site, name, compiled_name))
        return plan


def _already_split(ctx, tail: list[cst.BaseStatement]) -> bool:
    """``tail`` is one ``return`` of a call of a function this file compiles: the split form already."""
    if len(tail) != 1 or not isinstance(tail[0], cst.SimpleStatementLine) or len(tail[0].body) != 1:
        return False
    small = tail[0].body[0]
    if not isinstance(small, cst.Return) or not isinstance(small.value, cst.Call):
        return False
    func = small.value.func
    callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    index = ctx.program.index
    return any(fn.name == callee and fn.compile_decorated for fn in index.all_functions) or any(
        isinstance(n, cst.Assign) and any(isinstance(c, cst.Call) and index.resolve_expr(c.func)
                                          in capture_settings.COMPILE_FUNCTIONS for c in walk(n.value))
        and any(_bound_name(t.target) == callee for t in n.targets) for n in walk(ctx.module))


def _bound_name(target: cst.BaseExpression) -> str | None:
    """``f`` of ``f = ...`` or ``obj.f = ...``."""
    if isinstance(target, cst.Attribute):
        return target.attr.value
    return target.value if isinstance(target, cst.Name) else None
