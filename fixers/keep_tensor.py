"""``.item()`` / ``float(t)`` / ``int(t)`` whose value only feeds tensor arithmetic -> keep the 0-d tensor.

Before::

    scale = x.abs().max().item()
    return x / scale

After::

    scale = x.abs().max().detach()
    return x / scale

The value stays in the graph instead of crossing into Python (no break, and
no recompile for each new value).  ``.detach()`` keeps gradients from flowing
through it, as with the Python number.  The value keeps its tensor's dtype when
it meets tensor arithmetic directly: a 0-d tensor takes part in type promotion
as a Python number of its kind does (``x / scale`` keeps the dtype of a float
``x``), and a float64 value is not rounded.  A value computed on before it
meets a tensor (``math.sqrt(v * d)``) is kept in float64, the precision of
Python's float, unless its dtype is known: float32 and float64 stay as they
are, and a half-precision value becomes float32 (its own 0-d arithmetic could
round or overflow where Python's did not).  Python math on the
value is carried over to torch: ``math.sqrt/exp/log...`` become
``torch.sqrt/exp/log...`` and ``max(v, c)``/``min(v, c)`` become ``torch.clamp``,
only with the value as the first argument (``max(nan, c)`` is NaN like the clamp;
``max(c, nan)`` is ``c``).  Applied only when every use of the value ends in
arithmetic or a comparison with a tensor, or in the comparison an ``assert``
tests (which stays in the graph on torch 2.13); a value that is returned,
stored, tested by ``if``, or used as a size or loop count is left alone.

``bool(t)`` whose value is only tested by ``if`` or a conditional expression
becomes ``t``: the same truth test, which the branch rewrites can then keep in
the graph.

Proves, or refuses: every use ends in tensor arithmetic or a comparison; a
``max``/``min`` turned into a clamp has the value as its first argument.

Unsafe (hazards): ``torch`` functions on the kept value can differ from
``math`` in the last bits; a value kept in float64 makes an integer tensor it
meets float64 where the Python float gave the default dtype (and float64 is
not available on every device, e.g. MPS); an ``.item()`` of a tensor whose
dtype is not known, if it is an integer tensor computed on, now takes part in
float arithmetic (an integer result becomes a float); a 0-d half-precision
tensor combined with a value kept in float32 or float64 is promoted to it; ``math`` functions raise
``ValueError`` outside their domain (``math.log(0)``), where ``torch`` returns
inf or NaN; converting a tensor that requires grad to a Python number warned
(``UserWarning``), the kept tensor no longer warns.
"""
from __future__ import annotations

import libcst as cst

from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.branches import dtype_token
from dynalint.analysis.syntax import walk
from dynalint.fixers.codegen import certain_tensor, paren, use_torch
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
                    var = q.var().detach().double()
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
                    return logits * torch.exp(-ent.detach().double())
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
        truth = _truth_only(call, ctx)
        if truth is not None:
            plan = FixPlan("test the tensor itself instead of its Python bool (the branch can then stay in the "
                           "graph)", "unsafe")
            return plan.replace(call, truth.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                                if not isinstance(truth, (cst.Name, cst.Call, cst.Attribute)) else truth)
        tensor_expr = _extracted(call, ctx)
        if tensor_expr is None:
            return None
        plan = FixPlan("keep the value as a 0-d tensor instead of a Python number", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        rewrites: dict[int, tuple[cst.CSTNode, Builder]] = {}
        computed_on: list[cst.CSTNode] = []
        try:
            rewrites[id(call)] = (call, _detach)
            check_flows_into_tensors(call, ctx, torch, rewrites, depth=0, computed_on=computed_on)
        except NotTensorFlow:
            return None
        rewrites[id(call)] = (call, _kept_in(dtype_token(tensor_expr, ctx), call, bool(computed_on)))
        # apply innermost rewrites first: a rewritten math call contains the rewritten extraction
        return compose_rewrites(plan, rewrites, ctx)


def _truth_only(call: cst.Call, ctx) -> cst.BaseExpression | None:
    """``t`` for ``bool(t)`` (``t`` certainly a tensor) whose value is only ever tested by ``if`` or a
    conditional expression, directly or through a name bound once: testing ``t`` itself is the same
    truth test (and raises the same way for a tensor of several elements)."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "bool" and len(call.args) == 1
            and not call.args[0].star and call.args[0].keyword is None
            and "bool" not in ctx.program.index.functions):
        return None
    inner = call.args[0].value
    if not certain_tensor(inner, ctx):
        return None
    parent = ctx.parent(call)
    if _tested(call, parent):
        return inner
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return None
    name = parent.targets[0].target.value
    function = ctx.enclosing_function(call)
    if function is None:
        return None
    uses = [n for n in walk(function.body) if isinstance(n, cst.Name) and n.value == name
            and n is not parent.targets[0].target]
    if not uses or any(not _tested(n, ctx.parent(n)) for n in uses):
        return None  # rebound, or used as a value
    return inner


def _tested(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    return isinstance(parent, (cst.If, cst.IfExp)) and parent.test is node


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


def _kept_in(token: str | None, call: cst.Call, computed_on: bool) -> Builder:
    """How the extracted value is kept: in the tensor's own dtype when that gives what the Python
    number gave; as float32 for a half-precision tensor computed on (its 0-d arithmetic would round
    or overflow); as float64, the precision of a Python float, when the dtype is not known and the
    value is computed on before it meets a tensor."""
    item = isinstance(call.func, cst.Attribute)
    if token in ("float32", "float64") or (item and token in _INTEGER) or (item and not computed_on):
        return _detach
    if token in ("float16", "bfloat16"):
        return _detach_float
    return _detach_double


_INTEGER = ("int64", "int32", "bool", "<int>")


def _detach_float(updated: cst.CSTNode) -> cst.CSTNode:
    return _detach(updated, ".float()")


def _detach_double(updated: cst.CSTNode) -> cst.CSTNode:
    return _detach(updated, ".double()")
