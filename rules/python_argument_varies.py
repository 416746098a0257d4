"""DYN206: callers pass different Python values to a compiled entry point."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from dynalint.analysis.syntax import walk
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
        is then treated as dynamic, and a string recompiles for every new value.
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
    ]
    VALID = [
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
        for fn in program.compiled:
            entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
            if not entry:
                continue
            params = list(fn.node.params.params)
            if fn.is_method:
                params = params[1:]
            if fn.cls is None:
                calls = idx.call_sites.get(fn.name, ())
            else:
                if instances is None:
                    instances = _instances_by_caller(idx, compiled)
                calls = [(call, caller) for sites in idx.call_sites.values() for call, caller in sites
                         if caller is not None and isinstance(call.func, cst.Name)
                         and instances.get(id(caller), {}).get(call.func.value) == fn.cls.name]
            values: dict[str, set] = {}
            for call, caller in calls:
                if caller is not None and id(caller) in compiled:
                    continue  # inlined into the caller's graph: no recompile
                for name, const in _literal_arguments(call, params):
                    values.setdefault(name, set()).add((type(const).__name__, const))
            for prm in params:
                seen = values.get(prm.name.value, set())
                if len(seen) < 2:
                    continue
                shown = ", ".join(repr(v) for _, v in sorted(seen, key=repr))
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
