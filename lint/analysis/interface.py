"""What the per-function evaluator and the whole-program analysis need from each other.

:mod:`dynalint.analysis.evaluator` and :mod:`dynalint.analysis.calls` talk to
the program only through :class:`ProgramView`, and :mod:`dynalint.analysis.calls`
to the evaluator only through :class:`EvaluatorView`, so that the data flows one
way (program -> evaluator -> events) and the modules do not import each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from dynalint.analysis.evaluator.evidence import Evidence
    from dynalint.analysis.events import Event
    from dynalint.analysis.memo import Memo
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex
    from dynalint.analysis.project import SourceIndex
    from dynalint.analysis.replay import Tracker
    from dynalint.analysis.values import Value
    from dynalint.config.settings import Scope, Settings


class NamesView(Protocol):
    """The names of the module (:class:`~dynalint.analysis.name_resolution.NameResolution`)."""

    def global_value(self, name: str) -> "Value | None":
        """Value of a module-level name, or None when the module does not bind it."""

    def qualified_value(self, q: str) -> "Value":
        """Value of an imported, qualified name (``torch.nn.functional.relu``, ``.utils.helper``)."""

    def annotation_alias(self, name: str) -> "Value | None":
        """What a module-level type alias (``OptTensor = Optional[Tensor]``) promises, if it is one."""

    def static_value(self, dotted: str) -> "Value | None":
        """The class, function or value a dotted name denotes, without evaluating code."""

    def static_value_of(self, node: "cst.BaseExpression") -> "Value | None": ...


class ClassesView(Protocol):
    """The classes of the module (:class:`~dynalint.analysis.class_model.ClassModel`)."""

    def touch_class(self, cls: "ClassInfo") -> None:
        """The analysis reads the shell of ``cls`` and of its bases (see :mod:`dynalint.analysis.replay`)."""

    def is_tensor_class(self, cls: "ClassInfo") -> bool:
        """A class deriving (through checked files) from ``torch.Tensor``."""

    def instance(self, cls: "ClassInfo | None") -> "Value": ...

    def construct(self, cls: "ClassInfo", args: "list[Value]", kwargs: "dict[str, Value]", opaque: bool
                  ) -> "Value": ...

    def member(self, base: "Value", attr: str, reader: "EvaluatorView | None" = None) -> "Value": ...

    def class_attrs(self, cls: "ClassInfo") -> "dict[str, Value]": ...

    def has_optional_keys(self, cls: "ClassInfo") -> bool: ...

    def record_fields(self, cls: "ClassInfo") -> "list[str]": ...

    def is_record(self, cls: "ClassInfo") -> bool:
        """A dataclass or NamedTuple (or a subclass of one)."""

    def attr_set_later(self, cls: "ClassInfo", attr: str) -> "Value | None": ...

    def static_forward(self, cls: "ClassInfo") -> "FunctionInfo | None":
        """The static ``forward`` of an ``autograd.Function`` of the checked files."""


class SignaturesView(Protocol):
    """The signatures of the module's functions (:class:`~dynalint.analysis.signatures.Signatures`)."""

    def declared_types(self, fn: "FunctionInfo") -> "dict[str, Value]":
        """Types a function's parameter annotations (or type comment) declare, by name."""

    def declared_return(self, fn: "FunctionInfo") -> "Value | None": ...

    def init_env(self, init: "FunctionInfo") -> "dict[str, Value]": ...

    def has_tensor_params(self, fn: "FunctionInfo") -> bool: ...

    def caller_search(self, fn: "FunctionInfo", depth: int, search: "Callable[[], Any]") -> Any:
        """What ``search`` finds of the calls of ``fn``, computed once per analysis."""


class EntryPointsView(Protocol):
    """Where the module's analysis starts (:class:`~dynalint.analysis.entry_points.EntryPoints`)."""

    entered: "set[int]"
    """Functions whose parameters are the graph's inputs (handed to torch.compile, or configured)."""

    def compile_target(self, call: "cst.Call", where: "FunctionInfo | None"
                       ) -> "tuple[FunctionInfo, ClassInfo | None] | None": ...


class CallsView(Protocol):
    """The analysis of calls (:class:`~dynalint.analysis.interprocedural.Interprocedural`)."""

    def call_function(self, caller: "EvaluatorView", fn: "FunctionInfo", args: "list[Value]",
                      kwargs: "dict[str, Value]", bound_self: "Value | None", opaque: bool) -> "Value":
        """A call into a function of the checked files, analysed with the caller's argument values."""

    def call_module(self, caller: "EvaluatorView", module: "Value", args: "list[Value]",
                    kwargs: "dict[str, Value]", opaque: bool) -> "Value":
        """A call of an ``nn.Module`` instance (its ``forward``)."""

    def prepare_function(self, info: "FunctionInfo") -> None:
        """A function defined inside analysed code, made ready to be called."""

    def note_nested(self, fn: "FunctionInfo") -> None:
        """A function defined inside analysed code, analysed on its own under scope ALL."""

    def function_named(self, qualname: str) -> "FunctionInfo | None": ...

    def note_outgoing(self, fn: "FunctionInfo", env: "dict[str, Value] | None", compiled: bool = False,
                      bound: "ClassInfo | None" = None) -> None:
        """A function of another checked module is reached from compiled code."""


class ProgramParts(Protocol):
    """What the parts of a module's analysis (:class:`~dynalint.analysis.name_resolution.NameResolution`,
    :class:`~dynalint.analysis.class_model.ClassModel`, :class:`~dynalint.analysis.signatures.Signatures`,
    :class:`~dynalint.analysis.entry_points.EntryPoints`) read of the program they belong to, and of each
    other through it (the program imports them, so they name it only here)."""

    index: "ModuleIndex"
    tracker: "Tracker | None"
    project: "SourceIndex | None"
    scope: "Scope"
    entries: "dict[str, Any]"
    """Incoming entries: qualname -> encoded argument values (see the program)."""
    entry_patterns: "tuple[str, ...]"
    names: NamesView
    classes: ClassesView
    signatures: SignaturesView
    entry_points: EntryPointsView
    calls: CallsView

    def program_for(self, owner: "ModuleIndex | None") -> "ProgramParts": ...

    def memo(self, name: str, remember: bool = True) -> "Memo": ...


class ProgramView(Protocol):
    """The module a function belongs to, as the evaluator sees it."""

    index: "ModuleIndex"
    events: "list[Event]"
    values: "dict[int, Value] | None"
    tracker: "Tracker | None"
    """Records what the analysis reads, for replaying it after an edit (None: not recorded)."""
    names: NamesView
    classes: ClassesView
    signatures: SignaturesView
    calls: CallsView
    scope: "Scope"
    widening: bool
    """Analysing a function only scope ALL makes a root."""
    settings: "Settings | None"
    """The settings the analysis runs under (the defaults when None): the torch version a version check in the
    code is decided for, among them."""

    def may_break_at(self, ev: "Event") -> bool:
        """Whether Dynamo, under the analysis's capture settings, may break the graph at this event."""


class EvaluatorView(Protocol):
    """The evaluation of one function body in one calling context, as a call's analysis sees it."""

    p: ProgramView
    fn: "FunctionInfo | None"
    emit: bool
    """Reporting pass (events are kept), not a silent one."""
    depth: int
    loop_depth: int
    outer_loop: bool
    callee_broke: bool
    self_name: str | None
    env: "dict[str, Value]"
    evidence: "Evidence | None"
    attr_sink: "dict[str, Value] | None"

    def expr(self, node: "cst.BaseExpression | None") -> "Value": ...

    def attribute(self, base: "Value", attr: str, node: "cst.CSTNode") -> "Value": ...

    def in_loop(self) -> bool:
        """A break at the current statement is one Dynamo cannot resume from, being inside a loop."""
        ...

    def report(self, event_type: type, node: "cst.CSTNode", **kw: Any) -> None: ...

    def is_self(self, node: "cst.CSTNode") -> bool: ...

    def is_state(self, node: "cst.CSTNode") -> bool: ...

    def is_builtin(self, func: "cst.CSTNode", name: str) -> bool: ...

    def use_scalar(self, v: "Value", node: "cst.CSTNode", context: str = "") -> None: ...

    def tensor_evidence(self, v: "Value") -> None: ...

    def not_tensor_evidence(self, v: "Value") -> None: ...

    def forget_entries(self, node: "cst.BaseExpression") -> None:
        """A method call may have changed the dict or record ``node`` names: what its keys hold is not
        known."""

    def grow_sequence(self, node: "cst.BaseExpression", added: "Value") -> None:
        """``xs.append(v)``: the list ``node`` names may hold ``v`` now."""
