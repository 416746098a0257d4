"""``capture_dynamic_output_shape_ops`` does not remove a data-dependent size's break when the code then
reads the size in Python (a loop over the result, ``range(len(r))``, a branch on its length,
``.tolist()``): the break moves there.  ``check`` claims the flag as a remedy only where it removes the
break, and with the flag on reports the break where Dynamo then ends the graph."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.rules.base import Example

from helpers import check, run_example_under_dynamo

FLAG = "capture_dynamic_output_shape_ops"

OPS = {
    "nonzero": "(x > 0).nonzero()",
    "where": "torch.where(x > 0)[0]",
    "unique": "x.round().unique()",
    "mask": "x[x > 0]",
}

#: uses that read the result's length in Python: Dynamo breaks on line 7 with the flag on
COUNTED = {
    "iterate": "for e in hit:\n        acc = acc + e.sum()",
    "enumerate": "for i, e in enumerate(hit):\n        acc = acc + e.sum() * i",
    "zip": "for e, g in zip(hit, hit):\n        acc = acc + e.sum() + g.sum()",
    "range-len": "for i in range(len(hit)):\n        acc = acc + hit[i].sum()",
    "range-shape": "for i in range(hit.shape[0]):\n        acc = acc + hit[i].sum()",
    "range-size": "for i in range(hit.size(0)):\n        acc = acc + hit[i].sum()",
    "branch": "if len(hit) > 0:\n        acc = acc + 1",
}

#: uses the flag keeps in the graph
IN_GRAPH = {
    "reduce": "acc = acc + hit.sum()",
    "len-as-number": "acc = acc + len(hit)",
    "size-as-number": "acc = acc * hit.size(0)",
}


def source(op: str, use: str, module_flag: bool = False) -> str:
    """The op on line 5, the use on line 7 (line 9 with the module-level flag: two lines above)."""
    flag = f"torch._dynamo.config.{FLAG} = True\n\n" if module_flag else ""
    return (f"import torch\n\n{flag}@torch.compile\ndef f(x):\n    hit = {OPS[op]}\n    acc = x.sum()\n"
            f"    {use}\n    return acc\n")


def breaks(code: str, **settings: bool) -> list[tuple[int, str | None]]:
    return [(d.line, d.remedy) for d in check(code, **settings) if d.kind == "graph-break"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("use", COUNTED)
def test_a_size_read_in_python_names_no_flag(op, use):
    assert breaks(source(op, COUNTED[use])) == [(5, None)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("use", IN_GRAPH)
def test_a_size_kept_in_the_graph_names_the_flag(op, use):
    assert breaks(source(op, IN_GRAPH[use])) == [(5, FLAG)]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("use", COUNTED)
def test_with_the_flag_on_the_break_is_where_python_reads_the_size(op, use):
    assert breaks(source(op, COUNTED[use]), **{FLAG: True}) == [(7, None)]
    assert breaks(source(op, COUNTED[use], module_flag=True)) == [(9, None)]


@pytest.mark.parametrize("use", IN_GRAPH)
def test_with_the_flag_on_a_size_kept_in_the_graph_is_not_reported(use):
    assert breaks(source("nonzero", IN_GRAPH[use]), **{FLAG: True}) == []
    assert breaks(source("nonzero", IN_GRAPH[use], module_flag=True)) == []


def test_the_fixers_patch_counts_as_the_flag():
    code = ("import torch\n\ndef f(x):\n    hit = (x > 0).nonzero()\n    acc = x.sum()\n    for e in hit:\n"
            "        acc = acc + e.sum()\n    return acc\n\n"
            f"f = torch._dynamo.config.patch({FLAG}=True)(torch.compile(f))\n")
    assert breaks(code) == [(6, None)]


def test_tolist_of_the_result_names_no_flag():
    """With the flag, ``hit.tolist()`` raises ``GuardOnDataDependentSymNode`` in Dynamo (torch 2.13)."""
    code = source("nonzero", "for e in hit.tolist():\n        acc = acc + e[0]")
    assert (5, None) in breaks(code) and (5, FLAG) not in breaks(code)
    assert {line for line, _ in breaks(code, **{FLAG: True})} == {7}


def test_a_comprehension_over_the_result_names_no_flag():
    """Dynamo breaks at the comprehension with the flag on; the analysis has no event there to report it
    on, and stays silent rather than guess."""
    code = source("nonzero", "acc = acc + torch.stack([e.sum() for e in hit]).sum()")
    assert breaks(code) == [(5, None)]


def test_a_name_bound_again_is_not_followed():
    """``hit`` may be another value at the loop: the flag-on break is not claimed there, and the op's
    remedy stays as the analysis knew it."""
    code = source("nonzero", "hit = hit.flip(0)\n    for e in hit:\n        acc = acc + e.sum()")
    assert breaks(code, **{FLAG: True}) == []
    assert breaks(code) == [(5, FLAG)]


COMPACTED = ("import torch\n\n@torch.compile\ndef f(x):\n    seq = torch.unique_consecutive(x.long())\n"
             "    seq = seq[seq != 0]\n    return [v * 2 for v in seq.tolist()]\n")


def test_a_result_compacted_again_is_followed_from_its_last_op():
    """``seq = op(seq)`` twice: the second op's size is the one ``.tolist()`` reads; the first's stays in
    the graph with the flag (the mask reads it as a tensor)."""
    code = COMPACTED
    assert [(line, remedy) for line, remedy in breaks(code) if line < 7] == [(5, FLAG), (6, None)]
    assert breaks(code, **{FLAG: True}) == [(7, None)]


BREAK_BETWEEN = "print(acc)\n    for e in hit:\n        acc = acc + e.sum()"


def test_a_break_between_leaves_the_loop_to_a_resumed_frame():
    """After the ``print``'s break the result enters the resumed frame with a known length: the flag
    removes the op's break and the loop does not break."""
    assert breaks(source("nonzero", BREAK_BETWEEN)) == [(5, FLAG), (7, None)]
    assert breaks(source("nonzero", BREAK_BETWEEN), **{FLAG: True}) == [(7, None)]


def test_a_use_in_a_nested_function_is_not_followed():
    code = source("nonzero", "g = lambda: [e for e in hit]")
    assert breaks(code, **{FLAG: True}) == []


def example(op: str, use: str, flag: bool) -> Example:
    return Example(source(op, use), inputs="[(torch.tensor([1.0, -2.0, 3.0, 0.5, -1.0]),)]",
                   settings={FLAG: True} if flag else {})


@requires_torch
@pytest.mark.parametrize("flag", [False, True], ids=["default", "flag"])
@pytest.mark.parametrize("use", [*COUNTED, *IN_GRAPH])
@pytest.mark.parametrize("op", ["nonzero", "mask"])
def test_the_break_lines_are_dynamos(op, use, flag, tmp_path):
    ex = example(op, {**COUNTED, **IN_GRAPH}[use], flag)
    predicted = {line for line, _ in breaks(ex.source, **ex.settings)}
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == predicted


@requires_torch
@pytest.mark.parametrize("flag", [False, True], ids=["default", "flag"])
def test_the_break_lines_with_a_break_between_are_dynamos(flag, tmp_path):
    ex = example("nonzero", BREAK_BETWEEN, flag)
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {line for line, _ in breaks(ex.source, **ex.settings)}


@requires_torch
def test_dynamo_raises_at_tolist_with_the_flag(tmp_path):
    ex = example("nonzero", "for e in hit.tolist():\n        acc = acc + e[0]", True)
    obs, _ = run_example_under_dynamo(ex, tmp_path)
    assert any("GuardOnDataDependentSymNode" in e for e in obs.errors), obs.errors


@requires_torch
def test_the_break_lines_of_a_result_compacted_again_are_dynamos(tmp_path):
    ex = Example(COMPACTED, inputs="[(torch.tensor([1.0, 1.0, 0.0, 2.0, 2.0, 0.0, 3.0]),)]")
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {line for line, _ in breaks(ex.source)}
    on = Example(COMPACTED, inputs=ex.inputs, settings={FLAG: True})
    obs, _ = run_example_under_dynamo(on, tmp_path / "flag")
    assert any("GuardOnDataDependentSymNode" in e for e in obs.errors), obs.errors
    assert {line for line, _ in breaks(on.source, **on.settings)} == {7}


SCALAR = "capture_scalar_outputs"
BRANCHED = """\
import torch

@torch.compile
def f(x):
    n = x.sum().item()
    if n > 0:
        return x * 2
    return x
"""
BRANCHED_AFTER_A_BREAK = BRANCHED.replace("    if n > 0:", "    print(n)\n    if n > 0:")


def test_a_number_a_branch_of_the_same_graph_tests_names_no_flag():
    assert breaks(BRANCHED) == [(5, None)]
    assert breaks(BRANCHED, **{SCALAR: True}) == [(6, None)]


def test_a_number_tested_after_a_break_names_the_flag():
    """After the ``print``'s break the number enters the resumed frame as a Python value."""
    assert breaks(BRANCHED_AFTER_A_BREAK) == [(5, SCALAR), (6, None)]


@requires_torch
@pytest.mark.parametrize("code", [BRANCHED, BRANCHED_AFTER_A_BREAK], ids=["branch", "break-between"])
@pytest.mark.parametrize("flag", [False, True], ids=["default", "flag"])
def test_the_break_lines_of_a_number_branched_on_are_dynamos(code, flag, tmp_path):
    ex = Example(code, inputs="[(torch.tensor([1.0, -2.0, 3.0]),)]", settings={SCALAR: True} if flag else {})
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {line for line, _ in breaks(ex.source, **ex.settings)}


#: the op written in the use itself: Dynamo breaks on line 6 with the flag on, as for a named result
INLINE = {
    "iterate": "for e in (x > 0).nonzero():\n        acc = acc + e.sum()",
    "view": "for e in (x > 0).nonzero().flatten():\n        acc = acc + e",
    "enumerate": "for i, e in enumerate(torch.nonzero(x > 0)[:, 0]):\n        acc = acc + e * i",
    "range-len": "for i in range(len(x[x > 0])):\n        acc = acc + i",
    "branch": "if len((x > 0).nonzero()) > 0:\n        acc = acc + 1",
}
INLINE_TOLIST = {
    "loop": "for e in (x > 0).nonzero().flatten().tolist():\n        acc = acc + e",
    "assigned": "hit = (x > 0).nonzero().flatten().tolist()\n    acc = acc + len(hit)",
}
BOTH = {FLAG: True, SCALAR: True}


def inline(use: str) -> str:
    """The op and its use on line 6."""
    return f"import torch\n\n@torch.compile\ndef f(x):\n    acc = x.sum()\n    {use}\n    return acc\n"


@pytest.mark.parametrize("use", [*INLINE, *INLINE_TOLIST])
def test_an_op_read_in_its_own_statement_names_no_flag(use):
    code = inline({**INLINE, **INLINE_TOLIST}[use])
    assert breaks(code) == [(6, None)]
    assert breaks(code, **{FLAG: True}) == breaks(code, **BOTH) == [(6, None)]


@requires_torch
@pytest.mark.parametrize("flags", [{}, BOTH], ids=["default", "flags"])
@pytest.mark.parametrize("use", INLINE)
def test_the_break_lines_of_an_op_read_in_its_own_statement_are_dynamos(use, flags, tmp_path):
    ex = Example(inline(INLINE[use]), inputs="[(torch.tensor([1.0, -2.0, 3.0, 0.5, -1.0]),)]", settings=flags)
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {line for line, _ in breaks(ex.source, **ex.settings)} == {6}


@requires_torch
@pytest.mark.parametrize("use", INLINE_TOLIST)
def test_dynamo_raises_at_tolist_of_an_op_in_its_own_statement(use, tmp_path):
    ex = Example(inline(INLINE_TOLIST[use]), inputs="[(torch.tensor([1.0, -2.0, 3.0]),)]", settings=BOTH)
    obs, _ = run_example_under_dynamo(ex, tmp_path)
    assert any("GuardOnDataDependentSymNode" in e for e in obs.errors), obs.errors


ROUTER = """\
import torch

class Router(torch.nn.Module):
    def forward(self, m):
        out = m.new_zeros(())
        for e in (m.sum(1) > 0).nonzero():  # break
            out = out + e.sum()
        return out
"""


@requires_torch
def test_a_loop_over_a_routing_mask_in_the_header_breaks_with_both_flags(tmp_path):
    ex = Example(ROUTER, target="Router", inputs="[(torch.tensor([[1.0, 0.0], [0.0, 0.0], [2.0, 1.0]]),)]",
                 settings=BOTH)
    obs, module = run_example_under_dynamo(ex, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {line for line, _ in breaks(ROUTER, **BOTH)} == {6}


@pytest.mark.parametrize("use", INLINE_TOLIST)
def test_the_capture_flags_fix_leaves_tolist_of_an_op_in_its_own_statement(use):
    """The flag would make that ``.tolist()`` raise (above): the fix does not turn it on."""
    from dynalint.config.settings import Settings
    from dynalint.engine.fixing import fix_source

    code = inline(INLINE_TOLIST[use])
    result = fix_source(code, "train.py", Settings(), unsafe=True)
    assert result.source == code and not any(a.fixer == "capture-flags" for a in result.applied)


#: a number from tensor data used where Python needs its value (line 7): with ``capture_scalar_outputs``
#: Dynamo fails to compile there (the error named) or breaks the graph there (None) instead of at line 6
CONSTANT_USES = {
    "list-index": ("n = int(o[0])", "return x + WEIGHTS[n]", "GuardOnDataDependentSymNode"),
    "tuple-index": ("n = o[0].item()", "return STEPS[n](x)", "GuardOnDataDependentSymNode"),
    "index-of-arithmetic": ("n = o[0].item()", "return x + WEIGHTS[n - 1]", "GuardOnDataDependentSymNode"),
    "local-list": ("n = o[0].item()", "return x + [x, x * 2, x * 3][n]", "GuardOnDataDependentSymNode"),
    "tolist-elements": ("for n in o.tolist():", "    x = x + WEIGHTS[n]\n    return x",
                        "GuardOnDataDependentSymNode"),
    "seed": ("n = o[0].item()", "return x + random.Random(n).random()", "AsPythonConstantNotImplementedError"),
    "dict-key": ("n = o[0].item()", "return x + {0: 1.0, 1: 2.0, 2: 3.0}[n]", None),
    "slice-bound": ("n = o[0].item()", "return x + sum(WEIGHTS[:n])", None),
    "range": ("n = o[0].item()", "for _ in range(n):\n        x = x + 1\n    return x", None),
}
#: uses the flag keeps in the graph: it removes the break
CONSTANT_FREE_USES = {
    "arithmetic": ("n = o[0].item()", "return x + n * 2"),
    "math": ("n = o[0].item()", "return x + math.sqrt(n)"),
    "tensor-index": ("n = o[0].item()", "return x[n]"),
}


def numbered(made: str, use: str) -> str:
    """The extraction on line 7, the use on line 8."""
    return ("import math\nimport random\nimport torch\nWEIGHTS, STEPS = [1.0, 2.0, 3.0], (abs, abs, abs)\n"
            f"@torch.compile\ndef f(x, o):\n    {made}\n    {use}\n")


CONSTANT_INPUTS = "[(torch.ones(3), torch.tensor([1, 0, 2]))]"


@pytest.mark.parametrize("use", CONSTANT_USES)
def test_a_number_python_needs_as_a_value_names_no_flag(use):
    made, used, _ = CONSTANT_USES[use]
    assert breaks(numbered(made, used)) == [(7, None)]


@pytest.mark.parametrize("use", CONSTANT_FREE_USES)
def test_a_number_the_graph_keeps_names_the_flag(use):
    assert breaks(numbered(*CONSTANT_FREE_USES[use])) == [(7, SCALAR)]


def test_a_number_used_as_a_value_after_a_break_names_the_flag():
    """After the ``print``'s break the number enters the resumed frame as a Python value."""
    code = numbered("n = int(o[0])", "print(n)\n    return x + WEIGHTS[n]")
    assert breaks(code) == [(7, SCALAR), (8, None)]


#: a break between the number and its use that runs only on some paths (not on Dynamo's: ``x`` is 1-d)
BREAK_ON_SOME_PATHS = ("n = int(o[0])", "if x.dim() > 5:\n        print(n)\n    return x + WEIGHTS[n]")


def test_a_break_on_some_paths_between_does_not_name_the_flag():
    """The flag's claim must hold on every path: where the ``print`` does not run, Dynamo raises at the use."""
    assert (7, None) in breaks(numbered(*BREAK_ON_SOME_PATHS))
    assert (7, SCALAR) not in breaks(numbered(*BREAK_ON_SOME_PATHS))


@requires_torch
def test_dynamo_raises_past_a_break_on_some_paths_with_the_flag(tmp_path):
    code = numbered(*BREAK_ON_SOME_PATHS)
    obs, _ = run_example_under_dynamo(Example(code, inputs=CONSTANT_INPUTS, settings={SCALAR: True}), tmp_path)
    assert any("GuardOnDataDependentSymNode" in e for e in obs.errors), obs.errors


@requires_torch
@pytest.mark.parametrize("use", CONSTANT_USES)
def test_dynamo_breaks_at_the_use_or_raises_with_the_flag(use, tmp_path):
    made, used, error = CONSTANT_USES[use]
    code = numbered(made, used)
    obs, module = run_example_under_dynamo(Example(code, inputs=CONSTANT_INPUTS), tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == {7}
    obs, module = run_example_under_dynamo(Example(code, inputs=CONSTANT_INPUTS, settings={SCALAR: True}),
                                           tmp_path / "flag")
    if error is None:
        assert not obs.errors, obs.errors
        assert obs.break_lines(module.__file__) == {8}
    else:
        assert any(error in e for e in obs.errors), obs.errors


@requires_torch
@pytest.mark.parametrize("use", CONSTANT_FREE_USES)
def test_dynamo_keeps_the_number_in_the_graph_with_the_flag(use, tmp_path):
    code = numbered(*CONSTANT_FREE_USES[use])
    obs, module = run_example_under_dynamo(Example(code, inputs=CONSTANT_INPUTS, settings={SCALAR: True}), tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == set()
