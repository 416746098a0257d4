"""A helper with a tensor-valued branch, imported by uses_helper.py: fixing this file is verified there."""
import torch


def soft_limit(x: torch.Tensor) -> torch.Tensor:
    if x.abs().max() > 2.0:
        y = x / 2
    else:
        y = x * 1.0
    return y
