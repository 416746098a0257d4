"""What the recompile rules share: how a recompile ends, and which functions are compiled."""
from __future__ import annotations

from dynalint.rules.base import RuleContext

#: what happens to a function that keeps recompiling (measured on torch 2.13)
RECOMPILE_LIMIT = "after 8 recompiles (torch 2.13's recompile_limit) Dynamo stops compiling it and runs eagerly"


def compiled_ids(ctx: RuleContext) -> set[int]:
    """``id()`` of every function the analysis treats as compiled."""
    return {id(fn) for fn in ctx.program.compiled}
