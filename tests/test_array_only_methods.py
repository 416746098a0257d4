"""A method with a data-dependent output size that only tensors and NumPy arrays have (``nonzero``,
``unique``...) called on a value the analysis could not type (an entry of an untyped dict argument) is a
dynamic-shape op wherever it runs: Dynamo holds an array as a tensor.  A method other values have too
(``sum``) says nothing.  The case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("entries-of-an-untyped-dict", """
    import torch


    def f(batch):
        positive = batch["labels"].nonzero()  # breaks
        items = batch["item_ids"].unique()  # breaks
        total = batch["weights"].sum()
        return positive, items, total
    """, "f", "[({'labels': torch.tensor([1, 0, 1]), 'item_ids': torch.tensor([4, 4, 7]), "
              "'weights': torch.rand(3)},)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
