"""Which tensors the analysis knows to be 0-d, checked against torch: a tensor of one Python number, a
parameter or buffer wrapping a 0-d tensor, the shape-keeping ops of a 0-d tensor and its conversions
(``a.to(x)``, whatever ``x`` is) are 0-d; a tensor of a list, a parameter of a 1-d tensor and an op that
broadcasts a 0-d tensor against another are not claimed.  (A fix that keeps ``.item()``'s value as a tensor needs the tensor to be 0-d: ``.item()`` of
more elements raises, where the kept tensor would broadcast.)"""
from __future__ import annotations

import textwrap

import libcst as cst
from conftest import requires_torch
from dynalint.analysis.program import Program
from dynalint.config.settings import Scope

SOURCE = """
    import torch
    import torch.nn as nn


    class Temp(nn.Module):
        def __init__(self):
            super().__init__()
            self.log_temp = nn.Parameter(torch.tensor(0.07).log())
            self.bias = nn.Parameter(torch.zeros(3))

        def forward(self, x):
            a = torch.tensor(2.5)
            b = self.log_temp.exp()
            c = self.log_temp.exp().clamp(max=100.0)
            d = torch.tensor([1.0, 2.0])
            e = self.bias.exp()
            f = a.clamp(min=x)
            g = torch.as_tensor(3)
            h = a.to(x)
            return a, b, c, d, e, f, g, h
"""
CLAIMED = {"a": True, "b": True, "c": True, "d": False, "e": False, "f": False, "g": True, "h": True}


def _values() -> dict[str, bool]:
    module = cst.parse_module(textwrap.dedent(SOURCE))
    program = Program(module, scope=Scope.ALL, values={}).run()
    out = {}
    forward = program.index.classes["Temp"].methods["forward"]
    for stmt in forward.node.body.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(small, cst.Assign):
            value = program.values.get(id(small.value))
            out[small.targets[0].target.value] = value is not None and value.zero_dim
    return out


def test_the_analysis_claims_0d_only_where_it_is_known():
    assert _values() == CLAIMED


@requires_torch
def test_the_claims_are_torch_s():
    import torch
    import torch.nn as nn

    namespace: dict = {"torch": torch, "nn": nn}
    exec(textwrap.dedent(SOURCE), namespace)
    outputs = namespace["Temp"]()(torch.ones(2))
    real = dict(zip("abcdefgh", (t.dim() == 0 for t in outputs)))
    assert real == CLAIMED  # every claim holds, and what is not claimed is not 0-d here
