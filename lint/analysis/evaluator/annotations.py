"""What type annotations and ``isinstance`` class tuples promise about a value.

Annotations seed parameter and attribute values before any evaluation, so this module depends only on the
:class:`~dynalint.analysis.interface.ProgramView` protocol (to resolve names and aliases), not on the
evaluator itself.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.syntax import dotted_name
from dynalint.analysis.values import (
    NONE_VALUE,
    PYTHON_VALUE,
    SIZE_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join_all,
    mapping,
    python,
    sequence,
    tensor,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.interface import ProgramView


_SEQUENCE_ANNOTATIONS = frozenset({"tuple", "Tuple", "list", "List", "Sequence", "typing.Tuple", "typing.List",
                                   "typing.Sequence", "collections.abc.Sequence", "Iterable", "typing.Iterable"})
_CALLABLE_ANNOTATIONS = frozenset({"Callable", "typing.Callable", "collections.abc.Callable"})
_PYTHON_CONTAINER_ANNOTATIONS = frozenset({"set", "Set", "typing.Set", "frozenset", "FrozenSet"})
_MAPPING_ANNOTATIONS = frozenset({"dict", "Dict", "typing.Dict", "Mapping", "typing.Mapping", "MutableMapping",
                                  "OrderedDict", "collections.OrderedDict", "typing.OrderedDict",
                                  "collections.abc.Mapping"})


def annotation_value(program: "ProgramView", ann: cst.BaseExpression) -> Value | None:
    """The value an annotation promises (a tensor, a plain Python value, a sequence of
    either), or None when the annotation names something else."""
    tp = type(ann)  # (libcst's node classes are not subclassed: type tests, cheaper than isinstance)
    if tp is cst.SimpleString:
        try:
            return annotation_value(program, cst.parse_expression(ann.evaluated_value))
        except Exception:
            return None
    if tp is cst.Subscript:
        written = dotted_name(ann.value) or ""
        base = program.index.resolve(written) or written  # (`tp.List` of `import typing as tp`)
        if base in ("Annotated", "typing.Annotated", "typing_extensions.Annotated") and ann.slice \
                and isinstance(ann.slice[0].slice, cst.Index):
            # `Annotated[Tensor, "b n d"]`: what the first argument promises (the rest is metadata)
            return annotation_value(program, ann.slice[0].slice.value)
        if base in _CALLABLE_ANNOTATIONS and len(ann.slice) == 2 and isinstance(ann.slice[1].slice, cst.Index):
            # `f: Callable[[Tensor], Tensor]` (a solver's function): calling it gives what the return promises
            returned = annotation_value(program, ann.slice[1].slice.value)
            return Value(Kind.UNKNOWN, qualname=K.ANNOTATED_CALLABLE, element=returned) if returned is not None \
                else None
        inner = [annotation_value(program, el.slice.value) for el in ann.slice if isinstance(el.slice, cst.Index)]
        if base in ("Optional", "typing.Optional") and len(inner) == 1:
            return _optional(inner[0])
        if base in ("Union", "typing.Union"):
            return _union([_union_part(program, el.slice.value) if isinstance(el.slice, cst.Index) else None
                           for el in ann.slice])
        if base in _SEQUENCE_ANNOTATIONS:
            known = [v for v in inner if v is not None]
            if base.endswith(("tuple", "Tuple")) and len(inner) == 2 and isinstance(ann.slice[1].slice, cst.Index) \
                    and isinstance(ann.slice[1].slice.value, cst.Ellipsis):
                known, inner = known[:1], inner[:1]  # tuple[Tensor, ...]
            elif base.endswith(("tuple", "Tuple")) and len(inner) == 1:
                # `tuple[Tensor]` is written for "a tuple of outputs" far more often than for a 1-tuple,
                # and such tuples hold sizes, flags and None too: nothing is known of its items
                known, inner = [], [None]
            element = join_all(known) if known and len(known) == len(inner) else None
            if base.endswith(("tuple", "Tuple")) and len(inner) > 1:
                return sequence(items=[v if v is not None else UNKNOWN_VALUE for v in inner], element=element)
            return sequence(element=element) if element is not None else sequence(element=UNKNOWN_VALUE)
        if base in _MAPPING_ANNOTATIONS:
            return mapping(inner[-1] if len(inner) == 2 and inner[-1] is not None else None)
        if base in _PYTHON_CONTAINER_ANNOTATIONS:
            return PYTHON_VALUE
        return None
    if tp is cst.BinaryOperation and type(ann.operator) is cst.BitOr:
        return _union([_union_part(program, ann.left), _union_part(program, ann.right)])
    if tp is cst.Call:
        return _type_variable_bound(program, ann)
    text = dotted_name(ann)
    if text is None:
        return None
    resolved = program.index.resolve(text) or text
    if text in K.TENSOR_ANNOTATIONS or resolved in ("torch.Tensor", "torch.nn.Parameter", "torch.FloatTensor",
                                                    "torch.LongTensor", "torch.BoolTensor"):
        return tensor(is_bool=text.endswith("BoolTensor"))
    if text == "None":
        return NONE_VALUE
    if resolved == "torch.Size":
        return SIZE_VALUE
    if text in K.PYTHON_ANNOTATIONS or resolved in ("torch.dtype", "torch.device"):
        return python(is_bool=text == "bool")
    if text in _MAPPING_ANNOTATIONS:
        return mapping(None)
    if text in _PYTHON_CONTAINER_ANNOTATIONS:
        return PYTHON_VALUE
    if (resolved.startswith("torch.optim.") and resolved.rpartition(".")[2][:1].isupper()) \
            or K.skipped_torch_instance(resolved + "()"):
        return Value(Kind.UNKNOWN, qualname=resolved + "()")  # an instance of a torch.optim class, a scaler
    if resolved in K.NUMPY_GENERATOR_CLASSES or resolved in ("torch.Generator", "random.Random"):
        return Value(Kind.UNKNOWN, qualname=resolved + "()")  # a NumPy, torch or Python random generator
    if resolved == "logging.Logger":
        return Value(Kind.UNKNOWN, qualname="logging.getLogger()")  # a logger, as `getLogger()` gives one
    # ``OptTensor = Optional[Tensor]``, or a subclass of torch.Tensor
    return program.names.annotation_alias(text)


def names_numpy_array(program: "ProgramView", node: cst.BaseExpression) -> bool:
    """``node`` names ``numpy.ndarray`` (through the module's imports)."""
    text = dotted_name(node)
    return text is not None and (program.index.resolve(text) or text) == K.NUMPY_ARRAY


def _isinstance_value(program: "ProgramView", classes: cst.BaseExpression) -> Value | None:
    """What ``isinstance(x, classes)`` being true says x is (tensor or plain Python value)."""
    parts = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    if all(names_numpy_array(program, p) for p in parts):
        # an array Dynamo holds is a tensor seen through ``torch._numpy``
        return tensor().with_(qualname=K.NUMPY_ARRAY)
    values = [annotation_value(program, p) for p in parts]
    if values and all(v is not None and v.kind is Kind.TENSOR for v in values):
        # one tensor subclass of the checked code: an instance of it (its own methods are analysed)
        return tensor().with_(cls=values[0].cls) if len(values) == 1 and values[0].cls is not None else tensor()
    if values and all(v is not None and v.kind is Kind.PYTHON and not v.is_mapping and v.const is not None
                      for v in values):
        return PYTHON_VALUE
    if values and all(v is not None and v.is_mapping for v in values):
        return mapping(None)  # `isinstance(data, Mapping)`: a dict where it holds, no tensor
    if len(values) == 1 and values[0] is not None and values[0].kind is not Kind.TENSOR \
            and values[0].cls is not None:
        # one class of the checked code an annotation makes an instance of (a module that defines `forward`,
        # a dataclass): `isinstance(m, Observer)` over `model.modules()` makes `m.min_val` its buffer
        return values[0]
    return None


def union_members(program: "ProgramView", ann: cst.BaseExpression) -> list[Value | None] | None:
    """What each member of a union annotation (``Union[A, B]``, ``A | B``, ``Optional[A]``) promises, None
    among them for a member that promises nothing the analysis uses; None when ``ann`` is no union."""
    if type(ann) is cst.SimpleString:
        try:
            return union_members(program, cst.parse_expression(ann.evaluated_value))
        except Exception:
            return None
    written = (dotted_name(ann.value) or "") if type(ann) is cst.Subscript else ""
    base = program.index.resolve(written) or written
    if type(ann) is cst.BinaryOperation and type(ann.operator) is cst.BitOr:
        parts = [ann.left, ann.right]
    elif base in ("Union", "typing.Union", "Optional", "typing.Optional"):
        parts = [el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]  # type: ignore[union-attr]
        if base.endswith("Optional"):
            parts.append(cst.Name("None"))
    else:
        return None
    out: list[Value | None] = []
    for part in parts:
        inner = union_members(program, part)
        out += inner if inner is not None else [annotation_value(program, part)]
    return out


def narrowed_union(program: "ProgramView", members: list[Value | None], classes: cst.BaseExpression,
                   holds: bool) -> Value | None:
    """What a value of a union is where ``isinstance(x, classes)`` holds (``holds``) or fails, when the test
    is by a container class (``dict``, ``list``, ``tuple``, their ``typing`` names), by a number class (``float``,
    ``int``) or by ``torch.Tensor`` and every member says which side it is on (``Union[Tensor, Dict[str, Tensor]]``:
    a tensor where ``isinstance(x, dict)`` fails; ``Union[float, Tensor]`` one where ``isinstance(x, float)``
    fails); None otherwise."""
    parts = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    kinds = set()
    for part in parts:
        text = dotted_name(part) or ""
        resolved = program.index.resolve(text) or text
        if text in _MAPPING_ANNOTATIONS or resolved in _MAPPING_ANNOTATIONS:
            kinds.add("mapping")
        elif text in ("list", "tuple") or resolved in ("typing.List", "typing.Tuple"):
            kinds.add("sequence")
        elif resolved == "torch.Tensor":
            kinds.add("tensor")
        elif text in ("int", "float") or resolved in ("numbers.Number", "numbers.Real"):
            kinds.add("number")  # (a number member of the union is taken for one these classes admit)
        else:
            return None
    kept: list[Value | None] = []
    for m in members:
        if m is None:
            return None
        kind = "mapping" if m.is_mapping else "sequence" if m.kind is Kind.SEQUENCE \
            else "tensor" if m.kind is Kind.TENSOR and m.cls is None and m.qualname is None \
            else "none" if m.kind is Kind.PYTHON and m.has_const and m.const is None \
            else "number" if m.kind is Kind.PYTHON and not m.is_bool and m.qualname is None else None
        if kind is None:
            return None
        if (kind in kinds) is holds:
            kept.append(m)
    return _union(kept) if kept else None


def _type_variable_bound(program: "ProgramView", call: cst.Call) -> Value | None:
    """What a type variable promises, ``T = TypeVar("T", bound=np.ndarray | Tensor)`` used as an annotation:
    what its bound promises (a value of ``T`` is one of the bound's types); None without a bound."""
    name = dotted_name(call.func) or ""
    if (program.index.resolve(name) or name) not in ("typing.TypeVar", "typing_extensions.TypeVar"):
        return None
    bound = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "bound"), None)
    return annotation_value(program, bound) if bound is not None else None


def _union_part(program: "ProgramView", ann: cst.BaseExpression) -> Value | None:
    """What one member of a union promises; a NumPy array among tensors too (see :func:`_union`)."""
    if names_numpy_array(program, ann):
        return tensor(assumed=True).with_(qualname=K.NUMPY_ARRAY)
    if type(ann) is cst.BinaryOperation and type(ann.operator) is cst.BitOr:
        return _union([_union_part(program, ann.left), _union_part(program, ann.right)])
    return annotation_value(program, ann)


def _optional(inner: Value | None) -> Value | None:
    if inner is None:
        return None
    # (a generator that may be None: `torch.randn(..., generator=None)` is traced)
    return inner.with_(maybe_none=True) if inner.kind is Kind.TENSOR or inner.qualname == K.TORCH_GENERATOR \
        else inner


def _union(parts: list[Value | None]) -> Value | None:
    """What ``A | B | ...`` promises. A NumPy array is only promised with a tensor (``np.ndarray | Tensor``):
    Dynamo holds either as a tensor, so the value is a tensor that may be an array (an assumed one, as an
    untyped argument of compiled code is: ``isinstance(x, np.ndarray)`` narrows it); an array alone promises
    nothing."""
    rest = [p for p in parts if not (p is not None and p.kind is Kind.PYTHON and p.const is None)]
    has_none = len(rest) < len(parts)
    arrays = [p for p in rest if p is not None and p.qualname == K.NUMPY_ARRAY and p.assumed]
    if arrays:
        if len(arrays) == len(rest) or not all(p is not None and p.kind is Kind.TENSOR for p in rest):
            return None
        return tensor(assumed=True, maybe_none=has_none or any(p.maybe_none for p in rest if p is not None))
    if len(rest) == 1:
        return _optional(rest[0]) if has_none else rest[0]
    if rest and all(p is not None and p.kind is Kind.PYTHON for p in rest):
        return PYTHON_VALUE
    return None
