"""DYN206: callers pass different Python values to a compiled entry point."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.entry_arguments import entry_argument_values
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT


@register
class PythonArgumentVaries(Rule):
    code = "DYN206"
    name = "python-argument-varies"
    kind = "recompile"
    summary = ("Callers in the project pass different Python values (True/False, 0.5/1.0, 'a'/'b', None/a tensor, "
               "a list/a tuple) to a compiled entry point.")
    rationale = """
        Dynamo specialises a compiled function on the Python values of its arguments and guards on
        them. When callers pass different literal values for the same parameter - `model(x, True)` in
        one place and `model(x, False)` in another, or changing temperatures - each new value fails the
        guard and recompiles: a bool compiles one graph per value, an int or float recompiles once and
        is then treated as dynamic (under `torch.compile(..., dynamic=False)` every new number
        recompiles), and a string recompiles for every new value. `None` at one call and a tensor at
        another compile one graph each, and so do a list and a tuple. Calls of what
        `torch.compile(...)` returned count the same, calls from the other files of the project
        (through any name their imports bind) too, and so does a number computed from the variable
        of the loop that makes the calls (`compiled(x, step + 1)`, `for t in (1.0, 0.5): step(x, t)`,
        a schedule bound once to such a tuple or list). The message names a call that passes each
        value. A number the compiled code only passes on (stores in a tuple, list or dict, returns),
        and any argument it never reads, installs no guard and does not recompile (all measured on
        torch 2.13).
    """
    fix = """
        Pass values that change as tensors (they become graph inputs), split the entry point into one
        function per mode, or accept the (bounded) extra graphs and silence with `# noqa: DYN206`.
    """
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                hot = head(x, 1.0)
                cold = head(x, 0.5)
                return hot, cold
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x) * k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False, line=3),
        Example("""
            import torch

            SCHEDULE = (1.0, 0.5, 0.25)

            @torch.compile
            def step(x, t):
                return x * t

            def sample(x):
                for t in SCHEDULE:
                    x = step(x, t)
                return x
        """, target="sample", inputs="[(torch.randn(4),)]", compile_target=False, line=6),
        Example("""
            import torch

            @torch.compile
            def head(x, mask):
                if mask is not None:
                    x = x * mask
                return x.sin()

            def run(x):
                return head(x, None), head(x, torch.ones(4))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            @torch.compile
            def pool(x, dims):
                return x.sum(dims[0]) + len(dims)

            def run(x):
                return pool(x, [0]), pool(x, (0,))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False, line=4),
    ]
    VALID = [
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x), k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                return head(x, 1.0), head(x * 2, 1.0)
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def head(x, mask):
                return x.sin()

            def run(x):
                return head(x, None), head(x, torch.ones(4))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for entry in entry_argument_values(ctx.program):
            fn, prm = entry.function, entry.param
            shown = "; ".join(f"{where} passes {what}" for where, what in entry.sites)
            kinds = {t for t, _ in entry.values}
            if kinds == {"bool"}:
                effect = "so it compiles one graph per value"
            elif "str" in kinds:
                effect = "so each new value recompiles it"
            elif kinds & {"NoneType", "tensor"}:
                effect = "so it compiles one graph for `None` and one for a tensor"
            elif kinds & {"list", "tuple"}:
                effect = "so it compiles one graph for a list and one for a tuple"
            elif entry.static:  # dynamic=False: no automatic dynamic (measured on torch 2.13)
                effect = f"and it is compiled with `dynamic=False`, so each new value recompiles it; {RECOMPILE_LIMIT}"
            else:  # numbers: one recompile, then the parameter is dynamic (measured on torch 2.13)
                effect = "so the second value recompiles it (numbers are then treated as dynamic)"
            yield Finding(rule=type(self), node=prm.name, statement=fn.node,
                          message=f"`{prm.name.value}` varies between calls ({shown}): Dynamo "
                                  f"specialises `{fn.name}` on Python arguments, {effect}.",
                          hint="pass the value as a tensor, or split the entry point per mode")
