"""DYN201 and registries a decorator fills: a function of the module used only as a decorator of its
module-level definitions (``@register(0.5)``) runs while the module is imported, so what it fills is never
changed while compiled code runs, and Dynamo never recompiles for it (measured on torch 2.13).  The same
function called at run time mutates the global as any other function does."""
from __future__ import annotations

import json

from conftest import requires_torch
from helpers import dynamo_recompile_log, run, write

REGISTRY = """\
import torch

REGISTRY = {}


def register(p):
    def deco(fn):
        REGISTRY[fn.__name__] = (fn, p)
        return fn
    return deco


@register(0.5)
def double(x):
    return x * 2


@register(0.25)
def halve(x):
    return x / 2


@torch.compile(backend="eager")
def apply(x):
    for name in ("double", "halve"):
        fn, p = REGISTRY[name]
        x = fn(x) * p
    return x


def run():
    return [apply(torch.randn(4)) for _ in range(3)]
"""

#: the same decorator also called at run time, between compiled calls
REGISTERED_LATER = REGISTRY.replace("    return [apply(torch.randn(4)) for _ in range(3)]\n",
                                    "    out = [apply(torch.randn(4))]\n"
                                    "    register(2.0)(double)\n"
                                    "    return out + [apply(torch.randn(4))]\n")


def _codes(tmp_path, capsys, code: str) -> list[tuple[int, str]]:
    path = write(tmp_path, "m.py", code)
    _, out, _ = run(capsys, "--format", "json", path)
    return [(d["line"], d["code"]) for d in json.loads(out)]


def test_a_registry_filled_at_import_is_no_recompile_hazard(tmp_path, capsys):
    assert _codes(tmp_path, capsys, REGISTRY) == []


def test_a_registry_also_filled_at_run_time_is(tmp_path, capsys):
    assert [code for _, code in _codes(tmp_path, capsys, REGISTERED_LATER)] == ["DYN201"]


@requires_torch
def test_under_dynamo_only_the_run_time_registration_recompiles(tmp_path):
    seen = []
    for code in (REGISTRY, REGISTERED_LATER):
        namespace: dict = {}
        with dynamo_recompile_log() as messages:
            exec(compile(code, str(tmp_path / "m.py"), "exec"), namespace)
            namespace["run"]()
        seen.append(bool(messages))
    assert seen == [False, True]
