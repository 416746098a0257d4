"""Runs every ``test_*`` case of a cases module, as the labeller runs the module as ``__main__``.

A case that Dynamo cannot run (an error rather than a graph break) is reported and the rest still run,
so one such case does not hide the labels of the others.
"""
from __future__ import annotations

from typing import Any


def run_cases(namespace: dict[str, Any]) -> None:
    for name, case in list(namespace.items()):
        if name.startswith("test_") and callable(case):
            try:
                case()
            except Exception as e:  # noqa: BLE001 - reported, and the next case runs
                print(f"{name}: {type(e).__name__}: {str(e)[:200]}")
