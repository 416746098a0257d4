"""DYN208: a compiled entry point is called both with grad mode on and off."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis.entry_arguments import grad_mode_flips, shared_frame_grad_flips, site_where
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class GradModeVaries(Rule):
    code = "DYN208"
    name = "grad-mode-varies"
    kind = "recompile"
    summary = ("Callers in the module run a compiled entry point both with grad mode on and under "
               "`torch.no_grad()`/`torch.inference_mode()`: each mode compiles a graph of its own.")
    rationale = """
        Dynamo guards every graph on the global grad mode. A compiled function or module that is
        trained (grad mode on) and then evaluated under `with torch.no_grad():` or
        `torch.inference_mode()` fails that guard at the first call in the other mode and recompiles
        (`GLOBAL_STATE changed: grad_mode`, measured on torch 2.13, whatever the function computes);
        the two graphs then stay cached, so the flip costs one compile, not one per call. A call counts
        as running with grad mode on only when nothing in the module can turn it off around the call:
        no `torch.set_grad_enabled(...)` called as a statement in the module (in a `with`, it sets the
        mode of its block only, and a call inside that block runs in a mode not known; in a function whose
        last such statement turns the mode back on, or restores a mode it saved, it sets the mode of the
        calls after it in that function only), except a
        script's own `torch.set_grad_enabled(True)`/`(False)` statements one after the other, which set
        the mode of the script's calls after them, and the calling
        function is called in the module (or turns grad mode off itself around the other call), never
        from a no-grad context (a call inside `torch.enable_grad()` within a no-grad block runs with grad
        mode on). Calls
        from code that is compiled itself are inlined and are not counted. A function that breaks the graph
        (outside any loop) is compiled as a frame of its own, with graphs kept on its code and shared by every
        compiled caller; so is one that calls, at any depth, a function that breaks. When one entry point
        runs such a function with grad mode on and another with it off (a model's `forward` reached from a
        compiled loss, and the model compiled for evaluation under `no_grad`), it recompiles the same way;
        the outermost such functions the two reach are reported on their `def` (what they call may run
        inside them in one mode only, behind a branch on `self.training`), not one decorated to set its own
        grad mode. A call of what `torch.compile(...)` returned,
        made at once (`torch.compile(model)(x)`), counts as a call of the entry point. Only calls and breaks
        outside any branch count there: one behind `if self.training:` may run on one entry point's path
        only.
    """
    fix = """
        Usually accept the one extra graph (`# noqa: DYN208`): both stay cached. A second
        `torch.compile` handle of the same function does not help, since Dynamo keeps its graphs on
        the function's code, shared by every handle (measured: still `GLOBAL_STATE changed:
        grad_mode`). Where the evaluation graph is not wanted at all, call the uncompiled function
        under `torch.no_grad()`.
    """
    INVALID = [
        Example("""
            import torch

            lin = torch.nn.Linear(4, 4)

            @torch.compile
            def head(x):
                return lin(x).relu()

            def run(x):
                train = head(x)
                with torch.no_grad():
                    test = head(x)
                return train, test
        """, target="run", inputs="[(torch.randn(2, 4),)]", compile_target=False, line=6),
    ]
    VALID = [
        Example("""
            import torch

            lin = torch.nn.Linear(4, 4)

            @torch.compile
            def head(x):
                return lin(x).relu()

            def run(x):
                with torch.no_grad():
                    first = head(x)
                    second = head(x * 2)
                return first, second
        """, target="run", inputs="[(torch.randn(2, 4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for fn, on, off in grad_mode_flips(ctx.program):
            yield Finding(
                rule=type(self), node=fn.node.name, statement=fn.node,
                message=f"`{fn.name}` runs compiled with grad mode on ({site_where(ctx.program, on)}) and off "
                        f"({site_where(ctx.program, off)}, under no-grad): Dynamo guards on the grad mode, so "
                        "the second mode recompiles it (one graph for each).",
                hint="accept the one extra graph (both stay cached), or call the uncompiled function under no-grad")
        # (a break in a loop makes Dynamo run the whole frame eagerly, with no graph to recompile; so does an
        # RNN module's, met as Dynamo loads the module, where it cannot resume: measured on torch 2.13)
        looped = {id(b.event.function) for b in ctx.breaks if b.in_loop or b.gb is GB.RNN_MODULE}
        shared = shared_frame_grad_flips(ctx.program, ctx.breaks, lambda f: id(f) in looped)
        for fn, (first, on), (second, off) in shared:
            yield Finding(
                rule=type(self), node=fn.node.name, statement=fn.node,
                message=f"`{fn.name}` breaks the graph, or calls code that does, so Dynamo compiles it as a "
                        "frame of its own, whose graphs every compiled caller shares: "
                        f"`{first.name}` runs it with grad mode on "
                        f"({site_where(ctx.program, on)}) and `{second.name}` with it off "
                        f"({site_where(ctx.program, off)}, under no-grad), so the second mode recompiles it.",
                hint="remove the graph break in it, or accept the one extra graph (both stay cached)")
