"""DYN206: callers pass different Python values to a compiled entry point."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.entry_arguments import entry_argument_values
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class PythonArgumentVaries(Rule):
    code = "DYN206"
    name = "python-argument-varies"
    kind = "recompile"
    summary = "Callers in the file pass different Python values (True/False, 0.5/1.0, 'a'/'b') to a compiled entry point."
    rationale = """
        Dynamo specialises a compiled function on the Python values of its arguments and guards on
        them. When callers pass different literal values for the same parameter - `model(x, True)` in
        one place and `model(x, False)` in another, or changing temperatures - each new value fails the
        guard and recompiles: a bool compiles one graph per value, an int or float recompiles once and
        is then treated as dynamic, and a string recompiles for every new value. Calls of what
        `torch.compile(...)` returned count the same, and so does an int computed from the variable of
        the loop that makes the calls (`compiled(x, step + 1)`). A number the compiled code only
        passes on (stores in a tuple, list or dict, returns) installs no guard and does not recompile.
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
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for entry in entry_argument_values(ctx.program):
            fn, prm = entry.function, entry.param
            shown = ", ".join(repr(v) for _, v in sorted(entry.values, key=repr))
            if entry.in_loop:
                shown = (shown + " and " if shown else "") + "values that change from one loop iteration to the next"
            kinds = {t for t, _ in entry.values}
            if kinds == {"bool"}:
                effect = "so it compiles one graph per value"
            elif "str" in kinds or "NoneType" in kinds:
                effect = "so each new value recompiles it"
            else:  # numbers: one recompile, then the parameter is dynamic (measured on torch 2.13)
                effect = "so the second value recompiles it (numbers are then treated as dynamic)"
            yield Finding(rule=type(self), node=prm.name, statement=fn.node,
                          message=f"callers in this file pass `{prm.name.value}` as {shown}: Dynamo "
                                  f"specialises `{fn.name}` on Python arguments, {effect}.",
                          hint="pass the value as a tensor, or split the entry point per mode")
