"""The fixed variant of a file: what ``dynalint fix`` would write, in a temporary copy.

The user's file is never touched here.  The copy keeps the original's file
name (so reports and Dynamo's messages read naturally) and is imported under
the original's module name.  When the fix engine is not installed, there is
no fixed variant and the reports say so.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from dynalint.config.settings import Settings


@dataclass
class FixedSource:
    source: str
    applied: list[Any] = field(default_factory=list)
    """The fix engine's applied fixes (``code``, ``description``, ``safety``, ``line``)."""
    error: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def fix_engine_available() -> bool:
    try:
        import dynalint.engine.fixing  # noqa: F401
    except ImportError:
        return False
    return True


def fixed_source(source: str, path: str, settings: Settings, unsafe: bool,
                 fix: Callable[[], Any] | None = None) -> FixedSource:
    """The file as ``dynalint fix`` would rewrite it (unchanged, with a reason, when it cannot).
    ``fix``: makes the fix result (default: the file fixed alone)."""
    try:
        from dynalint.engine.fixing import fix_source
    except ImportError:
        return FixedSource(source, error="the fix engine (dynalint.engine.fixing) is not installed")
    try:
        result = fix() if fix is not None else fix_source(source, path, settings, unsafe=unsafe)
    except Exception as exc:  # an internal error of the fixers must not lose the measurements
        return FixedSource(source, error=f"fixing failed: {type(exc).__name__}: {exc}")
    return FixedSource(result.source, list(result.applied))


def write_copy(source: str, original_path: str, workdir: str | None = None) -> str:
    """Write ``source`` to a new temporary directory under the original's file name; returns the path."""
    directory = tempfile.mkdtemp(prefix="dynalint-fixed-", dir=workdir)
    path = os.path.join(directory, os.path.basename(original_path))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    return path
