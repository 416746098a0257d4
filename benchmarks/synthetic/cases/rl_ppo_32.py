"""PPO clipped objective with advantage normalisation, value clipping and a stats dict for the logger."""
from typing import Dict, Tuple

import torch
import torch.nn as nn


def normalize_advantages(adv: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    if adv.numel() <= 1:
        return adv
    return (adv - adv.mean()) / (adv.std() + eps)


class PPOLoss(nn.Module):
    def __init__(self, clip=0.2, vf_coef=0.5, ent_coef=0.01, target_kl=None):
        super().__init__()
        self.clip = clip
        self.vf_coef = vf_coef
        self.ent_coef = ent_coef
        self.target_kl = target_kl

    def forward(self, new_logp, old_logp, adv, values, old_values, returns, entropy
                ) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        adv = normalize_advantages(adv)
        log_ratio = new_logp - old_logp
        ratio = log_ratio.exp()
        pg1 = -adv * ratio
        pg2 = -adv * torch.clamp(ratio, 1 - self.clip, 1 + self.clip)
        pg_loss = torch.max(pg1, pg2).mean()
        v_clipped = old_values + (values - old_values).clamp(-self.clip, self.clip)
        v_loss = 0.5 * torch.max((values - returns) ** 2, (v_clipped - returns) ** 2).mean()
        loss = pg_loss + self.vf_coef * v_loss - self.ent_coef * entropy.mean()
        with torch.no_grad():
            approx_kl = ((ratio - 1) - log_ratio).mean()
            clipfrac = ((ratio - 1.0).abs() > self.clip).float().mean()
        stats = {"approx_kl": approx_kl, "clipfrac": clipfrac}
        if self.target_kl is not None and approx_kl > 1.5 * self.target_kl:
            stats["early_stop"] = torch.ones(())
        return loss, stats


def gae(rewards, values, dones, gamma=0.99, lam=0.95):
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        next_v = values[t + 1] if t + 1 < T else torch.zeros_like(values[0])
        delta = rewards[t] + gamma * next_v * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        adv[t] = last
    return adv


def make_batch():
    return tuple(torch.randn(8) for _ in range(6)) + (torch.rand(8),)


def make_inputs():
    return [((), make_batch()) for _ in range(2)]


def make_inputs_kl():
    return [((0.2, 0.5, 0.01, 0.01), make_batch()) for _ in range(2)]


def make_inputs_gae():
    return [(torch.randn(5, 2), torch.randn(5, 2), (torch.rand(5, 2) > 0.8).float()) for _ in range(2)]


EXAMPLES = {"PPOLoss": make_inputs, "gae": make_inputs_gae}


class KLStoppedPPOLoss(PPOLoss):
    pass


EXAMPLES["KLStoppedPPOLoss"] = make_inputs_kl
