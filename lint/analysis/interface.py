"""What the per-function evaluator and the whole-program analysis need from each other.

:mod:`dynalint.analysis.evaluator` and :mod:`dynalint.analysis.calls` talk to
the program only through :class:`ProgramView`, and :mod:`dynalint.analysis.calls`
to the evaluator only through :class:`EvaluatorView`, so that the data flows one
way (program -> evaluator -> events) and the modules do not import each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from dynalint.analysis.evaluator.evidence import Evidence
    from dynalint.analysis.events import Event
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex
    from dynalint.analysis.replay import Tracker
    from dynalint.analysis.values import Value


class NamesView(Protocol):
    """The names of the module (:class:`~dynalint.analysis.name_resolution.NameResolution`)."""

    def global_value(self, name: str) -> "Value | None":
        """Value of a module-level name, or None when the module does not bind it."""

    def qualified_value(self, q: str) -> "Value":
        """Value of an imported, qualified name (``torch.nn.functional.relu``, ``.utils.helper``)."""

    def annotation_alias(self, name: str) -> "Value | None":
        """What a module-level type alias (``OptTensor = Optional[Tensor]``) promises, if it is one."""


class ClassesView(Protocol):
    """The classes of the module (:class:`~dynalint.analysis.class_model.ClassModel`)."""

    def touch_class(self, cls: "ClassInfo") -> None:
        """The analysis reads the shell of ``cls`` and of its bases (see :mod:`dynalint.analysis.replay`)."""

    def is_tensor_class(self, cls: "ClassInfo") -> bool:
        """A class deriving (through checked files) from ``torch.Tensor``."""

    def instance(self, cls: "ClassInfo | None") -> "Value": ...

    def construct(self, cls: "ClassInfo", args: "list[Value]", kwargs: "dict[str, Value]", opaque: bool
                  ) -> "Value": ...

    def member(self, base: "Value", attr: str) -> "Value": ...

    def class_attrs(self, cls: "ClassInfo") -> "dict[str, Value]": ...


class SignaturesView(Protocol):
    """The signatures of the module's functions (:class:`~dynalint.analysis.signatures.Signatures`)."""

    def declared_types(self, fn: "FunctionInfo") -> "dict[str, Value]":
        """Types a function's parameter annotations (or type comment) declare, by name."""


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

    def call_function(self, caller: "EvaluatorView", fn: "FunctionInfo", args: "list[Value]",
                      kwargs: "dict[str, Value]", bound_self: "Value | None", opaque: bool) -> "Value": ...

    def call_module(self, caller: "EvaluatorView", module: "Value", args: "list[Value]",
                    kwargs: "dict[str, Value]", opaque: bool) -> "Value": ...

    def prepare_function(self, info: "FunctionInfo") -> None: ...

    def note_nested(self, fn: "FunctionInfo") -> None: ...

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

    def report(self, event_type: type, node: "cst.CSTNode", **kw: Any) -> None: ...

    def is_self(self, node: "cst.CSTNode") -> bool: ...

    def is_builtin(self, func: "cst.CSTNode", name: str) -> bool: ...

    def use_scalar(self, v: "Value", node: "cst.CSTNode", context: str = "") -> None: ...

    def tensor_evidence(self, v: "Value") -> None: ...

    def not_tensor_evidence(self, v: "Value") -> None: ...

    def forget_entries(self, node: "cst.BaseExpression") -> None:
        """A method call may have changed the dict or record ``node`` names: what its keys hold is not
        known."""
