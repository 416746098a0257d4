"""Whole-program analysis of one module: which functions count as compiled,
what their parameters are, and the interprocedural glue (calls into functions
and ``nn.Module`` classes are analysed with the caller's argument values).

With a :class:`~dynalint.analysis.project.Project`, names imported from other
checked files resolve to their definitions: calls, base classes, type aliases
and globals cross files.  Each module is analysed by its own :class:`Program`
(names resolve in the module that wrote them); the programs of one analysis
share a :class:`_Run`, and only the events of the module being checked are
kept.  Functions of other modules reached from compiled code are recorded as
*outgoing entries* with the argument values they were called with; the
project pass (:func:`dynalint.runner.project_pass`) hands them to their module's
analysis as *incoming entries*.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.evaluator import Evidence, FunctionEvaluator, annotation_value
from dynalint.analysis.events import Event
from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex, build_index, local_names_of
from dynalint.analysis.project import Project, absolute, decode_value, encode_value
from dynalint.analysis.syntax import decorator_target, dotted_name
from dynalint.analysis.values import (
    NO_CONST,
    NONE_VALUE,
    PYTHON_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join_all,
    python,
    join,
    sequence,
    tensor,
)
from dynalint.settings import Scope

__all__ = ["Program", "Scope", "MAX_CALL_DEPTH"]

MAX_CALL_DEPTH = 6
MAX_ANALYSES_PER_FUNCTION = 12
"""Calling contexts analysed per function (bounds the cost of functions called from many places)."""

_TORCH_DTYPES = frozenset({
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8", "int16", "int32",
    "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn",
    "float8_e5m2", "qint8", "quint8", "strided", "sparse_coo", "contiguous_format", "channels_last",
    "preserve_format",
})


class _Run:
    """State shared by the programs of one analysis (the checked module and the modules it reaches)."""

    def __init__(self, root: "Program") -> None:
        self.root = root
        self.programs: dict[int, Program] = {id(root.index): root}
        self.outgoing: dict[tuple[str, str], dict[str, Value]] = {}
        """(path, qualname) of functions of other modules reached from compiled code -> joined arguments."""


@dataclass
class Program:
    """The analysis of one module."""

    module: cst.Module
    scope: Scope = Scope.AUTO
    index: ModuleIndex = field(default=None)  # type: ignore[assignment]
    """Prebuilt index (from the project); built from ``module`` when not given."""
    events: list[Event] = field(default_factory=list)
    compiled: list[FunctionInfo] = field(default_factory=list)
    """Functions analysed as compiled code (roots and what they call)."""
    values: dict[int, Value] | None = None
    """When set to a dict: the value of every expression of compiled code, by ``id(node)``
    (joined over calling contexts). The fixers need it; checking alone does not."""
    project: Project | None = None
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Incoming entries: qualname of a function of this module -> encoded argument values
    (``"*"``: a compiled entry point, whose parameters are the graph's inputs)."""
    entry_patterns: tuple[str, ...] = ()
    """Glob patterns of qualified names that are compiled entry points (configuration)."""
    run_state: _Run | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = build_index(self.module)
        if self.run_state is None:
            self.run_state = _Run(self)
        self._globals: dict[str, Value] = {}
        self._globals_in_progress: set[str] = set()
        self._aliases: dict[str, Value | None] = {}
        self._annotations: dict[int, tuple[dict[str, cst.BaseExpression], cst.BaseExpression | None]] = {}
        self._declared: dict[int, dict[str, Value]] = {}
        self._setters: dict[int, dict[str, list[tuple[FunctionInfo, cst.BaseExpression]]]] = {}
        self._class_attrs: dict[int, dict[str, Value]] = {}
        self._attrs_in_progress: dict[int, dict[str, Value]] = {}
        self._summaries: dict[tuple, Value] = {}
        self._in_progress: set[tuple] = set()
        self._contexts: dict[int, int] = {}
        self._compiled_ids: set[int] = set()
        self._library_roots: set[int] = set()
        """Roots only because they take tensors (scope auto): callers outside the checked files may
        compile them."""
        self._entries: set[int] = set()
        """Functions handed to torch.compile: their parameters are the graph's inputs, like forward's."""
        self._evidence: dict[int, Evidence] = {}
        self._compiled_nodes: set[int] = set()
        self._nested: dict[int, FunctionInfo] = {}
        """Scope ALL: functions defined inside analysed code (decorator wrappers, hooks), by ``id(node)``."""

    @property
    def is_root(self) -> bool:
        return self.run_state is not None and self.run_state.root is self

    @property
    def outgoing(self) -> dict[tuple[str, str], dict[str, Value]]:
        assert self.run_state is not None
        return self.run_state.outgoing

    def program_for(self, owner: ModuleIndex | None) -> "Program":
        """The program of the module that defines something (this one when unknown)."""
        if owner is None or owner is self.index:
            return self
        run = self.run_state
        assert run is not None
        prog = run.programs.get(id(owner))
        if prog is None:
            prog = Program(owner.module, scope=Scope.COMPILED, index=owner, project=self.project,
                           run_state=run)
            run.programs[id(owner)] = prog
        return prog

    # ------------------------------------------------------------------ driver
    def run(self) -> "Program":
        for fn, bound in self.roots():
            if id(fn) in self._library_roots and id(fn) in self._compiled_ids:
                # compiled code of this module calls it: analysed with the values its callers pass, as
                # a function of another module that compiled code reaches is (see ``_summary_roots``)
                continue
            self.analyze_root(fn, bound)
        # scope ALL means every function: also those defined inside others and never called there
        # (a decorator's wrapper, a hook), with the enclosing function's names as their closure
        while self._nested:
            pending = list(self._nested.values())
            self._nested.clear()
            for fn in pending:
                if id(fn.node) not in self._compiled_nodes:
                    self.analyze_root(fn)
        for qualname, encoded in self.entries.items():
            fn = self.function_named(qualname)
            if fn is not None and not fn.disabled:
                self.analyze_entry(fn, encoded)
        return self

    def note_nested(self, fn: FunctionInfo) -> None:
        """A function defined inside analysed code (see :meth:`run`)."""
        if self.scope is Scope.ALL and id(fn.node) not in self._compiled_nodes:
            self._nested.setdefault(id(fn.node), fn)

    def function_named(self, qualname: str) -> FunctionInfo | None:
        """A module-level function (``f``) or method (``C.m``) of this module."""
        head, _, last = qualname.rpartition(".")
        if not head:
            return self.index.functions.get(last)
        cls = self.index.classes.get(head)
        return cls.methods.get(last) if cls is not None else None

    def roots(self) -> list[tuple[FunctionInfo, ClassInfo | None]]:
        """Entry points of this module: (function, class of ``self`` when it is inherited)."""
        idx = self.index
        roots: list[tuple[FunctionInfo, ClassInfo | None]] = []
        seen: set[tuple[int, int]] = set()

        def add(fn: FunctionInfo | None, bound: ClassInfo | None = None) -> None:
            if fn is None or fn.disabled or fn.custom_op is not None:
                return
            if bound is not None and fn.cls is bound:
                bound = None
            key = (id(fn), id(bound))
            if key not in seen:
                seen.add(key)
                roots.append((fn, bound))

        for cls in idx.classes.values():
            if cls.is_module:
                fwd = cls.find_method("forward")
                # an inherited forward runs with this class's overrides (``self.make_params`` ...)
                add(fwd, cls if fwd is not None and fwd.cls is not cls else None)
        for fn in idx.all_functions:
            if fn.compile_decorated:
                self._entries.add(id(fn))
                add(fn)
        for call, where in idx.compile_targets:
            target = self.compile_target(call, where)
            if target is None:
                continue
            fn, cls = target
            if fn.owner is not idx:
                self._note_outgoing(fn, None, compiled=True)
                continue
            # the compiled function's (or module's forward's) arguments are the graph's inputs
            self._entries.add(id(fn))
            add(fn, cls)
        if self.entry_patterns:
            for fn in idx.all_functions:
                if self.matches_entry_pattern(fn):
                    self._entries.add(id(fn))
                    add(fn)
        if self.scope is Scope.ALL:
            for fn in idx.all_functions:
                if fn.name != "__init__":
                    add(fn)
        elif self.scope is Scope.AUTO and idx.imports_torch:
            # library helpers and callable objects (augmentations, losses, matchers) that take tensors:
            # callers outside the checked files compile them
            candidates = list(idx.functions.values())
            # public methods of plain classes (a scheduler's step(model_output, timestep, sample)) are
            # library helpers like `__call__`: users call them inside compiled loops
            candidates += [m for c in idx.classes.values() if not c.is_module
                           for name, m in c.methods.items() if name == "__call__" or _public_method(m)]
            for fn in candidates:
                if (id(fn), id(None)) not in seen and id(fn) not in self._summary_roots() \
                        and self.has_tensor_params(fn):
                    self._library_roots.add(id(fn))
                    add(fn)
        return roots

    def _summary_roots(self) -> set[int]:
        """Functions that incoming entries analyse anyway (with their callers' arguments)."""
        out = set()
        for q in self.entries:
            fn = self.function_named(q)
            if fn is not None:
                out.add(id(fn))
        return out

    def matches_entry_pattern(self, fn: FunctionInfo) -> bool:
        names = [fn.qualname]
        if self.index.name:
            names.append(f"{self.index.name}.{fn.qualname}")
        return any(fnmatch.fnmatchcase(n, pat) for pat in self.entry_patterns for n in names)

    def compile_target(self, call: cst.Call, where: FunctionInfo | None
                       ) -> tuple[FunctionInfo, ClassInfo | None] | None:
        """What ``torch.compile(x)`` compiles: a function, or ``type(model).forward``."""
        if not call.args or call.args[0].keyword is not None:
            return None
        arg = call.args[0].value
        method = None
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name):
            method, arg = arg.attr.value, arg.value
        if isinstance(arg, cst.Call) and method is None:
            made = self._static_name_of(arg.func)  # `torch.compile(Model(...))`
            v = self.instance(made.cls) if made is not None and made.cls is not None else None
        elif isinstance(arg, cst.Name):
            v = self._static_name(arg.value, where)
        else:
            return None
        if v is None:
            return None
        if v.kind is Kind.FUNCTION and v.func is not None and method is None:
            return v.func, None
        cls = v.cls
        if cls is None:
            return None
        fn = cls.find_method(method or "forward")
        return (fn, cls) if fn is not None else None

    def _static_name(self, name: str, where: FunctionInfo | None) -> Value | None:
        """A name's class or function, from the definitions and ``name = Class(...)`` assignments."""
        scopes: list[Any] = [where.node.body] if where is not None else []
        scopes.append(self.index.module)
        for scope in scopes:
            for stmt in _assignments_to(scope, name):
                value = stmt.value
                if isinstance(value, cst.Call):
                    callee = self._static_name_of(value.func)
                    if callee is not None and callee.cls is not None:
                        return self.instance(callee.cls)
        return self._static_dotted(name)

    def _static_name_of(self, node: cst.BaseExpression) -> Value | None:
        from dynalint.analysis.syntax import dotted_name

        dotted = dotted_name(node)
        return self._static_dotted(dotted) if dotted is not None else None

    def _static_dotted(self, dotted: str) -> Value | None:
        """The class, function or value a dotted name denotes, without evaluating code."""
        head, _, rest = dotted.partition(".")
        v = self.global_value(head)
        for part in rest.split(".") if rest else ():
            if v is None or v.qualname is None:
                return None
            v = self.qualified_value(f"{v.qualname}.{part}")
        if v is not None and v.kind is Kind.FUNCTION and v.cls is not None:
            return Value(Kind.FUNCTION, cls=v.cls)
        return v

    # ------------------------------------------------------------------ parameters
    def _param_nodes(self, fn: FunctionInfo) -> list[cst.Param]:
        p = fn.node.params
        return [*p.posonly_params, *p.params, *p.kwonly_params]

    def _untyped(self, fn: FunctionInfo) -> list[str]:
        out = []
        for i, prm in enumerate(self._param_nodes(fn)):
            if i == 0 and fn.is_method:
                continue
            if self._ann(fn, prm) is not None:
                continue
            if prm.default is not None and _python_default(prm.default):
                continue
            out.append(prm.name.value)
        return out

    def evidence(self, fn: FunctionInfo) -> Evidence:
        """Silent pass that records what the uses of untyped parameters say about them."""
        cache = self._evidence.get(id(fn))
        if cache is not None:
            return cache
        ev = Evidence()
        untyped = set(self._untyped(fn))
        if untyped:
            env = self.param_env(fn, evidence=None, candidates=untyped)
            evaluator = FunctionEvaluator(self, fn, env, emit=False, evidence=ev, depth=MAX_CALL_DEPTH)
            evaluator.run_body(fn.node.body)
        self._evidence[id(fn)] = ev
        return ev

    def has_tensor_params(self, fn: FunctionInfo) -> bool:
        for prm in self._param_nodes(fn):
            if self._ann(fn, prm) is not None:
                v = annotation_value(self, self._ann(fn, prm))
                if v is not None and v.kind is Kind.TENSOR:
                    return True
                if v is not None and v.cls is not None and self.is_record(v.cls) and any(
                        a.kind is Kind.TENSOR for a in self.class_attrs(v.cls).values()):
                    return True  # a record of tensors (a batch, a model output)
        return bool(self.evidence(fn).tensor_params())

    def param_env(self, fn: FunctionInfo, evidence: Evidence | None, candidates: set[str] | None = None,
                  forward: bool = False) -> dict[str, Value]:
        """Initial environment of a root function (``forward``: its parameters are graph inputs)."""
        env: dict[str, Value] = {}
        is_forward = (fn.name == "forward" and fn.cls is not None and fn.cls.is_module) or \
            id(fn) in self._entries or forward
        tensor_params = evidence.tensor_params() if evidence is not None else set()
        negative = evidence.negative if evidence is not None else set()
        # only the arguments of the compiled function itself enter the frame as they are; a helper's or
        # a submodule's are usually computed by its caller in the same graph
        entered = id(fn) in self._entries or forward
        for i, prm in enumerate(self._param_nodes(fn)):
            name = prm.name.value
            if i == 0 and fn.is_method:
                env[name] = self.instance(fn.cls) if not fn.is_classmethod else UNKNOWN_VALUE
                continue
            if candidates is not None and name in candidates:
                env[name] = Value(Kind.UNKNOWN, params=frozenset({name}), param=name)
                continue
            ann_node = self._ann(fn, prm)
            ann = annotation_value(self, ann_node) if ann_node is not None else None
            if ann is not None:
                env[name] = _entering(ann) if entered else ann
            elif ann_node is not None:
                env[name] = UNKNOWN_VALUE  # annotated with something that is not a tensor
            elif prm.default is not None and _python_default(prm.default):
                env[name] = python(is_bool=_is_bool_literal(prm.default))
            elif prm.default is not None and _is_none(prm.default):
                env[name] = tensor(entered=entered, maybe_none=True) if name in tensor_params \
                    else UNKNOWN_VALUE
            elif prm.default is None and is_forward and name not in negative:
                # an argument of compiled code that nothing shows to be a tensor is taken for one, but
                # what needs its data is not known
                env[name] = tensor(entered=entered, assumed=name not in tensor_params)
            elif name in tensor_params:
                env[name] = tensor(entered=entered)
            else:
                env[name] = UNKNOWN_VALUE
        p = fn.node.params
        if isinstance(p.star_arg, cst.Param):
            env[p.star_arg.name.value] = sequence(element=UNKNOWN_VALUE)
        if isinstance(p.star_kwarg, cst.Param):
            env[p.star_kwarg.name.value] = PYTHON_VALUE
        return env

    def analyze_root(self, fn: FunctionInfo, bound: ClassInfo | None = None) -> None:
        """Analyse an entry point; ``bound``: the subclass whose instance runs an inherited method."""
        owner = self.program_for(fn.owner)
        ev = owner.evidence(fn)
        env = owner.param_env(fn, ev, forward=id(fn) in self._entries)
        if bound is not None and fn.is_method and not fn.is_classmethod:
            env[fn.param_names()[0]] = self.instance(bound)
        owner._mark_compiled(fn)
        FunctionEvaluator(owner, fn, env, emit=True).run_body(fn.node.body)

    def analyze_entry(self, fn: FunctionInfo, encoded: dict[str, Any]) -> None:
        """Analyse a function that compiled code of another module calls, with the values its
        callers pass (``"*"`` in ``encoded``: it is itself handed to ``torch.compile``)."""
        if encoded.get("*"):
            self._entries.add(id(fn))
            self.analyze_root(fn)
            return
        env = self.param_env(fn, self.evidence(fn))
        assert self.project is not None or not encoded
        for name, code in encoded.items():
            if name in env and self.project is not None:
                value = decode_value(code, self.project)
                prm = next((p for p in self._param_nodes(fn) if p.name.value == name), None)
                if prm is not None and self._ann(fn, prm) is not None:
                    value = _refine(value, annotation_value(self, self._ann(fn, prm)))
                env[name] = value
        self._mark_compiled(fn)
        FunctionEvaluator(self, fn, env, emit=True).run_body(fn.node.body)

    def _mark_compiled(self, fn: FunctionInfo) -> None:
        if id(fn) not in self._compiled_ids:
            self._compiled_ids.add(id(fn))
            self._compiled_nodes.add(id(fn.node))
            self.compiled.append(fn)

    def _note_outgoing(self, fn: FunctionInfo, env: dict[str, Value] | None, compiled: bool = False) -> None:
        """A function of another checked module is reached from compiled code (see the module doc)."""
        owner = fn.owner
        if owner is None or owner is self.run_state.root.index or not owner.path or fn.closure is not None:
            return
        if not compiled and self.program_for(owner).is_default_root(fn):
            return
        key = (owner.path, fn.qualname)
        joined = self.outgoing.setdefault(key, {})
        if compiled:
            joined["*"] = python(True)
            return
        if env is None:
            return
        skip = fn.param_names()[0] if fn.is_method and fn.param_names() else None
        for name, value in env.items():
            if name == skip:
                continue
            joined[name] = join(joined[name], value) if name in joined else value

    def is_default_root(self, fn: FunctionInfo) -> bool:
        """Analysed as an entry point by its own module whoever calls it."""
        if fn.compile_decorated:
            return True
        return fn.name == "forward" and fn.cls is not None and fn.cls.is_module

    def encoded_outgoing(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Outgoing entries as plain data: path -> qualname -> parameter -> encoded value."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for (path, qualname), params in self.outgoing.items():
            out.setdefault(path, {})[qualname] = {
                k: (True if k == "*" else encode_value(v)) for k, v in sorted(params.items())}
        return out

    # ------------------------------------------------------------------ calls
    def call_function(self, caller: FunctionEvaluator, fn: FunctionInfo, args: list[Value],
                      kwargs: dict[str, Value], bound_self: Value | None, opaque: bool) -> Value:
        """Analyse a call into a function with the caller's argument values (in the program of
        the function's module)."""
        if fn.disabled or fn.custom_op is not None:
            return UNKNOWN_VALUE  # not traced: skipped, or an opaque custom op
        owner = self.program_for(fn.owner)
        if owner is not self:
            return owner.call_function(caller, fn, args, kwargs, bound_self, opaque)
        env = self._bind_args(fn, args, kwargs, bound_self, opaque)
        if caller.emit and not self.is_root:
            self._note_outgoing(fn, env)
        key = (id(fn), caller.emit, caller.loop_depth > 0 or caller.outer_loop,
               tuple(sorted((k, _signature(v)) for k, v in env.items())))
        if key in self._summaries:
            return self._summaries[key]
        if key in self._in_progress or caller.depth >= MAX_CALL_DEPTH:
            return self._unanalysed(fn)
        count = self._contexts.get(id(fn), 0)
        if count >= MAX_ANALYSES_PER_FUNCTION:
            return self._unanalysed(fn)
        self._contexts[id(fn)] = count + 1
        self._in_progress.add(key)
        try:
            if caller.emit:
                self._mark_compiled(fn)
            callee = FunctionEvaluator(self, fn, env, emit=caller.emit, depth=caller.depth + 1,
                                       evidence=caller.evidence)
            callee.outer_loop = caller.loop_depth > 0 or caller.outer_loop
            callee.attr_sink = caller.attr_sink if bound_self is not None and caller.attr_sink is not None \
                and bound_self.cls is not None else None
            callee.run_body(fn.node.body)
            result = join_all(callee.returns) if callee.returns else NONE_VALUE
            result = _refine(result, self.declared_return(fn))
        finally:
            self._in_progress.discard(key)
        self._summaries[key] = result
        return result

    def annotations(self, fn: FunctionInfo
                    ) -> tuple[dict[str, cst.BaseExpression], cst.BaseExpression | None]:
        """Parameter and return annotations, from the signature or a ``# type: (...) -> R`` comment."""
        cached = self._annotations.get(id(fn))
        if cached is None:
            params = {p.name.value: p.annotation.annotation for p in self._param_nodes(fn)
                      if p.annotation is not None}
            ret = fn.node.returns.annotation if fn.node.returns is not None else None
            comment = type_comment(fn.node)
            if comment is not None:
                args, comment_ret = comment
                names = [p.name.value for p in self._param_nodes(fn)]
                if fn.is_method and not fn.is_static and len(args) == len(names) - 1:
                    names = names[1:]
                if len(args) == len(names):
                    for name, ann in zip(names, args):
                        params.setdefault(name, ann)
                if ret is None:
                    ret = comment_ret
            cached = self._annotations[id(fn)] = (params, ret)
        return cached

    def _ann(self, fn: FunctionInfo, prm: cst.Param) -> cst.BaseExpression | None:
        return self.annotations(fn)[0].get(prm.name.value)

    def declared_types(self, fn: FunctionInfo) -> dict[str, Value]:
        """What the annotations of a function's parameters promise, by name (a parameter keeps
        its declared type when reassigned from something the analysis cannot see into)."""
        cached = self._declared.get(id(fn))
        if cached is None:
            cached = {}
            for name, ann in self.annotations(fn)[0].items():
                v = annotation_value(self, ann)
                if v is not None:
                    cached[name] = v
            self._declared[id(fn)] = cached
        return cached

    def _unanalysed(self, fn: FunctionInfo) -> Value:
        """The result of a call not analysed (too deep, recursive): what its annotation promises,
        else the call by its qualified name, as if the function were not in the checked files."""
        declared = self.declared_return(fn)
        if declared is not None:
            return declared
        if fn.owner is not None and fn.owner.name and fn.closure is None:
            return Value(Kind.UNKNOWN, qualname=f"{fn.owner.name}.{fn.qualname}()")
        return UNKNOWN_VALUE

    def declared_return(self, fn: FunctionInfo) -> Value | None:
        """What the return annotation promises."""
        ret = self.annotations(fn)[1]
        return annotation_value(self, ret) if ret is not None else None

    def _bind_args(self, fn: FunctionInfo, args: list[Value], kwargs: dict[str, Value],
                   bound_self: Value | None, opaque: bool) -> dict[str, Value]:
        params = self._param_nodes(fn)
        env: dict[str, Value] = {}
        positional = list(args)
        start = 0
        if fn.is_method and not fn.is_classmethod:
            if bound_self is not None:
                env[params[0].name.value] = bound_self
                start = 1
        elif fn.is_classmethod and params:
            env[params[0].name.value] = UNKNOWN_VALUE
            start = 1
        p = fn.node.params
        n_positional = len(p.posonly_params) + len(p.params)
        for i, prm in enumerate(params[start:], start=start):
            name = prm.name.value
            if opaque:
                value = UNKNOWN_VALUE
            elif i < n_positional and positional:
                value = positional.pop(0)
            elif name in kwargs:
                value = kwargs[name]
            elif prm.default is not None:
                value = self.default_value(prm.default)
            else:
                value = UNKNOWN_VALUE
            if self._ann(fn, prm) is not None:
                value = _refine(value, annotation_value(self, self._ann(fn, prm)))
            env[name] = value
        if isinstance(p.star_arg, cst.Param):
            env[p.star_arg.name.value] = sequence(items=None if opaque else positional,
                                                 element=join_all(positional) if positional else UNKNOWN_VALUE)
        if isinstance(p.star_kwarg, cst.Param):
            env[p.star_kwarg.name.value] = PYTHON_VALUE
        return env

    def default_value(self, node: cst.BaseExpression) -> Value:
        if _is_none(node):
            return NONE_VALUE
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            try:
                return python(node.evaluated_value)
            except Exception:
                return PYTHON_VALUE
        if isinstance(node, cst.Name) and node.value in ("True", "False"):
            return python(node.value == "True")
        return UNKNOWN_VALUE

    def call_module(self, caller: FunctionEvaluator, module: Value, args: list[Value],
                    kwargs: dict[str, Value], opaque: bool) -> Value:
        """Calling an ``nn.Module`` instance runs its ``forward``."""
        if module.cls is not None:
            fwd = module.cls.find_method("forward")
            if fwd is None:
                return UNKNOWN_VALUE
            return self.call_function(caller, fwd, args, kwargs, module, opaque)
        q = module.qualname or ""
        if q.startswith("torch.nn."):
            name = q.rsplit(".", 1)[-1]
            if name in K.NN_CONTAINER_CLASSES:
                return UNKNOWN_VALUE
            if name in K.NN_MULTI_OUTPUT_CLASSES:
                return sequence(element=tensor())
            return tensor()
        return UNKNOWN_VALUE

    def prepare_function(self, info: FunctionInfo) -> None:
        info.owner = self.index
        local, global_decls = local_names_of(info.node)
        info.local_names = frozenset(local)
        info.global_decls = frozenset(global_decls)

    # ------------------------------------------------------------------ names
    def global_value(self, name: str) -> Value | None:
        """Value of a module-level name, or None if the module does not bind it."""
        idx = self.index
        if name in idx.functions:
            return Value(Kind.FUNCTION, func=idx.functions[name])
        if name in idx.classes:
            return Value(Kind.FUNCTION, cls=idx.classes[name])
        if name in idx.imports:
            return self.qualified_value(idx.imports[name])
        if name in idx.globals:
            if name in self._globals:
                return self._globals[name]
            if name in self._globals_in_progress:
                return UNKNOWN_VALUE
            self._globals_in_progress.add(name)
            try:
                ev = FunctionEvaluator(self, None, {}, emit=False, depth=MAX_CALL_DEPTH)
                values = [ev.expr(e) if e is not None else UNKNOWN_VALUE for e in idx.globals[name]]
                v = join_all(values)
                if not (len(values) == 1 and isinstance(v.const, bool) and name not in idx.mutated_globals):
                    # a flag bound once and never rebound decides branches while Dynamo traces
                    # (`TRACE = False` ... `if TRACE: print(...)` traces nothing)
                    v = _strip_const(v)
            finally:
                self._globals_in_progress.discard(name)
            self._globals[name] = v
            return v
        return None

    def qualified_value(self, q: str) -> Value:
        if self.project is not None:
            found = self._project_value(q)
            if found is not None:
                return found
        head, _, last = q.rpartition(".")
        if head == "torch" and last in _TORCH_DTYPES:
            return python(is_bool=False).with_(qualname=q)
        if head == "math" and last in ("pi", "e", "inf", "nan", "tau"):
            return PYTHON_VALUE
        return Value(Kind.UNKNOWN, qualname=q)

    def _absolute(self, q: str) -> str:
        return absolute(q, self.index.name, self.index.path.endswith("__init__.py"))

    def _project_value(self, q: str) -> Value | None:
        """An imported name defined in another checked module: its function, class or value."""
        assert self.project is not None
        full = self._absolute(q)
        r = self.project.resolve(full)
        if r is None:
            return Value(Kind.UNKNOWN, qualname=full) if full != q else None
        if r.index is None:
            return Value(Kind.UNKNOWN, qualname=r.module)  # a module: its attributes resolve in turn
        if r.index is self.index:
            return self.global_value(r.name)
        return self.program_for(r.index).global_value(r.name)

    def annotation_alias(self, name: str) -> Value | None:
        """What a module-level alias (``OptTensor = Optional[Tensor]``, or one imported) promises."""
        if name in self._aliases:
            return self._aliases[name]
        self._aliases[name] = None  # recursive aliases promise nothing
        result: Value | None = None
        exprs = self.index.globals.get(name)
        if "." in name or name in self.index.classes:
            result = self._annotation_class(name)
            self._aliases[name] = result
            return result
        if exprs and len(exprs) == 1 and exprs[0] is not None and name not in self.index.functions \
                and name not in self.index.classes:
            result = annotation_value(self, exprs[0])
        elif name in self.index.imports and self.project is not None:
            r = self.project.resolve(self._absolute(self.index.imports[name]))
            if r is not None and r.index is not None and r.name in r.index.globals:
                result = self.program_for(r.index).annotation_alias(r.name)
            else:
                result = self._annotation_class(name)
        self._aliases[name] = result
        return result

    def _annotation_class(self, dotted: str) -> Value | None:
        """A class named in an annotation: a subclass of ``torch.Tensor`` promises a tensor."""
        v = self._static_dotted(dotted)
        if v is not None and v.cls is not None and self.is_tensor_class(v.cls):
            return tensor()
        if v is not None and v.cls is not None and v.kind is Kind.FUNCTION and self.is_record(v.cls):
            return self.instance(v.cls)  # a dataclass or NamedTuple of the checked files
        return None

    def is_record(self, cls: ClassInfo) -> bool:
        """A dataclass or NamedTuple (or a subclass of one): its instances are its annotated fields."""
        for c in cls.mro():
            owner = c.owner if c.owner is not None else self.index
            if c.is_module:
                return False
            if any(owner.resolve(b) in _RECORD_BASES for b in c.bases):
                return True
            for d in c.node.decorators:
                name = dotted_name(decorator_target(d)) or ""
                if (owner.resolve(name) or name) in _DATACLASS_DECORATORS:
                    return True
        return False

    def is_tensor_class(self, cls: ClassInfo) -> bool:
        """A class deriving (through checked files) from ``torch.Tensor``."""
        for c in cls.mro():
            owner = c.owner if c.owner is not None else self.index
            for base in c.bases:
                if owner.resolve(base) in ("torch.Tensor", "torch.nn.Parameter"):
                    return True
        return False

    # ------------------------------------------------------------------ classes
    def instance(self, cls: ClassInfo | None) -> Value:
        if cls is None:
            return UNKNOWN_VALUE
        return Value(Kind.MODULE if cls.is_module else Kind.UNKNOWN, cls=cls)

    def member(self, base: Value, attr: str) -> Value:
        cls = base.cls
        assert cls is not None
        attrs = self.class_attrs(cls)
        if attr in attrs:
            return _entering(attrs[attr])  # state of the object: read as a graph input
        method = cls.find_method(attr)
        if method is not None:
            if any(d.endswith(".setter") or d.endswith(".deleter") for d in method.decorators):
                return UNKNOWN_VALUE
            if any(d in _PROPERTY_DECORATORS for d in method.decorators):
                return self.property_value(method, base)
            return Value(Kind.FUNCTION, func=method, bound_self=None if method.is_static else base)
        if attr == "training" and cls.is_module:
            return python(is_bool=True)
        later = self.program_for(cls.owner).attr_set_later(cls, attr)
        return _entering(later) if later is not None else UNKNOWN_VALUE

    def property_value(self, getter: FunctionInfo, base: Value) -> Value:
        """What a property's getter returns for this instance (analysed silently)."""
        owner = self.program_for(getter.owner)
        if owner is not self:
            return owner.property_value(getter, base)
        key = ("property", id(getter), id(base.cls))
        if key in self._summaries:
            return self._summaries[key]
        if key in self._in_progress:
            return UNKNOWN_VALUE
        self._in_progress.add(key)
        try:
            names = getter.param_names()
            env = {names[0]: base} if names else {}
            evaluator = FunctionEvaluator(self, getter, env, emit=False, depth=MAX_CALL_DEPTH - 1)
            evaluator.run_body(getter.node.body)
            result = join_all(evaluator.returns) if evaluator.returns else NONE_VALUE
            result = _strip_const(_refine(result, self.declared_return(getter)))
        finally:
            self._in_progress.discard(key)
        self._summaries[key] = result
        return result

    def attr_set_later(self, cls: ClassInfo, attr: str) -> Value | None:
        """An attribute that methods other than ``__init__`` set on ``self`` (a cache built on
        first use, a buffer made in ``reset_parameters``): the join of the values they assign,
        each evaluated on its own (the method's locals are not known there)."""
        setters = self._setters.get(id(cls))
        if setters is None:
            setters = self._setters[id(cls)] = _self_attr_setters(cls)
        found: Value | None = None
        key = ("later", id(cls), attr)
        if key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            for method, expr in setters.get(attr, ()):
                owner = self.program_for(method.owner)
                env = owner._init_env(method)
                env[method.param_names()[0]] = self.instance(cls)
                evaluator = FunctionEvaluator(owner, method, env, emit=False, depth=MAX_CALL_DEPTH)
                v = _strip_const(evaluator.expr(expr))
                found = join(found, v) if found is not None else v
        finally:
            self._in_progress.discard(key)
        return found

    def class_attrs(self, cls: ClassInfo) -> dict[str, Value]:
        """Attributes bound in the class body and in ``__init__`` (bases first)."""
        owner = self.program_for(cls.owner)
        if owner is not self:
            return owner.class_attrs(cls)
        key = id(cls)
        if key in self._class_attrs:
            return self._class_attrs[key]
        if key in self._attrs_in_progress:
            return self._attrs_in_progress[key]
        attrs: dict[str, Value] = {}
        self._attrs_in_progress[key] = attrs
        try:
            for base in reversed(list(cls.mro())):
                if base is not cls:
                    attrs.update(self.class_attrs(base))
            ev = FunctionEvaluator(self, None, {}, emit=False, depth=MAX_CALL_DEPTH)
            for name, expr in cls.body_assigns.items():
                v = ev.expr(expr)
                if v.kind is not Kind.FUNCTION:
                    attrs[name] = _strip_const(v)
            if self.is_record(cls):
                # a dataclass or NamedTuple: its fields hold what they are annotated with
                for name, ann in cls.field_annotations.items():
                    declared = annotation_value(self, ann)
                    if declared is not None:
                        attrs[name] = declared
            init = cls.methods.get("__init__")
            if init is not None:
                env = self._init_env(init)
                evaluator = FunctionEvaluator(self, init, env, emit=False, depth=MAX_CALL_DEPTH - 2)
                evaluator.attr_sink = attrs
                evaluator.run_body(init.node.body)
        finally:
            del self._attrs_in_progress[key]
        # a buffer the methods update in place (a counter, running statistics) changes between calls
        updated = set().union(*(c.updated_in_place for c in cls.mro()))
        for k, v in list(attrs.items()):
            v = _strip_const(v)
            attrs[k] = v.with_(from_weights=False) if v.from_weights and k in updated else v
        self._class_attrs[key] = attrs
        return attrs

    def _init_env(self, init: FunctionInfo) -> dict[str, Value]:
        env: dict[str, Value] = {}
        for i, prm in enumerate(self._param_nodes(init)):
            name = prm.name.value
            if i == 0:
                env[name] = self.instance(init.cls)
            elif self._ann(init, prm) is not None and \
                    annotation_value(self, self._ann(init, prm)) is not None:  # type: ignore[arg-type]
                env[name] = annotation_value(self, self._ann(init, prm))  # type: ignore[arg-type,assignment]
            elif prm.default is not None and _python_default(prm.default):
                env[name] = python(is_bool=_is_bool_literal(prm.default))
            else:
                env[name] = UNKNOWN_VALUE
        return env


# --------------------------------------------------------------------------- helpers


_PROPERTY_DECORATORS = frozenset({"property", "functools.cached_property", "cached_property"})


def _self_attr_setters(cls: ClassInfo) -> dict[str, list[tuple[FunctionInfo, cst.BaseExpression]]]:
    """``attr -> (method, assigned expression)`` for ``self.<attr> = ...`` in the methods of the
    class and its bases (``__init__`` aside), from the module indexes."""
    out: dict[str, list[tuple[FunctionInfo, cst.BaseExpression]]] = {}
    for c in cls.mro():
        if c.owner is None:
            continue
        for attr, places in c.owner.attr_writes_outside.items():
            for stmt, fn in places:
                if fn is None or fn.cls is not c or fn.is_static or fn.is_classmethod or not fn.param_names():
                    continue
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
                    target, value = stmt.targets[0].target, stmt.value
                elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
                    target, value = stmt.target, stmt.value
                else:
                    continue
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                        and target.value.value == fn.param_names()[0] and target.attr.value == attr:
                    out.setdefault(attr, []).append((fn, value))
    return out


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_bool_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _python_default(node: cst.BaseExpression) -> bool:
    """A default that says the parameter is a plain Python value (bool/int/float/str)."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.Imaginary)):
        return True
    if _is_bool_literal(node):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_python_default(e.value) for e in node.elements)
    return False


def _refine(value: Value, declared: Value | None) -> Value:
    """An argument's value, corrected by the parameter's annotation where they disagree."""
    if declared is None:
        return value
    if declared.kind is Kind.PYTHON and value.kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
        return declared
    if declared.kind is Kind.SEQUENCE and declared.element is not None and declared.element.kind is Kind.PYTHON:
        # e.g. ``tuple[int, int]``: the annotation is more trustworthy than what the analysis inferred
        if value.kind is not Kind.SEQUENCE or value.elements().kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
            return declared
    if declared.kind is Kind.TENSOR and value.kind is Kind.UNKNOWN:
        return declared
    if value.kind is Kind.UNKNOWN and not value.params and value.cls is None:
        return declared  # e.g. ``list[dict[str, Tensor]]``: what the analysis could not infer
    if value.kind is Kind.SEQUENCE and declared.kind is Kind.SEQUENCE:
        if value.items is not None and declared.items is not None and len(value.items) == len(declared.items):
            return value.with_(items=tuple(_refine(v, d) for v, d in zip(value.items, declared.items)))
        if value.items is None and declared.items is not None:
            return declared if value.elements().kind is Kind.UNKNOWN else value
        if value.elements().kind is Kind.UNKNOWN and declared.element is not None:
            return value.with_(element=declared.element, items=None)
    return value


_RECORD_BASES = frozenset({"typing.NamedTuple", "NamedTuple", "typing_extensions.NamedTuple"})
_DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "dataclass"})


def _strip_const(v: Value) -> Value:
    """Values of attributes and globals can change at run time: forget their constant."""
    if v.has_const:
        return v.with_(const=NO_CONST)
    return v


def _signature(v: Value) -> Any:
    const = v.const if isinstance(v.const, (bool, int, float, str, type(None))) else "?"
    return (v.kind.value, v.is_bool, v.maybe_none, const if v.has_const else "-", v.qualname,
            id(v.cls) if v.cls else 0, id(v.func) if v.func else 0, v.from_weights, v.entered, v.assumed,
            v.constant,
            tuple(_signature(i) for i in v.items) if v.items else None,
            _signature(v.element) if v.element is not None else None)


def _assignments_to(scope: cst.CSTNode, name: str) -> list[cst.Assign]:
    """``name = ...`` statements in a function body or module (not in nested scopes)."""
    from dynalint.analysis.syntax import walk

    out = []
    for n in walk(scope, into_scopes=False):
        if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                             for t in n.targets):
            out.append(n)
    return out


def type_comment(node: cst.FunctionDef) -> tuple[list[cst.BaseExpression], cst.BaseExpression | None] | None:
    """The ``# type: (int, Tensor) -> Tensor`` comment of a function (PEP 484), parsed."""
    body = node.body
    comments = []
    if isinstance(body, cst.IndentedBlock):
        if body.header.comment is not None:
            comments.append(body.header.comment.value)
        if body.body:
            first = body.body[0]
            comments.extend(line.comment.value for line in getattr(first, "leading_lines", ())
                            if line.comment)
    for text in comments:
        text = text.lstrip("#").strip()
        if not text.startswith("type:"):
            continue
        sig = text[len("type:"):].strip()
        args_text, arrow, ret_text = sig.partition("->")
        if not arrow or not args_text.strip().startswith("("):
            continue
        try:
            args = cst.parse_expression(args_text.strip())
            ret = cst.parse_expression(ret_text.strip())
        except Exception:
            return None
        if isinstance(args, cst.Tuple):
            return [e.value for e in args.elements], ret
        inner = args_text.strip()[1:-1].strip()
        if not inner:
            return [], ret
        try:
            return [cst.parse_expression(inner)], ret
        except Exception:
            return None
    return None


def _entering(v: Value) -> Value:
    """``v`` as a value that enters the frame (an argument, an object's state): a tensor there is a
    graph input, not computed in the graph."""
    if v.kind is Kind.TENSOR and not v.entered:
        return v.with_(entered=True)
    return v


def _public_method(fn: FunctionInfo) -> bool:
    """An instance method callers outside the class use (not private, not a property or static helper)."""
    return not fn.name.startswith("_") and not fn.is_static and not fn.is_classmethod and not any(
        d in _PROPERTY_DECORATORS or d.endswith((".setter", ".deleter")) for d in fn.decorators)
