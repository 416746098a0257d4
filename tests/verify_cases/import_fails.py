"""A module that raises while it is imported (a missing checkpoint, say)."""
import torch


def load_weights():
    raise FileNotFoundError("weights.pt not found")


WEIGHTS = load_weights()


def f(x):
    return x + 1


def dynalint_inputs():
    return [(torch.ones(2),)]
