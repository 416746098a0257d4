"""A tensor torch's random generator draws (``torch.randint(n, (1,))``) is data that changes at every call,
not a constant of the graph: a number taken from it at a graph break and used after it (DYN204) recompiles the
frame resumed there once, when it first changes (measured on torch 2.13); a tensor made of Python numbers
alone (``torch.zeros``) does not change. The functions are those whose aten ops torch tags
``nondeterministic_seeded``."""
from __future__ import annotations

from conftest import requires_torch
from dynalint.analysis import knowledge as K
from helpers import script_case_tests

SCRIPT = """\
import torch


def random_point(coords):
    idx = torch.randint(coords.shape[0], (1,)).item()
    return coords[idx] * 2


if __name__ == "__main__":
    torch.manual_seed(0)
    f = torch.compile(random_point, backend="eager")
    coords = torch.arange(20).view(10, 2)
    for _ in range(3):
        f(coords)
"""
#: name -> (script, DYN204 lines, recompiles)
CASES = {"a-random-draw": (SCRIPT, [6], 1),
         "a-constant-tensor": (SCRIPT.replace("torch.randint(coords.shape[0], (1,))",
                                              "torch.zeros(1, dtype=torch.long)"), [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN204")


@requires_torch
def test_the_functions_are_those_torch_tags_random() -> None:
    import torch

    for name in sorted(K.TORCH_RANDOM_FUNCS):
        packet = getattr(torch.ops.aten, name)
        tags = {t for overload in packet.overloads() for t in getattr(packet, overload).tags}
        assert torch.Tag.nondeterministic_seeded in tags, name
