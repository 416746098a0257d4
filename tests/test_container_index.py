"""A tensor as the index of a tuple, a list, an ``nn.ModuleList`` or an ``nn.Sequential`` must become a Python
int: Dynamo reads it with ``.item()`` (the containers through ``operator.index``) and the graph breaks there
(measured on torch 2.13; the break inside ``torch/nn/modules/container.py`` is placed at the subscript)."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch
import torch.nn as nn


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 2) for _ in range(3)])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.scales = [1.0, 2.0, 3.0]

    def forward(self, x):
        idx = x.argmax() % 3
        a = self.heads[idx](x)
        b = self.seq[idx % 2](x)
        c = x * self.scales[idx]
        d = x * (4, 5, 6)[idx]
        return a.sum() + b.sum() + c.sum() + d.sum()


def main(x):
    return torch.compile(Heads(), backend="eager")(x)
"""

test_check, test_dynamo = break_tests(CODE, {(14, "DYN102"), (15, "DYN102"), (16, "DYN102"), (17, "DYN102")},
                                      "[(torch.randn(2, 4),)]")


def test_the_capture_flag_keeps_the_module_containers_breaks() -> None:
    """Measured on torch 2.13 with ``capture_scalar_outputs``: the list's and the tuple's index are traced,
    the module containers' still break."""
    from helpers import break_lines

    assert break_lines(CODE, capture_scalar_outputs=True) == {14, 15}
