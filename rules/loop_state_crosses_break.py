"""DYN207: Python state a `while` loop carries across the graph break at its test."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.breaks import Break
from dynalint.analysis.events import CarriedState, WhileLoopEvent
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT


@register
class LoopStateCrossesBreak(Rule):
    code = "DYN207"
    name = "loop-state-crosses-break"
    kind = "recompile"
    summary = "A `while` loop whose test breaks the graph carries a Python counter, an accumulator, a growing list or a tensor it concatenates onto: the resumed frame recompiles as it changes."
    rationale = """
        When the test of a `while` loop depends on tensor data (DYN103) and no other loop encloses it,
        Dynamo breaks the graph at the test and resumes at the loop header on every iteration, with the
        locals alive there as inputs of the resumed frame (measured on torch 2.13), and guards on
        them: a counter or an accumulator the body changes from its own value (`i += 1`,
        `scale *= 2.0`) fails the guard at the second iteration and recompiles once (the number is then
        dynamic); a list or tuple the body grows (`outs.append(x)`) or a string it extends fails it at
        every iteration, and """ + RECOMPILE_LIMIT + """; a tensor the body concatenates onto
        (`out = torch.cat([out, y])`) fails the guard on its size until that size is dynamic (once or
        twice). A break in the loop body, or in a function it calls, makes Dynamo run the
        loop eagerly instead, and nothing recompiles; state kept in tensors is not guarded on its value.
    """
    fix = """
        Keep the loop out of the compiled region (compile its body), bound it with a fixed number of
        iterations and masking, or carry the state as tensors (`steps = steps + 1` on a 0-d tensor,
        a preallocated output written at an index).
    """
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def halve(x):
                steps = 0
                while x.abs().max() > 1:
                    x = x / 2
                    steps += 1
                return x, steps
        """, inputs="[(torch.full((3,), 8.0),), (torch.full((3,), 20.0),)]", line=8),
        Example("""
            import torch

            @torch.compile
            def trajectory(x):
                states = []
                while x.abs().max() > 1:
                    states.append(x)
                    x = x / 2
                return torch.stack(states)
        """, inputs="[(torch.full((3,), 40.0),)]", line=7),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def halve(x):
                steps = torch.zeros((), dtype=torch.long)
                while x.abs().max() > 1:
                    x = x / 2
                    steps = steps + 1
                return x, steps
        """, inputs="[(torch.full((3,), 8.0),), (torch.full((3,), 20.0),)]"),
        Example("""
            import torch

            @torch.compile
            def halve(x):
                steps = 0
                for _ in range(8):
                    x = torch.where(x.abs().max() > 1, x / 2, x)
                    steps += 1
                return x, steps
        """, inputs="[(torch.full((3,), 8.0),), (torch.full((3,), 20.0),)]"),
        Example("""
            import torch

            @torch.compile
            def halve(x):
                total = 0.0
                while x.abs().max() > 1:
                    x = x / 2
                    total += x.sum().item()
                return x, total
        """, inputs="[(torch.full((3,), 8.0),), (torch.full((3,), 20.0),)]"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for loop in ctx.events(WhileLoopEvent):
            header = ctx.breaks.header_break(loop.node) if loop.carried else None
            if header is None:
                continue  # no break at the test, or one that makes Dynamo run the loop eagerly
            for state in loop.carried:
                yield self._finding(ctx, loop, state, header)

    def _finding(self, ctx: RuleContext, loop: WhileLoopEvent, state: CarriedState, header: Break) -> Finding:
        if state.what in ("length", "string"):
            then = f"its {'length' if state.what == 'length' else 'value'} changes at every iteration, so the " \
                   f"resumed frame recompiles at every iteration; {RECOMPILE_LIMIT}"
        elif state.what == "size":
            then = "its size changes at every iteration, and the resumed frame recompiles until Dynamo makes " \
                   "that size dynamic (once or twice)"
        else:
            then = "the resumed frame recompiles when it first changes (the number is then dynamic)"
        return self.finding(
            loop,
            f"this `while` loop carries `{state.name}` across the graph break at its test "
            f"`{ctx.code(header.node, 40)}`: Dynamo resumes at the loop header with it as an input and "
            f"guards on it, and {then}.",
            hint="keep the state in tensors, bound the loop with masking, or compile only the loop body",
            node=state.node,
        )
