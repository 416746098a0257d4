"""The number of dimensions of a tensor indexed by slices, integer constants and ``None``
(``scores.argsort()[:3]`` of a 1-d ``scores`` is 1-d), or by one boolean mask (``rest[keep]`` of a 1-d
``rest`` is 1-d, also when a loop joins it with what the loop started from): each element of it is then
0-d, and indexing with one needs its value, a break (Dynamo's "Data dependent operator"); a sum of such
elements is not. Each case is also run under real Dynamo (torch 2.13)."""
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
    ("oks-nms", """
    import torch


    def keep_best(kpts: torch.Tensor, scores: torch.Tensor, thr: float):
        order = scores.flatten().argsort(descending=True)
        kept = []
        while order.numel() > 0:
            i = order[0]
            kept.append(kpts[i])  # breaks
            rest = order[1:]
            order = rest[scores[rest] > thr]
        return torch.stack(kept)
    """, "keep_best", "[(torch.randn(5, 3, 2), torch.rand(5), 0.5)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
