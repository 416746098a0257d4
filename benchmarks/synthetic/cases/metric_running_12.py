"""Streaming metrics held on a module: running mean / accuracy with state updated every forward."""
import torch
import torch.nn as nn


class RunningMean(nn.Module):
    """Keeps a sum buffer and a Python-side sample counter."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(()))
        self.n_updates = 0

    def forward(self, values):
        self.total += values.detach().sum()
        self.n_updates += 1
        return self.total / (self.n_updates * values.numel())


class StreamingAccuracy(nn.Module):
    """Counts in buffers only, so the compiled update stays the same across steps."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("correct", torch.zeros((), dtype=torch.long))
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def forward(self, logits, target):
        pred = logits.argmax(-1)
        self.correct += (pred == target).sum()
        self.seen += target.numel()
        return self.correct.float() / self.seen.clamp(min=1)


class ConfusionMatrix(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("mat", torch.zeros(num_classes, num_classes, dtype=torch.long))

    def forward(self, pred, target):
        idx = target * self.num_classes + pred
        self.mat += torch.bincount(idx, minlength=self.num_classes ** 2).view(self.num_classes, self.num_classes)
        return self.mat


def make_inputs():
    return [((), (torch.randn(4, 3),)) for _ in range(3)]


def make_inputs_acc():
    return [((3,), (torch.randn(4, 3), torch.randint(0, 3, (4,)))) for _ in range(3)]


def make_inputs_cm():
    return [((3,), (torch.randint(0, 3, (6,)), torch.randint(0, 3, (6,)))) for _ in range(2)]


EXAMPLES = {"RunningMean": make_inputs, "StreamingAccuracy": make_inputs_acc, "ConfusionMatrix": make_inputs_cm}
