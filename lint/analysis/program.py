"""Whole-program analysis of one module: which functions count as compiled,
what their parameters are, and the interprocedural glue (calls into functions
and ``nn.Module`` classes are analysed with the caller's argument values).

With a :class:`~dynalint.analysis.project.SourceIndex`, names imported from other
checked files resolve to their definitions: calls, base classes, type aliases
and globals cross files.  Each module is analysed by its own :class:`Program`
(names resolve in the module that wrote them); the programs of one analysis
share a :class:`_Run`, and only the events of the module being checked are
kept.  Functions of other modules reached from compiled code are recorded as
*outgoing entries* with the argument values they were called with; the
project pass (:func:`dynalint.engine.runner.project_pass`) hands them to their module's
analysis as *incoming entries*.

The class composes its parts, one module each: objects the program holds, each owning its state.
:attr:`Program.names` (:mod:`~dynalint.analysis.name_resolution`), :attr:`Program.classes`
(:mod:`~dynalint.analysis.class_model`), :attr:`Program.signatures` (:mod:`~dynalint.analysis.signatures`)
and :attr:`Program.entry_points` (:mod:`~dynalint.analysis.entry_points`) read the program through
:class:`~dynalint.analysis.interface.ProgramParts`; :attr:`Program.calls`
(:mod:`~dynalint.analysis.interprocedural`, with the cut replay of :mod:`~dynalint.analysis.cut`)
analyses the entry points and the calls they make, filling the program's events and compiled functions.
"""
from __future__ import annotations

import bisect
import weakref

from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from dynalint.analysis.breaks import BreakClassifier
from dynalint.analysis.capture_settings import CaptureSites, OwnCapture, capture_sites, own_capture
from dynalint.analysis.class_model import ClassModel
from dynalint.analysis.entry_points import EntryPoints
from dynalint.analysis.events import Event
from dynalint.analysis.interprocedural import MAX_CALL_DEPTH, Interprocedural
from dynalint.analysis.memo import Memo
from dynalint.analysis.module_index import FunctionInfo, ModuleIndex, build_index
from dynalint.analysis.name_resolution import NameResolution
from dynalint.analysis.project import SourceIndex
from dynalint.analysis.replay import Tracker
from dynalint.analysis.signatures import Signatures
from dynalint.analysis.values import Value
from dynalint.config.settings import Scope, Settings

__all__ = ["Program", "Scope", "MAX_CALL_DEPTH"]


class _Run:
    """State shared by the programs of one analysis (the checked module and the modules it reaches)."""

    def __init__(self, root: "Program", tracker: Tracker | None) -> None:
        self._root = weakref.ref(root)
        self.tracker = tracker
        """Records the analysis for replaying it after an edit (:mod:`dynalint.analysis.replay`)."""
        self.programs: dict[int, Program] = {}
        """The programs of the other modules the analysis reached, by ``id`` of their index."""
        self.outgoing: dict[tuple[str, str], dict[str, Value]] = {}
        """(path, qualname) of functions of other modules reached from compiled code -> joined arguments."""

    @property
    def root(self) -> "Program":
        """The program of the checked module (held by whoever asked for the analysis: a reference back
        from here would make every analysis a cycle, its tree freed only by a garbage collection)."""
        root = self._root()
        assert root is not None
        return root


@dataclass
class Program:
    """The analysis of one module."""

    module: cst.Module
    scope: Scope = Scope.AUTO
    index: ModuleIndex = field(default=None)  # type: ignore[assignment]
    """Prebuilt index (from the project); built from ``module`` when not given."""
    events: list[Event] = field(default_factory=list)
    compiled: list[FunctionInfo] = field(default_factory=list)
    """Functions analysed as compiled code (roots and what they call)."""
    values: dict[int, Value] | None = None
    """When set to a dict: the value of every expression of compiled code, by ``id(node)``
    (joined over calling contexts). The fixers need it; checking alone does not."""
    project: SourceIndex | None = None
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Incoming entries: qualname of a function of this module -> encoded argument values
    (``"*"``: a compiled entry point, whose parameters are the graph's inputs)."""
    entry_patterns: tuple[str, ...] = ()
    """Glob patterns of qualified names that are compiled entry points (configuration)."""
    settings: Settings | None = None
    """The capture settings the analysis decides graph breaks under (the defaults when None)."""
    run_state: _Run | None = field(default=None, repr=False)
    tracker: Tracker | None = field(default=None, repr=False)
    """For the root program: records the analysis, and replays the one it was made from (see
    :mod:`dynalint.analysis.replay`)."""

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = build_index(self.module)
        if self.run_state is None:
            self.run_state = _Run(self, self.tracker)
        tracker = self.run_state.tracker if self.run_state.root is self else None
        self.tracker = tracker
        self.memos: dict[str, Memo] = {}
        """The memos by name (what a replay puts back), the parts' as well as the program's own."""
        self.names = NameResolution(self)
        """Module-level, qualified and alias names."""
        self.signatures = Signatures(self)
        """Parameters, annotations and the binding of arguments."""
        self.classes = ClassModel(self)
        """Instances, members, properties and class attributes."""
        self.entry_points = EntryPoints(self)
        """Which functions the analysis starts from, and why."""
        self.calls = Interprocedural(self)
        """The analysis of the entry points and of the calls they make."""
        if tracker is not None:
            tracker.memos, tracker.events = self.memos, self.events
        self._graph_ends: BreakClassifier | None = None
        self._capture_sites: CaptureSites | None = None
        self._capture: OwnCapture | None = None
        self._compiled_ids: set[int] = set()
        self.widening = False
        """Analysing a function only scope ALL makes a root: objects it builds are not followed into their
        ``__init__`` (ALL leaves out the ``__init__`` methods, the code that builds a model, as roots)."""
        self._entry_reach: tuple[int, int] | None = None
        """Scope ALL: how many of :attr:`compiled` and of :attr:`events` the entry points reach (those
        marked and found before the first function analysed only because of the scope)."""
        self._uncompiled_span: tuple[int, int] | None = None
        """The slice of :attr:`events` found in functions analysed only because callers outside the
        checked files may compile them (library roots of scope auto, every function in scope all)."""
        self._uncompiled_events: set[int] | None = None
        self.unit_starts: list[int] = []
        """Where in :attr:`events` each analysed unit (an entry point with what it calls, an incoming entry)
        begins: the events of one unit are those of one frame Dynamo traces, in the order it traces them."""
        self._unit_of: dict[int, int] | None = None
        self._compiled_nodes: set[int] = set()
        self._nested: dict[int, FunctionInfo] = {}
        """Scope ALL: functions defined inside analysed code (decorator wrappers, hooks), by ``id(node)``."""

    def memo(self, name: str, remember: bool = True) -> Memo:
        """A new memo, registered under ``name`` (see :mod:`dynalint.analysis.memo`): the part that
        asks for it owns it, and a replay finds it by name in :attr:`memos`."""
        made: Memo = Memo(remember, name, self.tracker)
        self.memos[name] = made
        return made

    def run(self) -> "Program":
        """Analyse the module.  The capture flags its code turns on for one compile call cover the
        functions that call reaches, known once the calls are: the breaks are then classified again
        with them (the evaluator asked under the flags the module turns on everywhere)."""
        self.calls.run()
        sites = self.capture_sites
        if sites.sites:
            self._capture = own_capture(sites, self, self.events)
            if self._capture.functions:
                self._graph_ends = None
        return self

    @property
    def capture_sites(self) -> CaptureSites:
        """Where the module's text turns Dynamo's capture flags on (:mod:`dynalint.analysis.capture_settings`)."""
        if self._capture_sites is None:
            self._capture_sites = capture_sites(self.index)
        return self._capture_sites

    @property
    def capture(self) -> OwnCapture:
        """The capture flags the module's own code turns on, and for which of its functions."""
        if self._capture is None:
            self._capture = self.capture_sites.own
        return self._capture

    @property
    def is_root(self) -> bool:
        return self.run_state is not None and self.run_state.root is self

    @property
    def entry_compiled(self) -> list[FunctionInfo]:
        """The functions Dynamo compiles as the default scope sees it: :attr:`compiled` without those
        analysed only because the scope is ALL (a caller analysed so is still run eagerly, so what
        it passes a compiled function, or sets on a module, is guarded on)."""
        return self.compiled if self._entry_reach is None else self.compiled[:self._entry_reach[0]]

    @property
    def entry_events(self) -> list[Event]:
        """The events of the code :attr:`entry_compiled` holds, as the default scope finds them."""
        return self.events if self._entry_reach is None else self.events[:self._entry_reach[1]]

    def unit_of(self, ev: Event) -> int:
        """The analysed unit (see :attr:`unit_starts`) that found ``ev``."""
        if self._unit_of is None:
            starts = self.unit_starts
            self._unit_of = {id(e): bisect.bisect_right(starts, i) - 1 for i, e in enumerate(self.events)}
        return self._unit_of.get(id(ev), -1)

    def uncompiled(self, ev: Event) -> bool:
        """Whether ``ev`` was found in code nothing in the checked files is known to compile: it is
        checked because its tensor parameters (or the scope) say a caller may compile it."""
        if self._uncompiled_span is None:
            return False
        if self._uncompiled_events is None:
            start, end = self._uncompiled_span
            self._uncompiled_events = {id(e) for e in self.events[start:end]}
        return id(ev) in self._uncompiled_events

    @property
    def outgoing(self) -> dict[tuple[str, str], dict[str, Value]]:
        assert self.run_state is not None
        return self.run_state.outgoing

    def may_break_at(self, ev: Event) -> bool:
        """Whether Dynamo may break the graph at ``ev`` under the analysis's capture settings (see
        :meth:`BreakClassifier.may_break_at`)."""
        return self.break_classifier().may_break_at(ev)

    def break_classifier(self) -> BreakClassifier:
        """The classifier of this program's events under its settings: the evaluator asks it while it
        runs, and the break list the rules and fixers read is made from what it found
        (:func:`dynalint.analysis.breaks.find_breaks`), so no event is classified twice."""
        if self._graph_ends is None:
            self._graph_ends = BreakClassifier(self, self.settings or Settings())
            self._carry_breaks(self._graph_ends)
        return self._graph_ends

    def _carry_breaks(self, classifier: BreakClassifier) -> None:
        """After an edit, the classifier takes over the breaks the analysis before found for the events
        its replayed records put back (see :meth:`BreakClassifier.carry`), which are most of the events of
        an edit of a large module.  Only while the records of the analysis before are
        being replayed (the edit left the module's facts as they were), and with no capture flag in the
        module's text (whose own flags are settled only once the calls are known)."""
        tracker = self.tracker
        if tracker is None or self.capture_sites.sites:
            return
        old = tracker.old.classifier if tracker.old is not None else None
        if old is not None:
            classifier.carry(old)
        tracker.classifier = classifier

    def program_for(self, owner: ModuleIndex | None) -> "Program":
        """The program of the module that defines something (this one when unknown)."""
        if owner is None or owner is self.index:
            return self
        run = self.run_state
        assert run is not None
        if owner is run.root.index:
            return run.root
        prog = run.programs.get(id(owner))
        if prog is None:
            prog = Program(owner.module, scope=Scope.COMPILED, index=owner, project=self.project,
                           settings=self.settings, run_state=run)
            run.programs[id(owner)] = prog
        return prog

    def let_go(self) -> None:
        """Nothing reads this analysis again: undo the links that make it cycles, so that it goes (with
        the trees it holds) as its last reference does, not at a garbage collection, which would walk
        every tree still alive to find it.  The closures of the functions it met defined inside analysed
        code go (a closure holds the value naming its own function), here and in the programs of the
        other modules it reached, and so does what each program holds: its parts, its memos and its
        events, which hold the program in turn (measured on 120 transformers files: 1.9 million objects
        left to a collection, a tenth of the run's time, without this)."""
        run = self.run_state
        others = list(run.programs.values()) if run is not None else []
        for program in (self, *others):
            for fn in program.calls.closures:
                fn.closure = None
        if run is not None:
            run.programs.clear()
        for program in (self, *others):
            parts = (program.names, program.signatures, program.classes, program.entry_points, program.calls)
            for part in parts:
                part.__dict__.clear()
            program.memos.clear()
            program.__dict__.clear()
