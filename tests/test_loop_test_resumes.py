"""A break at an operand of a ``while`` test's ``and``/``or`` chain other than its last: Dynamo cannot resume
in the middle of the test and runs the rest of the function eagerly, but the frame it resumes there first
traces one pass of the loop's body and breaks at the body's first break (measured on torch 2.13: that
break is logged, the ``print`` after it in the body and the one after the loop are not)."""
from helpers import break_tests

INTEGRATE = """\
import torch


def integrate(z, t1: float, max_steps: int):
    t = torch.tensor(0.0)
    steps = 0
    while t < t1 and steps < max_steps:
        h = min(0.3, t1 - float(t))
        print("step", steps)
        z = z + h * z
        t = t + h
        steps += 1
    print("done")
    return z


def main(z):
    return torch.compile(integrate, backend="eager")(z, 1.0, 5)
"""
test_check, test_dynamo = break_tests(INTEGRATE, {(7, "DYN103"), (8, "DYN102")}, "[(torch.randn(3),)]")

#: a body without a break of its own: the loop's test is the only break
CLEAN_BODY = INTEGRATE.replace('        h = min(0.3, t1 - float(t))\n        print("step", steps)\n',
                               "        h = 0.3\n")
test_check_clean, test_dynamo_clean = break_tests(CLEAN_BODY, {(7, "DYN103")}, "[(torch.randn(3),)]")
