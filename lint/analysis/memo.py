"""Results remembered by key, with a guard against recursion.

The analysis computes many things by evaluating code that may ask for the same thing again (a
global whose value reads itself, a class whose ``__init__`` reads its own attributes, a recursive
function): the inner request gets a fallback instead of looping.

With a :class:`~dynalint.analysis.replay.Tracker`, a memo also records what each result read (the
tokens collected while computing it, handed on to whoever finds it remembered) and logs each result
computed, found or guarded, so that an analysis after an edit can replay it; a result the analysis
before the edit computed, reading nothing the edit changed, is put back instead of computed again
(:meth:`~dynalint.analysis.replay.Tracker.reused`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Generic, Hashable, TypeVar

from dynalint.analysis.replay import BUSY, FOUND, REMEMBERED

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.replay import Tracker

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

__all__ = ["Memo"]


class Memo(Generic[K, V]):
    """Computes each key's result once; a key asked for again while its result is being computed
    gets the fallback (nothing is remembered for that inner request).

    ``remember=False`` keeps only the guard, for results that depend on the state of the caller."""

    __slots__ = ("done", "_busy", "_remember", "name", "tracker", "tokens")

    def __init__(self, remember: bool = True, name: str = "", tracker: "Tracker | None" = None) -> None:
        self.done: dict[K, V] = {}
        self._busy: dict[K, Callable[[], V]] = {}
        self._remember = remember
        self.name = name
        self.tracker = tracker
        self.tokens: dict[K, frozenset] = {}
        """With a tracker: what each remembered result read."""

    def busy(self, key: K) -> bool:
        """Whether ``key``'s result is being computed (a request for it now gets the fallback)."""
        return key in self._busy

    def get(self, key: K, compute: Callable[[], V], fallback: Callable[[], V], start: bool = True) -> V:
        """The result for ``key``: remembered, else ``fallback()`` when the key is being computed (or
        when ``start`` is false: a limit forbids computing it now), else ``compute()``."""
        done = self.done
        tracker = self.tracker
        if key in done:
            if tracker is not None:
                tracker.found(self.name, self.tokens[key])
                tracker.log.append((FOUND, self.name, key))
            return done[key]
        busy = self._busy
        if key in busy:
            if tracker is not None:
                tracker.log.append((BUSY, self.name, key))
            return busy[key]()
        if not start:
            return fallback()
        replays = tracker is not None and self._remember and self.name != "calls"  # (calls: records)
        if replays and tracker.old is not None:  # type: ignore[union-attr]
            reused = tracker.reused(self.name, key)  # type: ignore[union-attr]
            if reused is not None:
                return reused[0]
        busy[key] = fallback
        if tracker is not None:
            log, events = len(tracker.log), len(tracker.events) if tracker.events is not None else 0
            tracker.push()
        try:
            result = compute()
        finally:
            del busy[key]
            tokens = tracker.pop() if tracker is not None else None
        if self._remember:
            done[key] = result
            if tracker is not None and tokens is not None:
                self.tokens[key] = tokens
                tracker.log.append((REMEMBERED, self.name, key))
                if replays:
                    tracker.computed(self.name, key, log, events)
        return result
