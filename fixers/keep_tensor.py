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
of the value ends in arithmetic with a tensor; a value that is returned,
compared, stored, or used as a size or loop count is left alone.

Unsafe: assumes floating-point tensors on both sides, so that type promotion
gives the same dtype as with a Python scalar (an integer tensor divided by the
kept 0-d float tensor can promote differently) and that the value and the other
operands live on the same device.
"""
from __future__ import annotations

from typing import Callable

import libcst as cst

from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.codegen import paren, torch_name

_MATH_TO_TORCH = {"sqrt": "sqrt", "exp": "exp", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
                  "expm1": "expm1", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "sinh": "sinh",
                  "cosh": "cosh", "atan": "atan", "asin": "asin", "acos": "acos", "fabs": "abs", "erf": "erf",
                  "erfc": "erfc", "lgamma": "lgamma"}
_MAX_DEPTH = 4


class _Refused(Exception):
    pass


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
            _check_uses(call, ctx, torch, rewrites, depth=0)
        except _Refused:
            return None
        plan = FixPlan("keep the value as a 0-d tensor instead of a Python number", "unsafe")
        if torch_name(ctx) is None:
            plan.imports.append("import torch")
        # apply innermost rewrites first: a rewritten math call contains the rewritten extraction
        return _compose(plan, rewrites, ctx)


Builder = Callable[[cst.CSTNode], cst.CSTNode]


def _extracted(call: cst.Call, ctx) -> cst.BaseExpression | None:
    """The tensor expression whose value the call extracts (``t`` in ``t.item()``/``float(t)``)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not call.args:
        return func.value
    if isinstance(func, cst.Name) and func.value == "float" and len(call.args) == 1 and not call.args[0].star \
            and func.value not in ctx.program.index.functions:
        return call.args[0].value
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def _detach(updated: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(updated, cst.Call)
    inner = updated.func.value if isinstance(updated.func, cst.Attribute) else updated.args[0].value
    return cst.parse_expression(f"{paren(_code(inner))}.detach()").with_changes(
        lpar=updated.lpar, rpar=updated.rpar)


def _check_uses(expr: cst.CSTNode, ctx, torch: str, rewrites, depth: int) -> None:
    """Follow the value of ``expr`` upwards until it meets tensor arithmetic; raise _Refused otherwise."""
    if depth > _MAX_DEPTH:
        raise _Refused
    node = expr
    while True:
        parent = ctx.parent(node)
        if parent is None:
            raise _Refused
        if isinstance(parent, (cst.Arg,)):
            call = ctx.parent(parent)
            if not isinstance(call, cst.Call):
                raise _Refused
            builder = _math_call(call, ctx, torch) or _clamp_call(call, parent, ctx, torch)
            if builder is None:
                raise _Refused
            rewrites[id(call)] = (call, builder)
            node = call
            continue
        if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
            node = parent
            continue
        if isinstance(parent, cst.BinaryOperation):
            v = ctx.value(parent)
            if v is not None and v.kind is Kind.TENSOR:
                return  # it meets a tensor: arithmetic stays in the graph
            node = parent
            continue
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name):
            name = parent.targets[0].target.value
            loads = _loads_after(parent, name, ctx)
            if not loads:
                raise _Refused
            for load in loads:
                _check_uses(load, ctx, torch, rewrites, depth + 1)
            return
        raise _Refused


def _math_call(call: cst.Call, ctx, torch: str) -> Builder | None:
    """``math.sqrt(v)`` -> ``torch.sqrt(v)``."""
    q = ctx.program.index.resolve_expr(call.func)
    if q is None or not q.startswith("math.") or len(call.args) != 1:
        return None
    fn = _MATH_TO_TORCH.get(q.split(".", 1)[1])
    if fn is None:
        return None
    func = cst.parse_expression(f"{torch}.{fn}")
    return lambda updated: updated.with_changes(func=func)


def _clamp_call(call: cst.Call, arg: cst.Arg, ctx, torch: str) -> Builder | None:
    """``max(v, c)`` -> ``torch.clamp(v, min=c)`` when ``c`` is a plain number."""
    if not (isinstance(call.func, cst.Name) and call.func.value in ("max", "min")) or len(call.args) != 2:
        return None
    if call.func.value in ctx.program.index.functions or any(a.star or a.keyword for a in call.args):
        return None
    index = 0 if call.args[0] is arg else 1
    v = ctx.value(call.args[1 - index].value)
    if v is None or v.kind is not Kind.PYTHON:
        return None
    bound = "min" if call.func.value == "max" else "max"

    def build(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.Call)
        value, other = updated.args[index].value, updated.args[1 - index].value
        return cst.parse_expression(f"{torch}.clamp({_code(value)}, {bound}={_code(other)})")

    return build


def _loads_after(assign: cst.Assign, name: str, ctx) -> list[cst.Name]:
    function = ctx.enclosing_function(assign)
    if function is None:
        return []
    loads: list[cst.Name] = []
    seen_assign = False
    inside = {id(n) for n in walk(assign)}
    for n in walk(function.body):
        if id(n) == id(assign):
            seen_assign = True
            continue
        if not seen_assign or id(n) in inside:
            continue
        if isinstance(n, cst.Name) and n.value == name:
            parent = ctx.parent(n)
            if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Attribute) and parent.attr is n):
                raise _Refused  # rebound later: keep it simple
            loads.append(n)
    return loads


def _compose(plan: FixPlan, rewrites: dict[int, tuple[cst.CSTNode, Builder]], ctx) -> FixPlan:
    """One replacement per outermost rewritten node, with the inner rewrites applied inside it."""
    builders = {key: builder for key, (_, builder) in rewrites.items()}
    originals = [old for old, _ in rewrites.values()]
    inner_ids = {id(n) for old in originals for n in walk(old) if n is not old}

    class _Apply(cst.CSTTransformer):
        def on_leave(self, original_node, updated_node):  # type: ignore[override]
            builder = builders.get(id(original_node))
            return builder(updated_node) if builder is not None else updated_node

    for old in originals:
        if id(old) not in inner_ids:
            plan.replace(old, old.visit(_Apply()))
    return plan
