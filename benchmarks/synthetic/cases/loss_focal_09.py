"""Sigmoid focal loss (RetinaNet) and a class-balanced variant with optional per-class weights."""
import warnings
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2.0, reduction: str = "none"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "none":
        return loss
    elif reduction == "mean":
        return loss.mean()
    elif reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}")


class ClassBalancedFocalLoss(nn.Module):
    def __init__(self, num_classes: int, gamma: float = 2.0, class_weights: Optional[torch.Tensor] = None,
                 check_finite: bool = True):
        super().__init__()
        self.num_classes = num_classes
        self.gamma = gamma
        self.check_finite = check_finite
        if class_weights is None:
            class_weights = torch.ones(num_classes)
        self.register_buffer("class_weights", class_weights)

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        targets = F.one_hot(labels, self.num_classes).to(logits.dtype)
        loss = sigmoid_focal_loss(logits, targets, gamma=self.gamma)
        loss = (loss * self.class_weights).sum(-1)
        num_pos = targets.sum().clamp(min=1.0)
        loss = loss.sum() / num_pos
        if self.check_finite and not torch.isfinite(loss):
            warnings.warn("non-finite focal loss")
            loss = torch.zeros_like(loss)
        return loss


def make_inputs():
    return [(torch.randn(8, 5), (torch.rand(8, 5) > 0.8).float(), 0.25, 2.0, "mean") for _ in range(2)]


def make_inputs_cb():
    return [((5,), (torch.randn(8, 5), torch.randint(0, 5, (8,)))) for _ in range(2)]


EXAMPLES = {"sigmoid_focal_loss": make_inputs, "ClassBalancedFocalLoss": make_inputs_cb}
