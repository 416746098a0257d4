"""Switch-style router with load-balancing and z-losses; keeps routing statistics for logging."""
from dataclasses import dataclass, field
from typing import Dict

import torch
import torch.nn as nn


@dataclass
class RouterOutput:
    dispatch: torch.Tensor
    combine: torch.Tensor
    aux_loss: torch.Tensor
    z_loss: torch.Tensor
    stats: Dict[str, float] = field(default_factory=dict)


def load_balancing_loss(router_probs: torch.Tensor, expert_index: torch.Tensor, num_experts: int) -> torch.Tensor:
    one_hot = torch.nn.functional.one_hot(expert_index, num_experts).float()
    tokens_per_expert = one_hot.mean(dim=0)
    prob_per_expert = router_probs.mean(dim=0)
    return (tokens_per_expert * prob_per_expert).sum() * num_experts


def router_z_loss(logits: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(logits, dim=-1).pow(2).mean()


class SwitchRouter(nn.Module):
    def __init__(self, dim, num_experts, jitter=0.0, track_stats=True):
        super().__init__()
        self.classifier = nn.Linear(dim, num_experts, bias=False)
        self.num_experts = num_experts
        self.jitter = jitter
        self.track_stats = track_stats

    def forward(self, x: torch.Tensor) -> RouterOutput:
        if self.training and self.jitter > 0:
            x = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)
        logits = self.classifier(x)
        probs = logits.softmax(dim=-1)
        expert_index = probs.argmax(dim=-1)
        dispatch = torch.nn.functional.one_hot(expert_index, self.num_experts)
        combine = dispatch * probs
        out = RouterOutput(dispatch, combine, load_balancing_loss(probs, expert_index, self.num_experts),
                           router_z_loss(logits))
        if self.track_stats:
            counts = dispatch.sum(0)
            out.stats["max_load"] = counts.max().item() / x.shape[0]
            out.stats["dropped"] = float((counts == 0).sum())
        return out


def make_inputs():
    return [((8, 4), (torch.randn(12, 8),)) for _ in range(2)]


def make_inputs_quiet():
    return [((8, 4, 0.1, False), (torch.randn(12, 8),)) for _ in range(2)]


EXAMPLES = {"SwitchRouter": make_inputs}


class QuietSwitchRouter(SwitchRouter):
    pass


EXAMPLES["QuietSwitchRouter"] = make_inputs_quiet
