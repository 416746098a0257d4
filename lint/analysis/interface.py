"""What the per-function evaluator needs from the whole-program analysis.

:mod:`dynalint.analysis.evaluator` and :mod:`dynalint.analysis.calls` talk to
the program only through this protocol, so that the data flows one way
(program -> evaluator -> events) and the modules do not import each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.evaluator import FunctionEvaluator
    from dynalint.analysis.events import Event
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex
    from dynalint.analysis.values import Value


class ProgramView(Protocol):
    """The module a function belongs to, as the evaluator sees it."""

    index: "ModuleIndex"
    events: "list[Event]"
    values: "dict[int, Value] | None"

    def global_value(self, name: str) -> "Value | None":
        """Value of a module-level name, or None when the module does not bind it."""

    def qualified_value(self, q: str) -> "Value":
        """Value of an imported, qualified name (``torch.nn.functional.relu``, ``.utils.helper``)."""

    def annotation_alias(self, name: str) -> "Value | None":
        """What a module-level type alias (``OptTensor = Optional[Tensor]``) promises, if it is one."""

    def declared_types(self, fn: "FunctionInfo") -> "dict[str, Value]":
        """Types a function's parameter annotations (or type comment) declare, by name."""

    def instance(self, cls: "ClassInfo | None") -> "Value": ...

    def member(self, base: "Value", attr: str) -> "Value": ...

    def class_attrs(self, cls: "ClassInfo") -> "dict[str, Value]": ...

    def call_function(self, caller: "FunctionEvaluator", fn: "FunctionInfo", args: "list[Value]",
                      kwargs: "dict[str, Value]", bound_self: "Value | None", opaque: bool) -> "Value": ...

    def call_module(self, caller: "FunctionEvaluator", module: "Value", args: "list[Value]",
                    kwargs: "dict[str, Value]", opaque: bool) -> "Value": ...

    def prepare_function(self, info: "FunctionInfo") -> None: ...

    def note_nested(self, fn: "FunctionInfo") -> None: ...
