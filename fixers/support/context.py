"""What a fixer sees: the analysed module, its values and events, and helpers to navigate and
generate code.  Built once per analysis round by the fix engine, from the analysis the rules read
(:class:`dynalint.rules.base.RuleContext`): the breaks, ``# noqa`` comments and positions are the
rules' own, never found again."""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, Protocol, TypeVar

import libcst as cst

from dynalint.analysis.breaks import Breaks
from dynalint.analysis.program import Program
from dynalint.analysis.syntax import parent_map, walk
from dynalint.analysis.values import Value
from dynalint.config.settings import Settings
from dynalint.core.noqa import NoqaMap
from dynalint.core.positions import Range
from dynalint.rules.base import RuleContext


T = TypeVar("T")


class Analysed(Protocol):
    """What the fix engine hands a fixer (the engine's ``Analysis``: fixers sit below the engine)."""

    module: cst.Module | None
    program: Program | None
    settings: Settings
    context: RuleContext | None


class FixContext:
    """What a fixer sees: the analysed module and helpers to navigate and generate code."""

    def __init__(self, analysis: Analysed) -> None:
        self.analysis = analysis
        self.module = analysis.module
        self.program = analysis.program
        self.settings = analysis.settings
        context = analysis.context
        self.checked: RuleContext = context if context is not None else RuleContext(analysis.program, analysis.settings)
        """The analysis the rules read (breaks, ``# noqa`` comments, positions)."""
        self._parents: dict[int, cst.CSTNode] | None = None
        self._events: dict[tuple[int, type], object] | None = None
        self._memo: dict[Hashable, object] = {}

    def cached(self, key: Hashable, make: Callable[[], T]) -> T:
        """``make()``, computed once per ``key`` for this analysis round: what a fixer derives from the
        whole analysis (other files' breaks, call edges) is the same for every finding it plans."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[return-value]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def event(self, node: cst.CSTNode, event_type: type):
        """The analysis event of ``event_type`` about ``node``, if any."""
        if self._events is None:
            self._events = {}
            for ev in self.program.events:
                self._events.setdefault((id(ev.node), type(ev)), ev)
        return self._events.get((id(node), event_type))

    @property
    def breaks(self) -> Breaks:
        """The graph breaks of the analysed code (the list the rules reported from)."""
        return self.checked.breaks

    @property
    def noqa(self) -> NoqaMap:
        """The ``# noqa`` comments of the analysed text."""
        return self.checked.noqa

    def ranges(self, nodes: Iterable[cst.CSTNode]) -> dict[int, Range]:
        """The positions of ``nodes`` in the analysed text (by ``id``)."""
        return self.checked.ranges(nodes)

    def value(self, node: cst.CSTNode) -> Value | None:
        values = self.program.values
        found = values.get(id(node)) if values is not None else None
        if found is None and isinstance(node, cst.Attribute):
            found = self._instance_attribute(node)
        return found

    def _instance_attribute(self, node: cst.Attribute) -> Value | None:
        """``self.x`` in a method, when the evaluator recorded no value there: what ``__init__`` and the
        class body bind to ``x``."""
        function = self.enclosing_function(node)
        if function is None or not isinstance(node.value, cst.Name):
            return None
        params = [*function.params.posonly_params, *function.params.params]
        cls = self.parent(self.parent(function))
        if not params or params[0].name.value != node.value.value or not isinstance(cls, cst.ClassDef):
            return None
        info = self.program.index.classes.get(cls.name.value)
        if info is None or info.node is not cls:
            return None
        return self.program.classes.class_attrs(info).get(node.attr.value)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if self._parents is None:
            self._parents = parent_map(self.module)
        return self._parents.get(id(node))

    def statement_line(self, stmt: cst.CSTNode) -> cst.CSTNode:
        """The node that sits in a block's body for ``stmt`` (a small statement's line, or stmt itself)."""
        parent = self.parent(stmt)
        if isinstance(parent, cst.SimpleStatementLine) and len(parent.body) == 1:
            return parent
        return stmt

    def block_of(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, int] | None:
        """(block, index) of a statement line in its enclosing block's body."""
        line = self.statement_line(stmt)
        block = self.parent(line)
        body = getattr(block, "body", None)
        if isinstance(body, (list, tuple)):
            for i, s in enumerate(body):
                if s is line:
                    return block, i
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        cur = self.parent(node)
        while cur is not None and not isinstance(cur, cst.FunctionDef):
            cur = self.parent(cur)
        return cur

    def names_in(self, node: cst.CSTNode) -> set[str]:
        return {n.value for n in walk(node) if isinstance(n, cst.Name)}

    def helper_name(self, function: str, role: str) -> str:
        """A new module-level name for a function made from ``function``: ``_step_compiled`` for ``step``,
        and for ``_step_compiled`` (made before) or ``__call__`` too, not ``__step_compiled_compiled``."""
        return self.fresh_name(f"_{function.strip('_')}_{role}", self.module)

    def fresh_name(self, base: str, scope: cst.CSTNode, taken: set[str] | None = None) -> str:
        used = self.names_in(scope) | (taken or set())
        if base not in used:
            return base
        i = 1
        while f"{base}_{i}" in used:
            i += 1
        return f"{base}_{i}"
