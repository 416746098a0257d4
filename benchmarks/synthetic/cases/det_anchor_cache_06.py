"""Anchor generator that caches grids per feature-map size, and an FCOS-style location helper."""
from typing import Dict, List, Tuple

import torch
import torch.nn as nn


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=(32, 64), aspect_ratios=(0.5, 1.0, 2.0), strides=(8, 16)):
        super().__init__()
        self.strides = strides
        self.cell_anchors = [self._cell(s, aspect_ratios) for s in sizes]
        self._cache: Dict[Tuple[int, int, int], torch.Tensor] = {}

    @staticmethod
    def _cell(size, ratios):
        ratios = torch.as_tensor(ratios)
        h_ratios = torch.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios * size).view(-1)
        hs = (h_ratios * size).view(-1)
        return torch.stack([-ws, -hs, ws, hs], dim=1) / 2

    def grid_anchors(self, level: int, h: int, w: int) -> torch.Tensor:
        stride = self.strides[level]
        shifts_x = torch.arange(0, w * stride, stride, dtype=torch.float32)
        shifts_y = torch.arange(0, h * stride, stride, dtype=torch.float32)
        sy, sx = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shifts = torch.stack((sx.reshape(-1), sy.reshape(-1), sx.reshape(-1), sy.reshape(-1)), dim=1)
        return (shifts.view(-1, 1, 4) + self.cell_anchors[level].view(1, -1, 4)).reshape(-1, 4)

    def forward(self, features: List[torch.Tensor]) -> List[torch.Tensor]:
        anchors = []
        for level, feat in enumerate(features):
            h, w = feat.shape[-2:]
            key = (level, h, w)
            if key not in self._cache:
                self._cache[key] = self.grid_anchors(level, h, w)
            anchors.append(self._cache[key])
        return anchors


def compute_locations(features: List[torch.Tensor], strides: Tuple[int, ...] = (8, 16)) -> List[torch.Tensor]:
    locations = []
    for feat, stride in zip(features, strides):
        h, w = feat.size(-2), feat.size(-1)
        xs = torch.arange(w, dtype=torch.float32) * stride + stride // 2
        ys = torch.arange(h, dtype=torch.float32) * stride + stride // 2
        yy, xx = torch.meshgrid(ys, xs, indexing="ij")
        locations.append(torch.stack((xx.flatten(), yy.flatten()), dim=1))
    return locations


def make_feats():
    return [torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)]


def make_inputs():
    return [((), (make_feats(),)) for _ in range(3)]


def make_inputs_loc():
    return [(make_feats(),) for _ in range(2)]


EXAMPLES = {"AnchorGenerator": make_inputs, "compute_locations": make_inputs_loc}
