"""A module that reads the environment at import; its before-call hook sets the variable."""
import os

import torch
import torch.nn as nn

SCALE = float(os.environ.get("DYNALINT_CASE_SCALE", "1"))


class EnvScaled(nn.Module):
    def forward(self, x):
        return x * SCALE


def dynalint_inputs():
    return [((), (torch.ones(3),)) for _ in range(3)]


def dynalint_before_call(i):
    os.environ["DYNALINT_CASE_SCALE"] = "2"
