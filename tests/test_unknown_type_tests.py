"""A branch that holds only where a value of no known type is a string or a number (``isinstance(arg, str)``)
is not judged: compiled code is handed tensors far more often, and Dynamo decides the test while tracing, so
with a tensor the branch never runs (measured on torch 2.13: ``os.path.exists(arg)`` there breaks nothing).
A value known to be a string is judged, and so is a branch on ``isinstance(batch, dict)``: batches are dicts
often enough."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import os

    import torch


    def valid(arg) -> bool:
        if isinstance(arg, str) and os.path.exists(arg):
            return True
        if isinstance(arg, int):
            print("an index")
        return isinstance(arg, torch.Tensor)


    def batch_size(value) -> int:
        if isinstance(value, dict):
            return int(value["x"].shape[0])
        return 1


    @torch.compile(backend="eager")
    def step(x: torch.Tensor, path: str) -> torch.Tensor:
        if valid(x):
            x = x * 2
        if os.path.exists(path):
            x = x + 1
        return x * batch_size({"x": x})


    def main(x):
        return step(x, "weights.pt")
"""
BREAKS = {(24, "DYN105")}


test_check, test_dynamo = break_tests(CODE, BREAKS, "[(torch.randn(3),)]")
