"""A global that the code rebinds between calls: Dynamo guards on its value and recompiles."""
import torch
import torch.nn as nn

scale = 1


def set_scale(value):
    global scale
    scale = int(value)


class Scaled(nn.Module):
    def forward(self, x):
        return x * scale + 1


def dynalint_inputs():
    return [((), (torch.randn(3),)) for _ in range(4)]


def dynalint_before_call(i):
    set_scale(i + 1)
