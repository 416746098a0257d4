"""Multi-task model: backbone features in a dict, heads registered by name, losses summed over a dict."""
from typing import Dict

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiTaskModel(nn.Module):
    def __init__(self, dim=8, tasks=("cls", "reg")):
        super().__init__()
        self.backbone = nn.Linear(dim, dim)
        self.heads = nn.ModuleDict({"cls": nn.Linear(dim, 3), "reg": nn.Linear(dim, 1)})
        self.tasks = tasks
        self.loss_weights = {"cls": 1.0, "reg": 0.5}

    def features(self, x) -> Dict[str, torch.Tensor]:
        h = F.relu(self.backbone(x))
        return {"pooled": h.mean(0, keepdim=True), "tokens": h}

    def forward(self, x, targets: Dict[str, torch.Tensor]):
        feats = self.features(x)
        preds = {t: self.heads[t](feats["tokens"]) for t in self.tasks}
        losses = {
            "cls": F.cross_entropy(preds["cls"], targets["cls"]),
            "reg": F.mse_loss(preds["reg"].squeeze(-1), targets["reg"]),
        }
        total = sum(self.loss_weights[k] * v for k, v in losses.items())
        return total, preds


class GatedMultiTask(MultiTaskModel):
    """Drops the regression loss when its target is all zeros."""

    def forward(self, x, targets: Dict[str, torch.Tensor]):
        feats = self.features(x)
        tokens = feats["tokens"]
        loss = F.cross_entropy(self.heads["cls"](tokens), targets["cls"])
        reg_t = targets["reg"]
        if reg_t.abs().sum() > 0:
            loss = loss + F.mse_loss(self.heads["reg"](tokens).squeeze(-1), reg_t)
        return loss


def make_inputs():
    return [((), (torch.randn(4, 8), {"cls": torch.randint(0, 3, (4,)), "reg": torch.randn(4)})) for _ in range(2)]


EXAMPLES = {"MultiTaskModel": make_inputs, "GatedMultiTask": make_inputs}
