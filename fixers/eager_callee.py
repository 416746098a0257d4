"""A compiled function that ends by calling a function Dynamo gives up on (a graph break in a loop of the
callee, which DYN101, DYN102, DYN103, DYN104 or DYN105 reports) -> that end run outside the compiled code.

Before::

    import torch

    def decode(scores):
        best = []
        for row in scores:
            best.append(int(row.argmax()))
        return best

    @torch.compile
    def predict(x, w):
        scores = (x @ w).softmax(-1)
        return decode(scores)

After::

    import torch

    def decode(scores):
        best = []
        for row in scores:
            best.append(int(row.argmax()))
        return best

    def predict(x, w):
        scores = _predict_compiled(x, w)
        return decode(scores)


    @torch.compile
    def _predict_compiled(x, w):
        scores = (x @ w).softmax(-1)
        return scores

A graph break inside a loop makes Dynamo give up on the whole frame of the function that holds it
("graph break in loop": the frame runs eagerly).  When a compiled function calls such a function, the
graph breaks at the call, the callee runs uncompiled, and the caller resumes in a new frame: the callee's
break is reported at every call (measured on torch 2.13).  Where the file compiles the caller itself and
the call is a statement of the caller's own body that every run reaches, the split form of
:mod:`dynalint.fixers.eager_tail` applies: the statements before the call become the compiled function,
returning the variables the rest reads, and the caller runs the call and the statements after it as plain
Python.  The callee ran eagerly already, so it computes as before; no break is left (measured: none,
outputs bitwise those of the code run eagerly).

Applies to a break the analysis places in a loop of a function of this file (a break the capture flags
would not remove as well as one they would: Dynamo gives up on the frame either way when the flags are
off) and to each function the file compiles that calls it at a statement of its own body, not in a
branch or loop of it.

Proves, or refuses, what the split form of ``eager-tail`` proves: the caller is neither a generator nor
``async`` and declares nothing ``global`` or ``nonlocal``; a tensor operation or a module call stays
compiled before the call; the statements from the call on call no module and use no ``locals()``,
``vars()``, ``eval``/``exec`` nor ``super()`` outside a method; each local variable they read is bound
for certain when they start; the caller is compiled at one place of the file (``@torch.compile`` the
innermost decorator under nothing but ``torch._dynamo.config.patch``, or a compile call whose result is
assigned, run once; the caller keeps its other decorators around the call of the compiled part); the
compiled part holds no ``return`` and returns no function or generator it makes.

Unsafe (hazards): tensor work in the statements after the call, which Dynamo compiled in a frame of its
own, now runs eagerly: slower where it is heavy, and computed as eager code computes it, which can differ
in rounding from a compiled backend.  So do the functions the callee calls, which Dynamo compiled as
frames of their own while the callee ran uncompiled.  The compiled part is a new name, as in
``eager-tail``'s split form.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from dynalint.analysis.events import CallEvent
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.split import (
    always_evaluated,
    calls_compiled_part,
    passed_names,
    plan_split,
    refuse_frame_dependence,
    refuse_moved_compute,
    split_form_site,
    split_target,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.fixers.support.context import FixContext
    from dynalint.rules.base import Finding


@register
class EagerCallee(Fixer):
    name = "eager-callee"
    codes = ("DYN101", "DYN102", "DYN103", "DYN104", "DYN105")
    safety = "unsafe"
    summary = ("Where a compiled function of this file ends by calling a function whose graph break in a loop "
               "makes Dynamo run it eagerly, compile only the statements before that call.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                def decode(scores):
                    best = []
                    for row in scores:
                        best.append(int(row.argmax()))
                    return torch.tensor(best)

                @torch.compile(backend="eager")
                def predict(x):
                    scores = (x * 2).softmax(-1)
                    return decode(scores)
            """,
            after="""
                import torch

                def decode(scores):
                    best = []
                    for row in scores:
                        best.append(int(row.argmax()))
                    return torch.tensor(best)

                def predict(x):
                    scores = _predict_compiled(x)
                    return decode(scores)


                @torch.compile(backend="eager")
                def _predict_compiled(x):
                    scores = (x * 2).softmax(-1)
                    return scores
            """,
            inputs="[(torch.randn(3, 4),), (torch.randn(3, 4),)]",
            target="predict",
            compile_target=False,
        ),
    ]

    def plan(self, finding: "Finding", ctx: "FixContext") -> FixPlan | None:
        brk = finding.brk
        if brk is None or not brk.event.in_loop:
            return None
        callee = brk.event.function
        calls = [ev for ev in ctx.program.events if isinstance(ev, CallEvent) and ev.callee is callee
                 and ev.function is not callee]
        plan: FixPlan | None = None
        refusal: Refused | None = None
        for call in calls:
            try:
                split = _plan_caller(ctx, call)
            except Refused as refused:
                refusal = refusal or refused
                continue
            if split is not None:
                if plan is not None:
                    raise Refused("more than one compiled function of this file calls it: one split at a time")
                plan = split
        if plan is None and refusal is not None:
            raise refusal
        return plan


def _plan_caller(ctx, call: CallEvent) -> FixPlan | None:
    """The split of the function that makes ``call``, from the statement of its body that holds it; None
    when that function is not compiled by this file, or the call is not at a statement every run reaches."""
    target = split_target(ctx, call.function)
    if target is None:
        return None
    function, fdef, body = target.function, target.fdef, target.body
    start = next((i for i, stmt in enumerate(body) if any(n is call.node for n in always_evaluated(stmt))), None)
    if start is None or calls_compiled_part(ctx, body[:start]):
        return None  # in a branch or loop of the caller, or the caller is split already
    before, tail = body[:start], body[start:]
    self_name = target.instance_name()
    passed = passed_names(fdef, before, tail, self_name)
    site = split_form_site(ctx, function, fdef, before, passed, self_name, decorated=True)
    if site is None:
        return None  # not compiled here in a form the split keeps: the callers choose what is compiled
    if start == 0:
        raise Refused("the call is the caller's first statement: the whole caller would run eagerly")
    refuse_frame_dependence(fdef, tail)
    refuse_moved_compute(ctx, before, tail)
    target.refuse_super(tail, "the moved statements call")
    return plan_split(ctx, fdef, start, site, passed, self_name, 1, target.blank)
