"""VAE with a NamedTuple output, KL annealing driven by a step counter on the module, and a free-bits KL."""
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class VAEOutput(NamedTuple):
    recon: torch.Tensor
    mu: torch.Tensor
    logvar: torch.Tensor
    loss: torch.Tensor


def kl_divergence(mu, logvar, free_bits: float = 0.0):
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp())
    if free_bits > 0:
        kl = torch.clamp(kl, min=free_bits)
    return kl.sum(-1).mean()


class VAE(nn.Module):
    def __init__(self, dim=12, latent=4, anneal_steps=0):
        super().__init__()
        self.enc = nn.Linear(dim, 2 * latent)
        self.dec = nn.Linear(latent, dim)
        self.anneal_steps = anneal_steps
        self.step = 0

    def kl_weight(self):
        if self.anneal_steps == 0:
            return 1.0
        return min(1.0, self.step / self.anneal_steps)

    def forward(self, x) -> VAEOutput:
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        recon = self.dec(z)
        loss = F.mse_loss(recon, x) + self.kl_weight() * kl_divergence(mu, logvar, free_bits=0.1)
        if self.training:
            self.step += 1
        return VAEOutput(recon, mu, logvar, loss)


class EvalVAE(VAE):
    def __init__(self):
        super().__init__()
        self.eval()


def make_inputs():
    return [((12, 4, 100), (torch.randn(3, 12),)) for _ in range(3)]


def make_inputs_eval():
    return [((), (torch.randn(3, 12),)) for _ in range(3)]


EXAMPLES = {"VAE": make_inputs, "EvalVAE": make_inputs_eval}
