"""The abstract values the dataflow analysis assigns to expressions.

Every expression in analysed code is classified as one of a few kinds.  Only a
*certain* classification may lead to a graph-break diagnostic: when the analysis
does not know what an expression is, the value is ``UNKNOWN`` and rules stay
silent.
"""
from __future__ import annotations

import enum
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Iterable

from dynalint.analysis.knowledge import NN_RNN_CLASSES, joined_nn_module, joined_numpy_draw, traced_random_draw

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from dynalint.analysis.module_index import ClassInfo, FunctionInfo


class Kind(enum.Enum):
    TENSOR = "tensor"
    """A torch.Tensor (graph value)."""
    SCALAR = "scalar"
    """A data-dependent Python number (from ``.item()``, ``int(t)``, ``.tolist()``)."""
    SIZE = "size"
    """Shape-derived: ``x.shape``, ``x.size(i)``, ``x.dim()``, ``len(x)`` -- guarded or symbolic."""
    PYTHON = "python"
    """A plain Python value known not to be a tensor (literal, flag, dtype, string...)."""
    SEQUENCE = "sequence"
    """A Python tuple/list whose elements are described by ``items``/``element``."""
    MODULE = "module"
    """An ``nn.Module`` instance (calling it runs its forward)."""
    FUNCTION = "function"
    """A function or method of the analysed file."""
    UNKNOWN = "unknown"


class _NoConst:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_CONST"


NO_CONST: Any = _NoConst()


@dataclass(frozen=True)
class Value:
    """What the analysis knows about one expression."""

    kind: Kind
    is_bool: bool = False
    """A boolean tensor (a mask) or a Python bool."""
    const: Any = NO_CONST
    """A Python constant, when known (``None``, ``True``, ``3``, ``"mean"``).

    Also used for values that are constant *under torch.compile*, e.g.
    ``torch.compiler.is_compiling()`` is ``True`` there.
    """
    items: tuple["Value", ...] | None = None
    """Known element values of a tuple/list (for unpacking); of a dict with ``keys``, the values of
    those keys in order."""
    keys: tuple[str, ...] | None = None
    """A dict's keys, when they are all constant strings (``{"h": h, "n": n}``), or the fields of a
    record built in analysed code (``Pack(h, n)``): reading one gives its own value (in ``items``),
    not the join of all of them."""
    element: "Value | None" = None
    """Value of every element of a homogeneous sequence (or of a tensor's rows)."""
    qualname: str | None = None
    """Qualified name of an imported object or of a call result (``torch.nn.functional``,
    ``logging.getLogger()``)."""
    cls: "ClassInfo | None" = field(default=None, compare=False)
    """For MODULE values: the class in the analysed file, when known."""
    func: "FunctionInfo | None" = field(default=None, compare=False)
    """For FUNCTION values: the function in the analysed file."""
    bound_self: "Value | None" = field(default=None, compare=False)
    """For methods looked up on ``self``: the instance."""
    origin: "cst.CSTNode | None" = field(default=None, compare=False)
    """For SCALAR values: the call that extracted the scalar from a tensor."""
    origin_in_loop: bool = False
    """The extraction happened inside a loop (Dynamo then runs the whole frame eagerly)."""
    params: frozenset[str] = frozenset()
    """Parameters of the current function this value was computed from (evidence)."""
    param: str | None = None
    """Set only on the untyped parameter itself, before any operation on it."""
    from_weights: bool = False
    """Computed only from module parameters/buffers and constants, not from inputs."""
    maybe_none: bool = False
    """The value may also be ``None`` (an optional tensor)."""
    entered: bool = False
    """A tensor that entered the frame as it is (an argument, module state): Dynamo has it as a graph
    input, so a 0-d one passed where an op takes a size is read without breaking."""
    assumed: bool = False
    """A tensor only because an untyped parameter was taken for one (or computed from such a value):
    whether it needs tensor data is not known."""
    open_class: bool = False
    """A tensor only by ``isinstance(x, torch.Tensor)`` holding for a value the analysis could not type, or a
    tensor where ``isinstance(x, C)`` holds for a class ``C`` it cannot see: it may be an instance of a tensor
    subclass (a later ``isinstance(x, Sub)`` may hold), unlike a tensor the analysis computed or a parameter
    annotated as one."""
    zero_dim: bool = False
    """A 0-d tensor: a full reduction (``scores.argmax()``, ``x.sum()``) or arithmetic of such tensors
    with numbers."""
    constant: bool = False
    """A tensor computed from Python numbers only (``torch.div(h.size(1), 2)``): Dynamo evaluates it
    while tracing, so it is a constant of the graph, not data: a size use of it reads nothing, though
    ``int()`` or ``.item()`` of it still break (measured on torch 2.13)."""
    lifted: bool = False
    """A tensor of one Python number made by ``torch.tensor``/``torch.as_tensor``, or arithmetic of such
    tensors with numbers: Dynamo's fake tensor keeps its value, so indexing with it reads no data (measured
    on torch 2.13: ``x[torch.tensor(n) * 2]`` is traced), though ``int(k)`` or ``if k > 1:`` still break."""
    guessed: bool = field(default=False, compare=False)
    """A parameter's value that is a tensor only by the analysis's reading: no annotation of the
    parameter says so (it may be a Python number when called).  What a rule may take for a tensor,
    a rewrite may not (:func:`dynalint.fixers.support.codegen.certain_tensor`)."""
    ndim: int | None = field(default=None, compare=False)
    """A tensor's number of dimensions, when known (the values and counts ``torch.unique`` returns are
    1-d, and ops that keep the shape keep it): one integer picks a 0-d tensor of a 1-d one."""
    rank: bool = False
    """A SIZE value that is a tensor's number of dimensions (``x.dim()``, ``x.ndim``), not the size of a
    dimension: 0 is as common a rank of a real input (a loss, a scalar time) as any other, while a
    dimension of size 0 is rare."""
    choices: tuple["Value", ...] | None = field(default=None, compare=False)
    """One of a few classes, functions or objects of the checked files, each with its ``cls`` or
    ``func`` (``SOLVERS[method]`` with ``method`` not known, from ``{"a": A, "b": B}``): a call or an
    attribute read is each of theirs, and gives what they all agree on (:func:`join`)."""
    dynamic: bool = False
    """A size or number that Dynamo traces as a symbolic int or float once the calls change it (automatic
    dynamic: the calls of the compiled function pass other sizes or numbers; or ``dynamic=True``); a float's
    ``qualname`` is ``builtins.float``."""
    dynamic_dims: frozenset[int | str] | None = field(default=None, compare=False)
    """A tensor's dimensions whose size the calls of the compiled function change (:data:`ALL_DIMS`: every
    one, under ``dynamic=True``); or of the shape read from such a tensor (``x.shape``)."""

    # --- convenience -----------------------------------------------------
    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR and not self.maybe_none

    @property
    def is_class(self) -> bool:
        """A class of the checked code as a value (``Counter``, ``type(self)``): calling it makes an instance,
        and its attributes are shared by every instance."""
        return self.kind is Kind.FUNCTION and self.func is None and self.cls is not None

    @property
    def is_mapping(self) -> bool:
        """A dict; ``element`` is the value of its entries when known."""
        return self.kind is Kind.PYTHON and self.qualname == "builtins.dict"

    @property
    def data_dependent(self) -> bool:
        """A tensor known to be computed from tensor data inside the current graph: only such a
        value needs the graph to run before Python can read it."""
        return self.is_tensor and not (self.entered or self.assumed or self.constant)

    def entry(self, key: object) -> "Value | None":
        """The value of a dict's constant key, when the dict's keys are known and hold it."""
        if self.keys is None or self.items is None or not isinstance(key, str) or key not in self.keys:
            return None
        return self.items[self.keys.index(key)]

    @property
    def has_const(self) -> bool:
        return self.const is not NO_CONST

    def with_(self, **changes: Any) -> "Value":
        """``dataclasses.replace(self, **changes)`` without its look at every field on each call (the
        evaluator makes tens of thousands of values per module this way): a copy of the fields with
        ``changes`` on top; a name that is no field is refused as ``replace`` refuses it."""
        if not _FIELDS.issuperset(changes):  # (no set made on each call)
            raise TypeError(f"Value has no field {sorted(changes.keys() - _FIELDS)[0]!r}")
        new = object.__new__(Value)
        fields = new.__dict__
        fields.update(self.__dict__)
        fields.update(changes)
        return new

    @property
    def alternatives(self) -> tuple["Value", ...]:
        """What this value may be: each of its :attr:`choices`, or itself."""
        return self.choices or (self,)

    def elements(self) -> "Value":
        """The value of one element when iterating or indexing with an integer."""
        if self.kind is Kind.TENSOR:
            out = tensor(is_bool=self.is_bool, params=self.params, from_weights=self.from_weights,
                         assumed=self.assumed, constant=self.constant)
            # (a row of a tensor of known rank has one dimension less: an element of a 1-d tensor is 0-d)
            return out.with_(ndim=self.ndim - 1, zero_dim=self.ndim == 1) if self.ndim else out
        if self.kind in (Kind.SIZE, Kind.SCALAR):
            return self
        if self.is_mapping:
            return UNKNOWN_VALUE  # iterating a dict gives its keys
        if self.element is not None:
            return self.element
        if self.items:
            return join_all(self.items)
        if self.kind is Kind.MODULE:  # nn.ModuleList / Sequential members
            return Value(Kind.MODULE)
        return UNKNOWN_VALUE


_FIELDS = frozenset(f.name for f in fields(Value))
"""The names :meth:`Value.with_` may change."""


def direct_init(cls: type) -> None:
    """Give the frozen dataclass ``cls`` an ``__init__`` that fills the instance's ``__dict__`` in place:
    the one ``dataclass`` writes sets each field through ``object.__setattr__`` (the class is frozen), a
    call per field, and a run over a large project makes hundreds of thousands of values and events.
    Same parameters, defaults (a default factory is called when its field is not given) and fields; a
    class with anything else to do at construction (``__post_init__``, a field left out of ``__init__``
    or keyword-only) keeps its own."""
    if hasattr(cls, "__post_init__"):
        return
    params: list[str] = []
    scope: dict[str, Any] = {"_NOT_GIVEN": _NOT_GIVEN}
    lines = ["    d = self.__dict__"]
    for f in fields(cls):
        if not f.init or f.kw_only:
            return
        if f.default_factory is not MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NOT_GIVEN")
            lines.append(f"    d[{f.name!r}] = _factory_{f.name}() if {f.name} is _NOT_GIVEN else {f.name}")
            continue
        if f.default is MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        lines.append(f"    d[{f.name!r}] = {f.name}")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines), scope)  # noqa: S102 (field names)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]


_NOT_GIVEN: Any = object()
"""The default of a field with a default factory in :func:`direct_init`'s ``__init__``."""

direct_init(Value)

UNKNOWN_VALUE = Value(Kind.UNKNOWN)
SIZE_VALUE = Value(Kind.SIZE)
DYNAMIC_SIZE = Value(Kind.SIZE, dynamic=True)
ALL_DIMS: frozenset[int | str] = frozenset({"*"})
"""The :attr:`Value.dynamic_dims` of a tensor every size of which is dynamic."""
RANK_VALUE = Value(Kind.SIZE, rank=True)
PYTHON_VALUE = Value(Kind.PYTHON)
NONE_VALUE = Value(Kind.PYTHON, const=None)


def shape_of(t: Value) -> Value:
    """The shape of the tensor ``t`` (``t.shape``, ``t.size()``), carrying which of its sizes the calls change
    (``x.shape[0]`` picks one: :func:`dimension_size`)."""
    return SIZE_VALUE.with_(dynamic_dims=t.dynamic_dims, ndim=t.ndim) if t.dynamic_dims else SIZE_VALUE


def dimension_size(shape: Value, index: Value) -> Value:
    """The size of dimension ``index`` of ``shape`` (a tensor, or the shape read from one): dynamic when the
    calls change it (:attr:`Value.dynamic_dims`)."""
    dims = shape.dynamic_dims
    if not dims or type(index.const) is not int:
        return SIZE_VALUE
    i = index.const
    if i < 0 and shape.ndim is not None:
        i += shape.ndim
    return DYNAMIC_SIZE if "*" in dims or i in dims else SIZE_VALUE


def tensor(
    *, is_bool: bool = False, params: frozenset[str] = frozenset(), from_weights: bool = False,
    entered: bool = False, assumed: bool = False, constant: bool = False, zero_dim: bool = False,
    maybe_none: bool = False, lifted: bool = False, open_class: bool = False,
) -> Value:
    return Value(Kind.TENSOR, is_bool=is_bool, params=params, from_weights=from_weights, entered=entered,
                 assumed=assumed, constant=constant, zero_dim=zero_dim, maybe_none=maybe_none, lifted=lifted,
                 open_class=open_class)


def bound_parameter(value: Value, declared: Value | None) -> Value:
    """``value`` as the parameter it is bound to holds it (``declared``: what the parameter's annotation
    says, None without one): a tensor is :attr:`Value.guessed` unless the annotation declares one."""
    guessed = value.kind is Kind.TENSOR and (declared is None or declared.kind is not Kind.TENSOR)
    return value if value.guessed is guessed else value.with_(guessed=guessed)


def derived(operands: Iterable[Value]) -> dict[str, bool]:
    """Provenance of a tensor an op computes from ``operands`` (``tensor(**derived(...))``): computed
    in the graph; assumed if any operand is; a constant when every operand is a Python number or size
    or a constant tensor; of an open class when an operand is an instance of a tensor subclass or may be
    one (torch ops on a subclass instance give instances of it)."""
    operands = tuple(operands)
    assumed = open_class = False
    constant = bool(operands)  # an op of no known operand (`torch.stack(parts)`, parts built later) is data
    for v in operands:
        if v.kind is Kind.SEQUENCE:
            parts = v.items if v.items else ((v.element,) if v.element is not None else (UNKNOWN_VALUE,))
            inner = derived(parts)
            assumed = assumed or inner["assumed"]
            constant = constant and inner["constant"]
            open_class = open_class or inner["open_class"]
            continue
        if v.kind is Kind.TENSOR:
            assumed = assumed or v.assumed
            constant = constant and v.constant
            open_class = open_class or v.open_class or v.cls is not None
        elif v.kind not in (Kind.PYTHON, Kind.SIZE) or v.is_mapping:
            constant = False
    return {"assumed": assumed, "constant": constant, "open_class": open_class}


def resumed(v: Value) -> Value:
    """``v`` as the frame resumed after a graph break has it: a tensor alive at the break is an input
    of that frame, and one folded from Python numbers is one too (no longer a constant), also when
    a tuple, list or dict holds it."""
    if v.is_tensor:
        return v.with_(entered=True, constant=False) if not v.entered or v.constant else v
    if v.kind is Kind.PYTHON and traced_random_draw(v.qualname):
        return python(is_bool=v.is_bool)  # a number drawn in traced code reaches the resumed frame as a number
    if v.kind is Kind.SEQUENCE or v.is_mapping or v.keys is not None:
        items = tuple(resumed(i) for i in v.items) if v.items is not None else None
        element = resumed(v.element) if v.element is not None else None
        if items != v.items or element != v.element:
            return v.with_(items=items, element=element)
    return v


def python(const: Any = NO_CONST, *, is_bool: bool | None = None) -> Value:
    if is_bool is None:
        is_bool = isinstance(const, bool)
    return Value(Kind.PYTHON, const=const, is_bool=is_bool)


def sequence(items: Iterable[Value] | None = None, element: Value | None = None) -> Value:
    return Value(Kind.SEQUENCE, items=tuple(items) if items is not None else None, element=element)


def mapping(element: Value | None, entries: dict[str, Value] | None = None) -> Value:
    """A dict whose entries' values are ``element`` (None: not known); ``entries``: the value of
    each of its keys, when they are all known."""
    if entries is None:
        return Value(Kind.PYTHON, qualname="builtins.dict", element=element)
    return Value(Kind.PYTHON, qualname="builtins.dict", element=element, keys=tuple(entries),
                 items=tuple(entries.values()))


def merge_params(values: Iterable[Value]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for v in values:
        if v.params:
            out = out | v.params
    return out


def _joined_fields(a: Value, b: Value) -> tuple[tuple[str, ...] | None, tuple[Value, ...] | None]:
    """The fields two paths set on one record object of a class of the checked code (``st.flag = True`` on one
    path only): a field set on both holds either value; one set on a single path is not known (the class's
    own value on the other).  (None, None) for anything else."""
    if a.cls is None or a.cls is not b.cls or a.keys is None or b.keys is None or a.items is None \
            or b.items is None or a.is_mapping:
        return None, None
    mine, theirs = dict(zip(a.keys, a.items)), dict(zip(b.keys, b.items))
    keys = tuple(dict.fromkeys((*a.keys, *b.keys)))
    return keys, tuple(join(mine[k], theirs[k]) if k in mine and k in theirs else UNKNOWN_VALUE for k in keys)


def join(a: Value, b: Value) -> Value:
    """The value of a variable that holds ``a`` on one path and ``b`` on another.

    Disagreement loses information (precision first): a tensor on one path and
    an unknown value on the other is unknown.  ``None`` on one path makes an
    optional tensor.
    """
    if a is b or (a == b and a.guessed is b.guessed and _same_object(a, b) and _same_choices(a, b)
                  and a.ndim == b.ndim):
        return a
    either = _either(a, b)
    if either is not None:
        return either
    if a.kind is b.kind:
        if a.kind is Kind.PYTHON and a.qualname != b.qualname:
            for drawn, other in ((a, b), (b, a)):
                if traced_random_draw(drawn.qualname) and other.qualname is None and not other.is_mapping:
                    # a number drawn in traced code on one path, a plain number on the other: where the path
                    # that draws it runs (`n = random.randint(1, n) if self.training else n`), it is the draw
                    return drawn.with_(params=a.params | b.params)
        if a.kind is Kind.SEQUENCE:
            items = None
            if a.items is not None and b.items is not None and len(a.items) == len(b.items):
                items = tuple(join(x, y) for x, y in zip(a.items, b.items))
            elem = None
            if a.element is not None and b.element is not None:
                elem = join(a.element, b.element)
            elif a.items == () or b.items == ():
                elem = a.element if b.items == () else b.element  # an empty list has nothing to disagree with
            return Value(Kind.SEQUENCE, items=items, element=elem, params=a.params | b.params)
        same_keys = a.keys is not None and a.keys == b.keys and a.items is not None and b.items is not None
        keys, items = (a.keys, tuple(join(x, y) for x, y in zip(a.items, b.items))) if same_keys \
            else _joined_fields(a, b)
        return Value(
            a.kind,
            keys=keys,
            items=items,
            is_bool=a.is_bool and b.is_bool,
            const=a.const if (a.has_const and b.has_const and _same_const(a.const, b.const)) else NO_CONST,
            qualname=a.qualname if a.qualname == b.qualname else joined_numpy_draw(a.qualname, b.qualname) or (
                joined_nn_module(a.qualname, b.qualname) if a.kind is Kind.MODULE or a.qualname in NN_RNN_CLASSES
                else None),
            cls=a.cls if a.cls is b.cls else None,
            func=a.func if a.func is b.func else None,
            element=join(a.element, b.element) if a.element is not None and b.element is not None else None,
            origin=a.origin or b.origin,
            params=a.params | b.params,
            from_weights=a.from_weights and b.from_weights,
            maybe_none=a.maybe_none or b.maybe_none,
            entered=a.entered and b.entered,
            assumed=a.assumed or b.assumed,
            open_class=a.open_class or b.open_class,
            guessed=a.guessed or b.guessed,
            constant=a.constant and b.constant,
            lifted=a.lifted and b.lifted,
            zero_dim=a.zero_dim and b.zero_dim,
            ndim=a.ndim if a.ndim == b.ndim else None,
            dynamic=a.dynamic and b.dynamic,
            dynamic_dims=_common_dims(a.dynamic_dims, b.dynamic_dims),
        )
    for x, y in ((a, b), (b, a)):
        if x.kind is Kind.TENSOR and y.kind is Kind.PYTHON and y.const is None:
            return x.with_(maybe_none=True)
        if x.kind is Kind.SEQUENCE and y.kind is Kind.PYTHON and y.const is None:
            # an `Optional[tuple[Tensor, Tensor]]` after `if points is not None:` (a tuple, list or dict, or None)
            return x.with_(maybe_none=True)
        if (x.cls is not None and x.kind in (Kind.MODULE, Kind.UNKNOWN)
                or x.kind is Kind.MODULE and x.qualname) \
                and not x.choices and y.kind is Kind.PYTHON and y.has_const and y.const is None:
            # `self.flex = Thresh() if use_flex else None`, `nn.GRU(...) if rnn else None`: the object where
            # it is not None
            return x.with_(maybe_none=True)
        if x.cls is not None and x.kind in (Kind.MODULE, Kind.UNKNOWN) and y.kind is Kind.UNKNOWN \
                and y.cls is None and not y.params and y.qualname is None:
            # ``head = head or Head(...)``: an object built here, or one a caller passes instead;
            # the code analysed is the class the module builds itself
            return x
        if x.kind is Kind.SIZE and y.kind is Kind.PYTHON:
            # (unless the Python value is a known number, it may be ``None``: ``if n is None:`` after
            # ``if ptr is not None: n = ptr.numel()`` with an ``Optional[int]`` ``n`` is not decided)
            return SIZE_VALUE if y.has_const and y.const is not None else SIZE_VALUE.with_(maybe_none=True)
    # a tensor on one path says nothing about the parameters it was computed from (`new_zeros(n)`
    # is a tensor whatever `n` is): only the unknown side's parameters are evidence when the joined
    # value is used as a tensor
    return Value(Kind.UNKNOWN, params=_unknown_params(a) | _unknown_params(b))


MAX_CHOICES = 16
"""Alternatives a value keeps (:attr:`Value.choices`); more are not followed."""


def _either(a: Value, b: Value) -> Value | None:
    """``a`` or ``b`` when each is a class, function or object of the checked files (or already such a
    choice) and they are not the same one: the choice of both (None when they are not such values or
    make too many).  A value the analysis does not know may be one of the choices (an entry of the dict
    from a file not checked): the known ones are still followed, and what they give is unknown."""
    kinds = (Kind.FUNCTION, Kind.MODULE, Kind.UNKNOWN)
    if a.kind not in kinds or b.kind not in kinds:
        return None
    for x, y in ((a, b), (b, a)):
        if _unknown(x) and x.qualname is None and y.kind is Kind.MODULE and y.cls is not None and not y.choices:
            return None  # a module built here or one passed instead: see the end of :func:`join`
    members: list[Value] = []
    for v in (a, b):
        for m in v.alternatives:
            if _unknown(m):
                m = UNKNOWN_VALUE
            elif (m.cls is None and m.func is None) or m.maybe_none or m.params or m.keys is not None:
                return None
            if not any(_same_object(o, m) for o in members):
                members.append(m)
    if all(_unknown(m) for m in members) or len(members) > MAX_CHOICES:
        return None
    if len(members) == 1:
        return members[0]
    kind = members[0].kind if all(m.kind is members[0].kind for m in members) else Kind.UNKNOWN
    return Value(kind, choices=tuple(members))


def _unknown(v: Value) -> bool:
    """Nothing known of the analysed code: not a class, function or object of the checked files, nor
    computed from a parameter (it may name something outside them)."""
    return v.kind is Kind.UNKNOWN and v.cls is None and v.func is None and not v.choices and not v.params


def _same_choices(a: Value, b: Value) -> bool:
    x, y = a.choices or (), b.choices or ()
    return len(x) == len(y) and all(_same_object(m, n) for m, n in zip(x, y))


def _same_object(a: Value, b: Value) -> bool:
    """The same class, function or object of the checked files (or none), bound to the same class's
    instance (the fields equality leaves out)."""
    if a.cls is not b.cls or a.func is not b.func:
        return False
    x, y = a.bound_self, b.bound_self
    return x is y or (x is not None and y is not None and x.cls is y.cls)


def _unknown_params(v: Value) -> frozenset[str]:
    return frozenset() if v.kind is Kind.TENSOR else v.params


def _common_dims(a: frozenset[int | str] | None, b: frozenset[int | str] | None
                 ) -> frozenset[int | str] | None:
    """The dimensions dynamic on both paths (:attr:`Value.dynamic_dims`)."""
    if a is None or b is None:
        return None
    if a == ALL_DIMS or b == ALL_DIMS:
        return b if a == ALL_DIMS else a
    return a & b or None


def join_all(values: Iterable[Value]) -> Value:
    out: Value | None = None
    for v in values:
        out = v if out is None else join(out, v)
    return out if out is not None else UNKNOWN_VALUE


def _same_const(x: Any, y: Any) -> bool:
    try:
        return type(x) is type(y) and bool(x == y)
    except Exception:
        return False
