"""Custom ops called in one module and given their fake implementation in another.

Importing a package registers all its ops, so a module that calls ``torch.ops.ns.op`` breaks the graph
("Dynamic shape operator") when any module of its package registers a fake implementation of the op
that asks for a fresh size, also one that is not checked; so does a call of a ``torch.library.custom_op``
function imported from a checked module whose fake asks for one.  An op whose fake keeps the input's
size is traced."""
from __future__ import annotations

import importlib
import json

from conftest import requires_torch
from helpers import run, write

PACKAGE = "dynalint_opspkg"
INIT = f"from {PACKAGE} import _fakes  # noqa: F401\n"
FAKES = """\
import torch

torch.library.define("dynalint_opspkg::keep", "(Tensor x, float t) -> Tensor")
torch.library.define("dynalint_opspkg::same", "(Tensor x) -> Tensor")


@torch.library.register_fake("dynalint_opspkg::keep")
def _keep_fake(x, t):
    ctx = torch._custom_ops.get_ctx()
    return x.new_empty(ctx.create_unbacked_symint(), dtype=torch.long)


@torch.library.register_fake("dynalint_opspkg::same")
def _same_fake(x):
    return torch.empty_like(x)


@torch.library.custom_op("dynalint_opspkg::positive", mutates_args=())
def positive(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0].clone()


@positive.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


torch.library.impl("dynalint_opspkg::keep", "cpu")(lambda x, t: (x > t).nonzero().flatten())
torch.library.impl("dynalint_opspkg::same", "cpu")(lambda x: x.clone())
"""
OPS = """\
import torch

from dynalint_opspkg._fakes import positive


def keep(x, t: float):
    return torch.ops.dynalint_opspkg.keep(x, t)


@torch.compile(backend="eager")
def main(x):
    k = keep(x * 2, 0.5)
    s = torch.ops.dynalint_opspkg.same(x)
    p = positive(x)
    return k + 1, s, p
"""
#: the calls of the ops whose fake asks for a fresh size (not the one of the op whose fake keeps the size)
BREAK_LINES = {7, 14}
#: what checking the caller alone finds: the function `positive` is then not resolved to the op it is
ALONE_LINES = {7}


def _package(tmp_path) -> str:
    """Write the package; returns the path of the module that calls the ops."""
    write(tmp_path, f"{PACKAGE}/__init__.py", INIT)
    write(tmp_path, f"{PACKAGE}/_fakes.py", FAKES)
    return write(tmp_path, f"{PACKAGE}/ops.py", OPS)


def _checked_lines(capsys, *paths: str) -> set[int]:
    _, out, _ = run(capsys, "--format", "json", *paths)
    return {d["line"] for d in json.loads(out) if d["kind"] == "graph-break" and d["path"].endswith("ops.py")}


def test_check_finds_the_fake_in_a_module_not_checked(tmp_path, capsys) -> None:
    ops = _package(tmp_path)
    assert _checked_lines(capsys, ops) == ALONE_LINES
    assert _checked_lines(capsys, str(tmp_path / PACKAGE)) == BREAK_LINES


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path, monkeypatch) -> None:
    import torch

    from dynalint.verify.probe import observe

    ops_path = _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    ops = importlib.import_module(f"{PACKAGE}.ops")
    obs = observe(ops.main, [(torch.randn(6),)], files_of_interest=[ops_path], compile=False)
    assert not obs.errors, obs.errors
    assert obs.break_lines(ops_path) == BREAK_LINES
