"""Fake quantisation for QAT: min/max observers, per-tensor and per-channel scales, a degenerate-range guard."""
import torch
import torch.nn as nn


class MinMaxObserver(nn.Module):
    def __init__(self, bits=8, averaging_constant=0.01):
        super().__init__()
        self.qmax = 2 ** bits - 1
        self.c = averaging_constant
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    @torch.no_grad()
    def observe(self, x):
        lo, hi = x.min(), x.max()
        first = torch.isinf(self.min_val)
        self.min_val.copy_(torch.where(first, lo, self.min_val + self.c * (lo - self.min_val)))
        self.max_val.copy_(torch.where(first, hi, self.max_val + self.c * (hi - self.max_val)))

    def qparams(self):
        scale = (self.max_val - self.min_val).clamp(min=1e-8) / self.qmax
        zero_point = torch.round(-self.min_val / scale).clamp(0, self.qmax)
        return scale, zero_point


class FakeQuantize(MinMaxObserver):
    def forward(self, x):
        if self.training:
            self.observe(x)
        scale, zp = self.qparams()
        q = torch.clamp(torch.round(x / scale) + zp, 0, self.qmax)
        return (q - zp) * scale


def quantize_per_channel(w: torch.Tensor, bits: int = 4, axis: int = 0):
    dims = [d for d in range(w.dim()) if d != axis]
    wmax = w.abs().amax(dim=dims, keepdim=True)
    qmax = 2 ** (bits - 1) - 1
    scale = wmax / qmax
    if (scale == 0).any():
        scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.clamp(torch.round(w / scale), -qmax - 1, qmax) * scale


def make_inputs():
    return [((), (torch.randn(4, 6),)) for _ in range(3)]


def make_inputs_pc():
    return [(torch.randn(4, 6),) for _ in range(2)]


EXAMPLES = {"FakeQuantize": make_inputs, "quantize_per_channel": make_inputs_pc}
