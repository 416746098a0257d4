"""What torch.func gives back is known: ``functional_call(module, params, (x,))`` is the module's output,
and the functions ``grad``, ``vmap``, ``jacrev``... return give tensors, so a branch on them, or ``.item()`` of
them, breaks as on any tensor (measured on torch 2.13: Dynamo traces the transforms themselves)."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import torch
    import torch.nn as nn
    from torch.func import functional_call, grad, grad_and_value, vmap


    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            params = dict(self.net.named_parameters())
            out = functional_call(self.net, params, (x,))
            if out.mean() > 0:
                out = out * 2
            g = grad(lambda w: (x @ w).sum())(torch.ones(4))
            step = g.norm().item()
            dots = vmap(torch.dot)(x, x)
            if dots.max() > 100:
                dots = dots / 100
            dw, loss = grad_and_value(lambda w: (x @ w).pow(2).mean())(torch.ones(4))
            return out.sum() * step + dots.sum() + dw.sum() + loss


    def main(x, y):
        model = torch.compile(Inner(), backend="eager")
        return model(x, y)
"""
BREAKS = {(14, "DYN101"), (17, "DYN102"), (19, "DYN101")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.randn(3, 4), torch.randn(3))]")
