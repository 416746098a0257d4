"""torch calls that hand Python values back, or change global autograd state, each measured on torch 2.13:
dtype queries (``torch.result_type``, ``torch.can_cast``), thread counts, anomaly detection, the inference-mode
query and ``torch.cuda`` queries that run without a GPU come from the generated skipped-calls table;
``as_subclass(torch.Tensor)`` breaks on any tensor, ``random_`` with bounds as without, and a module's
``requires_grad_`` on or off.  A function decorated with ``assume_constant_result`` is called while tracing:
nothing in its body breaks."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import torch
    import torch.nn as nn


    class Tagged(torch.Tensor):
        pass


    @torch.compiler.assume_constant_result
    def num_classes(table: torch.Tensor) -> int:
        return int(table.max().item()) + 1


    class Step(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
            i = (x * 10).long()
            y = i.to(torch.result_type(i, 2.5))
            if torch.can_cast(x.dtype, torch.int32):
                y = y + 1
            parts = x.chunk(torch.get_num_threads())
            self.head.requires_grad_(False)
            z = self.head(x)
            self.head.requires_grad_(True)
            plain = x.as_subclass(Tagged).as_subclass(torch.Tensor)
            cut = torch.empty([], dtype=torch.int64).random_(1, 4)
            if torch.is_inference_mode_enabled():
                z = z * 2
            onehot = nn.functional.one_hot(i.clamp(0, 2), num_classes(table))
            return y.sum() + parts[0].sum() + z.sum() + plain.sum() + cut + onehot.sum()


    @torch.compile(backend="eager")
    def checked_loss(x: torch.Tensor) -> torch.Tensor:
        with torch.autograd.detect_anomaly():
            return x.pow(2).mean()


    def main(x, table):
        model = torch.compile(Step(), backend="eager")
        return model(x, table), checked_loss(x)
"""
BREAKS = {(21, "DYN105"), (22, "DYN105"), (24, "DYN105"), (25, "DYN105"), (27, "DYN105"), (28, "DYN105"),
          (29, "DYN105"), (30, "DYN105"), (38, "DYN105")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.rand(2, 4), torch.tensor([0, 2, 1]))]")
