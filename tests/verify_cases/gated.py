"""A tensor-valued branch between two layers: on this stream only the first layer runs."""
import torch
import torch.nn as nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            y = self.a(x)
        else:
            y = self.b(x)
        return y


def dynalint_inputs():
    return [((), (torch.rand(2, 4) + 0.1,)) for _ in range(3)]
