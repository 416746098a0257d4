"""The fixers, one module per rewrite.  Importing :func:`load` registers them all."""
from __future__ import annotations

import importlib

FIXER_MODULES = (
    "branch_to_where",
    "branch_to_cond",
    "keep_tensor",
    "masked_loss",
    "masked_elementwise_loss",
    "masked_reduction",
    "defer_logging",
    "async_assert",
    "hoist_decision",
    "state_to_buffer",
    "global_to_tensor",
    "env_read_once",
)


def load() -> None:
    for name in FIXER_MODULES:
        importlib.import_module(f"{__name__}.{name}")
