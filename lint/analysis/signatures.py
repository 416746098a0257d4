"""Signatures: a function's parameters and annotations (or PEP 484 type comment), what they promise,
and the binding of a call's arguments or of an entry point's inputs to them.
"""
from __future__ import annotations


from typing import TYPE_CHECKING, Any, Callable, Iterator

import re

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.interface import ProgramParts
from dynalint.analysis.program_part import ProgramPart
from dynalint.analysis.evaluator import Evidence, FunctionEvaluator, annotation_value, names_numpy_array
from dynalint.analysis.interprocedural import MAX_CALL_DEPTH, _refine

#: the depth the searches of what a function's callers pass evaluate them at: one call deep, so that what a
#: helper of the caller returns (``mask = make_mask(n)``) is known, and no deeper (each caller is evaluated
#: silently once per search)
CALLER_SEARCH_DEPTH = MAX_CALL_DEPTH - 1
from dynalint.analysis.module_index import FunctionInfo
from dynalint.analysis.syntax import is_none, walk
from dynalint.analysis.number_callers import container_params, defaults_kept, dynamic_arguments, \
    mask_params, number_params, object_params, tensor_params
from dynalint.analysis.replay import interface_token
from dynalint.analysis.values import (
    NONE_VALUE,
    PYTHON_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    bound_parameter,
    join_all,
    mapping,
    python,
    sequence,
    tensor,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.memo import Memo


class Signatures(ProgramPart["ProgramParts"]):
    """The signatures of one module's functions for its :class:`~dynalint.analysis.program.Program`:
    parameters and annotations (or PEP 484 type comment), what they promise, and the binding of a
    call's arguments or of an entry point's inputs to them.  Owns the memos ``annotations`` (function
    -> its annotation nodes), ``declared`` (function -> what they promise), ``evidence`` (function ->
    what the uses of its untyped parameters say), ``numbers``, ``objects`` and ``masks`` (function -> the
    parameters every caller passes a number, an object of one class, a boolean mask), registered in the
    program's memos so that a replay finds them by name."""

    def __init__(self, program: "ProgramParts") -> None:
        super().__init__(program)
        self._annotations: "Memo[int, tuple[dict[str, cst.BaseExpression], cst.BaseExpression | None]]" = \
            program.memo("annotations")
        self._declared: "Memo[int, dict[str, Value]]" = program.memo("declared")
        self._evidence: "Memo[int, Evidence]" = program.memo("evidence")
        self._numbers: "Memo[int, frozenset[str]]" = program.memo("numbers")
        self._objects: "Memo[int, dict[str, Value]]" = program.memo("objects")
        self._masks: "Memo[int, frozenset[str]]" = program.memo("masks")
        self._tensors: "Memo[int, dict[str, int | None]]" = program.memo("tensors passed")
        self._containers: "Memo[int, dict[str, Value]]" = program.memo("containers passed")
        self._kept: "Memo[int, frozenset[str]]" = program.memo("defaults kept")
        self._dynamic: "Memo[int, tuple[dict[str, str], dict[str, frozenset]]]" = program.memo("dynamic")
        self._searches: "Memo[tuple[int, int], Any]" = program.memo("caller searches")


    def param_nodes(self, fn: FunctionInfo) -> list[cst.Param]:
        """The named parameters of ``fn`` (its header is read: recorded for a replay)."""
        tracker = self.program.tracker
        if tracker is not None:
            tracker.touch(interface_token(fn))
        p = fn.node.params
        return [*p.posonly_params, *p.params, *p.kwonly_params]

    def _untyped(self, fn: FunctionInfo) -> list[str]:
        out = []
        for i, prm in enumerate(self.param_nodes(fn)):
            if i == 0 and fn.is_method:
                continue
            if self.annotation_of(fn, prm) is not None:
                continue
            if prm.default is not None and _python_default(prm.default):
                continue
            out.append(prm.name.value)
        return out

    def evidence(self, fn: FunctionInfo) -> Evidence:
        """Silent pass that records what the uses of untyped parameters say about them."""
        return self._evidence.get(id(fn), lambda: self._collect_evidence(fn), Evidence)

    def _collect_evidence(self, fn: FunctionInfo) -> Evidence:
        ev = Evidence()
        untyped = set(self._untyped(fn))
        if untyped:
            env = self.param_env(fn, evidence=None, candidates=untyped)
            evaluator = FunctionEvaluator(self.program, fn, env, emit=False, evidence=ev,
                                          depth=MAX_CALL_DEPTH)
            evaluator.run_body(fn.node.body)
        return ev

    def numbers_passed(self, fn: FunctionInfo) -> frozenset[str]:
        """The parameters of ``fn`` every call in the project passes a Python number (see
        :mod:`dynalint.analysis.number_callers`); none for a function that compiled code of other
        modules calls (its incoming entry carries the arguments)."""
        if fn.qualname in self.program.entries:
            return frozenset()
        return self._found(self._numbers, fn, lambda: number_params(self.program, fn, CALLER_SEARCH_DEPTH),
                           frozenset)

    def objects_passed(self, fn: FunctionInfo) -> dict[str, Value]:
        """The parameters of a compiled function every call in the project passes an object of one class
        (a model, an optimizer), with it (see :func:`~dynalint.analysis.number_callers.object_params`)."""
        if fn.qualname in self.program.entries:
            return {}
        return self._found(self._objects, fn, lambda: object_params(self.program, fn, CALLER_SEARCH_DEPTH),
                           dict)

    def masks_passed(self, fn: FunctionInfo) -> frozenset[str]:
        """The parameters of a compiled function every call in the project passes a boolean tensor (see
        :func:`~dynalint.analysis.number_callers.mask_params`)."""
        if fn.qualname in self.program.entries:
            return frozenset()
        return self._found(self._masks, fn, lambda: mask_params(self.program, fn, CALLER_SEARCH_DEPTH),
                           frozenset)

    def tensors_passed(self, fn: FunctionInfo) -> dict[str, int | None]:
        """The parameters of a compiled function every call in the project passes a tensor the analysis
        proves one, with their number of dimensions where the calls agree on one (see
        :func:`~dynalint.analysis.number_callers.tensor_params`); searched only in a file that compiles code
        itself (a script, which calls what it compiles)."""
        if fn.qualname in self.program.entries or not self.program.index.compiles_code:
            return {}
        return self._found(self._tensors, fn, lambda: tensor_params(self.program, fn, CALLER_SEARCH_DEPTH),
                           dict)

    def containers_passed(self, fn: FunctionInfo) -> dict[str, Value]:
        """The parameters of a compiled function every call in the project passes a list, tuple or dict of
        tensors or of numbers, with what its elements are (see
        :func:`~dynalint.analysis.number_callers.container_params`);
        searched, as :meth:`tensors_passed`, only in a script."""
        if fn.qualname in self.program.entries or not self.program.index.compiles_code:
            return {}
        return self._found(self._containers, fn,
                           lambda: container_params(self.program, fn, CALLER_SEARCH_DEPTH), dict)

    def defaults_kept(self, fn: FunctionInfo) -> frozenset[str]:
        """The parameters of a compiled function with a ``None`` default that no call in the project passes
        (see :func:`~dynalint.analysis.number_callers.defaults_kept`); searched, as
        :meth:`tensors_passed`, only in a script."""
        if fn.qualname in self.program.entries or not self.program.index.compiles_code:
            return frozenset()
        return self._kept.get(id(fn), lambda: defaults_kept(self.program, fn), frozenset)

    def _symbolic(self, fn: FunctionInfo, name: str, value: Value) -> Value:
        """``value`` of the parameter ``name`` of the compiled function ``fn``, with what of it Dynamo traces
        as symbolic once the calls change it (:meth:`dynamic_passed`)."""
        if value.kind not in (Kind.PYTHON, Kind.TENSOR, Kind.UNKNOWN) or value.has_const:
            return value
        numbers, dims = self.dynamic_passed(fn)
        if value.kind is not Kind.TENSOR and name in numbers and not value.is_bool and value.cls is None:
            # (taken for nothing else, it is what the calls pass: an int or a float)
            typed = value.kind is Kind.PYTHON and value.qualname is None
            return value.with_(dynamic=True, qualname=numbers[name]) if typed else value.with_(dynamic=True)
        if value.kind is Kind.TENSOR and name in dims:
            return value.with_(dynamic_dims=dims[name])
        return value

    def dynamic_passed(self, fn: FunctionInfo) -> tuple[dict[str, str], dict[str, frozenset]]:
        """The numbers (with their type) and the dimensions of the tensors the calls of the compiled function
        ``fn`` change, which Dynamo traces as symbolic (see
        :func:`~dynalint.analysis.number_callers.dynamic_arguments`); searched, as :meth:`tensors_passed`,
        only in a script."""
        if fn.qualname in self.program.entries or not self.program.index.compiles_code:
            return {}, {}
        return self._dynamic.get(id(fn), lambda: dynamic_arguments(self.program, fn), lambda: ({}, {}))

    def _found(self, memo: "Memo[int, Any]", fn: FunctionInfo, compute: "Callable[[], Any]",
               empty: "Callable[[], Any]") -> Any:
        """What one kind of value the search of ``fn``'s calls finds (``compute``), remembered in ``memo``;
        nothing, and not remembered, while that search is under way (a construction it evaluates asks
        about the class it builds): what it finds is not known yet."""
        if self.searching(fn):
            return empty()
        return memo.get(id(fn), compute, empty)

    def searching(self, fn: FunctionInfo) -> bool:
        """Whether the search of ``fn``'s calls (:meth:`caller_search`) is under way."""
        return self._searches.busy((id(fn), CALLER_SEARCH_DEPTH))

    def caller_search(self, fn: FunctionInfo, depth: int, search: "Callable[[], Any]") -> Any:
        """What ``search`` finds of the calls of ``fn`` (:mod:`~dynalint.analysis.number_callers`), made
        once per analysis: the numbers, objects, masks and tensors every call passes are read from one
        search."""
        return self._searches.get((id(fn), depth), search, lambda: None)

    def has_tensor_params(self, fn: FunctionInfo) -> bool:
        program = self.program
        for prm in self.param_nodes(fn):
            if self.annotation_of(fn, prm) is not None:
                v = annotation_value(program, self.annotation_of(fn, prm))
                if v is not None and v.kind is Kind.TENSOR:
                    return True
                if v is not None and v.cls is not None and program.classes.is_record(v.cls) and any(
                        a.kind is Kind.TENSOR for a in program.classes.class_attrs(v.cls).values()):
                    return True  # a record of tensors (a batch, a model output)
        return bool(self.evidence(fn).tensor_params())

    def param_env(self, fn: FunctionInfo, evidence: Evidence | None, candidates: set[str] | None = None,
                  forward: bool = False) -> dict[str, Value]:
        """Initial environment of a root function (``forward``: its parameters are graph inputs)."""
        env: dict[str, Value] = {}
        program = self.program
        is_forward = (fn.name == "forward" and fn.cls is not None and fn.cls.is_module) or \
            id(fn) in program.entry_points.entered or forward
        tensor_params = evidence.tensor_params() if evidence is not None else set()
        negative = evidence.negative if evidence is not None else set()
        # only the arguments of the compiled function itself enter the frame as they are; a helper's or
        # a submodule's are usually computed by its caller in the same graph
        entered = id(fn) in program.entry_points.entered or forward
        indexing: frozenset[str] | None = None  # (the names the body indexes with, read once if needed)
        for i, prm in enumerate(self.param_nodes(fn)):
            name = prm.name.value
            if entered and is_none(prm.default) and name in self.defaults_kept(fn):
                # `generator=None` that no call passes: None, whatever the annotation allows
                env[name] = NONE_VALUE
                continue
            if i == 0 and fn.is_method:
                env[name] = program.classes.instance(fn.cls) if not fn.is_classmethod else _class_of(None, fn)
                continue
            if fn.bound is not None and name in fn.bound:
                env[name] = fn.bound[name]  # what a `functools.partial` compiled binds
                continue
            if candidates is not None and name in candidates:
                env[name] = Value(Kind.UNKNOWN, params=frozenset({name}), param=name)
                continue
            ann_node = self.annotation_of(fn, prm)
            ann = annotation_value(program, ann_node) if ann_node is not None else None
            if ann is not None:
                ann = self._record_passed(fn, name, ann)
                if entered:
                    # `generator: Optional[torch.Generator] = None` that every caller in the project passes
                    ann = self._optional_passed(fn, name, ann)
                    if (ann.is_mapping or ann.kind is Kind.SEQUENCE) and ann.element is None \
                            and ann.items is None:
                        # `losses: dict` that every call passes a dict (a list) of tensors
                        ann = self.containers_passed(fn).get(name, ann)
                env[name] = _entering(ann) if entered else ann
                if entered and ann.maybe_none and ann.kind is Kind.TENSOR and name in self.tensors_passed(fn):
                    # `rir: Optional[Tensor] = None` that every call in the project passes a tensor
                    env[name] = env[name].with_(maybe_none=False)
            elif ann_node is not None and entered and names_numpy_array(program, ann_node):
                # `kpts: np.ndarray` of the compiled function: Dynamo holds the array it is given as a tensor
                env[name] = tensor(entered=True).with_(qualname=K.NUMPY_ARRAY)
            elif ann_node is not None and entered and name in self.objects_passed(fn):
                # `g: CSRGraph` of a plain class, which the annotation alone does not make an instance of (a
                # subclass may be passed): every caller in the project passes an instance of one class
                env[name] = self.objects_passed(fn)[name]
            elif ann_node is not None and entered and name in self.containers_passed(fn):
                env[name] = self.containers_passed(fn)[name]  # `batch: Packed` of a `collections.namedtuple`
            elif ann_node is not None:
                env[name] = UNKNOWN_VALUE  # annotated with something that is not a tensor
            elif prm.default is not None and _python_default(prm.default):
                env[name] = python(is_bool=_is_bool_literal(prm.default))
            elif prm.default is not None and is_none(prm.default) and entered and name in self.objects_passed(fn):
                # `generator=None` that every caller in the project passes a `torch.Generator`
                env[name] = self.objects_passed(fn)[name]
            elif prm.default is not None and is_none(prm.default):
                env[name] = tensor(entered=entered, maybe_none=True) if name in tensor_params \
                    else UNKNOWN_VALUE
            elif prm.default is None and entered and name in self.containers_passed(fn):
                # a list or dict of tensors every caller in the project passes (`for t in xs`, `xs[0]`)
                env[name] = self.containers_passed(fn)[name]
            elif prm.default is None and (is_forward or name in tensor_params) and name not in negative \
                    and name in self.numbers_passed(fn):
                # every caller in the project passes a number (what the body does with it, a test or
                # arithmetic with a tensor, a number does as well)
                env[name] = python()
            elif prm.default is None and (entered or name in tensor_params) and name in self.objects_passed(fn):
                # every caller in the project passes the same kind of object (a model, an optimizer), what
                # the body's use suggests aside (`log.log(v)` of a logger is no `Tensor.log`, `diffusion.T`
                # of a schedule no transpose)
                env[name] = self.objects_passed(fn)[name]
            elif prm.default is None and is_forward \
                    and (name not in negative or name in self.tensors_passed(fn)):
                # an argument of compiled code that nothing shows to be a tensor is taken for one, but
                # what needs its data is not known; one every call passes a tensor is one, whatever the body
                # suggests (`for row in x:` iterates a tensor's rows too)
                passed = self.tensors_passed(fn)
                env[name] = tensor(entered=entered, assumed=name not in tensor_params and name not in passed)
                if passed.get(name):  # (a 0-d tensor that enters the frame is left as the others are)
                    env[name] = env[name].with_(ndim=passed[name])
            elif name in tensor_params:
                # (a tensor by how the body uses it, of a class no annotation names: it may be a subclass's)
                env[name] = tensor(entered=entered, open_class=True)
            else:
                env[name] = UNKNOWN_VALUE
            if is_forward and env[name].kind is Kind.TENSOR and not env[name].is_bool \
                    and name in (indexing := indexing if indexing is not None else _indexing_names(fn.node)) \
                    and name in self.masks_passed(fn):
                # every caller passes a mask (`select(x, m)` with `m = scores > 0.5`): it is one here
                env[name] = env[name].with_(is_bool=True)
            env[name] = bound_parameter(env[name], ann)
            if entered:
                env[name] = self._symbolic(fn, name, env[name])
        p = fn.node.params
        if isinstance(p.star_arg, cst.Param):
            # `*planes: torch.Tensor`: a tuple of what each argument is annotated as
            star = p.star_arg
            ann = annotation_value(program, star.annotation.annotation) if star.annotation is not None else None
            element = (_entering(ann) if entered else ann) if ann is not None and ann.kind is Kind.TENSOR \
                else UNKNOWN_VALUE
            env[star.name.value] = sequence(element=element)
        if isinstance(p.star_kwarg, cst.Param):
            env[p.star_kwarg.name.value] = PYTHON_VALUE
        return env

    def annotations(self, fn: FunctionInfo
                    ) -> tuple[dict[str, cst.BaseExpression], cst.BaseExpression | None]:
        """Parameter and return annotations, from the signature or a ``# type: (...) -> R`` comment."""
        return self._annotations.get(id(fn), lambda: self._read_annotations(fn), lambda: ({}, None))

    def _read_annotations(self, fn: FunctionInfo
                          ) -> tuple[dict[str, cst.BaseExpression], cst.BaseExpression | None]:
        params = {p.name.value: p.annotation.annotation for p in self.param_nodes(fn)
                  if p.annotation is not None}
        ret = fn.node.returns.annotation if fn.node.returns is not None else None
        comment = type_comment(fn.node)
        if comment is not None:
            args, comment_ret = comment
            names = [p.name.value for p in self.param_nodes(fn)]
            if fn.is_method and not fn.is_static and len(args) == len(names) - 1:
                names = names[1:]
            if len(args) == len(names):
                for name, ann in zip(names, args):
                    params.setdefault(name, ann)
            if ret is None:
                ret = comment_ret
        return params, ret

    def annotation_of(self, fn: FunctionInfo, prm: cst.Param) -> cst.BaseExpression | None:
        """The annotation of one parameter of ``fn`` (from the signature or the type comment)."""
        return self.annotations(fn)[0].get(prm.name.value)

    def declared_types(self, fn: FunctionInfo) -> dict[str, Value]:
        """What the annotations of a function's parameters promise, by name (a parameter keeps
        its declared type when reassigned from something the analysis cannot see into)."""
        return self._declared.get(id(fn), lambda: self._read_declared(fn), dict)

    def _read_declared(self, fn: FunctionInfo) -> dict[str, Value]:
        out = {}
        for name, ann in self.annotations(fn)[0].items():
            v = annotation_value(self.program, ann)
            if v is not None:
                out[name] = v
        return out

    def declared_return(self, fn: FunctionInfo) -> Value | None:
        """What the return annotation promises."""
        ret = self.annotations(fn)[1]
        return annotation_value(self.program, ret) if ret is not None else None

    def bind_args(self, fn: FunctionInfo, args: list[Value], kwargs: dict[str, Value],
                  bound_self: Value | None, opaque: bool) -> dict[str, Value]:
        """The environment a call of ``fn`` with these arguments starts with."""
        params = self.param_nodes(fn)
        env: dict[str, Value] = {}
        positional = list(args)
        start = 0
        if fn.is_method and not fn.is_classmethod:
            if bound_self is not None:
                env[params[0].name.value] = bound_self
                start = 1
        elif fn.is_classmethod and params:
            env[params[0].name.value] = _class_of(bound_self, fn)
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
            declared = annotation_value(self.program, self.annotation_of(fn, prm)) \
                if self.annotation_of(fn, prm) is not None else None
            env[name] = bound_parameter(_refine(value, declared), declared)
        if isinstance(p.star_arg, cst.Param):
            env[p.star_arg.name.value] = sequence(items=None if opaque else positional,
                                                 element=join_all(positional) if positional else UNKNOWN_VALUE)
        if isinstance(p.star_kwarg, cst.Param):
            # `**metrics`: a dict of the keywords no parameter takes, when the call's are known
            named = {prm.name.value for prm in params}
            extra = {k: v for k, v in kwargs.items() if k not in named}
            env[p.star_kwarg.name.value] = PYTHON_VALUE if opaque or not extra else \
                mapping(join_all(extra.values()), entries=extra)
        return env

    def default_value(self, node: cst.BaseExpression) -> Value:
        if is_none(node):
            return NONE_VALUE
        if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
            try:
                return python(node.evaluated_value)
            except Exception:
                return PYTHON_VALUE
        if isinstance(node, cst.Name) and node.value in ("True", "False"):
            return python(node.value == "True")
        return UNKNOWN_VALUE

    def _record_passed(self, fn: FunctionInfo, name: str, declared: Value) -> Value:
        """``declared``, the value of the parameter ``name``'s annotation, or when it names a record class
        (a dataclass, a NamedTuple) the record every call passes, built alike (``Decoder(cfg)`` of ``cfg =
        Config(max_len=8)``): the fields the calls agree on, defaults included, are its constants."""
        if declared.cls is None or declared.keys is not None or declared.maybe_none \
                or not self.program.classes.is_record(declared.cls):
            return declared
        passed = self.objects_passed(fn).get(name)
        return passed if passed is not None and passed.cls is declared.cls else declared

    def _optional_passed(self, fn: FunctionInfo, name: str, declared: Value) -> Value:
        """``declared``, the value of an ``Optional[...]`` annotation of the parameter ``name`` that is no
        tensor, or the object every call passes it (``Sampler(4, torch.Generator().manual_seed(0))``)."""
        if not declared.maybe_none or declared.kind is Kind.TENSOR:
            return declared
        return self.objects_passed(fn).get(name, declared)

    def init_env(self, init: FunctionInfo) -> dict[str, Value]:
        """The environment of an ``__init__`` analysed on its own (what its annotations and defaults say,
        and the objects every construction passes)."""
        env: dict[str, Value] = {}
        program = self.program
        called: frozenset[str] | None = None  # (read once, when a parameter needs it)
        for i, prm in enumerate(self.param_nodes(init)):
            name = prm.name.value
            if i == 0:
                env[name] = program.classes.instance(init.cls)
            elif is_none(prm.default) and name in self.defaults_kept(init):
                # `scale: Optional[Scale] = None` that no construction passes: `None` in every instance
                env[name] = NONE_VALUE
            elif self.annotation_of(init, prm) is not None and annotation_value(
                    program, self.annotation_of(init, prm)) is not None:  # type: ignore[arg-type]
                declared = annotation_value(program, self.annotation_of(init, prm))  # type: ignore[arg-type]
                env[name] = self._optional_passed(init, name, self._record_passed(
                    init, name, declared))  # type: ignore[arg-type]
            elif prm.default is not None and _python_default(prm.default):
                env[name] = python(is_bool=_is_bool_literal(prm.default))
            elif prm.default is None and name in (
                    called := called if called is not None else _called_when_stored(init, program.index.source)) \
                    and name in self.objects_passed(init):
                # every construction in the project passes an object of one class (a loss module, a
                # backbone handed to a wrapper): the attribute it is stored in holds that object
                env[name] = self.objects_passed(init)[name]
            elif prm.default is None and name in self.tensors_passed(init):
                # every construction in a script passes a tensor (`CSRGraph(rowptr)`): the object holds one
                env[name] = tensor().with_(ndim=self.tensors_passed(init)[name])
            else:
                env[name] = UNKNOWN_VALUE
        return env


def _indexing_names(fn: cst.FunctionDef) -> frozenset[str]:
    """The names ``fn`` indexes something with (``x[mask]``) or hands, as they are, to a function called by
    its name (``masked_acc(pred, labels, mask)``, which may index with it), and those the value of such a name
    is computed from (``keep = ~pad_mask``; ``x[keep]``): only those can be masks that matter."""
    nodes = list(walk(fn.body))
    found = {n.value for sub in nodes if isinstance(sub, cst.Subscript)
             for element in sub.slice if isinstance(element.slice, cst.Index)
             for n in walk(element.slice.value) if isinstance(n, cst.Name)}
    found |= {a.value.value for call in nodes if isinstance(call, cst.Call)
              and isinstance(call.func, cst.Name) for a in call.args if isinstance(a.value, cst.Name)}
    sources = [(t.target.value, {n.value for n in walk(a.value) if isinstance(n, cst.Name)})
               for a in nodes if isinstance(a, cst.Assign)
               for t in a.targets if isinstance(t.target, cst.Name)]
    grew = True
    while grew:
        grew = False
        for target, names in sources:
            if target in found and not names <= found:
                found |= names
                grew = True
    return frozenset(found)


def _called_when_stored(init: FunctionInfo, source: str | None) -> frozenset[str]:
    """The parameters ``__init__`` stores on the instance (``self.criterion = criterion``) under an
    attribute the module's text calls (``self.criterion(...)``, ``self.criterion.step(...)``) or reads an
    attribute of (``self.cfg.rule``, state of the object that compiled code guards on), or binds to a local
    name as it is (``cfg = self.cfg``, whose attributes are then read; its text is searched, a superset of the
    class's uses): only for those does the object the constructions pass change what the analysis follows."""
    stored: dict[str, str] = {}
    for n in walk(init.node.body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for target, value in _stored_pairs(t.target, n.value):
                    stored[target.attr.value] = value.value
    if not stored or source is None:
        return frozenset(stored.values())
    return frozenset(param for attr, param in stored.items()
                     if re.search(rf"self\.{re.escape(attr)}(\.\w+\s*\(|\.\w|\s*\()", source)
                     or re.search(rf"^\s*\w+\s*=\s*self\.{re.escape(attr)}\s*(#.*)?$", source, re.MULTILINE))


def _stored_pairs(target: cst.BaseExpression, value: cst.BaseExpression
                  ) -> Iterator[tuple[cst.Attribute, cst.Name]]:
    """The ``self.<attr> = <name>`` stores of one assignment target, also unpacked element by element
    (``self.model, self.opt = model, opt``)."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
            and target.value.value == "self" and isinstance(value, cst.Name):
        yield target, value
    elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        for t, v in zip(target.elements, value.elements):
            yield from _stored_pairs(t.value, v.value)


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


def _class_of(bound: Value | None, fn: FunctionInfo) -> Value:
    """The class a classmethod ``fn`` receives: the class it was read on (``Util.make(x)``), the class of
    the instance it was read on (``self.make(x)``), else the class that defines it; a subclass may come
    instead, as for ``self`` (``cls.norm(x)`` then runs the ``norm`` that class has)."""
    if bound is not None and bound.is_class:
        return bound
    if bound is not None and bound.cls is not None and bound.kind is not Kind.FUNCTION:
        return Value(Kind.FUNCTION, cls=bound.cls)
    return Value(Kind.FUNCTION, cls=fn.cls) if fn.cls is not None else UNKNOWN_VALUE
