"""Method chains split across lines before a break in the code Dynamo resumes after a first break:
on Python 3.11 its line table is shifted, and the second break is logged below the function."""
import torch


def chained(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    z = (y
         .exp()
         .neg())
    w = (z
         .abs()
         .sqrt())
    print("here")
    return w + z


def dynalint_inputs():
    return [(torch.randn(4),)]
