"""Training-step objects of torch whose files Dynamo skips: every method of a learning-rate scheduler or of a
gradient scaler breaks (built at module level or annotated as one); an optimizer's ``param_groups`` is read
without a break.  ``loss.backward()`` breaks also where the analysis could not type ``loss`` (what a module
passed in returns): only a tensor has the method.  A number ``random.randint``/``uniform`` drew in the graph
(Dynamo holds it as a tensor) passed where a torch op takes a Python number (``torch.roll``'s shifts, a
dropout rate) breaks; where the op takes a tensor too (``torch.full``'s value) or in arithmetic with a tensor,
it is traced.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("schedulers-and-scalers", """
    import torch
    from torch import nn

    model = nn.Linear(3, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 5)
    scaler = torch.amp.GradScaler("cpu", enabled=False)


    def f(x: torch.Tensor):
        sched.step()  # breaks
        lr = sched.get_last_lr()[0]  # breaks
        y = scaler.scale(x.sum())  # breaks
        scaler.update()  # breaks
        return y * lr * opt.param_groups[0]["lr"]
    """, "f", "[(torch.randn(3),)]"),
    ("annotated-scheduler", """
    import torch


    def f(x: torch.Tensor, sched: torch.optim.lr_scheduler.LRScheduler):
        sched.step()  # breaks
        return x * 2
    """, "f", "[(torch.randn(3), torch.optim.lr_scheduler.StepLR(torch.optim.SGD([torch.zeros(1, "
              "requires_grad=True)], lr=0.1), 5))]"),
    ("backward-of-what-a-module-returns", """
    import torch
    from torch import nn


    def f(x: torch.Tensor, loss_fn: nn.Module):
        loss = loss_fn(x * 2, x)
        loss.backward()  # breaks
        return loss.detach()
    """, "f", "[(torch.randn(3, requires_grad=True), torch.nn.MSELoss())]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


RANDOM_CASES = [
    ("a-python-random-number-where-an-op-takes-a-number", """
    import random

    import torch
    import torch.nn.functional as F


    def f(x: torch.Tensor):
        y = torch.roll(x, random.randint(0, 3))  # breaks
        return y * random.uniform(0.5, 1.5) + torch.full((4,), random.uniform(0.0, 1.0))
    """, "f", "[(torch.randn(4),)]"),
    ("a-drop-rate-drawn-in-the-graph", """
    import random

    import torch
    import torch.nn.functional as F


    def f(x: torch.Tensor):
        return F.dropout(x, p=random.uniform(0.1, 0.2))  # breaks
    """, "f", "[(torch.randn(4),)]"),
]

test_random_lines, test_random_lines_break_under_dynamo = marked_case_tests(RANDOM_CASES)
