"""Segmentation decoder heads: multi-scale fusion by interpolation, resize to a requested output size."""
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class FPNFuseHead(nn.Module):
    def __init__(self, chans=(4, 8), out_ch=4, n_classes=3, align_corners=False):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_ch, 1) for c in chans)
        self.cls = nn.Conv2d(out_ch, n_classes, 1)
        self.align_corners = align_corners

    def forward(self, feats: List[torch.Tensor], out_size: Optional[torch.Tensor] = None):
        target = feats[0].shape[-2:]
        fused = sum(
            F.interpolate(l(f), size=target, mode="bilinear", align_corners=self.align_corners)
            for l, f in zip(self.lateral, feats)
        )
        logits = self.cls(fused)
        if out_size is not None:
            logits = F.interpolate(logits, size=tuple(out_size.tolist()), mode="bilinear",
                                   align_corners=self.align_corners)
        return logits


class ScaleHead(nn.Module):
    def __init__(self, ch=4, n_classes=3, upscale=2.0):
        super().__init__()
        self.cls = nn.Conv2d(ch, n_classes, 3, padding=1)
        self.upscale = upscale

    def forward(self, x, scale: torch.Tensor):
        logits = self.cls(x)
        logits = F.interpolate(logits, scale_factor=self.upscale, mode="nearest")
        return logits * scale.view(-1, 1, 1, 1)


def make_feats():
    return [torch.randn(1, 4, 8, 8), torch.randn(1, 8, 4, 4)]


def make_inputs():
    return [((), (make_feats(), torch.tensor(size))) for size in ([12, 12], [10, 14])]


def make_inputs_scale():
    return [((), (torch.randn(2, 4, 4, 4), torch.rand(2))) for _ in range(2)]


EXAMPLES = {"FPNFuseHead": make_inputs, "ScaleHead": make_inputs_scale}
