"""The rules, one module per family.  Importing :func:`load` registers them all."""
from __future__ import annotations

import importlib

RULE_MODULES = (
    "engine_codes",
    "conditions",
    "scalars",
    "loops",
    "dynamic_shapes",
    "unsupported_calls",
    "guards",
)


def load() -> None:
    for name in RULE_MODULES:
        importlib.import_module(f"{__name__}.{name}")
