"""Parameters every caller in the module passes a Python number.

An untyped parameter of ``forward`` (or of a function handed to ``torch.compile``) is taken for a
tensor: nothing says otherwise.  When the module itself shows every call of the function, and each
passes a Python number for the parameter (a literal, a loop counter over ``range``, an ``int``
parameter, a number-valued attribute or config field), Dynamo sees a number there: a test of it is
guarded, not a graph break (measured on torch 2.13).  Every call must be found for that to be known:
a function or class name used any other way (passed on, stored in a container, subclassed,
compiled) leaves the parameter as it was, as does a call whose argument is not known to be a number.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Protocol

import libcst as cst

from dynalint.analysis.evaluator import FunctionEvaluator
from dynalint.analysis.interface import ProgramView
from dynalint.analysis.replay import function_token
from dynalint.analysis.syntax import children, walk
from dynalint.analysis.values import Kind, Value

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.evaluator import Evidence
    from dynalint.analysis.module_index import FunctionInfo


class Program(ProgramView, Protocol):
    """What the search reads of the program (the module's :class:`Program`, which imports this one)."""

    def param_env(self, fn: "FunctionInfo", evidence: "Evidence | None") -> dict[str, Value]: ...

    def evidence(self, fn: "FunctionInfo") -> "Evidence": ...


_NUMBER_TYPES = (None, "builtins.int", "builtins.float", "builtins.bool")


def number_params(program: Program, fn: "FunctionInfo", depth: int) -> frozenset[str]:
    """The parameters of ``fn`` to which every call in its module passes a Python number (empty when
    a call cannot be found or read)."""
    sites = _call_sites(program, fn)
    if not sites:
        return frozenset()
    names = fn.param_names()[1:] if fn.is_method else fn.param_names()
    wanted: dict[int, cst.BaseExpression] = {}
    candidates = set(names)
    for call, _ in sites:
        bound = _bind(call, names)
        if bound is None:
            return frozenset()
        candidates &= set(bound)
        for name in candidates:
            wanted[id(bound[name])] = bound[name]
    if not candidates:
        return frozenset()
    seen: dict[int, Value] = {}
    for caller in {id(c): c for _, c in sites}.values():
        env = program.param_env(caller, program.evidence(caller))
        probe = _Probe(program, caller, env, depth, wanted, seen)
        probe.run_body(caller.node.body)
    out = set()
    for name in candidates:
        args = [_bind(call, names)[name] for call, _ in sites]  # type: ignore[index]
        if all(id(a) in seen and _is_number(seen[id(a)]) for a in args):
            out.add(name)
    tracker = program.tracker
    if out and tracker is not None:
        # a call or another use of the name added anywhere in the module can take the answer back
        # (the callers' evaluations above recorded what they read)
        for info in program.index.all_functions:
            tracker.touch(function_token(info))
        for cls in program.index.classes.values():
            program.touch_class(cls)
    return frozenset(out)


class _Probe(FunctionEvaluator):
    """A silent evaluation of a caller that keeps the values of the argument expressions asked for."""

    def __init__(self, program: Program, fn: "FunctionInfo", env: dict[str, Value], depth: int,
                 wanted: dict[int, cst.BaseExpression], seen: dict[int, Value]) -> None:
        super().__init__(program, fn, env, emit=False, depth=depth)
        self._wanted = wanted
        self._seen = seen

    def expr(self, node: cst.BaseExpression | None) -> Value:
        value = super().expr(node)
        if node is not None and id(node) in self._wanted:
            old = self._seen.get(id(node))
            # a loop body runs more than once: every value it took must be a number
            self._seen[id(node)] = value if old is None or _is_number(old) else old
        return value


def _is_number(v: Value) -> bool:
    """A Python number or bool (or an int derived from a shape), never a tensor or unknown."""
    if v.kind is Kind.SIZE:
        return True
    if v.kind is not Kind.PYTHON or v.maybe_none or v.qualname not in _NUMBER_TYPES:
        return False
    return not v.has_const or (isinstance(v.const, (int, float)) and v.const is not None)


def _bind(call: cst.Call, names: list[str]) -> dict[str, cst.BaseExpression] | None:
    """Parameter name -> argument expression of ``call``; None with ``*args``/``**kwargs``."""
    out: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        else:
            if position < len(names):
                out[names[position]] = arg.value
            position += 1
    return out


def _call_sites(program: Program, fn: "FunctionInfo") -> list[tuple[cst.Call, "FunctionInfo"]]:
    """Every call of ``fn`` in its module, each with the function it sits in; empty when the module
    uses the function (or its class) in a way other than calling it, or calls it at module level."""
    idx = program.index
    if fn.owner is not idx or fn.closure is not None:
        return []
    module = idx.module
    uses = _module_uses(program)
    parents, enclosing = uses.parents, uses.enclosing
    if fn.cls is None:
        if idx.functions.get(fn.name) is not fn:
            return []
        calls = _only_called(module, parents, fn.name, fn.node)
    elif fn.name == "forward" and fn.cls.is_module and idx.classes.get(fn.cls.name) is fn.cls:
        calls = _instance_calls(module, parents, fn.cls.name, fn.cls.node)
    else:
        return []
    if calls is None:
        return []
    out = []
    for call in calls:
        caller = enclosing.get(id(call))
        if caller is None:
            return []
        out.append((call, caller))
    return out


class _ModuleUses:
    """What the search reads of a whole module, from one walk of it: each node's parent, the ``Name``
    nodes by name, and the innermost indexed function holding each call (by ``id``). Every function
    of the module asks, so building it per function would walk the module once per function."""

    def __init__(self, program: Program) -> None:
        self.index = program.index
        self.module = program.index.module
        self.parents: dict[int, cst.CSTNode] = {}
        self.names: dict[str, list[cst.Name]] = {}
        for n in walk(self.module):
            for c in children(n):
                self.parents[id(c)] = n
            if isinstance(n, cst.Name):
                self.names.setdefault(n.value, []).append(n)
        self.enclosing: dict[int, FunctionInfo] = {}
        for info in self.index.all_functions:
            for n in walk(info.node.body, into_scopes=False):
                if isinstance(n, cst.Call):
                    self.enclosing[id(n)] = info


_LAST_USES: list[_ModuleUses] = []
"""The uses of the module analysed last (one: an analysis asks about one module many times in a row)."""


def _module_uses(program: Program) -> _ModuleUses:
    idx = program.index
    if not _LAST_USES or _LAST_USES[0].index is not idx or _LAST_USES[0].module is not idx.module:
        _LAST_USES[:] = [_ModuleUses(program)]
    return _LAST_USES[0]


def _names(module: cst.Module, name: str) -> Iterator[cst.Name]:
    uses = _LAST_USES[0] if _LAST_USES and _LAST_USES[0].module is module else None
    if uses is not None:
        yield from uses.names.get(name, ())
        return
    for n in walk(module):
        if isinstance(n, cst.Name) and n.value == name:
            yield n


def _only_called(module: cst.Module, parents: dict, name: str, definition: cst.CSTNode
                 ) -> list[cst.Call] | None:
    """The calls ``name(...)``, when every other use of the name is its definition; else None."""
    calls = []
    for n in _names(module, name):
        parent = parents.get(id(n))
        if parent is definition:
            continue
        if isinstance(parent, cst.Call) and parent.func is n:
            calls.append(parent)
            continue
        return None
    return calls


def _instance_calls(module: cst.Module, parents: dict, cls_name: str, definition: cst.CSTNode
                    ) -> list[cst.Call] | None:
    """The calls of the instances of a class, when each is built into a plain name or an attribute that
    is only called; else None."""
    calls: list[cst.Call] = []
    for n in _names(module, cls_name):
        parent = parents.get(id(n))
        if parent is definition:
            continue
        if not (isinstance(parent, cst.Call) and parent.func is n):
            return None  # a base class, an annotation, passed on: not every call can be seen
        statement = parents.get(id(parent))
        if not (isinstance(statement, cst.Assign) and statement.value is parent
                and len(statement.targets) == 1):
            return None
        target = statement.targets[0].target
        if isinstance(target, cst.Name):
            scope = _scope_of(parents, statement)
            name = target.value
            found = _uses_called(scope, parents, lambda m: isinstance(m, cst.Name) and m.value == name, target)
        elif isinstance(target, cst.Attribute):
            attr = target.attr.value
            found = _uses_called(module, parents,
                                 lambda m: isinstance(m, cst.Attribute) and m.attr.value == attr, target)
        else:
            return None
        if found is None:
            return None
        calls += found
    return calls


def _scope_of(parents: dict, node: cst.CSTNode) -> cst.CSTNode:
    while True:
        parent = parents.get(id(node))
        if parent is None or isinstance(parent, cst.FunctionDef):
            return parent if parent is not None else node
        node = parent


def _uses_called(scope: cst.CSTNode, parents: dict, matches, target: cst.CSTNode) -> list[cst.Call] | None:
    """The calls of the name or attribute ``matches`` selects in ``scope``, when its only other use is the
    binding ``target``; else None."""
    calls = []
    for m in walk(scope):
        if m is target or not matches(m):
            continue
        parent = parents.get(id(m))
        if isinstance(m, cst.Name) and isinstance(parent, cst.Attribute) and parent.attr is m:
            continue  # `other.name`: an attribute, not this name
        if isinstance(parent, cst.Call) and parent.func is m:
            calls.append(parent)
            continue
        return None
    return calls
