"""On-device augmentations in the training forward: random flips, mixup and cutout."""
import random

import numpy as np
import torch
import torch.nn as nn


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, images):
        if random.random() < self.p:
            images = images.flip(-1)
        return images


class BatchFlip(nn.Module):
    """Flips each sample with probability p, decided on-device."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, images):
        flip = torch.rand(images.shape[0], 1, 1, 1, device=images.device) < self.p
        return torch.where(flip, images.flip(-1), images)


def mixup(x, y_onehot, alpha=0.2):
    lam = float(np.random.beta(alpha, alpha))
    perm = torch.randperm(x.shape[0])
    return lam * x + (1 - lam) * x[perm], lam * y_onehot + (1 - lam) * y_onehot[perm]


def cutout(images, size=4):
    b, _, h, w = images.shape
    cy = torch.randint(0, h, (b,))
    cx = torch.randint(0, w, (b,))
    ys = torch.arange(h)[None, :, None]
    xs = torch.arange(w)[None, None, :]
    box = ((ys - cy[:, None, None]).abs() <= size // 2) & ((xs - cx[:, None, None]).abs() <= size // 2)
    return images * (~box).unsqueeze(1)


def make_inputs():
    return [((), (torch.randn(2, 3, 8, 8),)) for _ in range(2)]


def make_inputs_mix():
    return [(torch.randn(4, 3), torch.eye(4)) for _ in range(2)]


def make_inputs_cut():
    return [(torch.randn(2, 3, 8, 8),) for _ in range(2)]


EXAMPLES = {"RandomHorizontalFlip": make_inputs, "BatchFlip": make_inputs, "mixup": make_inputs_mix,
            "cutout": make_inputs_cut}
