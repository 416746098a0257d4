"""Replaying, after an edit, what the analysis of the text before it computed and the edit left valid.

The language server analyses a document again after every change (:mod:`dynalint.engine.incremental`
parses again only the statements an edit touched).  Most of the analysis is the interprocedural
evaluation of compiled code: each entry point (a *unit*), and each call it makes into a function of
the module, analysed once per calling context and remembered (:class:`~dynalint.analysis.memo.Memo`).
What one such computation produced depends only on what it read, so an analysis can record, for
each unit and each call it analysed (:class:`Record`):

- the *tokens* it read: the definition of each function it ran or whose body it read (its
  ``FunctionDef`` node, which an edit replaces: :func:`function_token`), the function itself for one
  it only found and called (:func:`interface_token`: its header, which an edit of the body alone
  leaves, so that the direct callers of an edited function replay as the callers above them do,
  its calls analysed again), and the *shell* of each class it looked into (its
  bases, decorators, body statements other than methods, method names, and what its methods write on
  ``self`` outside ``__init__``: :func:`class_shell`), and the names whose uses in the module a search
  for a function's callers looked for (:func:`name_token`: changed by an edit of a function, or of a
  class outside its methods, that held the name before or after the edit);
- what it changed in the state of the analysis, in order (the *log*): events emitted, contexts
  counted against :data:`~dynalint.analysis.interprocedural.MAX_ANALYSES_PER_FUNCTION`, functions
  marked compiled, results remembered, results it found remembered by an earlier computation.

The analysis of the edited text then runs in the same order, and where it reaches a unit or a call
whose record reads no token the edit changed, and whose log applies to the state at that point as it
applied before (each remembered result it relied on is remembered now too, none it computed is, the
context counts stay under or over their limit as they were), it applies the log instead of
evaluating: the same events, in the same place of the event list, and the same state after.  Every
other unit and call is evaluated, and recorded in turn.

The index of the edited text keeps the objects of the old one (:func:`build_index` with ``reuse``;
a function whose body alone was edited is the same object with the new definition), so the keys of
remembered results, which name functions and classes by identity, stay valid.  A
replay is attempted only when the edit changed definitions (functions, methods, classes), not
module-level statements, imports or the set of names the module defines (:func:`changed_tokens`), and
when the analysis stayed in the module (a call into another checked module runs in that module's
program, whose state is not recorded).  Results remembered without events (a class's attributes, a
silent analysis) are recorded too, and put back when the computation that made them is replayed.

A record whose calls read what the edit changed, but which itself read nothing it changed (its *own*
tokens), is replayed entry by entry with those calls analysed again, as long as each gives its caller
what it gave before (:mod:`dynalint.analysis.cut`): the log of a recorded call sits between a CALL
and an END entry in the log of whatever made it.

A result remembered outside any record that is replayed (an entry point's silent pass over its
parameters, asked before the entry points run; the numbers every caller passes a function, asked
while the edited function is evaluated) is a record of its own when its computation changed nothing
but memos: kept with its log (:meth:`Tracker.computed`), it is put back when it read nothing the edit
changed and its log applies as a record's does (:meth:`Tracker.reused`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Hashable, Iterator

import libcst as cst

from dynalint.analysis.syntax import walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex

# log entries: (kind, ...)
CONTEXT = "context"
"""(CONTEXT, function id): a call analysed in one more calling context of the function."""
REFUSED = "refused"
"""(REFUSED, function id): a call left unanalysed because the function had its contexts."""
COMPILED = "compiled"
"""(COMPILED, function): a function marked as compiled code."""
BROKE = "broke"
"""(BROKE, key): the analysis of a call broke the graph."""
REMEMBERED = "remembered"
"""(REMEMBERED, memo name, key): a result computed and remembered."""
FOUND = "found"
"""(FOUND, memo name, key): a result found remembered (computed before, elsewhere)."""
BUSY = "busy"
"""(BUSY, key): a call asked for while it was being analysed (recursion): its fallback used."""
NESTED = "nested"
"""(NESTED, function): a function defined inside analysed code, to analyse as an entry (scope all)."""
ENTRY = "entry"
"""(ENTRY, function): a function handed to ``torch.compile`` from another module."""
CALL = "call"
"""(CALL, key, event index): the analysis of a recorded call starts (its record's log follows)."""
END = "end"
"""(END, key, event index): it ends."""


@dataclass(frozen=True, eq=False)
class Record:
    """What one unit or analysed call did."""

    key: Hashable
    depth: int
    tokens: frozenset
    events: tuple
    log: tuple
    value: Any
    refs: tuple
    """Objects whose identities the key holds (kept alive, so that no other object takes them)."""
    start: int = 0
    """Where its events started in the event list of the analysis that recorded it (the event indices
    of the CALL and END entries of its log count from the same origin)."""
    own: frozenset = frozenset()
    """The tokens it read itself, not through the calls it recorded."""
    call: tuple | None = None
    """For a call: (function, arguments, bound instance), to analyse it again in the same context."""


class Tracker:
    """Records the analysis of one text; with ``old``, the records of the text before an edit and the
    tokens it changed, replays what they allow."""

    def __init__(self, old: "Tracker | None" = None, old_memos: dict[str, Any] | None = None,
                 changed: frozenset = frozenset()) -> None:
        self.stack: list[set] = [set()]
        """Per computation in progress: the tokens read (through the calls it recorded too)."""
        self.own: list[set] = [set()]
        """The same, without those read only through recorded calls."""
        self.log: list[tuple] = []
        self.records: dict[Hashable, Record] = {}
        self.old = old
        self.old_memos = old_memos or {}
        """The memos of the analysis before, by name (:class:`~dynalint.analysis.memo.Memo`, which logs
        here: not imported)."""
        self.changed = changed
        self.replayed = 0
        """Units and calls replayed (for tests and benchmarks)."""
        self.evaluated = 0
        """Units and calls evaluated."""
        self.cut = 0
        """Units and calls replayed with some of their calls analysed again (:mod:`dynalint.analysis.cut`)."""
        self.reuses = 0
        """Remembered results put back outside a replayed record (:meth:`reused`)."""
        self.usable = False
        """Whether the records may be replayed after an edit (see :meth:`seal`)."""
        self.shells: dict[int, tuple[tuple, cst.ClassDef]] = {}
        """``id`` of each class of the module -> its shell (:func:`class_shell`) and its definition."""
        self.facts: tuple = ()
        self.broke: frozenset = frozenset()
        """Keys of the calls whose analysis broke the graph (as the analysis left them)."""
        self.old_broke: frozenset = old.broke if old is not None else frozenset()
        self.nodes: dict[int, cst.FunctionDef] = {}
        """``id`` of each function of the module -> its definition when the analysis ended (an edit of a
        function's body alone gives the same function the new definition: :func:`changed_tokens`)."""
        self.classifier: Any = None
        """The break classifier of the analysis (:class:`~dynalint.analysis.breaks.BreakClassifier`, not
        imported here), whose classifications of replayed events the next analysis takes over."""
        self.memos: dict[str, Any] = {}
        """The memos of this analysis, by name (set by the program that owns them)."""
        self.events: list | None = None
        """The event list of this analysis (set by the program that owns it)."""
        self.segments: dict[tuple[str, Hashable], tuple] = {}
        """(memo name, key) -> the log of the computation of a remembered result that changed nothing but
        memos (no event, no context counted, no call recorded): what :meth:`reused` replays after an
        edit."""

    def seal(self, index: "ModuleIndex", usable: bool, broke: "set | None" = None) -> None:
        """The analysis is over: note what of the module it read besides the definitions, which the
        next edit is compared with (``usable``: the analysis stayed in the module).  The records of the
        analysis before, replayed or not, are let go."""
        self.old, self.old_memos, self.changed, self.old_broke = None, {}, frozenset(), frozenset()
        self.usable = usable
        self.broke = frozenset(broke or ())
        if usable:
            self.shells = {id(c): (class_shell(c, index), c.node) for c in index.classes.values()}
            self.facts = module_facts(index)
            self.nodes = {id(fn): fn.node for fn in index.all_functions}
        else:
            self.records.clear()
            self.segments.clear()

    def touch(self, token: object) -> None:
        self.stack[-1].add(token)
        self.own[-1].add(token)

    def push(self) -> None:
        self.stack.append(set())
        self.own.append(set())

    def pop(self, record: bool = False) -> frozenset:
        """The tokens the computation ended read; they count as read by the one around it, as its own
        unless the computation is a recorded call (``record``)."""
        tokens, own = self.stack.pop(), self.own.pop()
        self.stack[-1] |= tokens
        if not record:
            self.own[-1] |= own
        return frozenset(tokens)

    def pop_record(self) -> tuple[frozenset, frozenset]:
        """:meth:`pop` for a recorded call or unit: (all tokens, own tokens)."""
        own = frozenset(self.own[-1])
        return self.pop(record=True), own

    def found(self, name: str, tokens: frozenset) -> None:
        """A remembered result was found: its tokens are read; a call's result is read through the
        call (an analysis that only found it can be replayed when the result stayed the same)."""
        self.stack[-1] |= tokens
        if name != "calls":
            self.own[-1] |= tokens

    def computed(self, name: str, key: Hashable, log: int, events: int) -> None:
        """The result of ``key`` in the memo ``name`` was computed and remembered, its computation logged
        from ``log`` on (its own REMEMBERED entry last) with ``events`` events before it: kept for
        :meth:`reused` when it changed nothing but memos."""
        entries = self.log
        if self.events is not None and len(self.events) == events and all(
                (e[0] is REMEMBERED or e[0] is FOUND or e[0] is BUSY) and e[1] != "calls"
                for e in islice(entries, log, None)):  # copied only when kept
            self.segments[name, key] = tuple(entries[log:])
        else:
            self.segments.pop((name, key), None)

    def put_back(self, name: str, key: Hashable, cut: bool = False) -> None:
        """Put back the result of ``key`` in the memo ``name`` as the analysis before the edit remembered
        it (a replay: the caller checked that it did and that this analysis has not), with the tokens it
        read, the record of the call (the ``calls`` memo) and its computation's log (for the next edit's
        :meth:`reused`).  ``cut``: in a record replayed with some of its calls analysed again
        (:meth:`~dynalint.analysis.cut.CutReplay._cut_entry`), where a result that read what the edit
        changed read it only through the calls and found results checked before it (what it read itself
        is the replayed record's own reading): it reads what the computation in progress read now
        instead, and its record and log, which read the old text, are not put back."""
        memo, before = self.memos[name], self.old_memos[name]
        memo.done[key] = before.done[key]
        tokens = before.tokens[key]
        if cut and not tokens.isdisjoint(self.changed):
            memo.tokens[key] = (tokens - self.changed) | self.stack[-1]
            return
        memo.tokens[key] = tokens
        old = self.old
        if old is None:
            return
        if name == "calls" and key in old.records:
            self.records[key] = old.records[key]
        segment = old.segments.get((name, key))
        if segment is not None:
            self.segments[name, key] = segment

    def reused(self, name: str, key: Hashable) -> tuple[Any] | None:
        """The result of ``key`` in the memo ``name`` as the analysis before the edit remembered it, when
        that computation read nothing the edit changed, changed nothing but memos, and its log applies
        now as it did then (as a record's: see :meth:`~dynalint.analysis.interprocedural.Interprocedural._replays`):
        the results it remembered are put back, its log appended and its tokens read, as computing it
        again would do.  (the result,) or None when it is to be computed."""
        old = self.old
        before = self.old_memos.get(name)
        if old is None or before is None or key not in before.done:
            return None
        segment, tokens = old.segments.get((name, key)), before.tokens.get(key)
        if segment is None or tokens is None or not tokens.isdisjoint(self.changed):
            return None
        memos, olds = self.memos, self.old_memos
        made = {(e[1], e[2]) for e in segment if e[0] is REMEMBERED}
        seen: set[tuple[str, Hashable]] = set()
        for e in segment:
            memo = memos.get(e[1])
            if memo is None:
                return None
            if e[0] is REMEMBERED:
                was = olds.get(e[1])
                if e[2] in memo.done or e[2] in memo._busy or was is None or e[2] not in was.done \
                        or e[2] not in was.tokens:
                    return None
                seen.add((e[1], e[2]))
            elif e[0] is FOUND:
                if e[2] not in memo.done and (e[1], e[2]) not in seen:
                    return None
            elif (e[1], e[2]) not in made and e[2] not in memo._busy:  # BUSY
                return None
        for e in segment:
            if e[0] is REMEMBERED:
                self.put_back(e[1], e[2])
        self.log.extend(segment)
        self.stack[-1] |= tokens
        self.own[-1] |= tokens
        self.reuses += 1
        return (before.done[key],)

    def old_record(self, key: Hashable, depth: int, own: bool = False) -> Record | None:
        """The record of ``key`` in the analysis before the edit, when the edit left what it read
        (``own``: what it read itself, not through the calls it recorded; see
        :meth:`~dynalint.analysis.cut.CutReplay._cut`)."""
        rec = self.old.records.get(key) if self.old is not None else None
        if rec is None or rec.depth != depth or not (rec.own if own else rec.tokens).isdisjoint(self.changed):
            return None
        return rec


def function_token(fn: "FunctionInfo") -> object:
    """What an edit of a function changes: the ``FunctionDef`` of the module-level definition that holds
    it (a function defined inside another is part of it)."""
    return fn.outer.node if fn.outer is not None else fn.node


def interface_token(fn: "FunctionInfo") -> object:
    """What an edit of a function's header changes (its decorators, name and parameters: what a caller
    reads to find and call it), not an edit of its body alone: the function itself, which such an edit
    leaves (:func:`~dynalint.analysis.module_index.build_index` with ``reuse``); for a function defined
    inside another, the definition that holds it (:func:`function_token`)."""
    return fn if fn.outer is None else function_token(fn)


def name_token(name: str, attribute: bool = False) -> tuple[str, str]:
    """What an edit of a function changes for a search of the module's uses of a name (the calls of a
    function, of a class's instances) or of an attribute (``.name``, the calls of the instances stored
    in it): changed by an edit of a function whose text held it, before or after the edit."""
    return ("attribute" if attribute else "name", name)


def _name_tokens(node: cst.CSTNode) -> Iterator[tuple[str, str]]:
    """The tokens of the names and attributes ``node`` holds (an attribute's name counts as a name too)."""
    for n in walk(node):
        tp = type(n)
        if tp is cst.Name:
            yield name_token(n.value)  # type: ignore[attr-defined]
        elif tp is cst.Attribute:
            yield name_token(n.attr.value, attribute=True)  # type: ignore[attr-defined]


def class_shell(cls: "ClassInfo", index: "ModuleIndex") -> tuple:
    """What of a class, other than its methods' bodies, the analysis reads (see the module doc)."""
    node = cls.node
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    writes = sorted((attr, fn.name, id(stmt)) for attr, places in index.attr_writes_outside.items()
                    for stmt, fn in places if fn is not None and fn.cls is cls)
    return (tuple(map(id, node.bases)), tuple(map(id, node.keywords)), tuple(map(id, node.decorators)),
            tuple(id(s) for s in body if not isinstance(s, cst.FunctionDef)),
            tuple((m.name, m.decorators, m.custom_op) for m in cls.methods.values()),
            tuple(id(b) for b in cls.base_classes), cls.is_module, frozenset(cls.updated_in_place),
            tuple(writes))


def module_facts(index: "ModuleIndex") -> tuple:
    """What of a module, other than its definitions, the analysis reads: an edit that changes any of it
    is analysed in full."""
    body = tuple(id(s) for s in index.module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef)))
    return (body, tuple(index.imports.items()), tuple(index.globals), tuple(sorted(index.mutated_globals)),
            tuple(sorted(index.reorderable)), tuple(sorted(index.dynamic_output_ops)), index.imports_torch,
            tuple(f.qualname for f in index.all_functions), tuple(index.classes),
            tuple((where.qualname if where is not None else "") for _, where in index.compile_targets),
            tuple((f.qualname, f.custom_op, f.decorators) for f in index.all_functions))


def changed_tokens(old: "ModuleIndex", old_shells: dict[int, tuple[tuple, cst.ClassDef]], old_facts: tuple,
                   new: "ModuleIndex", old_nodes: dict[int, cst.FunctionDef] | None = None
                   ) -> frozenset | None:
    """The tokens an edit changed, from the index before it (with the shells, and definitions, of its
    classes and the facts it had then) and the index after it (built with ``reuse``); None when the
    edit changed more than definitions.  The name tokens (:func:`name_token`) are those of the text of
    the functions the edit replaced, and of the parts of a class other than its methods when its
    shell changed, before and after the edit.  ``old_nodes``: the definition of each old function when
    the analysis before ended (:attr:`Tracker.nodes`: a function whose body alone was edited is the same
    object, with the new definition); the functions the new index does not hold are changed too (their
    :func:`interface_token`)."""
    if module_facts(new) != old_facts:
        return None
    nodes = old_nodes or {}
    before = [nodes.get(id(fn), fn.node) for fn in old.all_functions]
    kept = {id(fn.node) for fn in new.all_functions}
    changed: set[object] = {node for node in before if id(node) not in kept}
    held = {id(fn) for fn in new.all_functions}
    changed.update(fn for fn in old.all_functions if id(fn) not in held)
    names = Counter((id(fn.cls), fn.name) for fn in new.all_functions)
    # a function given a new definition of its name is the one its name finds only when defined once
    # (a name defined again changes the module's facts too: this holds without them)
    changed.update(fn for fn in new.all_functions
                   if nodes.get(id(fn), fn.node) is not fn.node and names[id(fn.cls), fn.name] > 1)
    known = {id(node) for node in before}
    edited = [fn.node for fn in new.all_functions if fn.outer is None and id(fn.node) not in known] + \
        [node for fn, node in zip(old.all_functions, before) if fn.outer is None and id(node) not in kept]
    for node in edited:
        changed.update(_name_tokens(node))
    for cls in new.classes.values():
        before = old_shells.get(id(cls))
        if before is None:
            return None  # a class the old index did not have under this object
        if before[0] != class_shell(cls, new):
            changed.add(cls)
            for node in (before[1], cls.node):
                for part in (*node.bases, *node.keywords, *node.decorators, *_statements(node)):
                    changed.update(_name_tokens(part))
    return frozenset(changed)


def _statements(node: cst.ClassDef) -> list[cst.CSTNode]:
    """The statements of a class's body other than its methods."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else (node.body,)
    return [s for s in body if not isinstance(s, cst.FunctionDef)]
