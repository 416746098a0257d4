"""Encoder self-attention with key padding masks built from lengths, ALiBi biases and a fast path."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def get_alibi_slopes(n_heads: int) -> torch.Tensor:
    def pow2_slopes(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return torch.tensor(pow2_slopes(n_heads))
    closest = 2 ** math.floor(math.log2(n_heads))
    extra = pow2_slopes(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(pow2_slopes(closest) + extra)


def lengths_to_padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    steps = torch.arange(max_len, device=lengths.device)
    return steps[None, :] >= lengths[:, None]


class AlibiSelfAttention(nn.Module):
    def __init__(self, dim, n_heads, dropout=0.0):
        super().__init__()
        self.n_heads = n_heads
        self.scale = (dim // n_heads) ** -0.5
        self.in_proj = nn.Linear(dim, dim * 3)
        self.out_proj = nn.Linear(dim, dim)
        self.dropout = dropout
        self.register_buffer("slopes", get_alibi_slopes(n_heads), persistent=False)

    def forward(self, x, lengths=None):
        B, T, _ = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_heads, -1).transpose(1, 2)
        k = k.view(B, T, self.n_heads, -1).transpose(1, 2)
        v = v.view(B, T, self.n_heads, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        rel = torch.arange(T, device=x.device)
        rel = (rel[None, :] - rel[:, None]).abs().neg().float()
        scores = scores + self.slopes[:, None, None] * rel
        if lengths is not None:
            pad = lengths_to_padding_mask(lengths, T)
            if pad.any():
                scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        attn = F.dropout(scores.softmax(-1), p=self.dropout, training=self.training)
        out = (attn @ v).transpose(1, 2).reshape(B, T, -1)
        return self.out_proj(out)


def masked_mean_pool(hidden: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    mask = ~lengths_to_padding_mask(lengths, hidden.size(1))
    summed = (hidden * mask.unsqueeze(-1)).sum(1)
    return summed / mask.sum(1, keepdim=True).clamp(min=1)


def make_inputs():
    return [((16, 4), (torch.randn(3, 6, 16), torch.tensor(lens))) for lens in ([6, 4, 2], [6, 5, 3])]


def make_inputs_pool():
    return [(torch.randn(3, 6, 16), torch.tensor(lens)) for lens in ([6, 4, 2], [6, 5, 3])]


EXAMPLES = {"AlibiSelfAttention": make_inputs, "masked_mean_pool": make_inputs_pool}
