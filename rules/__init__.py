"""The rules, one module per rule named after it (``scalar_crosses_break`` holds DYN204).  Importing
:func:`load` registers them all."""
from __future__ import annotations

import importlib

RULE_MODULES = (
    "engine_codes",
    "tensor_condition",
    "scalar_extraction",
    "data_dependent_loop",
    "data_dependent_shape",
    "untraceable_call",
    "mutable_global_read",
    "environment_read",
    "python_attribute_mutation",
    "scalar_crosses_break",
    "python_attribute_set_outside",
    "python_argument_varies",
    "loop_state_crosses_break",
    "grad_mode_varies",
)


def load() -> None:
    for name in RULE_MODULES:
        importlib.import_module(f"{__name__}.{name}")
