"""Recompiles predicted from how the callers of a compiled function call it, in its file and in the
other files of the project, and the parameters every caller in the project passes a number.

Each project below was run through real Dynamo (torch 2.13, ``backend="eager"``): a number that
changes between calls recompiles once, then is dynamic (every new value under ``dynamic=False``);
`None` at one call and a tensor at another, or a list and a tuple, compile two graphs."""
from __future__ import annotations

import sys
import textwrap

import pytest

from conftest import requires_torch
from dynalint.config.resolver import resolve
from dynalint.engine.session import Session
from helpers import compile_eagerly, dynamo_recompile_log

SAMPLER = """
    import torch


    @torch.compile
    def step(x, t, guidance_scale):
        if guidance_scale > 1.0:
            x = x * guidance_scale
        return x - t
"""

SCRIPT = """
    import torch
    from pkg.sampler import step


    def main():
        x = torch.randn(4)
        for t in (0.9, 0.5, 0.1):
            x = step(x, t, 7.5)
        return x
"""

HEADS = """
    import torch


    @torch.compile
    def head(x, mask):
        if mask is not None:
            x = x * mask
        return torch.softmax(x, dim=-1)


    @torch.compile
    def pool(x, dims):
        return x.sum(dims[0]) + len(dims)


    @torch.compile(dynamic=False)
    def scaled(x, k):
        return x * k
"""

TRAIN = """
    import torch
    from pkg.heads import head, pool, scaled

    SCHEDULE = [1.0, 0.5, 0.25]


    def run(x):
        a = head(x, None)
        b = head(x, torch.ones(4))
        c = pool(x, [0])
        d = pool(x, (0,))
        return a, b, c, d


    def anneal(x):
        for k in SCHEDULE:
            x = scaled(x, k)
        return x
"""


def _project(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    monkeypatch.chdir(tmp_path)


def _check(paths: list[str], cache_dir: str | None = None) -> list[tuple[str, int, str, str]]:
    session = Session(resolve(["."]), cache_dir=cache_dir)
    results = list(session.check(paths))
    assert not [r.error for r in results if r.error]
    return sorted((r.path, d.line, d.code, d.message) for r in results for d in r.diagnostics)


def test_a_parameter_every_caller_in_another_file_passes_a_number_is_a_number(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/sampler.py": SAMPLER, "run.py": SCRIPT})
    found = _check(["pkg/sampler.py"])
    assert [code for _, _, code, _ in found] == ["DYN206"]  # `t` from the loop; no DYN101 on the scale
    assert "`step(x, t, 7.5)` in `main`, `run` line 8 passes `0.9`, `0.5`, `0.1` in turn" in found[0][3]


@pytest.mark.parametrize("script", [
    # a caller that passes a tensor
    SCRIPT.replace("step(x, t, 7.5)", "step(x, t, torch.ones(4))"),
    # the function passed on: not every call is seen
    SCRIPT + "\n\n    HANDLERS = [step]\n",
    # a call at module level
    SCRIPT + "\n\n    y = step(torch.ones(4), 0.5, torch.ones(4))\n",
])
def test_a_caller_in_another_file_that_is_not_seen_to_pass_a_number_keeps_the_break(
        tmp_path, monkeypatch, script):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/sampler.py": SAMPLER, "run.py": SCRIPT})
    assert "DYN101" not in {code for _, _, code, _ in _check(["pkg/sampler.py"])}
    (tmp_path / "run.py").write_text(textwrap.dedent(script).lstrip("\n"))
    assert "DYN101" in {code for _, _, code, _ in _check(["pkg/sampler.py"])}


def test_calls_through_a_module_name_and_a_package_reexport_are_callers(tmp_path, monkeypatch):
    script = """
        import torch
        import pkg.sampler
        from pkg import sampler as S
        from pkg import step as go


        def main(x):
            return pkg.sampler.step(x, 0.1, 2.0) + S.step(x, 0.1, 2.0) + go(x, 0.1, 2.0)
    """
    files = {"pkg/__init__.py": "from .sampler import step\n", "pkg/sampler.py": SAMPLER, "run.py": script}
    _project(tmp_path, monkeypatch, files)
    assert _check(["pkg/sampler.py"]) == []
    # the same through the re-export, with a tensor: the break stays
    (tmp_path / "run.py").write_text(textwrap.dedent(script).replace("go(x, 0.1, 2.0)", "go(x, 0.1, x)"))
    assert "DYN101" in {code for _, _, code, _ in _check(["pkg/sampler.py"])}


def test_a_new_caller_in_another_file_is_seen_by_a_cached_run(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/sampler.py": SAMPLER, "run.py": SCRIPT})
    cache = str(tmp_path / "cache")
    assert "DYN101" not in {code for _, _, code, _ in _check(["pkg/sampler.py"], cache)}
    other = "import torch\nfrom pkg.sampler import step\n\n\ndef go(x):\n    return step(x, 0.1, torch.ones(4))\n"
    (tmp_path / "other.py").write_text(other)
    fresh = _check(["pkg/sampler.py"])
    assert "DYN101" in {code for _, _, code, _ in fresh}
    assert _check(["pkg/sampler.py"], cache) == fresh


def test_none_and_a_tensor_a_list_and_a_tuple_and_a_schedule_under_dynamic_false(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/heads.py": HEADS, "train.py": TRAIN})
    found = {line: message for _, line, code, message in _check(["pkg/heads.py"]) if code == "DYN206"}
    assert set(found) == {5, 12, 17}
    assert "(`head(x, None)` in `run`, `train` line 8 passes `None`; " \
           "`head(x, torch.ones(4))` in `run`, `train` line 9 passes a tensor)" in found[5]
    assert "`pool(x, [0])` in `run`, `train` line 10 passes a list; " \
           "`pool(x, (0,))` in `run`, `train` line 11 passes a tuple" in found[12]
    assert "`dynamic=False`" in found[17] and "`scaled(x, k)` in `anneal`, `train` line 17" in found[17]


def test_the_same_calls_in_one_file(tmp_path, monkeypatch):
    text = textwrap.dedent(HEADS) + textwrap.dedent(TRAIN).replace("from pkg.heads import head, pool, scaled\n", "")
    _project(tmp_path, monkeypatch, {"one.py": text})
    found = {line: message for _, line, code, message in _check(["one.py"]) if code == "DYN206"}
    assert set(found) == {5, 12, 17}
    assert "(`head(x, None)` in `run` passes `None`; `head(x, torch.ones(4))` in `run` passes a tensor)" \
        in found[5]


@pytest.mark.parametrize("call", [
    "head(x, None)",  # the same value at every call
    "head(x, torch.ones(4))",
])
def test_one_kind_of_argument_is_no_recompile(tmp_path, monkeypatch, call):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/heads.py": HEADS, "train.py": TRAIN})
    assert 5 in {line for _, line, code, _ in _check(["pkg/heads.py"]) if code == "DYN206"}
    script = f"import torch\nfrom pkg.heads import head\n\n\ndef run(x):\n    return {call}, {call}\n"
    (tmp_path / "train.py").write_text(script)
    assert _check(["pkg/heads.py"]) == []


@requires_torch
def test_the_projects_recompile_under_dynamo(tmp_path, monkeypatch):
    """The recompiles the findings above predict, counted with real Dynamo."""
    import torch

    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/heads.py": HEADS, "train.py": TRAIN,
                                     "pkg/sampler.py": SAMPLER, "run.py": SCRIPT})
    compile_eagerly(monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with dynamo_recompile_log() as messages:
            import train
            import run

            train.run(torch.randn(4))
            train.anneal(torch.randn(4))
            run.main()
    finally:
        for name in ("train", "run", "pkg", "pkg.heads", "pkg.sampler"):
            sys.modules.pop(name, None)
    failures = [message.split("failure(s):")[-1].strip() for message in messages]
    guards = " ".join(failures)
    assert "mask is None" in guards  # None, then a tensor
    assert "check_type_id(dims" in guards  # a list, then a tuple
    assert "k == 1.0" in guards and "k == 0.5" in guards  # dynamic=False: each new value
    assert "t == 0.9" in guards  # the loop's floats: once, then dynamic
    assert len(failures) == 5
    # dynalint names the parameters Dynamo guards on, no other
    found = _check(["pkg/heads.py", "pkg/sampler.py"])
    named = {message.split("`")[1] for _, _, code, message in found if code == "DYN206"}
    guarded = {"mask", "dims", "k", "t"}
    assert named == {p for p in guarded if any(p in f for f in failures)} == guarded


MODELS = """
    import torch.nn as nn
    import torch.nn.functional as F


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return F.dropout(self.fc(x), 0.1, training=self.training)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(Block(), nn.ReLU())

        def forward(self, x):
            return self.body(x)


    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.norm = nn.LayerNorm(4)

        def forward(self, x):
            return self.norm(self.fc(x))
"""

FIT = """
    import torch
    from pkg.models import Net, Plain


    def fit(batches, val):
        model = Net()
        compiled = torch.compile(model)
        plain = torch.compile(Plain())
        for epoch in range(2):
            model.train()
            plain.train()
            for b in batches:
                compiled(b)
                plain(b)
            model.eval()
            plain.eval()
            compiled(val)
            plain(val)
"""


def test_a_module_called_in_both_modes_by_another_file(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/models.py": MODELS, "fit.py": FIT})
    found = [(line, message) for _, line, code, message in _check(["pkg/models.py"]) if code == "DYN205"]
    assert len(found) == 1 and found[0][0] == 19  # Net.forward, through Block's `self.training`; not Plain
    assert "a `Net` is called in training mode, then switched to evaluation mode and called again " \
           "(`compiled(b)` in `fit`, `fit` line 13; `model.eval()` in `fit`, `fit` line 15; " \
           "`compiled(val)` in `fit`, `fit` line 17)" in found[0][1]
    # switched once before every call: one mode only
    (tmp_path / "fit.py").write_text(textwrap.dedent(FIT).replace("    model.train()\n", "    model.eval()\n"))
    assert [code for _, _, code, _ in _check(["pkg/models.py"])] == []


@requires_torch
def test_the_mode_flip_recompiles_under_dynamo(tmp_path, monkeypatch):
    """Net recompiles once when switched to eval, Plain never (calls with grad on: only the mode
    changes)."""
    import torch

    _project(tmp_path, monkeypatch, {"pkg/__init__.py": "", "pkg/models.py": MODELS, "fit.py": FIT})
    compile_eagerly(monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with dynamo_recompile_log() as failures:
            import fit

            fit.fit([torch.randn(2, 4)] * 2, torch.randn(2, 4))
    finally:
        for name in ("fit", "pkg", "pkg.models"):
            sys.modules.pop(name, None)
    assert len(failures) == 1 and "training == True" in failures[0]


AGENT = """
    import torch


    class Agent:
        def __init__(self):
            self.scale = 2.0

        def act(self, obs, greedy=False):
            if not greedy:
                return obs * self.scale
            return obs.argmax()


    def main():
        agent = Agent()
        agent.act = torch.compile(agent.act)
        for _ in range(3):
            agent.act(torch.randn(4))
        return agent.act(torch.randn(4), greedy=True)
"""


def test_a_call_that_leaves_a_parameter_out_passes_its_default_through_a_compiled_attribute():
    """Measured on torch 2.13: ``greedy == False`` fails when the last call passes ``True``."""
    from helpers import check

    found = [d.message for d in check(AGENT) if d.code == "DYN206"]
    assert len(found) == 1 and found[0].startswith("`greedy` varies")
    assert "passes its default `False`" in found[0] and "greedy=True)` in `main` passes `True`" in found[0]
    # every call passes the default: nothing varies
    assert not [d for d in check(AGENT.replace(", greedy=True", "")) if d.code == "DYN206"]


PATCHED = """
    import torch


    def step(x, k: float):
        return x * int(k)


    def main():
        compiled = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(step))
        return [compiled(torch.randn(4), 1 + 0.5), compiled(torch.randn(4), 2 + 0.5)]
"""


def test_literal_arithmetic_through_a_patched_compiled_handle():
    """Measured on torch 2.13: ``k == 1.5`` fails at the second call (the patch calls the compiled
    function with the same arguments)."""
    from helpers import check

    found = [d.message for d in check(PATCHED) if d.code == "DYN206"]
    assert len(found) == 1 and "passes `1.5`" in found[0] and "passes `2.5`" in found[0]
    assert not [d for d in check(PATCHED.replace("2 + 0.5", "3 - 1.5")) if d.code == "DYN206"]
