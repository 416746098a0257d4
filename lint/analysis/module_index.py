"""A cheap index of one module: imports, functions, classes, globals, and the
facts about state that guard rules need (which globals are mutated, which
attributes are set from outside ``forward``, what callers pass).

Built from the top-level statements plus one read-only walk over function
bodies; no libcst metadata providers are involved.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TypeVar

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.custom_ops import index_custom_ops
from dynalint.analysis.syntax import (NOT_LITERAL, assigned_names, decorator_target, dotted_name, encloses,
                                      is_generator, is_main_guard, literal_constant, root_name, walk)

T = TypeVar("T")

#: Method calls that mutate a container in place.
MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
                              "setdefault", "add", "discard", "sort", "reverse", "__setitem__"})

COMPILE_NAMES = frozenset({"torch.compile", "torch._dynamo.optimize", "torch.compiler.compile"})
_DISABLE_NAMES = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo",
                            "torch._dynamo.eval_frame.disable"})
#: decorators that make Dynamo call the function while tracing and keep its result as a constant
_CONSTANT_RESULT_NAMES = frozenset({"torch.compiler.assume_constant_result", "torch._dynamo.assume_constant_result"})


@dataclass(frozen=True)
class AttributeKey:
    """The attribute a change of a global stores into (``model.step_count += 1``), among
    :attr:`ModuleIndex.global_keys_changed`."""

    name: str


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    name: str
    qualname: str
    cls: "ClassInfo | None" = None
    decorators: tuple[str, ...] = ()
    compile_decorated: bool = False
    disabled: bool = False
    custom_op: str | None = None
    """``torch.ops.<ns>.<op>`` when the function defines a ``torch.library`` custom op."""
    is_static: bool = False
    is_classmethod: bool = False
    local_names: frozenset[str] = frozenset()
    yields: bool | None = None
    """Whether a ``yield`` is in the function's body or in a function nested in it (None: not indexed); False
    settles that it is no generator without another walk (see :func:`is_generator_function`)."""
    global_decls: frozenset[str] = frozenset()
    nested_compiled: tuple[cst.FunctionDef, ...] = ()
    """Functions defined inside this one that a decorator compiles (a script's ``@torch.compile def
    train_step`` inside ``main()``): entry points of their own."""
    closure: dict | None = field(default=None, repr=False)
    """For functions nested in analysed code: the enclosing environment."""
    bound: dict | None = field(default=None, repr=False)
    """For a function compiled through ``functools.partial(f, model, opt)``: the objects the partial binds to
    its parameters, by name (:meth:`~dynalint.analysis.entry_points.EntryPoints.partial_target`)."""
    outer: "FunctionInfo | None" = field(default=None, repr=False)
    """For functions nested in analysed code: the module-level function or method that holds them."""
    owner: "ModuleIndex | None" = field(default=None, repr=False)
    """The module that defines the function."""
    _derived: dict[str, tuple[cst.FunctionDef, object]] = field(default_factory=dict, repr=False)

    @property
    def constant_result(self) -> bool:
        """Decorated with ``assume_constant_result``: compiled code calls it while tracing (its body is not
        traced, nothing in it breaks) and the graph keeps what it returned as a constant."""
        return any(d in _CONSTANT_RESULT_NAMES for d in self.decorators)

    @property
    def is_method(self) -> bool:
        return self.cls is not None and not self.is_static

    def derived(self, name: str, compute: Callable[[cst.FunctionDef], T]) -> T:
        """``compute(node)`` of the function's definition, computed once per definition: a fact of its
        syntax alone (its loops, the order of its nodes) that the rules ask of many events.  The index of
        an edited text keeps this object for a definition the edit left (:func:`build_index` with
        ``reuse``), so the analysis of an edit computes it again only for the definitions it changed."""
        known = self._derived.get(name)
        if known is None or known[0] is not self.node:
            if known is not None:  # the definition was replaced: what was derived of the old one goes
                self._derived.clear()
            known = self._derived[name] = (self.node, compute(self.node))
        return known[1]  # type: ignore[return-value]

    def names_read(self) -> frozenset[str]:
        """Every name the function's body mentions (nested scopes not entered), found once per definition."""
        return self.derived("names read", lambda node: frozenset(
            n.value for n in walk(node.body, into_scopes=False) if type(n) is cst.Name))

    def param_names(self) -> list[str]:
        p = self.node.params
        return [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    bases: tuple[str, ...]
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    base_classes: list["ClassInfo"] = field(default_factory=list)
    is_module: bool = False
    body_assigns: dict[str, cst.BaseExpression] = field(default_factory=dict)
    owner: "ModuleIndex | None" = field(default=None, repr=False)
    """The module that defines the class."""
    field_annotations: dict[str, cst.BaseExpression] = field(default_factory=dict)
    """``name: Type`` in the class body (the fields of a dataclass or NamedTuple)."""
    updated_in_place: set[str] = field(default_factory=set)
    """Attributes its methods other than ``__init__`` update in place (``self.count.add_(1)``,
    ``self.total += x``, ``self.cache[i] = k``): buffers that change between calls."""

    def mro(self) -> Iterator["ClassInfo"]:
        seen: set[int] = set()
        stack = [self]
        while stack:
            c = stack.pop(0)
            if id(c) in seen:
                continue
            seen.add(id(c))
            yield c
            stack.extend(c.base_classes)

    @property
    def plain(self) -> bool:
        """No class of its MRO is a module or derives from a class outside the checked code (``object``
        aside): an instance Dynamo does not look into for tensors when it decides to compile a frame."""
        return all(not c.is_module and len([b for b in c.bases if b != "object"]) == len(c.base_classes)
                   for c in self.mro())

    def find_method(self, name: str) -> FunctionInfo | None:
        for c in self.mro():
            if name in c.methods:
                return c.methods[name]
        return None

    def instance_method(self, name: str) -> FunctionInfo | None:
        """The method ``name`` that runs on an instance with the instance as its first argument
        (``__call__`` when the instance is called, ``__init__`` when the class is): the first definition
        in the MRO, None when there is none or it is a static or class method."""
        fn = self.find_method(name)
        return fn if fn is not None and not fn.is_static and not fn.is_classmethod else None


@dataclass
class ModuleIndex:
    module: cst.Module
    imports: dict[str, str] = field(default_factory=dict)
    """Local name -> qualified name (``nn`` -> ``torch.nn``, ``F`` -> ``torch.nn.functional``)."""
    runtime_imports: dict[str, str] = field(default_factory=dict)
    """The bindings of :attr:`imports` made whenever the module is imported: module-level import
    statements and those of ``try`` bodies (torch code needs them to succeed), not those under an
    ``if`` (``if TYPE_CHECKING:``), a ``with`` or an ``except``."""
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    globals: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    """Module-level names bound by assignments, with the assigned expressions in order."""
    mutated_globals: dict[str, tuple[cst.CSTNode, "FunctionInfo | None"]] = field(default_factory=dict)
    """Globals rebound or mutated inside a function, or by the module's own statements after a compiled call
    (no function), with the first such place."""
    global_keys_changed: dict[str, set[object]] = field(default_factory=dict)
    """The literal keys the changes of :attr:`mutated_globals` store into (``CFG["name"] = ...``), an
    :class:`AttributeKey` for an attribute stored into (``model.step_count += 1``), with
    :data:`~dynalint.analysis.syntax.NOT_LITERAL` for any other change (a rebinding, an ``append``, a
    ``del``, a key that is no literal)."""
    attr_writes_outside: dict[str, list[tuple[cst.CSTNode, FunctionInfo | None]]] = field(default_factory=dict)
    """``obj.attr = value`` on something other than ``self``, or ``self.attr = value`` in a
    method other than ``__init__``, or by the module's own statements after a compiled call (no function):
    attr name -> places."""
    attr_changes_outside: dict[str, list[tuple[cst.Attribute, FunctionInfo | None, object]]] = \
        field(default_factory=dict)
    """A list, dict, set or deque held in an attribute changed in place where :attr:`attr_writes_outside`
    would note a store into the attribute (``m.skip.append(1)``, ``m.hp["temperature"] = 2.0``: a change
    of length, or a literal stored into an element): attr name -> the attribute's expressions there
    (``m.skip``), with the literal key stored into (:data:`~dynalint.analysis.syntax.NOT_LITERAL` for a change
    of length or a key that is no literal)."""
    compile_calls: list[cst.Call] = field(default_factory=list)
    """``torch.compile(x)`` calls anywhere in the module."""
    call_sites: dict[str, list[tuple[cst.Call, FunctionInfo | None]]] = field(default_factory=dict)
    """Calls by simple callee name (``helper(...)``, ``self.block(...)`` -> ``block``)."""
    all_functions: list[FunctionInfo] = field(default_factory=list)
    imports_torch: bool = False
    reorderable: set[str] = field(default_factory=set)
    """Functions this module adds to ``torch._dynamo.config.reorderable_logging_functions``."""
    dynamic_output_ops: set[str] = field(default_factory=set)
    """Custom ops (``torch.ops.<ns>.<op>``) whose fake implementation here has a data-dependent size."""
    compile_targets: list[tuple[cst.Call, FunctionInfo | None]] = field(default_factory=list)
    """``torch.compile(x)`` calls with the function they sit in (None: module level)."""
    calls_after_compiled: set[int] | None = field(default=None, repr=False)
    """``id`` of the calls of the module's own statements that may run after one of its compiled calls (see
    :func:`_note_writes_after_compiled_calls`); None when those statements make no compiled call the index
    sees."""
    top_level: FunctionInfo | None = field(default=None, repr=False)
    """The module's own statements as one function (:func:`top_level_code`), made when first asked for."""
    private_objects: frozenset[str] | None = field(default=None, repr=False)
    """The names :func:`unseen_by_compiled_code` accepts, found when first asked for."""
    name: str = ""
    """Dotted module name (when known from the project)."""
    path: str = ""
    source: str | None = None

    def dispose(self) -> None:
        """Nothing will read this index again: undo the links between its functions, classes and
        itself (a function's class and module, a class's methods), so that it and its tree are freed
        at once, not by a garbage collection that walks every tree still alive to find them."""
        for fn in self.all_functions:
            fn.owner = fn.cls = fn.outer = fn.closure = None
        for cls in self.classes.values():
            cls.owner = None
            cls.methods, cls.base_classes = {}, []
        self.functions, self.classes, self.all_functions = {}, {}, []
        self.mutated_globals, self.attr_writes_outside, self.call_sites = {}, {}, {}
        self.global_keys_changed = {}
        self.attr_changes_outside = {}
        self.compile_targets = []
        self.top_level = self.private_objects = None

    @property
    def compiles_code(self) -> bool:
        """The module compiles code of its own (``torch.compile(f)``, ``@torch.compile``): a script, which
        calls what it compiles, so the calls it makes are all there is to know of its compiled code's
        arguments."""
        return bool(self.compile_targets) or any(f.compile_decorated or f.nested_compiled
                                                 for f in self.all_functions)

    @property
    def text(self) -> str:
        """The module's source text (generated again from its tree when the index does not keep it)."""
        return self.source if self.source is not None else self.module.code

    def resolve(self, dotted: str | None) -> str | None:
        """Qualified name of a dotted expression through the import aliases."""
        if not dotted:
            return None
        head, _, rest = dotted.partition(".")
        base = self.imports.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def resolve_expr(self, node: cst.CSTNode) -> str | None:
        return self.resolve(dotted_name(node))


TOP_LEVEL = "<module>"
"""The name of :func:`top_level_code`'s function (no function of a module can have it)."""


def top_level_code(idx: ModuleIndex) -> FunctionInfo:
    """The module's statements but its definitions and imports, in order, with the body of an ``if __name__ ==
    "__main__":`` block in place of the block, as the body of a function without parameters: a script's
    calls at module level (the loop of its ``__main__`` block) replayed as a function's are.  Its nodes are
    the module's own."""
    if idx.top_level is None:
        body: list[cst.BaseStatement] = []
        for stmt in idx.module.body:
            imports = isinstance(stmt, cst.SimpleStatementLine) \
                and all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body)
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or imports:
                continue
            main = isinstance(stmt, cst.If) and stmt.orelse is None and is_main_guard(stmt.test)
            body.extend(stmt.body.body if main and isinstance(stmt.body, cst.IndentedBlock) else [stmt])
        node = cst.FunctionDef(name=cst.Name("__main__"), params=cst.Parameters(),
                               body=cst.IndentedBlock(body=body))
        idx.top_level = FunctionInfo(node=node, name=TOP_LEVEL, qualname=TOP_LEVEL, owner=idx)
    return idx.top_level


def build_index(module: cst.Module, reuse: "ModuleIndex | None" = None,
                bindings: "dict[int, tuple[cst.FunctionDef, Bindings]] | None" = None) -> ModuleIndex:
    """The index of ``module``.  ``reuse``: the index of the module an edit was spliced from
    (:mod:`dynalint.engine.incremental`): its classes (by name), the functions whose nodes the new module
    still holds and those whose body alone was edited (with the new node) are the same objects in the
    new index, filled again, so that what an analysis of the old module remembered about them still
    names them (:mod:`dynalint.analysis.replay`).  ``bindings``: where the bindings of the module's
    functions are kept, by node, across indexes of the same tree (filled here)."""
    _BINDINGS.begin(bindings)
    try:
        return _build_index(module, reuse)
    finally:
        _BINDINGS.end()


def _build_index(module: cst.Module, reuse: "ModuleIndex | None") -> ModuleIndex:
    idx = ModuleIndex(module=module)
    _REUSE.begin(reuse)
    try:
        _index_block(idx, module.body, top=True)
    finally:
        _REUSE.begin(None)
    idx.imports_torch = any(q == "torch" or q.startswith("torch.") for q in idx.imports.values())
    for cls in idx.classes.values():
        cls.base_classes = [idx.classes[b] for b in cls.bases if b in idx.classes and idx.classes[b] is not cls]
    for cls in idx.classes.values():
        cls.is_module = _is_module_class(idx, cls, set())
    import_time = _import_time_decorators(idx)
    for fn in idx.all_functions:
        _scan_function(idx, fn, fn.name in import_time and idx.functions.get(fn.name) is fn)
        fn.owner = idx
    for cls in idx.classes.values():
        cls.owner = idx
    _note_writes_after_compiled_calls(idx)
    index_custom_ops(idx)
    return idx


def _note_writes_after_compiled_calls(idx: ModuleIndex) -> None:
    """The module's own statements (a script's ``__main__`` block) that rebind or change a global or an
    object's attribute between two calls of one compiled handle (``opt(x); SCALE = 3.0; opt(x)``, or anywhere
    in a loop that makes one): a change between two compiled calls, as a function's writes are, noted with no
    function (:attr:`ModuleIndex.mutated_globals`, :attr:`ModuleIndex.attr_writes_outside`).  A write before a
    handle's first call configures what it then compiles, once, and one after its last call changes nothing it
    runs (measured on torch 2.13: ``g(x); m.temp = 0.5; c = torch.compile(m); c(x); c(x)`` does not
    recompile)."""
    text = idx.source
    if text is not None and "compile" not in text:
        return
    compiled = {fn.name for fn in idx.all_functions if fn.compile_decorated}
    compiled.update(name for n in walk(idx.module, into_scopes=False)
                    if type(n) is cst.Assign and type(n.value) is cst.Call
                    and idx.resolve_expr(n.value.func) in COMPILE_NAMES
                    for t in n.targets for name in assigned_names(t.target))
    # (`agent.act = torch.compile(agent.act)`, in a method too: its calls are `....act(...)`)
    compiled.update(t.target.attr.value for n in walk(idx.module)
                    if type(n) is cst.Assign and type(n.value) is cst.Call
                    and idx.resolve_expr(n.value.func) in COMPILE_NAMES
                    for t in n.targets if type(t.target) is cst.Attribute)
    if not compiled:
        return
    idx.calls_after_compiled = set()
    steps: list[tuple[cst.CSTNode, frozenset[str], bool]] = []
    _module_steps(_calling_handles(idx, compiled), idx.module.body, steps)
    before: set[str] = set()
    after: list[set[str]] = [set() for _ in range(len(steps) + 1)]
    for i in range(len(steps) - 1, -1, -1):
        after[i] = after[i + 1] | steps[i][1]
    for i, (stmt, handles, repeats) in enumerate(steps):
        if (before | (handles if repeats else set())) & (after[i + 1] | (handles if repeats else set())):
            _note_top_level_writes(idx, stmt)
        before |= handles


def _calling_handles(idx: ModuleIndex, compiled: set[str]) -> dict[str, frozenset[str]]:
    """Name -> the compiled handles a call of that name runs: each handle itself (a name, or the attribute a
    handle is stored in), and each function or method of the module whose body calls one, at any depth (a
    ``train()`` whose loop calls the compiled ``step``; an ``update()`` that calls ``self.actor_loss``)."""
    calls = {h: frozenset({h}) for h in compiled}
    bodies = [(fn.name, {_called_name(n) for n in walk(fn.node.body, into_scopes=False) if type(n) is cst.Call})
              for fn in idx.all_functions if fn.name not in compiled]
    grew = True
    while grew:
        grew = False
        for name, called in bodies:
            found = frozenset(h for c in called if c in calls for h in calls[c])
            if found - calls.get(name, frozenset()):
                calls[name] = calls.get(name, frozenset()) | found
                grew = True
    # an instance a global holds, called (`p(x)`): its class's `__call__` runs, or an nn.Module's `forward`
    for name, values in idx.globals.items():
        made = values[0] if len(values) == 1 else None
        cls = idx.classes.get(made.func.value) \
            if type(made) is cst.Call and type(made.func) is cst.Name and name not in calls else None
        method = cls.find_method("forward" if cls.is_module else "__call__") if cls is not None else None
        if method is not None and method.name in calls:
            calls[name] = calls[method.name]
    return calls


def _called_name(call: cst.Call) -> str | None:
    func = call.func
    return func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else None


def _handles_called(node: cst.CSTNode, compiled: dict[str, frozenset[str]]) -> frozenset[str]:
    """The compiled handles that ``node`` calls, itself or through functions of the module (see
    :func:`_calling_handles`)."""
    return frozenset(h for n in walk(node, into_scopes=False) if type(n) is cst.Call
                     for h in compiled.get(_called_name(n) or "", ()))


def _module_steps(compiled: dict[str, frozenset[str]], stmts: list | tuple, steps: list) -> None:
    """The module-level statements of ``stmts`` in the order they run, each with the compiled handles it calls
    and whether it runs them again and again (a loop); the blocks of an ``if`` (the branches one after the
    other), a ``try`` and a ``with`` are entered."""
    for stmt in stmts:
        tp = type(stmt)
        if tp is cst.FunctionDef or tp is cst.ClassDef:
            continue
        if tp is cst.If and stmt.orelse is None and is_main_guard(stmt.test) or tp is cst.With:
            _module_steps(compiled, stmt.body.body, steps)
        elif tp is cst.If or tp is cst.Try:
            for part in _suites(stmt):
                _module_steps(compiled, part, steps)
        else:
            steps.append((stmt, _handles_called(stmt, compiled), tp is cst.For or tp is cst.While))


def _note_top_level_writes(idx: ModuleIndex, stmt: cst.CSTNode) -> None:
    """The globals and attributes a module-level statement stores into or changes in place, and its calls."""
    is_global = idx.globals.__contains__
    for n in walk(stmt, into_scopes=False):
        tp = type(n)
        if tp is cst.Call and idx.calls_after_compiled is not None:
            idx.calls_after_compiled.add(id(n))
        if tp is cst.Assign or tp is cst.AugAssign or tp is cst.AnnAssign:
            for t in [t.target for t in n.targets] if tp is cst.Assign else [n.target]:
                for name in assigned_names(t):
                    if is_global(name) and (tp is not cst.Assign or len(idx.globals[name]) > 1):
                        _note_global_change(idx, name, n, None)
                _note_store(idx, None, t, n, is_global, None)
        elif tp is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in MUTATING_METHODS:
            root = root_name(n.func.value)
            if root is not None and is_global(root):
                _note_global_change(idx, root, n, None)
            _note_length_change(idx, None, n, None)


# --- top level -------------------------------------------------------------------


def _index_block(idx: ModuleIndex, body: list[cst.CSTNode] | tuple, top: bool, runtime: bool = True) -> None:
    """Index the statements of a module-level block (``runtime``: the block runs whenever the module
    is imported)."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                _index_small(idx, small)
                if runtime and isinstance(small, (cst.Import, cst.ImportFrom)):
                    idx.runtime_imports.update(import_bindings(small))
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            _index_definition(idx, stmt)
        elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
            # `if TYPE_CHECKING:`, `try: import x except ImportError:`, ...
            for i, part in enumerate(_suites(stmt)):
                _index_block(idx, part, top, runtime and isinstance(stmt, cst.Try) and i == 0)
        elif isinstance(stmt, (cst.For, cst.While)):
            for n in walk(stmt):
                if isinstance(n, cst.Call):
                    _note_call(idx, n, None)
            _index_loop_definitions(idx, stmt)


def _index_definition(idx: ModuleIndex, stmt: cst.FunctionDef | cst.ClassDef) -> None:
    """Index a function or class the module defines."""
    if isinstance(stmt, cst.ClassDef):
        _index_class(idx, stmt)
        return
    fn = _REUSE.function(stmt, None) or _make_function(idx, stmt, None)
    idx.functions[fn.name] = fn
    idx.all_functions.append(fn)


def _index_loop_definitions(idx: ModuleIndex, loop: cst.For | cst.While) -> None:
    """Index the functions and classes a module-level loop defines (a script's sweep that defines and
    compiles a step per setting), in its blocks and theirs; its other statements run many times, so
    what they bind is not indexed as the module's."""
    blocks = [list(loop.body.body)] + ([list(loop.orelse.body.body)] if loop.orelse is not None else [])
    while blocks:
        for stmt in blocks.pop():
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                _index_definition(idx, stmt)
            elif isinstance(stmt, (cst.For, cst.While)):
                blocks.append(list(stmt.body.body))
                if stmt.orelse is not None:
                    blocks.append(list(stmt.orelse.body.body))
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
                blocks += list(_suites(stmt))


def _suites(stmt: cst.CSTNode) -> Iterator[list]:
    if isinstance(stmt, cst.If):
        yield list(stmt.body.body)
        if stmt.orelse is not None:
            if isinstance(stmt.orelse, cst.If):
                yield [stmt.orelse]
            else:
                yield list(stmt.orelse.body.body)
    elif isinstance(stmt, cst.Try):
        yield list(stmt.body.body)
        for h in stmt.handlers:
            yield list(h.body.body)
        if stmt.orelse is not None:
            yield list(stmt.orelse.body.body)
        if stmt.finalbody is not None:
            yield list(stmt.finalbody.body.body)
    elif isinstance(stmt, cst.With):
        yield list(stmt.body.body)


def import_bindings(node: cst.Import | cst.ImportFrom) -> dict[str, str]:
    """Local names an import statement binds, with their qualified names."""
    out: dict[str, str] = {}
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                out[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                out[head] = head
        return out
    if isinstance(node.names, cst.ImportStar):
        return out
    mod = "." * len(node.relative) + (dotted_name(node.module) or "" if node.module is not None else "")
    for alias in node.names:
        name = dotted_name(alias.name) or ""
        local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
        out[local] = f"{mod}.{name}" if mod and not mod.endswith(".") else f"{mod}{name}"
    return out


def _index_small(idx: ModuleIndex, small: cst.CSTNode) -> None:
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        idx.imports.update(import_bindings(small))
    elif isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        for t in targets:
            for name, value in _global_bindings(t, small.value):
                idx.globals.setdefault(name, []).append(value)
        for n in walk(small):
            if isinstance(n, cst.Call):
                _note_call(idx, n, None)
    elif isinstance(small, cst.Expr):
        _note_reorderable(idx, small)
        for n in walk(small):
            if isinstance(n, cst.Call):
                _note_call(idx, n, None)


def _global_bindings(target: cst.CSTNode, value: cst.BaseExpression | None
                     ) -> Iterator[tuple[str, cst.BaseExpression | None]]:
    """The names an assignment binds, each with the expression it is bound to: an item of a tuple written out
    that the target unpacks one for one (``G, D = nn.Linear(4, 4), nn.Linear(4, 1)``), else the whole
    value."""
    if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) \
            and len(target.elements) == len(value.elements) \
            and not any(type(e) is cst.StarredElement for e in (*target.elements, *value.elements)):
        for t, v in zip(target.elements, value.elements):
            yield from _global_bindings(t.value, v.value)
        return
    for name in assigned_names(target):
        yield name, value


_REORDERABLE = "torch._dynamo.config.reorderable_logging_functions"


def _note_reorderable(idx: ModuleIndex, stmt: cst.Expr) -> None:
    """``torch._dynamo.config.reorderable_logging_functions.add(print)`` (or ``.update({...})``)."""
    call = stmt.value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in ("add", "update")):
        return
    if idx.resolve_expr(call.func.value) != _REORDERABLE:
        return
    for arg in call.args:
        values = [arg.value]
        if isinstance(arg.value, (cst.Set, cst.List, cst.Tuple)):
            values = [el.value for el in arg.value.elements]
        for v in values:
            name = dotted_name(v)
            if name:
                idx.reorderable.add(idx.resolve(name) or f"builtins.{name}")


def _index_class(idx: ModuleIndex, node: cst.ClassDef) -> None:
    bases = tuple(d for d in (dotted_name(a.value) for a in node.bases if a.keyword is None) if d)
    cls = _REUSE.cls(node, bases) or ClassInfo(node=node, name=node.name.value, bases=bases)
    idx.classes[cls.name] = cls
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            fn = _REUSE.function(stmt, cls) or _make_function(idx, stmt, cls)
            cls.methods[fn.name] = fn
            idx.all_functions.append(fn)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            cls.body_assigns[t.target.value] = small.value
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    cls.field_annotations[small.target.value] = small.annotation.annotation
                    if small.value is not None:
                        cls.body_assigns[small.target.value] = small.value


class _Reused:
    """The objects of the index being rebuilt from (see :func:`build_index`)."""

    def __init__(self) -> None:
        self.functions: dict[int, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.named: dict[tuple[int, str], FunctionInfo] = {}

    def begin(self, old: "ModuleIndex | None") -> None:
        self.functions = {id(fn.node): fn for fn in old.all_functions} if old is not None else {}
        self.classes = dict(old.classes) if old is not None else {}
        named: dict[tuple[int, str], FunctionInfo | None] = {}
        for fn in old.all_functions if old is not None else ():
            key = (id(fn.cls), fn.name)
            named[key] = None if key in named else fn  # a name defined twice: not found by name
        self.named = {key: fn for key, fn in named.items() if fn is not None}

    def function(self, node: cst.FunctionDef, cls: ClassInfo | None) -> FunctionInfo | None:
        """The old index's function of ``node``: the same node, or, for a definition whose body alone
        was edited (its header, the lines that callers read, unchanged), the function of the same name
        of the same class, which takes the new node (:func:`same_header`)."""
        fn = self.functions.pop(id(node), None)
        if fn is None or fn.node is not node or fn.cls is not cls:
            fn = self.named.get((id(cls), node.name.value))
            if fn is None or fn.cls is not cls or id(fn.node) not in self.functions \
                    or not same_header(fn.node, node):
                return None
            del self.functions[id(fn.node)]
            fn.node = node
        self.named.pop((id(cls), fn.name), None)
        fn.custom_op = None  # filled again by index_custom_ops
        return fn

    def cls(self, node: cst.ClassDef, bases: tuple[str, ...]) -> ClassInfo | None:
        cls = self.classes.pop(node.name.value, None)
        if cls is None:
            return None
        cls.node, cls.bases = node, bases
        cls.methods, cls.base_classes, cls.is_module = {}, [], False
        cls.body_assigns, cls.field_annotations, cls.updated_in_place = {}, {}, set()
        return cls


_REUSE = _Reused()


def same_header(a: cst.FunctionDef, b: cst.FunctionDef) -> bool:
    """Whether two definitions differ in the statements of their bodies at most: the same decorators,
    name, parameters, annotations and the rest of the ``def`` line (its comment too, where a ``# type:``
    comment is read)."""
    if a is b:
        return True
    if type(a.body) is not cst.IndentedBlock or type(b.body) is not cst.IndentedBlock:
        return False
    empty = cst.IndentedBlock(body=())
    return _type_comments(a.body) == _type_comments(b.body) and \
        a.with_changes(body=empty.with_changes(header=a.body.header, indent=a.body.indent)).deep_equals(
            b.with_changes(body=empty.with_changes(header=b.body.header, indent=b.body.indent)))


def _type_comments(body: cst.IndentedBlock) -> tuple[str, ...]:
    """The ``# type:`` comments above the first statement of a body, where a function's signature comment
    may stand too (PEP 484)."""
    lines = getattr(body.body[0], "leading_lines", ()) if body.body else ()
    return tuple(line.comment.value for line in lines
                 if line.comment is not None and line.comment.value.lstrip("#").strip().startswith("type:"))


def decorated(idx: ModuleIndex, node: cst.FunctionDef) -> tuple[tuple[str, ...], bool, bool]:
    """A function's decorators (qualified through the imports), whether one compiles it and whether
    one disables Dynamo on it (its body then runs eagerly)."""
    decos = []
    for d in node.decorators:
        target = decorator_target(d)
        dn = dotted_name(target) or ""
        decos.append(_compile_decorator(idx, dn) or idx.resolve(dn) or dn)
    return tuple(decos), any(d in COMPILE_NAMES for d in decos), any(d in _DISABLE_NAMES for d in decos)


def _compile_decorator(idx: ModuleIndex, name: str) -> str | None:
    """The compile function a module-level name stands for when it is bound once to a compile call that
    compiles nothing yet (``compile_eager = torch.compile(backend="eager")``, used as ``@compile_eager``)."""
    exprs = idx.globals.get(name)
    if not exprs or len(exprs) != 1 or type(exprs[0]) is not cst.Call:
        return None
    call = exprs[0]
    q = idx.resolve_expr(call.func)
    return q if q in COMPILE_NAMES and not any(a.keyword is None for a in call.args) else None


def _make_function(idx: ModuleIndex, node: cst.FunctionDef, cls: ClassInfo | None) -> FunctionInfo:
    decos, compiled, disabled = decorated(idx, node)
    return FunctionInfo(
        node=node,
        name=node.name.value,
        qualname=f"{cls.name}.{node.name.value}" if cls else node.name.value,
        cls=cls,
        decorators=decos,
        compile_decorated=compiled,
        disabled=disabled,
        is_static="staticmethod" in decos,
        is_classmethod="classmethod" in decos,
    )


def torch_optimizer_base(cls: ClassInfo) -> str | None:
    """The ``torch.optim`` class that ``cls`` (or a base of it in its module) derives from
    (``class LAMB(torch.optim.Optimizer)``), resolved through the module's imports."""
    for c in cls.mro():
        idx = c.owner
        for base in c.bases:
            q = (idx.resolve(base) if idx is not None else None) or base
            if q.startswith("torch.optim.") and q.rpartition(".")[2][:1].isupper():
                return q
    return None


def _is_module_class(idx: ModuleIndex, cls: ClassInfo, seen: set[str]) -> bool:
    if cls.name in seen:
        return False
    seen.add(cls.name)
    for base in cls.bases:
        q = idx.resolve(base) or base
        if q.startswith("torch.nn.") or q in ("torch.nn.Module", "Module"):
            return True
        if base in idx.classes and _is_module_class(idx, idx.classes[base], seen):
            return True
    # A class deriving from something imported (e.g. a project's base layer or
    # ``PreTrainedModel``) that defines ``forward`` is treated as a module.
    if "forward" in cls.methods:
        return any(b not in idx.classes and b not in ("object", "ABC", "Protocol", "Generic") for b in cls.bases)
    return False


# --- function bodies -----------------------------------------------------------------


def local_names_of(node: cst.FunctionDef) -> tuple[frozenset[str], frozenset[str]]:
    """(names local to a function, names it declares ``global``)."""
    local, global_decls, _ = _bindings(node)
    return local, global_decls


Bindings = tuple[frozenset[str], frozenset[str], tuple[cst.CSTNode, ...]]


class _Remembered:
    """The bindings of the functions of the last module indexed, by node: a module spliced from the
    last one and a parse of the statements an edit changed (:mod:`dynalint.engine.incremental`) shares the
    other functions' nodes with it, which are immutable.  Only the last module's are kept (and each
    entry holds its node, so that no other node takes its ``id``)."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[cst.FunctionDef, Bindings]] = {}
        self.now: dict[int, tuple[cst.FunctionDef, Bindings]] = {}
        self._borrowed = False

    def begin(self, known: dict[int, tuple[cst.FunctionDef, Bindings]] | None = None) -> None:
        """A module is indexed: the functions of the one before are looked up, this one's kept (in
        ``known``, when given: those of an earlier index of the same tree)."""
        self.last, self.now = self.now, known if known is not None else {}
        self._borrowed = known is not None

    def end(self) -> None:
        """The module is indexed: a dict borrowed from its tree is given back (later look-ups, of any
        module's functions, go to a copy of it), so that the tree keeps the bindings of its own
        functions only."""
        if self._borrowed:
            self.now, self._borrowed = dict(self.now), False

    def get(self, node: cst.FunctionDef) -> Bindings:
        key = id(node)
        known = self.now.get(key) or self.last.get(key)
        if known is None or known[0] is not node:
            known = (node, _walk_bindings(node))
        self.now[key] = known
        return known[1]


_BINDINGS = _Remembered()


def _bindings(node: cst.FunctionDef) -> Bindings:
    """One walk over a function: its local names, its ``global`` names, and the nodes
    that may mutate state (assignments, ``del``, calls), make it a generator (``yield``) or be compiled
    (decorated functions nested in it)."""
    return _BINDINGS.get(node)


def state_nodes(node: cst.FunctionDef) -> tuple[cst.CSTNode, ...]:
    """The assignments, ``del`` statements and calls of a function's body, nested scopes included, in
    the order of a walk of it: those the one walk indexing the function kept (no walk again)."""
    return _bindings(node)[2]


def _walk_bindings(node: cst.FunctionDef) -> Bindings:
    p = node.params
    local: set[str] = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            local.add(star.name.value)
    global_decls: set[str] = set()
    interesting: list[cst.CSTNode] = []
    for n in walk(node.body):
        tp = type(n)
        if tp is cst.Call or tp is cst.Del or tp is cst.Assign or tp is cst.AnnAssign or tp is cst.AugAssign \
                or tp is cst.Yield or (tp is cst.FunctionDef and n.decorators):
            interesting.append(n)
        if tp is cst.Global:
            global_decls.update(x.name.value for x in n.names)
        elif tp in _BINDERS:
            local.update(names_bound_by(n))
    return frozenset(local - global_decls), frozenset(global_decls), tuple(interesting)


_BINDERS = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr,
                      cst.WithItem, cst.FunctionDef, cst.ClassDef, cst.ExceptHandler, cst.Import, cst.ImportFrom})
"""The nodes :func:`names_bound_by` finds names in (asked of the others, it finds none)."""


def body_bindings(node: cst.FunctionDef) -> frozenset[str]:
    """The names the statements of a function's body bind (its parameters are not, unless rebound)."""
    return frozenset(name for n in walk(node.body, into_scopes=False) for name in names_bound_by(n))


def names_bound_by(n: cst.CSTNode) -> Iterable[str]:
    """The names one node binds by itself (an assignment's targets, a loop variable, an import...),
    not those of the nodes inside it."""
    tp = type(n)
    if tp is cst.Assign:
        return [x for t in n.targets for x in assigned_names(t.target)]
    if tp is cst.AnnAssign or tp is cst.AugAssign or tp is cst.For or tp is cst.CompFor or tp is cst.NamedExpr:
        return assigned_names(n.target)
    if tp is cst.WithItem and n.asname is not None:
        return assigned_names(n.asname.name)
    if tp is cst.FunctionDef or tp is cst.ClassDef:
        return (n.name.value,)
    if tp is cst.ExceptHandler and n.name is not None:
        return assigned_names(n.name.name)
    if tp is cst.Import or tp is cst.ImportFrom:
        return import_bindings(n)
    return ()


def _import_time_decorators(idx: ModuleIndex) -> frozenset[str]:
    """The functions of the module used only as decorators of its module-level definitions (``@register``,
    ``@register(0.5)``): they run, and fill what they fill (a registry), while the module is imported,
    before any compiled code reads it."""
    used: dict[str, list[cst.Name]] = {}
    for stmt in idx.module.body:
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        for deco in stmt.decorators:
            target = deco.decorator.func if isinstance(deco.decorator, cst.Call) else deco.decorator
            if isinstance(target, cst.Name) and target.value in idx.functions:
                used.setdefault(target.value, []).append(target)
    if not used:
        return frozenset()
    allowed = {id(n) for names in used.values() for n in names} \
        | {id(idx.functions[name].node.name) for name in used}
    read_elsewhere = {n.value for n in walk(idx.module)
                      if type(n) is cst.Name and n.value in used and id(n) not in allowed}
    return frozenset(used.keys() - read_elsewhere)


def _scan_function(idx: ModuleIndex, fn: FunctionInfo, import_time: bool = False) -> None:
    """Record locals, ``global`` declarations, global mutations, outside attribute
    writes and call sites of one function (nested functions are scanned as part of it).  What a function
    run only while the module is imported (``import_time``: a registering decorator) mutates is no
    mutation compiled code can see."""
    local, global_decls, nodes = _bindings(fn.node)
    fn.local_names = frozenset(local)
    fn.global_decls = frozenset(global_decls)
    fn.yields = any(type(n) is cst.Yield for n in nodes)

    def is_global(name: str) -> bool:
        """A global whose change here compiled code can see (none, while the module is imported)."""
        return not import_time and name not in local and name in idx.globals

    self_name = _self_name(fn)
    updates = fn.cls.updated_in_place if fn.cls is not None and fn.name != "__init__" else None
    fn.nested_compiled = tuple(n for n in nodes if type(n) is cst.FunctionDef and decorated(idx, n)[1])

    def self_attr(node: cst.CSTNode) -> str | None:
        """``x`` for ``self.x``."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == self_name:
            return node.attr.value
        return None

    # (libcst's node classes are not subclassed: type tests, cheaper than isinstance on its classes)
    for n in nodes:
        tp = type(n)
        if updates is not None:
            if tp is cst.Call and type(n.func) is cst.Attribute:
                method = n.func.attr.value
                attr = self_attr(n.func.value)
                if attr is not None and method.endswith("_") and not method.startswith("_"):
                    updates.add(attr)  # an in-place tensor method: add_, copy_, lerp_ ...
            elif tp is cst.Assign or tp is cst.AugAssign:
                for t in [t.target for t in n.targets] if tp is cst.Assign else [n.target]:
                    attr = self_attr(t.value) if type(t) is cst.Subscript else \
                        self_attr(t) if tp is cst.AugAssign else None
                    if attr is not None:
                        updates.add(attr)
        if tp is cst.Assign or tp is cst.AugAssign or tp is cst.AnnAssign:
            targets = [t.target for t in n.targets] if tp is cst.Assign else [n.target]
            for t in targets:
                for name in assigned_names(t):
                    if name in global_decls and not import_time:
                        _note_global_change(idx, name, n, fn)
                _note_store(idx, fn, t, n, is_global, self_name)
        elif tp is cst.Del:
            _note_store(idx, fn, n.target, n, is_global, self_name)
        elif tp is cst.Call:
            func = n.func
            if type(func) is cst.Attribute and func.attr.value in MUTATING_METHODS:
                root = root_name(func.value)
                if root is not None and is_global(root):
                    _note_global_change(idx, root, n, fn)
                _note_length_change(idx, fn, n, self_name)
            elif type(func) is cst.Name and func.value == "next" and n.args and type(n.args[0].value) is cst.Name \
                    and is_global(n.args[0].value.value) and "next" not in idx.globals:
                _note_global_change(idx, n.args[0].value.value, n, fn)  # a global iterator advanced
            elif type(func) is cst.Name and func.value == "setattr" and len(n.args) >= 2:
                name_arg = n.args[1].value
                if isinstance(name_arg, cst.SimpleString):
                    attr = name_arg.evaluated_value
                    if isinstance(attr, str):
                        idx.attr_writes_outside.setdefault(attr, []).append((n, fn))
            _note_call(idx, n, fn)


def _note_store(idx: ModuleIndex, fn: FunctionInfo | None, target: cst.CSTNode, stmt: cst.CSTNode,
                is_global, self_name: str | None) -> None:
    """What storing into ``target`` in ``stmt`` changes: a global's item or attribute, an attribute of
    ``self`` in a method other than ``__init__``, an attribute of another object (``fn`` None: the module's
    own statements, which have no ``self``)."""
    tp = type(target)
    if tp is cst.Tuple or tp is cst.List:
        for el in target.elements:
            _note_store(idx, fn, el.value, stmt, is_global, self_name)
        return
    if tp is cst.Subscript:
        root = root_name(target.value)
        if root is not None and is_global(root):
            # (`CFG["name"] = ...` changes that key: one compiled code never reads is guarded on nothing)
            key = literal_constant(target.slice[0].slice.value) if type(target.value) is cst.Name \
                and getattr(stmt, "value", None) is not None and len(target.slice) == 1 \
                and type(target.slice[0].slice) is cst.Index else NOT_LITERAL
            _note_global_change(idx, root, stmt, fn, key)
        stored = getattr(stmt, "value", None)  # (none for a `del`)
        if type(target.value) is cst.Attribute and (
                stored is None or literal_constant(stored) is not NOT_LITERAL):
            key = literal_constant(target.slice[0].slice.value) if stored is not None \
                and len(target.slice) == 1 and type(target.slice[0].slice) is cst.Index else NOT_LITERAL
            _note_attribute_change(idx, fn, target.value, self_name, key)
    elif tp is cst.Attribute:
        root = root_name(target.value)
        if type(target.value) is cst.Name and target.value.value == self_name:
            if fn is not None and fn.name != "__init__":
                idx.attr_writes_outside.setdefault(target.attr.value, []).append((stmt, fn))
        else:
            if root is not None and is_global(root):
                # (`model.step_count += 1` changes that attribute of the object the global holds)
                _note_global_change(idx, root, stmt, fn, AttributeKey(target.attr.value)
                                    if type(target.value) is cst.Name and type(stmt) is not cst.Del else NOT_LITERAL)
            idx.attr_writes_outside.setdefault(target.attr.value, []).append((stmt, fn))


def _note_global_change(idx: ModuleIndex, name: str, place: cst.CSTNode, fn: FunctionInfo | None,
                        key: object = NOT_LITERAL) -> None:
    """``place`` in ``fn`` rebinds or changes the global ``name`` (see :attr:`ModuleIndex.mutated_globals`),
    storing into its literal ``key`` or (:data:`~dynalint.analysis.syntax.NOT_LITERAL`) otherwise."""
    idx.mutated_globals.setdefault(name, (place, fn))
    idx.global_keys_changed.setdefault(name, set()).add(key)


def _note_attribute_change(idx: ModuleIndex, fn: FunctionInfo | None, attribute: cst.Attribute,
                           self_name: str | None, key: object = NOT_LITERAL) -> None:
    """Code of ``fn`` changes the container held in ``attribute`` in place (see
    :attr:`ModuleIndex.attr_changes_outside`); one of ``self`` in ``__init__`` builds it."""
    if fn is not None and fn.name == "__init__" and type(attribute.value) is cst.Name \
            and attribute.value.value == self_name:
        return
    idx.attr_changes_outside.setdefault(attribute.attr.value, []).append((attribute, fn, key))


def _note_length_change(idx: ModuleIndex, fn: FunctionInfo | None, call: cst.Call,
                        self_name: str | None) -> None:
    """``call`` changes the length of a container held in an attribute (``m.skip.append(1)``)."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value in K.LENGTH_CHANGES \
            and type(func.value) is cst.Attribute:
        _note_attribute_change(idx, fn, func.value, self_name)


def _note_call(idx: ModuleIndex, call: cst.Call, fn: FunctionInfo | None) -> None:
    func = call.func
    if isinstance(func, cst.Name):
        name = func.value
    elif isinstance(func, cst.Attribute):
        name = func.attr.value
    else:
        if type(func) is cst.Call and call.args and idx.resolve_expr(func.func) in COMPILE_NAMES:
            # `torch.compile(backend="eager")(fn)`, `torch._dynamo.optimize("eager")(fn)`: what the compiler
            # returned compiles its argument
            idx.compile_targets.append((call, fn))
        return
    idx.call_sites.setdefault(name, []).append((call, fn))
    q = idx.resolve_expr(func)
    if q in COMPILE_NAMES:
        idx.compile_calls.append(call)
        idx.compile_targets.append((call, fn))


def calls_by_name(idx: ModuleIndex, fn: FunctionInfo) -> list[tuple[cst.Call, FunctionInfo | None]]:
    """The calls ``name(...)`` of the module that run the function ``fn`` (no method), by the scopes the name
    resolves in: a module-level function's calls outside the functions that bind the name themselves, and a
    function defined inside another (a script's ``def case(): @torch.compile def fn ...``) the calls in the
    function that defines it, where nothing between rebinds the name.  Functions of one name in several
    scopes are separate functions (separate code objects to Dynamo), whose calls are not each other's."""
    name = fn.name
    sites = idx.call_sites.get(name, ())
    if fn.cls is not None:
        return list(sites)
    if fn.outer is None:
        return [(call, caller) for call, caller in sites if caller is None or name not in caller.local_names]
    reached = names_reaching(fn)
    if reached is None:
        return []
    return [(call, caller) for call, caller in sites if caller is fn.outer and id(call.func) in reached]


def names_reaching(fn: FunctionInfo) -> set[int] | None:
    """For a function defined inside another (``fn.outer`` holds it), the ``id`` of each ``Name`` of it that
    reads what its ``def`` binds: in the function that defines it and in the scopes nested there that do not
    bind the name again.  None when that function binds the name more than once (which binding a use reads
    is not settled here) or ``fn`` is no such function."""
    if fn.outer is None:
        return None
    parent = defining_scope(fn.outer.node, fn.node)
    return None if parent is None else _names_reaching(parent, fn.name, fn.node, 1)


def defining_scope(root: cst.FunctionDef, node: cst.FunctionDef) -> cst.FunctionDef | None:
    """The function of ``root`` (``root`` itself or one nested in it) whose own body defines ``node``."""
    for n in walk(root.body, into_scopes=False):
        if n is node:
            return root
        if type(n) is cst.FunctionDef:
            found = defining_scope(n, node)
            if found is not None:
                return found
    return None


def _names_reaching(scope: cst.CSTNode, name: str, definition: cst.FunctionDef, bindings: int
                    ) -> set[int] | None:
    """The ``id`` of each ``Name`` ``name`` in ``scope``'s body and in the scopes nested in it that do not
    bind ``name`` again (``definition``'s own body excluded), when ``scope`` binds ``name`` ``bindings``
    times; else None."""
    body = scope.body if type(scope) is not cst.Lambda else scope
    found: set[int] = set()
    bound = 0
    nested: list[cst.CSTNode] = []
    for n in walk(body, into_scopes=False):
        tp = type(n)
        if tp is cst.Name and n.value == name:
            found.add(id(n))
        elif n is not body and tp in _NESTED_SCOPES and n is not definition:
            nested.append(n)
        bound += name in names_bound_by(n)
    if bound != bindings:
        return None
    for inner in nested:
        found |= _names_reaching(inner, name, definition, 0) or set()
    return found


_NESTED_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


def may_run_between_calls(idx: ModuleIndex, method: FunctionInfo) -> bool:
    """Whether a method of a class of a script (a module that compiles code itself) may run between two of its
    compiled calls: not when nothing in the module calls it or names it (``self.reset`` handed on), nor when
    every call of it is one of the script's own statements before its first compiled call (a buffer filled,
    then a function compiled and called). A method of a module that compiles nothing may be called from
    elsewhere."""
    if method.cls is None or not idx.compile_targets:
        return True
    text = idx.text
    named = len(re.findall(rf"\.{re.escape(method.name)}\b", text))
    calls = [(call, caller) for call, caller in idx.call_sites.get(method.name, ())
             if type(call.func) is cst.Attribute]
    if named == 0:
        return False
    after = idx.calls_after_compiled
    return not (after is not None and len(calls) == named
                and all(caller is None and id(call) not in after for call, caller in calls))


def built_only_in_compiled_code(cls: ClassInfo, compiled_functions: Iterable[FunctionInfo]) -> bool:
    """Every instance of ``cls`` (a plain class of the module, not an nn.Module) is built by code the analysis
    runs as compiled (``t = Timer()`` in a compiled function): each call works on a new object, whose
    attributes no guard of an earlier call reads. False when the class is built anywhere else, subclassed or
    named otherwise than in those calls."""
    idx = cls.owner
    if idx is None or cls.is_module or any(cls.name in c.bases for c in idx.classes.values()):
        return False
    sites = idx.call_sites.get(cls.name, ())
    text = idx.text
    compiled = {id(fn) for fn in compiled_functions}
    return bool(sites) and all(type(call.func) is cst.Name and caller is not None and id(caller) in compiled
                               for call, caller in sites) \
        and len(re.findall(rf"\b{re.escape(cls.name)}\b", text)) == len(sites) + 1  # (+ its `class` line)


def related(a: ClassInfo | None, b: ClassInfo | None) -> bool:
    """One of two classes derives from the other (or they are one): an instance of one may be one of the
    other."""
    return a is not None and b is not None and (any(c is a for c in b.mro()) or any(c is b for c in a.mro()))


def stores_on_self(stmt: cst.CSTNode, fn: FunctionInfo | None, attr: str) -> bool:
    """``stmt``, a place of :attr:`ModuleIndex.attr_writes_outside`, stores ``attr`` on the instance its
    method runs on (``self.m = m``, ``setattr(self, "m", m)``): it changes instances of the method's class
    (and subclasses) only, not those of another class with an attribute of that name."""
    self_name = _self_name(fn) if fn is not None else None
    return self_name is not None and any(type(r) is cst.Name and r.value == self_name
                                         for r in store_receivers(stmt, attr))


def stores_on_own_object(stmt: cst.CSTNode, fn: FunctionInfo, attr: str) -> bool:
    """``stmt`` in ``fn`` stores ``attr`` on an object ``fn`` itself built and handed to a construction
    (``cfg = Cfg()``, ``Block(4, cfg)``, then ``cfg.scale = 0.5``): the object the built instance holds, not a
    copy of one; between two calls ``fn`` makes of a name it bound to a call's result (the compiled
    handle)."""
    receivers = store_receivers(stmt, attr)
    if len(receivers) != 1 or type(receivers[0]) is not cst.Name:
        return False
    name = receivers[0].value
    bindings = [n for n in walk(fn.node.body, into_scopes=False) if name in names_bound_by(n)]
    index = fn.owner
    built = len(bindings) == 1 and type(bindings[0]) is cst.Assign and type(bindings[0].value) is cst.Call \
        and type(bindings[0].value.func) is cst.Name and index is not None \
        and bindings[0].value.func.value in index.classes
    nodes = list(walk(fn.node.body, into_scopes=False))
    order = {id(n): i for i, n in enumerate(nodes)}
    handed = [n for n in nodes if type(n) is cst.Call and type(n.func) is cst.Name and index is not None
              and n.func.value in index.classes and any(type(a.value) is cst.Name and a.value.value == name
                                                        for a in n.args)]
    # (and the function calls what it built, the compiled handle, before the store and after it)
    handles = {t.target.value for n in nodes if type(n) is cst.Assign and type(n.value) is cst.Call
               for t in n.targets if type(t.target) is cst.Name}
    calls = [order[id(n)] for n in nodes if type(n) is cst.Call and type(n.func) is cst.Name
             and n.func.value in handles]
    at = order.get(id(stmt), -1)
    return built and name not in fn.param_names() and bool(handed) and order[id(handed[0])] < at \
        and any(c < at for c in calls) and any(c > at for c in calls)


def store_receivers(stmt: cst.CSTNode, attr: str) -> list[cst.BaseExpression]:
    """The objects ``stmt``, a place of :attr:`ModuleIndex.attr_writes_outside`, stores ``attr`` on (``m`` of
    ``m.top_k = 3``, the first argument of ``setattr``)."""
    if type(stmt) is cst.Call:
        return [stmt.args[0].value] if stmt.args else []
    if type(stmt) is cst.Assign:
        targets = [t.target for t in stmt.targets]
    elif type(stmt) in (cst.AugAssign, cst.AnnAssign):
        targets = [stmt.target]  # type: ignore[attr-defined]
    else:
        return []
    found = []
    while targets:
        t = targets.pop()
        if type(t) in (cst.Tuple, cst.List):
            targets.extend(el.value for el in t.elements)  # type: ignore[attr-defined]
        elif type(t) is cst.Attribute and t.attr.value == attr:
            found.append(t.value)
    return found


def stores_loop_constants(idx: ModuleIndex, stmt: cst.CSTNode) -> bool:
    """``stmt``, a statement of the module's own, stores the variable of a ``for`` around it that steps through
    a display of constants with two different values at least (``for s in (1.0, 0.5): m.sc.s = s``)."""
    value = getattr(stmt, "value", None)
    if type(stmt) is not cst.Assign or type(value) is not cst.Name:
        return False
    for loop in walk(idx.module, into_scopes=False):
        if type(loop) is cst.For and type(loop.target) is cst.Name and loop.target.value == value.value \
                and type(loop.iter) in (cst.Tuple, cst.List) and encloses(loop.body, stmt):
            constants = [literal_constant(e.value) for e in loop.iter.elements]
            return all(isinstance(c, (bool, int, float, str)) for c in constants) and len(set(constants)) >= 2
    return False


def unseen_by_compiled_code(idx: ModuleIndex, receiver: cst.BaseExpression) -> bool:
    """``receiver``, the object a script's own statement changes (``other.skip.append(1)``), is one no compiled
    code is handed: a module-level name bound once, to an instance of a class of the module, and used nowhere
    but as the object of attribute stores and of changes made through its attributes, in a module whose
    classes compile none of their own methods. Dynamo guards the attributes of the objects compiled code
    reads, so a change of another instance of the class fails none of them (measured on torch 2.13)."""
    if type(receiver) is not cst.Name or any(caller is not None and caller.cls is not None
                                             for _, caller in idx.compile_targets):
        return False
    if idx.private_objects is None:
        idx.private_objects = _private_objects(idx)
    return receiver.value in idx.private_objects


def _private_objects(idx: ModuleIndex) -> frozenset[str]:
    """The module-level names :func:`unseen_by_compiled_code` accepts."""
    candidates = {name for name, values in idx.globals.items()
                  if len(values) == 1 and type(values[0]) is cst.Call and type(values[0].func) is cst.Name
                  and values[0].func.value in idx.classes}
    if not candidates:
        return frozenset()
    not_uses: set[int] = set()  # names that are no use of a variable (attribute names, keywords)
    through: set[int] = set()  # attributes the object is reached through for a store or a change
    allowed: set[int] = set()  # the variable where it is bound or is the object of such an attribute
    for n in walk(idx.module):
        tp = type(n)
        if tp is cst.Attribute:
            not_uses.add(id(n.attr))
            if type(n.value) is cst.Attribute or type(n.value) is cst.Subscript:
                through.add(id(n.value))
        elif tp is cst.Subscript:
            through.add(id(n.value))
        elif tp is cst.Arg and n.keyword is not None:
            not_uses.add(id(n.keyword))
        elif tp is cst.Assign or tp is cst.AugAssign or tp is cst.AnnAssign:
            for t in [t.target for t in n.targets] if tp is cst.Assign else [n.target]:
                through.add(id(t))
                if type(t) is cst.Name:
                    allowed.add(id(t))
    for n in walk(idx.module):
        if type(n) is cst.Attribute and type(n.value) is cst.Name and id(n) in through:
            allowed.add(id(n.value))
    used = {n.value for n in walk(idx.module)
            if type(n) is cst.Name and n.value in candidates and id(n) not in not_uses and id(n) not in allowed}
    return frozenset(candidates - used)


def _self_name(fn: FunctionInfo) -> str | None:
    if fn.cls is None or fn.is_static:
        return None
    names = fn.param_names()
    return names[0] if names else None


#: decorators that make a class a dataclass
DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "dataclass"})


def decorated_as_dataclass(cls: ClassInfo) -> bool:
    """``cls`` itself is decorated ``@dataclass`` (``dataclasses.dataclass``, called or not)."""
    owner = cls.owner
    for d in cls.node.decorators:
        name = dotted_name(decorator_target(d)) or ""
        if ((owner.resolve(name) if owner is not None else None) or name) in DATACLASS_DECORATORS:
            return True
    return False


def is_generator_function(fn: FunctionInfo) -> bool:
    """``fn`` is a generator function: a ``yield`` of its own (not of a nested function).  The index's walk
    settles most functions; the others are walked once (:meth:`FunctionInfo.derived`)."""
    return fn.yields is not False and fn.derived("generator", is_generator)
