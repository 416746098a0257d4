"""What values modules and containers of model code hold: a parameter annotated with a module class of the
checked files that defines ``forward`` (``model: Net``, kept as ``self.model``) is an instance of it, so its
call runs that ``forward``; a buffer registered from a bool tensor is a mask (indexing with it selects); the entries of an ``nn.Sequential``, ``nn.ModuleList`` or ``nn.ModuleDict`` of
``torch.nn`` modules are modules whose call gives a tensor; a dict comprehension is a dict of what its values are
(``{k: v.detach() for k, v in out.items()}``); ``torch.autograd.functional`` (``jacobian``, ``hessian``,
``vjp``...) breaks where ``torch.func`` is traced.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("bool-buffer", """
    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("anchor_mask", torch.arange(4) != 1)

        def forward(self, scores: torch.Tensor) -> torch.Tensor:
            return scores[:, self.anchor_mask].sum(1)  # breaks
    """, "Head", "[(torch.randn(2, 4),)]"),
    ("annotated-module-and-dict-comprehension", """
    from typing import Dict

    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
            return {"loss": x.pow(2).sum(), "kl": x.abs().mean()}


    class Trainer:
        def __init__(self, model: Net):
            self.model = model

        def eval_step(self, x: torch.Tensor) -> torch.Tensor:
            out = self.model(x)
            stats = {k: v.detach() for k, v in out.items()}
            if stats["kl"] > 1e4:  # breaks
                return torch.zeros(())
            return out["loss"]


    def f(x: torch.Tensor):
        return Trainer(Net()).eval_step(x)  # breaks
    """, "f", "[(torch.randn(3),)]"),
    ("containers-of-torch-modules", """
    import torch
    import torch.nn as nn


    class MultiScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.discs = nn.ModuleDict({"x1": nn.Linear(4, 1), "x2": nn.Linear(4, 1)})
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            loss = torch.zeros(())
            if self.seq[0](x).max() > 1e3:  # breaks
                x = x.clamp(-1e3, 1e3)
            for name, disc in self.discs.items():
                if disc(x).mean() > 2.0:  # breaks
                    continue
                loss = loss - disc(x).mean()
            return loss + self.discs["x1"](x).sum()
    """, "MultiScale", "[(torch.randn(4),)]"),
    ("autograd-functional", """
    import torch


    def f(x: torch.Tensor):
        jac = torch.autograd.functional.jacobian(lambda v: v ** 2, x)  # breaks
        grad = torch.func.grad(lambda v: (v ** 2).sum())(x)
        return jac.sum() + grad
    """, "f", "[(torch.randn(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
