"""A denoising step whose timestep comes from a scheduler kept in stepped_inputs.py."""
import torch.nn as nn


class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, t):
        print("forward at step", t)
        return self.lin(x) * t
