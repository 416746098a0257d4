"""Helpers returning tuples of tensors and Python numbers; callers unpack and branch on the parts."""
from typing import Tuple

import torch
import torch.nn as nn


def split_heads(x: torch.Tensor, n_heads: int) -> Tuple[torch.Tensor, int]:
    b, t, c = x.shape
    head_dim = c // n_heads
    return x.view(b, t, n_heads, head_dim).transpose(1, 2), head_dim


def grad_norm_and_count(grads) -> Tuple[torch.Tensor, int]:
    norms = [g.norm() for g in grads]
    return torch.stack(norms).norm(), len(norms)


def clip_by_global_norm(grads, max_norm: float = 1.0):
    total, n = grad_norm_and_count(grads)
    if n == 0:
        return grads
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    return [g * scale for g in grads]


def clip_if_exploding(grads, max_norm: float = 1.0):
    total, _ = grad_norm_and_count(grads)
    if total > max_norm:
        return [g * (max_norm / total) for g in grads]
    return grads


class MultiHeadPool(nn.Module):
    def __init__(self, dim=8, n_heads=2):
        super().__init__()
        self.n_heads = n_heads
        self.q = nn.Parameter(torch.randn(n_heads, dim // n_heads))

    def forward(self, x):
        h, head_dim = split_heads(x, self.n_heads)
        scores = torch.einsum("bhtd,hd->bht", h, self.q) / head_dim ** 0.5
        return torch.einsum("bht,bhtd->bhd", scores.softmax(-1), h).flatten(1)


def make_grads():
    return [torch.randn(3, 3) * 4, torch.randn(3)]


def make_inputs():
    return [(make_grads(),) for _ in range(2)]


def make_inputs_pool():
    return [((), (torch.randn(2, 5, 8),)) for _ in range(2)]


EXAMPLES = {"clip_by_global_norm": make_inputs, "clip_if_exploding": make_inputs, "MultiHeadPool": make_inputs_pool}
