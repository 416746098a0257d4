"""The two readings of one walk over where code uses a number taken from tensor data as a Python value
(``_constant_uses`` in ``dynalint.analysis.breaks``): ``needs_constant`` (may the use need the value,
for the capture-flags claim and refusal) and ``constant_failure`` (which number fails there, and
whether Dynamo raises or breaks, for the break it reports).  They agree on a list or tuple index or
slice bound, ``random.Random(n)`` and ``range(n)``, and differ on purpose where the failure is not
claimed: a module list or dict subscript, and a use of two numbers, where the
failure names the first and the need holds for each."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from dynalint.analysis.breaks import constant_failure, needs_constant
from dynalint.analysis.events import CallEvent, Event, ForLoopEvent, SubscriptEvent
from dynalint.analysis.program import Program

SOURCE = """
    import random

    import torch
    import torch.nn as nn

    SIZES = [2, 3, 4]


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            n = int(x.sum().item())
            return self.layers[n](x)


    @torch.compile
    def f(x):
        n = int(x.sum().item())
        m = int(x.max().item())
        d = {0: 1, 1: 2}
        out = [0, 0, 0]
        out[n] += 1
        out[n] = 1
        a = d[n]
        b = SIZES[m:n]
        c = SIZES[n]
        r = random.Random(n)
        for _ in range(n):
            pass
        return x
"""

N = "x.sum().item()"
M = "x.max().item()"


@pytest.fixture(scope="module")
def program() -> Program:
    return Program(cst.parse_module(textwrap.dedent(SOURCE))).run()


def _use(program: Program, kind: type, code: str, augmented: bool = False, function: str = "f") -> Event:
    """The one event of ``kind`` at the expression ``code`` of ``function`` (a subscript's augmented
    store or not)."""
    [found] = [e for e in program.events if type(e) is kind and e.function.name == function
               and program.module.code_for_node(e.node) == code and getattr(e, "augmented", False) is augmented]
    return found


def _origin(program: Program, code: str) -> cst.CSTNode:
    """The call ``code`` of ``f`` that extracts a number."""
    [found] = {id(e.node): e.node for e in program.events if isinstance(e, CallEvent)
               and e.function.name == "f" and program.module.code_for_node(e.node) == code}.values()
    return found


def _failure(program: Program, ev: Event) -> "tuple[str, bool] | None":
    failure = constant_failure(ev)
    return None if failure is None else (program.module.code_for_node(failure[0]), failure[1])


@pytest.mark.parametrize("kind, code, failure", [
    (SubscriptEvent, "SIZES[n]", (N, True)),  # GuardOnDataDependentSymNode
    (SubscriptEvent, "out[n]", (N, False)),  # a store breaks
    (CallEvent, "random.Random(n)", (N, True)),  # AsPythonConstantNotImplementedError
    (CallEvent, "range(n)", (N, False)),
    (ForLoopEvent, "range(n)", (N, False)),
], ids=["index", "store", "seed", "range-call", "range-loop"])
def test_both_readings_agree_where_the_failure_is_claimed(program, kind, code, failure):
    ev = _use(program, kind, code)
    assert _failure(program, ev) == failure
    assert needs_constant(ev, _origin(program, N))
    assert not needs_constant(ev, _origin(program, M))


@pytest.mark.parametrize("code, function", [("self.layers[n]", "forward"), ("d[n]", "f")],
                         ids=["module-list", "dict"])
def test_a_module_list_or_dict_subscript_needs_the_value_but_claims_no_failure(program, code, function):
    ev = _use(program, SubscriptEvent, code, function=function)
    assert ev.base.kind.value in ("module", "python")
    assert constant_failure(ev) is None
    assert needs_constant(ev, ev.index[0].origin)


def test_an_augmented_store_reads_the_index_and_fails_as_a_read(program):
    """``out[n] += 1`` reads ``out[n]`` first: under ``capture_scalar_outputs`` Dynamo raises
    ``GuardOnDataDependentSymNode`` there (measured on torch 2.13), where ``out[n] = 1`` only breaks."""
    augmented = _use(program, SubscriptEvent, "out[n]", augmented=True)
    assert _failure(program, augmented) == (N, True)
    assert needs_constant(augmented, _origin(program, N))
    stored = next(e for e in program.events if type(e) is SubscriptEvent and e.store and not e.augmented
                  and program.module.code_for_node(e.node) == "out[n]")
    assert _failure(program, stored) == (N, False)


def test_two_numbers_the_failure_names_the_first_and_each_is_needed(program):
    ev = _use(program, SubscriptEvent, "SIZES[m:n]")
    assert _failure(program, ev) == (M, False)
    assert needs_constant(ev, _origin(program, M)) and needs_constant(ev, _origin(program, N))


def test_no_reading_outside_the_uses(program):
    ev = _use(program, CallEvent, "int(x.sum().item())")
    assert constant_failure(ev) is None
    assert not needs_constant(ev, _origin(program, N))
