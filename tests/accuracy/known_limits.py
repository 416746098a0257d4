"""Known limits: disagreements with Dynamo that the analysis has not closed yet, each with why.

An entry matches a disagreement by its kind and idiom fields (a name, a tuple of names, or None for
any) and, optionally, a regular expression over its detail (the codes reported, Dynamo's break type
or the failing guard).
The CI test fails on a disagreement that no entry explains.  When the analysis closes a gap, the
entry becomes unused and can go.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from .compare import Disagreement


Names = Union[str, tuple[str, ...], None]


@dataclass(frozen=True)
class KnownLimit:
    kind: str
    reason: str
    provenance: Names = None
    use: Names = None
    context: Names = None
    container: Names = None
    detail: str | None = None
    """Regular expression searched in the disagreement's detail."""

    def matches(self, d: Disagreement) -> bool:
        if d.kind != self.kind:
            return False
        fields = d.idiom or ("scaffold", "", "", "")
        want = (self.provenance, self.use, self.context, self.container)
        if any(w is not None and f not in ((w,) if isinstance(w, str) else w) for w, f in zip(want, fields)):
            return False
        return self.detail is None or re.search(self.detail, d.detail) is not None


KNOWN_LIMITS: tuple[KnownLimit, ...] = ()


def explain(d: Disagreement) -> str | None:
    """The reason of the first known limit that matches ``d``; None when none does."""
    return next((k.reason for k in KNOWN_LIMITS if k.matches(d)), None)
