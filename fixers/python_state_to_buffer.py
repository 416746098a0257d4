"""A Python number changed in ``forward`` (DYN203 ``python-attribute-mutation``) -> a tensor buffer updated in
place.

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
place, so nothing recompiles.  ``persistent=False`` keeps the state_dict
unchanged: checkpoints saved before the fix still load with ``strict=True``, and
the value is not saved in checkpoints, as the Python attribute was not.  ``x = max(c, expr)``-style updates become
``x.copy_(torch.clamp(expr, min=c))``.

Proves, or refuses: the attribute starts as an ``int`` (literal, or a parameter
whose default is one) and every update keeps it an ``int`` (integer literals,
sizes, ``+ - *`` and ``max``/``min``): an ``int64`` buffer is left alone by
``.half()``/``.to(dtype)`` and keeps integer arithmetic, where a float buffer
would be cast to half precision and ``fill_(0.5)`` into an int buffer would
store 0 (floats are refused); every read of the attribute in compiled code is
arithmetic with a tensor (never a plain alias such as ``saved = self.steps``,
which would then follow the in-place updates); nothing outside ``__init__`` and
compiled code touches it.

Unsafe, because it changes module state code outside the compiled functions can
observe, and its message says so (hazards): code elsewhere (a training loop,
another file) that reads the attribute now sees a 0-d tensor instead of a
Python number; the module gains a buffer, non-persistent, so ``state_dict()``
is unchanged, but it is listed by ``buffers()`` and ``named_buffers()`` (code
that walks them - an EMA of buffers, a custom initialiser - meets it), moved by
``.to(device)`` and broadcast from rank 0 by ``DistributedDataParallel``
(``broadcast_buffers=True``); a module built on the meta device and materialised with
``to_empty()`` holds garbage in it until it is set again; ``AveragedModel(...,
use_buffers=True)`` averages it.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import AttributeEvent
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import number_dtype, use_torch

_INPLACE = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_"}


@register
class PythonStateToBuffer(Fixer):
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

                class Warmup(nn.Module):
                    def __init__(self, warmup=3):
                        super().__init__()
                        self.remaining = warmup

                    def forward(self, q):
                        scale = 1.0 / (1 + self.remaining * q.abs().mean())
                        self.remaining = max(0, self.remaining - 1)
                        return q * scale
            """,
            after="""
                import torch
                import torch.nn as nn

                class Warmup(nn.Module):
                    def __init__(self, warmup=3):
                        super().__init__()
                        self.register_buffer("remaining", torch.tensor(warmup, dtype=torch.long), persistent=False)

                    def forward(self, q):
                        scale = 1.0 / (1 + self.remaining * q.abs().mean())
                        self.remaining.copy_(torch.clamp(self.remaining - 1, min=0))
                        return q * scale
            """,
            target="Warmup",
            inputs="[(torch.randn(6),) for _ in range(5)]",
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
        plan = FixPlan(f"keep `self.{attr}` in a tensor buffer updated in place: {changes(attr)}", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        init_stmt, buffer = _buffer_from_init(cls, attr, ctx, torch)
        update = _update(stmt, target, attr, ctx, torch)
        _check_reads(attr, stmt, cls, ctx)
        plan.replace(init_stmt, init_stmt.with_changes(body=[buffer]))
        return plan.replace(stmt, update)


def changes(attr: str) -> str:
    """What the rewrite changes in the module, as code outside the compiled functions sees it (the fix
    is offered as unsafe with this said: it changes observable module state)."""
    return (f"the module gains the non-persistent buffer `{attr}` (listed by buffers()/named_buffers(), "
            "moved by .to(device), broadcast by DistributedDataParallel; state_dict() unchanged) and code "
            f"outside compiled functions reading `self.{attr}` sees a 0-d int64 tensor, not a Python int")


def _buffer_from_init(cls: cst.ClassDef, attr: str, ctx, torch: str) -> tuple[cst.SimpleStatementLine, cst.Expr]:
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None:
        raise Refused("the class has no __init__ that sets the attribute")
    found = None
    super_seen = False
    for line in init.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        code = ctx.code(line)
        if "super(" in code and "__init__" in code:
            super_seen = True
        for small in line.body:
            targets = _targets(small)
            if any(isinstance(t, cst.Attribute) and t.attr.value == attr for t in targets):
                if found is not None or len(line.body) != 1 or len(targets) != 1 or not super_seen:
                    raise Refused("__init__ sets the attribute more than once, or before super().__init__()")
                found = (line, small)
    if found is None:
        raise Refused("__init__ does not set the attribute in a statement of its own body "
                      "(`self.x = ...` or `self.x: T = ...`, not in a block or a loop)")
    line, assign = found
    dtype = _number_type(assign.value, init)
    if dtype != "long":
        raise Refused(f"the attribute does not start as an int (it starts as `{ctx.code(assign.value).strip()}`; "
                      "a float buffer would be cast by .half()/.to(dtype))")
    value = ctx.code(assign.value).strip()
    buffer = cst.Expr(cst.parse_expression(
        f'self.register_buffer("{attr}", {torch}.tensor({value}, dtype={torch}.{dtype}), persistent=False)'))
    return line, buffer


def _targets(small: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a small statement assigns: ``self.x = ...`` and ``self.x: int = ...`` (an annotation
    without a value sets nothing)."""
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets]
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return [small.target]
    return []


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
        _check_int(stmt.value, attr, ctx)
        method = _INPLACE[type(stmt.operator)]
        return cst.Expr(cst.parse_expression(f"self.{attr}.{method}({ctx.code(stmt.value).strip()})"))
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and stmt.targets[0].target is target:
        value = stmt.value
        if not any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(value)):
            raise Refused("the new value is not computed from the previous one")
        _check_int(value, attr, ctx)
        return cst.Expr(cst.parse_expression(f"self.{attr}.copy_({_tensor_expr(value, attr, ctx, torch)})"))
    raise Refused("the update is not `+=`, `-=`, `*=` or an assignment")


def _check_int(value: cst.BaseExpression, attr: str, ctx) -> None:
    """The update keeps an int: integer literals, sizes, the attribute itself, ``+ - *`` and max/min."""
    for n in walk(value):
        if isinstance(n, (cst.Float, cst.Imaginary)) or isinstance(n, cst.BinaryOperation) and not isinstance(
                n.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            raise Refused(f"`{ctx.code(value).strip()}` may not be an int (an int64 buffer would truncate it)")
    leaves = [n for n in walk(value) if isinstance(n, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
              and not (isinstance(n, cst.Name) and n.value in ("max", "min"))]
    for leaf in leaves:
        if isinstance(leaf, cst.Attribute) and leaf.attr.value == attr:
            continue
        if isinstance(leaf, cst.Name) and isinstance(ctx.parent(leaf), cst.Attribute):
            continue  # part of an attribute chain
        if isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Name) and leaf.func.value in ("max", "min"):
            continue
        v = ctx.value(leaf)
        if v is None or v.kind is not Kind.SIZE:
            raise Refused(f"`{ctx.code(leaf).strip()}` is not known to be an int")


def _tensor_expr(value: cst.BaseExpression, attr: str, ctx, torch: str) -> str:
    """The update expression with ``max(c, e)``/``min(c, e)`` (e using the attribute) as ``torch.clamp``."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("max", "min") \
            and len(value.args) == 2 and value.func.value not in ctx.program.index.functions:
        uses = [any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(a.value)) for a in value.args]
        if uses.count(True) != 1:
            raise Refused("max/min does not read the attribute exactly once")
        inner = value.args[uses.index(True)].value
        other = value.args[uses.index(False)].value
        bound = "min" if value.func.value == "max" else "max"
        return f"{torch}.clamp({_tensor_expr(inner, attr, ctx, torch)}, {bound}={ctx.code(other).strip()})"
    if isinstance(value, cst.Call):
        raise Refused(f"`{ctx.code(value).strip()}` is a call the update cannot carry over")
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
            raise Refused(f"`self.{attr}` is read other than in arithmetic with a tensor")
    compiled = {id(f.node) for f in ctx.program.compiled}
    for node in walk(ctx.module):
        if isinstance(node, cst.Attribute) and node.attr.value == attr:
            fn = ctx.enclosing_function(node)
            if fn is None or (fn.name.value != "__init__" and id(fn) not in compiled):
                raise Refused(f"`self.{attr}` is used outside __init__ and compiled code")
