"""A function that raises only under torch.compile: the report must show what it raised."""
import torch


def picky(x):
    if torch.compiler.is_compiling():
        return x @ torch.ones(5, 5)  # a shape error, on the compiled path only
    return x * 2


def dynalint_inputs():
    return [(torch.randn(3),), (torch.randn(2),)]
