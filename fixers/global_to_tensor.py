"""A module-level number that setters rebind (DYN201 ``mutable-global-read``) -> a 0-d tensor updated in
place.

Before::

    drop_rate = 0.0

    def set_drop_rate(rate: float):
        global drop_rate
        drop_rate = rate

    class Block(nn.Module):
        def forward(self, x):
            return x * (1.0 - drop_rate)

After::

    drop_rate = torch.tensor(0.0, dtype=torch.float64)

    def set_drop_rate(rate: float):
        global drop_rate
        drop_rate.fill_(rate)

    class Block(nn.Module):
        def forward(self, x):
            return x * (1.0 - drop_rate)

Dynamo bakes a Python global into the graph and guards on its value, so each
new value recompiles.  A tensor global is a graph input instead: updating it in
place changes the data, not the object, and nothing recompiles.  Floats are
kept in float64 (ints in int64) so arithmetic matches Python's.

Proves, or refuses: the global starts as a number literal; every change is an
assignment or augmented assignment in a function declaring it ``global``; every
value stored is provably a number of the global's kind: an ``int`` global only
integers (literals, ``int(...)``, sizes, a parameter annotated ``int``:
``fill_(0.5)`` into an int64 tensor would store 0), a ``float`` global only numbers (literals, ``float(...)``,
``int(...)``, a parameter annotated ``float`` or ``int``, arithmetic on those: a
setter given a tensor would copy its value and drop its graph); every read in
compiled code ends in tensor arithmetic, never a plain alias (``saved = rate``
would follow the in-place updates, and ``rate = saved`` would restore nothing),
and no code reaches it through another name (``globals()``, ``setattr``, the
module object);
nothing outside compiled code in the file reads it, and no other file of the
run that imports the module names it.

Unsafe (hazards): code outside the files of the run that imports the module
and reads the global now sees a 0-d tensor instead of a Python number; a
setter parameter annotated ``float`` or ``int`` is trusted to be given one; a 0-d float
tensor (a loss) combined with a float64 global is promoted to float64, where
the Python float kept its dtype.
"""
from __future__ import annotations

import re

import libcst as cst

from dynalint.analysis.events import GlobalReadEvent
from dynalint.analysis.syntax import root_name, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import is_variable, number_dtype, use_torch
from dynalint.fixers.support.tensor_flow import NotTensorFlow, check_flows_into_tensors, code_of, compose_rewrites

_INPLACE = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_"}


@register
class GlobalToTensor(Fixer):
    name = "global-to-tensor"
    codes = ("DYN201",)
    safety = "unsafe"
    summary = "Keep a module-level number that setters change in a 0-d tensor updated in place."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                drop_rate = 0.0

                def set_drop_rate(rate: float):
                    global drop_rate
                    drop_rate = rate

                class Block(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 4)

                    def forward(self, x):
                        keep = 1.0 - drop_rate
                        return x + self.fc(x) * keep
            """,
            after="""
                import torch
                import torch.nn as nn

                drop_rate = torch.tensor(0.0, dtype=torch.float64)

                def set_drop_rate(rate: float):
                    global drop_rate
                    drop_rate.fill_(rate)

                class Block(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 4)

                    def forward(self, x):
                        keep = 1.0 - drop_rate
                        return x + self.fc(x) * keep
            """,
            target="Block",
            inputs="[(torch.randn(2, 4),)] * 4",
            between_calls="set_drop_rate(0.1 * i)",
            expect="fewer-recompiles",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        read = finding.node
        if not isinstance(read, cst.Name):
            return None
        name = read.value
        definition = _definition(name, ctx)
        if definition is None:
            return None
        line, assign, dtype = definition
        plan = FixPlan(f"keep `{name}` in a 0-d tensor updated in place (code outside compiled functions now "
                       "sees a tensor)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        rewrites: dict = {}
        try:
            writes = _writes(name, ctx)
            _check_reads(name, writes, ctx, torch, rewrites)
        except NotTensorFlow:
            return None
        for stmt, _ in writes:
            if dtype == "long" and not _int_valued(stmt.value, ctx):
                raise Refused(f"`{name}` starts as an int and `{code_of(stmt)}` may store a float "
                              "(an int64 tensor would truncate it)")
            if dtype != "long" and not _number_valued(stmt.value, ctx):
                raise Refused(f"`{code_of(stmt)}` may store something other than a Python number (a tensor "
                              "would be copied and its graph dropped): annotate the setter's parameter `float`")
        other = _rebound_otherwise(name, ctx)
        if other is not None:
            raise Refused(f"`{other}` may save or rebind `{name}` through another name (the in-place updates "
                          "would not reach it)")
        reader = _reader_elsewhere(name, ctx)
        if reader is not None:
            raise Refused(f"`{name}` is named in {reader}, which imports this module: it would see a tensor")
        value = code_of(assign.value)
        plan.replace(line, line.with_changes(body=[assign.with_changes(
            value=cst.parse_expression(f"{torch}.tensor({value}, dtype={torch}.{dtype})"))]))
        for stmt, new in writes:
            plan.replace(stmt, new)
        return compose_rewrites(plan, rewrites, ctx) if rewrites else plan


def _int_valued(value: cst.BaseExpression, ctx) -> bool:
    """An integer literal, ``int(...)``, a size, or a parameter annotated ``int``: what an int64 tensor
    stores exactly."""
    if number_dtype(value) == "long":
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "int" \
            and "int" not in ctx.program.index.functions:
        return True
    v = ctx.value(value)
    return v is not None and v.kind is Kind.SIZE or _annotated(value, ctx) == "int"


def _annotated(value: cst.BaseExpression, ctx) -> str | None:
    """The annotation of the enclosing function's parameter ``value`` names (``float``), if any."""
    if not isinstance(value, cst.Name):
        return None
    function = ctx.enclosing_function(value)
    p = function.params if function is not None else None
    params = [*p.posonly_params, *p.params, *p.kwonly_params] if p is not None else []
    param = next((x for x in params if x.name.value == value.value), None)
    return code_of(param.annotation.annotation) if param is not None and param.annotation is not None else None


def _number_valued(value: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """A Python number for certain: a literal, ``float(...)``/``int(...)``, a size, a parameter annotated
    ``float``/``int``, or arithmetic on those."""
    if _int_valued(value, ctx) or number_dtype(value) is not None:
        return True
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "float" \
            and "float" not in ctx.program.index.functions:
        return True
    if isinstance(value, cst.UnaryOperation) and depth < 8:
        return _number_valued(value.expression, ctx, depth + 1)
    if isinstance(value, cst.BinaryOperation) and depth < 8:
        return _number_valued(value.left, ctx, depth + 1) and _number_valued(value.right, ctx, depth + 1)
    return _annotated(value, ctx) in ("float", "int")


def _rebound_otherwise(name: str, ctx) -> str | None:
    """Code that can reach the global other than by its name: ``globals()``/``vars()``, ``setattr``
    or ``getattr`` with its name, an attribute of that name stored on something other than ``self``
    (the module object from ``sys.modules``)."""
    for n in walk(ctx.module):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            if n.func.value in ("globals", "vars") and n.func.value not in ctx.program.index.functions:
                return code_of(n)
            if n.func.value in ("setattr", "getattr") and any(
                    isinstance(a.value, cst.SimpleString) and a.value.evaluated_value == name for a in n.args):
                return code_of(n)
        if isinstance(n, cst.Attribute) and n.attr.value == name and isinstance(ctx.parent(n), cst.AssignTarget) \
                and not (isinstance(n.value, cst.Name) and n.value.value in ("self", "cls")):
            return code_of(n)
    return None


def _reader_elsewhere(name: str, ctx) -> str | None:
    """Another file of the run that imports this module and names the global (it may read it)."""
    project, module = ctx.program.project, ctx.program.index.name
    if project is None or not module:
        return None
    word = re.compile(rf"\b{re.escape(name)}\b")
    for other, deps in project.import_graph().items():
        if module in deps and other != module:
            path = project.paths.get(other)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if word.search(fh.read()):
                        return path
            except (OSError, TypeError):
                continue
    return None


def _definition(name: str, ctx):
    """The one top-level ``name = <number>`` statement, with the tensor dtype to use."""
    found = None
    for line in ctx.module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            if any(isinstance(n, cst.Name) and n.value == name and isinstance(ctx.parent(n), cst.AssignTarget)
                   for n in walk(line) if not isinstance(line, (cst.FunctionDef, cst.ClassDef))):
                return None
            continue
        for small in line.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    if found is not None or not isinstance(small, cst.Assign) or len(small.targets) != 1 \
                            or len(line.body) != 1:
                        return None
                    found = (line, small)
    if found is None:
        return None
    dtype = number_dtype(found[1].value)
    return (*found, dtype) if dtype is not None else None


def _writes(name: str, ctx) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """Every change of the global, as (statement, in-place replacement)."""
    out = []
    for fn in ctx.program.index.all_functions:
        for n in walk(fn.node.body):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name) \
                    and n.func.value.value == name and n.func.attr.value not in ("fill_", "add_", "sub_", "mul_",
                                                                                    "copy_"):
                if name not in fn.local_names:
                    raise NotTensorFlow  # a method call on the global (append, update...)
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Name) and n.value.value == name \
                    and name not in fn.local_names:
                raise Refused(f"`{code_of(n)}` aliases the global (it would follow the in-place updates)")
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [
                    getattr(n, "target", None)]
                hits = [t for t in targets if isinstance(t, cst.Name) and t.value == name]
                touches = any(isinstance(t, (cst.Subscript, cst.Attribute)) and root_name(t) == name
                              for t in targets)
                if touches and name not in fn.local_names:
                    raise NotTensorFlow
                if not hits:
                    continue
                if name not in fn.global_decls:
                    continue  # a local of the same name
                if isinstance(n, cst.Assign) and len(n.targets) == 1:
                    out.append((n, cst.Expr(cst.parse_expression(f"{name}.fill_({code_of(n.value)})"))))
                elif isinstance(n, cst.AugAssign) and type(n.operator) in _INPLACE:
                    out.append((n, cst.Expr(cst.parse_expression(
                        f"{name}.{_INPLACE[type(n.operator)]}({code_of(n.value)})"))))
                else:
                    raise NotTensorFlow
    return out


def _check_reads(name: str, writes, ctx, torch: str, rewrites) -> None:
    """Reads in compiled code end in tensor arithmetic; nothing else in the file reads it."""
    compiled = {id(f.node) for f in ctx.program.compiled}
    write_nodes = {id(n) for stmt, _ in writes for n in walk(stmt)}
    reads = [ev.node for ev in ctx.program.events if isinstance(ev, GlobalReadEvent) and ev.name == name]
    for node in reads:
        check_flows_into_tensors(node, ctx, torch, rewrites, depth=0)
    checked = {id(n) for n in reads}
    for n in walk(ctx.module):
        if not (isinstance(n, cst.Name) and n.value == name) or id(n) in write_nodes or id(n) in checked:
            continue
        parent = ctx.parent(n)
        if isinstance(parent, (cst.AssignTarget, cst.NameItem)) or not is_variable(n, parent):
            continue
        fn = ctx.enclosing_function(n)
        if fn is None or id(fn) not in compiled:
            raise Refused(f"`{name}` is read outside compiled code (in `{fn.name.value if fn else 'the module'}`): "
                          "it would now get a tensor")
