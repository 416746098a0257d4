"""``requires_grad_(False)`` breaks where it changes the flag: on a module's parameters, which require grad
(the loop variable of ``for p in D.parameters():`` - a GAN's generator step freezing its critic - or of
``named_parameters()``, and ``lin.weight``); ``requires_grad_(True)`` breaks as before. Modules bound by a
module-level assignment that unpacks a tuple written out (``G, D = nn.Linear(4, 4), nn.Linear(4, 1)``) are
each the item bound to them. Turning grad on for an input depends on the caller (it breaks unless the
tensor already requires grad), except in the body of ``if not x.requires_grad:``, and so does turning it on
for the elements of a list the caller passes (``for p in params: p.requires_grad_(True)``). A module the
script builds and passes to the compiled function has parameters like any other. Each case is also run
under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests, marked_case_tests

CASES = [
    ("freezing-the-critic", """
    import torch
    import torch.nn as nn

    G, D = nn.Linear(4, 4), nn.Linear(4, 1)


    def generator_step(z):
        for p in D.parameters():
            p.requires_grad_(False)  # breaks
        loss = -D(G(z)).mean()
        for p in D.parameters():
            p.requires_grad_(True)
        return loss
    """, "generator_step", "[(torch.randn(2, 4),)]"),
    ("a-weight", """
    import torch
    import torch.nn as nn

    enc = nn.Linear(4, 4)
    head = nn.Linear(4, 2)


    def freeze_head(x):
        head.weight.requires_grad_(False)  # breaks
        return head(enc(x)).sum()
    """, "freeze_head", "[(torch.randn(2, 4),)]"),
    ("named-parameters", """
    import torch
    import torch.nn as nn

    enc = nn.Linear(4, 4)
    head = nn.Linear(4, 2)


    def freeze_encoder(x):
        for name, p in enc.named_parameters():
            if name.endswith("bias"):
                p.requires_grad_(False)  # breaks
        return head(enc(x)).sum()
    """, "freeze_encoder", "[(torch.randn(2, 4),)]"),
    ("an-input-or-a-new-tensor", """
    import torch


    def f(x):
        y = torch.randn(3)
        y.requires_grad_(False)
        return (x * 2).requires_grad_(False) + y
    """, "f", "[(torch.randn(3),)]"),
    ("an-input-proven-without-grad", """
    import torch


    def residual(x, t):
        if not x.requires_grad:
            x.requires_grad_(True)  # breaks
        t.requires_grad_(True)
        return torch.tanh(x) * t
    """, "residual", "[(torch.randn(4, 1), torch.randn(4, 1, requires_grad=True))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

ELEMENTS_OF_AN_ARGUMENT = """
import torch


def step(params, x):
    for p in params:
        p.requires_grad_(True)
    return (params[0] * x).sum()


def main():
    w = torch.ones(4, requires_grad=True)
    fn = torch.compile(step, backend="eager")
    return [fn([w], torch.randn(4)), fn([w], torch.randn(4))]
"""

A_MODULE_PASSED = """
import torch


def step(model, x):
    for p in model.parameters():
        p.requires_grad_(False)
    return model(x).sum()


def main():
    model = torch.nn.Linear(4, 2)
    fn = torch.compile(step, backend="eager")
    return fn(model, torch.randn(3, 4))
"""

test_check_elements, test_dynamo_elements = break_tests(ELEMENTS_OF_AN_ARGUMENT, set(), "[()]")
test_check_module_passed, test_dynamo_module_passed = break_tests(A_MODULE_PASSED, {(6, "DYN105")}, "[()]")
