"""Replaying a record whose calls read what an edit changed, when their results did not change.

An edit of a function deep in a model (an attention layer that every entry point reaches) changes
what every record above it read, so none of them replays as a whole (:mod:`dynalint.analysis.replay`)
and each entry point, and each call on the way down, would be evaluated again.  Yet the edit seldom
changes what such a call gives its caller.  A record whose *own* reading (the tokens it read other
than through the calls it recorded) the edit left is therefore replayed entry by entry
(:meth:`CutReplay._cut`): each recorded call in its log that read a changed token is analysed again,
in the same calling context, at the same point of the analysis (so it may itself be cut, or
replayed); when it gives the same result (:func:`same_value`) and breaks the graph as it did, the
caller's evaluation after it is the one recorded, whose log goes on applying.  Every entry is checked
against the state as it is applied (the contexts counted, the results remembered and found, a found
call's result and break), and at the first that differs everything applied is undone
(:meth:`CutReplay._undo`) and the record is evaluated.
"""
from __future__ import annotations

from typing import Any

from dynalint.analysis.replay import (
    BROKE,
    BUSY,
    CALL,
    CONTEXT,
    END,
    FOUND,
    REFUSED,
    REMEMBERED,
    Record,
    function_token,
    interface_token,
)
from dynalint.analysis.program_part import ProgramPart
from dynalint.analysis.values import Value
_MISSING = object()


def same_value(a: Any, b: Any) -> bool:
    """Whether a caller reading ``a`` reads what it read in ``b``: equal values whose classes,
    functions, instances and origins are the same objects (``==`` leaves those out)."""
    if a is b:
        return True
    if not isinstance(a, Value) or not isinstance(b, Value):
        return bool(a == b)
    if a != b or a.cls is not b.cls or a.func is not b.func or a.origin is not b.origin:
        return False
    if (a.bound_self is None) != (b.bound_self is None) or (
            a.bound_self is not None and not same_value(a.bound_self, b.bound_self)):
        return False
    if (a.element is None) != (b.element is None) or (
            a.element is not None and not same_value(a.element, b.element)):
        return False
    return all(same_value(x, y) for x, y in zip(a.items or (), b.items or ()))


class _Caller:
    """What the analysis of a call reads of the function that makes it: a recorded call analysed
    again in its context (only calls made outside a search for evidence and an ``__init__``'s
    attributes are recorded)."""

    evidence = None
    attr_sink = None
    loop_depth = 0

    def __init__(self, depth: int, outer_loop: bool, emit: bool, frame_start: bool) -> None:
        self.emit = emit
        self.depth = depth
        self.outer_loop = outer_loop
        self.frame_start = frame_start
        self.callee_broke = False


class CutReplay(ProgramPart[Any]):
    """The cut replay of the records of a module's analysis (see the module doc): the base of
    :class:`~dynalint.analysis.interprocedural.Interprocedural`, whose calls it analyses again.  Its
    :attr:`program` is the module's :class:`~dynalint.analysis.program.Program` (which imports this
    module: it is not named here)."""

    def _cut(self, rec: Record) -> bool:
        """Replay ``rec`` (of the analysis before the edit), analysing again its calls that read a
        changed token; False, with nothing applied, when the replay does not hold."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        mark = self._mark()
        start = len(prog.events)
        if rec.depth:
            tracker.log.append((CALL, rec.key, start))
        inner = len(tracker.log)
        tracker.push()
        ok = False
        try:
            ok = self._cut_log(rec)
        finally:
            tokens, _ = tracker.pop_record()
            if not ok:
                self._undo(mark)
        if not ok:
            return False
        tokens = tokens | (rec.tokens - tracker.changed)
        tracker.stack[-1] |= tokens
        if rec.depth and rec.key in self._calls.done:
            self._calls.tokens[rec.key] = tokens
        tracker.records[rec.key] = Record(rec.key, rec.depth, tokens, tuple(prog.events[start:]),
                                          tuple(tracker.log[inner:]), rec.value, rec.refs, start, rec.own,
                                          rec.call)
        if rec.depth:
            tracker.log.append((END, rec.key, len(prog.events)))
        tracker.cut += 1
        return True

    def _cut_log(self, rec: Record) -> bool:
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None and tracker.old is not None
        records, changed = tracker.old.records, tracker.changed
        made = {(e[1], e[2]) for e in rec.log if e[0] is REMEMBERED}
        events, base = rec.events, rec.start
        at = base  # where the next of rec's events was in the event list of the analysis before
        log = rec.log
        i, n = 0, len(log)
        while i < n:
            e = log[i]
            kind = e[0]
            if kind is CALL or kind is END:
                prog.events.extend(events[at - base:e[2] - base])
                at = e[2]
                sub = records.get(e[1]) if kind is CALL else None
                if sub is not None and not sub.tokens.isdisjoint(changed):
                    j = next((j for j in range(i + 1, n) if log[j][0] is END and log[j][1] == e[1]), None)
                    if j is None or not self._again(sub):
                        return False
                    at, i = log[j][2], j + 1
                    continue
                tracker.log.append((kind, e[1], len(prog.events)))
            elif not self._cut_entry(rec, e, made):
                return False
            i += 1
        prog.events.extend(events[at - base:])
        return True

    def _again(self, sub: Record) -> bool:
        """Analyse the call ``sub`` recorded again, as its caller would make it now: whether the caller
        gets what it got."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        if sub.call is None:
            return False
        fn, env, bound_self = sub.call
        if function_token(fn) in tracker.changed or interface_token(fn) in tracker.changed:
            return False  # a definition the edit replaced (its caller looks it up again)
        outer = fn.outer
        if outer is not None and tracker.old is not None \
                and tracker.old.nodes.get(id(outer), outer.node) is not outer.node:
            return False  # a function defined in the body of one the edit changed: the caller makes it again
        caller = _Caller(sub.depth - 1, bool(sub.key[2]), bool(sub.key[1]), bool(sub.key[3]))
        value = self._keyed_call(caller, fn, dict(env), bound_self, sub.key)  # (the body assigns in it)
        return same_value(value, sub.value) and caller.callee_broke == (sub.key in tracker.old_broke)

    def _cut_entry(self, rec: Record, e: tuple, made: set) -> bool:
        """Check one entry of ``rec``'s log against the state now, then apply it (as ``_replay`` does)."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        kind = e[0]
        if kind is CONTEXT or kind is REFUSED:
            if self._may_analyse(e[1]) != (kind is CONTEXT):
                return False
            self._apply(e)
        elif kind is REMEMBERED:
            memo, before = prog.memos[e[1]], tracker.old_memos.get(e[1])
            if e[2] in memo.done or e[2] in memo._busy or before is None or e[2] not in before.done:
                return False
            tracker.put_back(e[1], e[2], cut=True)
        elif kind is FOUND:
            memo = prog.memos[e[1]]
            if e[2] not in memo.done:
                return False
            if e[1] == "calls":  # read through the call: the same result, and the same break
                before = tracker.old_memos["calls"].done.get(e[2], _MISSING)
                if not same_value(memo.done[e[2]], before) or \
                        (e[2] in self._broke) != (e[2] in tracker.old_broke):
                    return False
            tracker.found(e[1], memo.tokens.get(e[2], frozenset()))
        elif kind is BUSY:
            if (e[1], e[2]) not in made and e[2] not in prog.memos[e[1]]._busy \
                    and not (e[1] == "calls" and e[2] == rec.key):
                return False
        else:
            self._apply(e)
        tracker.log.append(e)
        return True

    def _mark(self) -> tuple:
        """What :meth:`_undo` goes back to."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        return len(prog.events), len(tracker.log), len(prog.compiled), dict(prog._nested), set(prog.entry_points.entered)

    def _undo(self, mark: tuple) -> None:
        """Take back what the analysis did since ``mark``, by its log (each change of the state is logged)."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        events, log, compiled, nested, entries = mark
        for e in tracker.log[log:]:
            kind = e[0]
            if kind is CONTEXT:
                left = self._contexts.get(e[1], 0) - 1
                if left > 0:
                    self._contexts[e[1]] = left
                else:
                    self._contexts.pop(e[1], None)
            elif kind is REMEMBERED:
                memo = prog.memos[e[1]]
                memo.done.pop(e[2], None)
                memo.tokens.pop(e[2], None)
                if e[1] == "calls":
                    tracker.records.pop(e[2], None)
            elif kind is BROKE:
                self._broke.discard(e[1])
        for fn in prog.compiled[compiled:]:
            prog._compiled_ids.discard(id(fn))
            prog._compiled_nodes.discard(id(fn.node))
        del prog.compiled[compiled:]
        prog._nested.clear()
        prog._nested.update(nested)
        prog.entry_points.entered.clear()
        prog.entry_points.entered.update(entries)
        del prog.events[events:]
        del tracker.log[log:]
