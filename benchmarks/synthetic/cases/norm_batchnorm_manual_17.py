"""Hand-rolled batch norm with cumulative moving average (momentum=None) and a masked variant."""
from typing import Optional

import torch
import torch.nn as nn


class MaskedBatchNorm1d(nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum: Optional[float] = 0.1):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        # x: (B, C, T), mask: (B, 1, T)
        if mask is None:
            mask = torch.ones_like(x[:, :1])
        if self.training:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
            else:
                factor = self.momentum
            n = mask.sum((0, 2))
            mean = (x * mask).sum((0, 2)) / n
            var = (((x - mean[None, :, None]) * mask) ** 2).sum((0, 2)) / n
            with torch.no_grad():
                self.running_mean.lerp_(mean, factor)
                self.running_var.lerp_(var, factor)
        else:
            mean, var = self.running_mean, self.running_var
        x = (x - mean[None, :, None]) / torch.sqrt(var[None, :, None] + self.eps)
        return (x * self.weight[None, :, None] + self.bias[None, :, None]) * mask


def make_inputs():
    return [((4,), (torch.randn(2, 4, 5),)) for _ in range(2)]


def make_inputs_cma():
    return [((4, 1e-5, None), (torch.randn(2, 4, 5),)) for _ in range(2)]


EXAMPLES = {"MaskedBatchNorm1d": make_inputs}


class CumulativeBatchNorm1d(MaskedBatchNorm1d):
    pass


EXAMPLES["CumulativeBatchNorm1d"] = make_inputs_cma
