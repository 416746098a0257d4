"""Two tensor-valued branches with a fix each; the input stream exercises only the first."""
import torch
import torch.nn as nn


class Damped(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 0.5
        else:
            y = x * 1.5
        return y + 1


def rarely_used(x: torch.Tensor) -> torch.Tensor:
    if x.mean() > 0:
        z = x - 1
    else:
        z = x + 1
    return z


def dynalint_inputs():
    return [((), (torch.randn(5),)) for _ in range(3)]
