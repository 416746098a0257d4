"""Training step over a dataclass batch: tensors travel in typed containers and come back out of helpers."""
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Batch:
    input_ids: torch.Tensor
    labels: torch.Tensor
    weights: Optional[torch.Tensor] = None


@dataclass
class StepOutput:
    loss: torch.Tensor
    logits: torch.Tensor
    metrics: Dict[str, torch.Tensor]


class Classifier(nn.Module):
    def __init__(self, vocab=20, dim=8, n_classes=3):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.head = nn.Linear(dim, n_classes)

    def compute_loss(self, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        loss = F.cross_entropy(logits, batch.labels, reduction="none")
        if batch.weights is not None:
            loss = loss * batch.weights
        return loss.mean()

    def forward(self, batch: Batch) -> StepOutput:
        logits = self.head(self.emb(batch.input_ids))
        loss = self.compute_loss(logits, batch)
        acc = (logits.argmax(-1) == batch.labels).float().mean()
        return StepOutput(loss, logits, {"acc": acc})


class SkippingClassifier(Classifier):
    """Skips the update when the batch has no positive example."""

    def forward(self, batch: Batch) -> StepOutput:
        out = super().forward(batch)
        if not (batch.labels > 0).any():
            out.loss = out.loss * 0.0
        return out


def collect_metrics(outputs: List[StepOutput]) -> Dict[str, float]:
    total = torch.stack([o.loss for o in outputs]).mean()
    accs = [o.metrics["acc"] for o in outputs]
    best = max(accs)
    return {"loss": total, "best_acc": best}


def make_batch():
    return Batch(torch.randint(0, 20, (4, 5)), torch.randint(0, 3, (4,)), torch.rand(4))


def make_inputs():
    return [((), (make_batch(),)) for _ in range(2)]


def make_inputs_collect():
    def out():
        return StepOutput(torch.rand(()), torch.randn(4, 3), {"acc": torch.rand(())})
    return [([out(), out(), out()],) for _ in range(2)]


EXAMPLES = {"Classifier": make_inputs, "SkippingClassifier": make_inputs, "collect_metrics": make_inputs_collect}
