"""Model configured from a dataclass and a process-wide options dict that the training loop flips."""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

RUNTIME_OPTIONS = {"activation_checkpointing": False, "act": "gelu"}


@dataclass
class MLPConfig:
    dim: int = 16
    hidden_mult: int = 4
    act: str = "silu"
    dropout: float = 0.0
    use_bias: bool = True


ACTIVATIONS = {"gelu": F.gelu, "silu": F.silu, "relu": F.relu}


class ConfigMLP(nn.Module):
    def __init__(self, cfg: MLPConfig = MLPConfig()):
        super().__init__()
        self.cfg = cfg
        self.fc1 = nn.Linear(cfg.dim, cfg.dim * cfg.hidden_mult, bias=cfg.use_bias)
        self.fc2 = nn.Linear(cfg.dim * cfg.hidden_mult, cfg.dim, bias=cfg.use_bias)

    def forward(self, x):
        h = ACTIVATIONS[self.cfg.act](self.fc1(x))
        if self.cfg.dropout > 0:
            h = F.dropout(h, self.cfg.dropout, self.training)
        return self.fc2(h)


class RuntimeMLP(ConfigMLP):
    def forward(self, x):
        h = ACTIVATIONS[RUNTIME_OPTIONS["act"]](self.fc1(x))
        return self.fc2(h)


def make_inputs():
    return [((), (torch.randn(2, 16),)) for _ in range(3)]


def before_call(i):
    RUNTIME_OPTIONS["act"] = ["gelu", "relu", "gelu"][i]


EXAMPLES = {"ConfigMLP": make_inputs, "RuntimeMLP": make_inputs}
