"""Defensive checks that stay inside the graph: shape asserts, async asserts, compile-time guards, torch._check."""
import warnings

import torch
import torch.nn as nn


def _debug_print(*args):
    if not torch.compiler.is_compiling():
        print(*args)


class CheckedProjection(nn.Module):
    def __init__(self, din=8, dout=8, max_tokens=1024):
        super().__init__()
        self.proj = nn.Linear(din, dout)
        self.max_tokens = max_tokens

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"expected (B, T, C), got {tuple(x.shape)}")
        if x.shape[1] > self.max_tokens:
            warnings.warn("sequence longer than max_tokens; truncating")
            x = x[:, : self.max_tokens]
        torch._check(x.shape[-1] == self.proj.in_features)
        y = self.proj(x)
        torch._assert_async(torch.isfinite(y).all())
        _debug_print("projection", y.shape)
        return y


def safe_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    assert logits.shape == mask.shape, "mask/logits mismatch"
    logits = torch.where(mask, logits, torch.finfo(logits.dtype).min)
    out = torch.log_softmax(logits, dim=-1)
    return torch.nan_to_num(out, neginf=0.0)


def clipped_ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    den = torch.where(den.abs() < 1e-6, torch.full_like(den, 1e-6), den)
    ratio = num / den
    return ratio.clamp(-10, 10) if ratio.requires_grad else ratio.clamp_(-10, 10)


def make_inputs():
    return [((), (torch.randn(2, 4, 8),)) for _ in range(2)]


def make_inputs_ls():
    return [(torch.randn(2, 5), torch.rand(2, 5) > 0.3) for _ in range(2)]


def make_inputs_ratio():
    return [(torch.randn(6), torch.randn(6)) for _ in range(2)]


EXAMPLES = {"CheckedProjection": make_inputs, "safe_log_softmax": make_inputs_ls, "clipped_ratio": make_inputs_ratio}
