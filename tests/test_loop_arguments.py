"""The values a loop passes a compiled function, replayed iteration by iteration (DYN206).

The program below was run through real Dynamo (torch 2.13, ``backend="eager"``): ``step`` recompiles on
``use_aux`` (a test of the loop's counter), ``weight`` (a ramp through ``min``) and ``iters`` (a
curriculum), each in turn; ``sample`` on ``temperature`` (spread from a list of settings with ``**``,
``top_p`` the same in both); ``march`` breaks inside its loop, so Dynamo runs it eagerly and guards on
none of its arguments, except in a function it hands one to (``scale``, compiled as a frame of its own).
"""
from __future__ import annotations

import re
import sys
import textwrap

import libcst as cst
import pytest

from conftest import requires_torch
from dynalint.analysis.loop_arguments import UNKNOWN, loop_argument_values
from dynalint.analysis.module_index import build_index
from dynalint.config.resolver import resolve
from dynalint.engine.session import Session
from helpers import check, compile_eagerly, dynamo_recompile_log, recompiles_of_script

PROGRAM = """
    import torch

    SETTINGS = [{"temperature": 1.0, "top_p": 0.9}, {"temperature": 0.7, "top_p": 0.9}]


    def scale(x, s):
        return x * s


    @torch.compile
    def step(x, iters, weight, use_aux):
        for _ in range(iters):
            x = x * weight
        if use_aux:
            x = x + 1
        return x


    @torch.compile
    def sample(x, temperature=1.0, top_p=1.0):
        if top_p < 1.0:
            x = x * top_p
        return x / temperature


    @torch.compile
    def march(x, near, far, step_size):
        t = near
        while t < far:
            x = x * step_size
            if x.max() > 100:
                break
            t += step_size
        return x


    @torch.compile
    def march_on(x, near, far, step_size):
        t = near
        while t < far:
            x = scale(x, step_size)
            if x.max() > 100:
                break
            t += step_size
        return x


    def main():
        x = torch.ones(4)
        for it in range(4):
            iters = 2 if it < 3 else 3
            weight = 0.25 * min(2.0, 4 / (it + 1))
            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)
        for cfg in SETTINGS:
            sample(x, **cfg)
        for s in (0.5, 0.25):
            march(torch.ones(4), 0.0, 1.0, s)
            march_on(torch.ones(4), 0.0, 1.0, s)
"""


def _check(tmp_path, monkeypatch, text: str) -> dict[int, str]:
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    (tmp_path / "train.py").write_text(textwrap.dedent(text).lstrip("\n"))
    monkeypatch.chdir(tmp_path)
    results = list(Session(resolve(["."])).check(["train.py"]))
    assert not [r.error for r in results if r.error]
    return {d.line: d.message for r in results for d in r.diagnostics if d.code == "DYN206"}


def _named(message: str) -> set[str]:
    """The parameters a DYN206 message names before its colon."""
    head = message.split(" var")[0]
    return set(head.split("`")[1::2])


def test_each_parameter_a_loop_varies_is_named_in_one_finding(tmp_path, monkeypatch):
    found = _check(tmp_path, monkeypatch, PROGRAM)
    # step, sample, march_on, and scale, which march_on (run eagerly) calls as a frame of its own, handing it
    # `step_size` as it is; not march (run eagerly)
    assert set(found) == {6, 11, 20, 38}
    assert _named(found[6]) == {"s"}
    assert _named(found[11]) == {"iters", "weight", "use_aux"}
    assert "passes `2`, `3` in turn" in found[11] and "passes `False`, `True` in turn" in found[11]
    assert "passes `0.5`, `0.3333333333333333`, `0.25` in turn" in found[11]
    assert _named(found[20]) == {"temperature"}  # `top_p` is 0.9 in both settings
    assert _named(found[38]) == {"step_size"}


@pytest.mark.parametrize("old, new", [
    # the call behind a test the replay cannot decide: which iterations reach it is not known
    ("            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)",
     "            if x.sum() > 3:\n                x = step(torch.ones(4), iters, weight, use_aux=it >= 1)"),
    # the loop can end early, before the call
    ("            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)",
     "            if x.sum() > 3:\n                break\n"
     "            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)"),
    # the settings are changed in place before the loop
    ("        for cfg in SETTINGS:", "        SETTINGS.reverse()\n        for cfg in SETTINGS:"),
])
def test_a_loop_that_cannot_be_replayed_reports_nothing(tmp_path, monkeypatch, old, new):
    assert old in PROGRAM
    found = _check(tmp_path, monkeypatch, PROGRAM.replace(old, new))
    named = {name for message in found.values() for name in _named(message)}
    assert not named & ({"iters", "weight", "use_aux"} if "step" in old else {"temperature"})


def test_a_call_behind_a_test_of_the_loop_variable_has_the_values_of_the_iterations_it_selects(tmp_path,
                                                                                            monkeypatch):
    old = "            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)"
    found = _check(tmp_path, monkeypatch, PROGRAM.replace(old, "            if it != 2:\n    " + old))
    assert _named(found[11]) == {"iters", "weight", "use_aux"}
    assert "passes `0.5`, `0.25` in turn" in found[11]  # (it = 0, 1, 3: not `0.3333333333333333`)


def test_an_early_stop_after_the_call_keeps_the_values_of_the_iterations_that_run(tmp_path, monkeypatch):
    old = "            x = step(torch.ones(4), iters, weight, use_aux=it >= 1)"
    found = _check(tmp_path, monkeypatch, PROGRAM.replace(
        old, old + "\n            if x.sum() > 3:\n                break"))
    assert _named(found[11]) == {"iters", "weight", "use_aux"}


def _values(source: str, callee: str, names: list[str]) -> dict[str, list]:
    idx = build_index(cst.parse_module(textwrap.dedent(source)))
    call, caller = idx.call_sites[callee][0]
    return loop_argument_values(call, caller, names)


def test_replayed_values_follow_the_program():
    source = """
        def main(data):
            scenes = [{"near": 2.0, "white": False}, {"near": 0.5, "white": True}]
            total = 0
            outs = []
            for it in range(4):
                scene = scenes[it % 2]
                total += it
                outs.append(f(data, scene["near"], white=scene["white"], seen=total, other=outs))
    """
    values = _values(source, "f", ["x", "near", "white", "seen", "other"])
    assert values["near"] == [2.0, 0.5, 2.0, 0.5]
    assert values["white"] == [False, True, False, True]
    assert values["seen"] == [0, 1, 3, 6]
    # a list the loop grows is not known, and neither is a parameter
    assert values["other"] == [UNKNOWN] * 4 and values["x"] == [UNKNOWN] * 4


def test_a_fresh_list_that_an_annotated_assignment_makes_is_the_replays_own():
    """``history: list = []`` is a list no other name holds, as ``history = []`` is: appending to it changes
    nothing the replay follows, so the loop after it still gives its values."""
    source = """
        def main(x):
            history: list = []
            for n in (1, 2):
                history.append(n)
            for k in (5, 10):
                f(x, k)
    """
    assert _values(source, "f", ["x", "k"])["k"] == [5, 10]


@pytest.mark.parametrize("source", [
    # not in a loop
    "def main(x):\n    f(x, 1)\n",
    # a name rebound in a branch the replay does not follow is unknown, so the loop gives no value
    "def main(x):\n    for i in range(3):\n        k = i\n        if x:\n            k = 0\n        f(x, k)\n",
    # a builtin shadowed by a local
    "def main(x, min):\n    for i in range(3):\n        f(x, min(i, 1))\n",
    # a name an assignment expression rebinds, in a test or in the call itself
    "def main(x):\n    k = 0\n    for i in range(3):\n        if (k := k + 1) > 5:\n            pass\n"
    "        f(x, k)\n",
    "def main(x):\n    k = 0\n    for i in range(3):\n        f(x, (k := k + 2), k)\n",
])
def test_what_the_replay_does_not_know(source):
    values = _values(source, "f", ["x", "k"])
    assert all(v is UNKNOWN for v in values.get("k", []))


@requires_torch
def test_the_program_recompiles_under_dynamo_on_what_is_named(tmp_path, monkeypatch):
    found = _check(tmp_path, monkeypatch, PROGRAM)
    compile_eagerly(monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with dynamo_recompile_log() as messages:
            import train
            train.main()
    finally:
        sys.modules.pop("train", None)
    failures = [f for message in messages for f in re.findall(r"- \d+/\d+: (\S+)", message)]
    guarded = set(failures)
    # `s` is `scale`'s name for the `step_size` that `march_on` hands on
    assert guarded == {"use_aux", "weight", "iters", "temperature", "s"}
    named = {name for message in found.values() for name in _named(message)}
    assert named == guarded | {"step_size"}


LISTS = """\
import torch


def smooth(track_ids, boxes, table):
    out = []
    for i, tid in enumerate(track_ids):
        out.append(0.8 * table[tid] + 0.2 * boxes[i])
    return torch.stack(out)


if __name__ == "__main__":
    step = torch.compile(smooth, backend="eager")
    table = torch.zeros(8, 4)
    for ids in [[1, 2], [1, 2, 3], [1, 3]]:
        step(ids, torch.randn(3, 4), table)
"""


def test_a_loop_variable_handed_to_the_call_is_bound_afresh_at_each_iteration():
    """``for ids in [[1, 2], [1, 2, 3], [1, 3]]: step(ids, ...)``: what the call may do to the list it is given
    changes no later value (the next iteration binds the next list), so the replay gives each list."""
    found = [d for d in check(LISTS) if d.code == "DYN206"]
    assert len(found) == 1 and "`[1, 2]`, `[1, 2, 3]`, `[1, 3]` in turn" in found[0].message, found


@requires_torch
def test_the_lists_recompile_under_dynamo(tmp_path):
    assert len(recompiles_of_script(tmp_path, "lists", LISTS)) == 2


AFTER_ANOTHER_LOOP = """\
import torch


def g(x):
    return x + 1


def clamp2(x, lo, hi):
    return torch.clamp(x, lo, hi) * 2


if __name__ == "__main__":
    xs = [torch.randn(4)]
    for x in xs:
        g(x)
    cf2 = torch.compile(clamp2, backend="eager")
    for lo, hi in ((-0.5, 0.5), (-1.0, 1.0), (-0.25, 0.75)):
        cf2(torch.randn(5), lo, hi)
"""


def test_an_earlier_loop_over_a_list_without_containers_leaves_the_replay():
    """``for x in xs: g(x)`` binds ``x`` to the tensors ``xs`` holds: nothing done through ``x`` changes the
    list, so a later loop that makes compiled calls is still replayed (its bounds vary)."""
    found = [d for d in check(AFTER_ANOTHER_LOOP) if d.code == "DYN206"]
    assert len(found) == 1 and "`lo`, `hi` vary between calls" in found[0].message, found


@requires_torch
def test_the_bounds_recompile_under_dynamo(tmp_path):
    assert recompiles_of_script(tmp_path, "bounds", AFTER_ANOTHER_LOOP)
