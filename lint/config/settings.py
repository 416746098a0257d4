"""Settings that change what dynalint reports.

Several mirror Dynamo's own configuration, because they change what really
breaks: with ``capture_scalar_outputs`` on, ``.item()`` no longer breaks the
graph (but a branch on its value does); with ``capture_dynamic_output_shape_ops``
on, ``nonzero`` and boolean-mask indexing stay in the graph.
"""
from __future__ import annotations

import enum
import hashlib
import importlib.metadata
import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dynalint.config.codes import OPT_IN_CODES

CACHE_DIR_NAME = ".dynalint_cache"
"""Where results are cached, in the configuration root (unless ``--cache-dir``)."""


class Scope(str, enum.Enum):
    """Which functions are analysed as compiled code."""

    COMPILED = "compiled"
    """Entry points (``forward`` of nn.Module classes, ``torch.compile`` targets, configured
    ``entry-points``) and everything they reach through calls, across the checked files."""
    AUTO = "auto"
    """COMPILED, plus module-level functions whose parameters are evidently tensors
    (library helpers that callers outside the checked files compile)."""
    ALL = "all"
    """Every function."""


#: The torch release the rules were calibrated against (measured with real Dynamo).
CALIBRATED_TORCH = (2, 13)
#: The torch versions ``target-torch`` accepts: the 2.x releases up to the calibrated one.
KNOWN_TORCH = tuple((2, minor) for minor in range(CALIBRATED_TORCH[1] + 1))

Version = tuple[int, int]



def parse_version(text: str) -> Version:
    """``"2.13.0+cpu"`` -> ``(2, 13)``."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    if not m:
        raise ValueError(f"not a torch version: {text!r}")
    return int(m.group(1)), int(m.group(2))


def installed_torch_version() -> Version | None:
    """The installed torch's version, read from its distribution metadata (torch is not imported)."""
    try:
        return parse_version(importlib.metadata.version("torch"))
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


@dataclass(frozen=True)
class Settings:
    """The value of each option: one field per entry of :data:`dynalint.config.options.OPTIONS`, which reads,
    checks and documents it; the defaults are the fields' defaults."""

    select: tuple[str, ...] = ("DYN",)
    ignore: tuple[str, ...] = ()
    scope: Scope = Scope.AUTO
    target_torch: Version = CALIBRATED_TORCH
    capture_scalar_outputs: bool = False
    capture_dynamic_output_shape_ops: bool = False
    reorderable_logging_functions: tuple[str, ...] = ()
    """Qualified names Dynamo is told to defer (``torch._dynamo.config.reorderable_logging_functions``)."""
    exclude: tuple[str, ...] = ()
    """Extra glob patterns of paths not to check (on top of the default excludes)."""
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = field(default=())
    respect_gitignore: bool = True
    """Skip files and folders git ignores (``.gitignore``, ``.git/info/exclude``, the global excludes)."""
    entry_points: tuple[str, ...] = ()
    """Glob patterns of qualified function names analysed as compiled entry points
    (``pkg.train.train_step``, ``*.Mixup.__call__``): their parameters are the graph's inputs."""
    max_file_memory: int = 400
    """MiB of memory the parse of one file may take, as estimated before parsing (0: no limit); a
    larger file is reported (DYN001) and not analysed.  The default is
    ``dynalint.core.source.MAX_FILE_MEMORY_MB``."""

    def enabled(self, code: str) -> bool:
        """Whether a rule code is selected: the longest matching prefix of select/ignore wins."""
        selected = (p for p in self.select if p == code) if code in OPT_IN_CODES else \
            (p for p in self.select if code.startswith(p))
        best_sel = max((len(p) for p in selected), default=-1)
        best_ign = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return best_sel >= 0 and best_sel > best_ign

    def with_changes(self, **changes: Any) -> "Settings":
        return replace(self, **changes)

    def fingerprint(self) -> str:
        """A stable hash of everything that changes results (for the cache)."""
        data = asdict(self)
        data["scope"] = self.scope.value
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def default_settings() -> Settings:
    return Settings(target_torch=installed_torch_version() or CALIBRATED_TORCH)
