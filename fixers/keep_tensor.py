"""``.item()`` / ``float(t)`` / ``int(t)`` whose value only feeds tensor arithmetic -> keep the 0-d tensor.

Before::

    scale = x.abs().max().item()
    return x / scale

After::

    scale = x.abs().max().detach()
    return x / scale

The value stays in the graph instead of crossing into Python (no break, and
no recompile for each new value).  ``.detach()`` keeps gradients from flowing
through it, as with the Python number.  Python math on the value is carried
over to torch: ``math.sqrt/exp/log...`` become ``torch.sqrt/exp/log...`` and
``max(v, c)``/``min(v, c)`` become ``torch.clamp``.  Applied only when every use
of the value ends in arithmetic or a comparison with a tensor, or in the
comparison an ``assert`` tests (which stays in the graph on torch 2.13); a value
that is returned, stored, tested by ``if``, or used as a size or loop count is
left alone.

Unsafe: assumes floating-point tensors on both sides, so that type promotion
gives the same dtype as with a Python scalar (an integer tensor divided by the
kept 0-d float tensor can promote differently) and that the value and the other
operands live on the same device.
"""
from __future__ import annotations

import libcst as cst

from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.codegen import paren, torch_name
from dynalint.fixers.tensor_flow import Builder, NotTensorFlow, check_flows_into_tensors, code_of, compose_rewrites


@register
class KeepTensor(Fixer):
    name = "keep-tensor"
    codes = ("DYN102",)
    safety = "unsafe"
    summary = "Drop `.item()`/`float()`/`int()` when the value only feeds tensor arithmetic; map `math.*` to `torch.*`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def normalize(x):
                    scale = x.abs().max().item()
                    return x / scale
            """,
            after="""
                import torch

                @torch.compile
                def normalize(x):
                    scale = x.abs().max().detach()
                    return x / scale
            """,
        ),
        FixExample(
            before="""
                import math
                import torch

                @torch.compile
                def attention(q, k):
                    var = q.var().item()
                    scale = 1.0 / math.sqrt(max(var, 1e-6) * q.shape[-1])
                    return (q @ k.transpose(-1, -2) * scale).softmax(-1)
            """,
            after="""
                import math
                import torch

                @torch.compile
                def attention(q, k):
                    var = q.var().detach()
                    scale = 1.0 / torch.sqrt(torch.clamp(var, min=1e-6) * q.shape[-1])
                    return (q @ k.transpose(-1, -2) * scale).softmax(-1)
            """,
            inputs="[(torch.randn(2, 3, 4), torch.randn(2, 3, 4)), (torch.randn(2, 3, 4), torch.randn(2, 3, 4))]",
        ),
        FixExample(
            before="""
                import math
                import torch

                @torch.compile
                def bonus(logits):
                    p = logits.softmax(-1)
                    ent = -(p * p.clamp(min=1e-9).log()).sum(-1).mean()
                    return logits * math.exp(-ent.item())
            """,
            after="""
                import math
                import torch

                @torch.compile
                def bonus(logits):
                    p = logits.softmax(-1)
                    ent = -(p * p.clamp(min=1e-9).log()).sum(-1).mean()
                    return logits * torch.exp(-ent.detach())
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def length_mask(lengths, slen: int):
                    assert lengths.max().item() <= slen
                    return torch.arange(slen) < lengths[:, None]
            """,
            after="""
                import torch

                @torch.compile
                def length_mask(lengths, slen: int):
                    assert lengths.max().detach() <= slen
                    return torch.arange(slen) < lengths[:, None]
            """,
            inputs="[(torch.tensor([1, 4, 2]), 5), (torch.tensor([3, 5, 1]), 5)]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        call = finding.node
        if not isinstance(call, cst.Call):
            return None
        tensor_expr = _extracted(call, ctx)
        if tensor_expr is None:
            return None
        torch = torch_name(ctx) or "torch"
        rewrites: dict[int, tuple[cst.CSTNode, Builder]] = {}
        try:
            rewrites[id(call)] = (call, _detach)
            check_flows_into_tensors(call, ctx, torch, rewrites, depth=0)
        except NotTensorFlow:
            return None
        plan = FixPlan("keep the value as a 0-d tensor instead of a Python number", "unsafe")
        if torch_name(ctx) is None:
            plan.imports.append("import torch")
        # apply innermost rewrites first: a rewritten math call contains the rewritten extraction
        return compose_rewrites(plan, rewrites, ctx)


def _extracted(call: cst.Call, ctx) -> cst.BaseExpression | None:
    """The tensor expression whose value the call extracts (``t`` in ``t.item()``/``float(t)``)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args:
        return func.value
    if isinstance(func, cst.Name) and func.value == "float" and len(call.args) == 1 and not call.args[0].star \
            and func.value not in ctx.program.index.functions:
        return call.args[0].value
    return None


def _detach(updated: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(updated, cst.Call)
    inner = updated.func.value if isinstance(updated.func, cst.Attribute) else updated.args[0].value
    return cst.parse_expression(f"{paren(code_of(inner))}.detach()").with_changes(
        lpar=updated.lpar, rpar=updated.rpar)


