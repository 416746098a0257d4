"""CLIP-style contrastive loss with a learnable temperature, and a SupCon loss over label masks."""
import logging

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)


class ClipLoss(nn.Module):
    def __init__(self, init_temp=0.07, max_scale=100.0):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / init_temp))
        self.max_scale = max_scale
        self.last_accuracy = None

    def forward(self, image_features, text_features):
        image_features = F.normalize(image_features, dim=-1)
        text_features = F.normalize(text_features, dim=-1)
        scale = self.logit_scale.exp().clamp(max=self.max_scale)
        logits_per_image = scale * image_features @ text_features.t()
        logits_per_text = logits_per_image.t()
        labels = torch.arange(logits_per_image.shape[0], device=image_features.device)
        loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
        with torch.no_grad():
            acc = (logits_per_image.argmax(-1) == labels).float().mean()
            self.last_accuracy = acc.item()
        return loss


def supcon_loss(features, labels, temperature=0.1):
    features = F.normalize(features, dim=-1)
    n = features.shape[0]
    sim = features @ features.T / temperature
    self_mask = torch.eye(n, dtype=torch.bool, device=features.device)
    sim = sim.masked_fill(self_mask, -1e9)
    pos_mask = (labels[:, None] == labels[None, :]) & ~self_mask
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos_count = pos_mask.sum(1)
    mean_log_prob_pos = (log_prob * pos_mask).sum(1) / pos_count.clamp(min=1)
    loss = -mean_log_prob_pos[pos_count > 0].mean()
    logger.debug("supcon loss %.4f", loss)
    return loss


def make_inputs():
    return [((), (torch.randn(6, 8), torch.randn(6, 8))) for _ in range(2)]


def make_inputs_sup():
    return [(torch.randn(8, 4), torch.tensor([0, 1, 0, 1, 2, 2, 3, 0])) for _ in range(2)]


EXAMPLES = {"ClipLoss": make_inputs, "supcon_loss": make_inputs_sup}
