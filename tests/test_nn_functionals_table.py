"""The ``torch.nn`` modules that are one call of a functional: the committed table matches the installed
torch, and calling such a module breaks where its functional does (``nn.CTCLoss()`` as ``F.ctc_loss``,
reported at the module's call), checked under real Dynamo (torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import assert_generated_module_current, check

import dynalint.analysis.nn_functionals as committed


@requires_torch
def test_committed_table_is_current() -> None:
    assert_generated_module_current("dynalint.verify.nn_functionals_table", committed)


def test_table_lists_thin_modules_only() -> None:
    assert committed.MODULE_FUNCTIONALS["torch.nn.CTCLoss"] == "ctc_loss"
    assert "torch.nn.MultiheadAttention" not in committed.MODULE_FUNCTIONALS  # its forward does more


CODE = """
import torch
import torch.nn as nn


class CTCHead(nn.Module):
    def __init__(self, d: int = 4, vocab: int = 5):
        super().__init__()
        self.proj = nn.Linear(d, vocab)
        self.ctc = nn.CTCLoss(blank=0, zero_infinity=True)

    def forward(self, x: torch.Tensor, x_len: torch.Tensor, targets: torch.Tensor, tgt_len: torch.Tensor):
        log_probs = self.proj(x).log_softmax(-1).transpose(0, 1)
        return self.ctc(log_probs, targets, x_len, tgt_len)
"""


def test_check_reports_the_module_call() -> None:
    found = [(d.line, d.code) for d in check(CODE) if d.kind == "graph-break"]
    assert found == [(13, "DYN104")]


@requires_torch
def test_dynamo_breaks_in_the_module() -> None:
    """Dynamo's log puts this break inside ``torch/nn/modules/loss.py`` (the module's ``forward`` it inlined),
    so it is read from the break counter: the compiled head breaks once, on a data-dependent size."""
    import torch
    import torch._dynamo as dynamo

    namespace: dict = {}
    exec(CODE, namespace)  # noqa: S102 - the code under test
    head = torch.compile(namespace["CTCHead"](), backend="eager")
    dynamo.reset()
    dynamo.utils.counters.clear()
    head(torch.randn(2, 6, 4), torch.tensor([6, 5]), torch.tensor([[1, 2, 3], [2, 3, 4]]), torch.tensor([3, 2]))
    reasons = dynamo.utils.counters["graph_break"]
    assert sum(reasons.values()) == 1 and any("Dynamic shape operator" in r for r in reasons)
