"""The full-range-loop fixer: a loop over the indices a mask selects becomes a loop over the whole
range, together with the capture flag that keeps each selection in the graph, or nothing changes.
Checked as text, through real Dynamo (no break left, bitwise-equal outputs, an index with no rows
included), and by its refusals."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

MOE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, hidden, num_experts, k):
        super().__init__()
        self.num_experts = num_experts
        self.k = k
        self.experts = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_experts))
        self.gate = nn.Linear(hidden, num_experts)

    def forward(self, x):
        w, top = self.gate(x).softmax(-1).topk(self.k, -1)
        out = torch.zeros_like(x)
        mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            idx, rows = torch.where(mask[e].squeeze(0))  # the tokens routed to expert e
            y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
            out.index_add_(0, rows, y)
        return out


torch.manual_seed(0)
model = torch.compile(MoE(8, 6, 2), backend="eager")
"""
LOOP = """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            idx, rows = torch.where(mask[e].squeeze(0))  # the tokens routed to expert e
            y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
"""
FULL = """\
        for e in range(self.num_experts):
            idx, rows = torch.where(mask[e])  # the tokens routed to expert e
            y = self.experts[e](x[rows]) * w[rows, idx, None]
"""
COMPILED = 'model = torch.compile(MoE(8, 6, 2), backend="eager")'
PATCHED = ('model = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)'
           '(torch.compile(MoE(8, 6, 2), backend="eager"))')
FIXED = MOE.replace(LOOP, FULL).replace(COMPILED, PATCHED)


def fixed(code: str):
    return fix_source(textwrap.dedent(code), "moe.py", Settings(), unsafe=True)


def refusals(code: str) -> list[str]:
    """Why the fixer declines each finding of ``code`` (asked directly: once the capture-flags fix has
    patched the compile call, ``check`` no longer reports the loop)."""
    from dynalint.engine.pipeline import analyse
    from dynalint.fixers.full_range_loop import FullRangeLoop
    from dynalint.fixers.support.base import Refused
    from dynalint.fixers.support.context import FixContext

    analysis = analyse(code, "moe.py", Settings(), record_values=True)
    ctx = FixContext(analysis)
    reasons = []
    for finding, _ in analysis.reported:
        try:
            FullRangeLoop().plan(finding, ctx)
        except Refused as why:
            reasons.append(why.reason)
    return reasons


def test_the_loop_and_its_flag_are_one_fix():
    result = fixed(MOE)
    assert result.source == FIXED
    assert [(f.fixer, f.safety) for f in result.applied] == [("full-range-loop", "unsafe")]
    assert "range(self.num_experts)" in result.applied[0].description
    again = fixed(result.source)
    assert again.source == result.source and not again.applied


def test_indices_as_python_numbers_a_converted_index_and_an_empty_skip():
    code = MOE.replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero().squeeze(-1).tolist()
        for e in hit:
            idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""")
    assert fixed(code).source == MOE.replace(LOOP, """\
        for e in range(self.num_experts):
            idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""").replace(COMPILED, PATCHED)
    code = MOE.replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero(as_tuple=False)
        for hit_e in hit:
            e = int(hit_e.item())
            idx, rows = torch.where(mask[e].squeeze(0))
            if rows.numel() == 0:
                continue
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""")
    assert fixed(code).source == MOE.replace(LOOP, """\
        for hit_e in range(self.num_experts):
            e = hit_e
            idx, rows = torch.where(mask[e].squeeze(0))
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""").replace(COMPILED, PATCHED)


def test_a_rebound_index_under_no_grad_and_a_branch_on_the_configuration():
    code = MOE.replace(LOOP, """\
        with torch.no_grad():
            hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
            scale = 2.0
        for e in hit:
            e = e[0]
            with torch.no_grad():
                idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
            if self.k > 1:
                y *= scale
""")
    assert fixed(code).source == MOE.replace(LOOP, """\
        with torch.no_grad():
            scale = 2.0
        for e in range(self.num_experts):
            with torch.no_grad():
                idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
            if self.k > 1:
                y *= scale
""").replace(COMPILED, PATCHED)


def _refused(code: str, reason: str) -> None:
    result = fixed(code)
    assert "for e in range(" not in result.source, result.source
    assert not any(f.fixer == "full-range-loop" for f in result.applied)
    assert any(reason in r for r in refusals(code)), refusals(code)


def test_refuses_an_effect_for_every_index():
    counted = MOE.replace("            out.index_add_(0, rows, y)\n",
                          "            out.index_add_(0, rows, y)\n            self.calls += 1\n")
    _refused(counted, "`self.calls += 1` updates a value that may be shared")
    shifted = MOE.replace("            out.index_add_(0, rows, y)\n",
                          "            out.index_add_(0, rows, y)\n            out = out + 1\n")
    _refused(shifted, "`out` is bound in the loop and used outside it")
    logged = MOE.replace("            out.index_add_(0, rows, y)\n",
                         "            out.index_add_(0, rows, y)\n            print(rows.shape)\n")
    _refused(logged, "`print(rows.shape)` acts for every index of the range")
    tensor_use = MOE.replace("idx, rows = torch.where(mask[e].squeeze(0))", "idx, rows = torch.where(mask[e][0])")
    _refused(tensor_use, "the loop variable is used as a tensor in `mask[e]`")


def test_the_range_stops_at_what_every_iteration_indexes():
    """Every index the original reaches ``self.experts[i]`` with is below its length (or the original
    fails), so the range is capped there; a sequence computed before the loop is capped by its ``len``."""
    one_more_class = MOE.replace("num_classes=self.num_experts)", "num_classes=self.num_experts + 1)")
    assert "for e in range(self.num_experts):\n" in fixed(one_more_class).source  # min(n + 1, n)
    skipped_class = one_more_class.replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            e = e[0]
            if e == self.num_experts:
                continue
            idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""")
    assert fixed(skipped_class).source == MOE.replace(LOOP, """\
        for e in range(self.num_experts):
            if e == self.num_experts:
                continue
            idx, rows = torch.where(mask[e])
            y = self.experts[e](x[rows]) * w[rows, idx, None]
""").replace(COMPILED, PATCHED).replace("num_classes=self.num_experts)", "num_classes=self.num_experts + 1)")
    passed_in = MOE.replace("self.experts[e[0]](x[rows])", "self.experts[e[0]](x[rows]) + bias[e[0]]") \
        .replace("def forward(self, x):", "def forward(self, x, bias):")
    assert "for e in range(min(self.num_experts, len(bias))):\n" in fixed(passed_in).source


def test_refuses_an_index_used_beyond_the_mask_in_a_branch():
    code = MOE.replace("num_classes=self.num_experts)", "num_classes=self.num_experts + 1)").replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            idx, rows = torch.where(mask[e].squeeze(0))  # the tokens routed to expert e
            y = x[rows] * w[rows, idx, None]
            if self.k > 1:
                y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
""")
    _refused(code, "the body uses the loop's index in `self.experts[e[0]]`, which is not shown to have an entry "
                   "for every index of `range(self.num_experts + 1)`")


def test_an_index_kept_under_a_bound_the_branch_tests():
    code = MOE.replace("num_classes=self.num_experts)", "num_classes=self.num_experts + 1)").replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            idx, rows = torch.where(mask[e].squeeze(0))  # the tokens routed to expert e
            if e[0] >= self.num_experts:
                y = x[rows] * w[rows, idx, None]
            else:
                y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
""")
    result = fixed(code)
    assert [f.fixer for f in result.applied] == ["full-range-loop"]
    assert "for e in range(self.num_experts + 1):" in result.source
    assert "            if e >= self.num_experts:\n" in result.source


def test_refuses_a_range_not_known_while_tracing():
    data_classes = MOE.replace("num_classes=self.num_experts", "num_classes=int(top.max()) + 1")
    _refused(data_classes, "its number of classes is not known while tracing")
    unknown_rank = MOE.replace("F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)",
                               "self.route(top)")
    _refused(unknown_rank, "the number of dimensions of `mask` is not known")


def test_applied_with_the_flag_or_not_at_all():
    library = MOE.replace(COMPILED, "model = MoE(8, 6, 2)")
    result = fixed(library)  # the expert-gather fix, which needs no flag, may apply there instead
    assert "full-range-loop" not in [f.fixer for f in result.applied] and "_dynamo.config" not in result.source
    assert any("this file calls no `torch.compile`" in r for r in refusals(library))
    trained = MOE + "model.train()\n"
    _refused(trained, "wrapped by `torch._dynamo.config.patch` it would be a plain function")


def _assert_one_graph_and_bitwise(tmp_path, before_code: str, after_code: str, inputs: str, **example) -> None:
    """Under real Dynamo ``model`` breaks before the rewrite and not after, and the outputs of the
    original (eager), of both compiled runs and of the rewrite run eagerly are bitwise equal."""
    import torch

    from dynalint.rules.base import Example
    from helpers import eager_outputs, run_example_under_dynamo

    runs = {}
    for tag, code in (("before", before_code), ("after", after_code)):
        ex = Example(code, inputs=inputs, target="model", **example)
        obs, _ = run_example_under_dynamo(ex, tmp_path / tag)
        assert not obs.errors, obs.errors
        runs[tag] = (obs, eager_outputs(ex, tmp_path / f"eager_{tag}"))
    (before, before_eager), (after, after_eager) = runs["before"], runs["after"]
    assert len(before.breaks) > 0 and len(after.breaks) == 0, (before.breaks, after.breaks)
    for outputs in (before.outputs, after.outputs, after_eager):
        assert all(torch.equal(a, b) for a, b in zip(before_eager, outputs))


@requires_torch
def test_the_rewrite_compiles_to_one_graph_with_the_same_outputs(tmp_path):
    # six experts, two per token, four tokens: at least two experts get no token
    _assert_one_graph_and_bitwise(tmp_path, MOE, fixed(MOE).source, "[(torch.randn(4, 8),), (torch.randn(4, 8),)]",
                                  compile_target=False)


def test_refuses_to_drop_a_line_with_a_comment():
    code = MOE.replace(LOOP, """\
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        for e in hit:
            idx, rows = torch.where(mask[e].squeeze(0))
            if rows.numel() == 0:  # nothing routed here
                continue
            y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
""")
    _refused(code, "`if rows.numel() == 0:  # nothing routed here`, which the loop over the range no longer needs, "
                   "carries a comment")


LIBRARY = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class StackedExperts(nn.Module):
    \"\"\"Experts with stacked weights, compiled by the code that uses them.\"\"\"

    def __init__(self, dim, count):
        super().__init__()
        self.count = count
        self.weight = nn.Parameter(torch.randn(count, dim, dim) / dim ** 0.5)

    def forward(self, x, top, w):
        out = torch.zeros_like(x)
        routed = F.one_hot(top, num_classes=self.count).permute(2, 1, 0)
        experts = (routed.sum(dim=(1, 2)) > 0).nonzero()
        for e in experts:
            slot, rows = torch.where(routed[e[0]])
            # each routed row through its expert, weighted
            h = F.silu(F.linear(x[rows], self.weight[e[0]]))
            out.index_add_(0, rows, h * w[rows, slot, None])
        return out


torch.manual_seed(0)
model = StackedExperts(8, 6)
"""
LIBRARY_LOOP = """\
        experts = (routed.sum(dim=(1, 2)) > 0).nonzero()
        for e in experts:
            slot, rows = torch.where(routed[e[0]])
            # each routed row through its expert, weighted
            h = F.silu(F.linear(x[rows], self.weight[e[0]]))
"""
LIBRARY_FULL = """\
        for e in range(min(self.count, len(self.weight))):
            slot, rows = torch.where(routed[e])
            # each routed row through its expert, weighted
            h = F.silu(F.linear(x[rows], self.weight[e]))
"""
BOTH_FLAGS = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}


def test_flags_the_configuration_declares_stand_for_the_patch():
    """In a file that compiles nothing the flags come from the code that compiles it: declared in the
    configuration, they are the precondition, and nothing is patched."""
    declared = fix_source(LIBRARY, "experts.py", Settings(**BOTH_FLAGS), unsafe=True)
    assert declared.source == LIBRARY.replace(LIBRARY_LOOP, LIBRARY_FULL)
    assert [f.fixer for f in declared.applied] == ["full-range-loop"]
    assert "as the configuration declares" in declared.applied[0].description
    again = fix_source(declared.source, "experts.py", Settings(**BOTH_FLAGS), unsafe=True)
    assert again.source == declared.source and not again.applied
    assert any("`capture-dynamic-output-shape-ops = true` declared in the configuration" in r
               for r in refusals(LIBRARY))
    compiled = fix_source(MOE, "moe.py", Settings(**BOTH_FLAGS), unsafe=True)
    assert compiled.source == MOE.replace(LOOP, FULL)  # the compile call keeps its configuration


@requires_torch
def test_with_the_declared_flags_the_library_loop_compiles_to_one_graph(tmp_path):
    # experts 2, 4 and 5 get no row
    inputs = "[(torch.randn(4, 8), torch.tensor([[0, 1], [1, 3], [3, 0], [1, 0]]), torch.rand(4, 2))] * 2"
    after = fix_source(LIBRARY, "experts.py", Settings(**BOTH_FLAGS), unsafe=True).source
    _assert_one_graph_and_bitwise(tmp_path, LIBRARY, after, inputs, settings=BOTH_FLAGS)


def test_the_blank_lines_above_a_removed_selection_stay_above_the_loop():
    spaced = MOE.replace(LOOP, "\n" + LOOP)
    result = fixed(spaced)
    assert result.source == FIXED.replace(FULL, "\n" + FULL)
    assert fixed(result.source).source == result.source
