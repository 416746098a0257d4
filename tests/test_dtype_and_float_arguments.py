"""A dtype, or a float written as ``float("inf")``, passed to a compiled function: Dynamo guards on each by
equality (measured on torch 2.13: ``dtype == torch.float64``, ``norm_type == 2.0``), so two different ones
recompile it (DYN206), while two names of one dtype (``torch.double``, ``torch.float64``) do not. The names
of dtypes, layouts and memory formats the analysis knows, and which are one dtype, are those of the
installed torch."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

CASES = """
    import torch


    @torch.compile(backend="eager")
    def cast(x, dtype):
        return x.to(dtype) * 2


    @torch.compile(backend="eager")
    def same_dtype(x, dtype):
        return x.to(dtype) * 2


    @torch.compile(backend="eager")
    def clip(x, max_norm=1.0, norm_type=2.0):
        n = torch.linalg.vector_norm(x, norm_type)
        return x * torch.clamp(max_norm / (n + 1e-6), max=1.0)


    def run(x):
        cast(x, torch.float64)
        cast(x, torch.float16)
        same_dtype(x, torch.double)
        same_dtype(x, torch.float64)
        clip(x)
        clip(x, 1.0, float("inf"))
"""


def _reported() -> set[str]:
    return {name for name in ("cast", "same_dtype", "clip")
            for d in check(CASES) if d.code == "DYN206" and f"specialises `{name}`" in d.message}


def test_two_dtypes_and_an_infinite_norm_vary() -> None:
    assert _reported() == {"cast", "clip"}


@requires_torch
def test_dynamo_recompiles_those() -> None:
    namespace: dict = {}
    import torch

    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CASES), "dtypes.py", "exec"), namespace)
        namespace["run"](torch.randn(4))
    assert {m.split("Recompiling function ")[1].split()[0] for m in messages} == {"cast", "clip"}, messages


@requires_torch
def test_the_dtype_names_are_torchs() -> None:
    import torch

    from dynalint.analysis.knowledge import TORCH_DTYPE_ALIASES, TORCH_DTYPE_NAMES

    kinds = (torch.dtype, torch.layout, torch.memory_format)
    assert all(isinstance(getattr(torch, name), kinds) for name in TORCH_DTYPE_NAMES)
    assert all(getattr(torch, alias) == getattr(torch, name) for alias, name in TORCH_DTYPE_ALIASES.items())
    # every other pair of names is two dtypes
    canonical = {TORCH_DTYPE_ALIASES.get(n, n) for n in TORCH_DTYPE_NAMES}
    assert len({getattr(torch, n) for n in canonical}) == len(canonical)
