"""An argument annotated as a union of a tensor and a container (``Union[Tensor, Dict[str, Tensor]]``)
is narrowed by ``isinstance``: where ``isinstance(batch, dict)`` holds it is the dict, where it fails the
tensor, so a branch on its data is found on either side; so is a union of a number and a tensor by
``isinstance(x, float)``.  Dynamo decides the ``isinstance`` test while
tracing.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("dict-or-tensor", """
    from typing import Dict, Optional, Union

    import torch


    def f(batch: Union[torch.Tensor, Dict[str, torch.Tensor]], scale: Optional[float] = None):
        if isinstance(batch, dict):
            x = batch["inputs"]
            mask = batch["mask"]
        else:
            x, mask = batch, torch.ones(batch.shape[:2])
        if mask.sum() == 0:  # breaks
            raise ValueError("no valid tokens")
        return (x * mask.unsqueeze(-1)).sum(1)


    def g(batch: "torch.Tensor | dict[str, torch.Tensor]"):
        if not isinstance(batch, dict):
            if batch.max() > 1e4:  # breaks
                return batch.clamp(-1e4, 1e4)
            return batch
        return batch["inputs"]


    def main(x: torch.Tensor, m: torch.Tensor):
        return f({"inputs": x, "mask": m}), g(x), g({"inputs": x})
    """, "main", "[(torch.randn(2, 4, 8), torch.ones(2, 4))]"),
    ("number-or-tensor", """
    from typing import Union

    import torch


    def f(x: torch.Tensor, sigma: Union[float, torch.Tensor]):
        if isinstance(sigma, float):
            sigma = torch.full((x.shape[0],), sigma)
        if sigma.max() > 1.0:  # breaks
            sigma = sigma / 255.0
        return x * sigma.view(-1, 1)
    """, "f", "[(torch.randn(2, 3), torch.tensor([30.0, 2.0]))]"),
    ("sequence-or-tensor-unknown-member", """
    from typing import Any, List, Union

    import torch


    def f(x: Union[torch.Tensor, List[torch.Tensor], Any]):
        if isinstance(x, list):
            return torch.stack(x)
        return x
    """, "f", "[(torch.randn(2, 4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
