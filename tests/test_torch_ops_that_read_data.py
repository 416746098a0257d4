"""Torch functions that break whatever their arguments because of what they do inside: ``torch.combinations``
selects with a mask (a data-dependent size), ``torch.cov``/``torch.corrcoef`` (and their tensor methods)
compare tensors with ``torch.equal``; ``torch.repeat_interleave(counts)``, whose one argument is the repeats,
has a data-dependent size as the two-argument form does, unless ``output_size=`` gives it.  Each case is also
run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("combinations-and-covariance", """
    import torch


    def f(x: torch.Tensor):
        pairs = torch.combinations(x, r=2)  # breaks
        c = torch.cov(x.view(2, 2))  # breaks
        r = x.view(2, 2).corrcoef()  # breaks
        return pairs.sum() + c.sum() + r.sum()
    """, "f", "[(torch.randn(4),)]"),
    ("repeats-alone", """
    import torch


    def f(x: torch.Tensor, counts: torch.Tensor):
        index = torch.repeat_interleave(counts)  # breaks
        return x[index]
    """, "f", "[(torch.randn(4), torch.tensor([1, 2, 1]))]"),
    ("output-size-given", """
    import torch


    def f(feats: torch.Tensor, counts: torch.Tensor):
        n = feats.shape[0]
        batch = torch.repeat_interleave(torch.arange(counts.shape[0]), counts, output_size=n)
        pooled = torch.zeros(counts.shape[0], feats.shape[1]).index_add_(0, batch, feats)
        return pooled.repeat_interleave(counts, dim=0, output_size=n)
    """, "f", "[(torch.rand(6, 3), torch.tensor([2, 4]))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
