"""A size the calls of a compiled function change, handed to a helper Dynamo runs as a frame of its own (one
whose body breaks): the helper's frame receives a Python int and is guarded on its value, so it recompiles
when the size first changes (DYN206 on the helper's parameter; measured on torch 2.13: ``n == 8``).  A literal
handed on instead is one value: nothing is reported, and the helper does not recompile."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """
    import torch


    def coordination(edge_index, w, n):
        adj = torch.sparse_coo_tensor(edge_index, w, (n, n)).coalesce()
        return torch.sparse.sum(adj, dim=1).to_dense()


    def summary(pos, edge_index):
        n = pos.shape[0]
        w = torch.ones(edge_index.shape[1])
        return coordination(edge_index, w, N).mean()


    def run():
        cs = torch.compile(summary, backend="eager")
        cs(torch.rand(8, 3), torch.tensor([[0, 1], [1, 0]]))
        cs(torch.rand(27, 3), torch.tensor([[0, 1], [1, 0]]))
"""
#: what the caller hands the helper -> whether the helper's frame recompiles
VARIANTS = {"n": True, "4": False}


def test_check() -> None:
    for given, recompiles in VARIANTS.items():
        found = [d for d in check(CODE.replace("N)", f"{given})")) if d.code == "DYN206"]
        assert [(d.line, "`n`" in d.message) for d in found] == ([(4, True)] if recompiles else []), given


@requires_torch
def test_dynamo() -> None:
    for given, recompiles in VARIANTS.items():
        messages = recompiles_of_run(CODE.replace("N)", f"{given})"), f"sizes-{given}")
        assert any("function coordination" in m and "n == 8" in m for m in messages) == recompiles, messages
