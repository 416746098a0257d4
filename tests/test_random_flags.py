"""DYN206 for a flag a loop draws at random at each iteration and hands a compiled module (teacher forcing:
``tf = random.random() < ratio``, or ``True if random.random() < ratio else False``): with enough iterations
both values come (six draws at one half: 97% of runs), and Dynamo compiles one graph for each; with three
draws it is left unsaid (75%).  Each script also runs under real Dynamo (torch 2.13), with a seed that draws
both values where they are claimed."""
from __future__ import annotations

from helpers import script_case_tests

TEACHER_FORCING = """\
import random

import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, teacher_forcing):
        if teacher_forcing:
            return self.lin(x)
        return self.lin(x).relu()


if __name__ == "__main__":
    random.seed(0)
    model = torch.compile(Dec(), backend="eager")
    ratio = 0.5
    for i in range({steps}):
        tf = {flag}
        model(torch.randn(4, 8), tf)
"""

test_check, test_dynamo = script_case_tests({
    "drawn-six-times": (TEACHER_FORCING.format(steps=6, flag="random.random() < ratio"), [12], 1),
    "drawn-in-a-conditional": (TEACHER_FORCING.format(
        steps=6, flag="True if random.random() < ratio else False"), [12], 1),
}, "DYN206")
test_check_few = script_case_tests({
    "drawn-three-times": (TEACHER_FORCING.format(steps=3, flag="random.random() < ratio"), [], 1),
}, "DYN206")[0]
