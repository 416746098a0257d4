"""Name resolution: module-level names, qualified names (in other checked files through the
project, else as library names) and annotation aliases.
"""
from __future__ import annotations


from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.interface import ProgramParts
from dynalint.analysis.program_part import ProgramPart
from dynalint.analysis import knowledge as K
from dynalint.analysis.class_model import _strip_const
from dynalint.analysis.evaluator import FunctionEvaluator, annotation_value
from dynalint.analysis.interprocedural import MAX_CALL_DEPTH
from dynalint.analysis.project import absolute
from dynalint.analysis.replay import interface_token
from dynalint.analysis.syntax import dotted_name
from dynalint.analysis.values import (
    PYTHON_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join_all,
    python,
    tensor,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.memo import Memo




class NameResolution(ProgramPart["ProgramParts"]):
    """Resolves the names of one module for its :class:`~dynalint.analysis.program.Program`:
    module-level names, qualified names (in other checked files through the project, else as library
    names) and annotation aliases.  Owns the memos ``globals`` (name -> the join of what its
    assignments bind) and ``aliases`` (name -> what it promises as an annotation), registered in the
    program's memos so that a replay finds them by name."""

    def __init__(self, program: "ProgramParts") -> None:
        super().__init__(program)
        self._globals: "Memo[str, Value]" = program.memo("globals")
        self._aliases: "Memo[str, Value | None]" = program.memo("aliases")


    def global_value(self, name: str) -> Value | None:
        """Value of a module-level name, or None if the module does not bind it."""
        program = self.program
        idx = program.index
        if name in idx.functions:
            fn = idx.functions[name]
            if program.tracker is not None:
                program.tracker.touch(interface_token(fn))
            return Value(Kind.FUNCTION, func=fn)
        if name in idx.classes:
            program.classes.touch_class(idx.classes[name])
            return Value(Kind.FUNCTION, cls=idx.classes[name])
        if name in idx.imports:
            return self.qualified_value(idx.imports[name])
        if name in idx.globals:
            return self._globals.get(name, lambda: self._assigned_global(name), lambda: UNKNOWN_VALUE)
        return None

    def _assigned_global(self, name: str) -> Value:
        """The join of what a module-level name's assignments bind."""
        program = self.program
        idx = program.index
        ev = FunctionEvaluator(program, None, {}, emit=False, depth=MAX_CALL_DEPTH)
        values = [ev.expr(e) if e is not None else UNKNOWN_VALUE for e in idx.globals[name]]
        v = join_all(values)
        if not (len(values) == 1 and isinstance(v.const, (bool, str)) and name not in idx.mutated_globals):
            # a flag or a name bound once and never rebound decides branches while Dynamo traces
            # (`TRACE = False` ... `if TRACE: print(...)` traces nothing; `MODE = "fast"`)
            v = _strip_const(v)
        return v

    def qualified_value(self, q: str) -> Value:
        if self.program.project is not None:
            found = self._project_value(q)
            if found is not None:
                return found
        head, _, last = q.rpartition(".")
        if head == "torch" and last in K.TORCH_DTYPE_NAMES:
            return python(is_bool=False).with_(qualname=q)
        if head == "math" and last in ("pi", "e", "inf", "nan", "tau"):
            return PYTHON_VALUE
        if last == "__self__" and head.rpartition(".")[0] == "numpy.random":
            return Value(Kind.UNKNOWN, qualname=K.NUMPY_GLOBAL_GENERATOR)  # `np.random.random.__self__`
        return Value(Kind.UNKNOWN, qualname=q)

    def _absolute(self, q: str) -> str:
        index = self.program.index
        return absolute(q, index.name, index.path.endswith("__init__.py"))

    def _project_value(self, q: str) -> Value | None:
        """An imported name defined in another checked module: its function, class or value."""
        program = self.program
        assert program.project is not None
        full = self._absolute(q)
        r = program.project.resolve(full)
        if r is None:
            return Value(Kind.UNKNOWN, qualname=full) if full != q else None
        if r.index is None:
            return Value(Kind.UNKNOWN, qualname=r.module)  # a module: its attributes resolve in turn
        if r.index is program.index:
            return self.global_value(r.name)
        return program.program_for(r.index).names.global_value(r.name)

    def annotation_alias(self, name: str) -> Value | None:
        """What a module-level alias (``OptTensor = Optional[Tensor]``, or one imported) promises."""
        return self._aliases.get(name, lambda: self._alias_value(name), lambda: None)  # recursive: nothing

    def _alias_value(self, name: str) -> Value | None:
        result: Value | None = None
        program = self.program
        index = program.index
        exprs = index.globals.get(name)
        if "." in name or name in index.classes:
            return self._annotation_class(name)
        if exprs and len(exprs) == 1 and exprs[0] is not None and name not in index.functions \
                and name not in index.classes:
            result = annotation_value(program, exprs[0])
        elif name in index.imports and program.project is not None:
            full = self._absolute(index.imports[name])
            r = program.project.resolve(full) or program.project.assigned_outside(full)
            if r is not None and r.index is not None and r.name in r.index.globals:
                result = program.program_for(r.index).names.annotation_alias(r.name)
            else:
                result = self._annotation_class(name)
        return result

    def static_value(self, dotted: str) -> Value | None:
        """The class, function or value a dotted name denotes, without evaluating code (a method named
        through its class, ``Model.forward``, stands for the class's function)."""
        head, _, rest = dotted.partition(".")
        v = self.global_value(head)
        for part in rest.split(".") if rest else ():
            if v is None or v.qualname is None:
                return None
            v = self.qualified_value(f"{v.qualname}.{part}")
        if v is not None and v.kind is Kind.FUNCTION and v.cls is not None:
            return Value(Kind.FUNCTION, cls=v.cls)
        return v

    def static_value_of(self, node: cst.BaseExpression) -> Value | None:
        """:meth:`static_value` of an expression that is a dotted name (None for any other)."""
        dotted = dotted_name(node)
        return self.static_value(dotted) if dotted is not None else None

    def _annotation_class(self, dotted: str) -> Value | None:
        """A class named in an annotation: a subclass of ``torch.Tensor`` promises a tensor, an instance of
        that class (its own methods are analysed)."""
        program = self.program
        v = self.static_value(dotted)
        if v is not None and v.cls is not None and program.classes.is_tensor_class(v.cls):
            return tensor().with_(cls=v.cls)
        if v is not None and v.cls is not None and v.kind is Kind.FUNCTION \
                and program.classes.is_record(v.cls):
            return program.classes.instance(v.cls)  # a dataclass or NamedTuple of the checked files
        if v is not None and v.cls is not None and v.kind is Kind.FUNCTION and v.cls.is_module \
                and v.cls.find_method("forward") is not None:
            # a module class of the checked files that defines its computation (`model: Net`): an instance of
            # it, whose `forward` a call runs (a base class without one says nothing of the subclass passed)
            return program.classes.instance(v.cls)
        return None
