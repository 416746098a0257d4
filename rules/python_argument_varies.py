"""DYN206: callers pass different Python values to a compiled entry point."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from dynalint.analysis.syntax import parent_map, walk
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import compiled_ids


@register
class PythonArgumentVaries(Rule):
    code = "DYN206"
    name = "python-argument-varies"
    kind = "recompile"
    summary = "Callers in the file pass different Python values (True/False, 0.5/1.0, 'a'/'b') to a compiled entry point."
    rationale = """
        Dynamo specialises a compiled function on the Python values of its arguments and guards on
        them. When callers pass different literal values for the same parameter - `model(x, True)` in
        one place and `model(x, False)` in another, or changing temperatures - each new value fails the
        guard and recompiles: a bool compiles one graph per value, an int or float recompiles once and
        is then treated as dynamic, and a string recompiles for every new value. Calls of what
        `torch.compile(...)` returned count the same, and so does an int computed from the variable of
        the loop that makes the calls (`compiled(x, step + 1)`). A number the compiled code only
        passes on (stores in a tuple, list or dict, returns) installs no guard and does not recompile.
    """
    fix = """
        Pass values that change as tensors (they become graph inputs), split the entry point into one
        function per mode, or accept the (bounded) extra graphs and silence with `# noqa: DYN206`.
    """
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                hot = head(x, 1.0)
                cold = head(x, 0.5)
                return hot, cold
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x) * k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False, line=3),
    ]
    VALID = [
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x), k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                return head(x, 1.0), head(x * 2, 1.0)
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        program = ctx.program
        idx = program.index
        compiled = compiled_ids(ctx)
        instances: dict[int, dict[str, str]] | None = None
        handles = _compiled_handles(program)
        for fn in program.compiled:
            entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
            through = [(name, scope) for name, scope, target in handles if target is fn]
            if not entry and not through:
                continue
            params = list(fn.node.params.params)
            if fn.is_method:
                params = params[1:]
            if fn.cls is None:
                calls = list(idx.call_sites.get(fn.name, ()))
            else:
                if instances is None:
                    instances = _instances_by_caller(idx, compiled)
                calls = [(call, caller) for sites in idx.call_sites.values() for call, caller in sites
                         if caller is not None and isinstance(call.func, cst.Name)
                         and instances.get(id(caller), {}).get(call.func.value) == fn.cls.name]
            # calls of what `torch.compile(...)` returned, where that name is bound
            calls += [(call, caller) for name, scope in through for call, caller in idx.call_sites.get(name, ())
                      if isinstance(call.func, cst.Name) and (scope is None or caller is scope)]
            values: dict[str, set] = {}
            for call, caller in calls:
                if caller is not None and id(caller) in compiled:
                    continue  # inlined into the caller's graph: no recompile
                for name, const in _literal_arguments(call, params):
                    values.setdefault(name, set()).add((type(const).__name__, const))
                if caller is not None:
                    for name in _loop_varying_arguments(call, caller, params):
                        values.setdefault(name, set()).update({("int", "<loop>"), ("int", "<loop+1>")})
            for prm in params:
                seen = values.get(prm.name.value, set())
                if len(seen) < 2:
                    continue
                if {t for t, _ in seen} <= {"int", "float"} and not _specialising_read(program, fn, prm.name.value):
                    continue  # a number only passed through (or not read) installs no guard
                shown = ", ".join(repr(v) for _, v in sorted(seen, key=repr) if not str(v).startswith("<loop"))
                if any(str(v).startswith("<loop") for _, v in seen):
                    shown = (shown + " and " if shown else "") + "values that change from one loop iteration to the next"
                kinds = {t for t, _ in seen}
                if kinds == {"bool"}:
                    effect = "so it compiles one graph per value"
                elif "str" in kinds or "NoneType" in kinds:
                    effect = "so each new value recompiles it"
                else:  # numbers: one recompile, then the parameter is dynamic (measured on torch 2.13)
                    effect = "so the second value recompiles it (numbers are then treated as dynamic)"
                yield Finding(rule=type(self), node=prm.name, statement=fn.node,
                              message=f"callers in this file pass `{prm.name.value}` as {shown}: Dynamo "
                                      f"specialises `{fn.name}` on Python arguments, {effect}.",
                              hint="pass the value as a tensor, or split the entry point per mode")


def _instances_by_caller(idx, compiled: set[int]) -> dict[int, dict[str, str]]:
    """For each function that is not compiled: local names bound to ``ClassName(...)`` of this file."""
    out: dict[int, dict[str, str]] = {}
    for fn in idx.all_functions:
        if id(fn) in compiled:
            continue
        bound: dict[str, str] = {}
        for n in walk(fn.node.body):
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) \
                    and n.value.func.value in idx.classes:
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        bound[t.target.value] = n.value.func.value
        if bound:
            out[id(fn)] = bound
    return out


def _literal_arguments(call: cst.Call, params):
    names = [p.name.value for p in params]
    position = 0
    for arg in call.args:
        if arg.star:
            return
        const = _literal(arg.value)
        if arg.keyword is not None:
            if const is not _NOT_LITERAL and arg.keyword.value in names:
                yield arg.keyword.value, const
            continue
        if position < len(names) and const is not _NOT_LITERAL:
            yield names[position], const
        position += 1


_NOT_LITERAL = object()


def _literal(node: cst.BaseExpression):
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return node.evaluated_value
        except Exception:
            return _NOT_LITERAL
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -node.expression.evaluated_value
    return _NOT_LITERAL


def _compiled_handles(program) -> list[tuple[str, object, object]]:
    """``(name, scope, entry)`` for ``name = torch.compile(target)``: calls of ``name`` in ``scope`` (a
    function, or None for the module) run ``entry`` compiled."""
    idx = program.index
    out = []
    for call, where in idx.compile_targets:
        target = program.compile_target(call, where)
        if target is None or target[0].owner is not idx:
            continue
        for n in walk(where.node.body if where is not None else idx.module, into_scopes=False):
            if isinstance(n, cst.Assign) and n.value is call and len(n.targets) == 1 \
                    and isinstance(n.targets[0].target, cst.Name):
                out.append((n.targets[0].target.value, where, target[0]))
    return out


def _loop_varying_arguments(call: cst.Call, caller, params) -> Iterator[str]:
    """Parameters to which ``call`` passes an int computed from the variable of an enclosing
    ``for v in range(N)`` loop (N >= 2) of the caller: the value changes between iterations."""
    loop_vars: set[str] = set()
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and isinstance(n.target, cst.Name) and _counts_to_two(n.iter) \
                and any(m is call for m in walk(n.body, into_scopes=False)):
            loop_vars.add(n.target.value)
    if not loop_vars:
        return
    names = [p.name.value for p in params]
    for position, arg in enumerate(call.args):
        if arg.star or arg.keyword is not None:
            if arg.keyword is not None and arg.keyword.value in names and _int_of(arg.value, loop_vars):
                yield arg.keyword.value
            continue
        if position < len(names) and _int_of(arg.value, loop_vars):
            yield names[position]


def _counts_to_two(it: cst.BaseExpression) -> bool:
    """``range(N)`` / ``range(a, b)`` with literals, at least two iterations."""
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        return False
    bounds = [_literal(a.value) for a in it.args]
    if not bounds or any(not isinstance(b, int) or isinstance(b, bool) for b in bounds) or len(bounds) > 2:
        return False
    lo, hi = (0, bounds[0]) if len(bounds) == 1 else bounds
    return hi - lo >= 2


def _int_of(node: cst.BaseExpression, loop_vars: set[str]) -> bool:
    """An int expression of a loop variable and int literals (``n``, ``n + 1``, ``2 * n``)."""
    if isinstance(node, cst.Name):
        return node.value in loop_vars
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        sides = (node.left, node.right)
        return any(_int_of(x, loop_vars) for x in sides) and all(
            _int_of(x, loop_vars) or isinstance(_literal(x), int) for x in sides)
    return False


def _specialising_read(program, fn, name: str, depth: int = 0) -> bool:
    """Whether ``fn`` reads its number parameter ``name`` where Dynamo specialises on it (arithmetic, a
    test, a size, a call): a number that is only bound to other names, packed into a tuple, list or
    dict, or returned installs no guard (measured on torch 2.13). Anything not understood is a read."""
    return _carriers(program, fn, name, depth) is None


def _carriers(program, fn, name: str, depth: int) -> set[str] | None:
    """The names of ``fn`` that hold its parameter ``name`` (bound or packed, never read); None when
    the function reads it."""
    tracked = {name}
    pending = [name]
    while pending:
        current = pending.pop()
        for n in walk(fn.node.body, into_scopes=False):
            if not (isinstance(n, cst.Name) and n.value == current):
                continue
            parents = parent_map(fn.node)
            parent = parents.get(id(n))
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue
            node = n
            new: list[str] | None = None
            while True:
                parent = parents.get(id(node))
                if isinstance(parent, (cst.Element, cst.DictElement)) and parent.value is node:
                    node = parents.get(id(parent))  # packed: the container carries it
                    if not isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
                        return None
                    continue
                if isinstance(parent, cst.AssignTarget):
                    break  # stored to
                if isinstance(parent, (cst.Subscript, cst.Attribute)) and parent.value is node:
                    node = parent  # read back from its container: followed as the value itself
                    continue
                call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
                if isinstance(call, cst.Call):
                    new = _through_call(program, call, parent, depth)
                    if new is None:
                        return None
                    node = call
                    parent = parents.get(id(call))
                break
            if isinstance(parent, (cst.AssignTarget, cst.Return)):
                continue
            if not (isinstance(parent, cst.Assign) and parent.value is node):
                return None
            targets = [t.target for t in parent.targets]
            if new is not None:  # a call's result: only the tuple elements that carry the value
                if len(targets) != 1 or not isinstance(targets[0], (cst.Tuple, cst.List)):
                    return None if new else tracked
                parts = [e.value for i, e in enumerate(targets[0].elements) if i in new]
            else:
                parts = [part for t in targets for part in (
                    [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t])]
            if not all(isinstance(part, cst.Name) for part in parts):
                return None
            for part in parts:
                if part.value not in tracked:
                    tracked.add(part.value)
                    pending.append(part.value)
    return tracked


def _through_call(program, call: cst.Call, arg: cst.Arg, depth: int) -> set[int] | None:
    """``arg`` handed to a function of this module that does not read it: the positions of the
    returned tuple that carry it on (empty: not returned); None when the function reads it or is
    not known."""
    callee = program.index.functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
    position = next((i for i, a in enumerate(call.args) if a is arg), -1)
    names = callee.param_names() if callee is not None else []
    if callee is None or depth >= 3 or arg.star or arg.keyword is not None or position >= len(names):
        return None
    held = _carriers(program, callee, names[position], depth + 1)
    if held is None:
        return None
    positions: set[int] = set()
    for n in walk(callee.node.body, into_scopes=False):
        if isinstance(n, cst.Return) and n.value is not None:
            if isinstance(n.value, cst.Tuple):
                positions |= {i for i, e in enumerate(n.value.elements)
                              if isinstance(e.value, cst.Name) and e.value.value in held}
            elif isinstance(n.value, cst.Name) and n.value.value in held:
                return None  # returned as it is: followed no further
    return positions
