"""An object built in compiled code runs its class's ``__init__`` there: Dynamo inlines it (and a
dataclass's generated ``__init__`` runs its ``__post_init__``), so what breaks in it breaks the caller's
graph, with the values the call passes (a dataclass's fields hold them, a field with a
``dataclasses.field(default_factory=...)`` default too); a ``TypedDict`` with optional keys cannot be
built there at all.
An ``nn.Module`` whose ``__init__`` breaks, or that is built where the function runs eagerly, has each
``__init__`` of its chain compiled as a frame of its own, which cannot take the module before
``nn.Module.__init__`` ran: each breaks again at its first use of ``self``.
The attributes an ``__init__`` sets belong to the new object, not to state kept across calls, so they are
no recompile hazard.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import check, marked_case_tests

CASES = [
    ("init-with-call-arguments", """
    import torch


    class Interval:
        def __init__(self, t0, t1, size=None):
            if t0 > t1:  # breaks
                raise ValueError("t0 after t1")
            self.t0 = float(t0)  # breaks
            self.size = size


    def f(y, ts):
        bm = Interval(ts[0], ts[-1], size=y.shape)
        return y * 2
    """, "f", "[(torch.ones(3), torch.arange(4.0))]"),
    ("post-init-of-a-dataclass", """
    import dataclasses

    import torch


    @dataclasses.dataclass
    class Step:
        t: torch.Tensor

        def __post_init__(self):
            self.v = self.t.item()  # breaks


    def f(x):
        return x + Step(x[0]).v
    """, "f", "[(torch.arange(3.0),)]"),
    ("dataclass-field-with-a-default-factory", """
    import dataclasses

    import torch


    @dataclasses.dataclass
    class Out:
        score: float
        extras: dict = dataclasses.field(default_factory=dict)


    def f(x):
        out = Out(x.sum())
        if out.score > 0:  # breaks
            return x * 2
        return x
    """, "f", "[(torch.arange(3.0),)]"),
    ("init-of-a-base-class", """
    import abc

    import torch


    class Base(abc.ABC):
        def __init__(self, t):
            self.t = t.tolist()  # breaks


    class Derived(Base):
        pass


    def f(x):
        return x * len(Derived(x).t)
    """, "f", "[(torch.arange(3.0),)]"),
    ("module-whose-init-breaks", """
    import torch
    from torch import nn


    class Inner(nn.Module):
        def __init__(self, a):
            super().__init__()  # breaks
            self.a = a
            self.s = float(a.sum())  # breaks

        def forward(self, x):
            return x * self.s


    class Outer(Inner):
        def __init__(self, a):
            super().__init__(a)  # breaks
            self.b = 2


    def f(x):
        return Outer(x)(x)
    """, "f", "[(torch.ones(3),)]"),
    ("module-built-where-the-function-runs-eagerly", """
    import torch
    from torch import nn


    class Base(nn.Module):
        def __init__(self, k):
            super().__init__()  # breaks
            self.k = k

        def forward(self, x):
            return x * self.k


    class Child(Base):
        def __init__(self, k):
            super().__init__(k)  # breaks
            self.j = 1


    def f(x):
        for i in range(2):
            if x.sum() > i:  # breaks
                x = x + 1
        return Child(2)(x) + Base(3)(x)
    """, "f", "[(torch.ones(3),)]"),
    ("typed-dicts-with-optional-keys", """
    import typing

    import torch


    class Message(typing.TypedDict, total=False):
        name: str
        value: torch.Tensor


    class Site(typing.TypedDict):
        name: str
        value: typing.NotRequired[torch.Tensor]


    class Pair(typing.TypedDict):
        name: str
        value: torch.Tensor


    def f(x):
        a = Message(name="a", value=x)  # breaks
        b = Site(name="b", value=x)  # breaks
        c = Pair(name="c", value=x)
        return a["value"] + b["value"] + c["value"]
    """, "f", "[(torch.ones(3),)]"),
    ("init-that-traces", """
    import torch


    class Scale:
        def __init__(self, t, k=2):
            self.t = t * k
            self.k = k


    def f(x):
        s = Scale(x)
        return s.t + s.k
    """, "f", "[(torch.arange(3.0),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)


def test_the_attributes_an_init_sets_are_no_recompile_hazard() -> None:
    code = """
    import torch


    class Clip(torch.nn.Module):
        def __init__(self, lo, hi):
            super().__init__()
            self.lo = lo
            self.hi = hi

        def forward(self, x):
            return x.clamp(self.lo, self.hi)


    clip = Clip(0.0, 1.0)


    @torch.compile
    def f(x):
        return Clip(-1.0, 2.0)(clip(x))
    """
    assert [d.code for d in check(code)] == []
