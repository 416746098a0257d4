"""A training step: it calls backward(), which fails under the default eval mode's no_grad."""
import torch
import torch.nn as nn


class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        loss = self.fc(x).pow(2).mean()
        loss.backward()
        return loss.detach()


def dynalint_inputs():
    return [((), (torch.randn(4, 3),)) for _ in range(2)]
