"""The class model: instances, their members and properties, the attributes bound in the class body
and ``__init__`` or set later by other methods, and which classes are records or tensors.
"""
from __future__ import annotations


from typing import TYPE_CHECKING, Iterable

import libcst as cst

from dynalint.analysis.class_state import initially_none
from dynalint.analysis.interface import ProgramParts
from dynalint.analysis.program_part import ProgramPart
from dynalint.analysis.evaluator import FunctionEvaluator, annotation_value
from dynalint.analysis.interprocedural import MAX_CALL_DEPTH, _refine
from dynalint.analysis.module_index import (ClassInfo, FunctionInfo, ModuleIndex, decorated_as_dataclass,
                                           torch_optimizer_base)
from dynalint.analysis.replay import interface_token
from dynalint.analysis.signatures import _entering
from dynalint.analysis.syntax import NOT_LITERAL, dotted_name, literal_constant
from dynalint.analysis.values import (
    NO_CONST,
    NONE_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join_all,
    mapping,
    python,
    join,
    sequence,
    tensor,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.interface import EvaluatorView
    from dynalint.analysis.memo import Memo


def optimizer_member(base: str, attr: str) -> Value:
    """What the ``torch.optim`` base class ``base`` gives a subclass's instance for ``attr``: its parameter
    groups (dicts whose ``"params"`` are the parameters it was built with), its per-parameter state, and
    its own methods (``self.zero_grad()``), which compiled code calls as it calls them on any optimizer."""
    if attr == "param_groups":
        params = sequence(element=tensor(from_weights=True, entered=True))
        return sequence(element=mapping(UNKNOWN_VALUE, {"params": params}))
    if attr in ("state", "defaults"):
        return mapping(None)
    return Value(Kind.UNKNOWN, qualname=f"{base}().{attr}")


class ClassModel(ProgramPart["ProgramParts"]):
    """The classes of one module as its :class:`~dynalint.analysis.program.Program` sees them: instances,
    their members and properties, the attributes bound in the class body and ``__init__`` or set later
    by other methods, and which classes are records or tensors.  Owns the memos ``class_attrs``
    (class -> its attributes), ``properties`` ((getter, class) -> what the property returns) and
    ``set_later`` ((class, attribute) -> what other methods set it to; a guard only), registered in the
    program's memos so that a replay finds them by name, and the ``self.<attr> = ...`` places of each
    class's methods (read from the module indexes)."""

    def __init__(self, program: "ProgramParts") -> None:
        super().__init__(program)
        self._setters: dict[int, dict[str, list[tuple[FunctionInfo, cst.BaseExpression]]]] = {}
        self._class_attrs: "Memo[int, dict[str, Value]]" = program.memo("class_attrs")
        self._properties: "Memo[tuple[int, int], Value]" = program.memo("properties")
        self._set_later: "Memo[tuple[int, str], Value | None]" = program.memo("set_later", remember=False)


    def touch_class(self, cls: ClassInfo) -> None:
        """The analysis reads the shell of ``cls`` and of its bases (see :mod:`dynalint.analysis.replay`):
        recorded for the classes of this module (another module's do not change with its edits)."""
        program = self.program
        tracker = program.tracker
        if tracker is not None:
            for c in cls.mro():
                if c.owner is program.index:
                    tracker.touch(c)

    def instance(self, cls: ClassInfo | None) -> Value:
        if cls is None:
            return UNKNOWN_VALUE
        return Value(Kind.MODULE if cls.is_module else Kind.UNKNOWN, cls=cls)

    def construct(self, cls: ClassInfo, args: list[Value], kwargs: dict[str, Value], opaque: bool) -> Value:
        """An instance built by calling the class; a dataclass's or NamedTuple's fields hold the values
        passed (``Pack(h, n).n`` is ``n`` itself, as Dynamo traces it), when the fields are plain."""
        inst = self.instance(cls)
        fields = None if opaque else self._plain_fields(cls)
        if fields is None or len(args) > len(fields) or any(k not in fields for k in kwargs):
            return inst
        entries = {**dict(zip(fields, args)), **kwargs}
        for name in fields:
            if name not in entries:
                default = self._literal_default(cls, name)
                if default is not None:
                    entries[name] = default
        return inst.with_(keys=tuple(entries), items=tuple(entries.values()))

    def _literal_default(self, cls: ClassInfo, name: str) -> Value | None:
        """The default of the record field ``name`` that a call leaves out, when it is a literal (a number,
        string, bool or ``None``, or ``field(default=...)`` of one): the instance holds that constant, and
        Dynamo, which guards on it, decides a branch on it while tracing (``cfg.tf_ratio >= 1.0 or
        torch.rand(()) < cfg.tf_ratio`` of ``Cfg()`` never runs its tensor test)."""
        for c in cls.mro():
            if name not in c.field_annotations:
                continue
            default = c.body_assigns.get(name)
            if isinstance(default, cst.Call):
                default = next((a.value for a in default.args
                                if a.keyword is not None and a.keyword.value == "default"), None)
            if isinstance(default, cst.Name) and default.value == "None":
                return NONE_VALUE
            const = literal_constant(default) if default is not None else NOT_LITERAL
            return python(const) if const is not NOT_LITERAL else None
        return None

    def _plain_fields(self, cls: ClassInfo) -> list[str] | None:
        """The fields of a record class in ``__init__`` order, when its generated ``__init__`` stores
        each argument as it is (no ``__init__``/``__post_init__`` of its own, no ``field(...)`` but one that
        only gives a default, no ``ClassVar``, ``InitVar`` or ``KW_ONLY``); else None."""
        if not self.is_record(cls):
            return None
        self.touch_class(cls)
        fields: list[str] = []
        for c in reversed(list(cls.mro())):
            if "__init__" in c.methods or "__post_init__" in c.methods or "__new__" in c.methods:
                return None
            owner = self._owner(c)
            for name, ann in c.field_annotations.items():
                default = c.body_assigns.get(name)
                if _pseudo_field(ann) or isinstance(default, cst.Call) and not _stored_field(owner, default):
                    return None
                if name not in fields:
                    fields.append(name)
        return fields

    def record_fields(self, cls: ClassInfo) -> list[str]:
        """The fields of a record class in ``__init__`` order (``ClassVar``, ``InitVar`` and ``KW_ONLY``
        annotations are none): what ``dataclasses.asdict``/``astuple`` copy."""
        self.touch_class(cls)
        fields: list[str] = []
        for c in reversed(list(cls.mro())):
            fields += [n for n, ann in c.field_annotations.items() if not _pseudo_field(ann) and n not in fields]
        return fields

    def member(self, base: Value, attr: str, reader: "EvaluatorView | None" = None) -> Value:
        """``base.<attr>`` on an instance of a class of the checked code.  ``reader``: the compiled code
        reading it, which runs a property's getter where it reads it (Dynamo inlines the getter, so what
        breaks in it breaks there; measured on torch 2.13, not for ``functools.cached_property``)."""
        cls = base.cls
        assert cls is not None
        self.touch_class(cls)
        built = base.entry(attr)
        if built is not None:
            return built  # a field of a record built in compiled code
        if base.is_class:
            text = _class_text(cls, attr)
            if text is not None:
                return python(text)  # `METHODS.euler` of `class METHODS: euler = "euler"`, read on the class
        if attr == "__class__" and base.kind is not Kind.FUNCTION:
            return Value(Kind.FUNCTION, cls=cls)  # `self.__class__(...)` makes another instance
        attrs = self.class_attrs(cls)
        if attr in attrs:
            stored = attrs[attr]
            if stored.kind is Kind.FUNCTION and stored.func is not None and stored.bound_self is not None \
                    and stored.bound_self.cls is not None and stored.bound_self.cls is not cls \
                    and any(c is stored.bound_self.cls for c in cls.mro()):
                # `self.step = self._step` in a base's `__init__`: a method of this instance, and an
                # override of it where this class has one
                method = cls.find_method(stored.func.name) or stored.func
                return Value(Kind.FUNCTION, func=method, bound_self=base)
            if stored.kind is Kind.PYTHON and initially_none(cls, attr):
                # `self.frozen = None` in `__init__`, a module or tensor a method sets later (`setup()`, a
                # first call): either, where compiled code reads it
                later = self.program.program_for(cls.owner).classes.attr_set_later(cls, attr)
                if later is not None and later.kind in (Kind.MODULE, Kind.TENSOR):
                    return _entering(later.with_(maybe_none=True))
            return _entering(stored)  # state of the object: read as a graph input
        method = cls.find_method(attr)
        if method is not None:
            tracker = self.program.tracker
            if tracker is not None:
                tracker.touch(interface_token(method))
            if any(d.endswith(".setter") or d.endswith(".deleter") for d in method.decorators):
                return UNKNOWN_VALUE
            if reader is not None and "property" in method.decorators and not method.is_static:
                return _strip_const(reader.p.calls.call_function(reader, method, [], {}, base, False))
            if any(d in _PROPERTY_DECORATORS for d in method.decorators):
                return self.property_value(method, base)
            return Value(Kind.FUNCTION, func=method, bound_self=None if method.is_static else base)
        if attr == "training" and cls.is_module:
            return python(is_bool=True)
        optimizer = torch_optimizer_base(cls)
        if optimizer is not None and attr not in attrs:
            return optimizer_member(optimizer, attr)
        later = self.program.program_for(cls.owner).classes.attr_set_later(cls, attr)
        return _entering(later) if later is not None else UNKNOWN_VALUE

    def property_value(self, getter: FunctionInfo, base: Value) -> Value:
        """What a property's getter returns for this instance (analysed silently)."""
        owner = self.program.program_for(getter.owner)
        if owner is not self.program:
            return owner.classes.property_value(getter, base)
        return self._properties.get((id(getter), id(base.cls)), lambda: self._property_result(getter, base),
                                    lambda: UNKNOWN_VALUE)

    def _property_result(self, getter: FunctionInfo, base: Value) -> Value:
        names = getter.param_names()
        env = {names[0]: base} if names else {}
        program = self.program
        evaluator = FunctionEvaluator(program, getter, env, emit=False, depth=MAX_CALL_DEPTH - 1)
        evaluator.run_body(getter.node.body)
        result = join_all(evaluator.returns) if evaluator.returns else NONE_VALUE
        return _strip_const(_refine(result, program.signatures.declared_return(getter)))

    def attr_set_later(self, cls: ClassInfo, attr: str) -> Value | None:
        """An attribute that methods other than ``__init__`` set on ``self`` (a cache built on
        first use, a buffer made in ``reset_parameters``): the join of the values they assign,
        each evaluated on its own (the method's locals are not known there)."""
        self.touch_class(cls)
        setters = self._setters.get(id(cls))
        if setters is None:
            setters = self._setters[id(cls)] = _self_attr_setters(cls)
        places = setters.get(attr, ())
        return self._set_later.get((id(cls), attr), lambda: self._join_set_later(cls, places), lambda: None)

    def _join_set_later(self, cls: ClassInfo, places: Iterable[tuple[FunctionInfo, cst.BaseExpression]]
                        ) -> Value | None:
        found: Value | None = None
        for method, expr in places:
            owner = self.program.program_for(method.owner)
            env = owner.signatures.init_env(method)
            env[method.param_names()[0]] = self.instance(cls)
            evaluator = FunctionEvaluator(owner, method, env, emit=False, depth=MAX_CALL_DEPTH)
            v = _strip_const(evaluator.expr(expr))
            found = join(found, v) if found is not None else v
        return found

    def class_attrs(self, cls: ClassInfo) -> dict[str, Value]:
        """Attributes bound in the class body and in ``__init__`` (bases first)."""
        owner = self.program.program_for(cls.owner)
        if owner is not self.program:
            return owner.classes.class_attrs(cls)
        attrs: dict[str, Value] = {}  # what a recursive request sees: the attributes bound so far
        init = cls.instance_method("__init__")
        # while the calls that build the class are searched for what they pass its `__init__`, what it binds
        # is not known yet: nothing, not remembered
        start = init is None or not self.program.signatures.searching(init)
        return self._class_attrs.get(id(cls), lambda: self._bind_class_attrs(cls, attrs), lambda: attrs,
                                     start)

    def _bind_class_attrs(self, cls: ClassInfo, attrs: dict[str, Value]) -> dict[str, Value]:
        self.touch_class(cls)
        for base in reversed(list(cls.mro())):
            if base is not cls:
                attrs.update(self.class_attrs(base))
        program = self.program
        ev = FunctionEvaluator(program, None, {}, emit=False, depth=MAX_CALL_DEPTH)
        for name, expr in cls.body_assigns.items():
            v = ev.expr(expr)
            if v.kind is not Kind.FUNCTION:
                attrs[name] = _strip_const(v)
        if self.is_record(cls):
            # a dataclass or NamedTuple: its fields hold what they are annotated with
            for name, ann in cls.field_annotations.items():
                declared = annotation_value(program, ann)
                if declared is not None:
                    attrs[name] = declared
        init = cls.methods.get("__init__")
        if init is not None:
            env = program.signatures.init_env(init)
            evaluator = FunctionEvaluator(program, init, env, emit=False, depth=MAX_CALL_DEPTH - 2)
            evaluator.attr_sink = attrs
            evaluator.run_body(init.node.body)
        # a buffer the methods update in place (a counter, running statistics) changes between calls
        updated = set().union(*(c.updated_in_place for c in cls.mro()))
        for k, v in list(attrs.items()):
            v = _strip_const(v)
            attrs[k] = v.with_(from_weights=False) if v.from_weights and k in updated else v
        return attrs

    def is_record(self, cls: ClassInfo) -> bool:
        """A dataclass or NamedTuple (or a subclass of one): its instances are its annotated fields."""
        self.touch_class(cls)
        for c in cls.mro():
            owner = self._owner(c)
            if c.is_module:
                return False
            if any(owner.resolve(b) in _RECORD_BASES for b in c.bases):
                return True
            if decorated_as_dataclass(c):
                return True
        return False

    def has_optional_keys(self, cls: ClassInfo) -> bool:
        """A ``TypedDict`` with optional keys: one of its ``TypedDict`` classes is declared ``total=False``,
        or annotates a key ``NotRequired[...]`` (Dynamo cannot build an instance of it)."""
        if not self._derives_from(cls, _TYPED_DICT_BASES):
            return False
        for c in cls.mro():
            owner = self._owner(c)
            if any(k.keyword is not None and k.keyword.value == "total" and isinstance(k.value, cst.Name)
                   and k.value.value == "False" for k in c.node.keywords):
                return True
            if any((owner.resolve(head) or head) in _NOT_REQUIRED
                   for head in map(_annotation_head, c.field_annotations.values())):
                return True
        return False

    def classmethod_forward(self, cls: ClassInfo) -> FunctionInfo | None:
        """The ``forward`` of an ``autograd.Function`` when it is a classmethod (None otherwise), which
        Dynamo binds as the static method the documentation asks for when it traces the function for
        autograd (an input that requires grad): the context comes in twice, after the class (see
        :func:`dynalint.analysis.calls.unbound_apply`)."""
        forward = cls.find_method("forward")
        if forward is None or not forward.is_classmethod or not self._derives_from(cls, _AUTOGRAD_FUNCTIONS):
            return None
        return forward

    def static_forward(self, cls: ClassInfo) -> FunctionInfo | None:
        """The ``forward`` of an ``autograd.Function`` when it is a static method, as the documentation asks:
        ``C.apply(...)`` runs it with a context first, and Dynamo traces it there."""
        forward = cls.find_method("forward")
        if forward is None or not forward.is_static or not self._derives_from(cls, _AUTOGRAD_FUNCTIONS):
            return None
        return forward

    def is_tensor_class(self, cls: ClassInfo) -> bool:
        """A class deriving (through checked files) from ``torch.Tensor``."""
        return self._derives_from(cls, _TENSOR_BASES)

    def _derives_from(self, cls: ClassInfo, bases: frozenset[str]) -> bool:
        """A class of ``cls``'s MRO lists one of ``bases`` (qualified names, resolved in its module) among
        its bases."""
        self.touch_class(cls)
        return any(self._owner(c).resolve(b) in bases for c in cls.mro() for b in c.bases)

    def _owner(self, cls: ClassInfo) -> ModuleIndex:
        """The module that defines ``cls`` (this one when the index does not say)."""
        return cls.owner if cls.owner is not None else self.program.index


def _annotation_head(ann: cst.BaseExpression) -> str:
    """The dotted name an annotation starts with (``ClassVar`` of ``ClassVar[int]``); "" for other forms."""
    return dotted_name(ann.value if isinstance(ann, cst.Subscript) else ann) or ""


def _pseudo_field(ann: cst.BaseExpression) -> bool:
    """An annotation in a record's body that declares no field of its instances (``ClassVar``, ``InitVar``,
    ``KW_ONLY``)."""
    return _annotation_head(ann).rsplit(".", 1)[-1] in ("ClassVar", "InitVar", "KW_ONLY")


def _class_text(cls: ClassInfo, attr: str) -> str | None:
    """The string a class body binds ``attr`` to, as a literal (an enum-like class of names), in the first
    class of the MRO that binds it; None otherwise.  Read on the class itself, no instance shadows it."""
    for c in cls.mro():
        if attr in c.body_assigns:
            expr = c.body_assigns[attr]
            text = expr.evaluated_value if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
            return text if isinstance(text, str) else None
    return None


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


_TENSOR_BASES = frozenset({"torch.Tensor", "torch.nn.Parameter"})
_AUTOGRAD_FUNCTIONS = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_TYPED_DICT_BASES = frozenset({"typing.TypedDict", "typing_extensions.TypedDict"})
_NOT_REQUIRED = frozenset({"typing.NotRequired", "typing_extensions.NotRequired"})
_RECORD_BASES = frozenset({"typing.NamedTuple", "NamedTuple", "typing_extensions.NamedTuple"})
#: the arguments of ``dataclasses.field`` that leave the field an argument of ``__init__``, in its place
_STORED_FIELD_ARGUMENTS = frozenset({"default", "default_factory", "repr", "hash", "compare", "metadata"})


def _stored_field(owner: "ModuleIndex", call: cst.Call) -> bool:
    """``field(default_factory=dict)``: the generated ``__init__`` still takes the field, in its place,
    and stores what it is given."""
    name = dotted_name(call.func) or ""
    return (owner.resolve(name) or name) in ("dataclasses.field", "field") and all(
        a.keyword is not None and a.keyword.value in _STORED_FIELD_ARGUMENTS for a in call.args)


def _strip_const(v: Value) -> Value:
    """Values of attributes and globals can change at run time: forget their constant."""
    if v.has_const:
        return v.with_(const=NO_CONST)
    return v
