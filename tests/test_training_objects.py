"""Training-step objects of torch whose files Dynamo skips: every method of a learning-rate scheduler or of a
gradient scaler breaks (built at module level or annotated as one); an optimizer's ``param_groups`` is read
without a break.  ``loss.backward()`` breaks also where the analysis could not type ``loss`` (what a module
passed in returns): only a tensor has the method.  Each case is also run under real Dynamo."""
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
