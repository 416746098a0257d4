"""The ``torch.nn`` modules that are one call of a functional: the committed table matches the installed
torch, and calling such a module breaks where its functional does (``nn.CTCLoss()`` as ``F.ctc_loss``,
reported at the module's call), and a transformer module given a mask and no causal flag reads the mask's
data (``nn.TransformerEncoder``'s ``mask=`` without ``is_causal=``), checked under real Dynamo (torch 2.13)."""
from __future__ import annotations

import pytest
from conftest import requires_torch
from helpers import assert_generated_module_current, check

import dynalint.analysis.nn_functionals as committed


@requires_torch
@pytest.mark.table_generator("dynalint.verify.nn_functionals_table")
def test_committed_table_is_current(generated_table: str) -> None:
    assert_generated_module_current(generated_table, committed)


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


def test_table_lists_the_causal_mask_checks() -> None:
    assert committed.CAUSAL_MASK_CHECKS["torch.nn.TransformerEncoder"] == (("mask", 1, "is_causal", 3),)
    assert ("tgt_mask", 3, "tgt_is_causal", 9) in committed.CAUSAL_MASK_CHECKS["torch.nn.Transformer"]


CAUSAL = """
import torch
import torch.nn as nn


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
        self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), 1)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        m = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        h = self.enc(x, mask=m)
        h = self.enc(h, src_key_padding_mask=pad)
        h = self.enc(h, mask=m, is_causal=True)
        return self.dec(x, h, tgt_mask=m)
"""


def test_check_reports_masks_without_flags() -> None:
    found = [(d.line, d.code) for d in check(CAUSAL) if d.kind == "graph-break"]
    assert found == [(13, "DYN102"), (16, "DYN102")]


@requires_torch
def test_dynamo_breaks_on_masks_without_flags() -> None:
    """Dynamo's log puts these breaks inside ``torch/nn/modules/transformer.py``: read from the break counter,
    the two calls given a mask and no flag break on ``Tensor.item()``, the others do not."""
    import torch
    import torch._dynamo as dynamo

    namespace: dict = {}
    exec(CAUSAL, namespace)  # noqa: S102 - the code under test
    model = torch.compile(namespace["Captioner"](), backend="eager")
    dynamo.reset()
    dynamo.utils.counters.clear()
    model(torch.randn(2, 5, 8), torch.zeros(2, 5, dtype=torch.bool))
    reasons = dynamo.utils.counters["graph_break"]
    assert sum(reasons.values()) == 2 and all("Tensor.item()" in r for r in reasons)
