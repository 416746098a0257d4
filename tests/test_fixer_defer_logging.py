"""defer-logging makes sure the deferred call is still made: refused where an op that may raise follows it
in its graph, or where Dynamo inlines its function (a submodule's ``forward``), which drops it (measured
through real Dynamo, torch 2.13, backend ``eager``)."""
from __future__ import annotations

import contextlib
import io
import textwrap
import types

import pytest

from conftest import requires_torch
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

SUBMODULE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Sub(nn.Module):
        def forward(self, x):
            y = x + 1
            print("sub", y.sum())
            return y * 2

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x):
            return self.sub(x) + 1

    model = torch.compile(Top())
""")


def _reasons(source: str) -> list[str]:
    result = fix_source(source, "m.py", Settings(), unsafe=True)
    assert "defer-logging" not in {a.fixer for a in result.applied}, result.source
    return [r.reason for r in result.refused if r.fixer == "defer-logging"]


@pytest.mark.parametrize("after", ["return y @ w", "return y.view(2, 2)", "z = y.mean()\n    return z",
                                   "y = y - 1\n    return y"])
def test_an_op_that_may_raise_after_the_call_is_refused(after):
    source = textwrap.dedent("""
        import torch

        @torch.compile
        def f(x, w):
            y = x + 1
            print("y", y.sum())
            {after}
    """).replace("{after}", after)
    reasons = _reasons(source)
    assert reasons and "may raise after the call" in reasons[0] and "never be made" in reasons[0], reasons


def test_a_call_in_an_inlined_function_is_refused():
    reasons = _reasons(SUBMODULE)
    assert reasons and "is not known to be what torch.compile compiles itself" in reasons[0], reasons


def test_another_call_the_config_line_would_defer_is_checked_too():
    """The config line defers the submodule's ``print`` as well: the top-level one is refused for it."""
    source = SUBMODULE.replace("        return self.sub(x) + 1",
                               "        out = self.sub(x) + 1\n        print(\"top\")\n        return out")
    assert 'print("top")' in source
    reasons = _reasons(source)
    assert any("is also called there" in r for r in reasons), reasons


@requires_torch
def test_dynamo_drops_a_deferred_call_in_a_submodule():
    """Why the inlined case is refused: with ``print`` reorderable, the submodule's print never shows."""
    import torch

    module = types.ModuleType("m")
    exec(compile(SUBMODULE, "m.py", "exec"), module.__dict__)  # noqa: S102 - the source is ours
    eager, compiled = io.StringIO(), io.StringIO()
    functions = torch._dynamo.config.reorderable_logging_functions
    with contextlib.redirect_stdout(eager):
        module.Top()(torch.ones(3))
    torch._dynamo.reset()
    with contextlib.redirect_stdout(compiled), \
            torch._dynamo.config.patch(reorderable_logging_functions=functions | {print}):
        torch.compile(module.Top(), backend="eager")(torch.ones(3))
    assert eager.getvalue().startswith("sub") and compiled.getvalue() == ""
    assert _reasons(SUBMODULE)


def test_no_config_line_for_a_call_another_fix_of_the_round_moves_out_of_compiled_code():
    """The last statements of a training step break the graph on every run (eager-tail) and end with a
    ``print`` defer-logging could defer: eager-tail takes that ``print`` out of the compiled code, so the
    process-wide line for it would change only other code; the two fixes wait for each other."""
    source = textwrap.dedent("""
        import torch

        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        @torch.compile
        def train_step(x, y):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print("loss", loss)
            return loss
    """)
    alone = fix_source(source.replace("    opt.zero_grad()\n    loss.backward()\n    opt.step()\n", ""), "m.py",
                       Settings(), unsafe=True)
    assert "reorderable_logging_functions.add(print)" in alone.source  # the print alone is deferred
    result = fix_source(source, "m.py", Settings(), unsafe=True)
    assert "eager-tail" in {a.fixer for a in result.applied}, result.source
    assert "reorderable_logging_functions" not in result.source, result.source
