"""Precision and debugging switches read from the environment at import time and at call time."""
import os

import torch
import torch.nn as nn

_DEBUG_AT_IMPORT = os.environ.get("MODEL_DEBUG", "0") == "1"


class EnvPrecisionLinear(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if os.environ["COMPUTE_DTYPE"] == "float64":
            w, b = self.lin.weight.double(), self.lin.bias.double()
            return torch.nn.functional.linear(x.double(), w, b).float()
        return self.lin(x)


class ImportTimeDebug(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.lin(x)
        if _DEBUG_AT_IMPORT:
            torch._assert_async(torch.isfinite(y).all())
        return y


def make_inputs():
    return [((4,), (torch.randn(2, 4),)) for _ in range(3)]


def before_call(i):
    os.environ["COMPUTE_DTYPE"] = "float64" if i == 1 else "float32"


EXAMPLES = {"EnvPrecisionLinear": make_inputs, "ImportTimeDebug": make_inputs}
