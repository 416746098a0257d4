"""A loop over experts that each take the rows routed to them -> every row's experts computed at once
from the experts' stacked parameters, with no capture flag.

Before::

    mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
    for e in range(self.num_experts):
        slot, rows = torch.where(mask[e])
        out.index_add_(0, rows, self.experts[e](x[rows]) * w[rows, slot, None])

After::

    mask = F.one_hot(top, num_classes=self.num_experts).permute(2, 1, 0)
    tokens, slots = torch.meshgrid(torch.arange(top.shape[0], device=top.device),
                                   torch.arange(top.shape[1], device=top.device), indexing="ij")
    stacked = {name: torch.stack([dict(expert.named_parameters())[name] for expert in self.experts])[top]
               for name, _ in self.experts[0].named_parameters()}
    expert_out = torch.func.vmap(torch.func.vmap(lambda params, row: torch.func.functional_call(
        self.experts[0], params, (row,))))(stacked, x[tokens])
    out.index_add_(0, tokens[:, 0], (expert_out * w[tokens, slots, None]).sum(1))

A loop over the experts selects, for each, the (row, slot) pairs of the routing ``top`` that name it
(``torch.where`` of its slice of ``one_hot(top)``): a data-dependent number of rows, so the graph
breaks at each ``torch.where`` (DYN104) or at the loop over the experts present (``nonzero()``).  The
full-range-loop fix keeps that loop with ``capture_dynamic_output_shape_ops``, which only a file that
compiles the code can set; this one needs no flag (measured on torch 2.13: no break left, outputs and
gradients equal by ``assert_close``), so it also serves a library that leaves compiling to its
callers; it is tried where that fix is refused.  Every pair ``(t, j)`` is processed by exactly one iteration,
that of expert ``top[t, j]``, so the sum over the loop is the sum over all pairs of
``expert_{top[t, j]}(x[t])`` times the routing weight: the rewrite evaluates the loop's own expression
on the whole (row, slot) grid, the expert's output taken per pair from its parameters gathered at
``top[t, j]`` (``torch.func.functional_call`` of the first expert, ``vmap``-ed over rows and slots),
and adds the sum over the slots into the same rows.

Proves, or refuses (from the code, not from names): the loop visits every expert index once:
``range(N)`` with ``N`` the ``num_classes`` of the ``one_hot``, or the experts the mask selects (as the
full-range-loop fix reads ``nonzero()``; ``e = e[0]`` first in the body is the index itself); the
mask is ``one_hot(top, num_classes=N).permute(...)`` (in one statement or several) with three
dimensions and the class first, so ``torch.where`` of its slice gives the row and slot indices of
``top``, in an order the permutation tells.  The body binds those two index tensors and names used
only in the body (each read after it is bound; ``a, b = E`` reads as ``E[0]``, ``E[1]``), and makes
one effect: ``out.index_add_(0, rows, src)`` on a tensor made for it (``torch.zeros_like(x)``: no
name the loop reads holds it).  ``src`` is arithmetic (``* + - /``), dtype conversions and numbers
over the routing weights at the selected rows and slots (``w[rows, slot, None]`` or
``.unsqueeze(-1)``) and one computation of the selected rows, which must compute each row from that
row alone: rows of tensors the loop does not write (``x[rows]``), elementwise functions, arithmetic,
``.chunk(n, dim=-1)``, ``F.linear``/``@`` by the expert's entry of a parameter ``__init__`` makes as
one tensor (``self.w[e]``), and calls of ``experts[e]`` where ``experts`` is an attribute
``__init__`` sets once to ``nn.ModuleList`` of one constructor called the same way for every entry,
a ``nn.Linear`` or a module of this file made only of ``nn.Linear`` layers and elementwise
activations, whose ``forward`` maps each row of its one input on its own: every expert has the same
parameters by name, and applying it to one row gives that row of its output on many.  That
computation runs per (row, slot) pair under ``vmap`` with the entries gathered at ``top``; the rest
of ``src`` is evaluated on the grid as written.

Unsafe (hazards): the sums run in another order (CPU matrix products of few rows give other bits:
equal by ``assert_close``, not bitwise).  An expert no row selects gets a zero gradient where the
loop left it ``None`` (an optimizer that skips ``None`` gradients updates it, weight decay
included).  The gathered parameters take memory for every (row, slot) pair, and a value the body
names and reads twice (``a, b = E``) is computed twice.  An expert list or parameter changed after
``__init__`` (``self.experts.append(...)``) is not seen.
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from dynalint.analysis.syntax import assigned_names, walk
from dynalint.fixers.full_range_loop import (
    _FILLED, _ROW, _assignment, _hit_set, _int, _ints, _loop_of, _method, _removable, _resolved, _static)
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import VariableNames, paren, rename, use_torch

_ELEMENTWISE_MODULES = frozenset(f"torch.nn.{m}" for m in (
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Identity", "LeakyReLU", "ELU", "Softplus", "Mish", "Hardswish",
    "ReLU6", "SELU", "CELU", "Hardtanh", "Tanhshrink", "Softsign", "LogSigmoid"))
"""Activation modules that act on each element alone (no parameters, no randomness)."""
_ELEMENTWISE_FUNCTIONS = frozenset({
    *(f"torch.nn.functional.{f}" for f in (
        "relu", "gelu", "silu", "tanh", "sigmoid", "leaky_relu", "elu", "softplus", "mish", "hardswish", "relu6",
        "selu", "celu")),
    *(f"torch.{f}" for f in ("relu", "tanh", "sigmoid", "exp", "abs", "square", "sqrt", "rsqrt"))})
_ELEMENTWISE_METHODS = frozenset({"relu", "sigmoid", "tanh", "exp", "abs", "square", "sqrt", "rsqrt", "neg"})
_DTYPE_METHODS = frozenset({"to", "float", "half", "bfloat16", "double", "type_as"})
"""Methods of ``src`` that change only the dtype (their arguments must not be the rows)."""
_ARITHMETIC = (cst.Multiply, cst.Add, cst.Subtract, cst.Divide)


@register
class ExpertGather(Fixer):
    name = "expert-gather"
    codes = ("DYN104", "DYN102")
    safety = "unsafe"
    summary = ("Compute every row's experts at once from the experts' stacked parameters instead of a loop "
               "over the rows routed to each expert: no data-dependent size, no capture flag.")
    reasoning = __doc__ or ""
    EXAMPLES = [
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
                        for e in range(self.num_experts):
                            slot, rows = torch.where(mask[e])
                            out.index_add_(0, rows, self.experts[e](x[rows]) * w[rows, slot, None])
                        return out

                torch.manual_seed(0)
                model = MoE(4)
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
                        tokens, slots = torch.meshgrid(torch.arange(top.shape[0], device=top.device), torch.arange(top.shape[1], device=top.device), indexing="ij")
                        stacked = {name: torch.stack([dict(expert.named_parameters())[name] for expert in self.experts])[top] for name, _ in self.experts[0].named_parameters()}
                        expert_out = torch.func.vmap(torch.func.vmap(lambda params, row: torch.func.functional_call(self.experts[0], params, (row,))))(stacked, x[tokens])
                        out.index_add_(0, tokens[:, 0], (expert_out * w[tokens, slots, None]).sum(1))
                        return out

                torch.manual_seed(0)
                model = MoE(4)
            """,
            inputs="[(torch.randn(5, 3),), (torch.randn(5, 3),)]",
            target="model",
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn
                import torch.nn.functional as F

                class Experts(nn.Module):
                    def __init__(self, dim, inner, count):
                        super().__init__()
                        self.count = count
                        self.up = nn.Parameter(torch.randn(count, inner, dim) / dim ** 0.5)
                        self.down = nn.Parameter(torch.randn(count, dim, inner) / inner ** 0.5)
                        self.router = nn.Linear(dim, count, bias=False)

                    def forward(self, x):
                        w, top = self.router(x).softmax(-1).topk(2, -1)
                        out = torch.zeros_like(x)
                        mask = F.one_hot(top, num_classes=self.count).permute(2, 1, 0)
                        for e in mask.sum(dim=(1, 2)).nonzero():
                            e = e[0]
                            slot, rows = torch.where(mask[e])
                            h = F.gelu(F.linear(x[rows], self.up[e]))
                            out.index_add_(0, rows, F.linear(h, self.down[e]) * w[rows, slot, None])
                        return out

                torch.manual_seed(0)
                model = Experts(4, 8, 3)
            """,
            after="""
                import torch
                import torch.nn as nn
                import torch.nn.functional as F

                class Experts(nn.Module):
                    def __init__(self, dim, inner, count):
                        super().__init__()
                        self.count = count
                        self.up = nn.Parameter(torch.randn(count, inner, dim) / dim ** 0.5)
                        self.down = nn.Parameter(torch.randn(count, dim, inner) / inner ** 0.5)
                        self.router = nn.Linear(dim, count, bias=False)

                    def forward(self, x):
                        w, top = self.router(x).softmax(-1).topk(2, -1)
                        out = torch.zeros_like(x)
                        mask = F.one_hot(top, num_classes=self.count).permute(2, 1, 0)
                        tokens, slots = torch.meshgrid(torch.arange(top.shape[0], device=top.device), torch.arange(top.shape[1], device=top.device), indexing="ij")
                        expert_out = torch.func.vmap(torch.func.vmap(lambda row, weight, weight_1: F.linear(F.gelu(F.linear(row, weight)), weight_1)))(x[tokens], self.up[top], self.down[top])
                        out.index_add_(0, tokens[:, 0], (expert_out * w[tokens, slots, None]).sum(1))
                        return out

                torch.manual_seed(0)
                model = Experts(4, 8, 3)
            """,
            inputs="[(torch.randn(5, 4),), (torch.randn(5, 4),)]",
            target="model",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        loop = _loop_of(finding.node, ctx)
        function = ctx.enclosing_function(loop) if loop is not None else None
        if function is None or not isinstance(loop.target, cst.Name) or loop.orelse is not None:
            return None
        hit = None
        count = _range_of(loop)
        if count is None:
            hit = _hit_set(loop, function, ctx)
            if hit is None:
                return None
        body = _read_body(loop, hit, function, ctx)
        mask = _routing(body.mask, function, loop, ctx)
        if hit is not None and hit.mask != body.mask:
            raise Refused(f"the loop iterates the indices of `{hit.mask}`, not of `{body.mask}` it selects rows of")
        if count is not None and ctx.code(count).strip() != mask.classes:
            raise Refused(f"the loop runs over `range({ctx.code(count).strip()})`, not over the "
                          f"{mask.classes} classes of the routing's `one_hot`: not every expert index is seen once")
        _fresh_output(body.out, function, loop, ctx)
        rows, slots = (body.first, body.second) if mask.first_is_row else (body.second, body.first)
        if body.index_target != rows:
            raise Refused(f"`index_add_` writes at `{body.index_target}`, not at the rows the selection gives")
        src = _Source(body, rows, slots, function, ctx)
        src.check(body.source)
        if src.row is None:
            raise Refused("the values written are not computed from the selected rows")
        return self._plan(ctx, loop, hit, function, mask, body, src, rows, slots)

    def _plan(self, ctx, loop, hit, function, mask, body, src, rows, slots) -> FixPlan:
        plan = FixPlan("", "unsafe")
        torch = use_torch(plan, ctx, loop)
        taken = set(ctx.names_in(function))

        def fresh(base: str) -> str:
            name = ctx.fresh_name(base, function, taken)
            taken.add(name)
            return name

        t, s, y = fresh("tokens"), fresh("slots"), fresh("expert_out")
        top = mask.top
        lines = [f"{t}, {s} = {torch}.meshgrid({torch}.arange({top}.shape[0], device={top}.device), "
                 f"{torch}.arange({top}.shape[1], device={top}.device), indexing=\"ij\")"]
        params: list[str] = []
        arguments: list[str] = []
        names: dict[str, str] = {}
        for code in src.containers:
            stacked, name, expert = fresh("stacked"), fresh("name"), fresh("expert")
            lines.append(f"{stacked} = {{{name}: {torch}.stack([dict({expert}.named_parameters())[{name}] for {expert} "
                         f"in {code}])[{top}] for {name}, _ in {code}[0].named_parameters()}}")
            names[code] = fresh("params")
            params.append(names[code])
            arguments.append(stacked)
        for code in src.inputs:
            names[code] = fresh("row")
            params.append(names[code])
            arguments.append(f"{code}[{t}]")
        for code in src.per_expert:
            names[code] = fresh("weight")
            params.append(names[code])
            arguments.append(f"{code}[{top}]")
        per_pair = src.per_pair(names, torch)
        lines.append(f"{y} = {torch}.func.vmap({torch}.func.vmap(lambda {', '.join(params)}: {per_pair}))"
                     f"({', '.join(arguments)})")
        written = src.rewrite(body.source, {rows: t, slots: s}, y)
        lines.append(f"{body.out}.index_add_(0, {t}[:, 0], {paren(written)}.sum(1))")
        statements = [cst.parse_statement(line) for line in lines]
        statements[0] = statements[0].with_changes(leading_lines=loop.leading_lines)
        plan.replace(loop, cst.FlattenSentinel(statements))
        if hit is not None and hit.assignment is not None and _removable(hit.assignment, hit.name, function, loop,
                                                                         ctx):
            plan.replace(hit.assignment, cst.RemoveFromParent())
        what = ", ".join(f"`{c}`" for c in [*src.containers, *src.per_expert])
        plan.description = (f"compute every row's experts at once from the parameters of {what} gathered at the "
                            "routing (vmap over rows and slots) instead of a loop over the rows routed to each "
                            "expert: no capture flag; sums in another order (assert_close), an unused expert's "
                            "gradient is zero instead of None")
        return plan


_FRESH = frozenset({*_FILLED, "torch.zeros_like", "torch.empty_like", "torch.ones_like", "torch.full_like"})
"""Factories of a new tensor (which no other name holds)."""


def _fresh_output(out: str, function: cst.FunctionDef, loop: cst.For, ctx) -> None:
    """``out`` is a tensor made for the loop (``torch.zeros_like(x)``, ``x.new_zeros(...)``): no other name
    the loop reads holds it, so the iterations read nothing they write."""
    assign = _assignment(out, function, loop, ctx)
    value = assign.value if assign is not None else None
    q = ctx.program.index.resolve_expr(value.func) if isinstance(value, cst.Call) else None
    method = _method(value) if value is not None else None
    if q not in _FRESH and not (method is not None and method[0] in ("new_zeros", "new_empty", "new_ones",
                                                                     "new_full")):
        raise Refused(f"`{out}`, which the loop adds to, is not a tensor made for it (`torch.zeros_like(...)`): "
                      "another name may hold it, and the loop would read what it adds")
    between, inside = False, {id(n) for n in walk(assign)}
    for n in walk(function, into_scopes=True):
        if n is loop:
            break
        between = between or n is assign
        if between and isinstance(n, cst.Name) and n.value == out and id(n) not in inside:
            raise Refused(f"`{out}` is used between where it is made and the loop: another name may hold it")


def _range_of(loop: cst.For) -> cst.BaseExpression | None:
    """``n`` of ``for e in range(n)``."""
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and \
            len(it.args) == 1 and it.args[0].keyword is None and not it.args[0].star:
        return it.args[0].value
    return None


@dataclass
class _Body:
    mask: str
    """The mask the body selects rows of."""
    first: str
    second: str
    """The names ``torch.where`` binds, in order."""
    out: str
    index_target: str
    source: cst.BaseExpression
    """The values ``index_add_`` writes, with the body's intermediate names put back in."""
    local: dict[str, cst.BaseExpression]
    index_forms: set[str]
    """The code of the loop's index as the body may use it (``e``, ``e[0]``...)."""
    var: str


def _read_body(loop: cst.For, hit, function: cst.FunctionDef, ctx) -> _Body:
    """The selection, the intermediate names and the one write of the body (Refused otherwise)."""
    var = loop.target.value
    kind = hit.kind if hit is not None else None
    index_forms = {var} if kind != _ROW else {f"{var}[0]", f"int({var})", f"{var}.item()"}
    if kind is not None and kind != _ROW:
        index_forms |= {f"int({var})", f"{var}.item()"}
    statements = list(loop.body.body)
    first = statements[0].body[0] if statements and isinstance(statements[0], cst.SimpleStatementLine) and \
        len(statements[0].body) == 1 else None
    if isinstance(first, cst.Assign) and len(first.targets) == 1 and isinstance(first.targets[0].target, cst.Name) \
            and first.targets[0].target.value == var and ctx.code(first.value).strip() in index_forms:
        index_forms, kind = {var}, None  # `e = e[0]`: the index itself from here on
        statements = statements[1:]
    bound = {n for stmt in statements for t in walk(stmt, into_scopes=False) if isinstance(t, cst.AssignTarget)
             for n in assigned_names(t.target)}
    local: dict[str, cst.BaseExpression | None] = {}
    selection = write = None
    for stmt in statements:
        if selection is not None and _empty_skip(stmt, set(selection[0])):
            continue  # the iteration of an expert no pair names adds nothing either way
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            line = ctx.code(stmt.with_changes(leading_lines=())).strip().splitlines()[0]
            raise Refused(f"`{line}` in the loop body is not a selection of rows, an assignment to names or one "
                          "`index_add_`")
        small = stmt.body[0]
        early = {n.value for n in walk(small) if isinstance(n, cst.Name) and n.value in bound - set(local)}
        if isinstance(small, cst.Assign):
            early -= set(assigned_names(small.targets[0].target))
        if early or isinstance(small, cst.Assign) and var in assigned_names(small.targets[0].target):
            raise Refused(f"`{ctx.code(small).strip()}` reads or rebinds a name of the loop before the body binds "
                          "it in this iteration")
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            names = list(assigned_names(target))
            if any(n in local and local[n] is None for n in names):
                raise Refused(f"`{names[0]}`, which the selection binds, is assigned again in the loop body")
            if selection is None and isinstance(target, cst.Tuple) and len(names) == 2 and _names_only(target):
                selection = (names, small.value)
                local.update({n: None for n in names})
                continue
            if isinstance(target, cst.Name):
                local[target.value] = _inline(small.value, local)
                continue
            if _names_only(target) and len(names) == len(target.elements):
                value = _inline(small.value, local)
                value = value if value.lpar or isinstance(value, (cst.Call, cst.Name, cst.Attribute, cst.Subscript)) \
                    else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                for i, name in enumerate(names):  # `a, b = E`: `E[0]`, `E[1]`
                    local[name] = cst.Subscript(value, [cst.SubscriptElement(cst.Index(cst.Integer(str(i))))])
                continue
        if isinstance(small, cst.Expr) and write is None and _method(small.value) is not None and \
                _method(small.value)[0] == "index_add_":
            write = small.value
            continue
        raise Refused(f"`{ctx.code(small).strip()}` in the loop body is not a selection of rows, an assignment "
                      "to names or one `index_add_`")
    if selection is None or write is None:
        raise Refused("the loop body does not select rows with `torch.where` and write them with `index_add_`")
    (first_name, second_name), value = selection
    mask = _selected_mask(value, var, index_forms, kind, ctx)
    method = _method(write)
    out, call = method[1], method[2]
    args = [a for a in call.args if a.keyword is None and not a.star]
    if len(args) != 3 or len(call.args) != 3 or _int(args[0].value) != 0 or not isinstance(args[1].value, cst.Name) \
            or not isinstance(out, cst.Name) or out.value in local or out.value == var:
        raise Refused("`index_add_` is not `out.index_add_(0, rows, values)` on a tensor from outside the loop")
    _every_binding_read(statements, {n for n, held in local.items() if held is not None})
    body_nodes = {id(n) for n in walk(loop)}
    for n in walk(function, into_scopes=True):
        if isinstance(n, cst.Name) and n.value in (*local, var) and id(n) not in body_nodes:
            raise Refused(f"`{n.value}`, which the loop binds, is also used outside it")
    source = _inline(args[2].value, local)
    source = source.with_changes(lpar=[], rpar=[]) if source.lpar else source
    return _Body(mask, first_name, second_name, out.value, args[1].value.value, source,
                 {k: v for k, v in local.items() if v is not None}, index_forms, var)


def _every_binding_read(statements: list[cst.BaseStatement], names: set[str]) -> None:
    """Each binding of ``names`` in the body is read by a later statement: the rewrite keeps only what flows
    into the values written (and checks it), so a computation nothing reads would be dropped unchecked."""
    pending: set[str] = set()
    for stmt in statements:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        targets = {id(n) for t in small.targets for n in walk(t.target)} if isinstance(small, cst.Assign) else set()
        pending -= {n.value for n in walk(stmt) if isinstance(n, cst.Name) and id(n) not in targets}
        bound = set(assigned_names(small.targets[0].target)) & names if isinstance(small, cst.Assign) else set()
        if bound & pending:
            break
        pending |= bound
    if pending:
        raise Refused(f"what the loop body binds to `{sorted(pending)[0]}` is never read: the rewrite would drop "
                      "its computation unchecked")


def _empty_skip(stmt: cst.CSTNode, selected: set[str]) -> bool:
    """``if rows.numel() == 0: continue`` (``len(rows) == 0``, ``rows.shape[0] == 0``, ``not rows.numel()``)
    on an index tensor of the selection."""
    if not (isinstance(stmt, cst.If) and stmt.orelse is None and len(stmt.body.body) == 1 and
            isinstance(stmt.body.body[0], cst.SimpleStatementLine) and len(stmt.body.body[0].body) == 1 and
            isinstance(stmt.body.body[0].body[0], cst.Continue)):
        return False
    test = stmt.test
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        size = test.expression
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and \
            isinstance(test.comparisons[0].operator, cst.Equal) and _int(test.comparisons[0].comparator) == 0:
        size = test.left
    else:
        return False
    code = cst.Module([]).code_for_node(size).strip()
    return any(code in (f"{n}.numel()", f"len({n})", f"{n}.shape[0]", f"{n}.size(0)") for n in selected)


def _names_only(target: cst.BaseExpression) -> bool:
    return isinstance(target, cst.Name) or isinstance(target, (cst.Tuple, cst.List)) and \
        all(isinstance(e.value, cst.Name) for e in target.elements)


def _inline(expr: cst.BaseExpression, local: dict[str, cst.BaseExpression | None]) -> cst.BaseExpression:
    """``expr`` with the body's intermediate names replaced by what they hold (in parentheses)."""
    return expr.visit(_Inline(local))


class _Inline(VariableNames):
    """Replace variables by expressions."""

    def __init__(self, values: dict[str, cst.BaseExpression | None]) -> None:
        super().__init__()
        self.values = values

    def variable(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        inner = self.values.get(original_node.value)
        if inner is None:
            return updated_node
        if isinstance(inner, (cst.BinaryOperation, cst.UnaryOperation)) and not inner.lpar:
            inner = inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return inner


def _selected_mask(value: cst.BaseExpression, var: str, index_forms: set[str], kind: str | None, ctx) -> str:
    """The mask of ``torch.where(M[e])`` (``M[e].squeeze(0)`` for a row of ``nonzero()``)."""
    q = ctx.program.index.resolve_expr(value.func) if isinstance(value, cst.Call) else None
    if q != "torch.where" or len(value.args) != 1:
        raise Refused("the rows are not selected with `torch.where(mask[e])`")
    selected = value.args[0].value
    method = _method(selected)
    squeezed = method is not None and method[0] == "squeeze" and _ints(method[2].args[0].value if method[2].args
                                                                       else None) == [0]
    if squeezed:
        selected = method[1]
    if not (isinstance(selected, cst.Subscript) and isinstance(selected.value, cst.Name) and
            len(selected.slice) == 1 and isinstance(selected.slice[0].slice, cst.Index)):
        raise Refused("the rows are not selected with `torch.where(mask[e])`")
    index = ctx.code(selected.slice[0].slice.value).strip()
    if squeezed and kind == _ROW and index == var:
        return selected.value.value
    if not squeezed and index in index_forms:
        return selected.value.value
    raise Refused(f"`{ctx.code(value).strip()}` does not select one expert's slice of the mask")


@dataclass
class _Routing:
    top: str
    classes: str
    first_is_row: bool
    """``torch.where`` of the mask's slice gives the rows of ``top`` first (else its slots)."""


def _routing(mask: str, function: cst.FunctionDef, loop: cst.For, ctx) -> _Routing:
    """What the mask is: ``one_hot(top, num_classes=N).permute(...)`` with the class first."""
    assign = _assignment(mask, function, loop, ctx)
    value = assign.value if assign is not None else None
    method = _method(value) if value is not None else None
    if method is None or method[0] != "permute":
        raise Refused(f"`{mask}` is not `one_hot(...).permute(...)` of the routing, so which rows and slots its "
                      "slices select is not known")
    call = method[2]
    perm = _ints(call.args[0].value) if len(call.args) == 1 else [_int(a.value) for a in call.args]
    one_hot, at = _resolved(method[1], function, assign, ctx)
    q = ctx.program.index.resolve_expr(one_hot.func) if isinstance(one_hot, cst.Call) else None
    classes = None
    for a in one_hot.args if q == "torch.nn.functional.one_hot" else ():
        if a.keyword is not None and a.keyword.value == "num_classes" or \
                a.keyword is None and a is not one_hot.args[0]:
            classes = a.value
    if q != "torch.nn.functional.one_hot" or classes is None or _int(classes) == -1 or not _static(classes, ctx) \
            or not isinstance(one_hot.args[0].value, cst.Name):
        raise Refused(f"`{mask}` is not `F.one_hot(top, num_classes=N)` with `N` known while tracing")
    if perm is None or sorted(perm) != [0, 1, 2] or perm[0] != 2:
        raise Refused(f"`{mask}` is not the one-hot routing of rows and slots permuted with the expert first")
    top = one_hot.args[0].value.value
    if _assignment(top, function, at, ctx) is not _assignment(top, function, loop, ctx):
        raise Refused(f"`{top}` is assigned again between the mask and the loop")
    return _Routing(top, ctx.code(classes).strip(), perm[1] == 0)


class _Source:
    """The values written: arithmetic of the routing weights at the selected rows and slots, numbers,
    and one computation of each selected row on its own from the expert's parameters, which means the
    same per (row, slot) pair on the grid."""

    def __init__(self, body: _Body, rows: str, slots: str, function: cst.FunctionDef, ctx) -> None:
        self.body, self.rows, self.slots, self.function, self.ctx = body, rows, slots, function, ctx
        self.row: cst.BaseExpression | None = None
        """The computation of the selected rows (vmapped per pair)."""
        self.containers: dict[str, None] = {}
        """``self.experts`` whose entry at the index is called (code, in order)."""
        self.inputs: dict[str, None] = {}
        """``x`` of ``x[rows]``."""
        self.per_expert: dict[str, None] = {}
        """``self.w`` of ``self.w[e]``: a parameter with one entry per expert."""
        self._leaves: dict[int, tuple[str, str]] = {}
        """id of a leaf of the row computation -> (kind, code of what it reads)."""

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node).strip()

    def _bad(self, expr: cst.CSTNode, why: str) -> Refused:
        code = " ".join(self._code(expr).split())
        return Refused(f"`{code if len(code) <= 60 else code[:57] + '...'}` in the values written {why}")

    def _reads(self, expr: cst.CSTNode, names: set[str]) -> bool:
        return any(isinstance(n, cst.Name) and n.value in names for n in walk(expr))

    def _outside(self, expr: cst.CSTNode) -> bool:
        """Reads nothing the loop binds or writes (the loop reads ``out`` as its iterations update it)."""
        return not self._reads(expr, {self.rows, self.slots, self.body.var, self.body.out, *self.body.local})

    def _fixed_argument(self, expr: cst.CSTNode) -> bool:
        """A conversion's argument the loop does not change: reads nothing it binds, and of the tensor it
        writes only ``.dtype`` or ``.device``."""
        meta = {id(n.value) for n in walk(expr) if isinstance(n, cst.Attribute) and n.attr.value in ("dtype", "device")}
        loop = {self.rows, self.slots, self.body.var, *self.body.local}
        return not any(isinstance(n, cst.Name) and (n.value in loop or n.value == self.body.out and id(n) not in meta)
                       for n in walk(expr))

    def check(self, expr: cst.BaseExpression) -> None:
        if isinstance(expr, (cst.Integer, cst.Float)) or self._routing_weight(expr):
            return
        if not self._reads(expr, {self.slots}) and self._reads(expr, {self.rows, self.body.var}):
            if self.row is not None:
                raise self._bad(expr, "is a second computation of the rows (one is vmapped)")
            self._row(expr)
            self.row = expr
            return
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            self.check(expr.left)
            self.check(expr.right)
            return
        method = _method(expr)
        if method is not None and method[0] in _DTYPE_METHODS:
            if not all(self._fixed_argument(a.value) for a in method[2].args):
                raise self._bad(expr, "converts with an argument computed in the loop")
            self.check(method[1])
            return
        raise self._bad(expr, "is not a routing weight at the selected rows and slots, a computation of the rows, a "
                              "number, arithmetic or a dtype conversion of them")

    def _routing_weight(self, expr: cst.BaseExpression) -> bool:
        """``w[rows, slots, None]`` or ``w[rows, slots].unsqueeze(-1)`` of a tensor from outside."""
        method = _method(expr)
        if method is not None and method[0] == "unsqueeze" and len(method[2].args) == 1 and \
                _int(method[2].args[0].value) == -1:
            return self._indexed(method[1], extra=0)
        return self._indexed(expr, extra=1)

    def _indexed(self, expr: cst.BaseExpression, extra: int) -> bool:
        if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2 + extra:
            return False
        parts = [e.slice.value if isinstance(e.slice, cst.Index) else None for e in expr.slice]
        if not (isinstance(parts[0], cst.Name) and parts[0].value == self.rows and isinstance(parts[1], cst.Name)
                and parts[1].value == self.slots):
            return False
        if extra and not (isinstance(parts[2], cst.Name) and parts[2].value == "None"):
            return False
        return self._outside(expr.value)

    def _index_of(self, expr: cst.CSTNode) -> str | None:
        """The code of ``C[i]``'s index, when it is the loop's index."""
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            index = self._code(expr.slice[0].slice.value)
            if index in self.body.index_forms:
                return index
        return None

    def _row(self, expr: cst.BaseExpression) -> None:
        """``expr`` computes each selected row from that row alone (and the expert's parameters), so a
        ``vmap`` over single rows gives the rows of its result; Refused otherwise."""
        if isinstance(expr, (cst.Integer, cst.Float)):
            return
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
                and isinstance(expr.slice[0].slice.value, cst.Name) and expr.slice[0].slice.value.value == self.rows \
                and self._outside(expr.value):
            self._leaves[id(expr)] = ("input", self._code(expr.value))
            self.inputs[self._code(expr.value)] = None
            return
        if self._index_of(expr) is not None:
            raise self._bad(expr, "is an entry at the expert's index used other than as the weight of a layer "
                                  "(`F.linear`, a matrix product), whose shape is checked")
        if isinstance(expr, cst.Call) and self._index_of(expr.func) is not None and self._outside(expr.func.value):
            if len(expr.args) != 1 or expr.args[0].keyword is not None or expr.args[0].star:
                raise self._bad(expr, "calls an expert with other than one input")
            _check_experts(expr.func.value, self.function, self.ctx)
            self._row(expr.args[0].value)
            self._leaves[id(expr)] = ("expert", self._code(expr.func.value))
            self.containers[self._code(expr.func.value)] = None
            return
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            self._row(expr.expression)
            return
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            self._row(expr.left)
            self._row(expr.right)
            return
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
            self._row(expr.left)
            self._weight(expr.right, expr)
            return
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
                and _int(expr.slice[0].slice.value) is not None and self._last_dim_split(expr.value):
            return
        method = _method(expr)
        if method is not None and (method[0] in _DTYPE_METHODS or method[0] in _ELEMENTWISE_METHODS and
                                   not method[2].args):
            if not all(self._fixed_argument(a.value) for a in method[2].args):
                raise self._bad(expr, "converts with an argument computed in the loop")
            self._row(method[1])
            return
        q = self.ctx.program.index.resolve_expr(expr.func) if isinstance(expr, cst.Call) else None
        positional = [a.value for a in expr.args if a.keyword is None and not a.star] \
            if isinstance(expr, cst.Call) else []
        if q in _ELEMENTWISE_FUNCTIONS and positional and \
                all(isinstance(a.value, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)) and
                    self._outside(a.value) for a in expr.args[1:]):
            self._row(positional[0])
            return
        if q in ("torch.nn.functional.linear", "torch.matmul") and len(positional) in (2, 3) and \
                len(expr.args) == len(positional):
            self._row(positional[0])
            for weight in positional[1:]:
                self._weight(weight, expr)
            return
        raise self._bad(expr, "is not a layer, an elementwise function or arithmetic of the selected rows: each row "
                              "is not known to be computed on its own")

    def _weight(self, expr: cst.BaseExpression, where: cst.CSTNode) -> None:
        """The weight of a matrix product: the expert's entry of a parameter."""
        if self._index_of(expr) is not None and self._outside(expr.value) and \
                _tensor_attribute(expr.value, self.function, self.ctx):
            self._leaves[id(expr)] = ("weight", self._code(expr.value))
            self.per_expert[self._code(expr.value)] = None
            return
        raise self._bad(where, "multiplies by a matrix that is not the expert's entry of a parameter")

    def _last_dim_split(self, expr: cst.BaseExpression) -> bool:
        """``r.chunk(n, dim=-1)`` / ``torch.chunk(r, n, -1)`` of a row computation."""
        method = _method(expr)
        q = self.ctx.program.index.resolve_expr(expr.func) if isinstance(expr, cst.Call) else None
        if method is not None and method[0] == "chunk":
            receiver, args = method[1], list(method[2].args)
        elif q == "torch.chunk" and expr.args:
            receiver, args = expr.args[0].value, list(expr.args[1:])
        else:
            return False
        dims = [a.value for a in args if a.keyword is not None and a.keyword.value == "dim"] + \
            [a.value for a in args if a.keyword is None][1:2]
        if len(args) != 2 or len(dims) != 1 or _int(dims[0]) != -1:
            raise self._bad(expr, "splits the rows along a dimension other than the last")
        self._row(receiver)
        return True

    def per_pair(self, names: dict[str, str], torch: str) -> str:
        """The code of the row computation for one (row, slot) pair, its leaves read from ``names``."""
        leaves = self._leaves

        class _Pair(cst.CSTTransformer):
            def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
                kind = leaves.get(id(original))
                return cst.Name(names[kind[1]]) if kind is not None else updated

            def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
                kind = leaves.get(id(original))
                if kind is None:
                    return updated
                return cst.parse_expression(
                    f"{torch}.func.functional_call({kind[1]}[0], {names[kind[1]]}, "
                    f"({cst.Module([]).code_for_node(updated.args[0].value)},))")

        assert self.row is not None
        return self._code(self.row.visit(_Pair()))

    def rewrite(self, expr: cst.BaseExpression, names: dict[str, str], output: str) -> str:
        """The code of ``expr`` on the grid: the row computation -> ``output``, rows and slots -> the grid's."""
        row = self.row

        class _Output(cst.CSTTransformer):
            def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
                return cst.Name(output) if original is row else updated

        return self._code(rename(expr.visit(_Output()), names))


def _tensor_attribute(expr: cst.BaseExpression, function: cst.FunctionDef, ctx) -> bool:
    """``self.<attr>`` that ``__init__`` alone sets, to ``nn.Parameter(...)`` or a tensor factory."""
    cls = ctx.parent(ctx.parent(function))
    params = [*function.params.posonly_params, *function.params.params]
    if not (isinstance(cls, cst.ClassDef) and params and isinstance(expr, cst.Attribute) and
            isinstance(expr.value, cst.Name) and expr.value.value == params[0].name.value):
        return False
    values = _attribute_values(cls, expr.attr.value)
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return False
    q = ctx.program.index.resolve_expr(values[0].func)
    return q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter") or q in _FILLED


# --- the experts: one structure, row by row ------------------------------------------------------
def _check_experts(container: cst.BaseExpression, function: cst.FunctionDef, ctx) -> None:
    """``self.<attr>`` that ``__init__`` sets once to ``nn.ModuleList`` of one constructor called the
    same way for each entry, the constructor a row-wise module (Refused otherwise)."""
    cls = ctx.parent(ctx.parent(function))
    params = [*function.params.posonly_params, *function.params.params]
    if not (isinstance(cls, cst.ClassDef) and params and isinstance(container, cst.Attribute) and
            isinstance(container.value, cst.Name) and container.value.value == params[0].name.value):
        raise Refused(f"`{ctx.code(container).strip()}` is not an attribute of the module whose method holds the "
                      "loop, so what its experts are is not known")
    values = _attribute_values(cls, container.attr.value)
    if len(values) != 1 or values[0] is None:
        raise Refused(f"`{ctx.code(container).strip()}` is not set once, in `__init__`")
    value = values[0]
    index = ctx.program.index
    q = index.resolve_expr(value.func) if isinstance(value, cst.Call) else None
    first = value.args[0].value if q == "torch.nn.ModuleList" and len(value.args) == 1 else None
    if not isinstance(first, (cst.GeneratorExp, cst.ListComp)) or first.for_in.inner_for_in is not None or \
            first.for_in.ifs or not isinstance(first.elt, cst.Call):
        raise Refused(f"`{ctx.code(container).strip()}` is not `nn.ModuleList(<one constructor> for _ in ...)`: its "
                      "experts are not known to share one structure")
    bound = set(assigned_names(first.for_in.target))
    if any(isinstance(n, cst.Name) and n.value in bound for n in walk(first.elt)):
        raise Refused(f"the experts of `{ctx.code(container).strip()}` are made with arguments that change from "
                      "one to the next")
    _row_wise(first.elt.func, ctx, 0)


def _attribute_values(cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression | None]:
    """What the class's methods assign to ``self.<attr>`` (None: outside ``__init__`` or augmented)."""
    out: list[cst.BaseExpression | None] = []
    for method in cls.body.body:
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


def _row_wise(constructor: cst.BaseExpression, ctx, depth: int) -> None:
    """The module ``constructor`` makes maps each row of its input on its own and holds parameters only
    in ``nn.Linear`` layers: ``nn.Linear`` itself, or a module class of this file whose ``__init__``
    makes only such layers and elementwise activations and whose ``forward`` composes them with
    elementwise functions and arithmetic."""
    index = ctx.program.index
    q = index.resolve_expr(constructor)
    code = cst.Module([]).code_for_node(constructor).strip()
    if q == "torch.nn.Linear" or q in _ELEMENTWISE_MODULES:
        return
    cls = index.classes.get(code) if isinstance(constructor, cst.Name) else None
    if cls is None or depth > 3 or not cls.is_module:
        raise Refused(f"`{code}` is not `nn.Linear` nor a module class of this file made of linear layers and "
                      "elementwise activations: applying one expert to each row alone may differ")
    init, forward = cls.methods.get("__init__"), cls.methods.get("forward")
    if init is None or forward is None or cls.base_classes or len(cls.methods) != 2:
        raise Refused(f"`{code}` has methods or base classes besides `__init__` and `forward`")
    me = forward.node.params.params[0].name.value if forward.node.params.params else None
    subs = set()
    for stmt in walk(init.node, into_scopes=False):
        if isinstance(stmt, cst.Assign):
            for t in stmt.targets:
                if isinstance(t.target, cst.Attribute):
                    value = stmt.value
                    if not isinstance(value, cst.Call):
                        if any(isinstance(n, cst.Call) for n in walk(value)):
                            raise Refused(f"`{code}.__init__` sets `{t.target.attr.value}` to a computed value")
                        continue
                    _row_wise(value.func, ctx, depth + 1)
                    subs.add(t.target.attr.value)
        elif isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
            raise Refused(f"`{code}.__init__` holds `{ctx.code(stmt).strip()}`")
    params = forward.node.params
    if len(params.params) != 2 or params.posonly_params or params.kwonly_params or \
            isinstance(params.star_arg, (cst.Param, cst.ParamStar)) or params.star_kwarg is not None:
        raise Refused(f"`{code}.forward` does not take one input")
    known = {params.params[1].name.value}
    for stmt in forward.node.body.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            _elementwise(small.value, known, subs, me, ctx, code)
            known.add(small.targets[0].target.value)
        elif isinstance(small, cst.Return) and small.value is not None and stmt is forward.node.body.body[-1]:
            _elementwise(small.value, known, subs, me, ctx, code)
        else:
            raise Refused(f"`{code}.forward` holds a statement other than assignments to names and a return")


def _elementwise(expr: cst.BaseExpression, known: set[str], subs: set[str], me: str | None, ctx, where: str) -> None:
    """``expr`` computes each row from the same row: layers of the module, elementwise functions and
    arithmetic of the input and names computed so."""
    if isinstance(expr, cst.Name) and expr.value in known or isinstance(expr, (cst.Integer, cst.Float)):
        return
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        _elementwise(expr.left, known, subs, me, ctx, where)
        _elementwise(expr.right, known, subs, me, ctx, where)
        return
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        _elementwise(expr.expression, known, subs, me, ctx, where)
        return
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star:
        func = expr.func
        layer = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == me and \
            func.attr.value in subs
        if layer or ctx.program.index.resolve_expr(func) in _ELEMENTWISE_FUNCTIONS:
            _elementwise(expr.args[0].value, known, subs, me, ctx, where)
            return
    raise Refused(f"`{where}.forward` computes `{cst.Module([]).code_for_node(expr).strip()}`, which is not a layer, "
                  "an elementwise function or arithmetic of its input")
