"""Results remembered by key, with a guard against recursion.

The analysis computes many things by evaluating code that may ask for the same thing again (a
global whose value reads itself, a class whose ``__init__`` reads its own attributes, a recursive
function): the inner request gets a fallback instead of looping.
"""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

__all__ = ["Memo"]


class Memo(Generic[K, V]):
    """Computes each key's result once; a key asked for again while its result is being computed
    gets the fallback (nothing is remembered for that inner request).

    ``remember=False`` keeps only the guard, for results that depend on the state of the caller."""

    __slots__ = ("done", "_busy", "_remember")

    def __init__(self, remember: bool = True) -> None:
        self.done: dict[K, V] = {}
        self._busy: dict[K, Callable[[], V]] = {}
        self._remember = remember

    def get(self, key: K, compute: Callable[[], V], fallback: Callable[[], V], start: bool = True) -> V:
        """The result for ``key``: remembered, else ``fallback()`` when the key is being computed (or
        when ``start`` is false: a limit forbids computing it now), else ``compute()``."""
        done = self.done
        if key in done:
            return done[key]
        busy = self._busy
        if key in busy:
            return busy[key]()
        if not start:
            return fallback()
        busy[key] = fallback
        try:
            result = compute()
        finally:
            del busy[key]
        if self._remember:
            done[key] = result
        return result
