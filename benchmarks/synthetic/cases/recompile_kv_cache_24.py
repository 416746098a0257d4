"""Decoder layer with a growing key/value cache and a position counter stored on the module."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CachedSelfAttention(nn.Module):
    def __init__(self, dim=16, max_len=32):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("k_cache", torch.zeros(1, max_len, dim), persistent=False)
        self.register_buffer("v_cache", torch.zeros(1, max_len, dim), persistent=False)
        self.pos = 0

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, -1)
        self.k_cache[:, self.pos:self.pos + T] = k
        self.v_cache[:, self.pos:self.pos + T] = v
        self.pos += T
        keys = self.k_cache[:, :self.pos]
        values = self.v_cache[:, :self.pos]
        return F.scaled_dot_product_attention(q, keys, values)


class StaticCacheAttention(nn.Module):
    """Position passed in as a tensor; cache writes through index_copy_ so shapes never change."""

    def __init__(self, dim=16, max_len=32):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("k_cache", torch.zeros(1, max_len, dim), persistent=False)
        self.register_buffer("v_cache", torch.zeros(1, max_len, dim), persistent=False)
        self.max_len = max_len

    @torch.no_grad()
    def forward(self, x, cache_position):
        q, k, v = self.qkv(x).chunk(3, -1)
        self.k_cache.index_copy_(1, cache_position, k)
        self.v_cache.index_copy_(1, cache_position, v)
        visible = torch.arange(self.max_len) <= cache_position[-1]
        return F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=visible[None, None, :])


def make_inputs():
    return [((), (torch.randn(1, 1, 16),)) for _ in range(4)]


def make_inputs_static():
    return [((), (torch.randn(1, 1, 16), torch.tensor([i]))) for i in range(4)]


EXAMPLES = {"CachedSelfAttention": make_inputs, "StaticCacheAttention": make_inputs_static}
