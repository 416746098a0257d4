"""A head that accepts a tensor, a dict batch or a list of tensors, with optional masks narrowed before use."""
from typing import Dict, List, Optional, Union

import torch
import torch.nn as nn

Batch = Union[torch.Tensor, Dict[str, torch.Tensor], List[torch.Tensor]]


class FlexibleHead(nn.Module):
    def __init__(self, dim=8, n_out=3):
        super().__init__()
        self.fc = nn.Linear(dim, n_out)

    def pool(self, x: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        if mask is None:
            return x.mean(1)
        mask = mask.unsqueeze(-1).to(x.dtype)
        return (x * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def forward(self, batch: Batch) -> torch.Tensor:
        if isinstance(batch, dict):
            x, mask = batch["features"], batch.get("mask")
        elif isinstance(batch, (list, tuple)):
            x, mask = torch.stack(list(batch), 0), None
        else:
            x, mask = batch, None
        return self.fc(self.pool(x, mask))


class MaskCheckingHead(FlexibleHead):
    def forward(self, batch: Batch) -> torch.Tensor:
        x, mask = batch["features"], batch.get("mask")
        if mask is not None and not mask.any():
            return torch.zeros(x.shape[0], self.fc.out_features)
        return self.fc(self.pool(x, mask))


def merge_logits(main: torch.Tensor, aux: Optional[torch.Tensor] = None, weight: float = 0.4) -> torch.Tensor:
    if aux is None or weight == 0:
        return main
    return main + weight * aux


def make_inputs():
    feats = torch.randn(2, 5, 8)
    return [((), ({"features": feats, "mask": torch.ones(2, 5, dtype=torch.bool)},)) for _ in range(2)]


def make_inputs_merge():
    return [(torch.randn(2, 3), torch.randn(2, 3)) for _ in range(2)]


EXAMPLES = {"FlexibleHead": make_inputs, "MaskCheckingHead": make_inputs, "merge_logits": make_inputs_merge}
