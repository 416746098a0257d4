"""The number of dimensions of a tensor indexed by slices, integer constants and ``None``
(``scores.argsort()[:3]`` of a 1-d ``scores`` is 1-d): each element of it is then 0-d, and indexing with one
needs its value, a break (Dynamo's "Data dependent operator"); a sum of such elements is not. Each case is
also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("hardest-rows", """
    import torch


    def hardest_rows_loss(emb, scores):
        top = scores.argsort(descending=True)[:3]
        total = emb.new_zeros(())
        for i in top:
            total = total + emb[i].pow(2).sum()  # breaks
        return total


    if __name__ == "__main__":
        f = torch.compile(hardest_rows_loss)
        f(torch.randn(8, 4), torch.randn(8))
    """, "hardest_rows_loss", "[(torch.randn(8, 4), torch.randn(8))]"),
    ("a-column-summed", """
    import torch


    def column_total(x):
        total = x.new_zeros(())
        for v in x[:, 0][None, :][0]:
            total = total + v
        return total


    if __name__ == "__main__":
        f = torch.compile(column_total)
        f(torch.randn(5, 3))
    """, "column_total", "[(torch.randn(5, 3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
