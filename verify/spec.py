"""The instructions a worker process gets for one measurement (plain JSON-able data)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any


#: Start of the line the worker writes to a measurement's output log before each phase, so that
#: what the target and its hooks print can be told apart by phase (every phase reruns the stream).
PHASE_MARK = "== dynalint verify: "


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class MeasureSpec:
    target: str
    """``FILE::NAME`` as the user wrote it (for the report)."""
    module_path: str
    """The file to import: the user's file, or the temporary copy holding the fixed source."""
    name: str
    origin_path: str
    """The user's file; its directory and package decide the module's import name."""
    substitutes: dict[str, str] = field(default_factory=dict)
    """User file -> file imported in its place (a fixed copy of a module the target imports)."""
    inputs_path: str | None = None
    """File of the input factory; None: the target's own module."""
    inputs_name: str = "dynalint_inputs"
    hook_path: str | None = None
    hook_name: str | None = None
    """An optional ``before_call(i)`` hook (None: ``dynalint_before_call`` if the module defines it)."""
    variant: str = "original"
    device: str = "cpu"
    mode: str = "eval"
    backend: str = "eager"
    dynamo_config: dict[str, Any] = field(default_factory=dict)
    what_if: bool = True
    guard_timing: bool = True
    seed: int = 0
    threads: int = 0
    """torch CPU threads for every phase (0: the cores this process may run on)."""
    coverage: bool = True
    """Record the lines the stream runs (a phase of its own); the fixed variant of ``verify`` does
    without, its report reads the original's."""
    bench_calls: int = 0
    """Warm calls timed by the benchmark phase (0: no benchmark)."""
    reference_outputs: str | None = None
    """Eager outputs of the original source, to compare the fixed source's against."""
    save_outputs: str | None = None
    result_path: str = ""
    progress_path: str = ""
    log_path: str = ""
    timeout: float = 300.0
    cwd: str = field(default_factory=os.getcwd)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    sys_path: list[str] = field(default_factory=lambda: list(sys.path))

    def dump(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(dataclasses.asdict(self), fh)

    @classmethod
    def load(cls, path: str) -> "MeasureSpec":
        with open(path, encoding="utf-8") as fh:
            return cls(**json.load(fh))
