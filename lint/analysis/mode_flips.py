"""Calls of a compiled module in training mode and in evaluation mode.

Dynamo guards on ``self.training`` wherever the compiled ``forward`` reads it: its own ``if
self.training:``, ``F.dropout(x, training=self.training)``, or a submodule whose ``forward`` reads
it (dropout, batch and instance norm, multi-head attention and the transformer layers, measured
one by one on torch 2.13). A caller that calls the module, switches it with ``.eval()`` or
``.train(False)`` and calls it again makes the second call fail the guard and compile a second graph
(one recompile: both graphs stay cached, so switching back and forth costs nothing more). A module
whose ``forward`` never reads the flag (linear and convolution layers, layer and group norm,
activations) does not recompile.

Read from one function at a time (a script's statements at module level are one): the local names
bound to ``ClassName(...)`` of a module class (and to ``torch.compile(...)`` of one), the calls of those
names and their ``.train()``/``.eval()`` calls in source order, a loop's body counted as running again after
its end.  Only a module the function builds is followed (it starts in training mode); a module class many
modules import is looked for in this file only (see :data:`~dynalint.analysis.number_callers.MAX_IMPORTERS`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis.loop_arguments import loop_argument_values
from dynalint.analysis.module_index import top_level_code
from dynalint.analysis.number_callers import MAX_IMPORTERS
from dynalint.analysis.syntax import walk
from dynalint.core.source import SourceError, read_bytes

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex
    from dynalint.analysis.program import Program

TRAINING_READERS = frozenset(f"torch.nn.{name}" for name in """
    Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout
    BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d
    InstanceNorm1d InstanceNorm2d InstanceNorm3d
    MultiheadAttention TransformerEncoderLayer TransformerDecoderLayer
""".split())
"""``torch.nn`` modules whose ``forward`` reads ``self.training`` where Dynamo guards on it (a mode
switch between two calls recompiled a module holding one, on torch 2.13)."""

_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
_MAX_DEPTH = 4


@dataclass(frozen=True)
class ModeFlip:
    """A module class of the analysed file that a function calls in both modes."""

    caller: "FunctionInfo"
    owner: "Program"
    """The program of the caller's module (the analysed one, or a module that imports the class)."""
    cls: "ClassInfo"
    name: str
    """The local name the module is called by."""
    switch: cst.Call
    """The ``.eval()``/``.train()`` call after which a call runs in the other mode."""
    before: cst.Call
    """A call in the mode before the switch."""
    after: cst.Call
    """A call in the mode the switch sets."""
    mode: bool
    """The mode the switch sets (True: training)."""


def mode_flips(program: "Program") -> Iterator[ModeFlip]:
    """The module classes of the analysed file whose ``forward`` reads ``self.training`` and that a
    function of this file, or of a file that imports the class, calls in both modes (functions that
    run compiled are left out: their calls are inlined into one graph)."""
    idx = program.index
    classes = {id(c): c for c in idx.classes.values() if c.is_module and "forward" in c.methods}
    if not classes:
        return
    compiled = {id(fn) for fn in program.entry_compiled}
    # (a script's own statements too: `model.eval()` between two calls in its `__main__` block)
    places = [(program, [*(fn for fn in idx.all_functions if id(fn) not in compiled), top_level_code(idx)])] \
        if _switches(idx) else []
    for other in _importers_switching(program, {c.name for c in classes.values()}):
        places.append((program.program_for(other), [fn for fn in other.all_functions if not _runs_compiled(fn)]))
    known: dict[int, bool] = {}
    for owner, functions in places:
        for fn in functions:
            names = _module_names(owner, fn)
            for name, (cls, built) in names.items():
                if id(cls) not in classes:
                    continue
                # `compiled = torch.compile(model)`: one module under two names
                same = {n for n, (c, _) in names.items() if c is cls and _alias_root(owner, fn, n) == _alias_root(
                    owner, fn, name)}
                if min(same) != name:
                    continue
                # calls of the module's plain name run eagerly where another name holds its compiled form
                wrapped = {n for n in same if _compiles(owner, _bound_once(fn, n))}
                called = wrapped if wrapped and not cls.methods["forward"].compile_decorated else same
                flip = _flip(fn, same, built, called)
                if flip is not None and reads_training(program, cls, known):
                    yield ModeFlip(fn, owner, cls, name, *flip)


def _switches(idx: "ModuleIndex") -> bool:
    """Whether the module's text has a ``.eval(`` or ``.train(`` at all (most modules have none)."""
    text = idx.text
    return ".eval(" in text or ".train(" in text


def _runs_compiled(fn: "FunctionInfo") -> bool:
    return fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)


def _importers_switching(program: "Program", names: set[str]) -> Iterator["ModuleIndex"]:
    """The modules of the project that import one of ``names`` from the analysed module (or the
    module itself) and switch a mode somewhere in their text."""
    project, idx = program.project, program.index
    if project is None or not idx.name:
        return
    importers = [importer for importer, taken in project.importers_of(idx.name)
                 if taken is None or "*" in taken or taken & names]
    if len(importers) > MAX_IMPORTERS:
        return  # a class many modules of a package use: not each one is read (see MAX_IMPORTERS)
    for importer in importers:
        path = project.paths.get(importer)
        if path is None:
            continue
        project.read.add(path)  # what is found depends on its text
        try:
            text = read_bytes(path).decode("utf-8", "replace")
        except SourceError:
            continue
        if ".eval(" in text or ".train(" in text:
            other = project.load(importer)
            if other is not None:
                yield other


def _module_names(program: "Program", fn: "FunctionInfo") -> dict[str, tuple["ClassInfo", bool]]:
    """Local names bound once in ``fn`` to a module (``Net(...)`` or ``torch.compile`` of one), with
    whether the function builds it (then it starts in training mode)."""
    bound: dict[str, list[cst.BaseExpression | None]] = {}
    for n in walk(fn.node.body, into_scopes=False):
        targets: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []
        if isinstance(n, cst.Assign):
            targets = [(t.target, n.value) for t in n.targets]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [(n.target, n.value)]
        elif isinstance(n, (cst.For, cst.CompFor)):
            targets = [(n.target, None)]
        elif isinstance(n, cst.WithItem) and n.asname is not None:
            targets = [(n.asname.name, None)]
        for target, value in targets:
            for m in walk(target):
                if isinstance(m, cst.Name):
                    bound.setdefault(m.value, []).append(value if m is target else None)
    out: dict[str, tuple[ClassInfo, bool]] = {}
    for name, values in bound.items():
        if len(values) != 1 or name in fn.param_names():
            continue
        cls = _module_class(program, values[0], bound, 0)
        if cls is not None:
            out[name] = (cls, True)
    return out


def _module_class(program: "Program", value: cst.BaseExpression | None,
                  bound: dict[str, list[cst.BaseExpression]], depth: int) -> "ClassInfo | None":
    """The module class that ``value`` builds: ``Net(...)``, ``torch.compile(Net(...))``,
    ``torch.compile(net)`` of a name bound once to one."""
    if not isinstance(value, cst.Call) or depth > 2:
        return None
    if program.index.resolve_expr(value.func) == "torch.compile":
        if not value.args or value.args[0].keyword is not None or value.args[0].star:
            return None
        inner = value.args[0].value
        if isinstance(inner, cst.Name):
            values = bound.get(inner.value, [])
            return _module_class(program, values[0], bound, depth + 1) if len(values) == 1 else None
        return _module_class(program, inner, bound, depth + 1)
    made = program.names.static_value_of(value.func)
    cls = made.cls if made is not None else None
    return cls if cls is not None and cls.is_module and cls.find_method("forward") is not None else None


def _alias_root(program: "Program", fn: "FunctionInfo", name: str) -> str:
    """The name a ``torch.compile(name)`` bound to ``name`` compiles (``name`` itself otherwise)."""
    for _ in range(3):
        value = _bound_once(fn, name)
        if not (isinstance(value, cst.Call) and program.index.resolve_expr(value.func) == "torch.compile"
                and value.args and isinstance(value.args[0].value, cst.Name)):
            break
        name = value.args[0].value.value  # type: ignore[union-attr]
    return name


def _bound_once(fn: "FunctionInfo", name: str) -> cst.BaseExpression | None:
    found = [n.value for n in walk(fn.node.body, into_scopes=False) if isinstance(n, cst.Assign)
             and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)
             and n.targets[0].target.value == name]
    return found[0] if len(found) == 1 else None


def _compiles(program: "Program", value: cst.BaseExpression | None) -> bool:
    """``value`` is a ``torch.compile(...)`` call."""
    return isinstance(value, cst.Call) and program.index.resolve_expr(value.func) == "torch.compile"


def _flip(fn: "FunctionInfo", name: set[str], built: bool, called: set[str]
          ) -> tuple[cst.Call, cst.Call, cst.Call, bool] | None:
    """(switch, call before, call after, mode set) when ``fn`` calls the module it binds to the names
    ``name`` in both modes, through the names ``called`` (those that run it compiled)."""
    steps: list[tuple[cst.Call, bool | None]] = []  # (node, mode set) or (call, None)
    loops: list[tuple[int, int]] = []  # spans of steps inside each loop body
    _steps(fn.node.body, name, called, steps, loops)
    for i, (node, mode) in enumerate(steps):
        if mode == "unknown":
            # `fe.train(epoch == 0)` in a loop: the modes a replay of the loop gives it, pass by pass
            modes = loop_argument_values(node, fn, ["mode"]).get("mode", [])
            if not modes or not all(type(m) is bool for m in modes):
                return None
            if len(set(modes)) > 1:
                return _flip_in_loop(i, steps, loops, modes)
            steps[i] = (node, modes[0])
    switches = [(i, mode) for i, (_, mode) in enumerate(steps) if mode is not None]
    if not switches:
        return None
    calls_in: dict[bool, tuple[int, int]] = {}
    for i, (node, mode) in enumerate(steps):
        if mode is not None:
            continue
        for current, switch in _modes_at(i, steps, loops, built):
            calls_in.setdefault(current, (i, switch))
    if True not in calls_in or False not in calls_in:
        return None
    # the switch that sets the mode of the later of the two calls (by source order)
    first_mode = min(calls_in, key=lambda m: calls_in[m][0])
    later, switch = calls_in[not first_mode]
    if switch is None:
        return None
    return (steps[switch][0], steps[calls_in[first_mode][0]][0], steps[later][0], not first_mode)


def _flip_in_loop(i: int, steps: list, loops: list[tuple[int, int]], modes: list[bool]
                  ) -> tuple[cst.Call, cst.Call, cst.Call, bool] | None:
    """The flip a switch (``steps[i]``) that sets other modes on other iterations of its loop makes: a call
    after it in the loop's body, with no other switch between, runs in each mode it sets."""
    loop = min(((start, end) for start, end in loops if start <= i < end), default=None, key=lambda s: s[1] - s[0])
    if loop is None:
        return None
    for j in range(i + 1, loop[1]):
        if steps[j][1] is not None:
            return None  # (another switch decides the mode of what follows)
        switch, call = steps[i][0], steps[j][0]
        return switch, call, call, modes[next(k for k, m in enumerate(modes) if m != modes[0])]
    return None


def _modes_at(i: int, steps: list, loops: list[tuple[int, int]], built: bool) -> list[tuple[bool, int | None]]:
    """The modes the call at ``steps[i]`` may run in, each with the switch that set it (None: the
    training mode a module starts in)."""
    for j in range(i - 1, -1, -1):
        if steps[j][1] is not None:
            found = [(steps[j][1], j)]
            break
    else:
        found = [(True, None)] if built else []
    # in a loop with no switch before the call, a switch after it sets the mode of the next iteration's call
    for start, end in loops:
        if start <= i < end and all(steps[j][1] is None for j in range(start, i)):
            later = [j for j in range(end - 1, i, -1) if steps[j][1] is not None]
            if later:
                found.append((steps[later[0]][1], later[0]))
    return found


def _steps(body: cst.CSTNode, name: set[str], called: set[str], steps: list,
           loops: list[tuple[int, int]]) -> None:
    """The calls of ``called`` and the mode switches of ``name`` in source order (not into nested
    functions)."""
    for n in _children_in_order(body):
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(n, (cst.For, cst.While)):
            _steps(n.iter if isinstance(n, cst.For) else n.test, name, called, steps, loops)
            start = len(steps)
            _steps(n.body, name, called, steps, loops)
            loops.append((start, len(steps)))
            if n.orelse is not None:
                _steps(n.orelse, name, called, steps, loops)
            continue
        _steps(n, name, called, steps, loops)
        if isinstance(n, cst.Call):
            step = _step(n, name)
            if step is not None and (step[1] is not None
                                     or isinstance(n.func, cst.Name) and n.func.value in called):
                steps.append(step)


def _children_in_order(node: cst.CSTNode) -> list[cst.CSTNode]:
    return list(node.children)


def _step(call: cst.Call, name: set[str]) -> tuple[cst.Call, "bool | str | None"] | None:
    """``name(...)`` -> (call, None); ``name.eval()`` -> False; ``name.train()`` / ``name.train(b)``
    -> b ("unknown" when not a literal)."""
    func = call.func
    if isinstance(func, cst.Name) and func.value in name:
        return call, None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in name:
        if func.attr.value == "eval" and not call.args:
            return call, False
        if func.attr.value == "train":
            if not call.args:
                return call, True
            arg = call.args[0].value
            if len(call.args) == 1 and isinstance(arg, cst.Name) and arg.value in ("True", "False"):
                return call, arg.value == "True"
            return call, "unknown"  # type: ignore[return-value]
    return None


def reads_training(program: "Program", cls: "ClassInfo", known: dict[int, bool] | None = None,
                   depth: int = 0) -> bool:
    """Whether the ``forward`` of instances of ``cls`` reads ``self.training`` where Dynamo guards on
    it: a method of the class (or of a base in the project) reads it, a base or a submodule a method
    assigns to ``self`` is one of :data:`TRAINING_READERS` (or a container of one), or a submodule of
    the project reads it in turn. ``known``: the answers so far, by class (a class that holds itself
    through others is not followed round)."""
    known = {} if known is None else known
    if id(cls) in known:
        return known[id(cls)]
    known[id(cls)] = False
    found = depth <= _MAX_DEPTH and _reads_training(program, cls, known, depth)
    known[id(cls)] = found
    return found


def _reads_training(program: "Program", cls: "ClassInfo", known: dict[int, bool], depth: int) -> bool:
    for c in cls.mro():
        owner = c.owner
        if owner is None:
            continue
        prog = program.program_for(owner)
        if any(owner.resolve(b) in TRAINING_READERS for b in c.bases):
            return True
        for method in c.methods.values():
            for n in walk(method.node.body):
                if isinstance(n, cst.Attribute) and n.attr.value == "training" \
                        and isinstance(n.value, cst.Name) and n.value.value == "self":
                    return True
                if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and any(
                        isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                        and t.target.value.value == "self" for t in n.targets) \
                        and _builds_reader(prog, n.value, known, depth):
                    return True
    return False


def _builds_reader(program: "Program", call: cst.Call, known: dict[int, bool], depth: int) -> bool:
    """``nn.Dropout(...)``, a project module that reads the flag, or a container built of them."""
    q = program.index.resolve_expr(call.func)
    if q in TRAINING_READERS:
        return True
    if q in _CONTAINERS:
        return any(isinstance(n, cst.Call) and n is not call and _builds_reader(program, n, known, depth)
                   for n in walk(call))
    made = program.names.static_value_of(call.func)
    cls = made.cls if made is not None else None
    return cls is not None and cls.is_module and reads_training(program, cls, known, depth + 1)
