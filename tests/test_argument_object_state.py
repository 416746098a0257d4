"""DYN203 for an object of a plain class the compiled function is given and changes (``state.step += 1`` of
the ``state`` each call passes): the next call finds the new value, which Dynamo guarded, and recompiles
once (a number on an object that is no module is then dynamic; measured on torch 2.13: ``state.step ==
0``). An object every call builds anew (``step(State(...))``) carries nothing to the next call."""
from __future__ import annotations

from helpers import script_case_tests

KEPT = """\
import torch
from dataclasses import dataclass


@dataclass
class MDState:
    pos: torch.Tensor
    vel: torch.Tensor
    step: int = 0


def verlet_step(state: MDState, dt: float) -> MDState:
    state.pos = state.pos + dt * state.vel
    state.step += 1
    return state


if __name__ == "__main__":
    step = torch.compile(verlet_step, backend="eager")
    s = MDState(torch.rand(4, 3), torch.rand(4, 3))
    for _ in range(3):
        s = step(s, 0.01)
"""

BUILT_EACH_CALL = KEPT.replace("""    s = MDState(torch.rand(4, 3), torch.rand(4, 3))
    for _ in range(3):
        s = step(s, 0.01)
""", """    for _ in range(3):
        s = step(MDState(torch.rand(4, 3), torch.rand(4, 3)), 0.01)
""")

#: name -> (script, DYN203 lines, recompiles)
CASES = {"an-argument-kept-across-calls": (KEPT, [14], 1),
         "an-argument-built-at-each-call": (BUILT_EACH_CALL, [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN203")
