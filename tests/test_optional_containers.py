"""An ``Optional[tuple[Tensor, Tensor]]`` (or list, or dict) parameter is still a container of tensors after an
``if points is not None:`` block that does not return: the value after the block is the container or None, and
``int(points[1].sum())`` there reads tensor data (measured on torch 2.13: "Unsupported Tensor.item() call")."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    from typing import Dict, List, Optional, Tuple

    import torch


    @torch.compile(backend="eager")
    def encode(points: Optional[Tuple[torch.Tensor, torch.Tensor]], sparse: torch.Tensor) -> torch.Tensor:
        if points is not None:
            sparse = torch.cat([sparse, points[0]], dim=1)
        valid = int((points[1] >= 0).sum()) if points is not None else 0
        return sparse * valid


    @torch.compile(backend="eager")
    def fuse(feats: Optional[List[torch.Tensor]], extra: Optional[Dict[str, torch.Tensor]],
             out: torch.Tensor) -> torch.Tensor:
        if feats is not None:
            out = out + feats[0]
        if extra is not None:
            out = out * 2
        return out + int(feats[1].sum()) + float(extra["bias"].mean())


    def main(x):
        labels = torch.tensor([[1.0, 0.0, -1.0]])
        return encode((x, labels), torch.zeros(1, 0, 2)), fuse([labels, labels], {"bias": labels}, labels)
"""
BREAKS = {(10, "DYN102"), (21, "DYN102")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.rand(1, 3, 2),)]")
