"""Attention helpers called with Python scalars and flags that change from call to call."""
import torch
import torch.nn.functional as F


def scaled_attention(q, k, v, softmax_scale: float, causal: bool = False):
    scores = (q @ k.transpose(-2, -1)) * softmax_scale
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def apply_temperature(logits, temperature):
    return F.softmax(logits / temperature, dim=-1)


def gated_residual(x, gate_on):
    if gate_on:
        return x + torch.tanh(x)
    return x


def make_qkv():
    return tuple(torch.randn(2, 5, 8) for _ in range(3))


def make_inputs_attn():
    return [make_qkv() + (8 ** -0.5, False) for _ in range(3)]


def make_inputs_temp():
    return [(torch.randn(3, 6), t) for t in (1.0, 0.7, 0.5, 1.3)]


def make_inputs_gate():
    return [(torch.randn(3, 6), g) for g in (True, False, True)]


EXAMPLES = {"scaled_attention": make_inputs_attn, "apply_temperature": make_inputs_temp,
            "gated_residual": make_inputs_gate}
