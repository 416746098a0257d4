"""Following a Python number until it meets tensor arithmetic (shared by the fixers that turn
Python numbers into 0-d tensors)."""
from __future__ import annotations

from typing import Callable

import libcst as cst

from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixPlan
from dynalint.fixers.support.codegen import is_variable

_MATH_TO_TORCH = {"sqrt": "sqrt", "exp": "exp", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
                  "expm1": "expm1", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "sinh": "sinh",
                  "cosh": "cosh", "atan": "atan", "asin": "asin", "acos": "acos", "fabs": "abs", "erf": "erf",
                  "erfc": "erfc", "lgamma": "lgamma"}
MAX_DEPTH = 4


class NotTensorFlow(Exception):
    """The value reaches something other than tensor arithmetic (a test, a return, a size...)."""


Builder = Callable[[cst.CSTNode], cst.CSTNode]


def code_of(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def check_flows_into_tensors(expr: cst.CSTNode, ctx, torch: str, rewrites, depth: int,
                             computed_on: list[cst.CSTNode] | None = None,
                             met: list[cst.BaseExpression] | None = None) -> None:
    """Follow the value of ``expr`` upwards until it meets tensor arithmetic; raise NotTensorFlow otherwise.
    ``computed_on`` collects the arithmetic with Python numbers the value goes through before (its
    precision then depends on the dtype the value is kept in); ``met``, the tensor operands of the
    arithmetic it meets (whose dtype a kept value may promote)."""
    if depth > MAX_DEPTH:
        raise NotTensorFlow
    node = expr
    while True:
        parent = ctx.parent(node)
        if parent is None:
            raise NotTensorFlow
        if isinstance(parent, (cst.Arg,)):
            call = ctx.parent(parent)
            if not isinstance(call, cst.Call):
                raise NotTensorFlow
            builder = _math_call(call, ctx, torch) or _clamp_call(call, parent, ctx, torch)
            if builder is None:
                raise NotTensorFlow
            rewrites[id(call)] = (call, builder)
            if computed_on is not None:
                computed_on.append(call)
            node = call
            continue
        if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
            node = parent
            continue
        if isinstance(parent, cst.BinaryOperation):
            v = ctx.value(parent)
            if v is not None and v.kind is Kind.TENSOR:
                if met is not None:
                    met.append(parent.left if parent.right is node else parent.right)
                return  # it meets a tensor: arithmetic stays in the graph
            if computed_on is not None:
                computed_on.append(parent)
            node = parent
            continue
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
            comparison = ctx.parent(parent) if isinstance(parent, cst.ComparisonTarget) else parent
            if _compared_in_graph(comparison, ctx):
                return
            raise NotTensorFlow
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name):
            name = parent.targets[0].target.value
            loads = _loads_after(parent, name, ctx)
            if not loads:
                raise NotTensorFlow
            for load in loads:
                check_flows_into_tensors(load, ctx, torch, rewrites, depth + 1, computed_on, met)
            return
        raise NotTensorFlow


def _compared_in_graph(comparison: cst.CSTNode, ctx) -> bool:
    """Compared with a tensor (elementwise, in the graph), or the whole test of an ``assert``: on
    torch 2.13 ``assert <0-d tensor comparison>`` stays in the graph (measured), where the Python
    number broke it."""
    v = ctx.value(comparison)
    if v is not None and v.kind is Kind.TENSOR:
        return True
    parent = ctx.parent(comparison)
    return isinstance(parent, cst.Assert) and parent.test is comparison


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
    """``max(v, c)`` -> ``torch.clamp(v, min=c)`` when ``c`` is a plain number (``v`` first: Python's
    ``max(v, c)`` returns ``v`` unless ``c > v``, so a NaN ``v`` stays NaN, as with the clamp)."""
    if not (isinstance(call.func, cst.Name) and call.func.value in ("max", "min")) or len(call.args) != 2:
        return None
    if call.func.value in ctx.program.index.functions or any(a.star or a.keyword for a in call.args):
        return None
    index = 0 if call.args[0] is arg else 1
    if index != 0:
        return None  # max(c, nan) is c, the clamp would give NaN
    v = ctx.value(call.args[1 - index].value)
    if v is None or v.kind is not Kind.PYTHON:
        return None
    bound = "min" if call.func.value == "max" else "max"

    def build(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.Call)
        value, other = updated.args[index].value, updated.args[1 - index].value
        return cst.parse_expression(f"{torch}.clamp({code_of(value)}, {bound}={code_of(other)})")

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
            if not is_variable(n, parent):
                continue  # `obj.name`, `f(name=...)`: another name
            if isinstance(parent, cst.AssignTarget):
                raise NotTensorFlow  # rebound later: keep it simple
            loads.append(n)
    return loads


def compose_rewrites(plan: FixPlan, rewrites: dict[int, tuple[cst.CSTNode, Builder]], ctx) -> FixPlan:
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
