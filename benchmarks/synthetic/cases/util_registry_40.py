"""Layers built from a registry and string options, with getattr-based activation lookup."""
import torch
import torch.nn as nn
import torch.nn.functional as F

NORMS = {"layer": nn.LayerNorm, "rms": nn.RMSNorm, "none": lambda d: nn.Identity()}


def get_activation(name: str):
    if hasattr(F, name):
        return getattr(F, name)
    raise KeyError(name)


class RegistryBlock(nn.Module):
    def __init__(self, dim=8, norm="layer", act="gelu", residual=True):
        super().__init__()
        self.norm = NORMS[norm](dim)
        self.fc = nn.Linear(dim, dim)
        self.act_name = act
        self.residual = residual

    def forward(self, x):
        h = get_activation(self.act_name)(self.fc(self.norm(x)))
        return x + h if self.residual else h


class StackedBlocks(nn.Module):
    def __init__(self, specs=(("layer", "gelu"), ("rms", "silu"), ("none", "relu"))):
        super().__init__()
        self.blocks = nn.ModuleList(RegistryBlock(8, n, a) for n, a in specs)
        self.skip_every = 2

    def forward(self, x):
        outs = []
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            if i % self.skip_every == 0:
                outs.append(x)
        return sum(outs) / len(outs)


def make_inputs():
    return [((), (torch.randn(2, 8),)) for _ in range(2)]


EXAMPLES = {"RegistryBlock": make_inputs, "StackedBlocks": make_inputs}
