"""DYN206 on constants handed straight to a call Dynamo runs eagerly.

A string or flag the compiled function only passes, as it is, to a call that breaks the graph (``print``)
installs no guard: Dynamo runs the call with the value it was given, and the calls' different values
recompile nothing (measured on torch 2.13).  One it tests, or formats before the call, is guarded.
"""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiled_frames, recompiles_of_run

CODE = """
    import torch


    def announced(x, name):
        print("calling", name)
        return x * 2


    def chosen(x, mode):
        print("mode")
        if mode == "double":
            return x * 2
        return x


    def run():
        a = torch.compile(announced, backend="eager")
        b = torch.compile(chosen, backend="eager")
        x = torch.ones(4)
        for label in ("first", "second"):
            a(x, label)
        for mode in ("double", "same"):
            b(x, mode)
"""


def test_a_constant_only_printed_is_not_reported():
    assert [(d.line, d.message.split("`")[1]) for d in check(CODE) if d.code == "DYN206"] == [(9, "mode")]


@requires_torch
def test_dynamo_recompiles_only_where_the_constant_is_tested():
    messages = recompiles_of_run(CODE, "printed")
    assert {name for name, _ in recompiled_frames(messages)} == {"chosen"}, messages
