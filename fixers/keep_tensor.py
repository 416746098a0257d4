"""``.item()`` / ``float(t)`` / ``int(t)`` whose value only feeds tensor arithmetic -> keep the 0-d tensor.

Before::

    scale = x.abs().max().item()
    return x / scale

After::

    scale = x.abs().max().detach().float()
    return x / scale

The value stays in the graph instead of crossing into Python (no break, and
no recompile for each new value).  ``.detach()`` keeps gradients from flowing
through it, as with the Python number.  A float is kept as a 0-d float32
tensor: arithmetic on it before it meets a tensor cannot overflow as a
half-precision 0-d tensor would, and a 0-d float32 tensor takes part in type
promotion as a Python float does (``x / scale`` keeps the dtype of a float ``x``
and gives the default dtype for an integer ``x``).  An ``.item()`` of a tensor
known to be an integer is kept in its own dtype.  Python math on the
value is carried over to torch: ``math.sqrt/exp/log...`` become
``torch.sqrt/exp/log...`` and ``max(v, c)``/``min(v, c)`` become ``torch.clamp``,
only with the value as the first argument (``max(nan, c)`` is NaN like the clamp;
``max(c, nan)`` is ``c``).  Applied only when every use of the value ends in
arithmetic or a comparison with a tensor, or in the comparison an ``assert``
tests (which stays in the graph on torch 2.13); a value that is returned,
stored, tested by ``if``, or used as a size or loop count is left alone.

Proves, or refuses: every use ends in tensor arithmetic or a comparison; a
``max``/``min`` turned into a clamp has the value as its first argument.

Unsafe (hazards): arithmetic on the kept value runs in float32, not in Python's
double precision (the last bits can differ); an ``.item()`` of a tensor whose
dtype is not known, if it is an integer tensor, now takes part in float32
arithmetic (an integer result becomes a float); a 0-d half-precision operand
combined with the kept value is promoted to float32; ``math`` functions raise
``ValueError`` outside their domain (``math.log(0)``), where ``torch`` returns
inf or NaN.
"""
from __future__ import annotations

import libcst as cst

from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.branches import dtype_token
from dynalint.fixers.codegen import paren, use_torch
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
                    scale = x.abs().max().detach().float()
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
                    var = q.var().detach().float()
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
                    return logits * torch.exp(-ent.detach().float())
            """,
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                def length_mask(lengths, slen: int):
                    assert lengths.long().max().item() <= slen
                    return torch.arange(slen) < lengths[:, None]
            """,
            after="""
                import torch

                @torch.compile
                def length_mask(lengths, slen: int):
                    assert lengths.long().max().detach() <= slen
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
        plan = FixPlan("keep the value as a 0-d tensor instead of a Python number", "unsafe")
        torch = use_torch(plan, ctx)
        rewrites: dict[int, tuple[cst.CSTNode, Builder]] = {}
        token = dtype_token(tensor_expr, ctx)
        integer = isinstance(call.func, cst.Attribute) and token in ("int64", "int32", "bool", "<int>")
        try:
            rewrites[id(call)] = (call, _detach if integer else _detach_float)
            check_flows_into_tensors(call, ctx, torch, rewrites, depth=0)
        except NotTensorFlow:
            return None
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


def _detach(updated: cst.CSTNode, cast: str = "") -> cst.CSTNode:
    assert isinstance(updated, cst.Call)
    inner = updated.func.value if isinstance(updated.func, cst.Attribute) else updated.args[0].value
    return cst.parse_expression(f"{paren(code_of(inner))}.detach(){cast}").with_changes(
        lpar=updated.lpar, rpar=updated.rpar)


def _detach_float(updated: cst.CSTNode) -> cst.CSTNode:
    return _detach(updated, ".float()")


