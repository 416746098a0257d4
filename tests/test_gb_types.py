"""Every graph-break type a diagnostic names is one of the installed torch's: its id and ``Gb_type`` text
are an entry of ``torch/_dynamo/graph_break_registry.json``."""
from __future__ import annotations

import json
import os

from conftest import requires_torch

from dynalint.core import gb_types


@requires_torch
def test_each_type_is_in_the_registry_of_the_installed_torch() -> None:
    import torch._dynamo

    path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
    with open(path, encoding="utf-8") as fh:
        registry = json.load(fh)
    missing = [gb for gb in gb_types.ALL
               if gb.text not in {entry["Gb_type"] for entry in registry.get(gb.id, [])}]
    assert gb_types.ALL and not missing, missing
