"""A break inside a loop that a ``return`` follows before the loop's jump back is one Dynamo resumes from:
its test for a loop (``maybe_has_backedge``, torch 2.13) scans the code after the break and stops at the
first ``return``, so a convergence test (``if err.item() < tol: return x``) resumes inside the loop, where
later breaks are met (a ``print`` at each pass); with a ``continue`` or the end of the loop's body first,
Dynamo runs the whole function eagerly, and what follows the break is never traced."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch


def solve_if(z):
    t = 1.0
    for _ in range(3):
        if z.mean().item() < 0.0:
            return z * t
        t *= 0.5
        print("step")
    return z * t


def solve_continue(z):
    t = 1.0
    for i in range(3):
        if z.mean().item() < 0.0:
            continue
        t *= 0.5
        print("step")
        if i > 5:
            return z
    return z * t


def solve_assign(z):
    acc = 0.0
    for _ in range(3):
        v = z.mean().item()
        acc = acc + v
        print("step")
    return z * acc


def solve_while(z):
    t = 1.0
    k = 0
    while k < 3:
        if z.mean().item() < 0.0:
            return z * t
        t *= 0.5
        k += 1
        print("step")
    return z * t


def main(z):
    for fn in (solve_if, solve_continue, solve_assign, solve_while):
        torch.compile(fn, backend="eager")(z)
"""

test_check, test_dynamo = break_tests(CODE, {(7, "DYN102"), (10, "DYN105"), (17, "DYN102"), (29, "DYN102"),
                                             (39, "DYN102"), (43, "DYN105")}, "[(torch.ones(3),)]")
