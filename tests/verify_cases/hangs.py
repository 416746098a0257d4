"""A function that never returns: verify cuts it at the timeout."""
import torch


def spin(x):
    n = 0
    while True:
        n += 1


def dynalint_inputs():
    return [(torch.randn(2),)]
