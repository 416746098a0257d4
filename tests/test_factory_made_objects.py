"""An object a factory makes in the compiled code (a ``@staticmethod``/``@classmethod`` that returns ``cls(...)``,
a method that returns ``type(self)(...)`` or ``self.__class__(...)``), like one made with ``Cls(...)``, has no source Dynamo could
load it from: calling a method whose body breaks on it breaks again at the call ("Reconstruction failure"), and
the rest of the function runs eagerly.  A method that returns an object it did not make (``self.frame``) does not.
Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

_RIGID = """
    import torch


    class Rigid:
        def __init__(self, rots: torch.Tensor, trans: torch.Tensor):
            self.rots, self.trans = rots, trans
            self.frame = self

        @staticmethod
        def identity(trans: torch.Tensor) -> "Rigid":
            return Rigid(torch.eye(3).expand(trans.shape[0], 3, 3), trans)

        @classmethod
        def from_trans(cls, trans: torch.Tensor) -> "Rigid":
            return cls(torch.eye(3).expand(trans.shape[0], 3, 3), trans)

        def compose(self, other: "Rigid") -> "Rigid":
            return self.__class__(self.rots @ other.rots, self.trans + other.trans)

        def moved(self, t: torch.Tensor) -> "Rigid":
            return type(self)(self.rots, self.trans + t)

        def same(self) -> "Rigid":
            return self.frame

        def orthonormal(self, tol: float = 1e-4) -> bool:
            err = (self.rots @ self.rots.transpose(-1, -2) - torch.eye(3)).abs().max()
            return bool(err < tol)  # breaks
"""

CASES = [
    ("staticmethod", _RIGID + """

    def f(s: torch.Tensor):
        r = Rigid.identity(s)
        ok = r.orthonormal()  # breaks
        print(ok)
        return r.trans * 2
    """, "f", "[(torch.randn(4, 3),)]"),
    ("classmethod-and-compose", _RIGID + """

    def f(s: torch.Tensor):
        r = Rigid.from_trans(s)
        r = r.compose(r).moved(s)
        ok = r.orthonormal()  # breaks
        return r.trans * 2, ok
    """, "f", "[(torch.randn(4, 3),)]"),
    ("given-object", _RIGID + """

    r0 = Rigid(torch.eye(3).expand(4, 3, 3), torch.zeros(4, 3))


    def f(s: torch.Tensor):
        r = r0.same()
        ok = r.orthonormal()
        print(ok)  # breaks
        return s * 2
    """, "f", "[(torch.randn(4, 3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
