"""Parameters every caller in the project passes a Python number.

An untyped parameter of ``forward`` (or of a function handed to ``torch.compile``) is taken for a
tensor: nothing says otherwise.  When the project shows every call of the function, and each
passes a Python number for the parameter (a literal, a loop counter over ``range``, an ``int``
parameter, a number-valued attribute or config field, a shape's arithmetic, a key of a dict of
numbers spread with ``**``), Dynamo sees a number there: a test of it is guarded, not a graph break
(measured on torch 2.13).  Every call must be found for that to be known: a function or class name
used any other way (passed on, stored in a container, subclassed, compiled other than into a name
that is only called) leaves the parameter as it was, as does a call whose argument is not known to
be a number.
The calls are those of its module and of the project's modules that import it (found with the
project index's import scan), by any name the import binds (``from m import f as g``, ``import
pkg.m``, a package that re-exports it); a module that takes it with ``*`` or uses the name any other
way leaves the parameter as it was.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, TypeVar

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.evaluator import FunctionEvaluator
from dynalint.analysis.interface import ProgramView, SignaturesView
from dynalint.analysis.loop_arguments import UNKNOWN, loop_argument_values
from dynalint.analysis.module_index import (body_bindings, import_bindings, local_names_of, names_bound_by,
                                            names_reaching, top_level_code)
from dynalint.analysis.project import absolute
from dynalint.analysis.replay import interface_token, name_token
from dynalint.analysis.syntax import (binding_reach, dotted_name, nodes_and_parents, position_bound,
                                      unpacked_target, walk)
from dynalint.analysis.values import ALL_DIMS, Kind, Value, join, join_all, mapping, python, sequence, tensor

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.evaluator import Evidence
    from dynalint.analysis.module_index import FunctionInfo, ModuleIndex
    from dynalint.analysis.project import SourceIndex


class Program(ProgramView, Protocol):
    """What the search reads of the program (the module's :class:`Program`, which imports this one)."""

    project: "SourceIndex | None"
    signatures: "_Signatures"

    def program_for(self, owner: "ModuleIndex | None") -> "Program": ...


class _Signatures(SignaturesView, Protocol):
    """What the search reads of the program's signatures
    (:class:`~dynalint.analysis.signatures.Signatures`)."""

    def param_env(self, fn: "FunctionInfo", evidence: "Evidence | None") -> dict[str, Value]: ...

    def evidence(self, fn: "FunctionInfo") -> "Evidence": ...

    def numbers_passed(self, fn: "FunctionInfo") -> frozenset[str]: ...

    def masks_passed(self, fn: "FunctionInfo") -> frozenset[str]: ...

    def objects_passed(self, fn: "FunctionInfo") -> dict[str, Value]: ...

    def caller_search(self, fn: "FunctionInfo", depth: int, search: "Callable[[], _T]") -> "_T": ...


_NUMBER_TYPES = (None, "builtins.int", "builtins.float", "builtins.bool")


def number_params(program: Program, fn: "FunctionInfo", depth: int) -> frozenset[str]:
    """The parameters of ``fn`` to which every call in the project passes a Python number (empty when
    a call cannot be found or read).

    What the answer read, for replaying it after an edit (:mod:`dynalint.analysis.replay`): ``fn``'s
    header (its name and parameters: :func:`interface_token`, which an edit of its body alone leaves,
    the body holding a call of ``fn`` only among the uses below) and its class's shell, the callers
    (their evaluations below record that), and the uses
    in the module of each name the search looked for (the function's name, its class's, the names and
    attributes instances are stored in): every call found holds one, so an edit of a caller, or one
    that adds or removes a use (in a function, or in a class outside its methods), changes one of
    them."""
    found = _recorded_search(program, fn, depth)
    if found is None:
        return frozenset()
    sites, names, candidates, seen = found
    defaulted = _defaulted(fn)
    outside = [call for call, caller, _ in sites if caller is not fn]
    return frozenset(name for name in candidates if outside and all(
        _passes_number(call, names, name, seen, defaulted)
        or (caller is fn and _number_carried(_bind(call, names), name)) for call, caller, _ in sites))


def _number_carried(bound: "dict[str, cst.BaseExpression] | None", name: str) -> bool:
    """A call of the function in its own body passes ``name`` on as arithmetic of itself and number
    literals (``depth - 1``, ``n // 2``): a number wherever every other call passes one (by induction
    over the recursion), though evaluated inside the body, where ``name`` is not yet known, it is not."""
    if bound is None or name not in bound:
        return False

    def number_of(e: cst.BaseExpression) -> bool:
        if type(e) is cst.Name:
            return e.value == name
        if type(e) in (cst.Integer, cst.Float):
            return True
        if type(e) is cst.UnaryOperation:
            return type(e.operator) in (cst.Minus, cst.Plus) and number_of(e.expression)
        if type(e) is cst.BinaryOperation:
            return type(e.operator) in _ARITHMETIC and number_of(e.left) and number_of(e.right)
        return False

    return number_of(bound[name])


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Divide, cst.Modulo, cst.Power)


def _recorded_search(program: Program, fn: "FunctionInfo", depth: int
                     ) -> tuple[list, list[str], set[str], dict[int, Value]] | None:
    """:func:`_passed`, with what it read recorded for a replay (see :func:`number_params`), made once per
    analysis for the searches of every kind of value."""
    return program.signatures.caller_search(
        fn, depth, lambda: _recorded(program, fn, lambda: _passed(program, fn, depth)))


def _recorded(program: Program, fn: "FunctionInfo", search: "Callable[[], _T]") -> "_T":
    """What ``search`` (of the calls of ``fn``) finds, with what it read recorded for a replay."""
    _SEARCHED.append(set())
    try:
        found = search()
    finally:
        searched = _SEARCHED.pop()
    tracker = program.tracker
    if tracker is not None:
        tracker.touch(interface_token(fn))
        for name, attribute in searched:
            tracker.touch(name_token(name, attribute))
        if fn.cls is not None:
            program.classes.touch_class(fn.cls)
    return found


_T = TypeVar("_T")

_SEARCHED: list[set[tuple[str, bool]]] = []
"""Per :func:`number_params` in progress: the names (and whether each is an attribute's) whose uses in
the module its search looked for."""


def _searched(name: str, attribute: bool = False) -> None:
    if _SEARCHED:
        _SEARCHED[-1].add((name, attribute))


def object_params(program: Program, fn: "FunctionInfo", depth: int) -> dict[str, Value]:
    """The parameters of ``fn`` to which every call in the project passes an object of the same class (an
    instance of a class of the checked code, a module or optimizer of torch), each with that object: a
    ``step(model, opt, x)`` compiled and called with ``Net()`` and ``torch.optim.SGD(...)`` runs the model's
    ``forward`` and the optimizer's ``step`` (what the answer read is recorded as :func:`number_params`
    records it)."""
    found = _recorded_search(program, fn, depth)
    if found is None:
        return {}
    out: dict[str, Value] = {}
    for name, values in _values_passed(found):
        first = values[0]
        if first is not None and _is_object(first) and all(
                v is not None and v.cls is first.cls and v.qualname == first.qualname and v.kind is first.kind
                for v in values):
            out[name] = _agreed_fields(first, values, _written_attributes(program, found[0])).with_(
                params=frozenset(), param=None)
    return out


def _written_attributes(program: Program, sites: list) -> set[str]:
    """The attribute names that code of ``fn``'s module or of its callers' modules stores on an object
    other than ``self`` in its ``__init__`` (``cfg.tf_ratio *= 0.5`` between two calls)."""
    written = set(program.index.attr_writes_outside)
    for _, _, caller_program in sites:
        written.update(caller_program.index.attr_writes_outside)
    return written


def _agreed_fields(first: Value, values: "list[Value | None]", written: set[str]) -> Value:
    """``first`` with only the fields of a record that every call passes alike and that no code changes
    after the record is built (``Cfg()`` and ``Cfg(p=0.5)`` agree on no ``p``): another value of the field
    is not a constant of the function."""
    if first.keys is None or first.items is None:
        return first
    kept = [(k, v) for k, v in zip(first.keys, first.items) if k not in written
            and all(other is not None and other.entry(k) == v for other in values)]
    return first.with_(keys=tuple(k for k, _ in kept), items=tuple(v for _, v in kept))


def mask_params(program: Program, fn: "FunctionInfo", depth: int) -> frozenset[str]:
    """The parameters of ``fn`` to which every call in the project passes a boolean tensor (a mask made
    with a comparison, ``.bool()`` or ``dtype=torch.bool``): indexing with it selects a data-dependent
    number of elements (what the answer read is recorded as :func:`number_params` records it)."""
    found = _recorded_search(program, fn, depth)
    if found is None:
        return frozenset()
    return frozenset(name for name, values in _values_passed(found) if all(
        v is not None and v.kind is Kind.TENSOR and v.is_bool and not v.maybe_none for v in values))


def tensor_params(program: Program, fn: "FunctionInfo", depth: int) -> dict[str, int | None]:
    """The parameters of ``fn`` to which every call in the project passes a tensor the analysis proves one
    (``pool(x, torch.tensor([0, 2, 6]))``): one taken for a tensor there is one, not a guess; each with the
    number of dimensions all those tensors have, when they agree on one (``top(boxes, torch.rand(5))``:
    ``scores[0]`` is 0-d there).  What the answer read is recorded as :func:`number_params` records it."""
    found = _recorded_search(program, fn, depth)
    if found is None:
        return {}
    out: dict[str, int | None] = {}
    for name, values in _values_passed(found):
        if all(v is not None and v.is_tensor and not (v.assumed or v.guessed or v.open_class)
               for v in values):
            ranks = {v.ndim for v in values if v is not None}
            out[name] = ranks.pop() if len(ranks) == 1 else None
    return out


def container_params(program: Program, fn: "FunctionInfo", depth: int) -> dict[str, Value]:
    """The parameters of ``fn`` to which every call in the project passes a list, tuple or dict of tensors the
    analysis proves ones (``pick([a, b])``, ``step({"x": x})``) or of Python numbers (``f(x, [1.0, 0.5])``),
    each with what its elements are: the
    container's length and keys are left out (each call may pass others, and the body may change them); or a
    ``collections.namedtuple`` of one class, field by field.
    What the answer read is recorded as :func:`number_params` records it."""
    found = _recorded_search(program, fn, depth)
    if found is None:
        return {}
    out: dict[str, Value] = {}
    for name, values in _values_passed(found):
        if not values or any(v is None or v.maybe_none for v in values):
            continue
        first = values[0]
        if first.keys is not None and first.items is not None and first.kind is Kind.SEQUENCE and all(
                v.keys == first.keys and v.items is not None for v in values):  # type: ignore[union-attr]
            # a `collections.namedtuple` built at each call: its fields, each the tensors or numbers passed
            fields = [[_known_field(v.items[i]) for v in values]  # type: ignore[union-attr,index]
                      for i in range(len(first.items))]
            if all(f is not None for field in fields for f in field):
                joined = sequence(items=[join_all(f) for f in fields])  # type: ignore[misc]
                out[name] = joined.with_(keys=first.keys)
        elif all(v.kind is Kind.SEQUENCE for v in values):  # type: ignore[union-attr]
            elements = [_known_element(v.elements()) for v in values]  # type: ignore[union-attr]
            if all(e is not None for e in elements):
                out[name] = sequence(element=join_all(elements))  # type: ignore[arg-type]
        elif all(v.is_mapping and v.element is not None for v in values):  # type: ignore[union-attr]
            elements = [_known_element(v.element) for v in values]  # type: ignore[union-attr]
            if all(e is not None for e in elements):
                out[name] = mapping(join_all(elements))  # type: ignore[arg-type]
    return out


def _known_field(v: Value) -> Value | None:
    """A field of a record a call passes: a tensor the analysis proves one, entering the frame, or a Python
    number or size; None otherwise."""
    return _proven_tensor(v) if v.is_tensor else v if v.kind in (Kind.PYTHON, Kind.SIZE) else None


def _known_element(v: Value) -> Value | None:
    """The elements of a container a call passes: tensors the analysis proves ones, entering the frame, or
    Python numbers (``[1.0, -1.0, 0.5]``: Dynamo holds them as constants); None otherwise."""
    if v.kind is Kind.PYTHON and v.cls is None and v.qualname in _NUMBER_TYPES and not v.is_bool:
        return python().with_(qualname=v.qualname)
    return _proven_tensor(v)


def _proven_tensor(v: Value | None) -> Value | None:
    """``v``, entering the callee's frame, when it is a tensor the analysis proves one."""
    if v is None or not v.is_tensor or v.maybe_none or v.assumed or v.guessed or v.open_class:
        return None
    return v.with_(entered=True, params=frozenset())


def defaults_kept(program: Program, fn: "FunctionInfo") -> frozenset[str]:
    """The parameters of ``fn`` with a ``None`` default that no call in the project passes
    (``sample(shape)`` of ``def sample(shape, generator=None)``): they hold ``None``.  Empty when a call
    cannot be found or read (``*args``, ``**kwargs``).  What it read is recorded as :func:`number_params`
    records it."""
    return _recorded(program, fn, lambda: _kept_defaults(program, fn))


def _kept_defaults(program: Program, fn: "FunctionInfo") -> frozenset[str]:
    sites = _project_call_sites(program, fn)
    if not sites or all(owner is not program for _, _, owner in sites):
        return frozenset()  # (a compiled function its own module never calls: not a script's)
    names = fn.param_names()[1:] if fn.is_method else fn.param_names()
    p = fn.node.params
    kept = {prm.name.value for prm in (*p.params, *p.kwonly_params)
            if isinstance(prm.default, cst.Name) and prm.default.value == "None"}
    for call, _, _ in sites:
        bound = _bind(call, names)
        if bound is None or any(arg.star for arg in call.args):
            return frozenset()
        kept -= set(bound)
    return frozenset(kept)


def _values_passed(found: tuple[list, list[str], set[str], dict[int, Value]]
                   ) -> Iterator[tuple[str, list[Value | None]]]:
    """Each candidate parameter of a :func:`_passed` search with the value every call gives it (None
    where a call leaves it out or its value is not known)."""
    sites, names, candidates, seen = found
    for name in candidates:
        values = []
        for call, _, _ in sites:
            bound = _bind(call, names)
            arg = bound.get(name) if bound is not None else None
            values.append(seen.get(id(arg)) if arg is not None else None)
        yield name, values


def _is_object(v: Value) -> bool:
    """An instance of a class of the checked code, or a torch module, optimizer or generator made by its class."""
    if v.maybe_none or v.kind is Kind.TENSOR:
        return False
    if v.cls is not None:
        return v.kind in (Kind.MODULE, Kind.UNKNOWN)
    q = v.qualname or ""
    if v.kind is Kind.MODULE and q.startswith("torch.nn.") and not q.endswith("()"):
        return True  # (a torch module's value carries its class's name: `torch.nn.Linear`)
    return v.kind in (Kind.MODULE, Kind.UNKNOWN) and (
        (q.startswith(("torch.nn.", "torch.optim.")) and q.endswith("()")) or q == K.TORCH_GENERATOR)


def _passed(program: Program, fn: "FunctionInfo", depth: int
            ) -> tuple[list, list[str], set[str], dict[int, Value]] | None:
    """Every call of ``fn`` in the project (with the function it sits in and that module's program), the
    names of its parameters, those every call may pass, and the values the callers give the arguments
    (by ``id`` of the expression); None when a call cannot be found or read."""
    sites = _project_call_sites(program, fn)
    if not sites:
        return None
    names = fn.param_names()[1:] if fn.is_method else fn.param_names()
    wanted: dict[int, cst.BaseExpression] = {}
    candidates = set(names)
    for call, _, _ in sites:
        bound = _bind(call, names)
        if bound is None:
            return None
        spread = _spread(call)
        candidates &= set(bound) | (set(names) if spread else set())
        for name in candidates & set(bound):
            wanted[id(bound[name])] = bound[name]
        wanted.update((id(s), s) for s in spread)
    if not candidates:
        return None
    seen: dict[int, Value] = {}
    run: set[int] = set()
    for call, caller, owner in sites:
        if caller is None:
            # a statement of the module (a script's `model = Wrap(Crit())`, the loop of its `__main__`
            # block): that statement run silently, as a function's body is
            statement = _top_statement(owner.index.module, call)
            if statement is None:
                evaluator = FunctionEvaluator(owner, None, {}, emit=False, depth=depth)
                seen.update((id(a), evaluator.expr(a)) for a in _arguments(call) if id(a) in wanted)
            elif id(statement) not in run:
                run.add(id(statement))
                _Probe(owner, None, {}, depth, wanted, seen).run_body(cst.IndentedBlock(body=[statement]))
    # (the function's own body is not evaluated: its parameters' values are what this search looks for, so a
    # recursive call passes what the other calls do, see _number_carried)
    for caller, owner in {id(c): (c, p) for _, c, p in sites if c is not None and c is not fn}.values():
        env = owner.signatures.param_env(caller, owner.signatures.evidence(caller))
        _handed_on(owner, caller, env, wanted.values())
        probe = _Probe(owner, caller, env, depth, wanted, seen)
        probe.not_followed = fn
        probe.run_body(caller.node.body)
    return sites, names, candidates, seen


def _project_call_sites(program: Program, fn: "FunctionInfo"
                        ) -> "list[tuple[cst.Call, FunctionInfo | None, Program]] | None":
    """Every call of ``fn`` in its module and in the project's other modules, each with the function it
    sits in and that module's program; None when a use of ``fn`` is not a call that can be read."""
    local = _call_sites(program, fn)
    foreign = foreign_call_sites(program, fn) if local is not None else None
    if local is None or foreign is None:
        return None
    return [(call, caller, program) for call, caller in local] + foreign


def _top_statement(module: cst.Module, node: cst.CSTNode) -> cst.BaseStatement | None:
    """The statement of ``module``'s body that holds ``node``."""
    for statement in module.body:
        if any(n is node for n in walk(statement)):
            return statement
    return None


def _handed_on(program: Program, caller: "FunctionInfo", env: dict[str, Value],
               args: Iterable[cst.BaseExpression]) -> None:
    """A parameter of ``caller`` it passes on (``step(x, scale)`` in ``def run(x, scale)``), or reads in an
    argument it passes (``step(x, t + 1)``), with neither type nor default, is a number (a boolean mask, an
    object of one class) when every call of ``caller`` passes one: a wrapper hands on what its own callers
    give it.  Set in ``env``."""
    handed = {n.value for a in args for n in ((a,) if type(a) is cst.Name else walk(a))
              if type(n) is cst.Name}
    # (a tensor only by how the body uses it, `diffusion.T`, may well be the object every caller passes)
    unknown = {name for name in handed & set(caller.param_names()) if name in env and (
        env[name].kind is Kind.UNKNOWN or env[name].kind is Kind.TENSOR and env[name].open_class)}
    # a parameter a loop steps, whose variable is handed on (`for t in ts: step(x, t)`): the list of numbers or
    # tensors every call of ``caller`` passes
    stepped = {n.iter.value for n in walk(caller.node.body, into_scopes=False)
               if isinstance(n, cst.For) and isinstance(n.iter, cst.Name) and isinstance(n.target, cst.Name)
               and n.target.value in handed} & set(caller.param_names())
    stepped = {name for name in stepped if name in env and env[name].kind is Kind.UNKNOWN}
    if stepped:
        containers = program.signatures.containers_passed(caller)
        for name in stepped & set(containers):
            env[name] = containers[name]
    if unknown:
        signatures = program.signatures
        for name in unknown & signatures.numbers_passed(caller):
            env[name] = python()
        for name in unknown & signatures.masks_passed(caller):
            env[name] = tensor(is_bool=True)
        objects = signatures.objects_passed(caller)
        for name in unknown & set(objects):
            env[name] = objects[name]


def argument_values(program: Program, caller: "FunctionInfo", args: list[cst.BaseExpression], depth: int
                    ) -> dict[int, Value]:
    """The values a silent evaluation of ``caller`` gives the expressions ``args`` (by ``id``; joined
    over a loop's iterations as :class:`_Probe` keeps them)."""
    seen: dict[int, Value] = {}
    env = program.signatures.param_env(caller, program.signatures.evidence(caller))
    _Probe(program, caller, env, depth, {id(a): a for a in args}, seen).run_body(caller.node.body)
    return seen


class _Probe(FunctionEvaluator):
    """A silent evaluation of a caller that keeps the values of the argument expressions asked for."""

    def __init__(self, program: Program, fn: "FunctionInfo | None", env: dict[str, Value], depth: int,
                 wanted: dict[int, cst.BaseExpression], seen: dict[int, Value]) -> None:
        super().__init__(program, fn, env, emit=False, depth=depth)
        self._wanted = wanted
        self._seen = seen

    def expr(self, node: cst.BaseExpression | None) -> Value:
        value = super().expr(node)
        if node is not None and id(node) in self._wanted:
            old = self._seen.get(id(node))
            # a loop body runs more than once: every value it took must be a number
            if old is not None and old.is_mapping and value.is_mapping:
                value = join(old, value)  # a dict spread into a call: what each of its keys held
            self._seen[id(node)] = value if old is None or _is_number(old) or old.is_mapping else old
        return value


def _is_number(v: Value) -> bool:
    """A Python number or bool (or an int derived from a shape, or a number taken from tensor data, which the
    caller holds as a Python number: ``s = sigmas[i].item()``), or a string literal: a Python constant, never
    a tensor or unknown."""
    if v.kind is Kind.SIZE or v.kind is Kind.SCALAR and not v.maybe_none:
        return True
    if v.kind is not Kind.PYTHON or v.maybe_none or v.qualname not in _NUMBER_TYPES:
        return False
    return not v.has_const or (isinstance(v.const, (int, float, str)) and v.const is not None)


def _passes_number(call: cst.Call, names: list[str], name: str, seen: dict[int, Value],
                   defaulted: set[str]) -> bool:
    """Whether ``call`` passes a number to the parameter ``name``: as an argument, as a key of a dict
    of known keys spread with ``**``, or by leaving it its default when it is a number literal (see
    :func:`_defaulted`)."""
    bound = _bind(call, names)
    if bound is not None and name in bound:
        return id(bound[name]) in seen and _is_number(seen[id(bound[name])])
    given = False
    for spread in _spread(call):
        value = seen.get(id(spread))
        if value is None or not value.is_mapping or value.keys is None or value.items is None:
            return False
        if name in value.keys:
            given = True
            if not _is_number(value.items[value.keys.index(name)]):
                return False
    return given or name in defaulted


def _arguments(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args]


def _spread(call: cst.Call) -> list[cst.BaseExpression]:
    """The dicts ``call`` spreads into keyword arguments (``**cfg``)."""
    return [arg.value for arg in call.args if arg.star == "**"]


def _defaulted(fn: "FunctionInfo") -> set[str]:
    """The parameters of ``fn`` whose default is a number literal."""
    p = fn.node.params
    return {prm.name.value for prm in (*p.params, *p.kwonly_params) if prm.default is not None
            and (isinstance(prm.default, (cst.Integer, cst.Float)) or isinstance(prm.default, cst.UnaryOperation)
                 and isinstance(prm.default.expression, (cst.Integer, cst.Float)))}


def _bind(call: cst.Call, names: list[str]) -> dict[str, cst.BaseExpression] | None:
    """Parameter name -> argument expression of ``call`` (a dict spread with ``**`` aside: see
    :func:`_spread`); None with ``*args``."""
    out: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star == "**":
            continue
        if arg.star:
            return None
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        else:
            if position < len(names):
                out[names[position]] = arg.value
            position += 1
    return out


def _call_sites(program: Program, fn: "FunctionInfo") -> list[tuple[cst.Call, "FunctionInfo | None"]] | None:
    """Every call of ``fn`` in its module, each with the function it sits in (None for a statement of the
    module); None when the module uses the function (or its class) in a way other than calling it."""
    idx = program.index
    # a function a function of the module defines and compiles (`def case(): @torch.compile def fn`) is
    # called where the name its `def` binds reaches
    nested = fn.closure is not None and fn.compile_decorated and fn.cls is None and fn.outer is not None \
        and fn.outer.owner is idx
    if (fn.owner is not idx or fn.closure is not None) and not nested:
        return None
    module = idx.module
    uses = _module_uses(program)
    parents = uses.parents
    if nested:
        reached = names_reaching(fn)
        if reached is None:
            return None
        calls = _only_called(module, parents, fn.name, fn.node, {id(c) for c in idx.compile_calls}, reached)
    elif fn.cls is None:
        if idx.functions.get(fn.name) is not fn:
            return []
        calls = _only_called(module, parents, fn.name, fn.node, {id(c) for c in idx.compile_calls})
    elif fn.name == "forward" and fn.cls.is_module and idx.classes.get(fn.cls.name) is fn.cls:
        calls = _instance_calls(module, parents, fn.cls.name, fn.cls.node, {id(c) for c in idx.compile_calls})
    elif fn.name == "__init__" and idx.classes.get(fn.cls.name) is fn.cls:
        calls = _only_called(module, parents, fn.cls.name, fn.cls.node)  # the instances built
    elif fn.is_method and not fn.is_classmethod and idx.classes.get(fn.cls.name) is fn.cls and (any(
            c.args and type(c.args[0].value) is cst.Attribute and c.args[0].value.attr.value == fn.name
            for c in idx.compile_calls) or fn.compile_decorated or idx.compiles_code and not fn.cls.is_module):
        # (a method a script compiles, or one of a plain class of a script: its instances are the script's)
        calls = _method_calls(module, parents, fn, {id(c) for c in idx.compile_calls})
    else:
        return None
    if calls is None:
        return None
    return [(call, uses.enclosing(call)) for call in calls]


def module_call_sites(program: Program, fn: "FunctionInfo") -> list[tuple[cst.Call, "FunctionInfo | None"]]:
    """Every call of ``fn`` in its module (see :func:`_call_sites`); none when a use of it cannot be read."""
    return _recorded(program, fn, lambda: _call_sites(program, fn)) or []


def called_here_only(program: Program, fn: "FunctionInfo") -> bool:
    """Every use of ``fn`` in the project is a call in its own module (a script's helper, called by the
    script itself): what calls it is all there is to analyse."""
    local = _call_sites(program, fn)
    return bool(local) and foreign_call_sites(program, fn) == []


_MAX_REEXPORTS = 3
"""Modules a name is followed through (``pkg/__init__.py`` re-exporting ``pkg.m.f``, ...)."""
MAX_IMPORTERS = 8
"""Modules read for the calls of one function at most: a helper of a large package that many of its
modules import would otherwise cost the parse of each (a script's sampler has a few callers)."""


def foreign_call_sites(program: Program, fn: "FunctionInfo", strict: bool = True
                       ) -> list[tuple[cst.Call, "FunctionInfo | None", Program]] | None:
    """Every call of ``fn`` (of its class's instances, for ``forward``; of its class, for ``__init__``) in
    the other modules of the project, each with the function it sits in and that module's program.
    ``strict``: None when one of them uses it in a way other than calling it (or calls it at module
    level, or takes it with ``*``); else the calls that are found (a module-level call with None for
    its function)."""
    project, idx = program.project, program.index
    if project is None or not idx.name or fn.outer is not None and fn.cls is None:
        return []  # (a function defined inside another is no name another module imports)
    if fn.cls is not None and fn.name not in ("forward", "__init__") and idx.compiles_code \
            and idx.classes.get(fn.cls.name) is fn.cls:
        return []  # a method of a class of a script (`torch.compile(ema.update_target)`): no module imports it
    if fn.cls is None and idx.functions.get(fn.name) is not fn or fn.cls is not None and (
            fn.name not in ("forward", "__init__") or idx.classes.get(fn.cls.name) is not fn.cls):
        return None if strict else []
    symbol = fn.name if fn.cls is None else fn.cls.name
    instances = fn.cls is not None and fn.name == "forward"  # else calls of the name: the function's, the class's
    out: list[tuple[cst.Call, FunctionInfo, Program]] = []
    pending = [(idx.name, symbol, "", 0)]
    done: set[tuple[str, str]] = set()
    while pending:
        module, name, suffix, hops = pending.pop()
        for importer, taken in project.importers_of(module):
            if taken is not None and "*" in taken and strict:
                return None
            if taken is not None and name not in taken or (importer, f"{module}.{name}") in done:
                continue
            done.add((importer, f"{module}.{name}"))
            if len(done) > MAX_IMPORTERS:
                return None if strict else out
            other = project.load(importer) if hops < _MAX_REEXPORTS else None
            found = _importer_calls(other, f"{module}.{name}{suffix}", instances, strict) \
                if other is not None else None
            if found is None:
                if strict:
                    return None
                continue
            calls, bound = found
            caller_program = program.program_for(other)
            out += [(call, caller, caller_program) for call, caller in calls]
            # what the importer binds can be imported from it in turn
            pending += [(importer, local, rest, hops + 1) for local, rest in bound]
    return out


def _importer_calls(other: "ModuleIndex", target: str, instances: bool, strict: bool
                    ) -> tuple[list[tuple[cst.Call, "FunctionInfo"]], list[tuple[str, str]]] | None:
    """The calls of ``target`` (a dotted name: module, then the function or class) in the module
    ``other`` with the function each sits in, and the local names its imports bind to ``target`` or a
    module on the way (with the rest of the dotted name); None when a use is not a call (``strict``;
    else the uses that are calls)."""
    uses = _uses_of(other)
    package = other.path.endswith("__init__.py")
    bound: dict[str, str] = {}
    for statement in uses.imports:
        for local, q in import_bindings(statement).items():
            q = absolute(q, other.name, package)
            if q == target or target.startswith(q + "."):
                bound[local] = q
    nodes = []
    for local, q in bound.items():
        for n in uses.names.get(local, ()):
            node = _use_of(n, q, target, uses.parents)
            if node is False or node is None and not strict:
                continue
            if node is None:
                return None
            nodes.append(node)
    if instances:
        calls = [] if not strict else _instance_calls_of(other.module, uses.parents, nodes)
        if not strict:
            for node in nodes:
                calls += _instance_calls_of(other.module, uses.parents, [node]) or []
    else:
        calls = [uses.parents[id(n)] for n in nodes]
        if not strict:
            calls = [c for c, n in zip(calls, nodes) if isinstance(c, cst.Call) and c.func is n]
        elif not all(isinstance(c, cst.Call) and c.func is n for c, n in zip(calls, nodes)):
            return None
    if calls is None:
        return None
    out = []
    for call in calls:
        caller = uses.enclosing(call)
        if caller is None and strict:
            return None
        out.append((call, caller))
    return out, [(local, target[len(q):]) for local, q in bound.items()]


def _use_of(name: cst.Name, q: str, target: str, parents: "_Parents") -> "cst.BaseExpression | None | bool":
    """The expression that a use of a name bound to ``q`` makes of ``target``: ``name`` itself or the
    attribute chain on it (``m.f``); False when the use is not one (an attribute of something else,
    the import that binds it, a keyword); None when it uses a module on the way as a value."""
    parent = parents.get(id(name))
    if isinstance(parent, cst.Attribute) and parent.attr is name or \
            isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    holder = parent
    while isinstance(holder, (cst.Attribute, cst.ImportAlias, cst.AsName)):
        holder = parents.get(id(holder))
    if isinstance(holder, (cst.Import, cst.ImportFrom)):
        return False  # the import itself
    node: cst.BaseExpression = name
    dotted = q
    while dotted != target:
        parent = parents.get(id(node))
        if not (isinstance(parent, cst.Attribute) and parent.value is node):
            return None  # a module on the way to it, used as a value
        dotted = f"{dotted}.{parent.attr.value}"
        node = parent
        if dotted != target and not target.startswith(dotted + "."):
            return False  # another member of the module
    return node


class _StatementUses:
    """What one top-level statement holds: its ``Name`` nodes of variables by name, its attributes by
    attribute name and its import statements (one walk), and its nodes' parents (a second walk, made
    only when a node of the statement is asked about: most statements hold no use of the functions
    asked about).  Kept by the statement (see :data:`_STATEMENTS`): libcst nodes are immutable, and an
    editor's edit analyses a tree whose untouched statements are the previous tree's, so only the
    edited statement is walked again."""

    __slots__ = ("statement", "names", "attributes", "imports", "used", "_parents")

    def __init__(self, statement: cst.CSTNode) -> None:
        self.statement = statement  # held, so that the ``id`` keys stay this node's
        self.names: dict[str, list[cst.Name]] = {}
        self.attributes: dict[str, list[cst.Attribute]] = {}
        self.imports: list[cst.Import | cst.ImportFrom] = []
        self.used = 0
        self._parents: dict[int, cst.CSTNode] | None = None
        names, attributes = self.names, self.attributes
        # the names that name no variable: an attribute's (`opt.step` uses no function `step`), a keyword's
        not_variables: set[int] = set()
        for n in walk(statement):
            tp = type(n)  # libcst's node classes are not subclassed: a type test is enough
            if tp is cst.Name:
                if id(n) in not_variables:
                    continue
                found = names.get(n.value)
                if found is None:
                    names[n.value] = [n]
                else:
                    found.append(n)
            elif tp is cst.Arg:
                if n.keyword is not None:
                    not_variables.add(id(n.keyword))
            elif tp is cst.Attribute:
                not_variables.add(id(n.attr))
                found = attributes.get(n.attr.value)
                if found is None:
                    attributes[n.attr.value] = [n]
                else:
                    found.append(n)
            elif tp is cst.Import or tp is cst.ImportFrom:
                self.imports.append(n)

    @property
    def parents(self) -> dict[int, cst.CSTNode]:
        """Each node's parent by ``id`` (the statement has none here), made on first use."""
        if self._parents is None:
            self._parents = nodes_and_parents(self.statement)[1]
        return self._parents


_STATEMENTS: dict[int, _StatementUses] = {}
"""The uses of the top-level statements of the modules read lately, by ``id`` of the statement."""
KEEP_MODULES = 16
"""Modules whose statements' uses are kept (the last ones read, each in its last tree).  They hold their
trees: kept for every module of a run, they would keep every tree of the run alive, and each garbage
collection would walk them all again."""
_RECENT: dict[str, int] = {}
"""The modules read lately (by name, oldest first), each with the build that read it last."""
_BUILDS = [0]


_BY_BUILD: dict[int, dict[int, _StatementUses]] = {}
"""The entries of :data:`_STATEMENTS` by the build that read them last (:attr:`_StatementUses.used`):
a build let go forgets its own, without a look at those of the other kept modules."""


def _statement_uses(statement: cst.CSTNode) -> _StatementUses:
    found = _STATEMENTS.get(id(statement))
    if found is None or found.statement is not statement:
        found = _STATEMENTS[id(statement)] = _StatementUses(statement)
    else:
        _BY_BUILD.get(found.used, {}).pop(id(statement), None)
    found.used = _BUILDS[0]
    _BY_BUILD.setdefault(found.used, {})[id(statement)] = found
    return found


def _forget_old_statements(module: str) -> None:
    """Note that ``module`` was read by the current build; forget the uses of statements that no build
    of the last :data:`KEEP_MODULES` modules read (those of the builds no longer kept)."""
    previous = _RECENT.pop(module, None)
    _RECENT[module] = _BUILDS[0]
    dropped = [] if previous is None else [previous]
    while len(_RECENT) > KEEP_MODULES:
        dropped.append(_RECENT.pop(next(iter(_RECENT))))
    kept = set(_RECENT.values())
    for build in dropped:
        if build in kept:
            continue
        for key, uses in _BY_BUILD.pop(build, {}).items():
            if _STATEMENTS.get(key) is uses:
                del _STATEMENTS[key]


def forget_kept_uses() -> None:
    """Let go of every statement's uses kept for later analyses, and of the trees they hold: what a run
    over many files does before it collects garbage (:class:`dynalint.core.source.Collections`), which
    would otherwise walk the trees of the last :data:`KEEP_MODULES` modules again, most of the heap.
    The run's next files are other modules, whose statements are walked anyway."""
    _STATEMENTS.clear()
    _BY_BUILD.clear()
    _RECENT.clear()
    _LAST_USES.clear()
    _IMPORTER_USES.clear()


_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
"""The nodes whose bodies are scopes of their own (a call in one is not in the function around it)."""


class _Parents:
    """Each node's parent by ``id`` in a module, from the parents of its top-level statements, each
    added when one of its nodes is handed out (:class:`_Merged`).  A node whose statement was not added
    (one met by a walk of the whole module) adds them all: the answers are those of a map of the whole
    module."""

    def __init__(self, module: cst.Module, statements: list[_StatementUses]) -> None:
        self.module = module
        self.known: dict[int, cst.CSTNode] = {id(uses.statement): module for uses in statements}
        self.pending: dict[int, _StatementUses] = dict(enumerate(statements))
        """The statements whose parents are not in :attr:`known` yet, by index."""

    def add(self, k: int) -> None:
        uses = self.pending.pop(k, None)
        if uses is not None:
            self.known.update(uses.parents)

    def get(self, key: int, default: cst.CSTNode | None = None) -> cst.CSTNode | None:
        found = self.known.get(key)
        if found is None and self.pending and key != id(self.module):
            for k in list(self.pending):
                self.add(k)
            found = self.known.get(key)
        return found if found is not None else default

    def __getitem__(self, key: int) -> cst.CSTNode:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found


class _ModuleUses:
    """What the search reads of a whole module: each node's parent, the ``Name`` nodes by name, the
    attributes by name, the import statements, and the innermost indexed function holding a call.
    Every function of the module asks, so building it per function would walk the module once per
    function; it is put together from the uses of each top-level statement, so a module that differs
    from the last one read by one statement walks that statement only."""

    def __init__(self, index: "ModuleIndex") -> None:
        self.index = index
        self.module = index.module
        _BUILDS[0] += 1
        statements = [_statement_uses(statement) for statement in self.module.body]
        self.parents = _Parents(self.module, statements)
        self.imports: list[cst.Import | cst.ImportFrom] = [i for uses in statements for i in uses.imports]
        self.names = _Merged([uses.names for uses in statements], self.parents)
        self.attributes = _Merged([uses.attributes for uses in statements], self.parents)
        self._functions: dict[int, FunctionInfo] | None = None
        _forget_old_statements(index.name)

    def enclosing(self, call: cst.Call) -> "FunctionInfo | None":
        """The indexed function whose own body (not a nested function, class or lambda, nor a
        decorator or default of a nested function) holds ``call``; None at module level."""
        parents = self.parents
        node: cst.CSTNode = call
        while True:
            parent = parents.get(id(node))
            if parent is None:
                return None
            if type(parent) in _SCOPES:
                if type(parent) is not cst.FunctionDef or parent.body is not node:
                    return None
                if self._functions is None:
                    self._functions = {id(info.node): info for info in self.index.all_functions}
                info = self._functions.get(id(parent))
                return info if info is not None and info.node is parent else None
            node = parent


class _Merged:
    """The lists of several statements' maps under one key, in statement order (a walk's order); the
    parents of the statements that hold some are added to ``parents``."""

    def __init__(self, maps: list[dict[str, list]], parents: _Parents) -> None:
        self.maps = maps
        self.parents = parents

    def get(self, key: str, default: Iterable = ()) -> list:
        out: list = []
        for k, found in enumerate(self.maps):
            nodes = found.get(key)
            if nodes:
                self.parents.add(k)
                out += nodes
        return out if out else list(default)


_LAST_USES: list[_ModuleUses] = []
"""The uses of the module analysed last (one: an analysis asks about one module many times in a row)."""
_IMPORTER_USES: list[_ModuleUses] = []
"""The uses of the modules that import from it, while it is the one analysed."""


def _module_uses(program: Program) -> _ModuleUses:
    idx = program.index
    if not _LAST_USES or _LAST_USES[0].index is not idx or _LAST_USES[0].module is not idx.module:
        _LAST_USES[:] = [_ModuleUses(idx)]
        _IMPORTER_USES.clear()
    return _LAST_USES[0]


def _uses_of(index: "ModuleIndex") -> _ModuleUses:
    """The uses of a module that imports from the one analysed (kept while that one is)."""
    for uses in _IMPORTER_USES:
        if uses.index is index and uses.module is index.module:
            return uses
    uses = _ModuleUses(index)
    _IMPORTER_USES.append(uses)
    return uses


def _known_uses(module: cst.Module) -> _ModuleUses | None:
    """The uses already gathered for ``module`` (the one analysed, or one importing from it)."""
    for uses in (*_LAST_USES, *_IMPORTER_USES):
        if uses.module is module:
            return uses
    return None


def _names(module: cst.Module, name: str) -> Iterator[cst.Name]:
    _searched(name)
    uses = _LAST_USES[0] if _LAST_USES and _LAST_USES[0].module is module else None
    if uses is not None:
        yield from uses.names.get(name, ())
        return
    yield from _StatementUses(module).names.get(name, ())


def _only_called(module: cst.Module, parents: "_Parents", name: str, definition: cst.CSTNode,
                 compiles: set[int] = frozenset(),  # type: ignore[assignment]
                 reached: set[int] | None = None) -> list[cst.Call] | None:
    """The calls ``name(...)``, when every other use of the name is its definition or hands it to
    one of the ``compiles`` calls (by ``id``) whose result is bound to a name that is only called
    (``step_c = torch.compile(step)``: a call of ``step_c`` passes its arguments to ``step``); else
    None.  ``reached``: the uses (``Name`` nodes by ``id``) that read this definition, where other scopes
    bind the name too."""
    calls = []
    for n in _names(module, name):
        if reached is not None and id(n) not in reached:
            continue
        parent = parents.get(id(n))
        if parent is definition:
            continue
        if isinstance(parent, cst.Call) and parent.func is n:
            calls.append(parent)
            continue
        if isinstance(parent, cst.FunctionDef) and parent.name is n and _method(parents, parent):
            continue  # a method of the same name (`Scaler.fit` beside a function `fit`) uses no name
        if _names_a_type(parents, n):
            continue  # `g: CSRGraph`, `isinstance(g, CSRGraph)`: neither calls it nor hands it on
        if _compiled_in_place(parents, n, compiles):
            continue  # `step = torch.compile(step)`: the calls of `step` are those found here
        through = _handle_calls(parents, n, compiles)
        if through is None:
            through = _table_row_calls(module, parents, n, compiles)
        if through is None:
            through = _handed_to_function(parents, n)  # `apply(step, x)`: the calls `apply` makes of it
        if through is None:
            return None
        calls += through
    return calls


def _method(parents: "_Parents", fdef: cst.FunctionDef) -> bool:
    """``fdef`` is defined in a class body."""
    block = parents.get(id(fdef))
    return isinstance(block, cst.IndentedBlock) and isinstance(parents.get(id(block)), cst.ClassDef)


def _names_a_type(parents: "_Parents", use: cst.Name) -> bool:
    """``use`` sits in an annotation, or is what ``isinstance``/``issubclass`` test against."""
    node: cst.CSTNode | None = use
    while node is not None:
        parent = parents.get(id(node))
        if isinstance(parent, cst.Annotation):
            return True
        if isinstance(parent, cst.Arg) and parent.value is node:
            call = parents.get(id(parent))
            return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) \
                and call.func.value in ("isinstance", "issubclass") and call.args[0] is not parent
        if not isinstance(parent, (cst.Subscript, cst.SubscriptElement, cst.Index, cst.Attribute,
                                   cst.BinaryOperation, cst.Tuple, cst.Element)):
            return False
        node = parent
    return False


def _table_row_calls(module: cst.Module, parents: "_Parents", use: cst.Name, compiles: set[int]
                     ) -> list[cst.Call] | None:
    """The calls of the variable a ``for`` loop over a table written out binds ``use`` to in turn (``for fn
    in (f, g):``, ``for fn, args in ((f, a), (g, b)):``, or over a name bound only to the table, ``fns = [f,
    g]`` iterated by ``for fn in fns:`` and used no other way): in the loop's body, the calls of that
    variable or of what one of the ``compiles`` calls makes of it (``torch.compile(fn)(x)``), when it has no
    other use there; else None."""
    element = parents.get(id(use))
    row = parents.get(id(element))
    if not isinstance(element, cst.Element) or not isinstance(row, (cst.Tuple, cst.List)):
        return None
    table, position = row, None
    outer = parents.get(id(row))
    if isinstance(outer, cst.Element):  # a row of the table: `(f, args)`
        table, position = parents.get(id(outer)), next(i for i, e in enumerate(row.elements) if e is element)
    loops = _loops_over(module, parents, table)
    if loops is None:
        return None
    calls: list[cst.Call] = []
    for loop in loops:
        bound = loop.target if position is None else _bound_at(loop.target, position)
        if not isinstance(bound, cst.Name):
            return None
        name = bound.value
        _searched(name)
        found = _uses_called(loop.body, parents, lambda m: isinstance(m, cst.Name) and m.value == name, bound,
                             compiles=compiles)
        if found is None:
            return None
        calls += found
    return calls


def _loops_over(module: cst.Module, parents: "_Parents", table: cst.CSTNode | None) -> list[cst.For] | None:
    """The ``for`` loops over ``table``: the one whose iterable it is, or every loop over the name an
    assignment binds to it when that name has no other use (``fns = [f, g]``; ``for fn in fns:``); else
    None."""
    holder = parents.get(id(table))
    if isinstance(holder, cst.For) and holder.iter is table:
        return [holder]
    if not isinstance(holder, cst.Assign) or holder.value is not table or len(holder.targets) != 1 \
            or not isinstance(holder.targets[0].target, cst.Name):
        return None
    name = holder.targets[0].target
    loops: list[cst.For] = []
    for n in _names(module, name.value):
        parent = parents.get(id(n))
        if n is name:
            continue
        if not isinstance(parent, cst.For) or parent.iter is not n:
            return None
        loops.append(parent)
    return loops or None


def _compiled_in_place(parents: "_Parents", use: cst.Name, compiles: set[int]) -> bool:
    """``use`` is either name of ``step = torch.compile(step)`` (one of the ``compiles`` calls), which
    binds the compiled function to the function's own name: a call of that name passes its arguments
    to the function."""
    parent = parents.get(id(use))
    if isinstance(parent, cst.AssignTarget):
        statement = parents.get(id(parent))
        value = statement.value if isinstance(statement, cst.Assign) else None
        return (isinstance(value, cst.Call) and id(value) in compiles and len(statement.targets) == 1
                and bool(value.args) and isinstance(value.args[0].value, cst.Name)
                and value.args[0].value.value == use.value and value.args[0].keyword is None)
    compile_call = parents.get(id(parent))
    statement = parents.get(id(compile_call))
    return (isinstance(parent, cst.Arg) and isinstance(compile_call, cst.Call) and id(compile_call) in compiles
            and compile_call.args[0] is parent and parent.keyword is None and not parent.star
            and isinstance(statement, cst.Assign) and statement.value is compile_call
            and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)
            and statement.targets[0].target.value == use.value)


def _method_calls(module: cst.Module, parents: "_Parents", fn: "FunctionInfo", compiles: set[int]
                  ) -> list[cst.Call] | None:
    """The calls of the handles ``torch.compile(obj.method)`` makes of a method (``update =
    torch.compile(ema.update_target)``; ``update(step, 4)``), and of the method itself through its
    instances (``obj.method(...)``: after ``obj.method = torch.compile(obj.method)``, or of a method compiled
    as a decorator; ``self.method(...)`` in the class), when every use of the method's name as an attribute
    is one of those, on a name the module binds only to instances of the method's class (``ema =
    EMAPair()``) or on ``self`` in the class; else None (the method may be called elsewhere, with other
    arguments)."""
    assert fn.cls is not None
    _searched(fn.name)
    uses = [n for n in walk(module) if type(n) is cst.Attribute and n.attr.value == fn.name]
    inside = {id(n) for n in walk(fn.cls.node)}
    calls: list[cst.Call] = []
    for use in uses:
        if type(use.value) is not cst.Name or not (
                use.value.value == "self" and id(use) in inside
                or bound_to_class(module, use.value.value, fn.cls.name)):
            return None
        parent = parents.get(id(use))
        if type(parent) is cst.Call and parent.func is use:
            calls.append(parent)
            continue
        if _rebound_compiled(parents, use, compiles):
            continue
        through = _handle_calls(parents, use, compiles)
        if through is None:
            return None
        calls += through
    return calls


def _rebound_compiled(parents: "_Parents", use: cst.Attribute, compiles: set[int]) -> bool:
    """``use`` is a side of ``obj.method = torch.compile(obj.method)``: the attribute stored into, or the
    method compiled into it (its calls then run the compiled method)."""
    statement = parents.get(id(use))
    if type(statement) is cst.AssignTarget:
        statement = parents.get(id(statement))
    else:
        arg = statement
        compile_call = parents.get(id(arg))
        if not (type(arg) is cst.Arg and type(compile_call) is cst.Call and id(compile_call) in compiles
                and compile_call.args[0] is arg):
            return False
        statement = parents.get(id(compile_call))
    if type(statement) is not cst.Assign or len(statement.targets) != 1:
        return False
    target, value = statement.targets[0].target, statement.value
    return type(value) is cst.Call and id(value) in compiles and bool(value.args) \
        and type(target) is cst.Attribute and value.args[0].value.deep_equals(target)


def bound_to_class(module: cst.Module, name: str, cls: str) -> bool:
    """The module binds ``name`` (anywhere) only to instances of the class ``cls`` it builds (``ema =
    EMAPair()``, ``m, x = Model(), torch.randn(8)``), and at least once."""
    _searched(name)
    values: list[cst.BaseExpression] = []
    for n in walk(module):
        for t in n.targets if type(n) is cst.Assign else ():
            at = position_bound(t.target, name)
            row = n.value
            if at == -1:
                values.append(row)
            elif at is not None:  # an item unpacked one for one from a tuple written out, or not known
                one_for_one = type(row) is cst.Tuple and len(row.elements) == len(t.target.elements) \
                    and not any(type(e) is not cst.Element for e in row.elements)
                values.append(row.elements[at].value if one_for_one else row)
    bound = any(isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.WithItem))
                and any(type(m) is cst.Name and m.value == name
                        for m in walk(getattr(n, "target", None) or getattr(n, "asname", None) or n))
                for n in walk(module))
    return bool(values) and not bound and all(
        type(v) is cst.Call and type(v.func) is cst.Name and v.func.value == cls for v in values)


def _handle_calls(parents: "_Parents", use: cst.BaseExpression, compiles: set[int]
                  ) -> list[cst.Call] | None:
    """The calls of the name ``use`` is compiled into, when ``use`` is the first positional argument
    of a ``compiles`` call called at once or bound alone to a name that is only called, or of the name
    it is bound to as it is (``step = train_step``); else None."""
    arg = parents.get(id(use))
    compile_call = parents.get(id(arg))
    if isinstance(arg, cst.Assign) and arg.value is use:
        compile_call = use  # an alias of the function
    elif not (isinstance(arg, cst.Arg) and isinstance(compile_call, cst.Call) and id(compile_call) in compiles
              and compile_call.args and compile_call.args[0] is arg and arg.keyword is None and not arg.star):
        return None
    statement = parents.get(id(compile_call))
    if isinstance(statement, cst.Call) and statement.func is compile_call:
        return [statement]  # `torch.compile(step)(model, opt, x)`
    if isinstance(statement, cst.Element):  # `cf, cg = torch.compile(f), torch.compile(g)`
        unpacked = unpacked_target(parents, statement)
        if unpacked is None:
            return None
        statement, target = unpacked
    elif isinstance(statement, cst.Assign) and statement.value is compile_call \
            and len(statement.targets) == 1:
        target = statement.targets[0].target
    else:
        return None
    if not isinstance(target, cst.Name):
        return None
    name = target.value
    _searched(name)
    return _uses_called(_scope_of(parents, statement), parents,
                        lambda m: isinstance(m, cst.Name) and m.value == name, target)


def _bound_at(target: cst.BaseExpression, position: int) -> cst.BaseExpression | None:
    """What an unpacking target (``fn, args``) binds the item at ``position`` to; None for another target."""
    if isinstance(target, (cst.Tuple, cst.List)) and position < len(target.elements):
        return target.elements[position].value
    return None


def _instance_calls(module: cst.Module, parents: "_Parents", cls_name: str, definition: cst.CSTNode,
                    compiles: set[int] = frozenset()  # type: ignore[assignment]
                    ) -> list[cst.Call] | None:
    """The calls of the instances of a class, when each is built into a plain name or an attribute that
    is only called (or compiled by one of the ``compiles`` calls into one); else None."""
    return _instance_calls_of(module, parents, [n for n in _names(module, cls_name)
                                                if parents.get(id(n)) is not definition], compiles)


def _instance_calls_of(module: cst.Module, parents: "_Parents", uses: list[cst.BaseExpression],
                       compiles: set[int] = frozenset()  # type: ignore[assignment]
                       ) -> list[cst.Call] | None:
    """The calls of the instances a class builds at ``uses`` (its name, or ``m.Name``), when each is
    built into a plain name or an attribute that is only called, or compiled by one of the ``compiles``
    calls (``torch.compile(Pool())``, ``net = Pool(); net_c = torch.compile(net)``) into a name that is;
    else None."""
    calls: list[cst.Call] = []
    for n in uses:
        parent = parents.get(id(n))
        if not (isinstance(parent, cst.Call) and parent.func is n):
            return None  # a base class, an annotation, passed on: not every call can be seen
        statement = parents.get(id(parent))
        if isinstance(statement, cst.Arg):
            through = _handle_calls(parents, parent, compiles)
            if through is None:
                return None
            calls += through
            continue
        if isinstance(statement, cst.Element):  # `m, x = Model(), torch.randn(8)`
            unpacked = unpacked_target(parents, statement)
            if unpacked is None:
                return None
            statement, target = unpacked
        elif isinstance(statement, cst.Assign) and statement.value is parent and len(statement.targets) == 1:
            target = statement.targets[0].target
        else:
            return None
        if isinstance(target, cst.Name):
            scope = _scope_of(parents, statement)
            name = target.value
            _searched(name)
            found = _uses_called(scope, parents, lambda m: isinstance(m, cst.Name) and m.value == name,
                                 target, compiles=compiles)
        elif isinstance(target, cst.Attribute):
            attr = target.attr.value
            _searched(attr, attribute=True)
            known = _known_uses(module)
            found = _uses_called(module, parents,
                                 lambda m: isinstance(m, cst.Attribute) and m.attr.value == attr, target,
                                 candidates=known.attributes.get(attr) if known is not None else None)
        else:
            return None
        if found is None:
            return None
        calls += found
    return calls


def _scope_of(parents: "_Parents", node: cst.CSTNode) -> cst.CSTNode:
    while True:
        parent = parents.get(id(node))
        if parent is None or isinstance(parent, cst.FunctionDef):
            return parent if parent is not None else node
        node = parent


def _uses_called(scope: cst.CSTNode, parents: "_Parents", matches, target: cst.CSTNode,
                 candidates: Iterable[cst.CSTNode] | None = None,
                 compiles: set[int] = frozenset()  # type: ignore[assignment]
                 ) -> list[cst.Call] | None:
    """The calls of the name or attribute ``matches`` selects in ``scope``, when its only other use is the
    binding ``target``; else None.  ``candidates``: the nodes of ``scope`` that may match, in walk order,
    when they are known (a module's attributes by name), instead of a walk of ``scope``."""
    calls = []
    # a name bound more than once in a row (`opt = torch.compile(f); opt(x); opt = torch.compile(g)`): the
    # calls after this binding and before the next are its own, the others call what another binding holds
    reach = binding_reach(scope, target.value) if isinstance(target, cst.Name) else None
    several = reach is not None and len(reach) > 1 and id(target) in reach
    reached = {id(c) for c in reach[id(target)]} if several else None  # type: ignore[index]
    for m in walk(scope) if candidates is None else candidates:
        if m is target or not matches(m):
            continue
        if reached is not None and id(m) in reach:  # type: ignore[operator]
            continue  # another binding of the name
        parent = parents.get(id(m))
        if isinstance(m, cst.Name) and isinstance(parent, cst.Attribute) and parent.attr is m:
            continue  # `other.name`: an attribute, not this name
        if isinstance(m, cst.Name) and _another_binding(parents, m, scope):
            continue  # (a helper's parameter of that name: what a call hands it, below, is what it calls)
        if isinstance(parent, cst.Call) and parent.func is m:
            if reached is None or id(parent) in reached:
                calls.append(parent)
            continue
        if isinstance(parent, cst.Attribute) and parent.value is m \
                and parent.attr.value in K.MODULE_API_NOT_CALLING:
            continue  # `opt = SGD(model.parameters())`: the module's own API, which does not call it
        through = _handle_calls(parents, m, compiles) if compiles and isinstance(parent, cst.Arg) else None
        if through is None:
            through = _handed_to_function(parents, m)  # `run(step_c, x)`: the calls `run` makes of it
        if through is None:
            return None
        calls += through  # `net_c = torch.compile(net)`: the calls of `net_c` call `net`
    return calls


def _handed_to_function(parents: "_Parents", use: cst.CSTNode, depth: int = 2) -> list[cst.Call] | None:
    """The calls that a module-level function of the module (or the one method of that name its classes
    define) makes of its parameter, when ``use`` is passed to that parameter as it is (``run(step_c, x)`` with
    ``def run(step_fn, x): return step_fn(x)``; ``sampler.sample(f, x)``) and the function does nothing else
    with it but call it or hand it on so, ``depth`` times at most; else None."""
    arg = parents.get(id(use))
    call = parents.get(id(arg))
    if not (isinstance(arg, cst.Arg) and arg.value is use and not arg.star and isinstance(call, cst.Call)):
        return None
    fdef = _called_definition(parents.module, call.func)
    if fdef is None:
        return None
    names = [p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params)]
    if type(call.func) is cst.Attribute:
        names = names[1:]  # (`self`)
    bound = _bind(call, names)
    param = next((name for name, given in (bound or {}).items() if given is use), None)
    if param is None or param in body_bindings(fdef):
        return None
    _searched(param)
    calls = []
    for n in walk(fdef.body):
        if type(n) is not cst.Name or n.value != param:
            continue
        above = parents.get(id(n))
        if isinstance(above, cst.Call) and above.func is n:
            calls.append(above)
        elif isinstance(above, cst.Arg) and depth > 0:
            further = _handed_to_function(parents, n, depth - 1)  # (`def run(fn, x): return sample(fn, x)`)
            if further is None:
                return None
            calls += further
        elif not (isinstance(above, cst.Attribute) and above.attr is n):
            return None  # stored, tested...
    return calls


def _grad_context(decorator: cst.BaseExpression) -> bool:
    """``@torch.no_grad()`` and its kin: a method so decorated still binds ``self`` and takes its
    arguments."""
    func = decorator.func if type(decorator) is cst.Call else decorator
    return (dotted_name(func) or "").rpartition(".")[2] in ("no_grad", "inference_mode", "enable_grad")


def _called_definition(module: cst.Module, func: cst.BaseExpression) -> cst.FunctionDef | None:
    """The definition a call of ``func`` runs: the module-level function of that name, or for ``obj.name`` the
    one method of that name the module's classes define (neither when there are several)."""
    if type(func) is cst.Name:
        defs = [s for s in module.body if type(s) is cst.FunctionDef and s.name.value == func.value]
    elif type(func) is cst.Attribute and type(func.value) is cst.Name:
        defs = [m for s in module.body if type(s) is cst.ClassDef
                for m in s.body.body if type(m) is cst.FunctionDef and m.name.value == func.attr.value]
        if any(not _grad_context(d.decorator) for m in defs for d in m.decorators) or any(
                s.name.value == func.attr.value for s in module.body if type(s) is cst.FunctionDef):
            return None  # (a static or class method binds no `self`; a function of that name may be what runs)
    else:
        return None
    return defs[0] if len(defs) == 1 else None


def _another_binding(parents: "_Parents", name: cst.Name, scope: cst.CSTNode) -> bool:
    """``name`` (inside ``scope``) names another variable than ``scope``'s of that name: a method
    (``def step(self)`` in a class body) or a local of a function defined inside ``scope`` (a
    parameter ``step`` of a helper, where it is declared and where it is used)."""
    definition = parents.get(id(name))
    if isinstance(definition, (cst.FunctionDef, cst.ClassDef)) and definition.name is name:
        block = parents.get(id(definition))
        if isinstance(parents.get(id(block)), cst.ClassDef):
            return True  # a class attribute, not a variable
    node: cst.CSTNode = name
    while node is not scope:
        parent = parents.get(id(node))
        if parent is None:
            return False
        if parent is not scope and isinstance(parent, cst.FunctionDef) and (
                node is parent.body and name.value in local_names_of(parent)[0] or node is parent.params):
            return True
        node = parent
    return False


#: torch factories whose size a replay can read: None when every positional argument is a size (or the one
#: tuple or list of them), else the position of the one that is (``torch.randint(low, high, size)``,
#: ``torch.full(size, value)``)
SIZED_FACTORIES: dict[str, int | None] = {"torch.randn": None, "torch.rand": None, "torch.zeros": None,
                                          "torch.ones": None, "torch.empty": None, "torch.randint": -1,
                                          "torch.full": 0}


def replayed_sizes(program: Program, factory: cst.Call, caller: "FunctionInfo") -> list[Any]:
    """The size the factory call ``factory`` (of :data:`SIZED_FACTORIES`) is given at each iteration the
    replay of the loops around it in ``caller`` runs (UNKNOWN where not known): a tuple of its positional
    arguments, or the argument at the factory's size position."""
    if any(a.star for a in factory.args):
        return []
    position = SIZED_FACTORIES[program.index.resolve_expr(factory.func) or ""]
    names = [f"_{i}" for i, a in enumerate(factory.args) if a.keyword is None]
    values = loop_argument_values(factory, caller, names)
    if not names or any(n not in values for n in names):
        return []
    per_argument = [values[n] for n in names]
    if position is not None:
        return per_argument[position]
    return [tuple(vs) for vs in zip(*per_argument)]


def dynamic_arguments(program: Program, fn: "FunctionInfo") -> tuple[dict[str, str], dict[str, frozenset]]:
    """The parameters of the compiled function ``fn`` that Dynamo traces as symbolic once the calls of its
    module change them (automatic dynamic: one recompile, then a symbolic int or float; measured on torch
    2.13), each with the type of the numbers the calls pass (``builtins.int`` or ``builtins.float``): numbers
    the calls write as different literals (one neither 0 nor 1, which Dynamo specialises), and tensors a
    torch factory of literal sizes makes at the calls, with the dimensions whose size differs.  Compiled with
    ``dynamic=True``, every int a call writes as a literal and every dimension of a tensor made there is
    symbolic from the first call; with ``dynamic=False``, none is."""
    dynamic = compiled_dynamic(program, fn)
    sites = _recorded(program, fn, lambda: _call_sites(program, fn)) if dynamic is not False else None
    if not sites:
        return {}, {}
    names = fn.param_names()[1:] if fn.is_method else fn.param_names()
    numbers: dict[str, set[int | float]] = {}
    shapes: dict[str, set[tuple[int, ...]]] = {}
    for call, caller in sites:
        where = caller if caller is not None else top_level_code(program.index)
        replayed = loop_argument_values(call, where, names)  # (a call in a loop: each iteration's values)
        for name, expr in (_bind(call, names) or {}).items():
            passed = [v for v in replayed.get(name, ()) if type(v) in (int, float)] or [_literal_number(expr)]
            numbers.setdefault(name, set()).update(n for n in passed if n is not None)
            for shape in _factory_shapes(program, expr, where):
                shapes.setdefault(name, set()).add(shape)
    typed = {name: _number_type(seen) for name, seen in numbers.items()}
    if dynamic:
        ints = {name: t for name, t in typed.items() if t == "builtins.int"}
        return ints, {name: ALL_DIMS for name in shapes}
    varying = {name: typed[name] for name, seen in numbers.items()
               if typed[name] is not None and len(seen) >= 2 and seen - {0, 1}}
    dims: dict[str, frozenset] = {}
    for name, seen in shapes.items():
        ranks = {len(s) for s in seen}
        if len(ranks) == 1:
            rank = ranks.pop()
            changed = frozenset(i for i in range(rank) if len({s[i] for s in seen}) >= 2
                                and {s[i] for s in seen} - {0, 1})
            if changed:  # (counted from the end too: `x.shape[-1]` where the rank is not known there)
                dims[name] = changed | {i - rank for i in changed}
    return varying, dims


def _literal_int(expr: cst.BaseExpression) -> int | None:
    number = _literal_number(expr)
    return number if type(number) is int else None


def _literal_number(expr: cst.BaseExpression) -> int | float | None:
    """The int or float ``expr`` writes as a literal (``3``, ``-0.5``)."""
    negative = isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus)
    if negative:
        expr = expr.expression  # type: ignore[attr-defined]
    if isinstance(expr, (cst.Integer, cst.Float)):
        value = expr.evaluated_value
        return -value if negative else value
    return None


def _number_type(seen: set[int | float]) -> str | None:
    """``builtins.int`` or ``builtins.float`` when every number the calls pass is of that type (a mix is
    left alone: Dynamo guards on the type, and recompiles on the change of it)."""
    types = {type(n) for n in seen}
    return f"builtins.{types.pop().__name__}" if len(types) == 1 else None


def _made_by_torch(program: Program, expr: cst.BaseExpression, where: "FunctionInfo") -> bool:
    """``expr`` is a call of a torch function (``torch.arange(6.0)``), or a name bound once to one."""
    if isinstance(expr, cst.Name):
        expr = _single_binding(where, expr.value)  # type: ignore[assignment]
    return isinstance(expr, cst.Call) and (program.index.resolve_expr(expr.func) or "").startswith("torch.")


def _single_binding(where: "FunctionInfo", name: str) -> cst.BaseExpression | None:
    """The value of the one assignment ``name = value`` in ``where``'s body (nested scopes aside); None when
    it binds the name otherwise or more than once."""
    found = [n for n in walk(where.node.body, into_scopes=False) if name in names_bound_by(n)]
    if len(found) != 1 or not isinstance(found[0], cst.Assign) or len(found[0].targets) != 1:
        return None
    return found[0].value


def _factory_shapes(program: Program, expr: cst.BaseExpression, where: "FunctionInfo", depth: int = 0
                    ) -> list[tuple[int, ...]]:
    """The sizes ``torch.randn(4, 3)`` (or ``torch.zeros((4, 3), ...)``) makes, written as literals or as
    the variables of the loops around it (``for n in (4, 6): f(torch.randn(n, 3))``: one shape for each
    iteration replayed); empty when not known.  Also through a name the caller binds once to such a call
    (``a = torch.ones(4, 3); f(a)``), arithmetic with a number (``torch.ones(2, 3) / 5``) and ``.reshape``/
    ``.view`` to literal sizes (``torch.arange(6.0).reshape(2, 3)``)."""
    if depth > 3:
        return []
    if isinstance(expr, cst.Name):
        bound = _single_binding(where, expr.value)
        return _factory_shapes(program, bound, where, depth + 1) if bound is not None else []
    if isinstance(expr, cst.BinaryOperation):
        sides = [e for e in (expr.left, expr.right) if not isinstance(e, (cst.Integer, cst.Float))]
        return _factory_shapes(program, sides[0], where, depth + 1) if len(sides) == 1 else []
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value in ("reshape", "view") and expr.args \
            and _made_by_torch(program, expr.func.value, where):
        sizes = [a.value for a in expr.args if a.keyword is None]
        if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
            sizes = [e.value for e in sizes[0].elements]
        literal = [_literal_int(e) for e in sizes]
        known = bool(literal) and None not in literal and -1 not in literal
        return [tuple(literal)] if known else []  # type: ignore[arg-type]
    if not isinstance(expr, cst.Call) or SIZED_FACTORIES.get(program.index.resolve_expr(expr.func) or "", 0) \
            is not None or any(a.star for a in expr.args):
        return []  # (a factory every positional argument of which is a size)
    positional = [a.value for a in expr.args if a.keyword is None]
    if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
        positional = [e.value for e in positional[0].elements]
    literal = [_literal_int(e) for e in positional]
    if positional and None not in literal:
        return [tuple(literal)]  # type: ignore[arg-type]
    rows = replayed_sizes(program, expr, where)  # (a tuple of sizes written with variables: no int row)
    return [row for row in rows if all(type(v) is int for v in row)] if all(
        all(v is not UNKNOWN for v in row) for row in rows) else []


def compiled_dynamic(program: Program, fn: "FunctionInfo") -> bool | None:
    """The ``dynamic=`` the module compiles ``fn`` with (its ``@torch.compile(...)`` or a ``torch.compile(fn,
    ...)`` call), when written as a literal; None when not given."""
    calls = [d.decorator for d in fn.node.decorators] if fn.compile_decorated else []
    calls += [c for c in program.index.compile_calls if c.args and isinstance(c.args[0].value, cst.Name)
              and c.args[0].value.value == fn.name]
    for call in calls:
        for arg in call.args if isinstance(call, cst.Call) else ():
            if arg.keyword is not None and arg.keyword.value == "dynamic" \
                    and isinstance(arg.value, cst.Name) and arg.value.value in ("True", "False"):
                return arg.value.value == "True"
    return None
