"""``eager-helper`` (DYN102): with ``capture_scalar_outputs`` on, a helper that indexes a Python list with a
number taken from tensor data makes Dynamo fail to compile; the helper runs outside the compiled code
instead, and the rest keeps the flag."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source
from dynalint.rules.base import Example
from helpers import break_lines, eager_outputs, outputs_close, run_example_under_dynamo

#: a resize that draws its size as torchvision's detection transform does (``torch_choice``)
MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F

torch._dynamo.config.capture_scalar_outputs = True


class Resize(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.sizes = sizes

    def choice(self, k: list[int]) -> int:
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def forward(self, x):
        size = self.choice(self.sizes)
        scale = x.abs().amax().item()
        return F.interpolate(x, size=(size, size)) / scale


model = Resize([4, 6, 8])
compiled = torch.compile(model, backend="eager")


def main(x):
    return compiled(x)
"""

FIXED_METHOD = """    @torch.compiler.disable
    def choice(self, k: list[int]) -> int:
"""


def _example(code: str, inputs: str) -> Example:
    """``main`` of ``code`` over ``inputs``, called as it is (it calls what the code compiles)."""
    return Example(code, inputs=inputs, target="main", compile_target=False)


def fixed(code: str, **settings) -> tuple[str, list[str]]:
    result = fix_source(textwrap.dedent(code), "example.py", Settings(**settings), unsafe=True)
    return result.source, [r.reason for r in result.refused if r.fixer == "eager-helper"]


def test_the_helper_is_disabled_and_the_rest_is_left_as_it_is():
    source, _ = fixed(MODEL)
    assert source == MODEL.replace("    def choice(self, k: list[int]) -> int:\n", FIXED_METHOD)
    # the call of the disabled helper is the break left; the `.item()` after it stays in the graph
    assert break_lines(source) == {source.splitlines().index("        size = self.choice(self.sizes)") + 1}


def test_without_the_flag_nothing_fails_to_compile_and_nothing_is_disabled():
    code = MODEL.replace("torch._dynamo.config.capture_scalar_outputs = True\n", "")
    source, _ = fixed(code)
    assert "compiler.disable" not in source


def test_the_flag_declared_in_the_settings_counts_as_set():
    code = MODEL.replace("torch._dynamo.config.capture_scalar_outputs = True\n", "")
    source, _ = fixed(code, capture_scalar_outputs=True)
    assert FIXED_METHOD in source


@requires_torch
def test_dynamo_fails_to_compile_the_original_and_compiles_the_fix(tmp_path):
    source, _ = fixed(MODEL)
    inputs = "[(torch.randn(1, 2, 5, 5),), (torch.randn(1, 2, 7, 7),), (torch.randn(1, 2, 5, 5),)]"
    before, _ = run_example_under_dynamo(_example(MODEL, inputs), tmp_path / "before")
    after, module = run_example_under_dynamo(_example(source, inputs), tmp_path / "after")
    assert before.errors and "GuardOnDataDependentSymNode" in str(before.errors)
    assert not after.errors, after.errors
    assert after.break_lines(module.__file__) == break_lines(source)
    # the same inputs and draws (seeded per call) give the outputs of the original run eagerly
    uncompiled = MODEL.replace('torch.compile(model, backend="eager")', "model")
    eager = eager_outputs(_example(uncompiled, inputs), tmp_path / "eager")
    assert len(eager) == len(after.outputs) == 3
    assert all(outputs_close(a, b) for a, b in zip(eager, after.outputs))


REFUSED = [
    ("""
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        SIZES = [1, 2, 3]

        @torch.compile
        def pick(x):
            return x * SIZES[int(x.argmax().item())]
    """, "is what torch.compile compiles"),
    ("""
        import torch
        import torch.nn as nn

        torch._dynamo.config.capture_scalar_outputs = True

        class Pick(nn.Module):
            def __init__(self):
                super().__init__()
                self.names = [1, 2, 3]

            def forward(self, x):
                return x * self.names[int(x.argmax().item())]

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.pick = Pick()

            def forward(self, x):
                return self.pick(x) + 1

        compiled = torch.compile(Model())
    """, "is the call of its class"),
    ("""
        import torch
        import torch.nn as nn

        torch._dynamo.config.capture_scalar_outputs = True

        class Pick(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = nn.Linear(4, 3)
                self.scales = [1.0, 2.0, 3.0]

            def scaled(self, x):
                y = self.heads(x)
                return y * self.scales[int(y.argmax().item())]

            def forward(self, x):
                return self.scaled(x)

        compiled = torch.compile(Pick())
    """, "calls a module (`self.heads(x)`)"),
    ("""
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        SCALES = [1.0, 2.0]

        def scaled(x):
            return x * SCALES[int(x.argmax().item())]

        @torch.compile
        def f(x):
            return scaled(x) + 1
    """, "returns a tensor"),
    ("""
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        SCALES = [1.0, 2.0]

        def params(x):
            return {"scale": SCALES[int(x.argmax().item())], "noise": torch.randn_like(x)}

        @torch.compile
        def f(x):
            p = params(x)
            return x * p["scale"] + p["noise"]
    """, "returns a tensor (in `{\"scale\": SCALES"),
    ("""
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        SCALES = [1.0, 2.0]

        @torch.compile
        def f(x):
            def pick(t):
                return SCALES[int(t.argmax().item())]
            return x * pick(x)
    """, "is nested in a function"),
    ("""
        import torch

        torch._dynamo.config.capture_scalar_outputs = True

        SCALES = [1.0, 2.0]

        def draw(x):
            return int(x.argmax().item())

        def pick(x):
            return SCALES[draw(x)]

        @torch.compile
        def f(x):
            return x * pick(x)
    """, "made in another function"),
]


@pytest.mark.parametrize("code, reason", REFUSED, ids=["compiled", "forward", "module-call", "tensor-result",
                                                      "tensor-in-dict", "nested", "made-elsewhere"])
def test_refused_with_a_reason(code, reason):
    source, reasons = fixed(code)
    assert "compiler.disable" not in source
    assert any(reason in r for r in reasons), reasons


#: no flag set; the second `.item()` only `capture_scalar_outputs` keeps in the graph (a size)
CARRIED = MODEL.replace("torch._dynamo.config.capture_scalar_outputs = True\n\n\n", "\n").replace(
    "        scale = x.abs().amax().item()\n        return F.interpolate(x, size=(size, size)) / scale\n",
    "        n = int((x > 0).sum().item())\n"
    "        return F.interpolate(x, size=(size, size)).sum() + torch.ones(n).sum()\n")


def test_capture_flags_carries_the_disabled_helper():
    """The flag that removes the size's break would make the helper fail to compile: the two are applied
    together (without the helper's rewrite the flag is refused)."""
    result = fix_source(CARRIED, "example.py", Settings(), unsafe=True)
    assert [f.fixer for f in result.applied] == ["capture-flags"], result.applied
    assert FIXED_METHOD in result.source
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model" in result.source
    assert "`choice` runs outside the compiled code (eager-helper)" in result.applied[0].description


@requires_torch
def test_dynamo_keeps_the_size_in_the_graph_and_breaks_only_at_the_helper(tmp_path):
    source = fix_source(CARRIED, "example.py", Settings(), unsafe=True).source
    inputs = "[(torch.randn(1, 2, 5, 5),), (torch.randn(1, 2, 7, 7),), (torch.randn(1, 2, 5, 5),)]"
    runs = {}
    for name, code in (("before", CARRIED), ("after", source)):
        runs[name] = run_example_under_dynamo(_example(code, inputs), tmp_path / name)
    (before, before_module), (after, after_module) = runs["before"], runs["after"]
    assert not before.errors and not after.errors, (before.errors, after.errors)
    lines = CARRIED.splitlines()
    assert before.break_lines(before_module.__file__) == {
        lines.index("        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())") + 1,
        lines.index("        n = int((x > 0).sum().item())") + 1}
    assert after.break_lines(after_module.__file__) == break_lines(source) == {
        source.splitlines().index("        size = self.choice(self.sizes)") + 1}
    for a, b in zip(before.outputs, after.outputs):
        assert outputs_close(a, b)


#: a model whose compile fails under the flag it sets (the drawn index is deterministic: an argmax)
FAILING = """import torch
import torch.nn as nn

torch._dynamo.config.capture_scalar_outputs = True

SCALES = [0.5, 1.0, 2.0, 4.0]


def pick(k, x):
    index = int(x.abs().argmax().item()) % len(k)
    return k[index]


class Scale(nn.Module):
    def forward(self, x):
        n = x.abs().amax().item()
        return x * pick(SCALES, x) / n


def dynalint_inputs():
    return [((), (torch.randn(5),)) for _ in range(3)]
"""


@requires_torch
def test_fix_verify_confirms_the_fix_of_a_compile_that_failed(tmp_path, capsys):
    """The real path of ``fix --verify``: the original fails to compile on every call (the eager calls
    do not), so it has no breaks to compare; the fix is kept because Dynamo compiles the fixed code and its
    outputs equal the original's eager ones."""
    from dynalint.adapters.cli import main

    path = tmp_path / "scale.py"
    path.write_text(FAILING)
    code = main(["fix", "--unsafe-fixes", "--verify", f"{path}::Scale", "--timeout", "120", str(path)])
    err = capsys.readouterr().err
    assert "@torch.compiler.disable\ndef pick(k, x):" in path.read_text(), err
    assert "DYN102 fixed (unsafe): run `pick` outside the compiled code" in err
    assert "fix left out" not in err and "Traceback" not in err and code in (0, 1)
