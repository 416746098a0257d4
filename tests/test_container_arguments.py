"""Lists, tuples and dicts written at the calls of a compiled function: compared call against call.

Measured on torch 2.13 (``backend="eager"``): Dynamo guards on a container argument's length (a
dict's keys) and on the literal elements the function reads, so a list of two tensors and then one
of three recompiles, and so do ``(2, 3)`` then ``(3, 2)`` passed to ``reshape`` and a dict whose read
entry changes; an element the function never reads, or ``len`` of lists of the same length with
other strings in them, does not."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

CASES = """
    import torch


    @torch.compile(backend="eager")
    def stacked(xs):
        return torch.stack(xs).sum(0)


    @torch.compile(backend="eager")
    def reshaped(x, size):
        return x.reshape(size)


    @torch.compile(backend="eager")
    def blended(x, cfg):
        return x * cfg["alpha"] + cfg["beta"]


    @torch.compile(backend="eager")
    def counted(x, names):
        return x * len(names)


    @torch.compile(backend="eager")
    def first(x, s):
        return x * s[-2]


    def run(t):
        stacked([t] * 2)
        stacked([t] * 3)
        reshaped(t, (2, 3))
        reshaped(t, (3, 2))
        blended(t, {"alpha": 1.0, "beta": 0.0})
        blended(t, {"alpha": 1.0, "beta": 1.0})
        counted(t, ["a"])
        counted(t, ["a", "b"])
        first(t, (1, 2))
        first(t, (3, 2))
"""

# each keeps what the function guards and changes only what it does not read
SAME = {
    "stacked": ("stacked([t] * 3)", "stacked([t * 2] * 2)"),  # other tensors, as many (and as aliased)
    "reshaped": ("reshaped(t, (3, 2))", "reshaped(t, (2, 3))"),
    "blended": ('{"alpha": 1.0, "beta": 1.0}', '{"alpha": 1.0, "beta": 0.0}'),
    "counted": ('counted(t, ["a", "b"])', 'counted(t, ["b"])'),  # the same length
    "first": ("first(t, (3, 2))", "first(t, (1, 3))"),  # `s[-2]` is read, `s[-1]` is not
}
"""Calls rewritten so that the two calls differ only where Dynamo does not guard."""


def _varying(code: str) -> set[str]:
    """The compiled functions DYN206 names."""
    found = [d.message for d in check(code) if d.code == "DYN206"]
    return {name for name in ("stacked", "reshaped", "blended", "counted", "first")
            if any(f"specialises `{name}`" in m for m in found)}


def test_containers_that_differ_where_the_function_reads_them_vary():
    assert _varying(CASES) == {"stacked", "reshaped", "blended", "counted", "first"}
    message = next(d.message for d in check(CASES) if d.code == "DYN206" and "`reshaped`" in d.message)
    assert "`reshaped(t, (2, 3))` in `run` passes `(2, 3)`" in message and "passes `(3, 2)`" in message


@pytest.mark.parametrize("name", sorted(SAME))
def test_containers_that_differ_only_where_the_function_does_not_look_do_not(name):
    old, new = SAME[name]
    assert old in CASES
    assert name not in _varying(CASES.replace(old, new))


def test_a_container_with_a_spread_is_not_compared():
    assert "stacked" not in _varying(CASES.replace("stacked([t] * 3)", "stacked([*xs, t])"))


@requires_torch
@pytest.mark.parametrize("same", [False, True])
def test_the_cases_under_dynamo(same):
    """What the findings above predict, counted as the compiled code's cache entries."""
    import torch

    code = CASES
    if same:
        for old, new in SAME.values():
            code = code.replace(old, new)
    namespace: dict = {}
    torch._dynamo.reset()
    try:
        exec(compile(textwrap.dedent(code), "<cases>", "exec"), namespace)
        namespace["run"](torch.randn(6))
        entries = torch._dynamo.eval_frame._debug_get_cache_entry_list
        graphs = {name: len(entries(namespace[name]._torchdynamo_orig_callable.__code__)) for name in SAME}
    finally:
        torch._dynamo.reset()
    assert graphs == {name: 1 if same else 2 for name in SAME}


SKIPPED = """
    import torch


    @torch.compile(backend="eager")
    def optional(x, bias=None):
        if bias is None:
            return x
        return x + bias


    @torch.compile(backend="eager")
    def leveled(x, level):
        if level > 1:
            return x.relu()
        return x


    def run(t):
        optional(t)
        optional(t, t)
        leveled(t, 1)
        leveled(t, 2)
"""
"""The first call of each returns its argument untouched: Dynamo skips the frame from then on."""

TRACED = SKIPPED.replace("""
        optional(t)
        optional(t, t)
        leveled(t, 1)
        leveled(t, 2)
""", """
        optional(t, torch.ones(6))
        optional(t)
        leveled(t, 2)
        leveled(t, 1)
""")
"""The same calls the other way round: the first traces an operation, the second recompiles."""


def test_a_frame_whose_first_call_returns_an_argument_untouched_does_not_recompile():
    assert not [d for d in check(SKIPPED) if d.code == "DYN206"]
    assert {d.line for d in check(TRACED) if d.code == "DYN206"} == {5, 12}


@requires_torch
@pytest.mark.parametrize("code, recompiled", [(SKIPPED, set()), (TRACED, {"optional", "leveled"})])
def test_the_skipped_frames_under_dynamo(code, recompiled):
    """Counted from Dynamo's ``recompiles`` log (a recompile that traces nothing adds no cache entry)."""
    import torch

    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(code), "<skipped>", "exec"), namespace)
        namespace["run"](torch.randn(6))
    seen = {message.split("Recompiling function")[1].split()[0] for message in messages}
    assert seen == recompiled
