"""A base encoder whose forward calls hooks that subclasses override, with state kept in buffers or attributes."""
import torch
import torch.nn as nn


class BaseEncoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def preprocess(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def postprocess(self, h: torch.Tensor) -> torch.Tensor:
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.postprocess(self.proj(self.preprocess(x)))


class ClippedEncoder(BaseEncoder):
    def __init__(self, dim=8, clip=3.0):
        super().__init__(dim)
        self.clip = clip

    def preprocess(self, x):
        return x.clamp(-self.clip, self.clip)

    def postprocess(self, h):
        return torch.tanh(h)


class StandardizingEncoder(BaseEncoder):
    def preprocess(self, x):
        std = x.std()
        if std < 1e-6:
            return x - x.mean()
        return (x - x.mean()) / std


class CountingEncoder(BaseEncoder):
    def __init__(self, dim=8):
        super().__init__(dim)
        self.seen = 0
        self.register_buffer("seen_buf", torch.zeros((), dtype=torch.long))

    def postprocess(self, h):
        self.seen_buf += h.shape[0]
        self.seen = self.seen + h.shape[0]
        return h


def make_inputs():
    return [((), (torch.randn(3, 8),)) for _ in range(3)]


EXAMPLES = {"ClippedEncoder": make_inputs, "StandardizingEncoder": make_inputs, "CountingEncoder": make_inputs}
