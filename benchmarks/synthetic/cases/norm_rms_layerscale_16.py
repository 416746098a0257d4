"""RMSNorm with an fp32 upcast, LayerScale, and stochastic depth in a pre-norm residual block."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        if x.dtype in (torch.float16, torch.bfloat16):
            return self._norm(x.float()).type_as(x) * self.weight
        return self._norm(x) * self.weight


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    return x * random_tensor / keep_prob


class ResidualBlock(nn.Module):
    def __init__(self, dim, drop_path_rate=0.1, layerdrop=0.0):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
        self.ls = LayerScale(dim)
        self.drop_path_rate = drop_path_rate
        self.layerdrop = layerdrop

    def forward(self, x):
        if self.training and self.layerdrop > 0 and torch.rand(()) < self.layerdrop:
            return x
        return x + drop_path(self.ls(self.mlp(self.norm(x))), self.drop_path_rate, self.training)


def make_inputs():
    return [((16,), (torch.randn(2, 4, 16),)) for _ in range(2)]


def make_inputs_ld():
    return [((16, 0.0, 0.2), (torch.randn(2, 4, 16),)) for _ in range(2)]


EXAMPLES = {"RMSNorm": make_inputs, "ResidualBlock": make_inputs}


class LayerDropBlock(ResidualBlock):
    pass


EXAMPLES["LayerDropBlock"] = make_inputs_ld
