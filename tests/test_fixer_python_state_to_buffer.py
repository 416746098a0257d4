"""python-state-to-buffer: annotated assignments in ``__init__`` count, and the fix says exactly what it
changes in the module (what code walking the module sees, measured through torch)."""
from __future__ import annotations

import textwrap
import types

from conftest import requires_torch
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

COUNTER = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps: int = 0

        @torch.compile
        def forward(self, x):
            self.steps += 1
            return x * 2
""")


def _fix(source: str):
    return fix_source(source, "m.py", Settings(), unsafe=True)


def test_an_annotated_assignment_in_init_is_the_start_value():
    result = _fix(COUNTER)
    assert [a.fixer for a in result.applied] == ["python-state-to-buffer"], result.refused
    assert 'self.register_buffer("steps", torch.tensor(0, dtype=torch.long), persistent=False)' in result.source
    assert "self.steps: int" not in result.source


def test_an_annotated_bool_is_refused_for_what_it_is():
    result = _fix(COUNTER.replace("self.steps: int = 0", "self.keep: bool = False").replace("steps", "keep"))
    reasons = [r.reason for r in result.refused if r.fixer == "python-state-to-buffer"]
    assert reasons and "starts as `False`" in reasons[0], result.refused
    assert not any("does not set the attribute" in r for r in reasons)


@requires_torch
def test_the_fix_says_what_changes_in_the_module():
    import torch

    result = _fix(COUNTER)
    description = result.applied[0].description
    for said in ("buffers()/named_buffers()", "non-persistent", "state_dict() unchanged", "0-d int64 tensor"):
        assert said in description, description
    before, after = (_load(code).M() for code in (COUNTER, result.source))
    assert [n for n, _ in before.named_buffers()] == [] and [n for n, _ in after.named_buffers()] == ["steps"]
    assert list(before.state_dict()) == list(after.state_dict())
    assert isinstance(after.steps, torch.Tensor) and after.steps.dtype == torch.int64 and after.steps.dim() == 0


def _load(source: str):
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # noqa: S102 - the sources are ours
    return module
