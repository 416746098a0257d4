"""``.item()`` / ``float(t)`` / ``int(t)`` whose value only feeds tensor arithmetic (DYN102
``scalar-extraction``) -> keep the 0-d tensor.

Before::

    scale = x.abs().max().item()
    return x / scale

After::

    scale = x.abs().max().detach()
    return x / scale

The value stays in the graph instead of crossing into Python (no break, and
no recompile for each new value).  ``.detach()`` keeps gradients from flowing
through it, as with the Python number.  The kept value must not promote the
tensors it meets where the Python number did not (measured on torch 2.13: a
Python int meets tensors as an int64 0-d tensor does, but for a 0-d int32
one; a Python float as a float32 0-d tensor does, but for a 0-d half-precision
one; a float64 0-d tensor promotes 0-d float32 tensors and every integer
tensor, not a floating-point tensor of one dimension or more).  So a count
(``mask.sum().item()``) keeps its integer dtype and ``float(count)`` becomes
float32; a float32 value stays; a half-precision value becomes float32
(exactly; its own 0-d arithmetic could round or overflow where Python's did
not); a value of unknown dtype used as it is keeps its own.  A float64 value,
or one of unknown dtype computed on before it meets a tensor
(``math.sqrt(v * d)``), is kept in float64, the precision of Python's float,
when every tensor it meets is floating point for certain and not known to be
0-d; otherwise it is refused (in float64 it would promote, in its own dtype a
half-precision value could overflow, in float32 a float64 one would change).

Python math on the value is carried over to torch: ``math.sqrt/exp/log...`` become
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
``max``/``min`` turned into a clamp has the value as its first argument; a
value kept in float64 meets only tensors that are floating point for certain;
the tensor is 0-d (a full reduction: ``.item()`` of a larger one raised
``RuntimeError``, the kept tensor would broadcast); and nothing that raised on
the Python number stops raising.  ``torch`` returns inf or NaN where Python
raises, so every operation moved from the number to the tensor must be proven
inside its domain: the argument of ``math.log``/``log2``/``log10`` positive, of
``math.sqrt`` non-negative, of ``math.log1p`` above -1, of ``math.exp``/``expm1``
at most 700 (``OverflowError`` past 709.78), of ``sinh``/``cosh`` within
[-700, 700], of ``sin``/``cos``/``tan`` finite, of ``asin``/``acos`` within
[-1, 1], of ``lgamma`` positive; a divisor of ``/``, ``//`` or ``%`` nonzero
(``ZeroDivisionError``); a power neither 0 to a negative exponent, nor a
negative base to a fractional one (a complex number), nor past the float
range (``OverflowError``); bit operations are not carried over.  The proof is
an interval analysis of the expression (``fixers/support/ranges.py``): abs,
even powers, squares, ``exp``, norms, variances and standard deviations,
sizes, softmax and sigmoid results are bounded by construction, as are
``max(v, c)`` and ``clamp(min=c)``, and the bounds follow arithmetic, sums and
reductions.  So ``1.0 / math.sqrt(max(var, 1e-6) * q.shape[-1])`` is refused
(a size may be 0; that the variance of an empty ``q`` is NaN is not seen) where ``1.0 /
math.sqrt(max(var * q.shape[-1], 1e-6))`` is kept, and ``math.log(x.min().item())``
is refused where ``math.log(x.abs().max().item() + 1.0)`` is kept.

Unsafe (hazards): ``torch`` functions on the kept value can differ from
``math`` in the last bits, and so can arithmetic on a float32 value where
Python computed in float64; a value kept in float64 promotes a tensor it meets
that is 0-d without the analysis knowing it (an argument); an ``.item()`` of a
tensor whose dtype is not known, used as it is, keeps that dtype (a float64
one then promotes the 0-d float32 tensors it meets); a count meeting a 0-d
int32 tensor, or a float32 value meeting a 0-d half-precision one, promotes
it; converting a tensor that requires grad to a Python number warned
(``UserWarning``), the kept tensor no longer warns.
"""
from __future__ import annotations

import libcst as cst

from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.analysis.values import Kind
from dynalint.fixers.support.branches import certainly_floating, dtype_token, shape_token
from dynalint.analysis.syntax import walk
from dynalint.fixers.support.codegen import certain_tensor, paren, use_torch
from dynalint.fixers.support.ranges import number_operation_raises
from dynalint.fixers.support.tensor_flow import Builder, NotTensorFlow, check_flows_into_tensors, code_of, compose_rewrites


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
                    scale = 1.0 / math.sqrt(max(var * q.shape[-1], 1e-6))
                    return (q @ k.transpose(-1, -2) * scale).softmax(-1)
            """,
            after="""
                import math
                import torch

                @torch.compile
                def attention(q, k):
                    var = q.var().detach().double()
                    scale = 1.0 / torch.sqrt(torch.clamp(var * q.shape[-1], min=1e-6))
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
        met: list[cst.BaseExpression] = []
        try:
            rewrites[id(call)] = (call, _detach)
            check_flows_into_tensors(call, ctx, torch, rewrites, depth=0, computed_on=computed_on, met=met)
        except NotTensorFlow:
            return None
        if not _zero_dim(tensor_expr, ctx):
            raise Refused(f"`{ctx.code(call).strip()}` raises RuntimeError (`float()`: ValueError) for a tensor of "
                          "more than one element, where the kept tensor would broadcast: "
                          f"`{ctx.code(tensor_expr).strip()}` is not proven 0-d")
        rewrites[id(call)] = (call, _kept_in(tensor_expr, call, bool(computed_on), met, ctx))
        for operation in computed_on:  # what raised on the Python number must not raise on it
            reason = number_operation_raises(operation, ctx)
            if reason is not None:
                raise Refused(reason)
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


def _zero_dim(expr: cst.BaseExpression, ctx) -> bool:
    """``expr`` is a 0-d tensor (a full reduction, or what the analysis knows to be one): its ``.item()`` never
    raises, and the kept tensor broadcasts as the number did."""
    value = ctx.value(expr)
    return value is not None and value.zero_dim or shape_token(expr, ctx) == "<0-d>"


def _detach(updated: cst.CSTNode, cast: str = "") -> cst.CSTNode:
    assert isinstance(updated, cst.Call)
    inner = updated.func.value if isinstance(updated.func, cst.Attribute) else updated.args[0].value
    return cst.parse_expression(f"{paren(code_of(inner))}.detach(){cast}").with_changes(
        lpar=updated.lpar, rpar=updated.rpar)


def _kept_in(tensor_expr: cst.BaseExpression, call: cst.Call, computed_on: bool, met, ctx) -> Builder:
    """How the extracted value is kept, so that it does not promote the tensors it meets where the
    Python number did not (measured on torch 2.13, ``t op k`` against ``t op number`` for every dtype of
    ``t``, 0-d or not): a Python int behaves as an int64 0-d tensor but against a 0-d int32 tensor, a
    Python float as a float32 0-d tensor but against a 0-d half-precision one, and a float64 0-d
    tensor promotes only 0-d tensors of lower float dtypes and integer tensors.  So a count keeps its
    integer dtype; ``float(count)`` becomes float32; a float32 value stays; a half-precision one becomes
    float32 (exactly: its own arithmetic could round or overflow); a floating value of unknown dtype
    used as it is keeps its own.  A float64 value, or one of unknown dtype computed on before it meets
    a tensor, is kept in float64 (the precision of Python's float) only when every tensor it meets is
    floating point and not 0-d; otherwise it is refused."""
    token = dtype_token(tensor_expr, ctx)
    item = isinstance(call.func, cst.Attribute)
    if token in _INTEGRAL:
        return _detach if item else _detach_float  # float(count) is a Python float
    if token == "float32":
        return _detach
    if token in ("float16", "bfloat16"):
        return _detach_float
    if token != "float64" and not computed_on and (item or certainly_floating(tensor_expr, ctx)):
        return _detach  # used as it is: in its own dtype
    if met and all(_floating_tensor(m, ctx) for m in met):
        return _detach if token == "float64" else _detach_double
    what = "a float64 value" if token == "float64" else "a value of unknown dtype computed on"
    raise Refused(f"{what} cannot be kept without changing dtypes: in float64 it promotes 0-d and integer "
                  "tensors it meets (a Python number does not), in its own dtype a half-precision value "
                  "rounds or overflows, in float32 a float64 one changes; not every tensor it meets is "
                  "provably floating point and not 0-d")


_INTEGRAL = ("int64", "int32", "int16", "int8", "uint8", "bool", "<int>")


def _floating_tensor(expr: cst.BaseExpression, ctx) -> bool:
    """A tensor, floating point for certain, and not known to be 0-d: a 0-d float64 value meeting it
    leaves its dtype as a Python float does."""
    v = ctx.value(expr)
    return v is not None and v.kind is Kind.TENSOR and not v.zero_dim and certainly_floating(expr, ctx)


def _detach_float(updated: cst.CSTNode) -> cst.CSTNode:
    return _detach(updated, ".float()")




def _detach_double(updated: cst.CSTNode) -> cst.CSTNode:
    return _detach(updated, ".double()")
