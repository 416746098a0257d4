"""A tensor computed in the graph where a torch op's signature takes only a Python number (``Scalar``,
``float``): ``alpha=``, ``beta=``, ``value=``, a fill value, an activation's constants.  Dynamo has to
read the tensor's data there (``aten._local_scalar_dense``), so the graph breaks.  Parameters with a tensor
overload (``clamp``'s bounds, ``torch.where``'s branches, ``lerp``'s weight) and ``torch.full``'s fill
value, which Dynamo traces as a ``fill_``, take it without a break.  ``torch.fft``, ``torch.linalg`` and
``torch.special`` functions are read from aten's ``fft_*``, ``linalg_*`` and ``special_*`` signatures.  Each
case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("scalar-parameters", """
    import torch
    import torch.nn.functional as F


    def f(x: torch.Tensor, t: torch.Tensor):
        a = x.add(x, alpha=1 - t)  # breaks
        b = torch.full_like(x, t * 2)  # breaks
        c = torch.addcmul(x, x, x, value=t.exp())  # breaks
        e = torch.threshold(x, t.sin(), 0.0)  # breaks
        g = F.softplus(x, beta=t + 1)  # breaks
        h = x.new_full((4,), t.abs())  # breaks
        return a + b + c + e + g + h
    """, "f", "[(torch.randn(4), torch.tensor(0.5))]"),
    ("fft-linalg-sizes", """
    import torch


    def f(sig: torch.Tensor, lengths: torch.Tensor):
        n = lengths.max() * 2
        spec = torch.fft.rfft(sig, n=n)  # breaks
        back = torch.fft.irfft(spec, n=sig.shape[-1])
        return back + torch.linalg.vector_norm(sig, ord=lengths.float().mean())  # breaks
    """, "f", "[(torch.randn(2, 8), torch.tensor([4, 5]))]"),
    ("parameters-that-take-tensors", """
    import torch


    def f(x: torch.Tensor, t: torch.Tensor):
        d = t * 0.5
        a = torch.clamp(x, min=d)
        b = torch.where(x > 0, x, d)
        c = torch.lerp(x, a, d)
        e = torch.full((4,), d)
        g = x.masked_fill(x > 0, d)
        return a + b + c + e + g
    """, "f", "[(torch.randn(4), torch.tensor(0.5))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
