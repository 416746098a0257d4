"""`scope = "all"` analyses every function as compiled on its own, yet a caller analysed only for that
reason still runs eagerly when the program runs: what it passes a compiled function, or sets on a
compiled module, is guarded on as under the default scope. So `all` reports at least every recompile
the default scope reports (measured with real Dynamo, torch 2.13)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.rules.base import Example
from dynalint.config.settings import Scope

from helpers import check, run_example_under_dynamo

#: (name, code, target, inputs, between calls, the recompile code the default scope reports)
CASES = [
    ("loop-passes-step", """
        import torch

        @torch.compile
        def head(x, temperature):
            return torch.softmax(x / temperature, dim=-1)

        def sample(x):
            outs = []
            for n in range(3):
                outs.append(head(x, n + 1))
            return outs
    """, "sample", "[(torch.randn(4),)]", None, "DYN206"),
    ("schedule-of-floats", """
        import torch

        SCHEDULE = (1.0, 0.5, 0.25)

        @torch.compile
        def step(x, t):
            return x * t

        def sample(x):
            for t in SCHEDULE:
                x = step(x, t)
            return x
    """, "sample", "[(torch.randn(4),)]", None, "DYN206"),
    ("none-then-tensor", """
        import torch

        @torch.compile
        def head(x, mask):
            if mask is not None:
                x = x * mask
            return x.sin()

        def run(x):
            return head(x, None), head(x, torch.ones(4))
    """, "run", "[(torch.randn(4),)]", None, "DYN206"),
    ("train-then-eval", """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.drop = nn.Dropout(0.1)

            def forward(self, x):
                return self.drop(self.fc(x))

        def fit(x):
            model = torch.compile(Head())
            loss = model(x).sum()
            model.eval()
            return loss, model(x)
    """, "fit", "[(torch.randn(2, 4),)]", None, "DYN205"),
    ("setter-method", """
        import torch
        from torch import nn

        class Proj(nn.Module):
            def __init__(self):
                super().__init__()
                self.k = nn.Linear(4, 4)
                self.mode = 1

            def set_mode(self, mode):
                self.mode = mode

            def forward(self, x):
                if self.mode == 2:
                    return self.k(x) * 2
                return self.k(x)
    """, "Proj", "[(torch.randn(2, 4),)] * 3", "_instance.set_mode(i + 1)", "DYN205"),
    ("grown-cache-cleared-by-method", """
        import torch
        from torch import nn

        class Biased(nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = nn.Parameter(torch.zeros(4))
                self.cache = {}

            def reset(self):
                if self.cache:
                    self.cache = {}

            def forward(self, x):
                key = str(x.shape[0])
                if key not in self.cache:
                    self.cache[key] = self.bias * 2
                return x + self.cache[key]
    """, "Biased", "[(torch.randn(n, 4),) for n in (1, 2, 3)]", None, "DYN203"),
]


def _recompiles(code: str, scope: Scope) -> set[tuple[int, str]]:
    return {(d.line, d.code) for d in check(code, scope=scope) if d.kind == "recompile"}


@pytest.mark.parametrize("name, code, target, inputs, between, rule", CASES, ids=[c[0] for c in CASES])
def test_scope_all_reports_what_the_default_scope_reports(name: str, code: str, target: str, inputs: str,
                                                          between: str | None, rule: str) -> None:
    default = _recompiles(code, Scope.AUTO)
    assert rule in {c for _, c in default}
    assert default <= _recompiles(code, Scope.ALL)


@requires_torch
@pytest.mark.parametrize("name, code, target, inputs, between, rule", CASES, ids=[c[0] for c in CASES])
def test_the_cases_recompile_under_dynamo(name: str, code: str, target: str, inputs: str, between: str | None,
                                          rule: str, tmp_path) -> None:
    example = Example(code, target=target, inputs=inputs, between_calls=between,
                      compile_target=target[0].isupper())
    obs, _ = run_example_under_dynamo(example, tmp_path)
    assert obs.recompiles
