"""A script that compiles with ``@torch.compile`` calls what it compiles as a script that binds
``torch.compile(f)`` does: the tensors its calls pass are tensors in the compiled function, also where the
function only hands them to a helper (whose ``max_length=None``, which no call passes, is None there)."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    positions = torch.arange(max_length)
    return positions[None, :] < length[:, None]


@torch.compile(backend="eager")
def masked_mean(x, lengths):
    mask = sequence_mask(lengths)
    return (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)


def main():
    masked_mean(torch.randn(2, 5, 3), torch.tensor([3, 5]))
    masked_mean(torch.randn(2, 5, 3), torch.tensor([5, 2]))
"""

test_check, test_dynamo = break_tests(CODE, {(7, "DYN102")}, "[()]")
