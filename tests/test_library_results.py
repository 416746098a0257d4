"""Tensors that library objects give: a module's ``parameters()``/``buffers()`` (and their ``named_`` forms)
iterate over its weights, inputs of the graph; a ``torch.distributions`` distribution's ``log_prob``,
``entropy``, ``rsample``... and what ``kl_divergence`` gives are tensors Dynamo traces (the call itself breaks
the first time a process meets a pair of distribution types, whose divergence it looks up with ``min`` of a
generator, and not after: that depends on what ran before, so it is not judged); so are ``clip_grad_norm_``
and ``parameters_to_vector`` of ``torch.nn.utils``.  A branch on a value computed from one breaks.  An
``nn.Parameter`` made of a tensor that entered the frame as it is (an argument, a global) is made without a
break, unlike one of a tensor the graph computed.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("weights-iterated-are-tensors", """
    import torch
    from torch import nn

    proj = nn.Linear(4, 4)


    def f(h: torch.Tensor):
        norms = [p.norm() for p in proj.parameters()]
        if norms[0] > 100:  # breaks
            h = h / norms[0]
        names = [name for name, _ in proj.named_parameters()]
        return proj(h), len(names)
    """, "f", "[(torch.randn(2, 4),)]"),
    ("distributions-give-tensors", """
    import torch
    import torch.distributions as D
    from torch.distributions import Normal


    def f(mu: torch.Tensor):
        p = Normal(mu, torch.ones_like(mu))
        if p.entropy().mean() > 0.5:  # breaks
            mu = mu * 2
        d = D.Normal(mu, 1.0)
        if d.log_prob(mu).sum() > 0:  # breaks
            mu = mu * 2
        return mu + d.rsample() + d.entropy()
    """, "f", "[(torch.randn(3),)]"),
    ("gradient-norms", """
    import math

    import torch
    from torch import nn
    from torch.nn.utils import clip_grad_norm_

    model = nn.Linear(4, 2)


    def f(x: torch.Tensor):
        if clip_grad_norm_(model.parameters(), 1.0) > 100:  # breaks
            x = x * 0
        total = torch.nn.utils.parameters_to_vector(model.parameters()).abs().sum()
        if not math.isfinite(total):  # breaks
            x = x * 2
        return x
    """, "f", "[(torch.randn(4),)]"),
    ("parameters-of-graph-inputs", """
    import torch
    from torch import nn

    W = torch.randn(4)


    def f(x: torch.Tensor):
        a = nn.Parameter(x) * 2 + nn.Parameter(W)
        b = nn.Parameter(x.detach())  # breaks
        return a + b
    """, "f", "[(torch.randn(4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
