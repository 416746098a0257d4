"""A subclass of a ``torch.optim`` optimizer, as hand-written optimizers are: ``self.param_groups`` holds dicts whose
``"params"`` are the parameters (tensors), its other entries the hyperparameters, and ``self.state`` a dict per
parameter; a method the class does not define is the base's (``self.zero_grad()`` is torch.optim's, which Dynamo
skips).  A branch on a parameter's data in ``step`` breaks (DYN101, and inside the loop Dynamo runs the whole step
eagerly); an ``Adam``-style step that keeps everything in tensors does not.  Each case is also run under real
Dynamo (torch 2.13), compiling the optimizer's bound method as users do."""
from __future__ import annotations

from helpers import marked_case_tests

_HEADER = """
    import math

    import torch
    from torch import nn
    from torch.optim import Optimizer

    model = nn.Linear(4, 2)
    model(torch.randn(3, 4)).sum().backward()
"""

CASES = [
    ("trust-ratio", _HEADER + """

    class LAMBLite(Optimizer):
        def __init__(self, params, lr: float = 1e-3):
            super().__init__(params, dict(lr=lr))

        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    w_norm = p.norm(2.0)
                    if w_norm == 0:  # breaks
                        continue
                    p.add_(p.grad, alpha=-group["lr"])


    opt = LAMBLite(model.parameters())


    def f():
        opt.step()
    """, "f", "[()]"),
    ("inherited-zero-grad", _HEADER + """

    class SAMLite(Optimizer):
        def __init__(self, params, rho: float = 0.05):
            super().__init__(params, dict(rho=rho))

        @torch.no_grad()
        def first_step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad * group["rho"])
            self.zero_grad()  # breaks


    opt = SAMLite(model.parameters())


    def f():
        opt.first_step()
    """, "f", "[()]"),
    ("adam-in-tensors", _HEADER + """

    class AdamWLite(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["exp_avg"] = torch.zeros_like(p)
                        state["exp_avg_sq"] = torch.zeros_like(p)
                    state["step"] += 1
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                    exp_avg.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                    exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                    denom = (exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** state["step"])).add_(group["eps"])
                    p.addcdiv_(exp_avg, denom, value=-group["lr"] / (1 - beta1 ** state["step"]))


    opt = AdamWLite(model.parameters())


    def f():
        opt.step()
    """, "f", "[()]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
