"""A reduction over one dimension written as an int (``logits.max(-1).values``, ``x.sum(1)``) has one
dimension less than its input (none less with ``keepdim=True``): the first item of a 1-d sort order is a 0-d
tensor, and indexing with it needs its value (Dynamo breaks, a data-dependent operator)."""
from __future__ import annotations

from helpers import break_tests

CODE = """\
    import torch


    def pick_best(boxes, scores):
        order = scores.argsort(descending=True)
        i = order[0]
        return boxes[i] * 2


    def pick_rows(boxes, scores):
        order = scores.argsort(dim=0, descending=True)
        i = order[0]
        return boxes[i] * 2


    compiled_best = torch.compile(pick_best, backend="eager")
    compiled_rows = torch.compile(pick_rows, backend="eager")


    def main(x):
        logits, boxes = torch.rand(6, 3), torch.rand(6, 4) + x
        best = compiled_best(boxes, logits.max(-1).values)
        rows = compiled_rows(boxes, logits.sum(-1, keepdim=True))
        return best, rows
"""

test_check, test_dynamo = break_tests(CODE, {(7, "DYN102")}, "[(torch.rand(6, 4),)]")
