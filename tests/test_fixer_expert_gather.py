"""The expert-gather fixer: a loop over experts, each taking the rows routed to it, becomes every row's
experts computed at once from the stacked parameters, with no capture flag.  Checked as text, through
real Dynamo (breaks before, none after, outputs and gradients equal by ``assert_close`` to the
original run eagerly), and by its refusals."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import requires_torch
from helpers import dynamo_break_lines
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

# two ways of writing a mixture of experts, in a library file (no `torch.compile`: the capture
# flag of the full-range-loop fix cannot be set there)
ROWS_FIRST = """\
import torch
from torch import nn
from torch.nn import functional as F


class GatedMLP(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        self.w_in = nn.Linear(dim, inner, bias=False)
        self.w_gate = nn.Linear(dim, inner, bias=False)
        self.w_out = nn.Linear(inner, dim)
        self.act = nn.SiLU()

    def forward(self, h):
        g = self.act(self.w_gate(h))
        return self.w_out(g * self.w_in(h))


class RoutedFFN(nn.Module):
    def __init__(self, dim, inner, n_experts, top_k):
        super().__init__()
        self.n_experts = n_experts
        self.top_k = top_k
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.mlps = nn.ModuleList([GatedMLP(dim, inner) for _ in range(n_experts)])

    def forward(self, hidden):
        probs = F.softmax(self.router(hidden), dim=-1, dtype=torch.float32)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        result = torch.zeros_like(hidden)
        routing = F.one_hot(chosen, num_classes=self.n_experts).permute(2, 0, 1)
        for expert_id in range(self.n_experts):
            token, slot = torch.where(routing[expert_id])
            picked = hidden[token]
            contribution = self.mlps[expert_id](picked) * weights[token, slot].unsqueeze(-1)
            result.index_add_(0, token, contribution.to(hidden.dtype))
        return result


def build():
    return RoutedFFN(6, 10, 4, 2)
"""
SLOTS_FIRST = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseBlock(nn.Module):
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
            idx, rows = torch.where(mask[e].squeeze(0))
            if rows.numel() == 0:
                continue
            y = self.experts[e[0]](x[rows]) * w[rows, idx, None]
            out.index_add_(0, rows, y)
        return out


def build():
    return SparseBlock(6, 5, 2)
"""
# the experts' weights stacked in parameters, the loop's index rebound, the mask made in steps
STACKED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class StackedExperts(nn.Module):
    def __init__(self, dim, inner, count):
        super().__init__()
        self.count = count
        self.up_gate = nn.Parameter(torch.randn(count, 2 * inner, dim) / dim ** 0.5)
        self.down = nn.Parameter(torch.randn(count, dim, inner) / inner ** 0.5)
        self.scorer = nn.Linear(dim, count, bias=False)

    def forward(self, states):
        scores = self.scorer(states).softmax(dim=-1)
        top_w, top_i = scores.topk(2, dim=-1)
        acc = torch.zeros_like(states)
        with torch.no_grad():
            onehot = F.one_hot(top_i, num_classes=self.count)
            onehot = onehot.permute(2, 1, 0)
            used = torch.greater(onehot.sum(dim=(-1, -2)), 0).nonzero()
        for idx in used:
            idx = idx[0]
            pos, tok = torch.where(onehot[idx])
            cur = states[tok]
            g, u = F.linear(cur, self.up_gate[idx]).chunk(2, dim=-1)
            h = F.silu(g) * u
            h = F.linear(h, self.down[idx])
            h = h * top_w[tok, pos, None]
            acc.index_add_(0, tok, h.to(acc.dtype))
        return acc


def build():
    return StackedExperts(6, 8, 4)
"""
STYLES = {"rows-first": ROWS_FIRST, "slots-first": SLOTS_FIRST, "stacked": STACKED}
DRIVER = """

torch.manual_seed(0)
_model = torch.compile(build(), backend="eager")


def main(x):
    return _model(x)
"""
INPUTS = "[(torch.randn(7, 6),), (torch.randn(7, 6),)]"


def fixed(code: str):
    return fix_source(code, "moe.py", Settings(), unsafe=True)


def refusals(code: str) -> list[str]:
    """Why the fixer declines each finding of ``code``."""
    from dynalint.engine.pipeline import analyse
    from dynalint.fixers.expert_gather import ExpertGather
    from dynalint.fixers.support.base import Refused
    from dynalint.fixers.support.context import FixContext

    analysis = analyse(code, "moe.py", Settings(), record_values=True)
    ctx = FixContext(analysis)
    reasons = []
    for finding, _ in analysis.reported:
        try:
            ExpertGather().plan(finding, ctx)
        except Refused as why:
            reasons.append(why.reason)
    return reasons


@pytest.mark.parametrize("style", STYLES)
def test_the_loop_becomes_one_gather_with_no_flag(style):
    result = fixed(STYLES[style])
    assert [f.fixer for f in result.applied] == ["expert-gather"]
    assert "torch.where" not in result.source and "nonzero" not in result.source
    assert "_dynamo.config" not in result.source
    assert ".index_add_(0, tokens[:, 0], (expert_out * " in result.source
    assert "torch.func.vmap(torch.func.vmap(lambda " in result.source
    again = fixed(result.source)
    assert again.source == result.source and not again.applied


def _load(tmp_path, name: str, code: str):
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@requires_torch
@pytest.mark.parametrize("style", STYLES)
def test_dynamo_breaks_before_and_not_after_with_close_outputs_and_gradients(style, tmp_path):
    import torch

    original = _load(tmp_path, f"original_{style.replace('-', '_')}", STYLES[style])
    rewritten = _load(tmp_path, f"fixed_{style.replace('-', '_')}", fixed(STYLES[style]).source)
    breaks = {label: dynamo_break_lines(tmp_path / label, code + DRIVER, INPUTS)
              for label, code in (("original", STYLES[style]), ("fixed", fixed(STYLES[style]).source))}
    assert breaks["original"] and not breaks["fixed"], breaks

    torch.manual_seed(0)
    reference = original.build()
    torch.manual_seed(0)
    model = rewritten.build()
    compiled = torch.compile(model, backend="eager")
    for seed in range(3):
        x = torch.randn(7, 6, generator=torch.Generator().manual_seed(seed))
        x_ref, x_new = x.clone().requires_grad_(), x.clone().requires_grad_()
        reference.zero_grad(set_to_none=True)
        model.zero_grad(set_to_none=True)
        expected = reference(x_ref)
        got = compiled(x_new)
        torch.testing.assert_close(got, expected)
        (expected * torch.arange(6.0)).sum().backward()
        (got * torch.arange(6.0)).sum().backward()
        torch.testing.assert_close(x_new.grad, x_ref.grad)
        for (name, p), q in zip(reference.named_parameters(), model.parameters()):
            # an expert no row selects: None in the loop, zero in the gather (a documented hazard)
            want = p.grad if p.grad is not None else torch.zeros_like(p)
            torch.testing.assert_close(q.grad, want, msg=name)
    torch._dynamo.reset()


def test_refused_when_the_experts_or_the_body_are_not_proven():
    layer_norm = ROWS_FIRST.replace("self.act = nn.SiLU()", "self.act = nn.LayerNorm(inner)")
    assert any("`nn.LayerNorm` is not `nn.Linear`" in r or "LayerNorm" in r for r in refusals(layer_norm))
    growing = SLOTS_FIRST.replace("nn.Linear(hidden, hidden) for _ in range(num_experts)",
                                  "nn.Linear(hidden, hidden, bias=i > 0) for i in range(num_experts)")
    assert any("change from one to the next" in r for r in refusals(growing))
    counting = ROWS_FIRST.replace("            picked = hidden[token]\n",
                                  "            picked = hidden[token]\n            self.calls = token.numel()\n")
    assert any("is not a selection of rows" in r for r in refusals(counting))
    class_last = SLOTS_FIRST.replace(".permute(2, 1, 0)", ".permute(1, 2, 0)")
    assert any("with the expert first" in r for r in refusals(class_last))
    fewer = ROWS_FIRST.replace("for expert_id in range(self.n_experts):", "for expert_id in range(self.top_k):")
    assert any("not every expert index is seen once" in r for r in refusals(fewer))
    other_rows = ROWS_FIRST.replace("result.index_add_(0, token,", "result.index_add_(0, slot,")
    assert any("not at the rows" in r for r in refusals(other_rows))
    mixing = ROWS_FIRST.replace("return self.w_out(g * self.w_in(h))", "return self.w_out(g * self.w_in(h).mean(0))")
    assert any("not a layer, an elementwise function" in r for r in refusals(mixing))
    listed = STACKED.replace("nn.Parameter(torch.randn(count, dim, inner) / inner ** 0.5)",
                             "nn.ParameterList(nn.Parameter(torch.randn(dim, inner)) for _ in range(count))")
    assert any("not the expert's entry of a parameter" in r for r in refusals(listed))
    across_rows = STACKED.replace("h = F.linear(h, self.down[idx])", "h = F.linear(h - h.mean(0), self.down[idx])")
    assert any("each row is not known to be computed on its own" in r for r in refusals(across_rows))
    split_rows = STACKED.replace(".chunk(2, dim=-1)", ".chunk(2, dim=0)")
    assert any("along a dimension other than the last" in r for r in refusals(split_rows))
    aliased = STACKED.replace("acc = torch.zeros_like(states)", "acc = states")
    assert any("is not a tensor made for it" in r for r in refusals(aliased))
    reads_output = STACKED.replace("h = h * top_w[tok, pos, None]", "h = h * top_w[tok, pos, None] + acc[tok]")
    assert any("in the values written" in r for r in refusals(reads_output))
    unread = STACKED.replace("            cur = states[tok]\n",
                             "            cur = states[tok]\n            seen = self.up_gate.add_(0.0)\n")
    assert any("binds to `seen` is never read" in r for r in refusals(unread))
    overwritten = STACKED.replace("h = h * top_w[tok, pos, None]", "h = self.up_gate.add_(0.0)[0, 0] * h\n"
                                  "            h = cur * top_w[tok, pos, None]")
    assert any("binds to `h` is never read" in r for r in refusals(overwritten))
    shared = STACKED.replace("        for idx in used:", "        view = acc\n        for idx in used:").replace(
        "h = h * top_w[tok, pos, None]", "h = h * top_w[tok, pos, None] + view[tok]")
    assert any("`acc` is used between where it is made and the loop" in r for r in refusals(shared))
    cases = (layer_norm, growing, counting, class_last, fewer, other_rows, mixing, listed, across_rows, split_rows,
             aliased, reads_output, unread, overwritten, shared)
    for code in cases:
        assert "expert-gather" not in [f.fixer for f in fixed(code).applied]
