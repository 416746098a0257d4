"""An int attribute bumped in forward: a recompile per call until Dynamo's recompile limit, then eager."""
import torch
import torch.nn as nn


class StepCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1
        return x * self.step


def dynalint_inputs():
    x = torch.randn(3)
    return [((), (x,)) for _ in range(11)]
