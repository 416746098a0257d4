"""``dynalint verify``'s figures against an independent count of Dynamo's own log.

For each module, :mod:`verify_truth` runs it as a plain program would (one process, one
import) under ``TORCH_LOGS=graph_breaks,recompiles`` with a backend that tells cache hits
from eager runs; verify must report the same status for every call, the same recompiles
and break sites, and the same verdict on compiled against eager outputs.
"""
from __future__ import annotations

import os

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.verify.api import Options, verify_targets
from dynalint.verify.targets import Ref
from verify_truth import truth

pytestmark = requires_torch

CASES = os.path.join(os.path.dirname(__file__), "verify_cases")


def _tensors(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):  # a transformers ModelOutput
        value = value.to_tuple()
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _same(a: list, b: list) -> bool:
    import torch

    x, y = _tensors(a), _tensors(b)
    return len(x) == len(y) and all(torch.allclose(p, q, atol=1e-5) for p, q in zip(x, y))


@pytest.mark.parametrize("file, target", [
    ("counter", "StepCounter"),  # over the recompile limit
    ("decorated", "Decorated"),  # a decorated forward: cache hits, not eager runs
    ("reads_env", "EnvScaled"),  # reads the environment at import; the hook sets it
    ("tiny_bert", "TinyBert"),  # a transformers model (skipped without transformers)
])
def test_verify_equals_an_independent_count_of_dynamos_log(file, target, tmp_path):
    if file == "tiny_bert":
        pytest.importorskip("transformers")
    path = os.path.join(CASES, file + ".py")
    o = verify_targets([Ref(path, target)], Settings(), Options(fix=False, what_if=False))[0].devices[0].original
    assert o.status == "ok", o.message
    compiled = truth(path, target, "compiled", str(tmp_path))
    eager = truth(path, target, "eager", str(tmp_path))
    assert [c.status for c in o.calls] == compiled.statuses
    assert len(o.recompiles) == compiled.recompiles
    assert {(os.path.realpath(b.file), b.line) for b in o.breaks} == compiled.break_sites
    assert o.hits == compiled.statuses.count("hit")
    assert o.outputs_equal is _same(compiled.outputs, eager.outputs)


def test_recompiles_at_the_limit_are_the_ones_dynamo_made():
    o = verify_targets([Ref(os.path.join(CASES, "counter.py"), "StepCounter")], Settings(),
                       Options(fix=False, what_if=False))[0].devices[0].original
    assert len(o.recompiles) == 7  # limit 8: one compile and 7 recompiles; the 9th attempt is refused
    assert [c.status for c in o.calls].count("eager") == 3


def test_decorated_forward_is_served_from_the_cache():
    o = verify_targets([Ref(os.path.join(CASES, "decorated.py"), "Decorated")], Settings(),
                       Options(fix=False, what_if=False))[0].devices[0].original
    assert [c.status for c in o.calls] == ["compile", "hit", "hit", "hit"]
    assert o.hit_rate == 0.75 and o.cost.eager_fallback_calls == 0
    assert o.cost.t_guard_s is not None and o.cost.t_guard_s > 0


def test_every_phase_starts_from_the_same_process_state():
    d = verify_targets([Ref(os.path.join(CASES, "reads_env.py"), "EnvScaled")], Settings(),
                       Options(fix=False, what_if=False))[0].devices[0]
    assert d.original.outputs_equal is True
    assert "DYNALINT_CASE_SCALE" not in os.environ
