"""What the recompile rules share: how a function that keeps recompiling ends."""
from __future__ import annotations

#: what happens to a function that keeps recompiling (measured on torch 2.13)
RECOMPILE_LIMIT = "after 8 recompiles (torch 2.13's recompile_limit) Dynamo stops compiling it and runs eagerly"

