"""The Python values a call inside ``for`` loops passes, iteration by iteration.

A training or sampling loop hands a compiled function values that it computes from the loop's
variable: a curriculum (``iters = 2 if step < 4 else 3``), a ramp (``w = min(1.0, step / 4)``), a flag
(``use_aux=step >= 2``), one of a list of settings (``for cfg in settings: f(x, **cfg)``,
``scene = scenes[i % 2]``), each bool of ``for flip in (True, False)``.  Dynamo guards on each such
Python value, so two different ones at the same call are two graphs (measured on torch 2.13).

The loops are replayed here with the values they are known to take: the caller's statements before
the loops and the loop bodies run on Python literals, names bound to them, arithmetic, tests,
conditional expressions, a few pure builtins (``min``, ``max``, ``abs``, ``int``, ``float``,
``round``, ``bool``, ``len``) and indexing of tuple, list and dict displays.  Everything else is
unknown, and so is a name bound inside a statement that is not replayed.  A value is only read at a
call the loop reaches on every iteration it replays: the path from the loop to the call is made of
``for`` and ``with`` statements only, nothing in those loops before the call leaves them early (``break``,
``continue``, ``return``, ``raise``; an early stop after the call leaves the iterations that run as they
are), and the call is not behind a conditional expression, a boolean
operator, a comprehension or a lambda.  A list or dict bound to a name the caller mutates (a method
call on it, a store into it, passing it to a call) is unknown, and a replay that would bind one that
another name also holds gives up: its elements would no longer be known.  The one change replayed is a
list grown by statements of the caller's own (``systems.append((pos, None))``, ``xs.extend(more)``): each
runs where the replay runs it, and one in a statement the replay does not run leaves the list unknown.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.module_index import decorated_as_dataclass
from dynalint.analysis.project import absolute
from dynalint.analysis.syntax import literal_value, walk, walk_with_parents

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.analysis.project import SourceIndex

UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()
"""A value the replay does not know."""

MAX_ITERATIONS = 256
"""Loop iterations replayed for one call at most (the first ones are still what the program does)."""

_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "bool": bool,
             "len": len}
_SEQUENCES = frozenset({"range", "list", "tuple"})
"""Builtins whose result the replay knows as the list (tuple) of what a loop over their argument steps."""
_HARMLESS_CALLS = frozenset({"print", "len", "str", "repr", "format", "enumerate", "zip", "reversed",
                             "sorted", "list", "tuple", "min", "max", "sum", "any", "all"})
"""Builtins that read a container passed to them without changing it."""
_READING_METHODS = frozenset({"get", "keys", "values", "items", "copy", "index", "count"})
"""Methods of a list or dict that read it without changing it."""
_BINARY = {cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b, cst.Multiply: lambda a, b: a * b,
           cst.Divide: lambda a, b: a / b, cst.FloorDivide: lambda a, b: a // b,
           cst.Modulo: lambda a, b: a % b, cst.Power: lambda a, b: a ** b if abs(b) <= 64 else _no_value()}
_MATH_FUNCTIONS = {name: getattr(math, name) for name in (
    "cos", "sin", "tan", "acos", "asin", "atan", "atan2", "cosh", "sinh", "tanh", "sqrt", "exp", "log",
    "log2", "log10", "log1p", "expm1", "floor", "ceil", "fabs", "pow", "hypot", "radians", "degrees")}
"""Functions of ``math`` the replay computes on numbers it knows (a cosine schedule:
``math.cos(math.pi * t)``)."""
_MATH_CONSTANTS = {f"math.{name}": getattr(math, name) for name in ("pi", "e", "tau", "inf")}
_COMPARE = {cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
            cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b,
            cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b}
_SCALARS = (bool, int, float, str, type(None))


TENSOR: Any = type("Tensor", (), {"__repr__": lambda self: "TENSOR"})()
"""A tensor a torch function returns (``torch.ones(8)``, ``F.one_hot(t, 3)``), or a tensor method of one
(``x.flip(-1)``): Dynamo guards on its sizes, not its values, and a tensor against ``None`` at the same
argument recompiles."""


@dataclass(frozen=True)
class Drawn:
    """A flag drawn at random at each evaluation (``random.random() < ratio``: teacher forcing, a random
    augmentation), true with probability ``p``."""

    p: float


_UNIT: Any = type("Unit", (), {"__repr__": lambda self: "random.random()"})()
"""What ``random.random()`` gives: a number in [0, 1) drawn anew each time."""


def both_drawn(count: int, p: float) -> bool:
    """``count`` draws of a flag true with probability ``p`` give both values, but for one run in twenty at
    most (six draws at one half: 97%)."""
    return 0 < p < 1 and 1 - p ** count - (1 - p) ** count >= 0.95


@dataclass(frozen=True)
class Built:
    """An instance of a class of the module the replay saw made (``Cfg(s)``, ``Shape(2, 3)``): the callee as
    written and the values of its arguments (``UNKNOWN`` where not known), the keyword ones by name."""

    func: cst.BaseExpression
    args: tuple[Any, ...]
    keywords: tuple[tuple[str, Any], ...]


_FRESH = (cst.List, cst.Dict, cst.ListComp, cst.DictComp)
"""Displays that make a container no other name holds."""


def _fresh(node: cst.BaseExpression) -> bool:
    """``node`` makes a container no other name holds: a display, or a slice of one (``data[:32]``)."""
    return isinstance(node, _FRESH) or isinstance(node, cst.Subscript) and len(node.slice) == 1 \
        and isinstance(node.slice[0].slice, cst.Slice)


_FELL_THROUGH: Any = object()
"""What the statements of a helper give when they end without a ``return``."""


def _returns_only(block: cst.BaseSuite) -> bool:
    """``block`` is made of ``return`` statements, assignments of one name, ``if`` statements of such blocks,
    and a docstring: a helper :class:`_Replay` can run."""
    for stmt in block.body:  # type: ignore[attr-defined]
        if isinstance(stmt, cst.If):
            orelse = stmt.orelse
            if not _returns_only(stmt.body) or orelse is not None and not (
                    _returns_only(orelse.body) if isinstance(orelse, cst.Else)
                    else _returns_only(cst.IndentedBlock(body=[orelse]))):
                return False
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if not (isinstance(small, cst.Return)
                        or isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        or isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)):
                    return False
        else:
            return False
    return True


def _iterated_names(it: cst.BaseExpression) -> list[cst.Name]:
    """The names whose elements a ``for`` over ``it`` binds: ``xs`` of ``for x in xs``, of ``enumerate(xs)``,
    ``zip(xs, ys)``, ``reversed(xs)``."""
    if isinstance(it, cst.Name):
        return [it]
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) \
            and it.func.value in ("enumerate", "zip", "reversed"):
        return [a.value for a in it.args
                if a.keyword is None and not a.star and isinstance(a.value, cst.Name)]
    return []


def _holds_container(value: "list | dict") -> bool:
    """A list or dict the replay knows holds a list or dict among its elements (or values)."""
    items = value.values() if isinstance(value, dict) else value
    return any(isinstance(item, (list, dict)) for item in items)


class _GiveUp(Exception):
    """The replay cannot go on soundly."""


def loop_argument_values(call: cst.Call, caller: "FunctionInfo", names: list[str],
                         project: "SourceIndex | None" = None) -> dict[str, list[Any]]:
    """Parameter name -> the values ``call`` passes it on the iterations replayed (``UNKNOWN`` where not
    known), for the parameters ``names`` (positional order first); empty when the call is not inside a
    ``for`` loop of ``caller`` that can be replayed.  ``project``: where the helpers the caller's module
    imports are found (``from utils import warmup_cosine``)."""
    try:
        return _Replay(call, caller, names, project).run()
    except _GiveUp:
        return {}


class _Replay:
    """One replay of the loops around one call."""

    def __init__(self, call: cst.Call, caller: "FunctionInfo", names: list[str],
                 project: "SourceIndex | None" = None) -> None:
        self.call, self.caller, self.names, self.project = call, caller, names, project
        self.parents: dict[int, cst.CSTNode] = {id(n): p for n, p in walk_with_parents(caller.node)
                                                if p is not None}
        self.path = self._path()
        self.locals = _bound_names(caller.node)
        # a loop variable handed to the call itself is bound afresh at each iteration, before the call: what
        # the call does to the object it is given changes no value the replay reads at a later call
        rebound: set[str] = set()
        node: cst.CSTNode | None = call
        while node is not None and node is not caller.node:
            node = self.parents.get(id(node))
            if isinstance(node, cst.For):
                rebound.update(_names_in(node.target))
        self.grown = _growing_statements(caller.node)
        owner = caller.owner
        self.mutated = _mutated_names(caller.node, self.parents, call, rebound, set(self.grown),
                                      {name: fn.node for name, fn in owner.functions.items()} if owner else {})
        self.plain = _plain_objects(caller.node, self.parents)
        self.out: dict[str, list[Any]] = {}
        self.budget = MAX_ITERATIONS

    def _path(self) -> set[int]:
        """The statements from the caller's body down to the call; gives up on a path that does not
        reach the call on every iteration."""
        path: set[int] = set()
        node: cst.CSTNode = self.call
        loops = 0
        while node is not self.caller.node:
            parent = self.parents.get(id(node))
            if parent is None:
                raise _GiveUp
            if isinstance(parent, (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp,
                                   cst.DictComp, cst.GeneratorExp, cst.While, cst.Try, cst.TryStar,
                                   cst.Match, cst.FunctionDef, cst.ClassDef)) and parent is not self.caller.node:
                raise _GiveUp
            if isinstance(parent, cst.If) and node is parent.test:
                raise _GiveUp
            if isinstance(parent, cst.For):
                if node is not parent.body:
                    raise _GiveUp  # in the iterable, the target or the else branch
                loops += 1
                self._leaves_early(parent, path)
            path.add(id(parent))
            node = parent
        if not loops:
            raise _GiveUp
        return path

    def _leaves_early(self, loop: cst.For, inner: set[int]) -> None:
        """Gives up when something in ``loop`` before the call ends an iteration (or the loop) before it
        reaches the call: a ``return`` or ``raise``, a ``break`` or ``continue`` of ``loop`` itself or of a
        loop on the way to the call (``inner``, the path so far), not one of a loop the call is not in.  One
        after the call (an early stop: ``if state["stop"]: break``) leaves the values of the iterations that
        run as they are."""
        call_seen = False
        for n in walk(loop.body, into_scopes=False):
            if n is self.call:
                call_seen = True
            if call_seen:
                continue
            if isinstance(n, (cst.Return, cst.Raise)):
                raise _GiveUp
            if isinstance(n, (cst.Break, cst.Continue)):
                owner = self.parents.get(id(n))
                while owner is not None and not isinstance(owner, (cst.For, cst.While)):
                    owner = self.parents.get(id(owner))
                if owner is loop or owner is not None and id(owner) in inner:
                    raise _GiveUp

    def run(self) -> dict[str, list[Any]]:
        env = self._arguments_kept()
        self._block(self.caller.node.body, env)
        return self.out

    def _arguments_kept(self) -> dict[str, Any]:
        """The parameters of the caller to which every call of it passes one literal value, or leaves one
        literal default (``def train(steps=4)`` that the script calls as ``train()``; ``sample(x, ab, [4,
        -1])``), bound to it: a function of the module, not a method or a nested function, that the module's
        text names nowhere but at its definition and those calls."""
        caller, owner = self.caller, self.caller.owner
        if owner is None or caller.cls is not None or caller.closure is not None \
                or not isinstance(caller.node, cst.FunctionDef):
            return {}
        sites = [(call, where) for call, where in owner.call_sites.get(caller.name, ())
                 if isinstance(call.func, cst.Name)]
        if not sites or len(re.findall(rf"\b{re.escape(caller.name)}\b", owner.text)) != len(sites) + 1 \
                or any(a.star for call, _ in sites for a in call.args):
            return {}
        params = caller.node.params
        positional = [p.name.value for p in (*params.posonly_params, *params.params)]
        out: dict[str, Any] = {}
        for prm in (*params.posonly_params, *params.params, *params.kwonly_params):
            name, values = prm.name.value, []
            for call, where in sites:
                given = [a.value for a in call.args if a.keyword is not None and a.keyword.value == name]
                if not given and name in positional:
                    at = positional.index(name)
                    given = [a.value for i, a in enumerate(a for a in call.args if a.keyword is None) if i == at]
                values.append(self._literal(given[0], at_top=where is None) if given else
                              self._literal(prm.default) if prm.default is not None else UNKNOWN)
            if values and all(v is not UNKNOWN and v == values[0] and type(v) is type(values[0]) for v in values) \
                    and not (isinstance(values[0], (list, dict)) and name in self.mutated):
                out[name] = values[0]
        return out

    def _literal(self, node: cst.BaseExpression, at_top: bool = False) -> Any:
        """What an expression of literals alone (numbers, strings, displays of them, tensors torch makes) gives,
        or, in a statement of the module (``at_top``), of the module's constants too (``train(TOTAL)``: a name
        bound once, never rebound); UNKNOWN for any other (a name's value at a call in a function is not the
        caller's to know)."""
        made = {id(m) for n in walk(node) if isinstance(n, cst.Call) and self._makes_tensor(n.func, lambda _: UNKNOWN)
                for m in walk(n.func)}  # (`[torch.randn(8)] * 3`: tensors, whatever the call's scope)
        if any(isinstance(n, cst.Call) and id(n.func) not in made
               or isinstance(n, cst.Name) and id(n) not in made and n.value not in ("True", "False", "None")
               and not (at_top and n.value not in self.locals) for n in walk(node)):
            return UNKNOWN
        return self._eval(node, {})

    # statements

    def _block(self, block: cst.BaseSuite, env: dict[str, Any]) -> bool:
        """Runs the statements of ``block``; True once the call was reached (the caller's body is run
        up to the loop that holds the call, and no further)."""
        body = block.body if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
        for stmt in body:
            if id(stmt) in self.path:
                self._on_path(stmt, env)
                if block is self.caller.node.body:
                    return True
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._simple(small, env)
            elif isinstance(stmt, cst.If) and (test := self._test(stmt, env)) is not UNKNOWN:
                self._branch(stmt, test, env)  # (`if i % 2 == 0: mask = ...` / `else: mask = None`)
            elif isinstance(stmt, cst.For) and (values := self._whole_loop(stmt, env)) is not None:
                # (a loop before the call's that builds what it steps: `batches.append`), run on a copy of
                # what is known, kept when the whole loop could be replayed
                trial = _copied(env)
                try:
                    for value in values:
                        self._bind(stmt.target, value, trial)
                        self._block(stmt.body, trial)
                except _GiveUp:
                    self._forget(stmt, env)
                else:
                    env.clear()
                    env.update(trial)
            else:
                self._forget(stmt, env)
        return False

    def _whole_loop(self, stmt: cst.For, env: dict[str, Any]) -> list[Any] | None:
        """The values a ``for`` the call is not in steps, when the replay can run all of it within its
        budget: nothing in its body leaves it or the function early, nor binds a name the replay does not
        follow, and it has no ``else``."""
        if stmt.orelse is not None or any(
                isinstance(n, (cst.Break, cst.Continue, cst.Return, cst.Raise, cst.Yield, cst.Await, cst.Global,
                               cst.Nonlocal, cst.NamedExpr)) for n in walk(stmt.body, into_scopes=False)):
            return None
        try:
            if isinstance(stmt.iter, cst.Name) and stmt.iter.value in _names_grown(stmt.body, self.grown):
                return None
            values = self._iterate(stmt.iter, env)
        except _GiveUp:
            return None
        if len(values) > self.budget:
            return None
        self.budget -= len(values)
        return values

    def _test(self, stmt: cst.If, env: dict[str, Any]) -> Any:
        """The value of ``stmt``'s test when the replay knows it (a number, string, bool or None), else
        UNKNOWN."""
        test = self._eval(stmt.test, env)
        return test if isinstance(test, _SCALARS) else UNKNOWN

    def _branch(self, stmt: cst.If, test: Any, env: dict[str, Any]) -> None:
        """Runs the branch of ``stmt`` its known ``test`` takes, the way to the call when it holds the call;
        an ``elif`` whose test is not known is forgotten (or, on the way to the call, gives up: the
        iterations that make the call are then not known)."""
        taken = stmt.body if test else stmt.orelse
        if isinstance(taken, cst.Else):
            taken = taken.body
        if isinstance(taken, cst.If):  # `elif`
            if id(taken) in self.path:
                self._on_path(taken, env)
            elif (inner := self._test(taken, env)) is not UNKNOWN:
                self._branch(taken, inner, env)
            else:
                self._forget(taken, env)
        elif taken is not None:
            self._block(taken, env)

    def _on_path(self, stmt: cst.CSTNode, env: dict[str, Any]) -> None:
        if isinstance(stmt, cst.For):
            try:
                if isinstance(stmt.iter, cst.Name) and stmt.iter.value in _names_grown(stmt.body, self.grown):
                    raise _GiveUp  # (a list the loop grows while it steps it)
                values = self._iterate(stmt.iter, env)
            except _GiveUp:
                # (what it steps is not known: one pass of unknown values, so that the values an enclosing loop
                # changes are still read at each of its iterations; a loop that may not run at all passes none)
                values = [UNKNOWN]
            for value in values:
                if self.budget <= 0:
                    return
                self.budget -= 1
                self._bind(stmt.target, value, env)
                self._block(stmt.body, env)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.asname is not None:
                    self._bind(item.asname.name, UNKNOWN, env)
            self._block(stmt.body, env)
        elif isinstance(stmt, cst.If):
            # a branch of the loop body (alternating steps: `if it % 3 == 0: g_step(z, y)`): the call is made
            # on the iterations whose test takes the way to it, which the replay must know
            test = self._test(stmt, env)
            if test is UNKNOWN:
                raise _GiveUp
            self._branch(stmt, test, env)
        else:  # the statement line that holds the call
            if any(isinstance(n, cst.NamedExpr) for n in walk(stmt, into_scopes=False)):
                raise _GiveUp  # a name bound while the arguments are evaluated
            for small in getattr(stmt, "body", ()):
                if self._holds_call(small):
                    self._record(env)
                self._simple(small, env)

    def _holds_call(self, node: cst.CSTNode) -> bool:
        return any(n is self.call for n in walk(node, into_scopes=False))

    def _record(self, env: dict[str, Any]) -> None:
        """The values of the call's arguments on this iteration."""
        bound: dict[str, Any] = {}
        position = 0
        spread_unknown = False
        for arg in self.call.args:
            if arg.star == "*":
                position = len(self.names)  # positions unknown from here on; keywords still name theirs
                continue
            if arg.star == "**":
                value = self._eval(arg.value, env)
                if isinstance(value, dict) and all(isinstance(k, str) for k in value):
                    bound.update(value)
                else:
                    spread_unknown = True
                continue
            if arg.keyword is not None:
                bound[arg.keyword.value] = self._eval(arg.value, env)
            elif position < len(self.names):
                bound[self.names[position]] = self._eval(arg.value, env)
                position += 1
        for name in self.names:
            if name in bound:
                self.out.setdefault(name, []).append(UNKNOWN if spread_unknown else bound[name])

    def _simple(self, small: cst.BaseSmallStatement, env: dict[str, Any]) -> None:
        if isinstance(small, cst.Expr) and id(small.value) in self.grown:
            self._grow(small.value, env)  # type: ignore[arg-type]
            return
        self._assigned(small, env)
        for n in walk(small, into_scopes=False):
            if isinstance(n, cst.NamedExpr):
                for name in _names_in(n.target):
                    env[name] = UNKNOWN  # `(n := ...)` inside the statement: not followed

    def _grow(self, call: cst.Call, env: dict[str, Any]) -> None:
        """Runs ``xs.append(v)`` or ``xs.extend(vs)`` on the list ``xs`` holds, in place: every name that
        holds the same list sees it grow."""
        name = call.func.value.value  # type: ignore[attr-defined]
        held = env.get(name)
        if not isinstance(held, list):
            return
        added = self._eval(call.args[0].value, env)
        if call.func.attr.value == "append":  # type: ignore[attr-defined]
            held.append(added)
        elif isinstance(added, (list, tuple)):
            held.extend(added)
        else:
            env[name] = UNKNOWN

    def _assigned(self, small: cst.BaseSmallStatement, env: dict[str, Any]) -> None:
        if isinstance(small, cst.Assign):
            value = self._eval(small.value, env)
            fresh = _fresh(small.value)
            # (`rewards, dones = [], []`: each list is one the statement makes)
            parts = [_fresh(e.value) for e in small.value.elements] \
                if isinstance(small.value, (cst.Tuple, cst.List)) and len(small.targets) == 1 else None
            for target in small.targets:
                self._bind(target.target, value, env, fresh and len(small.targets) == 1, parts)
        elif isinstance(small, cst.AnnAssign):
            # (`seen: list = []` makes a list no other name holds, as `seen = []` does)
            fresh = _fresh(small.value)
            value = self._eval(small.value, env) if small.value is not None else UNKNOWN
            self._bind(small.target, value, env, fresh)
        elif isinstance(small, cst.AugAssign):
            if isinstance(small.target, cst.Name):
                env[small.target.value] = self._augmented(small, env)
            elif isinstance(small.target, cst.Attribute):
                self._bind(small.target, self._augmented(small, env), env)
        elif isinstance(small, (cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom, cst.Del)):
            raise _GiveUp

    def _augmented(self, small: cst.AugAssign, env: dict[str, Any]) -> Any:
        kind = type(small.operator).__name__.replace("Assign", "")
        op = next((f for t, f in _BINARY.items() if t.__name__ == kind), None)
        if op is None:
            return UNKNOWN
        return _apply(op, self._eval(small.target, env), self._eval(small.value, env))

    def _forget(self, stmt: cst.CSTNode, env: dict[str, Any]) -> None:
        """A statement not replayed: every name it binds is unknown afterwards."""
        bound = _bound_names(stmt)
        held = {name for name, value in env.items() if isinstance(value, (list, dict))}
        # (`for x in xs:`, `for i, x in enumerate(xs):` bind `x` to the elements of `xs`, not to `xs`: where
        # none of them is a container, nothing done through `x` changes what `xs` holds)
        iterated = {id(n) for n in (_iterated_names(stmt.iter) if isinstance(stmt, cst.For) else ())
                    if n.value in held and not _holds_container(env[n.value])}
        for n in walk(stmt, into_scopes=False):
            if isinstance(n, (cst.Global, cst.Nonlocal)):
                raise _GiveUp
            if isinstance(n, cst.Name) and n.value in held and bound & self.mutated and id(n) not in iterated:
                raise _GiveUp  # a known container may be bound there to a name that changes it
        for name in bound:
            env[name] = UNKNOWN
            _drop_attributes(env, name)
        # a list grown there, by how much not known: so is every value that holds it
        lost = [env[name] for name in _names_grown(stmt, self.grown) if isinstance(env.get(name), list)]
        for name, value in list(env.items()):
            if any(_holds(value, grown) for grown in lost):
                env[name] = UNKNOWN

    def _bind(self, target: cst.BaseExpression, value: Any, env: dict[str, Any], fresh: bool = False,
              parts_fresh: list[bool] | None = None) -> None:
        """``fresh``: the value is a container the statement makes (a display), held by no other name;
        ``parts_fresh``: the same of each item of a display the target unpacks."""
        if isinstance(target, cst.Name):
            if isinstance(value, (list, dict)) and target.value in self.mutated:
                if not fresh:
                    raise _GiveUp  # changed in place through this name, and known through another
                value = UNKNOWN  # changed in place later: its items are not known
            env[target.value] = value
            _drop_attributes(env, target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            parts = [e.value for e in target.elements]
            starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
            known = isinstance(value, (tuple, list)) and len(value) == len(parts) and not starred
            for i, part in enumerate(parts):
                fresh_part = known and parts_fresh is not None and len(parts_fresh) == len(parts) and parts_fresh[i]
                self._bind(part, value[i] if known else UNKNOWN, env, fresh_part)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and env.get(target.value.value) is TENSOR:
            pass  # (`mask[0, -2:] = 0`: still a tensor)
        else:
            for name in _names_in(target):
                env[name] = UNKNOWN  # an attribute or item store: the root is mutated (see _mutated_names)
                _drop_attributes(env, name)
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                    and target.value.value in self.plain and isinstance(value, _SCALARS):
                env[f"{target.value.value}.{target.attr.value}"] = value  # (`cfg.alpha = 0.4`, read back later)

    def _iterate(self, it: cst.BaseExpression, env: dict[str, Any]) -> list[Any]:
        """The values a ``for`` over ``it`` binds, in order; gives up when not known."""
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value in ("range", "enumerate", "zip") \
                and self._builtin(it.func.value) and not any(a.star or a.keyword for a in it.args):
            args = [self._eval(a.value, env) for a in it.args]
            if it.func.value == "zip":  # (`zip(ts[:-1], ts[1:])`)
                if args and all(isinstance(a, (tuple, list)) for a in args):
                    return list(zip(*args))
                raise _GiveUp
            if it.func.value == "enumerate":
                if len(args) == 1 and isinstance(args[0], (tuple, list)):
                    return list(enumerate(args[0]))
                raise _GiveUp
            if 1 <= len(args) <= 3 and all(type(a) is int for a in args):
                values = range(*args)
                if len(values) <= MAX_ITERATIONS:
                    return list(values)
            raise _GiveUp
        value = self._eval(it, env)
        if isinstance(value, (tuple, list)):
            return list(value)
        raise _GiveUp

    # expressions

    def _builtin(self, name: str) -> bool:
        """``name`` is the builtin of that name (not bound in the caller or the module)."""
        owner = self.caller.owner
        return name not in self.locals and (owner is None or name not in owner.globals)

    def _global(self, name: str, seen: frozenset[str]) -> Any:
        """A module-level name bound once, never rebound in a function, to a value the replay knows."""
        owner = self.caller.owner
        if owner is None or name in owner.mutated_globals or name in seen or self.caller.closure is not None:
            return UNKNOWN  # (in a nested function the name may be the enclosing function's)
        bound = owner.globals.get(name, ())
        if len(bound) != 1 or bound[0] is None:
            return UNKNOWN
        value = self._eval(bound[0], {}, seen | {name})
        changed = name in self.mutated or name in _names_grown(self.caller.node, self.grown)
        return UNKNOWN if isinstance(value, (list, dict)) and changed else value

    def _eval(self, node: cst.BaseExpression, env: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
        try:
            return self._value(node, env, seen)
        except (ArithmeticError, TypeError, ValueError, IndexError, KeyError, RecursionError, SyntaxError):
            return UNKNOWN

    def _value(self, node: cst.BaseExpression, env: dict[str, Any], seen: frozenset[str]) -> Any:
        ev = lambda n: self._value(n, env, seen)  # noqa: E731
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            if node.value in env:
                return env[node.value]
            if node.value in self.locals:
                return UNKNOWN
            return self._global(node.value, seen)
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            return literal_value(node)
        if isinstance(node, cst.UnaryOperation):
            value = ev(node.expression)
            if value is UNKNOWN:
                return UNKNOWN
            if value is TENSOR:  # `-t`, `~mask` (`not t` asks the tensor for a bool)
                return UNKNOWN if isinstance(node.operator, cst.Not) else TENSOR
            if isinstance(node.operator, cst.Not):
                return not value if isinstance(value, _SCALARS) else UNKNOWN
            if not _number(value):
                return UNKNOWN
            return -value if isinstance(node.operator, cst.Minus) else +value if isinstance(node.operator, cst.Plus) \
                else UNKNOWN
        if isinstance(node, cst.BinaryOperation):
            op = _BINARY.get(type(node.operator))
            left, right = ev(node.left), ev(node.right)
            if TENSOR in (left, right) \
                    and not any(isinstance(v, (str, list, tuple, dict)) for v in (left, right)):
                return TENSOR  # arithmetic of a tensor (`x * 2`, `t @ w`) is a tensor
            return UNKNOWN if op is None else _apply(op, left, right)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in _ORDER:
            drawn = _drawn(ev(node.left), node.comparisons[0].operator, ev(node.comparisons[0].comparator))
            if drawn is not None:
                return drawn  # (`random.random() < ratio`)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in (cst.Is, cst.IsNot) \
                and isinstance(node.comparisons[0].comparator, cst.Name) \
                and node.comparisons[0].comparator.value == "None":
            # `cell is not None`: a tensor, a number or a container the replay knows is not `None`
            left = ev(node.left)
            if left is UNKNOWN:
                return UNKNOWN
            return (left is None) == isinstance(node.comparisons[0].operator, cst.Is)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in _COMPARE \
                and TENSOR in (ev(node.left), ev(node.comparisons[0].comparator)):
            return TENSOR  # `torch.rand(4) > 0.2`: a boolean tensor
        if isinstance(node, cst.Comparison):
            left = ev(node.left)
            for target in node.comparisons:
                right = ev(target.comparator)
                op = _COMPARE.get(type(target.operator))
                if op is None or not (_comparable(left, right)):
                    return UNKNOWN
                if not op(left, right):
                    return False
                left = right
            return True
        if isinstance(node, cst.BooleanOperation):
            left = ev(node.left)
            if not isinstance(left, _SCALARS):
                return UNKNOWN
            if isinstance(node.operator, cst.And):
                return ev(node.right) if left else left
            return left if left else ev(node.right)
        if isinstance(node, cst.IfExp):
            test = ev(node.test)
            if isinstance(test, Drawn):  # (`True if random.random() < ratio else False`)
                body, orelse = ev(node.body), ev(node.orelse)
                return (test if body is True else Drawn(1 - test.p)) \
                    if type(body) is bool and type(orelse) is bool and body is not orelse else UNKNOWN
            if not isinstance(test, _SCALARS):
                return UNKNOWN
            return ev(node.body) if test else ev(node.orelse)
        if isinstance(node, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return UNKNOWN
            items = [ev(e.value) for e in node.elements]
            return tuple(items) if isinstance(node, cst.Tuple) else items
        if isinstance(node, cst.ListComp) and node.for_in.inner_for_in is None and not node.for_in.ifs \
                and isinstance(node.for_in.target, cst.Name):
            # `[torch.randn(3) for _ in range(n)]`: its length, and each element
            try:
                stepped = self._iterate(node.for_in.iter, env)
            except _GiveUp:
                return UNKNOWN
            name = node.for_in.target.value
            return [self._value(node.elt, {**env, name: v}, seen) for v in stepped]
        if isinstance(node, cst.Dict):
            out: dict[Any, Any] = {}
            for element in node.elements:
                if not isinstance(element, cst.DictElement):
                    return UNKNOWN
                key = ev(element.key)
                if not isinstance(key, _SCALARS):
                    return UNKNOWN
                out[key] = ev(element.value)
            return out
        if isinstance(node, cst.Subscript):
            return self._item(node, ev)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            key = f"{node.value.value}.{node.attr.value}"
            if key in env:
                return env[key]
            if (constant_name := self._resolved(node)) in _MATH_CONSTANTS:
                return _MATH_CONSTANTS[constant_name]
            holder = ev(node.value)
            return self._built_attribute(holder, node.attr.value, seen) if isinstance(holder, Built) \
                else UNKNOWN
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get" \
                and 1 <= len(node.args) <= 2 and not any(a.star or a.keyword for a in node.args):
            container = ev(node.func.value)  # `params.get("greedy")` of a dict the replay knows
            key = ev(node.args[0].value)
            if isinstance(container, dict) and isinstance(key, _SCALARS) and key is not UNKNOWN:
                return container[key] if key in container else \
                    ev(node.args[1].value) if len(node.args) == 2 else None
            return UNKNOWN
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _SEQUENCES \
                and self._builtin(node.func.value) and not any(a.star or a.keyword for a in node.args):
            # `list(range(99, -1, -25))`, `ts = range(n)`, `tuple(xs)`: what a loop over it steps
            try:
                stepped = self._iterate(node if node.func.value == "range" else node.args[0].value, env) \
                    if node.args else []
            except _GiveUp:
                return UNKNOWN
            return tuple(stepped) if node.func.value == "tuple" else stepped
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in _BUILTINS \
                and self._builtin(node.func.value) and not any(a.star or a.keyword for a in node.args):
            args = [ev(a.value) for a in node.args]
            if not args or any(not _known(a) for a in args):
                return UNKNOWN
            if node.func.value == "len":
                return len(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, dict, str)) else UNKNOWN
            if not all(_number(a) for a in args):
                return UNKNOWN
            return _BUILTINS[node.func.value](*args)
        if isinstance(node, cst.Call) and self._makes_tensor(node.func, ev):
            return TENSOR
        resolved = (self._resolved(node.func) or "") if isinstance(node, cst.Call) else ""
        if resolved == "random.random" and not node.args:  # type: ignore[attr-defined]
            return _UNIT
        math_function = _MATH_FUNCTIONS.get(resolved[5:]) if resolved.startswith("math.") else None
        if math_function is not None and not any(a.star or a.keyword for a in node.args):  # type: ignore
            args = [ev(a.value) for a in node.args]  # type: ignore[attr-defined]
            return math_function(*args) if args and all(_number(a) for a in args) else UNKNOWN
        func = node.func if isinstance(node, cst.Call) else None
        asked = f"{self._text(func)}()" \
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else None
        if asked is not None and asked not in seen:
            instance = ev(func.value)  # type: ignore[union-attr]  # (`sched.lr(s)` of an instance made here)
            method = self._method(instance, func.attr.value) if isinstance(instance, Built) else None  # type: ignore
            if method is not None:
                return self._returned(method, node, env, seen | {asked}, instance)  # type: ignore[arg-type]
        called = f"{node.func.value}()" if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) else None
        if called is not None and called not in seen:
            helper = self._helper(node.func.value)  # type: ignore[attr-defined]
            if helper is not None:
                return self._returned(helper, node, env, seen | {called})  # type: ignore[arg-type]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and self._class(node.func.value) \
                and not any(a.star for a in node.args):
            return Built(node.func, tuple(ev(a.value) for a in node.args if a.keyword is None),
                         tuple((a.keyword.value, ev(a.value)) for a in node.args if a.keyword is not None))
        return UNKNOWN

    @staticmethod
    def _text(node: cst.Attribute) -> str:
        return f"{node.value.value}.{node.attr.value}"  # type: ignore[attr-defined]

    def _method(self, instance: Built, name: str) -> "FunctionInfo | None":
        """The method ``name`` of the plain class of the module ``instance`` is an instance of, when its body
        only returns a value computed from its parameters and attributes (``def lr(self, step): return 0.1 *
        (1 - step / self.steps)``), which :meth:`_built_attribute` reads."""
        owner = self.caller.owner
        cls = owner.classes.get(instance.func.value) \
            if owner is not None and isinstance(instance.func, cst.Name) else None
        fn = cls.methods.get(name) if cls is not None and not cls.is_module and not cls.bases else None
        if fn is None or fn.node.decorators or not isinstance(fn.node.body, cst.IndentedBlock) \
                or not _returns_only(fn.node.body):
            return None
        return fn

    def _helper(self, name: str) -> "FunctionInfo | None":
        """The function of the module (or one it imports from the project) ``name`` calls, when its body only
        returns a value computed from its parameters: ``return`` statements, assignments of names and ``if``
        statements around them (``def ramp(step, total): return 0.1 * min(1.0, step / total)``; a schedule
        with a warmup branch)."""
        owner = self.caller.owner
        fn = owner.functions.get(name) if owner is not None and name not in self.locals else None
        if fn is None and owner is not None and self.project is not None and name not in self.locals \
                and name in owner.imports:
            resolved = self.project.resolve(absolute(owner.imports[name], owner.name,
                                                     owner.path.endswith("__init__.py")))
            fn = resolved.function if resolved is not None else None
        if fn is None or fn.node.decorators or fn.closure is not None or fn.cls is not None \
                or not isinstance(fn.node.body, cst.IndentedBlock) or not _returns_only(fn.node.body):
            return None
        return fn

    def _returned(self, helper: "FunctionInfo", call: cst.Call, env: dict[str, Any], seen: frozenset[str],
                  instance: Built | None = None) -> Any:
        """What ``call`` of a helper of :meth:`_helper` (or of a method of :meth:`_method`, run on
        ``instance``) returns, run on the call's arguments and the defaults of the parameters the call leaves
        out, its body read in its own module (its imports, its globals)."""
        node = helper.node
        params = node.params
        if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None \
                or any(a.star for a in call.args):
            return UNKNOWN
        positional = [*params.posonly_params, *params.params]
        inner: dict[str, Any] = {}
        if instance is not None:
            if not positional:
                return UNKNOWN
            inner[positional[0].name.value] = instance  # (`self`)
            positional = positional[1:]
        named = {p.name.value: p for p in (*positional, *params.kwonly_params)}
        for i, arg in enumerate(a for a in call.args if a.keyword is None):
            if i >= len(positional):
                return UNKNOWN
            inner[positional[i].name.value] = self._value(arg.value, env, seen)
        for arg in call.args:
            if arg.keyword is not None:
                if arg.keyword.value not in named:
                    return UNKNOWN
                inner[arg.keyword.value] = self._value(arg.value, env, seen)
        for name, prm in named.items():
            if name not in inner:
                inner[name] = self._value(prm.default, {}, seen) if prm.default is not None else UNKNOWN
        runner = self
        if helper.owner is not self.caller.owner:
            runner = copy.copy(self)  # (the same replay, reading names where the helper is defined)
            runner.caller, runner.locals, runner.mutated, runner.grown = helper, _bound_names(node), set(), {}
        result = runner._run_helper(node.body.body, inner, seen)  # type: ignore[attr-defined]
        return UNKNOWN if result is _FELL_THROUGH else result

    def _run_helper(self, body: "Sequence[cst.CSTNode]", env: dict[str, Any], seen: frozenset[str]) -> Any:
        """The value the statements ``body`` of a helper return (:data:`_FELL_THROUGH` when they end without a
        ``return``), UNKNOWN once a test is not known."""
        for stmt in body:
            if isinstance(stmt, cst.If):
                test = self._value(stmt.test, env, seen)
                if not isinstance(test, _SCALARS) or test is UNKNOWN:
                    return UNKNOWN
                branch = stmt.body.body if test else \
                    (stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse]
                     if stmt.orelse is not None else [])
                result = self._run_helper(branch, env, seen)
                if result is not _FELL_THROUGH:
                    return result
                continue
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Return):
                    return self._value(small.value, env, seen) if small.value is not None else None
                if isinstance(small, cst.Assign):
                    env[small.targets[0].target.value] = self._value(small.value, env, seen)  # type: ignore
        return _FELL_THROUGH

    def _resolved(self, node: cst.BaseExpression) -> str | None:
        """The module-level name ``node`` (``math.cos``, ``torch.ones``) stands for, through the imports."""
        owner = self.caller.owner
        return owner.resolve_expr(node) if owner is not None and isinstance(node, cst.Attribute) else None

    def _makes_tensor(self, func: cst.BaseExpression, ev: "Callable[[cst.BaseExpression], Any]") -> bool:
        """``func`` called returns a tensor: a torch function that does (``torch.ones``, ``F.one_hot``), or a
        tensor method (:data:`knowledge.TENSOR_METHODS`) of a tensor (``x.flip``, ``t.float``)."""
        if not isinstance(func, cst.Attribute):
            return False
        qualname = self._resolved(func)
        if K.makes_tensor_from_sizes(qualname) or K.returns_tensor(qualname):
            return True
        return qualname is None and func.attr.value in K.TENSOR_METHODS and ev(func.value) is TENSOR

    def _built_attribute(self, built: Built, attr: str, seen: frozenset[str]) -> Any:
        """The value of ``<instance>.<attr>`` for an instance of a plain class of the module the replay saw
        made (``Config()``), where nothing in the module changes it (no ``obj.<attr> = v`` and no
        ``self.<attr> = v`` outside ``__init__``, no ``__setattr__``/``__getattr__``, no method of that
        name): what ``__init__`` stores in it by one assignment of its body, of the constructor's arguments
        and literals; else the class attribute it reads (``noise_std = 3e-4`` in the class body); for a
        dataclass, the field's argument or default.  UNKNOWN otherwise."""
        owner = self.caller.owner
        cls = owner.classes.get(built.func.value) \
            if owner is not None and isinstance(built.func, cst.Name) else None
        if cls is None or cls.is_module or cls.bases and list(cls.bases) != ["object"] \
                or attr in owner.attr_writes_outside or attr in cls.methods \
                or any(m in cls.methods for m in ("__setattr__", "__getattr__", "__getattribute__", "__new__",
                                                  "__post_init__")):
            return UNKNOWN
        init = cls.methods.get("__init__")
        if init is not None:
            found = self._init_store(init.node, built, attr, seen)
            if found is not None:
                return found
        elif decorated_as_dataclass(cls) and attr in cls.field_annotations:
            fields = list(cls.field_annotations)
            given = {name: value for name, value in zip(fields, built.args)}
            given.update(built.keywords)
            if len(built.args) > len(fields) or set(given) - set(fields):
                return UNKNOWN
            if attr in given:
                return given[attr]
        elif built.args or built.keywords:
            return UNKNOWN  # made with arguments by an `__init__` of another class
        default = cls.body_assigns.get(attr)
        return self._value(default, {}, seen) if default is not None and not isinstance(default, cst.Call) \
            else UNKNOWN

    def _init_store(self, init: cst.FunctionDef, built: Built, attr: str, seen: frozenset[str]) -> Any:
        """What ``init`` stores in ``self.<attr>`` for the arguments of ``built``, when one assignment of its
        body does (UNKNOWN where it is not known); None when it stores nothing there."""
        p = init.params
        if p.posonly_params or p.kwonly_params or isinstance(p.star_arg, cst.Param) \
                or p.star_kwarg is not None or not p.params or len(built.args) > len(p.params) - 1:
            return UNKNOWN
        me, params = p.params[0].name.value, p.params[1:]
        stores = [n for n in walk(init.body, into_scopes=False) if isinstance(n, cst.AssignTarget)
                  and isinstance(n.target, cst.Attribute) and isinstance(n.target.value, cst.Name)
                  and n.target.value.value == me and n.target.attr.value == attr]
        if not stores:
            return None
        top = [s.body[0] for s in init.body.body if isinstance(s, cst.SimpleStatementLine)
               and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) and len(s.body[0].targets) == 1
               and s.body[0].targets[0] is stores[0]]
        given = {prm.name.value: value for prm, value in zip(params, built.args)}
        given.update(built.keywords)
        if len(stores) != 1 or not top or set(given) - {prm.name.value for prm in params}:
            return UNKNOWN
        bound = {prm.name.value: given[prm.name.value] if prm.name.value in given else
                 self._value(prm.default, {}, seen) if prm.default is not None else UNKNOWN for prm in params}
        return self._value(top[0].value, bound, seen | {me})

    def _class(self, name: str) -> bool:
        """``name`` is a class the module defines (not a name the caller binds)."""
        owner = self.caller.owner
        return name not in self.locals and owner is not None and name in owner.classes

    @staticmethod
    def _item(node: cst.Subscript, ev: Any) -> Any:
        if len(node.slice) != 1:
            return UNKNOWN
        part = node.slice[0].slice
        if isinstance(part, cst.Slice):  # `ts[1:]`, `ts[:-1]` of a known list or tuple
            container = ev(node.value)
            bounds = [ev(b) if b is not None else None for b in (part.lower, part.upper, part.step)]
            if isinstance(container, (tuple, list)) and all(b is None or type(b) is int for b in bounds) \
                    and bounds[2] != 0:
                return container[slice(*bounds)]
            return UNKNOWN
        if not isinstance(part, cst.Index):
            return UNKNOWN
        container = ev(node.value)
        key = ev(node.slice[0].slice.value)
        if isinstance(container, (tuple, list)) and type(key) is int or \
                isinstance(container, dict) and isinstance(key, _SCALARS) and key is not UNKNOWN:
            return container[key]
        return UNKNOWN


def constant(node: cst.BaseExpression, names: "Mapping[str, Any] | None" = None) -> Any:
    """The number an expression of number literals computes (``1 + 0.5``, ``-2 * 3``, ``1 / 4``), and of the
    numbers ``names`` gives for its names (``step + 1``), or the flag a comparison of two such gives
    (``step >= 2``); ``UNKNOWN`` for anything else."""
    try:
        if isinstance(node, (cst.Integer, cst.Float)):
            return literal_value(node)
        if isinstance(node, cst.Name) and names is not None:
            value = names.get(node.value, UNKNOWN)
            return value if _number(value) else UNKNOWN
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            value = constant(node.expression, names)
            return UNKNOWN if not _number(value) else -value if isinstance(node.operator, cst.Minus) else value
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in _BINARY:
            left, right = constant(node.left, names), constant(node.right, names)
            return _apply(_BINARY[type(node.operator)], left, right)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in _COMPARE:  # (`step >= 2`)
            left, right = constant(node.left, names), constant(node.comparisons[0].comparator, names)
            return _COMPARE[type(node.comparisons[0].operator)](left, right) if _number(left) and _number(right) \
                else UNKNOWN
    except (ArithmeticError, TypeError, ValueError, SyntaxError):
        pass
    return UNKNOWN


_ORDER = {cst.LessThan: True, cst.LessThanEqual: True, cst.GreaterThan: False, cst.GreaterThanEqual: False}
"""Order comparisons, by whether they hold when the left side is the smaller."""


def _drawn(left: Any, operator: cst.BaseCompOp, right: Any) -> "Drawn | None":
    """The flag comparing ``random.random()`` with a probability gives (``random.random() < 0.5``, ``ratio >
    random.random()``); None for any other comparison."""
    smaller = _ORDER[type(operator)]  # type: ignore[index]
    if left is _UNIT and _number(right) and 0 < right < 1:
        return Drawn(right if smaller else 1 - right)
    if right is _UNIT and _number(left) and 0 < left < 1:
        return Drawn(1 - left if smaller else left)
    return None


def _no_value() -> Any:
    """What an operation the replay does not compute gives (a power of a large exponent): it is not known."""
    raise ValueError("not computed")


def _apply(op: Any, left: Any, right: Any) -> Any:
    """``op`` on two numbers (strings for ``+``), or on sequences: two lists or two tuples joined, one
    repeated a few times (``[("epsilon", 8)] * 2 + [("v_prediction", 8)] * 2``); UNKNOWN otherwise."""
    if isinstance(left, (list, tuple)) or isinstance(right, (list, tuple)):
        sequence, count = (left, right) if isinstance(left, (list, tuple)) else (right, left)
        if type(left) is type(right) and op is _BINARY[cst.Add]:
            return op(list(left), list(right)) if isinstance(left, list) else op(left, right)
        if op is _BINARY[cst.Multiply] and type(count) is int and 0 <= count * len(sequence) <= MAX_ITERATIONS:
            return list(sequence) * count if isinstance(sequence, list) else sequence * count
        return UNKNOWN
    if not (_number(left) and _number(right) or isinstance(left, str) and isinstance(right, str)):
        return UNKNOWN
    result = op(left, right)
    if isinstance(result, float) and not math.isfinite(result):
        return UNKNOWN
    return result


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and value is not UNKNOWN


def _comparable(left: Any, right: Any) -> bool:
    return _number(left) and _number(right) or type(left) is type(right) and isinstance(left, _SCALARS)


def _known(value: Any) -> bool:
    """Known all the way down (a container holds no unknown element)."""
    if value is UNKNOWN:
        return False
    if isinstance(value, (tuple, list)):
        return all(_known(v) for v in value)
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    return True


def _names_in(node: cst.CSTNode) -> Iterator[str]:
    """The names a target binds or roots (``a``, ``a, b``, ``a.x`` -> ``a``, ``a[i]`` -> ``a``)."""
    if isinstance(node, cst.Name):
        yield node.value
    elif isinstance(node, (cst.Tuple, cst.List)):
        for e in node.elements:
            yield from _names_in(e.value)
    elif isinstance(node, (cst.Attribute, cst.Subscript)):
        yield from _names_in(node.value)
    elif isinstance(node, cst.StarredElement):
        yield from _names_in(node.value)


def _drop_attributes(env: dict[str, Any], name: str) -> None:
    """Forget the attributes of ``name`` the replay knows (``name`` is bound again, or changed)."""
    for key in [k for k in env if k.startswith(f"{name}.")]:
        del env[key]


def _plain_objects(fn: cst.FunctionDef, parents: dict[int, cst.CSTNode]) -> set[str]:
    """The names of ``fn`` used only as they are bound and through attributes read or stored (``cfg.alpha =
    0.4``; ``mix(x, cfg.alpha)``): no method of them is called and they are handed to no call, so only those
    statements change the attributes the replay reads back."""
    seen: set[str] = set()
    other: set[str] = set()
    skip: set[int] = set()
    for n in walk(fn.body, into_scopes=True):
        if isinstance(n, cst.Attribute):
            skip.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skip.add(id(n.keyword))
        elif isinstance(n, cst.Name) and id(n) not in skip:
            seen.add(n.value)
            parent = parents.get(id(n))
            holder = parents.get(id(parent))
            read = isinstance(parent, cst.Attribute) and parent.value is n \
                and not (isinstance(holder, cst.Call) and holder.func is parent)
            if not (read or isinstance(parent, cst.AssignTarget) and parent.target is n):
                other.add(n.value)
    return seen - other


def _bound_names(root: cst.CSTNode) -> set[str]:
    """Every name a function (or statement) binds anywhere in its own scope, parameters included."""
    out: set[str] = set()
    if isinstance(root, cst.FunctionDef):
        p = root.params
        out |= {prm.name.value for prm in (*p.posonly_params, *p.params, *p.kwonly_params)}
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                out.add(star.name.value)
    for n in walk(root.body if isinstance(root, cst.FunctionDef) else root, into_scopes=False):
        if isinstance(n, cst.AssignTarget):
            out |= set(_names_in(n.target))
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            out |= set(_names_in(n.target))
        elif isinstance(n, (cst.For, cst.CompFor)):
            out |= set(_names_in(n.target))
        elif isinstance(n, cst.AsName):
            out |= set(_names_in(n.name))
        elif isinstance(n, cst.NamedExpr):
            out |= set(_names_in(n.target))
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n is not root:
            out.add(n.name.value)
        elif isinstance(n, cst.ImportAlias):
            name = n.asname.name if n.asname is not None else n.name
            out |= set(_names_in(name)) if not isinstance(name, cst.Attribute) else {_root_of(name)}
    return out


def _root_of(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _mutated_names(fn: cst.FunctionDef, parents: dict[int, cst.CSTNode], replayed: cst.Call | None = None,
                   rebound: set[str] = frozenset(),  # type: ignore[assignment]
                   grown: set[int] = frozenset(),  # type: ignore[assignment]
                   helpers: "Mapping[str, cst.FunctionDef] | None" = None) -> set[str]:
    """The names of ``fn`` whose value may be changed in place: a method is called on them, an
    attribute or item is stored into them, or they are passed to a call (other than a builtin that only
    reads, the ``replayed`` call given one of the ``rebound`` names, one of the ``grown`` calls, which
    the replay runs, or one of the ``helpers`` that changes nothing of that parameter:
    ``make_batch(sizes)`` with ``return [torch.randn(n) for n in sizes]``)."""
    out: set[str] = set()
    for n in walk(fn.body, into_scopes=True):
        if not isinstance(n, cst.Name):
            continue
        parent = parents.get(id(n))
        if isinstance(parent, cst.Attribute) and parent.value is n:
            holder = parents.get(id(parent))
            if id(holder) in grown:
                continue
            if isinstance(holder, cst.Call) and holder.func is parent and parent.attr.value not in _READING_METHODS \
                    or _stored(parent, parents):
                out.add(n.value)
        elif isinstance(parent, cst.Subscript) and parent.value is n and _stored(parent, parents):
            out.add(n.value)
        elif isinstance(parent, cst.Arg) and parent.value is n and not parent.star:
            call = parents.get(id(parent))
            if id(call) in grown:
                continue  # (held by the list from then on: a change made through the name is seen there)
            if helpers and isinstance(call, cst.Call) and _reads_only(call, parent, helpers):
                continue
            if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
                    and call.func.value in _HARMLESS_CALLS) and not (call is replayed and n.value in rebound):
                out.add(n.value)
    return out


def _reads_only(call: cst.Call, arg: cst.Arg, helpers: "Mapping[str, cst.FunctionDef]") -> bool:
    """``call`` runs one of the ``helpers`` whose parameter ``arg`` binds it changes nothing of (no method
    called on it, nothing stored into it, not handed on)."""
    helper = helpers.get(call.func.value) if isinstance(call.func, cst.Name) else None
    if helper is None or any(a.star for a in call.args) or isinstance(helper.params.star_arg, cst.Param) \
            or helper.params.star_kwarg is not None:
        return False
    params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
    if arg.keyword is not None:
        name = arg.keyword.value
    else:
        at = [a for a in call.args if a.keyword is None].index(arg)
        name = params[at] if at < len(params) else None
    inner = {id(n): p for n, p in walk_with_parents(helper) if p is not None}
    return name is not None and name not in _bound_names(helper.body) and name not in _mutated_names(helper, inner)


def _growing_statements(fn: cst.FunctionDef) -> dict[int, str]:
    """The calls ``xs.append(v)`` and ``xs.extend(vs)`` that are whole statements of ``fn``'s own scope (not
    of a function or lambda it defines, which may run at any time), by id, with the name they grow."""
    out: dict[int, str] = {}
    for n in walk(fn.body, into_scopes=False):
        if isinstance(n, cst.Expr) and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Attribute) \
                and isinstance(n.value.func.value, cst.Name) and n.value.func.attr.value in ("append", "extend") \
                and len(n.value.args) == 1 and not n.value.args[0].star and n.value.args[0].keyword is None:
            out[id(n.value)] = n.value.func.value.value
    return out


def _copied(env: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``env`` whose lists and dicts are new ones, shared between names as the originals are."""
    memo: dict[int, Any] = {}

    def copy(value: Any) -> Any:
        if isinstance(value, (list, dict)):
            if id(value) not in memo:
                memo[id(value)] = made = type(value)()
                if isinstance(value, list):
                    made.extend(copy(v) for v in value)
                else:
                    made.update((k, copy(v)) for k, v in value.items())
            return memo[id(value)]
        return tuple(copy(v) for v in value) if isinstance(value, tuple) else value

    return {name: copy(value) for name, value in env.items()}


def _holds(value: Any, held: list[Any]) -> bool:
    """``value`` is the list ``held``, or a container with it among its items at any depth."""
    if value is held:
        return True
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return any(_holds(item, held) for item in items)


def _names_grown(root: cst.CSTNode, grown: Mapping[int, str]) -> set[str]:
    """The names the growing statements under ``root`` grow."""
    return {grown[id(n)] for n in walk(root, into_scopes=False) if id(n) in grown}


def _stored(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> bool:
    """``node`` (an attribute or item) is a target: assigned, augmented or deleted."""
    parent = parents.get(id(node))
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
        parent = parents.get(id(parent))
    return isinstance(parent, (cst.AssignTarget, cst.Del)) or \
        isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node
