"""DYN208: a compiled entry point is called both with grad mode on and off."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.entry_arguments import grad_mode_flips, site_where
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
        mode of its block only, and a call inside that block runs in a mode not known), except a
        script's own `torch.set_grad_enabled(True)`/`(False)` statements one after the other, which set
        the mode of the script's calls after them, and the calling
        function is called in the module (or turns grad mode off itself around the other call), never
        from a no-grad context. Calls
        from code that is compiled itself are inlined and are not counted.
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
