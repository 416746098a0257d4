"""What the analysis knows of calls, from torch itself: torch functions, ``Tensor`` methods and ``torch.nn``
module constructors Dynamo breaks on (generated into ``dynalint.analysis.skipped_calls``), calls measured one
by one (``torch.autograd.grad``, ``nn.Parameter``, ``F.one_hot`` without ``num_classes``, changing the
warning filters), a ``with`` on a context manager made outside the compiled code, the methods that show a
value is a Python container, not a tensor, and a project's own ``is_compiling()``, true under Dynamo.
``check`` reports each break and stays silent on the forms Dynamo traces, where Dynamo itself breaks and
does not."""
from __future__ import annotations

from conftest import requires_torch

import dynalint.analysis.knowledge as K
import dynalint.analysis.skipped_calls as committed
from helpers import checked_breaks, dynamo_break_lines

CODE = """\
    import warnings

    import torch
    import torch.nn.functional as F
    from torch import nn


    class Tracker:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


    TRACKER = Tracker()


    @torch.compile(backend="eager")
    def seeded(x):
        torch.set_rng_state(torch.get_rng_state())
        return x + 1


    @torch.compile(backend="eager")
    def offset(x):
        return x + x.storage_offset()


    @torch.compile(backend="eager")
    def built(x):
        return nn.Linear(4, 4)(x)


    @torch.compile(backend="eager")
    def built_without_parameters(x):
        return nn.LayerNorm(4, elementwise_affine=False)(x) + nn.ReLU()(x)


    @torch.compile(backend="eager")
    def classes_from_data(i):
        return F.one_hot(i)


    @torch.compile(backend="eager")
    def classes_given(i):
        return F.one_hot(i, 8)


    @torch.compile(backend="eager")
    def gradient(x):
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad((x * x).sum(), x)
        return g


    @torch.compile(backend="eager")
    def parameter(x):
        return nn.Parameter(x * 2) + 1


    @torch.compile(backend="eager")
    def quiet(x):
        warnings.simplefilter("ignore")
        return x + 1


    @torch.compile(backend="eager")
    def outside_context(x):
        with TRACKER:
            x = x + 1
        return x


    @torch.compile(backend="eager")
    def inside_context(x):
        t = Tracker()
        with t:
            x = x + 1
        return x


    @torch.compile(backend="eager")
    def digits(x, s):
        if s.isdigit():
            return x * int(s)
        return x


    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.ctx = Tracker()

        def forward(self, x):
            with self.ctx:
                x = x + 1
            return x


    held = torch.compile(Holder(), backend="eager")
    _query = getattr(torch.compiler, "is_compiling", None) or getattr(torch._dynamo, "is_compiling", None)


    def is_compiling():
        return bool(_query()) if _query is not None else False


    @torch.compile(backend="eager")
    def guarded(x):
        if not is_compiling() and x.max() > 0:
            print("eager only")
        return x + 1


    def main(x):
        i = torch.arange(4)
        return (seeded(x), offset(x), built(x), built_without_parameters(x), classes_from_data(i),
                classes_given(i), gradient(x), parameter(x), quiet(x), outside_context(x), inside_context(x),
                digits(x, "3"), held(x), guarded(x))
"""
INPUTS = "[(torch.randn(4),)]"
BREAK_LINES = {21, 27, 32, 42, 52, 53, 59, 64, 70, 96}  # 52: requires_grad_ on a tensor made in the graph


def test_the_table_holds_torch_functions_methods_and_modules() -> None:
    assert {"torch.save", "torch.set_rng_state", "torch.initial_seed"} <= committed.BREAKING_CALLS.keys()
    assert {"storage_offset", "retain_grad"} <= committed.BREAKING_TENSOR_METHODS.keys()
    # methods Dynamo traces, or that need arguments, are not listed
    assert not {"add_", "view", "numpy", "register_hook"} & committed.BREAKING_TENSOR_METHODS.keys()
    assert committed.PARAMETER_MODULES["torch.nn.Linear"] == {}
    assert committed.PARAMETER_MODULES["torch.nn.LayerNorm"] == {"elementwise_affine": 2}
    assert "torch.nn.ReLU" not in committed.PARAMETER_MODULES


def test_check_reports_the_breaks_only(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, CODE) == {(line, "DYN105") for line in BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == BREAK_LINES


@requires_torch
def test_container_methods_are_not_tensor_or_array_methods() -> None:
    """The names that show a value is not a tensor are methods of Python's containers or strings and of
    neither ``torch.Tensor`` nor ``numpy.ndarray`` (which Dynamo traces as a tensor)."""
    import numpy as np
    import torch

    python = set().union(*(dir(t) for t in (str, bytes, list, dict, set, frozenset, tuple)))
    assert K.CONTAINER_METHODS <= python
    assert not K.CONTAINER_METHODS & (set(dir(torch.Tensor)) | set(dir(np.ndarray)))
