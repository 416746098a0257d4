"""A loop over the indices a mask selects -> a loop over the whole index range, with the capture flag
that keeps each index's selection in the graph, applied together.

Before::

    mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
    hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
    for e in hit:
        idx, rows = torch.where(mask[e].squeeze(0))
        out.index_add_(0, rows, self.experts[e[0]](x[rows]) * w[rows, idx, None])

After (and ``torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)`` around the compile
call of the file that reaches this code)::

    mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
    for e in range(self.num_experts):
        idx, rows = torch.where(mask[e])
        out.index_add_(0, rows, self.experts[e](x[rows]) * w[rows, idx, None])

DYN104 (``nonzero()``, ``torch.where(cond)``) and DYN102 (``.tolist()``, ``.item()``) report such a
loop: it iterates a tensor whose length depends on the data.  The capture flags alone do not remove
those breaks (measured on torch 2.13: the loop over ``nonzero()`` still breaks twice, "graph break in
loop", with both flags on), and a loop over ``range`` alone still breaks at each ``torch.where``; the
loop over the whole range with ``capture_dynamic_output_shape_ops`` on compiles to one graph, with
bitwise-equal outputs.  So the rewrite and the flag are one fix: the flag is added, scoped to the
compile call exactly as the capture-flags fix adds it, or nothing is changed.

The rewrite is exact because an index the mask does not select selects no rows: its ``torch.where``
gives empty index tensors, and a body whose every effect goes through those rows (``index_add_``,
``index_copy_``, ``index_put_`` or an assignment at them) adds zero rows for it.

Proves, or refuses: the loop iterates the indices of a one-dimensional tensor ``S`` (``S.nonzero()``,
``torch.nonzero(S)``, ``torch.where(S)[0]``, ``S.nonzero(as_tuple=True)[0]``, their ``.squeeze(-1)``
or ``.flatten()``, and ``.tolist()`` of those); ``S`` tests a mask ``M`` reduced over every dimension
but the first (``M.sum(dim=...) > 0``, ``torch.greater(..., 0)``, ``M.any(dim=...)``), and the rank of
``M`` is known (``.permute(2, 1, 0)``), so the range is ``M``'s first dimension: ``num_classes`` of the
``one_hot`` it comes from when that is a number known while tracing (a constant, an attribute, a
parameter), ``M.shape[0]`` otherwise.  In the body the loop variable is converted to a number
(``e[0]``, ``e.item()``, ``int(e)``: those become the Python number itself; ``M[e].squeeze(0)`` of a
one-element index becomes ``M[e]``), used as an index, compared in an ``if`` test or formatted.  An
index the mask never selects must be valid wherever the body uses it: indexing the mask; indexing a
``ModuleList`` (or a parameter) that ``__init__`` makes with as many entries as the range, or as a
bound the branch around the use keeps the index under (``if e >= n: ... else: self.w[e]``); or a key
``self[f"expert_{e}"]`` that ``__init__`` sets for each index of that range.  What every iteration
indexes otherwise caps the range instead: every index the original reaches it with is below its
length, or the original fails (``range(min(mask.shape[0], self.num_experts))``, ``len(w)`` of a
sequence computed before the loop).  The body selects rows with ``torch.where(M[e])`` (or
``nonzero``), and every effect goes through the selected rows: a statement is an assignment to a name
of the body (not read before it in the body nor outside the loop), an in-place update of such a name
holding a fresh result (arithmetic, rows taken by the selection), a write at the selected rows of a
tensor from outside, a test of values not computed from the rows with such statements in its
branches, a ``with torch.no_grad():`` block, or a skip of an empty selection (``if rows.numel() == 0:
continue``, dropped: the body does nothing for it anyway); a call with effects the analysis cannot see
into (a module, a function of unknown effect, a random op) must take the selected rows; a break left
in the body needs a capture flag, which the same patch then carries.  A compile call of this file must
reach the loop (see the capture-flags fix: a file that compiles nothing, or a compiled module used
other than by calling it, is refused), or the configuration must declare every flag the loop needs
(``capture-dynamic-output-shape-ops = true``, as a library states that its callers compile it with
the flag on): the flag is then the precondition and nothing is patched.  So a library's loop, whose
compile call lies in its users' code, is rewritten only where that is declared (measured on torch
2.13: the flags alone leave "graph break in loop" at such a loop; the flags with the rewrite, none).

Unsafe (hazards): the capture flag's own (checks in the graph raise ``RuntimeError``, sizes computed
from data are unbacked).  The body runs for every index: a module or function it calls runs once more
per index that selects no rows, on zero rows, so one that counts its calls, keeps running statistics
or fails on an empty input differs (zero-row dropout draws no random numbers: measured on CPU).  A
mask reduced with ``sum`` is taken to hold no negative values (a one-hot or boolean mask), so that a
zero sum means no selected rows.  A container ``__init__`` sets under a condition is taken to hold
what it sets there, and one changed after ``__init__`` (``self.experts.append(...)``) is not seen.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from dynalint.analysis.breaks import CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS, CAPTURE_FLAGS, capture_flag
from dynalint.analysis.syntax import assigned_names, literal_value, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.capture_flags import patch_compile_calls
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import is_variable, variable_names
from dynalint.fixers.support.purity import call_impurity, impurity

_ROW, _SCALAR, _INT = "row", "scalar", "int"
"""What the loop variable holds: a one-element index tensor (a row of ``nonzero()``), a 0-d index
tensor, a Python int."""
_TO_ONE_DIM = frozenset({"flatten", "ravel"})
_ONE_DIM_SHAPES = frozenset({"view", "reshape", "squeeze"})
_SAME_SHAPE = frozenset({"bool", "int", "long", "float", "to", "detach", "clone", "contiguous"})
_SAME_NONZEROS = frozenset({"squeeze", "flatten", "view", "reshape", "permute", "transpose", "contiguous", "bool"})
"""Methods whose result holds the same elements (so as many nonzero ones)."""
_VIEWS = frozenset({"view", "reshape", "transpose", "permute", "flatten", "unflatten", "t", "contiguous"})
"""Methods that only reshape: computing them once more, before the loop, changes nothing."""
_TESTS = frozenset({"greater", "gt", "ne", "not_equal"})
_SCATTERS = {"index_add_": 2, "index_copy_": 2, "index_fill_": None}
"""In-place writes at the rows an index tensor (second argument) names: the argument position of the
values written (None: a fill value)."""
_GRAD_MODES = frozenset({"torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autocast",
                         "torch.amp.autocast", "torch.set_grad_enabled"})


@register
class FullRangeLoop(Fixer):
    name = "full-range-loop"
    codes = ("DYN104", "DYN102")
    safety = "unsafe"
    summary = ("Loop over the whole index range instead of the indices a mask selects, when an index "
               "that selects no rows changes nothing; with the capture flag that keeps the selection in "
               "the graph.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn.functional as F

                def combine(x, top, w):
                    out = torch.zeros_like(x)
                    mask = F.one_hot(top, num_classes=4).permute(2, 1, 0)
                    hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
                    for e in hit:
                        idx, rows = torch.where(mask[e].squeeze(0))
                        out.index_add_(0, rows, x[rows] * w[rows, idx, None])
                    return out

                combine = torch.compile(combine, backend="eager")
            """,
            after="""
                import torch
                import torch.nn.functional as F

                def combine(x, top, w):
                    out = torch.zeros_like(x)
                    mask = F.one_hot(top, num_classes=4).permute(2, 1, 0)
                    for e in range(4):
                        idx, rows = torch.where(mask[e])
                        out.index_add_(0, rows, x[rows] * w[rows, idx, None])
                    return out

                combine = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(combine, backend="eager"))
            """,
            inputs=("[(torch.randn(5, 3), torch.tensor([[0, 1], [1, 0], [0, 2], [2, 1], [1, 0]]), "
                    "torch.rand(5, 2))] * 2"),
            target="combine",
            compile_target=False,
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn
                import torch.nn.functional as F

                class MoE(nn.Module):
                    def __init__(self, num_experts):
                        super().__init__()
                        self.num_experts = num_experts
                        self.experts = nn.ModuleList(nn.Linear(3, 3) for _ in range(num_experts))
                        self.gate = nn.Linear(3, num_experts)

                    def forward(self, x):
                        w, top = self.gate(x).softmax(-1).topk(2, -1)
                        out = torch.zeros_like(x)
                        mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
                        for e in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero().squeeze(-1).tolist():
                            idx, rows = torch.where(mask[e])
                            out.index_add_(0, rows, self.experts[e](x[rows]) * w[rows, idx, None])
                        return out

                torch.manual_seed(0)
                model = torch.compile(MoE(6), backend="eager")
            """,
            after="""
                import torch
                import torch.nn as nn
                import torch.nn.functional as F

                class MoE(nn.Module):
                    def __init__(self, num_experts):
                        super().__init__()
                        self.num_experts = num_experts
                        self.experts = nn.ModuleList(nn.Linear(3, 3) for _ in range(num_experts))
                        self.gate = nn.Linear(3, num_experts)

                    def forward(self, x):
                        w, top = self.gate(x).softmax(-1).topk(2, -1)
                        out = torch.zeros_like(x)
                        mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
                        for e in range(self.num_experts):
                            idx, rows = torch.where(mask[e])
                            out.index_add_(0, rows, self.experts[e](x[rows]) * w[rows, idx, None])
                        return out

                torch.manual_seed(0)
                model = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(torch.compile(MoE(6), backend="eager"))
            """,
            inputs="[(torch.randn(3, 3),), (torch.randn(3, 3),)]",
            target="model",
            compile_target=False,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        loop = _loop_of(finding.node, ctx)
        function = ctx.enclosing_function(loop) if loop is not None else None
        if function is None:
            return None
        hit = _hit_set(loop, function, ctx)
        if hit is None:
            return None  # not a loop over the indices a mask selects
        body = _Body(loop, hit, function, ctx)
        body.check()
        flags = body.flags()
        info = next((f for f in ctx.program.index.all_functions if f.node is function), None)
        if info is None:
            return None
        for old, new in body.replacements.items():
            if isinstance(new, cst.RemovalSentinel) and "#" in cst.Module([]).code_for_node(old):
                raise Refused(f"`{ctx.code(old).strip().splitlines()[0]}`, which the loop over the range no longer "
                              "needs, carries a comment")
        plan = FixPlan("", "unsafe")
        declared = all(getattr(ctx.settings, f) for f in flags)
        if not declared:
            try:
                patch_compile_calls(plan, ctx, info, lambda _reach: flags,
                                    rewritten=lambda b: b.statement is loop or hit.assignment is not None and (
                                        b.statement is hit.assignment or b.statement in hit.assignment.body))
            except Refused as refusal:
                wanted = " and ".join(f"`{f.replace('_', '-')} = true`" for f in flags)
                raise Refused(f"{refusal}; the loop over the range needs {wanted} declared in the configuration "
                              "when the code that compiles this file turns the flags on") from None
        rewrites = {id(old): new for old, new in body.replacements.items()}
        rewrites[id(loop.iter)] = cst.parse_expression(f"range({body.bound})")
        removed = hit.assignment is not None and _removable(hit.assignment, hit.name, function, loop, ctx)
        carried = _blank_lines_before(hit.assignment, loop, ctx) if removed else []
        if carried:  # the blank lines above the removed statement stay above the loop
            plan.replace(loop, loop.visit(_Rewrite(rewrites)).with_changes(
                leading_lines=[*carried, *loop.leading_lines]))
        else:
            for old, new in body.replacements.items():
                plan.replace(old, new)
            plan.replace(loop.iter, rewrites[id(loop.iter)])
        if removed:
            plan.replace(hit.assignment, cst.RemoveFromParent())
        where = ("as the configuration declares for the code that compiles this file" if declared
                 else "for the compiled code only")
        plan.description = (f"loop over every index of `range({body.bound})` instead of those the mask selects, "
                            f"with {', '.join(f'`{f}`' for f in flags)} on, {where}: an index "
                            "that selects no rows adds zero rows; the calls of the body run once per index")
        return plan


class _Rewrite(cst.CSTTransformer):
    """Swap nodes (by the id of the original) for their replacements."""

    def __init__(self, replacements: dict[int, cst.CSTNode | cst.RemovalSentinel]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        return self.replacements.get(id(original_node), updated_node)


def _blank_lines_before(statement: cst.SimpleStatementLine, loop: cst.For, ctx) -> list[cst.EmptyLine]:
    """The blank lines above ``statement`` when the loop follows it in the same block (removing the
    statement would take them along and join the loop to the code above)."""
    block = ctx.parent(statement)
    body = list(getattr(block, "body", ()))
    at = next((i for i, s in enumerate(body) if s is statement), None)
    if at is None or at + 1 >= len(body) or body[at + 1] is not loop or \
            any(line.comment is not None for line in statement.leading_lines):
        return []
    return list(statement.leading_lines)


@dataclass
class _HitSet:
    kind: str
    mask: str
    """The name of the mask the selected indices index (``M`` of ``M.sum(...) > 0``)."""
    bound: str
    """The code of the range's length."""
    name: str | None = None
    """The name the loop iterates, when it iterates a name."""
    assignment: cst.SimpleStatementLine | None = None
    """The statement binding that name (removed when nothing else reads it)."""


def _loop_of(node: cst.CSTNode, ctx) -> cst.For | None:
    """The ``for`` loop whose body holds ``node``, whose iterable it is in, or whose iterable is a name
    the assignment holding ``node`` binds."""
    child, current = node, ctx.parent(node)
    assign = None
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(current, cst.For) and child is not current.target and child is not current.orelse:
            return current
        if isinstance(current, cst.Assign) and assign is None:
            assign = current
        child, current = current, ctx.parent(current)
    if assign is None or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    function = ctx.enclosing_function(assign)
    after = False
    for n in walk(function, into_scopes=False) if function is not None else ():
        if n is assign:
            after = True
        elif after and isinstance(n, cst.For) and isinstance(n.iter, cst.Name) and n.iter.value == name:
            return n
    return None


def _assignment(name: str, function: cst.FunctionDef, before: cst.CSTNode, ctx) -> cst.Assign | None:
    """The assignment of ``name`` that holds at ``before``: the last plain ``name = value`` before it,
    when every binding of the name in ``function`` is such an assignment in straight-line code (no
    loop, branch or ``try`` around it; a ``with`` block is straight-line)."""
    found: list[cst.CSTNode] = []
    position = {}
    for i, n in enumerate(walk(function, into_scopes=False)):
        position[id(n)] = i
        if isinstance(n, cst.Assign) and any(name in assigned_names(t.target) for t in n.targets) or \
                isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) and \
                name in assigned_names(n.target) or \
                isinstance(n, cst.AsName) and name in assigned_names(n.name) or \
                isinstance(n, cst.NamedExpr) and isinstance(n.target, cst.Name) and n.target.value == name or \
                isinstance(n, cst.Param) and n.name.value == name:
            found.append(n)
    if not found or not all(_straight_assignment(n, function, ctx) for n in found):
        return None
    earlier = [n for n in found if position[id(n)] < position.get(id(before), -1)]
    return earlier[-1] if earlier else None  # type: ignore[return-value]


def _straight_assignment(node: cst.CSTNode, function: cst.FunctionDef, ctx) -> bool:
    """``name = value`` (one target, a name) that runs once each time ``function`` reaches it in order."""
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and
            isinstance(node.targets[0].target, cst.Name)):
        return False
    current = ctx.parent(node)
    while current is not None and current is not function:
        if not isinstance(current, (cst.SimpleStatementLine, cst.IndentedBlock, cst.With)):
            return False
        current = ctx.parent(current)
    return current is function


def _method(expr: cst.CSTNode) -> tuple[str, cst.BaseExpression, cst.Call] | None:
    """``(name, receiver, call)`` of ``receiver.name(...)``."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value, expr.func.value, expr
    return None


def _arg(call: cst.Call, position: int | None, keyword: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[position].value if position is not None and position < len(positional) else None


def _int(expr: cst.CSTNode | None) -> int | None:
    """The value of an integer literal, negative ones included."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _int(expr.expression)
        return -inner if inner is not None else None
    if isinstance(expr, cst.Integer):
        value = literal_value(expr)
        return value if isinstance(value, int) else None
    return None


def _ints(expr: cst.CSTNode | None) -> list[int] | None:
    """An integer literal or a tuple/list of them."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        values = [_int(e.value) for e in expr.elements]
        return None if any(v is None for v in values) else values  # type: ignore[return-value]
    value = _int(expr)
    return None if value is None else [value]


def _false(expr: cst.CSTNode | None) -> bool:
    return expr is None or isinstance(expr, cst.Name) and expr.value == "False"


def _resolved(expr: cst.BaseExpression, function: cst.FunctionDef, at: cst.CSTNode, ctx
              ) -> tuple[cst.BaseExpression, cst.CSTNode]:
    """A name's value at ``at``, through the assignments that hold there (the expression itself
    otherwise), and where that value is computed (its names are read there)."""
    for _ in range(8):
        if not isinstance(expr, cst.Name):
            break
        assign = _assignment(expr.value, function, at, ctx)
        if assign is None:
            break
        expr, at = assign.value, assign
    return expr, at


def _hit_set(loop: cst.For, function: cst.FunctionDef, ctx) -> _HitSet | None:
    """What the loop iterates, when it is the indices of a one-dimensional mask test (None otherwise;
    :class:`Refused` when it is but the range cannot be shown)."""
    name = loop.iter.value if isinstance(loop.iter, cst.Name) else None
    assign = _assignment(name, function, loop, ctx) if name is not None else None
    elements = _elements(loop.iter, function, loop, ctx)
    if elements is None:
        return None
    kind, tested, at = elements
    mask, bound = _reduced_mask(tested, function, at, ctx)
    if _assignment(mask, function, at, ctx) is not _assignment(mask, function, loop, ctx):
        raise Refused(f"`{mask}` is assigned again between the selection of the indices and the loop")
    line = ctx.parent(assign) if assign is not None else None
    statement = line if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    return _HitSet(kind, mask, bound, name, statement)


def _elements(expr: cst.BaseExpression, function, at: cst.CSTNode, ctx
              ) -> tuple[str, cst.BaseExpression, cst.CSTNode] | None:
    """(kind of the elements, the tested tensor ``S``, where ``S`` is computed) of an iterable over
    the indices where ``S`` is true, read at ``at``."""
    expr, at = _resolved(expr, function, at, ctx)
    index = ctx.program.index
    method = _method(expr)
    if method is not None:
        attr, receiver, call = method
        if attr == "tolist" and not call.args:
            inner = _elements(receiver, function, at, ctx)
            return (_INT, *inner[1:]) if inner is not None and inner[0] == _SCALAR else None
        if attr in _TO_ONE_DIM and not call.args or \
                attr in _ONE_DIM_SHAPES and _ints(_arg(call, 0, "dim")) in ([-1], [1]) and len(call.args) == 1:
            inner = _elements(receiver, function, at, ctx)
            return (_SCALAR, *inner[1:]) if inner is not None and inner[0] == _ROW else None
        if attr in ("nonzero", "argwhere") and _false(_arg(call, None, "as_tuple")) and \
                all(a.keyword is not None for a in call.args):
            return _ROW, receiver, at
    if isinstance(expr, cst.Call):
        q = index.resolve_expr(expr.func)
        if q in ("torch.nonzero", "torch.argwhere") and expr.args and _false(_arg(expr, None, "as_tuple")):
            return _ROW, expr.args[0].value, at
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
            and _int(expr.slice[0].slice.value) == 0:
        tuple_call, at = _resolved(expr.value, function, at, ctx)
        method = _method(tuple_call)
        if method is not None and method[0] == "nonzero" and not _false(_arg(method[2], None, "as_tuple")):
            return _SCALAR, method[1], at
        if isinstance(tuple_call, cst.Call):
            q = index.resolve_expr(tuple_call.func)
            if q == "torch.where" and len(tuple_call.args) == 1 or \
                    q == "torch.nonzero" and not _false(_arg(tuple_call, None, "as_tuple")):
                return _SCALAR, tuple_call.args[0].value, at
    return None


def _reduced_mask(tested: cst.BaseExpression, function, at: cst.CSTNode, ctx) -> tuple[str, str]:
    """(the mask's name, the code of its first dimension) of ``tested`` (read at ``at``): a mask
    reduced over every dimension but the first, possibly compared with 0."""
    index = ctx.program.index
    what = f"`{ctx.code(tested).strip()}`"
    tested, at = _resolved(tested, function, at, ctx)
    reduced: cst.BaseExpression = tested
    if isinstance(tested, cst.Comparison) and len(tested.comparisons) == 1 and \
            isinstance(tested.comparisons[0].operator, (cst.GreaterThan, cst.NotEqual)) and \
            _int(tested.comparisons[0].comparator) == 0:
        reduced = tested.left
    elif isinstance(tested, cst.Call) and index.resolve_expr(tested.func) in {f"torch.{t}" for t in _TESTS} \
            and len(tested.args) == 2 and _int(tested.args[1].value) == 0:
        reduced = tested.args[0].value
    elif _method(tested) is not None:
        name, receiver, call = _method(tested)
        if name in _TESTS and len(call.args) == 1 and _int(call.args[0].value) == 0 or \
                name == "bool" and not call.args:
            reduced = receiver
    reduced, at = _resolved(reduced, function, at, ctx)
    mask: cst.BaseExpression | None = None
    dims: list[int] | None = None
    method = _method(reduced)
    if method is not None and method[0] in ("sum", "any", "amax") and _false(_arg(method[2], 1, "keepdim")):
        mask, dims = method[1], _ints(_arg(method[2], 0, "dim"))
    elif isinstance(reduced, cst.Call) and index.resolve_expr(reduced.func) in ("torch.sum", "torch.any") \
            and reduced.args and _false(_arg(reduced, 2, "keepdim")):
        mask, dims = reduced.args[0].value, _ints(_arg(reduced, 1, "dim"))
    if mask is None or dims is None or not isinstance(mask, cst.Name):
        raise Refused(f"the loop iterates the indices where {what} holds, which is not a named mask summed "
                      "(or `any`) over every dimension but the first: the range of the indices is not known")
    shape = _shape(mask, function, at, ctx)
    if shape is None:
        raise Refused(f"the number of dimensions of `{mask.value}` is not known, so neither is whether "
                      f"{what} is one-dimensional")
    rank = len(shape)
    if sorted(d % rank for d in dims if -rank <= d < rank) != list(range(1, rank)) or len(dims) != rank - 1:
        raise Refused(f"{what} does not reduce `{mask.value}` over every dimension but the first")
    bound = shape[0] or f"{mask.value}.shape[0]"
    return mask.value, bound


def _shape(expr: cst.BaseExpression, function, at: cst.CSTNode, ctx, depth: int = 0) -> list[str | None] | None:
    """The dimensions of a tensor (the code of each one's size, None when unknown), when its number of
    dimensions is known."""
    found = _partial_shape(expr, function, at, ctx, depth)
    if found is None or not found[1]:
        return None
    dims = found[0]
    if isinstance(expr, cst.Name):
        dims = [d or f"{expr.value}.shape[{i}]" for i, d in enumerate(dims)]
    return dims


def _partial_shape(expr: cst.BaseExpression, function, at: cst.CSTNode, ctx, depth: int
                   ) -> tuple[list[str | None], bool] | None:
    """(the last dimensions of a tensor, whether they are all of them)."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Name):
        value, where = _resolved(expr, function, at, ctx)
        return None if value is expr else _partial_shape(value, function, where, ctx, depth + 1)
    if not isinstance(expr, cst.Call):
        return None
    q = ctx.program.index.resolve_expr(expr.func)
    if q == "torch.nn.functional.one_hot" and expr.args:
        classes = _arg(expr, 1, "num_classes")
        if classes is None or _int(classes) == -1 or not _static(classes, ctx):
            given = f"`num_classes={ctx.code(classes).strip()}`" if classes is not None else "no `num_classes`"
            raise Refused(f"`{ctx.code(expr).strip()}` has {given}: its number of classes is not known while "
                          "tracing, so neither is the range of the indices")
        inner = _partial_shape(expr.args[0].value, function, at, ctx, depth + 1) or ([], False)
        return [*inner[0], ctx.code(classes).strip()], inner[1]
    method = _method(expr)
    if method is None:
        return None
    attr, receiver, call = method
    inner = _partial_shape(receiver, function, at, ctx, depth + 1)
    if attr == "permute":
        perm = _ints(call.args[0].value) if len(call.args) == 1 else [_int(a.value) for a in call.args]
        if not perm or any(p is None or p < 0 for p in perm) or sorted(perm) != list(range(len(perm))):
            return None
        dims, full = inner or ([], False)
        if full and len(dims) != len(perm) or len(dims) > len(perm):
            return None
        dims = [None] * (len(perm) - len(dims)) + dims
        return [dims[p] for p in perm], True
    if attr in _SAME_SHAPE:
        return inner
    return None


def _static(expr: cst.BaseExpression, ctx) -> bool:
    """A number Dynamo reads as a constant: literals, names and attributes that are not tensors or
    numbers read from tensors, arithmetic of them, ``len()`` of them."""
    for node in walk(expr):
        if isinstance(node, cst.Call) and not (isinstance(node.func, cst.Name) and node.func.value == "len"):
            return False
        if isinstance(node, (cst.Name, cst.Attribute)):
            value = ctx.value(node)
            if value is not None and value.kind in (Kind.TENSOR, Kind.SCALAR):
                return False
    return True


def _removable(line: cst.SimpleStatementLine, name: str | None, function, loop: cst.For, ctx) -> bool:
    """The statement binding the iterated name can go: nothing else reads the name, its value has no
    effect but reading tensor data, it carries no comment and is not the only statement of its block."""
    if name is None or line.leading_lines and any(e.comment for e in line.leading_lines) or \
            line.trailing_whitespace.comment is not None:
        return False
    uses = [n for n in walk(function, into_scopes=True) if isinstance(n, cst.Name) and n.value == name]
    value = line.body[0].value
    effects = [call_impurity(c, ctx) for c in walk(value) if isinstance(c, cst.Call)]
    if len(uses) != 2 or impurity(value, ctx) is not None and \
            any(e is not None and "moves tensor data" not in e for e in effects):
        return False  # reading the values into Python (`.tolist()`) is no effect to keep
    block = ctx.parent(line)
    body = getattr(block, "body", ())
    return isinstance(body, (list, tuple)) and len(body) > 1


_FILLED = frozenset({"torch.empty", "torch.zeros", "torch.ones", "torch.randn", "torch.rand", "torch.full"})
"""Tensor factories whose first argument is the first dimension (or the shape)."""


def _range_count(loop: cst.For | cst.CompFor) -> cst.BaseExpression | None:
    """``n`` of ``for _ in range(n)``."""
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and \
            len(it.args) == 1 and it.args[0].keyword is None and not it.args[0].star:
        return it.args[0].value
    return None


def _same_key(key: cst.BaseExpression, name: str, used: cst.FormattedString) -> bool:
    """``f"expert_{idx}"`` (with ``name`` = idx) has the shape of ``used`` (the same text around one
    formatted index)."""
    def shape(s: cst.BaseExpression) -> list[str] | None:
        if not isinstance(s, cst.FormattedString):
            return None
        parts = [p.value if isinstance(p, cst.FormattedStringText) else None for p in s.parts]
        exprs = [p for p in s.parts if isinstance(p, cst.FormattedStringExpression)]
        if len(exprs) != 1 or exprs[0].format_spec or exprs[0].conversion:
            return None
        return [p if p is not None else "{}" for p in parts] + [s.start, s.end]
    inner = [p for p in key.parts if isinstance(p, cst.FormattedStringExpression)] \
        if isinstance(key, cst.FormattedString) else []
    return len(inner) == 1 and isinstance(inner[0].expression, cst.Name) and inner[0].expression.value == name \
        and shape(key) is not None and shape(key) == shape(used)


def _parts(test: cst.BaseExpression, operator: type) -> list[cst.BaseExpression]:
    """The operands of an ``or`` (or ``and``) chain."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, operator) and \
            not test.lpar:
        return [*_parts(test.left, operator), *_parts(test.right, operator)]
    return [test]


def _index_bound(test: cst.BaseExpression, is_index: "Callable[[cst.CSTNode], bool]", negated: bool
                 ) -> cst.BaseExpression | None:
    """``n`` when ``test`` (false, if ``negated``) keeps the index below ``n``: ``i < n``, ``n > i``;
    negated, ``i >= n``, ``n <= i``."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    op, right, left = test.comparisons[0].operator, test.comparisons[0].comparator, test.left
    below, above = (cst.GreaterThanEqual, cst.LessThanEqual) if negated else (cst.LessThan, cst.GreaterThan)
    if isinstance(op, below) and is_index(left):
        return right
    if isinstance(op, above) and is_index(right):
        return left
    return None


def _names_only(target: cst.BaseExpression) -> bool:
    """An assignment target made of names only (``a``, ``a, (b, c)``)."""
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(_names_only(e.value) for e in target.elements)


def _mentions(expr: cst.CSTNode | None, names: set[str]) -> bool:
    """``expr`` reads one of ``names`` (an attribute's or a keyword's name is no read)."""
    if expr is None:
        return False
    return any(n.value in names for n, _ in variable_names(expr))


@dataclass
class _State:
    """What the body has bound so far, in the order it runs."""

    selected: set[str] = field(default_factory=set)
    """Index tensors of the rows the loop variable selects (empty for an index that selects none)."""
    carrying: set[str] = field(default_factory=set)
    """Names computed from the selected rows (zero rows for such an index)."""
    fresh: set[str] = field(default_factory=set)
    """Names holding a tensor made in this iteration (arithmetic, rows taken by an index tensor)."""
    defined: set[str] = field(default_factory=set)

    def copy(self) -> "_State":
        return _State(set(self.selected), set(self.carrying), set(self.fresh), set(self.defined))


class _Body:
    """The loop body: the rewrite of the loop variable's uses, and the proof that an index selecting no
    rows changes nothing."""

    def __init__(self, loop: cst.For, hit: _HitSet, function: cst.FunctionDef, ctx) -> None:
        self.loop, self.hit, self.function, self.ctx = loop, hit, function, ctx
        self.replacements: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel] = {}
        self.aliases: set[str] = set()
        self.caps: dict[str, None] = {}
        """Counts of what every iteration indexes, below which the original's indices stay (in order)."""
        self.selections = 0
        self._locals: set[str] = set()

    def check(self) -> None:
        loop = self.loop
        if not isinstance(loop.target, cst.Name):
            raise Refused("the loop binds more than one name")
        if loop.orelse is not None:
            raise Refused("the loop has an `else` clause")
        self.aliases = {loop.target.value}
        self._rewrite_uses()
        local = self._locals = self._local_names()
        outside = {n.value for n in walk(self.function, into_scopes=True)
                   if isinstance(n, cst.Name) and not self._inside(n, self.loop)}
        shared = sorted(local & outside)
        if shared:
            raise Refused(f"`{shared[0]}` is bound in the loop and used outside it: the loop over every index "
                          "would leave another value in it")
        self._index_uses()
        self._block(loop.body.body, _State(defined=set(self.aliases)))
        if not self.selections:
            raise Refused(f"the body selects no rows with `torch.where({self.hit.mask}[...])`, so an index "
                          "the mask does not select is not shown to do nothing")

    # --- the loop variable ---------------------------------------------------------------
    def _rewrite_uses(self) -> None:
        """Replace each use of the loop variable by the Python number it becomes."""
        var = self.loop.target.value
        statements = list(self.loop.body.body)
        rebind = None
        for i, stmt in enumerate(statements):
            for n in walk(stmt):
                if isinstance(n, cst.AssignTarget) and var in assigned_names(n.target) or \
                        isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For)) and var in assigned_names(n.target):
                    if rebind is not None or not (isinstance(stmt, cst.SimpleStatementLine) and
                                                  len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
                                                  and n in stmt.body[0].targets and len(stmt.body[0].targets) == 1
                                                  and isinstance(n.target, cst.Name)):
                        raise Refused(f"the body assigns the loop variable `{var}` other than by converting it")
                    rebind = i
        kind = self.hit.kind
        for i, stmt in enumerate(statements):
            if i == rebind:
                value = stmt.body[0].value
                node, kind = self._use(self._only_use(value, var), self.hit.kind, rebind=True)
                if node is not value:
                    raise Refused(f"the body assigns the loop variable `{var}` other than by converting it")
                self.replacements[stmt] = cst.RemoveFromParent()
                continue
            for n in walk(stmt):
                if isinstance(n, cst.Name) and n.value == var and self._reads(n):
                    node, _ = self._use(n, kind)
                    if node is not n:
                        self.replacements[node] = self._converted(node, n)
                elif isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and \
                        _mentions(n, {var}):
                    raise Refused(f"a nested function or lambda reads the loop variable `{var}`")
        self._find_aliases(statements, var)

    def _index_uses(self) -> None:
        """Every other use of the index is valid for an index the mask never selects: a comparison, an
        index of something with an entry for every index of the range, or for every index below a
        bound the branch around the use tests (``if i >= n: ... else: w[i]``).  A mask with one class
        more than there are experts would otherwise make the loop fail where the original never went."""
        ctx = self.ctx
        removed = {id(n) for old, new in self.replacements.items() if isinstance(new, cst.RemovalSentinel)
                   for n in walk(old)}
        for n in walk(self.loop.body):
            if not isinstance(n, cst.Name) or n.value not in self.aliases or id(n) in removed or \
                    not self._reads(n):
                continue
            use = self._conversion_of(n)
            parent = ctx.parent(use)
            if isinstance(parent, cst.Assign) and parent.value is use or \
                    isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
                continue  # another name for the index (checked where it is used), or a comparison
            subscript = self._subscript_of(use)
            length: set[str] = set()
            if subscript is not None and len(subscript.slice) == 1:
                if isinstance(subscript.value, cst.Name) and subscript.value.value == self.hit.mask:
                    continue
                length = self._length(subscript.value)
            key = ctx.parent(parent) if isinstance(parent, cst.FormattedStringExpression) else None
            if isinstance(key, cst.FormattedString):
                subscript = self._subscript_of(key)
                length = self._keys(key) if subscript is not None and len(subscript.slice) == 1 else set()
            if self._covers(length, use):
                continue
            cap = None
            if self._unconditional(use):
                cap = self._forward_form(length) or self._length_before(subscript, key)
            if cap is not None:
                # every index the original reaches it with is below that count, or the original fails
                self.caps.setdefault(cap, None)
                continue
            where = subscript if subscript is not None else parent
            raise Refused(f"the body uses the loop's index in `{ctx.code(where).strip()}`, which is not shown to "
                          f"have an entry for every index of `range({self.hit.bound})`: it would fail for an "
                          "index the mask never selects")

    @property
    def bound(self) -> str:
        """The range's length: the mask's first dimension, capped by the count of what every iteration
        indexes (``min(mask.shape[0], self.num_experts)``)."""
        counts = [self.hit.bound, *self.caps]
        bound = cst.parse_expression(self.hit.bound)
        if isinstance(bound, cst.BinaryOperation) and isinstance(bound.operator, cst.Add) and \
                (_int(bound.right) or -1) >= 0 and cst.Module([]).code_for_node(bound.left).strip() in self.caps:
            counts = counts[1:]  # `min(n + 1, n)` is `n`
        return counts[0] if len(counts) == 1 else f"min({', '.join(counts)})"

    def _length_before(self, subscript: cst.Subscript | None, key: cst.CSTNode | None) -> str | None:
        """``len(c)`` of ``c[i]`` when ``c`` can be computed before the loop: it reads no name the body
        binds and calls nothing with effects."""
        if subscript is None or key is not None or _mentions(subscript.value, self._locals | self.aliases):
            return None
        for call in walk(subscript.value):
            if isinstance(call, cst.Call) and call_impurity(call, self.ctx) is not None and \
                    not (_method(call) is not None and _method(call)[0] in _VIEWS):
                return None
        return f"len({self.ctx.code(subscript.value).strip()})"

    def _unconditional(self, use: cst.CSTNode) -> bool:
        """``use`` runs on every iteration that does not skip it with ``continue`` (no branch around it),
        and nothing before it acts (an iteration that skips it, or fails there, has done nothing)."""
        current = self.ctx.parent(use)
        while current is not None and current is not self.loop.body:
            if isinstance(current, (cst.If, cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp,
                                    cst.GeneratorExp, cst.SetComp, cst.DictComp, cst.For, cst.While, cst.Try)):
                return False
            current = self.ctx.parent(current)
        if current is None:
            return False
        for node in walk(self.loop.body):
            if node is use:
                return True
            if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) or \
                    isinstance(node, cst.AugAssign) and not isinstance(node.target, cst.Name) or \
                    isinstance(node, cst.AssignTarget) and not _names_only(node.target):
                return False  # an effect comes first
        return False

    def _forward_form(self, length: set[str]) -> str | None:
        """A form of a count the loop's method can read: a number or an attribute of its ``self``."""
        found = self._init()
        if found is None:
            return None
        for form in sorted(length):
            if form.isdigit():
                return form
        for form in sorted(length):
            if form.startswith("self.") and form[5:].isidentifier():
                return f"{found[2]}.{form[5:]}"
        return None

    def _is_index(self, node: cst.CSTNode) -> bool:
        """``node`` is the index as a number: a name for it, or a conversion the rewrite replaces by one."""
        new = self.replacements.get(node, node)
        return isinstance(new, cst.Name) and new.value in self.aliases

    def _conversion_of(self, name: cst.Name) -> cst.CSTNode:
        """The expression the rewrite turns into the index itself around ``name`` (``e[0]``, ``e.item()``),
        or ``name``; for ``M[e].squeeze(0)``, ``name``."""
        for old, new in self.replacements.items():
            if isinstance(new, cst.Name) and any(n is name for n in walk(old)):
                return old
        return name

    # --- how many entries what the index reaches has ----------------------------------------
    def _init(self) -> tuple[cst.FunctionDef, str, str] | None:
        """(``__init__`` of the class of the loop's method, its first parameter, the method's)."""
        cls = self.ctx.parent(self.ctx.parent(self.function))
        if not isinstance(cls, cst.ClassDef):
            return None
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"),
                    None)
        params = [*self.function.params.posonly_params, *self.function.params.params]
        init_params = [*init.params.posonly_params, *init.params.params] if init is not None else []
        if init is None or not params or not init_params:
            return None
        return init, init_params[0].name.value, params[0].name.value

    def _attribute_values(self, attr: str) -> list[cst.BaseExpression]:
        """What the class's methods assign to ``self.<attr>`` (every assignment, each method's own ``self``)."""
        cls = self.ctx.parent(self.ctx.parent(self.function))
        out: list[cst.BaseExpression] = []
        for method in cls.body.body if isinstance(cls, cst.ClassDef) else ():
            if not isinstance(method, cst.FunctionDef):
                continue
            params = [*method.params.posonly_params, *method.params.params]
            me = params[0].name.value if params else None
            for n in walk(method, into_scopes=False):
                if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                    for t in targets:
                        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == me \
                                and t.attr.value == attr:
                            out.append(n.value if isinstance(n, cst.Assign) and method.name.value == "__init__"
                                       else None)
        return out

    def _forms(self, expr: cst.BaseExpression | None, me: str) -> set[str]:
        """The code of a count, and of what ``__init__`` assigns once to the attribute it reads
        (``self.num_experts`` and ``config.num_experts``), with ``me`` written ``self``."""
        if expr is None:
            return set()
        code = self.ctx.code(expr).strip()
        forms = {code}
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == me:
            forms.add(f"self.{expr.attr.value}")
            values = self._attribute_values(expr.attr.value)
            if len(values) == 1 and values[0] is not None:
                forms.add(self.ctx.code(values[0]).strip())
        found = self._init()
        for n in walk(found[0], into_scopes=False) if found is not None else ():
            target = n.targets[0].target if isinstance(n, cst.Assign) and len(n.targets) == 1 else None
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                    target.value.value == found[1] and self.ctx.code(n.value).strip() == code and \
                    len(self._attribute_values(target.attr.value)) == 1:
                forms.add(f"self.{target.attr.value}")  # `self.n = config.n`: `config.n` is `self.n`
        return forms

    def _length(self, container: cst.BaseExpression) -> set[str]:
        """The forms of the number of entries of ``self.<attr>``: a ``ModuleList``/``ParameterList`` of
        ``range(n)`` entries, or a tensor (parameter) made with first dimension ``n``."""
        found = self._init()
        if found is None or not isinstance(container, cst.Attribute) or not isinstance(container.value, cst.Name) \
                or container.value.value != found[2]:
            return set()
        values = self._attribute_values(container.attr.value)
        if len(values) != 1 or values[0] is None:
            return set()
        value = values[0]
        q = self.ctx.program.index.resolve_expr(value.func) if isinstance(value, cst.Call) else None
        if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") and value.args:
            value = value.args[0].value
            q = self.ctx.program.index.resolve_expr(value.func) if isinstance(value, cst.Call) else None
        if not isinstance(value, cst.Call) or not value.args:
            return set()
        first = value.args[0].value
        if q in ("torch.nn.ModuleList", "torch.nn.ParameterList") and \
                isinstance(first, (cst.GeneratorExp, cst.ListComp)):
            count = _range_count(first.for_in)
            return self._forms(count, found[1]) if count is not None and first.for_in.inner_for_in is None \
                and not first.for_in.ifs else set()
        if q in _FILLED:
            if isinstance(first, (cst.Tuple, cst.List)) and first.elements:
                first = first.elements[0].value
            return self._forms(first, found[1])
        return set()

    def _keys(self, key: cst.FormattedString) -> set[str]:
        """The forms of ``n`` when ``__init__`` sets ``self[<the same f-string>]`` for each index of
        ``range(n)`` (a ``ModuleDict`` of its own)."""
        found = self._init()
        subscript = self._subscript_of(key)
        if found is None or subscript is None or not isinstance(subscript.value, cst.Name) or \
                subscript.value.value != found[2]:
            return set()
        init, me = found[0], found[1]
        for loop in walk(init, into_scopes=False):
            if not isinstance(loop, cst.For) or not isinstance(loop.target, cst.Name):
                continue
            count = _range_count(loop)
            for n in walk(loop.body, into_scopes=False):
                if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Subscript) and \
                        isinstance(n.target.value, cst.Name) and n.target.value.value == me and \
                        len(n.target.slice) == 1 and isinstance(n.target.slice[0].slice, cst.Index) and \
                        _same_key(n.target.slice[0].slice.value, loop.target.value, key) and count is not None:
                    return self._forms(count, me)
        return set()

    def _covers(self, length: set[str], use: cst.CSTNode) -> bool:
        """Something of ``length`` entries has one for the index at ``use``: its length is the range's, or
        a bound the branches around ``use`` keep the index under."""
        if not length:
            return False
        found = self._init()
        me = found[2] if found is not None else "self"
        bounds = set(self._bound_forms())
        for bound in self._upper_bounds(use):
            bounds |= self._forms(bound, me)
        return bool(length & bounds)

    def _bound_forms(self) -> set[str]:
        found = self._init()
        bound = cst.parse_expression(self.hit.bound)
        return {self.hit.bound} | (self._forms(bound, found[2]) if found is not None else set())

    def _upper_bounds(self, use: cst.CSTNode) -> list[cst.BaseExpression]:
        """The ``n`` of the tests ``i < n`` that hold at ``use`` (in an ``if i < n [and ...]:`` body, or in
        the ``else`` of ``if i >= n [or ...]:``)."""
        out: list[cst.BaseExpression] = []
        child, current = use, self.ctx.parent(use)
        while current is not None and current is not self.loop.body:
            if isinstance(current, cst.If):
                negated = child is not current.body and child is not current.test
                if child is not current.test:
                    for part in _parts(current.test, cst.Or if negated else cst.And):
                        bound = _index_bound(part, self._is_index, negated)
                        if bound is not None:
                            out.append(bound)
            child, current = current, self.ctx.parent(current)
        return out

    def _only_use(self, value: cst.BaseExpression, var: str) -> cst.Name:
        uses = [n for n in walk(value) if isinstance(n, cst.Name) and n.value == var and self._reads(n)]
        if len(uses) != 1:
            raise Refused(f"the body assigns the loop variable `{var}` other than by converting it")
        return uses[0]

    def _reads(self, name: cst.Name) -> bool:
        """A read of the name (not an attribute's or keyword's name, not an assignment target)."""
        parent = self.ctx.parent(name)
        return is_variable(name, parent) and not (isinstance(parent, cst.AssignTarget) and parent.target is name)

    def _use(self, name: cst.Name, kind: str, rebind: bool = False) -> tuple[cst.CSTNode, str]:
        """(the outermost expression around a use of the loop variable that is the index as a Python
        number, its kind): ``e[0]``, ``e.item()``, ``int(e)``...  Raises when the use needs a tensor.
        ``rebind``: the use is the value of ``e = e[0]``, which then holds that."""
        ctx = self.ctx
        node: cst.CSTNode = name
        while True:
            parent = ctx.parent(node)
            grand = ctx.parent(parent) if parent is not None else None
            if rebind and isinstance(parent, cst.Assign) and parent.value is node:
                return node, kind
            if isinstance(parent, cst.Attribute) and parent.value is node and isinstance(grand, cst.Call) \
                    and grand.func is parent and not grand.args and parent.attr.value in ("item", "tolist"):
                node, kind = grand, _INT
                continue
            if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and len(grand.args) == 1 and \
                    isinstance(grand.func, cst.Name) and grand.func.value == "int" and \
                    "int" not in ctx.program.index.functions:
                node, kind = grand, _INT
                continue
            if kind == _INT:
                return node, kind
            subscript = self._subscript_of(node)
            if kind == _ROW and isinstance(parent, cst.Subscript) and parent.value is node and \
                    len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index) and \
                    _int(parent.slice[0].slice.value) == 0:
                node, kind = parent, _SCALAR
                continue
            if subscript is not None and node is name:
                if kind == _SCALAR:
                    return node, kind  # `M[e]`: a 0-d index tensor indexes as the number does
                squeeze = _method(ctx.parent(ctx.parent(subscript)))
                if squeeze is not None and squeeze[1] is subscript and squeeze[0] == "squeeze" and \
                        len(squeeze[2].args) == 1 and _int(squeeze[2].args[0].value) == 0 and \
                        len(subscript.slice) == 1:
                    return squeeze[2], "squeezed"
            if kind == _SCALAR and isinstance(parent, cst.FormattedStringExpression):
                return node, kind  # a 0-d tensor formats as its number
            if kind == _SCALAR and self._tested(node):
                return node, kind  # `if e >= n:` decides as the number does
            if kind == _SCALAR and node is not name and (subscript is not None or
                                                         isinstance(parent, cst.FormattedStringExpression)):
                return node, kind
            while isinstance(parent, (cst.Arg, cst.Index, cst.SubscriptElement, cst.Element)):
                parent = ctx.parent(parent)
            code = ctx.code(parent if parent is not None else node).strip()
            raise Refused(f"the loop variable is used as a tensor in `{code}`, where the number from the range "
                          "would differ")
        return node, kind

    def _tested(self, node: cst.CSTNode) -> bool:
        """``node`` is a side of a comparison whose only use is to be tested by an ``if`` (through
        ``and``/``or``/``not``): there a 0-d tensor's comparison is true when the number's is."""
        current = self.ctx.parent(node)
        if isinstance(current, cst.ComparisonTarget):
            current = self.ctx.parent(current)
        if not isinstance(current, cst.Comparison):
            return False
        while True:
            parent = self.ctx.parent(current)
            if isinstance(parent, cst.If) and parent.test is current:
                return True
            if not isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)) or \
                    isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
                return False
            current = parent

    def _number_test(self, node: cst.CSTNode) -> bool:
        """A comparison of the index with numbers: a branch on a tensor before the rewrite, on a Python
        number after it."""
        if not isinstance(node, cst.Comparison):
            return False
        sides = [node.left, *(c.comparator for c in node.comparisons)]
        values = [self.ctx.value(side) for side in sides]
        return any(self._is_index(side) for side in sides) and all(
            self._is_index(side) or value is None or value.kind is not Kind.TENSOR
            for side, value in zip(sides, values))

    def _subscript_of(self, node: cst.CSTNode) -> cst.Subscript | None:
        """The subscript ``node`` is an index of (``M[node]``, ``M[node, i]``)."""
        index = self.ctx.parent(node)
        element = self.ctx.parent(index) if isinstance(index, cst.Index) else None
        subscript = self.ctx.parent(element) if isinstance(element, cst.SubscriptElement) else None
        return subscript if isinstance(subscript, cst.Subscript) else None

    def _converted(self, node: cst.CSTNode, name: cst.Name) -> cst.CSTNode:
        if isinstance(node, cst.Call) and _method(node) is not None and _method(node)[0] == "squeeze":
            return _method(node)[1]  # `M[e].squeeze(0)` -> `M[e]`
        return name

    def _find_aliases(self, statements, var: str) -> None:
        """Names the body binds to the index itself (``i = int(e.item())``)."""
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
                    isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 and \
                    isinstance(stmt.body[0].targets[0].target, cst.Name):
                value = stmt.body[0].value
                new = self.replacements.get(value, value)
                if isinstance(new, cst.Name) and new.value in self.aliases:
                    self.aliases.add(stmt.body[0].targets[0].target.value)

    # --- what the body does --------------------------------------------------------------
    def _inside(self, node: cst.CSTNode, within: cst.CSTNode | None = None) -> bool:
        """``node`` is part of ``within`` (the loop body by default)."""
        within = within if within is not None else self.loop.body
        current = node
        while current is not None:
            if current is within:
                return True
            current = self.ctx.parent(current)
        return False

    def _local_names(self) -> set[str]:
        out: set[str] = set()
        for n in walk(self.loop.body, into_scopes=False):
            if isinstance(n, cst.AssignTarget):
                out |= set(assigned_names(n.target))
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                out |= set(assigned_names(n.target))
        return out | {self.loop.target.value}

    def _block(self, statements, state: _State) -> _State:
        for stmt in statements:
            if self.replacements.get(stmt) is not None:
                continue  # the conversion of the loop variable, dropped
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._small(small, state)
            elif isinstance(stmt, cst.If):
                if self._empty_skip(stmt, state):
                    self.replacements[stmt] = cst.RemoveFromParent()
                    continue
                self._no_effect(stmt.test, state)
                if _mentions(stmt.test, state.selected | state.carrying):
                    raise Refused(f"`if {self.ctx.code(stmt.test).strip()}:` tests the selected rows")
                branches = [self._block(stmt.body.body, state.copy())]
                orelse = stmt.orelse
                if isinstance(orelse, cst.If):
                    branches.append(self._block([orelse], state.copy()))
                elif orelse is not None:
                    branches.append(self._block(orelse.body.body, state.copy()))
                else:
                    branches.append(state.copy())
                state.defined = set.intersection(*(b.defined for b in branches))
                for b in branches:
                    state.selected |= b.selected & state.defined
                    state.carrying |= b.carrying
                    state.fresh &= b.fresh
            elif isinstance(stmt, cst.With):
                for item in stmt.items:
                    call = item.item
                    q = self.ctx.program.index.resolve_expr(call.func if isinstance(call, cst.Call) else call)
                    if q not in _GRAD_MODES or item.asname is not None:
                        raise Refused(f"`with {self.ctx.code(call).strip()}` in the loop body is not a gradient "
                                      "or autocast mode")
                self._block(stmt.body.body, state)
            else:
                raise Refused(f"the body holds a `{type(stmt).__name__.lower()}` statement, which may act for "
                              "an index that selects no rows")
        return state

    def _small(self, small: cst.BaseSmallStatement, state: _State) -> None:
        code = self.ctx.code(small).strip()
        if isinstance(small, (cst.Pass, cst.Continue)):
            return  # skipping the rest of an iteration that selects no rows changes nothing either
        if isinstance(small, cst.Assign):
            self._no_effect(small.value, state)
            self._read_defined(small.value, state)
            for target in small.targets:
                if isinstance(target.target, cst.Subscript):
                    self._scatter_target(target.target, state, code)
                    continue
                names = list(assigned_names(target.target))
                if not _names_only(target.target):
                    raise Refused(f"`{code}` assigns to something other than a name of the body")
                self._bind(names, small.value, state)
            return
        if isinstance(small, cst.AugAssign):
            self._no_effect(small.value, state)
            self._read_defined(small, state)
            if isinstance(small.target, cst.Subscript):
                self._scatter_target(small.target, state, code)
                return
            if isinstance(small.target, cst.Name) and small.target.value in state.fresh:
                if _mentions(small.value, state.selected | state.carrying):
                    state.carrying.add(small.target.value)
                return
            raise Refused(f"`{code}` updates a value that may be shared with the code around the loop, for every "
                          "index")
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            self._scatter_call(small.value, state, code)
            return
        raise Refused(f"`{code}` acts for every index of the range, also one that selects no rows")

    def _read_defined(self, expr: cst.CSTNode, state: _State) -> None:
        """A name of the body read before the body binds it would come from the previous iteration."""
        local = self._locals
        for n in walk(expr):
            if isinstance(n, cst.Name) and n.value in local and n.value not in state.defined and self._reads(n):
                raise Refused(f"`{n.value}` is read in the loop before the body binds it: its value comes from "
                              "the previous iteration, which the loop over every index changes")

    def _bind(self, names: list[str], value: cst.BaseExpression, state: _State) -> None:
        """``names = value``: what the names hold now (``x = f(x)`` reads the old ``x``)."""
        carries = _mentions(value, state.selected | state.carrying)
        fresh = isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)) or \
            isinstance(value, cst.Subscript) and any(_mentions(e, state.selected) for e in value.slice)
        bound = set(names)
        state.defined |= bound
        state.fresh -= bound
        state.selected -= bound
        state.carrying -= bound
        if self._selection(value):
            self.selections += 1
            state.selected |= bound
            state.carrying |= bound
            return
        if carries:
            state.carrying |= bound
        if fresh:
            state.fresh |= bound

    def _selection(self, value: cst.BaseExpression) -> bool:
        """``torch.where(M[e])``, ``M[e].nonzero()``... (or one of its parts): the rows of the mask at the
        loop's index."""
        if isinstance(value, cst.Subscript) and len(value.slice) == 1:
            value = value.value
        index = self.ctx.program.index
        selected = None
        method = _method(value)
        if method is not None and method[0] in ("nonzero", "argwhere") and not method[2].args or \
                method is not None and method[0] == "nonzero" and not _false(_arg(method[2], None, "as_tuple")):
            selected = method[1]
        elif isinstance(value, cst.Call) and len(value.args) >= 1 and \
                index.resolve_expr(value.func) in ("torch.where", "torch.nonzero", "torch.argwhere"):
            if index.resolve_expr(value.func) != "torch.where" or len(value.args) == 1:
                selected = value.args[0].value
        if selected is None:
            return False
        selected = self.replacements.get(selected, selected)
        while _method(selected) is not None and _method(selected)[0] in _SAME_NONZEROS:
            selected = _method(selected)[1]  # `M[i].squeeze(0)`: the same elements
        return isinstance(selected, cst.Subscript) and isinstance(selected.value, cst.Name) and \
            selected.value.value == self.hit.mask and len(selected.slice) == 1 and \
            isinstance(selected.slice[0].slice, cst.Index) and self._is_index(selected.slice[0].slice.value)

    def _scatter_target(self, target: cst.Subscript, state: _State, code: str) -> None:
        first = target.slice[0].slice if target.slice else None
        if not (isinstance(first, cst.Index) and isinstance(first.value, cst.Name) and
                first.value.value in state.selected):
            raise Refused(f"`{code}` writes at rows the loop's index does not select, for every index")
        self._no_effect(target.value, state)

    def _scatter_call(self, call: cst.Call, state: _State, code: str) -> None:
        method = _method(call)
        index = None
        values = None
        if method is not None and method[0] in _SCATTERS:
            index = _arg(call, 1, "index")
            position = _SCATTERS[method[0]]
            values = _arg(call, position, "source") if position is not None else None
        elif method is not None and method[0] == "index_put_":
            indices = _arg(call, 0, "indices")
            if isinstance(indices, (cst.Tuple, cst.List)) and indices.elements:
                index = indices.elements[0].value
            values = _arg(call, 1, "values")
        if not (isinstance(index, cst.Name) and index.value in state.selected):
            raise Refused(f"`{code}` acts for every index of the range, also one that selects no rows")
        if values is not None and not _mentions(values, state.selected | state.carrying):
            raise Refused(f"`{code}` writes values not computed from the selected rows")
        for a in call.args:
            self._no_effect(a.value, state)
        self._no_effect(method[1], state)

    def _empty_skip(self, stmt: cst.If, state: _State) -> bool:
        """``if rows.numel() == 0: continue`` (or ``len(rows) == 0``, ``rows.shape[0] == 0``,
        ``not rows.numel()``) on a selection."""
        body = stmt.body.body
        if stmt.orelse is not None or len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or \
                len(body[0].body) != 1 or not isinstance(body[0].body[0], cst.Continue):
            return False
        test = stmt.test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            size = test.expression
        elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and \
                isinstance(test.comparisons[0].operator, cst.Equal) and _int(test.comparisons[0].comparator) == 0:
            size = test.left
        else:
            return False
        subject = None
        method = _method(size)
        if method is not None and method[0] == "numel" and not method[2].args or \
                method is not None and method[0] == "size" and len(method[2].args) == 1 and \
                _int(method[2].args[0].value) == 0:
            subject = method[1]
        elif isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len" and \
                len(size.args) == 1:
            subject = size.args[0].value
        elif isinstance(size, cst.Subscript) and isinstance(size.value, cst.Attribute) and \
                size.value.attr.value == "shape" and len(size.slice) == 1 and \
                isinstance(size.slice[0].slice, cst.Index) and _int(size.slice[0].slice.value) == 0:
            subject = size.value.value
        return isinstance(subject, cst.Name) and subject.value in state.selected

    def _no_effect(self, expr: cst.CSTNode, state: _State) -> None:
        """Every call in ``expr`` is pure, or takes the selected rows (so it runs on zero rows for an
        index that selects none)."""
        skipped = {id(n) for old in self.replacements for n in walk(old)}
        for node in walk(expr):
            if not isinstance(node, cst.Call) or id(node) in skipped:
                continue
            reason = call_impurity(node, self.ctx)
            if reason is None:
                continue
            code = self.ctx.code(node).strip()
            if "in place" in reason or "moves tensor data" in reason or "print" in reason:
                raise Refused(f"{reason} (`{code}`), in a loop that also runs for indices that select no rows")
            if not _mentions(node, state.selected | state.carrying):
                raise Refused(f"{reason}, and does not take the selected rows: it would run for every index")

    def flags(self) -> list[str]:
        """The capture flags the loop over the range needs: the one that keeps the selection in the graph,
        and those of the breaks left in the body (the whole loop runs eagerly if one breaks)."""
        ctx = self.ctx
        gone = {id(n) for old in self.replacements for n in walk(old)}
        needed = {CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS}
        for brk in ctx.breaks:
            if id(brk.node) in gone or not self._inside(brk.node) or self._number_test(brk.node):
                continue
            flag = capture_flag(brk)
            if flag is None:
                line = ctx.code(brk.node).strip()
                raise Refused(f"the loop body breaks the graph at `{line}`, which no capture flag removes")
            needed.add(flag)
        return [f for f in CAPTURE_FLAGS if f in needed]
