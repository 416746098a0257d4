"""A Python number changed in ``forward`` -> a tensor buffer updated in place.

Before::

    def __init__(self):
        ...
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        ...

After::

    def __init__(self):
        ...
        self.register_buffer("steps", torch.tensor(0, dtype=torch.long), persistent=False)

    def forward(self, x):
        self.steps.add_(1)
        ...

Dynamo guards on Python numbers stored on modules, so a counter bumped in
``forward`` recompiles on every call; a buffer is a graph input updated in
place, so nothing recompiles.  Floats are kept in float64 so the arithmetic
matches Python's; ``persistent=False`` keeps the state_dict unchanged.
``x = max(c, expr)``-style updates become ``x.copy_(torch.clamp(expr, min=c))``.
Applied only when every read of the attribute in compiled code is arithmetic with
a tensor and nothing outside ``__init__`` and compiled code touches it.  Unsafe:
code elsewhere (a training loop, another file) that reads the attribute now sees
a 0-d tensor instead of a Python number.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import AttributeEvent
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.base import FixExample, FixPlan, Fixer, register
from dynalint.fixers.codegen import number_dtype, torch_name

_INPLACE = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_"}


class _Refused(Exception):
    pass


@register
class CounterToBuffer(Fixer):
    name = "python-state-to-buffer"
    codes = ("DYN203",)
    safety = "unsafe"
    summary = "Keep a Python counter or schedule changed in `forward` in a tensor buffer updated in place."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Policy(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 2)
                        self.calls = 0

                    def forward(self, x):
                        self.calls += 1
                        return self.fc(x) * 2
            """,
            after="""
                import torch
                import torch.nn as nn

                class Policy(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 2)
                        self.register_buffer("calls", torch.tensor(0, dtype=torch.long), persistent=False)

                    def forward(self, x):
                        self.calls.add_(1)
                        return self.fc(x) * 2
            """,
            target="Policy",
            inputs="[(torch.randn(2, 4),)] * 4",
            expect="fewer-recompiles",
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Explore(nn.Module):
                    def __init__(self, eps_start=1.0, eps_min=0.05, decay=0.5):
                        super().__init__()
                        self.epsilon = eps_start
                        self.eps_min = eps_min
                        self.decay = decay

                    def forward(self, q, noise):
                        explore = noise < self.epsilon
                        self.epsilon = max(self.eps_min, self.epsilon * self.decay)
                        return torch.where(explore, torch.zeros_like(q), q)
            """,
            after="""
                import torch
                import torch.nn as nn

                class Explore(nn.Module):
                    def __init__(self, eps_start=1.0, eps_min=0.05, decay=0.5):
                        super().__init__()
                        self.register_buffer("epsilon", torch.tensor(eps_start, dtype=torch.float64), persistent=False)
                        self.eps_min = eps_min
                        self.decay = decay

                    def forward(self, q, noise):
                        explore = noise < self.epsilon
                        self.epsilon.copy_(torch.clamp(self.epsilon * self.decay, min=self.eps_min))
                        return torch.where(explore, torch.zeros_like(q), q)
            """,
            target="Explore",
            inputs="[(torch.randn(6), torch.rand(6)) for _ in range(4)]",
            expect="fewer-recompiles",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        target = finding.node
        stmt = finding.statement
        if not isinstance(target, cst.Attribute):
            return None
        attr = target.attr.value
        fn = ctx.enclosing_function(stmt)
        cls = ctx.parent(ctx.parent(fn)) if fn is not None else None
        if not isinstance(cls, cst.ClassDef):
            return None
        info = ctx.program.index.classes.get(cls.name.value)
        if info is None or info.node is not cls or not info.is_module:
            return None  # only an nn.Module has register_buffer
        torch = torch_name(ctx) or "torch"
        try:
            init_stmt, buffer = _buffer_from_init(cls, attr, ctx, torch)
            update = _update(stmt, target, attr, ctx, torch)
            _check_reads(attr, stmt, cls, ctx)
        except _Refused:
            return None
        plan = FixPlan(f"keep `self.{attr}` in a tensor buffer updated in place (code outside compiled "
                       "functions now sees a 0-d tensor)", "unsafe")
        if torch_name(ctx) is None:
            plan.imports.append("import torch")
        plan.replace(init_stmt, init_stmt.with_changes(body=[buffer]))
        return plan.replace(stmt, update)


def _buffer_from_init(cls: cst.ClassDef, attr: str, ctx, torch: str) -> tuple[cst.SimpleStatementLine, cst.Expr]:
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        raise _Refused
    found = None
    super_seen = False
    for line in init.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        code = ctx.code(line)
        if "super(" in code and "__init__" in code:
            super_seen = True
        for small in line.body:
            if isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Attribute) and t.target.attr.value == attr for t in small.targets):
                if found is not None or len(line.body) != 1 or len(small.targets) != 1 or not super_seen:
                    raise _Refused
                found = (line, small)
    if found is None:
        raise _Refused
    line, assign = found
    dtype = _number_type(assign.value, init)
    if dtype is None:
        raise _Refused
    value = ctx.code(assign.value).strip()
    buffer = cst.Expr(cst.parse_expression(
        f'self.register_buffer("{attr}", {torch}.tensor({value}, dtype={torch}.{dtype}), persistent=False)'))
    return line, buffer


def _number_type(value: cst.BaseExpression, init: cst.FunctionDef) -> str | None:
    """``long`` or ``float64`` when the initial value is an int or float literal (or a parameter
    whose default is one)."""
    name = value.expression if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
        else value
    if isinstance(name, cst.Name):
        for p in (*init.params.params, *init.params.kwonly_params):
            if p.name.value == name.value and p.default is not None:
                return number_dtype(p.default)
        return None
    return number_dtype(value)


def _update(stmt: cst.CSTNode, target: cst.Attribute, attr: str, ctx, torch: str) -> cst.CSTNode:
    if isinstance(stmt, cst.AugAssign) and stmt.target is target and type(stmt.operator) in _INPLACE:
        v = ctx.value(stmt.value)
        if v is None or v.kind not in (Kind.PYTHON, Kind.TENSOR, Kind.SIZE):
            raise _Refused
        method = _INPLACE[type(stmt.operator)]
        return cst.Expr(cst.parse_expression(f"self.{attr}.{method}({ctx.code(stmt.value).strip()})"))
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and stmt.targets[0].target is target:
        value = stmt.value
        if not any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(value)):
            raise _Refused  # not computed from its previous value: not a schedule
        return cst.Expr(cst.parse_expression(f"self.{attr}.copy_({_tensor_expr(value, attr, ctx, torch)})"))
    raise _Refused


def _tensor_expr(value: cst.BaseExpression, attr: str, ctx, torch: str) -> str:
    """The update expression with ``max(c, e)``/``min(c, e)`` (e using the attribute) as ``torch.clamp``."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("max", "min") \
            and len(value.args) == 2 and value.func.value not in ctx.program.index.functions:
        uses = [any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(a.value)) for a in value.args]
        if uses.count(True) != 1:
            raise _Refused
        inner = value.args[uses.index(True)].value
        other = value.args[uses.index(False)].value
        bound = "min" if value.func.value == "max" else "max"
        return f"{torch}.clamp({_tensor_expr(inner, attr, ctx, torch)}, {bound}={ctx.code(other).strip()})"
    if isinstance(value, cst.Call):
        raise _Refused
    return ctx.code(value).strip()


def _check_reads(attr: str, update: cst.CSTNode, cls: cst.ClassDef, ctx) -> None:
    """Every read in compiled code is arithmetic with a tensor; nothing else in the file touches it."""
    update_nodes = {id(n) for n in walk(update)}
    for ev in ctx.program.events:
        if not isinstance(ev, AttributeEvent) or ev.name != attr or ev.write or id(ev.node) in update_nodes:
            continue
        parent = ctx.parent(ev.node)
        if isinstance(parent, cst.ComparisonTarget):
            parent = ctx.parent(parent)
        v = ctx.value(parent) if isinstance(parent, (cst.BinaryOperation, cst.Comparison)) else None
        if v is None or v.kind is not Kind.TENSOR:
            raise _Refused
    compiled = {id(f.node) for f in ctx.program.compiled}
    for node in walk(ctx.module):
        if isinstance(node, cst.Attribute) and node.attr.value == attr:
            fn = ctx.enclosing_function(node)
            if fn is None or (fn.name.value != "__init__" and id(fn) not in compiled):
                raise _Refused

