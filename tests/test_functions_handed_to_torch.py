"""A function of the checked code handed to a torch function that calls it (``checkpoint(block, x)``,
``torch.func.vmap(row_fn)(x)``), also one defined inside the compiled function: Dynamo traces the torch
function and the function it calls, so a break in its body is a break of the compiled code (measured on
torch 2.13: the ``print`` in each breaks)."""
from helpers import break_tests

HANDED = """\
import torch
from torch.utils.checkpoint import checkpoint


def f(x):
    def block(a):
        print("recomputing block")
        return a.relu() + 1
    return checkpoint(block, x, use_reentrant=False)


def g(x):
    def row_fn(r):
        print("row")
        return r.softmax(-1)
    return torch.func.vmap(row_fn)(x)


def main(x):
    return torch.compile(f, backend="eager")(x), torch.compile(g, backend="eager")(x)
"""
test_check, test_dynamo = break_tests(HANDED, {(7, "DYN105"), (14, "DYN105")}, "[(torch.randn(3, 4),)]")
