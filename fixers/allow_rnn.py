"""A call of an ``nn.LSTM``/``GRU``/``RNN`` module (DYN105 ``untraceable-call``) -> Dynamo's ``allow_rnn``,
scoped to the compile call that reaches it.

Before::

    import torch

    rnn = torch.nn.GRU(4, 8, batch_first=True)

    def encode(x):
        out, h = rnn(x)
        return out.sum(1) + h[-1]

    encode = torch.compile(encode)

After::

    import torch

    rnn = torch.nn.GRU(4, 8, batch_first=True)

    def encode(x):
        out, h = rnn(x)
        return out.sum(1) + h[-1]

    encode = torch._dynamo.config.patch(allow_rnn=True)(torch.compile(encode))

Dynamo does not trace the recurrent modules unless ``torch._dynamo.config.allow_rnn`` is on: the graph
breaks at the call ("Attempted to wrap RNN, GRU, or LSTM") and, where that call sits in a loop, the
whole function runs eagerly.  With the flag, Dynamo traces the module's ``forward``, which calls the
same ``aten`` operation the eager module calls (measured on torch 2.13, ``backend="eager"``: no break,
outputs and the gradients of the weights bitwise those of the code run eagerly).  As with the capture
flags (:mod:`dynalint.fixers.capture_flags`, whose patching this fixer shares), the flag is set with
``torch._dynamo.config.patch(...)`` around the compile call of this file that reaches the module call,
so it holds while that callable is traced and no other compiled function of the process sees it; a
patch already there gets the flag added.

Applies only where the file itself calls ``torch.compile`` (the code that compiles a library chooses
Dynamo's configuration) and to a break the analysis attributes to a recurrent module (its class is
``torch.nn.LSTM``, ``GRU`` or ``RNN``, or derives from one).  Refused when the function that calls the
module also breaks the graph in a loop: Dynamo runs that frame eagerly when it meets that break, the
recurrent module included, so the flag would only move the reported break there (measured on a
forecaster whose decoder loop draws from ``random``).  Proves, or refuses, what the capture-flags
patch proves: the compile call's result is assigned or ``@torch.compile`` is the outermost decorator,
and a compiled module wrapped by the patch is only called afterwards.

Unsafe (hazards): the flag is experimental in Dynamo.  A backend other than ``eager`` compiles the
traced recurrent operation, which can round differently from the eager kernel (``assert_close``, not
bitwise).  The patched callable cannot be compiled again (torch 2.13 raises ``AssertionError``), and a
module-level compiled module that another module imports by name is a plain function there.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from dynalint.core import gb_types as GB
from dynalint.fixers.capture_flags import patch_compile_calls
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.split import shown

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.fixers.support.context import FixContext
    from dynalint.rules.base import Finding

#: the ``torch._dynamo.config`` flag under which Dynamo traces the recurrent modules
ALLOW_RNN = "allow_rnn"


@register
class AllowRnn(Fixer):
    name = "allow-rnn"
    codes = ("DYN105",)
    safety = "unsafe"
    last_resort = True
    summary = ("Turn on Dynamo's `allow_rnn` for the compile call of this file that reaches an nn.LSTM/GRU/RNN "
               "call, so the recurrent module is traced instead of breaking the graph.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                torch.manual_seed(0)
                rnn = torch.nn.GRU(4, 8, batch_first=True)

                def encode(x):
                    out, h = rnn(x)
                    return out.sum(1) + h[-1]

                encode = torch.compile(encode, backend="eager")
            """,
            after="""
                import torch

                torch.manual_seed(0)
                rnn = torch.nn.GRU(4, 8, batch_first=True)

                def encode(x):
                    out, h = rnn(x)
                    return out.sum(1) + h[-1]

                encode = torch._dynamo.config.patch(allow_rnn=True)(torch.compile(encode, backend="eager"))
            """,
            inputs="[(torch.randn(2, 3, 4),), (torch.randn(2, 3, 4),)]",
            target="encode",
            compile_target=False,
        ),
    ]

    def plan(self, finding: "Finding", ctx: "FixContext") -> FixPlan | None:
        brk = finding.brk
        if brk is None or brk.gb is not GB.RNN_MODULE:
            return None
        # (a break after the RNN call is not reported, Dynamo running the rest of the function eagerly, but
        # with the RNN traced it would be met)
        in_loop = next((b for b in (*ctx.breaks, *ctx.breaks.unreached) if b.event.function is brk.event.function
                        and b.event.in_loop and b is not brk), None)
        if in_loop is not None:
            raise Refused(f"`{shown(ctx, in_loop.node)}` breaks the graph in a loop of the same function: Dynamo runs "
                          "that frame eagerly there, so the flag would only move the reported break")
        plan = FixPlan("", "unsafe")
        patch_compile_calls(plan, ctx, brk.event.function, lambda reach: _needed(ctx, reach))
        if not plan.replacements:
            return None  # every compile call reaching the module call already has the flag
        plan.description = ("turn on `allow_rnn` for the compiled code only (torch._dynamo.config.patch around the "
                            "compile call): Dynamo traces the recurrent module instead of breaking the graph")
        return plan


def _needed(ctx: "FixContext", reach: set[int]) -> list[str]:
    """``[allow_rnn]`` when a recurrent-module break lies in the reached functions, else nothing."""
    return [ALLOW_RNN] if any(b.gb is GB.RNN_MODULE and id(b.event.function) in reach for b in ctx.breaks) else []
