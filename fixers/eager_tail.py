"""Several graph breaks at the end of a compiled function (DYN105 ``untraceable-call``) -> that end run
outside the compiled code.

Before::

    import torch

    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.1)

    @torch.compile
    def step(x):
        loss = ((w * x).sum() - 1.0) ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

After::

    import torch

    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.1)

    def step(x):
        loss = _step_compiled(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()


    @torch.compile
    def _step_compiled(x):
        loss = ((w * x).sum() - 1.0) ** 2
        return loss

Some calls break the graph whatever the flags: ``optimizer.zero_grad()`` (skipped by Dynamo),
``loss.backward()`` and ``optimizer.step()`` (which calls ``torch._dynamo.graph_break()`` itself),
``load_state_dict``, a call into an extension.  Dynamo breaks at each, resumes in a new frame and
compiles the few operations until the next one, so a training step ends in a chain of breaks and small
graphs (measured on torch 2.13: three breaks for the update above).  Where the file compiles the
function itself (``@torch.compile`` on it, ``f = torch.compile(f)``, ``f_c = torch.compile(f)``,
``obj.m = torch.compile(obj.m)``), the statements before the first such call become the compiled function,
returning the variables the rest reads, and the function calls it, then runs the rest as plain Python:
callers call the same name with the same arguments and get the same result, and Dynamo sees no break at
all (measured: none, outputs and trained weights bitwise those of the code run eagerly).  When the
function is itself the compiled part :mod:`dynalint.fixers.eager_head` made (called once, by the last
statement ``return _f_compiled(a, b)`` of a function that hands on its own variables of the parameters'
names), the rest moves back into that caller after the call instead of into a third function: a training
step becomes ``opt.zero_grad()``, ``loss = _step_compiled(...)``, ``loss.backward()``, ``opt.step()``,
with the forward and the loss compiled.  The compile call or decorator moves to the compiled part
(``_f_compiled = torch.compile(_f_compiled)``, then ``f_c = f``).  Elsewhere (a function the file does
not compile, a module's ``forward``), the statements from the first such call to the end, moved as they
are into a function decorated with ``torch.compiler.disable`` and called there, break the graph once, at
the call (measured: one break, "Skip calling torch.compiler.disable()d function"), and run eagerly, as
they did between the breaks::

    def step(x):  # compiled by its callers
        loss = ((w * x).sum() - 1.0) ** 2
        return _step_eager(loss)


    @torch.compiler.disable
    def _step_eager(loss):
        opt.zero_grad()
        ...

Applies from the first statement of the function's own body that makes such a call on every run (not in
a branch or loop body of it, nor behind ``and``/``or``: a ``warnings.warn`` under a flag breaks only
when the flag is on); for the disable form, when the statements from there to the end break the graph at
two or more statements on every run (its call breaks once itself), and for the split form too when the
one break is a log line (``print``, ``warnings.warn``, ``logging``: the logging fixers keep the code
after it compiled).  The moved statements start earlier over the statements right before that one which
break on every run where no capture flag helps (``if not torch.isfinite(loss):``, an op Dynamo cannot
capture) and call no module.  The helper follows the function in its block, so it sees the same globals
and enclosing variables: a method's helper is a method of its class, called on the same instance
(``self._learn_eager(...)``).

Proves, or refuses: the function is neither a generator nor ``async`` and declares nothing ``global``
or ``nonlocal``; a tensor operation or a module call stays compiled before the moved statements; they
call no module (a forward pass would run eagerly); they use no ``locals()``, ``vars()``,
``eval``/``exec`` (which see the frame), nor ``super()`` outside a method; each local variable of the
function that they use and the statements before them may bind (a parameter, or an assignment before
them) is bound for certain when they start - a parameter, or bound by a statement of the body itself
(or of a ``with`` block in it), and deleted by none - and is passed to the helper; a method is neither
static nor a class method, and its instance parameter is never rebound.  The helper's name is new to
the file.  A break in the moved statements marked ``# noqa`` leaves the function as written (the user
keeps that break where it is).

The split form proves, or the disable form is used: the function is compiled at one place of the file.
As a decorator, ``@torch.compile`` is the innermost one, under nothing but
``torch._dynamo.config.patch(...)`` (all move to the compiled part; another decorator wraps the whole
function).  As a call, its result is assigned and it is wrapped in nothing but such a patch, run once
(not in a loop), and the function has no decorator; ``f = torch.compile(f)`` and ``f_c =
torch.compile(f)`` are statements of the module for a function of the module, and ``f`` is used nowhere
else for the latter (an eager call of ``f`` would run the compiled part); ``f_c = torch.compile(f,
...)`` may also be a statement of another function's own body (``main()``, not in a branch, loop or
``with``) whose options read none of its variables: it becomes the decorator ``@torch.compile(...)`` of
the compiled part, and the statement ``f_c = f``; a method is compiled on one instance with ``obj.m =
torch.compile(obj.m)`` (the compiled part is then set on that instance, as the compiled method was;
``self.step = torch.compile(self._step)`` too, when nothing else uses ``_step``: ``self.step`` becomes
the partly compiled method), and no subclass in the file overrides it (``self.m`` would then compile the
override).  The compiled part holds no ``return``, reads no local variable that it does not bind or take
as a parameter, and returns no function, class, lambda or generator it makes (a value Dynamo would have
to build outside the graph).  Its parameters are those of the function it reads, passed as they are; it
returns the variables it binds that the rest reads.  A docstring stays with the function.  The split
falls between two statements of the function's own body, so no ``try`` or ``with`` holds both parts, and
an exception raised in either reaches the caller as before.

Unsafe (hazards): what the helper calls is not compiled either (``torch.compiler.disable`` holds for
the functions it calls), so tensor work after the first break that Dynamo compiled in pieces now runs
eagerly: slower where that work is heavy, and computed as eager code computes it, which can differ in
rounding from what the compiled pieces gave (measured on the user scripts of ``benchmarks/userfiles``:
an optimizer step traced by Dynamo rounds differently from eager's, and the moved one gives eager's
results bitwise).  A traceback through the moved code shows the helper's frame.  In the split form the
compiled part is a new name: ``torch._dynamo`` logs and guards name it, code that inspects the
compiled callable (``f_c._orig_mod``, ``f_c.__wrapped__``) finds the plain function, and another
module importing ``f`` gets the partly compiled function.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.breaks import Cause, capture_flag
from dynalint.analysis.events import CallEvent
from dynalint.analysis.logging_calls import is_message_call
from dynalint.analysis.syntax import walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch
from dynalint.fixers.support.split import (
    always_evaluated,
    calls_compiled_part,
    marked_noqa,
    module_call,
    passed_names,
    merged_split,
    plan_split,
    refuse_frame_dependence,
    refuse_moved_compute,
    shown,
    split_at,
    split_form_site,
    split_target,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Break
    from dynalint.fixers.support.context import FixContext


@register
class EagerTail(Fixer):
    name = "eager-tail"
    codes = ("DYN105",)
    safety = "unsafe"
    summary = ("Run the end of a compiled function that breaks the graph several times (backward, optimizer "
               "step...) outside the compiled code: where the file compiles the function, compile only the part "
               "before it (no break); elsewhere, move it into one `torch.compiler.disable`d helper (one break).")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                w = torch.nn.Parameter(torch.ones(4))
                opt = torch.optim.SGD([w], lr=0.1)

                @torch.compile(backend="eager")
                def step(x):
                    loss = ((w * x).sum() - 1.0) ** 2
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return loss.detach()
            """,
            after="""
                import torch

                w = torch.nn.Parameter(torch.ones(4))
                opt = torch.optim.SGD([w], lr=0.1)

                def step(x):
                    loss = _step_compiled(x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return loss.detach()


                @torch.compile(backend="eager")
                def _step_compiled(x):
                    loss = ((w * x).sum() - 1.0) ** 2
                    return loss
            """,
            target="step",
            compile_target=False,
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Learner(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.lin = nn.Linear(4, 1)
                        self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)

                    def forward(self, x):
                        loss = self.lin(x).pow(2).mean()
                        # update the weights
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
                        return loss.detach(), loss.item()
            """,
            after="""
                import torch
                import torch.nn as nn

                class Learner(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.lin = nn.Linear(4, 1)
                        self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)

                    def forward(self, x):
                        loss = self.lin(x).pow(2).mean()
                        return self._forward_eager(loss)

                    @torch.compiler.disable
                    def _forward_eager(self, loss):
                        # update the weights
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
                        return loss.detach(), loss.item()
            """,
            inputs="[(torch.randn(3, 4),), (torch.randn(3, 4),), (torch.randn(3, 4),)]",
            target="Learner",
        ),
    ]

    def plan(self, finding, ctx: "FixContext") -> FixPlan | None:
        brk: Break | None = finding.brk
        if brk is None or brk.cause is not Cause.UNTRACEABLE_CALL:
            return None
        target = split_target(ctx, brk.event.function)
        if target is None:
            return None
        function, fdef, body = target.function, target.fdef, target.body
        always = {id(n): i for i, stmt in enumerate(body) for n in always_evaluated(stmt)}
        own = [b for b in ctx.breaks if b.event.function is function and id(b.node) in always]
        anchor = min((b for b in own if b.cause is Cause.UNTRACEABLE_CALL), key=lambda b: always[id(b.node)],
                     default=None)
        if anchor is None or anchor.node is not brk.node:
            return None  # one plan per function, made for its first call that breaks on every run
        start = _start(ctx, body, always, own, always[id(anchor.node)])
        tail = body[start:]
        if calls_compiled_part(ctx, body[:start]):
            return None  # already split: the compiled part is called, the rest runs outside the graph
        breaks = {id(b.statement) for b in own if always[id(b.node)] >= start}
        if len(breaks) < 2 and len(tail) == 1 and _calls_disabled(ctx, tail[0]):
            return None  # already a call of an eager helper
        moved = {id(n) for stmt in tail for n in walk(stmt)}
        marked = marked_noqa(ctx, [b for b in ctx.breaks if b.event.function is function and id(b.node) in moved])
        if marked is not None:
            return None  # a break the user keeps (``# noqa``): the code around it stays as written
        if start == 0:
            raise Refused("the call is the function's first statement: the whole function would run eagerly")
        refuse_frame_dependence(fdef, tail)
        refuse_moved_compute(ctx, body[:start], tail)
        self_name = target.instance_name()
        target.refuse_super(tail, "the moved statements call")
        passed = passed_names(fdef, body[:start], tail, self_name)
        site = split_form_site(ctx, function, fdef, body[:start], passed, self_name)
        if site is not None and len(breaks) < 2 and _logs(ctx, anchor.node):
            site = None  # one log line: the logging fixers keep the code after it compiled
        if site is not None:
            return merged_split(ctx, fdef, start, passed, self_name, len(breaks)) \
                or plan_split(ctx, fdef, start, site, passed, self_name, len(breaks), target.blank)
        if len(breaks) < 2:
            raise Refused("the statements from this call to the end of the function break the graph once on "
                          "every run: an eager helper would break it there as well")
        helper_name = ctx.helper_name(fdef.name.value, "eager")
        plan = FixPlan(f"move the statements from `{shown(ctx, body[start])}` on into `{helper_name}`, "
                       "decorated with torch.compiler.disable: one graph break there instead of "
                       f"{len(breaks)}; they run eagerly", self.safety)
        torch = use_torch(plan, ctx, fdef)
        plan.replace(fdef, _split(fdef, start, helper_name, passed, self_name, torch, target.blank))
        return plan


def _logs(ctx, node: cst.CSTNode) -> bool:
    """``node`` is a call that only emits a message (see
    :func:`~dynalint.analysis.logging_calls.is_message_call`)."""
    ev = ctx.event(node, CallEvent)
    return ev is not None and is_message_call(ev)


def _split(fdef: cst.FunctionDef, start: int, helper_name: str, passed: list[str], self_name: str | None,
           torch: str, blank: int) -> cst.FlattenSentinel:
    """``fdef`` ending in ``return <helper>(<passed>)`` (on ``self_name`` for a method), followed by the
    helper: the statements from ``start`` on, under ``@<torch>.compiler.disable``."""
    disable = cst.Decorator(decorator=cst.parse_expression(f"{torch}.compiler.disable"))
    return split_at(fdef, start, helper_name, passed, self_name, [disable], list(fdef.decorators), blank)


def _start(ctx, body: list[cst.BaseStatement], always: dict[int, int], own: "list[Break]", anchor: int) -> int:
    """Where the moved statements start: at the anchor's statement, or earlier over the statements right
    before it that break the graph on every run where no capture flag helps (``if not
    torch.isfinite(loss):`` before the update): moved too, their breaks go with them."""
    start = anchor
    while start > 0 and any(always[id(b.node)] == start - 1 and capture_flag(b) is None for b in own) \
            and not module_call(ctx, body[start - 1]):
        start -= 1
    return start


def _calls_disabled(ctx, stmt: cst.CSTNode) -> bool:
    """``stmt`` calls a function of the file decorated with ``torch.compiler.disable``."""
    for n in walk(stmt, into_scopes=False):
        if isinstance(n, cst.Call):
            name = n.func.attr.value if isinstance(n.func, cst.Attribute) else getattr(n.func, "value", None)
            if any(fn.disabled and fn.name == name for fn in ctx.program.index.all_functions):
                return True
    return False
