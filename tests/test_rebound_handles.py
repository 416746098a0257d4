"""One name rebound to several compiled functions in a row (``opt = torch.compile(f); opt(x, 0.5); ...;
opt = torch.compile(g); opt(x, True)``): each call runs what the binding before it holds, so the arguments of
``f``'s calls say nothing of ``g``'s parameters. DYN206 compares the values each function is really passed,
and a parameter another function's call passes a tensor in that position is not taken for a tensor (no
DYN101 on ``if p > 0.5``). Under real Dynamo only ``scale`` recompiles and nothing breaks (torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, dynamo_break_lines, recompiles_of_script

SCRIPT = """\
import torch


def scale(x, alpha):
    return x * alpha


def pick(x, flag):
    if flag:
        return x + 1
    return x - 1


def with_threshold(x, p):
    if p > 0.5:
        return x * 2
    return x - 1


def with_obj(obj, x):
    return x * obj.scale


class Obj:
    scale = 3.0


def main():
    x = torch.randn(4)
    opt = torch.compile(scale, backend="eager")
    opt(x, 0.5)
    opt(x, 0.25)
    opt = torch.compile(pick, backend="eager")
    opt(x, True)
    opt(x, True)
    opt = torch.compile(with_threshold, backend="eager")
    opt(x, 0.6)
    opt = torch.compile(with_obj, backend="eager")
    opt(Obj(), x)


if __name__ == "__main__":
    main()
"""


def test_each_call_is_a_call_of_the_binding_before_it() -> None:
    found = [(d.line, d.code) for d in check(SCRIPT) if d.code in ("DYN101", "DYN206")]
    assert found == [(4, "DYN206")], found


@requires_torch
def test_dynamo_recompiles_scale_only_and_breaks_nowhere(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "rebound", SCRIPT)
    assert len(messages) == 1 and "Recompiling function scale" in messages[0], messages
    assert dynamo_break_lines(tmp_path, SCRIPT, "[()]") == set()


def _reach(code: str) -> list[list[str]] | None:
    import textwrap

    import libcst as cst

    from dynalint.analysis.syntax import binding_reach

    module = cst.parse_module(textwrap.dedent(code))
    reach = binding_reach(module, "opt")
    return None if reach is None else [[module.code_for_node(c) for c in calls] for calls in reach.values()]


def test_a_binding_in_a_loop_reaches_the_calls_after_it_until_the_next() -> None:
    assert _reach("""
        for fn in fns:
            opt = torch.compile(fn)
            opt(x)
        opt = torch.compile(g)
        opt(y)
    """) == [["opt(x)"], ["opt(y)"]]


def test_which_binding_a_call_sees_is_not_known() -> None:
    called_before_rebinding = """
        opt = torch.compile(f)
        for _ in range(3):
            opt(x)
            opt = torch.compile(g)
    """
    conditional = """
        opt = torch.compile(f)
        if flag:
            opt = torch.compile(g)
        opt(x)
    """
    assert _reach(called_before_rebinding) is None and _reach(conditional) is None
