"""Name resolution: module-level names, qualified names (in other checked files through the
project, else as library names) and annotation aliases.
"""
from __future__ import annotations

from dynalint.analysis import knowledge as K
from dynalint.analysis.class_model import _strip_const
from dynalint.analysis.evaluator import FunctionEvaluator, annotation_value
from dynalint.analysis.interprocedural import MAX_CALL_DEPTH
from dynalint.analysis.project import absolute
from dynalint.analysis.replay import interface_token
from dynalint.analysis.values import (
    PYTHON_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join_all,
    python,
    tensor,
)

_TORCH_DTYPES = frozenset({
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8", "int16", "int32",
    "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn",
    "float8_e5m2", "qint8", "quint8", "strided", "sparse_coo", "contiguous_format", "channels_last",
    "preserve_format",
})


class NameResolution:
    """The name part of :class:`~dynalint.analysis.program.Program`."""

    def global_value(self, name: str) -> Value | None:
        """Value of a module-level name, or None if the module does not bind it."""
        idx = self.index
        if name in idx.functions:
            fn = idx.functions[name]
            if self.tracker is not None:
                self.tracker.touch(interface_token(fn))
            return Value(Kind.FUNCTION, func=fn)
        if name in idx.classes:
            self.touch_class(idx.classes[name])
            return Value(Kind.FUNCTION, cls=idx.classes[name])
        if name in idx.imports:
            return self.qualified_value(idx.imports[name])
        if name in idx.globals:
            return self._globals.get(name, lambda: self._assigned_global(name), lambda: UNKNOWN_VALUE)
        return None

    def _assigned_global(self, name: str) -> Value:
        """The join of what a module-level name's assignments bind."""
        idx = self.index
        ev = FunctionEvaluator(self, None, {}, emit=False, depth=MAX_CALL_DEPTH)
        values = [ev.expr(e) if e is not None else UNKNOWN_VALUE for e in idx.globals[name]]
        v = join_all(values)
        if not (len(values) == 1 and isinstance(v.const, bool) and name not in idx.mutated_globals):
            # a flag bound once and never rebound decides branches while Dynamo traces
            # (`TRACE = False` ... `if TRACE: print(...)` traces nothing)
            v = _strip_const(v)
        return v

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
        if last == "__self__" and head.rpartition(".")[0] == "numpy.random":
            return Value(Kind.UNKNOWN, qualname=K.NUMPY_GLOBAL_GENERATOR)  # `np.random.random.__self__`
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
        return self._aliases.get(name, lambda: self._alias_value(name), lambda: None)  # recursive: nothing

    def _alias_value(self, name: str) -> Value | None:
        result: Value | None = None
        exprs = self.index.globals.get(name)
        if "." in name or name in self.index.classes:
            return self._annotation_class(name)
        if exprs and len(exprs) == 1 and exprs[0] is not None and name not in self.index.functions \
                and name not in self.index.classes:
            result = annotation_value(self, exprs[0])
        elif name in self.index.imports and self.project is not None:
            r = self.project.resolve(self._absolute(self.index.imports[name]))
            if r is not None and r.index is not None and r.name in r.index.globals:
                result = self.program_for(r.index).annotation_alias(r.name)
            else:
                result = self._annotation_class(name)
        return result

    def _annotation_class(self, dotted: str) -> Value | None:
        """A class named in an annotation: a subclass of ``torch.Tensor`` promises a tensor, an instance of
        that class (its own methods are analysed)."""
        v = self._static_dotted(dotted)
        if v is not None and v.cls is not None and self.is_tensor_class(v.cls):
            return tensor().with_(cls=v.cls)
        if v is not None and v.cls is not None and v.kind is Kind.FUNCTION and self.is_record(v.cls):
            return self.instance(v.cls)  # a dataclass or NamedTuple of the checked files
        return None
