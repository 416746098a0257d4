"""The rule interface.

A rule is a class with its code, documentation and examples.  It reads the
events and graph breaks of the analysis (:mod:`dynalint.analysis.events`,
:mod:`dynalint.analysis.breaks`) and yields :class:`Finding` objects, never
walking the tree itself; the engine turns findings into diagnostics
(positions, noqa, select/ignore).

Every rule carries ``VALID`` and ``INVALID`` :class:`Example` lists.  The test
suite checks them statically (INVALID examples are flagged on the lines they state, VALID ones are not)
*and* runs them through real TorchDynamo: graph-break rules' INVALID examples
must break at the flagged line and VALID ones must not; recompile rules'
INVALID examples must recompile over their input stream.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterable, Iterator, Literal, TypeVar

import libcst as cst

from dynalint.core.gb_types import GraphBreakType
from dynalint.core.noqa import NoqaMap
from dynalint.core.positions import Range, node_ranges

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Break, Breaks
    from dynalint.analysis.events import Event
    from dynalint.analysis.program import Program
    from dynalint.config.settings import Settings

Kind = Literal["graph-break", "recompile", "error", "warning"]
E = TypeVar("E", bound="Event")


#: a graph break inside a for/while loop: Dynamo skips the whole frame (measured on torch 2.13:
#: "graph break in a for/while loop", the function runs eagerly)
LOOP_NOTE = " Inside a loop, Dynamo then gives up on the whole function and runs it eagerly."


#: the same, for code nothing in the checked files compiles (checked because a caller may compile it)
UNCOMPILED_LOOP_NOTE = " Nothing in the checked files compiles `{name}` (it is checked for its tensor " \
    "parameters); compiled, it would run eagerly: inside a loop, Dynamo gives up on the whole function."


def loop_note(event: object) -> str:
    """:data:`LOOP_NOTE` for an event inside a loop, else nothing."""
    return LOOP_NOTE if getattr(event, "in_loop", False) else ""


@dataclass(frozen=True)
class Example:
    """A code example of a rule, runnable under Dynamo.

    ``code`` is a complete module body (imports included).  ``inputs`` is a
    Python expression, evaluated in that module's namespace, giving the list of
    argument tuples for successive calls of ``target`` (a function, or an
    ``nn.Module`` class built with ``init``).  ``between_calls`` is a statement
    run before each call with ``i`` bound to the call index (to change a global,
    an attribute or an environment variable).  ``settings`` are dynalint settings
    (and the matching Dynamo config) under which the example holds.
    """

    code: str
    inputs: str = "[(torch.randn(4),)]"
    target: str | None = None
    init: str = "()"
    between_calls: str | None = None
    settings: dict = field(default_factory=dict)
    dynamo: bool = True
    """Whether the example can be checked against Dynamo (False for examples
    that only make sense statically, e.g. code that needs other files)."""
    compile_target: bool = True
    """False when ``target`` is plain Python that calls compiled code (it is then called as is)."""
    line: int | tuple[int, ...] = ()
    """For an INVALID example: the line of :attr:`source` the finding is on (several for an example
    with several findings), which the test suite checks."""

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).strip("\n") + "\n"

    @property
    def lines(self) -> tuple[int, ...]:
        """:attr:`line` as a tuple."""
        return (self.line,) if isinstance(self.line, int) else self.line


@dataclass(frozen=True)
class Finding:
    rule: "type[Rule]"
    node: cst.CSTNode
    statement: cst.CSTNode
    message: str
    gb: GraphBreakType | None = None
    hint: str | None = None
    brk: "Break | None" = None
    """The graph break a graph-break finding reports."""
    remedy: str | None = None
    """The ``torch._dynamo.config`` flag that keeps the reported operation in the graph, if one does."""


class RuleContext:
    """The analysis of one module, as the rules and then the fixers read it (the fixers' context is
    made from it): the analysed program, its events and graph breaks (classified once), the settings,
    and the text with its ``# noqa`` comments and the positions of nodes in it.

    ``source``: the text the module was parsed from (None: the module's code, generated when first
    asked); ``noqa``: its ``# noqa`` comments, when the engine read them already."""

    def __init__(self, program: "Program", settings: "Settings", source: str | None = None,
                 noqa: NoqaMap | None = None) -> None:
        self.program = program
        self.settings = settings
        self._source = source
        self._noqa = noqa
        self._ranges: dict[int, Range] = {}
        self._by_type: dict[type, list] = {}
        for ev in program.events:
            self._by_type.setdefault(type(ev), []).append(ev)
        self._breaks: Breaks | None = None

    @property
    def source(self) -> str:
        """The module's text (positions and ``# noqa`` comments are read in it)."""
        if self._source is None:
            self._source = self.program.module.code
        return self._source

    @property
    def noqa(self) -> NoqaMap:
        """The ``# noqa`` comments of the module's text."""
        if self._noqa is None:
            self._noqa = NoqaMap(self.source)
        return self._noqa

    def ranges(self, nodes: Iterable[cst.CSTNode]) -> dict[int, Range]:
        """The source ranges of ``nodes`` (by ``id``), each found once (those of the findings are known
        from the engine, see :meth:`know_ranges`)."""
        nodes = list(nodes)
        missing = [n for n in nodes if id(n) not in self._ranges]
        if missing:
            self._ranges.update(node_ranges(self.program.module, self.source, missing))
        return {id(n): self._ranges[id(n)] for n in nodes if id(n) in self._ranges}

    def know_ranges(self, ranges: dict[int, Range]) -> None:
        """Ranges of nodes (by ``id``) the engine found already."""
        self._ranges.update(ranges)

    def loop_note(self, at: "Event | Break") -> str:
        """:func:`loop_note`, worded for code that nothing in the checked files compiles: the function
        runs eagerly only if a caller compiles it."""
        if not getattr(at, "in_loop", False):
            return ""
        event = getattr(at, "event", at)
        if self.program.uncompiled(event):
            return UNCOMPILED_LOOP_NOTE.format(name=event.function.name)
        return LOOP_NOTE

    def events(self, event_type: type[E]) -> list[E]:
        return self._by_type.get(event_type, [])

    @property
    def breaks(self) -> "Breaks":
        """The graph breaks of the analysed code under these settings (found once, for every rule and
        fixer; the events the evaluator classified while it ran are not classified again)."""
        if self._breaks is None:
            from dynalint.analysis.breaks import find_breaks

            from dynalint.config.settings import Settings

            program = self.program
            same = (program.settings or Settings()) == self.settings
            self._breaks = find_breaks(program, self.settings, program.break_classifier() if same else None)
        return self._breaks

    def code(self, node: cst.CSTNode, limit: int = 60) -> str:
        """Source text of a node, on one line, shortened."""
        text = " ".join(self.program.module.code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def at_least(self, major: int, minor: int) -> bool:
        return self.settings.target_torch >= (major, minor)


class Rule:
    """Base class: subclasses set the class attributes and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    kind: ClassVar[Kind] = "graph-break"
    summary: ClassVar[str]
    rationale: ClassVar[str]
    fix: ClassVar[str]
    gb_types: ClassVar[tuple[GraphBreakType, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ()
    """Configuration keys that change what the rule reports (documented under "Options")."""
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def check(self, ctx: RuleContext) -> Iterator[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def finding(self, event: "Event", message: str, *, gb: GraphBreakType | None = None,
                hint: str | None = None, node: cst.CSTNode | None = None) -> Finding:
        return Finding(rule=type(self), node=node if node is not None else event.node,
                       statement=event.statement, message=message, gb=gb, hint=hint)

    def reported(self, brk: "Break", message: str, hint: str) -> Finding:
        """The finding of a graph break: at its event, with its Dynamo type and the capture flag, if
        any, that removes it."""
        from dynalint.analysis.breaks import capture_flag

        return Finding(rule=type(self), node=brk.node, statement=brk.statement, message=message, gb=brk.gb,
                       hint=hint, brk=brk, remedy=capture_flag(brk))


class EngineCode(Rule):
    """A code the engine reports itself (a file that does not parse or cannot be read...), documented
    and selected like a rule; it has no analysis of its own."""

    kind: ClassVar[Kind] = "error"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        return iter(())


_REGISTRY: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator adding a rule to the registry (codes are unique)."""
    if cls.code in _REGISTRY and _REGISTRY[cls.code] is not cls:
        raise ValueError(f"duplicate rule code {cls.code}")
    _REGISTRY[cls.code] = cls
    return cls


def all_rules() -> list[type[Rule]]:
    """The analysis rules (graph breaks and recompile hazards)."""
    from dynalint import rules as _rules  # noqa: F401  (imports every rule module)

    _rules.load()
    return [_REGISTRY[c] for c in sorted(_REGISTRY) if not issubclass(_REGISTRY[c], EngineCode)]


def all_codes() -> list[type[Rule]]:
    """Every code dynalint reports: the engine's (DYN0xx) and the rules'."""
    from dynalint import rules as _rules  # noqa: F401

    _rules.load()
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get_rule(code: str) -> type[Rule] | None:
    """An analysis rule by code (None for the engine's codes, which cannot be suppressed per line)."""
    rule = get_code(code)
    return None if rule is None or issubclass(rule, EngineCode) else rule


def get_code(code: str) -> type[Rule] | None:
    """Any documented code, the engine's included."""
    all_codes()
    return _REGISTRY.get(code.upper())
