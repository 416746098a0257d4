"""Facts Dynamo settles while it traces, which decide what the code around them is: ``torch.is_tensor(x)``
narrows ``x`` as ``isinstance(x, torch.Tensor)`` does, and that test of a value known to be a tensor holds,
so the code its other branch holds never runs; a string bound once at module level, or in the body
of a class and read on the class (an enum-like class of names), is that string, so a value compared with
it is no tensor; a property's getter runs where compiled code reads the property, and a lambda where the
function that made it calls it (Dynamo inlines both, so what breaks in them breaks there), but a property
read through ``super()`` is held unresolved: calling its methods or passing it to torch breaks.  Each case is
also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("is-tensor-narrows", """
    from typing import Sequence, Union

    import torch


    def f(y0: torch.Tensor, ts: Union[Sequence[float], torch.Tensor]):
        if not torch.is_tensor(ts):
            ts = torch.tensor(ts, dtype=y0.dtype)
        if ts[-1] <= ts[0]:  # breaks
            raise ValueError("times must increase")
        return y0 * ts[-1]
    """, "f", "[(torch.ones(3), torch.arange(4.0))]"),
    ("isinstance-of-a-tensor-decides-the-branch", """
    import torch


    def clipped(x, clip):
        if isinstance(clip, torch.Tensor):
            x = torch.minimum(x, clip)
        elif clip > 0.0:
            x = x.clamp(max=clip)
        return x


    def f(x):
        return clipped(x, x.mean()) + clipped(x, 2.0)
    """, "f", "[(torch.ones(3),)]"),
    ("string-names-of-a-class", """
    import torch


    class METHODS:
        euler = "euler"
        heun = "heun"


    def f(y0, ts, method, adjoint_method):
        ys = y0 * ts
        if method == METHODS.heun and adjoint_method == METHODS.euler:
            ys = ys * 2
        return ys
    """, "f", "[(torch.ones(3), torch.ones(3), 'heun', 'euler')]"),
    ("string-bound-once-in-the-module", """
    import torch

    FAST = "fast"


    def f(x, mode):
        if mode == FAST:
            return x
        return x * 2
    """, "f", "[(torch.ones(3), 'fast')]"),
    ("lambda-called-where-it-is-made", """
    import torch


    def f(x, k):
        scale = lambda t, by=2: t * t.mean().item() * by  # breaks
        shift = lambda t: t + k
        return shift(scale(x))
    """, "f", "[(torch.ones(3), 1.0)]"),
    ("property-of-an-object", """
    import torch


    class Span:
        def __init__(self, v):
            self.v = v

        @property
        def norm(self):
            return self.v.norm().item()  # breaks


    span = Span(torch.ones(3))


    def f(x):
        return x * span.norm
    """, "f", "[(torch.ones(3),)]"),
    ("property-read-through-super", """
    import torch


    class Base:
        def __init__(self, m):
            self._m = m

        @property
        def mean(self):
            return self._m


    class Flat(Base):
        @property
        def mean(self):
            m = super().mean
            return m.view(-1)  # breaks


    class Scaled(Base):
        @property
        def mean(self):
            return torch.exp(super().mean)  # breaks


    flat = Flat(torch.ones(2, 2))


    def f(x):
        return flat.mean + Scaled(x).mean
    """, "f", "[(torch.ones(4),)]"),
    ("property-of-a-module", """
    import torch


    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        @property
        def scale(self):
            return float(self.w.max())  # breaks

        def forward(self, x):
            return x * self.scale


    model = Scaled()


    def f(x):
        return model(x)
    """, "f", "[(torch.ones(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
