"""An attribute ``__init__`` binds to ``None`` that a method sets later to a module or tensor (``setup()``, a
first call): where compiled code reads it, it holds either, so what the module or tensor does there is judged
(``for p in self.teacher.parameters(): p.requires_grad = False`` breaks).  Run under real Dynamo (torch 2.13)
too."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import copy

import torch
import torch.nn as nn


class Distiller(nn.Module):
    def __init__(self):
        super().__init__()
        self.student = nn.Linear(4, 4)
        self.teacher = None

    def setup(self):
        self.teacher = copy.deepcopy(self.student)

    def forward(self, x):
        for p in self.teacher.parameters():
            p.requires_grad = False
        return self.student(x) - self.teacher(x)


def main(x):
    model = Distiller()
    model.setup()
    return torch.compile(model, backend="eager")(x)
"""

test_check, test_dynamo = break_tests(CODE, {(18, "DYN105")}, "[(torch.randn(2, 4),)]")
