"""The paths a frame resumed after a graph break may take first.

Dynamo compiles a resumed frame the first time it runs; when that first run reaches the end of the
frame without a graph operation, Dynamo skips the frame from then on and guards on nothing it
receives (measured on torch 2.13).  Which branch of an ``if`` the first run takes is in general not
known, so a branch that returns at once without a graph operation makes what the frame guards on
uncertain.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.events import AttributeEvent, CallEvent
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Analysed, Break, Breaks


def branch_may_skip(program: "Analysed", breaks: "Breaks", brk: "Break") -> bool:
    """The break is in the test of an ``if`` one of whose branches returns at once without a graph
    operation (``return random.randrange(n)``, ``return 0``): when the first call takes that branch,
    the resumed frame has no graph and Dynamo skips it from then on, and which branch the first call
    takes is not known (measured on torch 2.13: with the other branch first, the resumed frame is
    compiled and guarded on the value)."""
    statement = brk.statement
    if not isinstance(statement, cst.If) or not any(n is brk.node for n in walk(statement.test)):
        return False
    branches = [statement.body]
    if isinstance(statement.orelse, cst.Else):
        branches.append(statement.orelse.body)
    for branch in branches:
        first = branch.body[0] if isinstance(branch, cst.IndentedBlock) and branch.body else None
        if isinstance(first, cst.SimpleStatementLine) and first.body and isinstance(first.body[0], cst.Return) \
                and _python_only(program, breaks, first.body[0]):
            return True
    return False


def _python_only(program: "Analysed", breaks: "Breaks", node: cst.CSTNode) -> bool:
    """Everything the analysis saw evaluated in ``node`` is Python: calls of Python values into no
    function of the project (``random.randrange(self.n)``) and attributes that are not tensors or
    modules; no graph operation, no break."""
    inside = {id(n) for n in walk(node)}
    if any(id(b.node) in inside for b in breaks):
        return False
    for ev in program.events:
        if id(ev.node) not in inside:
            continue
        if isinstance(ev, AttributeEvent):
            if ev.write or ev.value is None or ev.value.kind in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN):
                return False
        elif isinstance(ev, CallEvent):
            values = [*ev.args, *ev.kwargs.values(), ev.result]
            if ev.callee is not None or ev.module is not None or ev.result is None \
                    or any(v is not None and v.kind in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN) for v in values) \
                    or ev.receiver is not None and ev.receiver.kind in (Kind.TENSOR, Kind.MODULE):
                return False  # (the receiver of a module's function, `random`, is not known)
        else:
            return False
    return True
