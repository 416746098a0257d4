"""A small model with the graph breaks and recompile hazards people write every day.

Run ``dynalint check examples/`` to see them; ``dynalint fix --diff examples/model.py``
to see the rewrites; ``dynalint verify examples/model.py::TinyClassifier`` to measure them.
"""
import logging
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)

label_smoothing = 0.0


def set_label_smoothing(value):
    global label_smoothing
    label_smoothing = value


class TinyClassifier(nn.Module):
    def __init__(self, dim=16, classes=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)
        self.steps = 0

    def forward(self, x, labels=None):
        h = torch.relu(self.proj(x))
        if h.abs().max() > 10:  # a tensor-valued condition
            h = h / 10
        if os.environ.get("DEBUG_LOGITS", "0") == "1":
            logger.info("activations: %s", h.mean())
        logits = self.head(h)
        self.steps += 1
        if labels is None:
            return logits
        valid = labels >= 0
        loss = F.cross_entropy(logits[valid], labels[valid], label_smoothing=label_smoothing)
        return logits, loss


def masked_mean(values, mask):
    total = values[mask].sum()
    count = int(mask.sum())
    return total / max(count, 1)


def dynalint_inputs():
    """Input sets for ``dynalint verify`` (a stream of calls)."""
    x = torch.randn(8, 16)
    labels = torch.tensor([0, 1, -100, 3, 2, 1, -100, 0])
    return [((), (x,)), ((), (x, labels)), ((), (torch.randn(8, 16), labels))]
