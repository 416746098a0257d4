"""A method whose body breaks, called on an object the compiled function made itself: Dynamo breaks at
the call too ("Reconstruction failure": the bound method of an object without a source cannot be rebuilt
to resume after the call).  An object passed in, one passed on to a helper, a module called as ``m(x)``,
a method that does not break, a call after a break of the function since the object was made and a call
in a loop (where Dynamo runs the frame eagerly) do not; what follows such a call runs eagerly, without
breaks."""
from __future__ import annotations

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

CODE = """\
    import dataclasses

    import torch


    class Solver:
        def __init__(self, y):
            self.y = y

        def integrate(self, t):
            if t.sum() > 0:
                return self.y * 2
            return self.y

        def shifted(self, t):
            return self.y + t


    @dataclasses.dataclass
    class Record:
        y: torch.Tensor

        def integrate(self, t):
            if t.sum() > 0:
                return self.y * 2
            return self.y


    @torch.compile(backend="eager")
    def fresh(y, t):
        s = Solver(y)
        a = s.shifted(t)
        out = s.integrate(t)
        return out + a


    @torch.compile(backend="eager")
    def chained(y, t):
        return Record(y).integrate(t) + 1


    @torch.compile(backend="eager")
    def given(s, t):
        return s.integrate(t) + 1


    def run_it(s, t):
        return s.integrate(t)


    @torch.compile(backend="eager")
    def passed_on(y, t):
        s = Solver(y)
        return run_it(s, t) + 1


    @torch.compile(backend="eager")
    def rebound(y, t, s):
        if y.dim() > 5:
            s = Solver(y)
        return s.integrate(t) + 1


    @torch.compile(backend="eager")
    def broken_between(y, t):
        s = Solver(y)
        print("made")
        return s.integrate(t) + 1


    @torch.compile(backend="eager")
    def eager_after(y, t):
        s = Solver(y)
        out = s.integrate(t)
        print("solved")
        return out + 1


    def main(y, t):
        return (fresh(y, t), chained(y, t), given(Solver(y), t), passed_on(y, t), rebound(y, t, Solver(t)),
                broken_between(y, t), eager_after(y, t))
"""
INPUTS = "[(torch.ones(3), torch.ones(3))]"
INNER = {11, 24}
"""The branches inside the methods."""
CALLS = {33, 39, 74}
"""The calls of a breaking method on an object the function made, with no break since it was made."""
BETWEEN = 67
"""A break between the making and the call: Dynamo resumes with the object as an argument of the new frame."""


def test_check_reports_the_call_on_a_fresh_object(tmp_path, capsys) -> None:
    found = checked_breaks(tmp_path, capsys, CODE)
    assert {line for line, code in found if code == "DYN105"} == CALLS | {BETWEEN}
    assert {line for line, _ in found} == INNER | CALLS | {BETWEEN}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == INNER | CALLS | {BETWEEN}
