"""DYN103: loops whose iteration count depends on tensor data."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis.breaks import Cause, unresumable_loop_test
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class DataDependentLoop(Rule):
    code = "DYN103"
    name = "data-dependent-loop"
    summary = "A `while` on a tensor value, or a loop exit (`break`/`return`) decided by a tensor value."
    rationale = """
        Dynamo unrolls Python loops while tracing, so the number of iterations must be known at trace
        time. `while err.max() > tol:` or `if (tok == eos).all(): break` inside a `for` decide the
        iteration count from tensor data, and the graph breaks at the test. A loop exit inside the body,
        like any break in a loop body or in a loop nested in another, makes Dynamo skip the whole function
        and run it eagerly ("graph break in a for/while loop"). The test of a `while` that no other loop
        encloses is different (measured on torch 2.13): Dynamo resumes at the loop header, so the graph
        breaks on every iteration and each iteration's body is a graph of its own; unless the break is at
        an operand of an `and`/`or` test other than the last (`while p[t].max() < thr and t < n:`), where
        Dynamo cannot resume and runs the whole function eagerly (after one pass over the body, which
        still breaks at the body's first break).

        `range(t)` with a tensor `t` breaks at the `range` call ("Failed to trace builtin operator").
        `for i in range(n)` with `n` taken from `.item()` breaks at the `.item()` (DYN102) and then
        recompiles for every new `n` (DYN204).
    """
    fix = """
        Use a fixed iteration budget and mask finished elements (`done = done | cond;
        x = torch.where(done, x, step(x))`), or express the loop with
        `torch._higher_order_ops.while_loop(cond_fn, body_fn, carried)`. Early exits for generation
        belong outside the compiled step: compile the body of the loop, keep the loop in Python.
    """
    gb_types = (GB.DATA_DEPENDENT_BRANCHING, GB.BUILTIN_OPERATOR)
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def shrink(x):
                while x.abs().max() > 1:
                    x = x / 2
                return x
        """, inputs="[(torch.randn(4) * 8,)]", line=5),
        Example("""
            import torch

            @torch.compile
            def refine(x):
                for _ in range(4):
                    x = x * 0.5
                    if x.abs().sum() < 1:
                        break
                return x
        """, line=7),
        Example("""
            import torch

            @torch.compile
            def accumulate(x, counts):
                out = x
                for _ in range(counts.max()):
                    out = out + x
                return out
        """, inputs="[(torch.randn(4), torch.tensor([1, 3]))]", line=6),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def refine(x):
                for _ in range(4):
                    x = torch.where(x.abs().sum() < 1, x, x * 0.5)
                return x
        """),
        Example("""
            import torch

            @torch.compile
            def rows(x):
                out = x[0]
                for i in range(1, x.shape[0]):
                    out = out + x[i]
                return out
        """, inputs="[(torch.randn(3, 4),)]"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for brk in ctx.breaks.of(Cause.TENSOR_RANGE, Cause.LOOP_CONDITION):
            if brk.cause is Cause.TENSOR_RANGE:
                yield self.reported(
                    brk,
                    f"`{ctx.code(brk.node)}` counts iterations with a tensor: `range` needs a Python int, so "
                    "the graph breaks here.",
                    hint="iterate over a size (x.shape[0]), or use a fixed number of iterations with masking",
                )
                continue
            what = "`while` condition" if brk.event.construct == "while" else "loop exit condition"
            if brk.in_loop:
                then = "the graph breaks here and, inside a loop, Dynamo runs the whole function eagerly"
            elif unresumable_loop_test(brk):
                then = "the graph breaks here, in the middle of the loop's `and`/`or` test, where Dynamo cannot " \
                       "resume: it runs the whole function eagerly"
            elif ctx.breaks.body_breaks(brk.statement):
                then = "the graph breaks here, and with the break inside its body Dynamo runs the rest eagerly"
            else:
                then = "the graph breaks at this test on every iteration, and each iteration's body is a " \
                       "graph of its own"
            if ctx.program.uncompiled(brk.event) and "eagerly" in then:
                then = f"compiled, {then.replace('Dynamo runs', 'Dynamo would run')} (nothing in the checked " \
                       f"files compiles `{brk.event.function.name}`: it is checked for its tensor parameters)"
            yield self.reported(
                brk,
                f"{what} `{ctx.code(brk.node)}` depends on tensor data: {then}.",
                hint="use a fixed number of iterations with masking, or torch._higher_order_ops.while_loop",
            )
