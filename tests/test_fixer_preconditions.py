"""Each fixer refuses what it cannot prove, and says why (no torch needed)."""
from __future__ import annotations

import textwrap

import pytest

from dynalint.analysis.program import Scope
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

HEADER = "import os\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

REFUSALS = [
    ("masked-reduction", """
        def f(x):
            return x[torch.rand(x.shape[0]) < 0.5].mean()
    """, "the mask is written several times and is not pure: `torch.rand` draws random numbers"),
    ("masked-loss", """
        def f(logits, tags, attention):
            mask = attention.bool()
            return F.cross_entropy(logits[mask], tags[mask])
    """, "the mask is not provably of the target's shape"),
    ("branch-to-where", """
        class M(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    y = x.sum()
                else:
                    y = x
                return y
    """, "not provably of one shape"),
    ("branch-to-where", """
        def f(x):
            if x.sum() > 0:
                y = x * 2
            else:
                y = x * 0.5
            return y
    """, "not provably of one dtype"),
    ("branch-to-where", """
        class M(nn.Module):
            def forward(self, v):
                if v.min() > 0:
                    y = v.sqrt()
                else:
                    y = v * 0  # an int v would make the sides differ in dtype: torch.cond refuses too
                return y
    """, "`v.sqrt` can give inf or NaN on the side not taken"),
    ("branch-to-where", """
        class M(nn.Module):
            def forward(self, x, n):
                if n > 0:
                    return x * 2
                return x
    """, "the condition is not certainly a tensor"),
    ("branch-to-cond", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(4)

            def forward(self, x):
                if x.sum() > 0:
                    y = self.bn(x)
                else:
                    y = x * 2
                return y
    """, "`self.bn` runs a module whose forward may update state"),
    ("async-assert", """
        def f(x):
            if torch.isnan(x).any():
                raise ValueError(f"bad {x.shape}")
            return x
    """, "`ValueError` is not the builtin RuntimeError that torch._assert_async raises"),
    ("async-assert", """
        def f(x):
            if torch.isnan(x).any():
                raise ValueError("bad input")
            return x
    """, "`ValueError` is not the builtin RuntimeError that torch._assert_async raises"),
    ("last-true-pooling", """
        def f(hidden, input_ids):
            eos = input_ids == 2
            if len(torch.unique_consecutive(eos.sum(1))) > 1:
                raise ValueError("same number of <eos> in every row")
            return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
    """, "`ValueError` is not the builtin RuntimeError that torch._assert_async raises"),
    ("async-assert", """
        class RuntimeError(Exception):
            pass

        def f(x):
            if torch.isnan(x).any():
                raise RuntimeError(f"bad {x.shape}")
            return x
    """, "`RuntimeError` is not the builtin RuntimeError"),
    ("env-read-once", """
        class M(nn.Module):
            def forward(self, x):
                return x * float(os.environ["GAIN"])
    """, "raises KeyError when the key is unset"),
    ("last-true-pooling", """
        def f(hidden, input_ids, check):
            eos = input_ids == 2
            check(torch.unique_consecutive(eos.sum(1)).numel() == 1, "same number of <eos> in every row")
            return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
    """, "not a check that every row of `eos` holds the same number of True"),
    ("last-true-pooling", """
        def f(hidden: torch.Tensor, input_ids: torch.Tensor):
            eos = input_ids == 2
            return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
    """, "the statement before the selection is not a check"),
    ("last-true-pooling", """
        def f(hidden, input_ids):
            eos = input_ids == 2
            if len(torch.unique_consecutive(eos.sum(1))) > 1:
                raise RuntimeError(f"counts {eos.sum(1)}")
            return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
    """, "not a string literal"),
    ("python-state-to-buffer", """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.eps = 1.0

            def forward(self, x):
                self.eps = max(0.1, self.eps * 0.5)
                return x * self.eps
    """, "does not start as an int"),
    ("global-to-tensor", """
        scale = 1

        def set_scale(s):
            global scale
            scale = s

        class M(nn.Module):
            def forward(self, x):
                return x * scale
    """, "may store a float"),
    ("skip-logging-while-compiling", """
        import logging

        logger = logging.getLogger(__name__)

        def f(x):
            y = x * 2
            if torch.isnan(y).any():
                logger.warning("nan in y")
                y = torch.nan_to_num(y)
            return y + 1
    """, "inside a branch on a tensor (`torch.isnan(y).any()`)"),
    ("skip-logging-while-compiling", """
        import logging

        logger = logging.getLogger(__name__)

        def f(x):
            y = x * 2
            if (y < 0).any() or (y > 5).any():
                logger.warning("y out of range")
                y = y.clamp(0, 5)
            return y
    """, "inside a branch on a tensor (`(y < 0).any() or (y > 5).any()`)"),
    ("skip-logging-while-compiling", """
        import warnings

        def f(x):
            y = x * 2
            if y.add_(1).sum() > 100:
                warnings.warn("large")
            return y
    """, "the condition is not pure (`.add_()` updates in place)"),
    ("skip-logging-while-compiling", """
        def f(x, pending: list):
            y = x * 2
            if (y < 0).any():
                print("dropped", pending.pop())
            return y
    """, "an argument of the logging call is not pure (`pending.pop` is a call the analysis cannot see into)"),
    ("defer-logging", """
        def f(x):
            print("start", x.sum())
            y = x + 1
            print("y", y.sum())  # noqa: DYN105
            return y
    """, "is also called on line 10 marked `# noqa`"),
    ("defer-logging", """
        def f(x):
            y = x + 1
            print("y", y)
            y.mul_(2)
            return y
    """, "`y` is updated in place after the call"),
]


@pytest.mark.parametrize("fixer, code, reason", REFUSALS, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_refused_with_a_reason(fixer, code, reason):
    source = HEADER + textwrap.dedent(code)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert fixer not in {a.fixer for a in result.applied}
    reasons = [r.reason for r in result.refused if r.fixer == fixer]
    assert any(reason in r for r in reasons), result.refused


def test_a_plan_is_all_or_nothing():
    """A refusal found late (the second operand) leaves the code untouched, not half rewritten."""
    source = HEADER + textwrap.dedent("""
        def f(pred, target, a, b):
            return F.l1_loss(pred[a > 0], target[b > 0])
    """)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert result.source == source and not result.applied


def test_torch_only_imported_for_type_checking_is_not_imported_by_a_fix():
    """A module that imports torch only under ``if TYPE_CHECKING:`` keeps doing so: a fix that needs
    the torch module there is refused rather than written against a name that does not exist."""
    source = textwrap.dedent("""
        import logging
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import torch

        logger = logging.getLogger(__name__)

        def f(x: "torch.Tensor"):
            logger.info("checking")
            return x * 2
    """)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert result.source == source and not result.applied
    assert any("only conditionally" in r.reason for r in result.refused), result.refused


def test_a_function_that_imports_torch_itself_is_not_rewritten_to_use_it_earlier():
    """``import torch`` inside a function makes ``torch`` local to all of it: a guard written above
    that import would raise UnboundLocalError, and a second run would wrap the call again."""
    source = HEADER + textwrap.dedent("""
        import logging

        logger = logging.getLogger(__name__)

        def f(x: torch.Tensor):
            logger.info("checking")
            import torch
            return torch.relu(x)
    """)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert result.source == source and not result.applied
    assert any("bound inside `f`" in r.reason for r in result.refused), result.refused


def test_shape_reasoning_terminates_on_names_bound_to_themselves():
    """``x = x * 2`` beside branches on ``x`` (a program the property tests found): following bindings
    is bounded, so the fixers decide (fix or refuse) instead of recursing without end."""
    source = '# type: ignore\nimport torch\nimport torch.nn as nn\n\ndrop_rate = 0.0\n\ndef set_drop_rate(value):\n    global drop_rate\n    drop_rate = value\n\ndef helper(t):\n    return t.relu() + 1\n\n@torch.compile\ndef step0(x, h):\n    if x.sum() > 0:\n        x = x * 2  # keep\n        x = x\n    else:\n        x = x\n        x = x * 2\n    idx = torch.nonzero(x > 0).squeeze(-1)\n    x = x.index_select(0, idx)\n    idx = torch.nonzero(x > 0).squeeze(-1)\n    x = x.index_select(0, idx)\n\nclass Block1(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n        self.proj = nn.Linear(4, 4)\n        self.calls = 0\n\n    def forward(self, x):\n        # page\x0cbreak\n        if x.sum() > 0:\n            h = x * 2\n        # keep\n        else:\n            # c1\n            h = h\n        # type: ignore\n        if x.sum() > 0:\n            return x.abs()\n        else:\n            return h\n\n@torch.compile\ndef step2(x, w):  # note: shape (B, T)\n    # page\x0cbreak\n    if (x.abs().max() > 1  # keep\n        and x.mean() < -2.0):  # type: ignore\n        return x * 2  # keep\n    return x * 2\n\n# keep'
    result = fix_source(source, "m.py", Settings(), unsafe=True)
    assert not result.errors, result.errors


LOCAL_IMPORT = """
    import os

    def check(cond):
        if os.getenv("SKIP_CHECKS") == "1":
            return
    {binding}
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
"""


def test_a_function_importing_torch_before_the_check_uses_that_import():
    """``import torch`` as a statement of the function body above the check binds the torch module
    there on every path: the rewrite refers to it and adds no module-level import."""
    source = textwrap.dedent(LOCAL_IMPORT.format(binding="    import torch"))
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "torch._assert_async(cond._is_all_true())" in result.source, result.refused
    assert result.source.count("import torch") == 1  # no import added at module level
    again = fix_source(result.source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert again.source == result.source


REBOUND = """
    import torch

    def check(cond):
        import torch
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
    {after}
"""


@pytest.mark.parametrize("after", [
    "    torch = None",              # an assignment
    "    for torch in (): pass",     # a loop variable
    "    import torch.nn",           # an import binding it to something the analysis would have to follow
    "    del torch",
])
def test_a_function_binding_torch_otherwise_is_refused(after: str) -> None:
    """Any other binding of ``torch`` in the function leaves what it is at the check unproven (an
    import after the check alone: see the test of a function that imports torch itself, above)."""
    source = textwrap.dedent(REBOUND).format(after=after)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "_assert_async" not in result.source, result.source
    assert any("bound inside `check`" in r.reason for r in result.refused), result.refused


def test_a_function_importing_torch_only_on_one_path_is_refused() -> None:
    source = textwrap.dedent(LOCAL_IMPORT.format(binding="    if cond is not None:\n            import torch"))
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "_assert_async" not in result.source, result.source
    assert any("bound inside `check`" in r.reason for r in result.refused), result.refused


def test_a_global_read_by_another_file_of_the_run_is_not_made_a_tensor(tmp_path):
    """``train.py`` prints the rate the model file keeps: turned into a tensor it would print a tensor."""
    from dynalint.analysis.project import SourceIndex

    model = tmp_path / "model.py"
    model.write_text(HEADER + textwrap.dedent("""
        rate = 0.5

        def set_rate(r: float):
            global rate
            rate = r

        class M(nn.Module):
            def forward(self, x):
                return x * rate
    """))
    train = tmp_path / "train.py"
    train.write_text("import model\n\nprint(f'rate {model.rate}')\n")
    source = model.read_text()
    alone = fix_source(source, str(model), Settings(scope=Scope.ALL), unsafe=True,
                       project=SourceIndex([str(model)]))
    assert "global-to-tensor" in {a.fixer for a in alone.applied}
    both = fix_source(source, str(model), Settings(scope=Scope.ALL), unsafe=True,
                      project=SourceIndex([str(model), str(train)]))
    assert "global-to-tensor" not in {a.fixer for a in both.applied}
    assert any(f"`rate` is named in {train}" in r.reason for r in both.refused), both.refused
