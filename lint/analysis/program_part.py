"""The base of the collaborators a module's :class:`~dynalint.analysis.program.Program` is made of (its
name resolution, signatures, class model): each holds its program weakly, since the program holds it, so
that no analysis is a cycle whose trees wait for a garbage collection to go."""
from __future__ import annotations

import weakref
from typing import Generic, TypeVar

P = TypeVar("P")


class ProgramPart(Generic[P]):
    """One job of a module's analysis, with the state it owns; the other jobs are reached through
    :attr:`program`."""

    def __init__(self, program: P) -> None:
        self._program = weakref.ref(program)

    @property
    def program(self) -> P:
        """The program this part belongs to (alive while anyone uses the part: the program holds it)."""
        program = self._program()
        assert program is not None
        return program
