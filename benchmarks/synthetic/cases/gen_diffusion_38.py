"""DDPM pieces: noise schedule buffers, q_sample with gathered coefficients, and a sampler step."""
import math

import torch
import torch.nn as nn


def cosine_beta_schedule(timesteps: int, s: float = 0.008) -> torch.Tensor:
    steps = timesteps + 1
    x = torch.linspace(0, timesteps, steps, dtype=torch.float64)
    alphas_cumprod = torch.cos(((x / timesteps) + s) / (1 + s) * math.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return torch.clip(betas, 0, 0.999).float()


def extract(a: torch.Tensor, t: torch.Tensor, x_shape) -> torch.Tensor:
    out = a.gather(-1, t)
    return out.reshape(t.shape[0], *((1,) * (len(x_shape) - 1)))


class GaussianDiffusion(nn.Module):
    def __init__(self, timesteps=10):
        super().__init__()
        betas = cosine_beta_schedule(timesteps)
        alphas = 1.0 - betas
        ac = torch.cumprod(alphas, 0)
        self.register_buffer("betas", betas)
        self.register_buffer("sqrt_ac", ac.sqrt())
        self.register_buffer("sqrt_1m_ac", (1 - ac).sqrt())
        self.register_buffer("sqrt_recip_alphas", (1.0 / alphas).sqrt())
        self.denoiser = nn.Sequential(nn.Linear(4, 16), nn.SiLU(), nn.Linear(16, 4))

    def q_sample(self, x0, t, noise=None):
        if noise is None:
            noise = torch.randn_like(x0)
        return extract(self.sqrt_ac, t, x0.shape) * x0 + extract(self.sqrt_1m_ac, t, x0.shape) * noise

    def forward(self, x0, t):
        noise = torch.randn_like(x0)
        x_t = self.q_sample(x0, t, noise)
        return torch.nn.functional.mse_loss(self.denoiser(x_t), noise)


class DDPMSampler(GaussianDiffusion):
    def forward(self, x, t):
        eps = self.denoiser(x)
        coef = self.betas[t] / self.sqrt_1m_ac[t]
        mean = self.sqrt_recip_alphas[t] * (x - coef * eps)
        if int(t) > 0:
            return mean + self.betas[t].sqrt() * torch.randn_like(x)
        return mean


def make_inputs():
    return [((), (torch.randn(3, 4), torch.randint(0, 10, (3,)))) for _ in range(2)]


def make_inputs_sampler():
    return [((), (torch.randn(3, 4), torch.tensor(t))) for t in (5, 3)]


EXAMPLES = {"GaussianDiffusion": make_inputs, "DDPMSampler": make_inputs_sampler}
