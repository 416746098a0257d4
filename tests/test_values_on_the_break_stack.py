"""What a statement evaluates before its graph break runs in the graph before the break: the frame Dynamo
resumes after ``loss.item()`` in ``return abs(loss), round(loss.item(), 3)`` holds ``abs(loss)`` as a value
but runs no tensor operation, so it has no graph and nothing recompiles on the number (measured on torch 2.13:
"No ops traced for the FX graph").  The frame resumed in ``return x.reshape(int(t.sum()), -1)`` holds the
tensor's bound method and a number, nothing tensor-related, and Dynamo skips it ("no tensor-related objects
found in frame").  A tensor operation after the break in a function that names torch
(``torch.arange(t.max().item()) * 2``) is compiled and guarded on the number, and recompiles when it changes."""
from __future__ import annotations

import libcst as cst
import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

from dynalint.analysis.syntax import evaluated_before

CODE = """
    import torch


    @torch.compile(backend="eager")
    def loss_and_value(p: torch.Tensor, q: torch.Tensor):
        loss = ((p - q) ** 2).mean()
        return abs(loss), round(loss.item(), 3)


    @torch.compile(backend="eager")
    def arange_to_max(t: torch.Tensor):
        return torch.arange(t.max().item()) * 2


    @torch.compile(backend="eager")
    def rows_of(x: torch.Tensor, t: torch.Tensor):
        return x.reshape(int(t.sum()), -1)


    def run():
        for i in range(3):
            loss_and_value(torch.full((4,), float(i)), torch.zeros(4))
            arange_to_max(torch.tensor([3 + i, 1]))
            rows_of(torch.randn(12), torch.tensor([1 + i, 1]))
"""


def test_check_reports_only_the_frame_with_a_graph() -> None:
    reported = {d.line for d in check(CODE) if d.code == "DYN204"}
    assert reported == {12}


@requires_torch
def test_dynamo_recompiles_only_the_frame_with_a_graph() -> None:
    messages = recompiles_of_run(CODE, "break-stack")
    assert messages and all("arange_to_max" in m for m in messages)


@pytest.mark.parametrize("statement, node, before", [
    ("return abs(loss), round(loss.item(), 3)", "loss.item()", ["abs(loss)", "round"]),
    ("y = x.reshape(int(n), -1)", "int(n)", ["x.reshape"]),
    ("self.buf[t.item()] = x + 1", "t.item()", ["x + 1", "self.buf"]),
    ("self.total += t.item()", "t.item()", ["self.total"]),
    ("out = a if t.item() else b", "t.item()", []),
    ("out = f(a) if c else t.item()", "t.item()", ["c"]),
    ("out = [v.item() for v in xs]", "v.item()", []),
])
def test_evaluation_order(statement: str, node: str, before: list[str]) -> None:
    module = cst.parse_module(statement + "\n")
    stmt = module.body[0].body[0]
    target = next(n for n in _walk(stmt) if isinstance(n, cst.BaseExpression) and module.code_for_node(n) == node)
    assert [module.code_for_node(n).rstrip(", ") for n in evaluated_before(stmt, target)] == before


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)
