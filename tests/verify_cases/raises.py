"""A forward that raises: verify reports it instead of failing."""
import torch
import torch.nn as nn


class Broken(nn.Module):
    def forward(self, x):
        return self.check(x)

    def check(self, x):
        raise ValueError(f"unsupported input of shape {tuple(x.shape)}")


def dynalint_inputs():
    return [((), (torch.randn(2),))]
