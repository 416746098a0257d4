"""A tiny denoiser and its sampling loop, as a user writes them: a timestep read as a Python number,
a progress print, a data-dependent clamp.  A few thousand parameters."""
import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv_in = nn.Conv2d(3, channels, 3, padding=1)
        self.time = nn.Linear(1, channels)
        self.blocks = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in range(3))
        self.conv_out = nn.Conv2d(channels, 3, 3, padding=1)

    def forward(self, x, t):
        emb = self.time(torch.full((x.shape[0], 1), float(t)))
        h = self.conv_in(x) + emb[:, :, None, None]
        for block in self.blocks:
            h = h + torch.relu(block(h))
        print("step", t)
        out = self.conv_out(h)
        if out.abs().max() > 10:
            out = out.clamp(-10, 10)
        return out
