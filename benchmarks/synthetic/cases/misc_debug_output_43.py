"""Model code with leftover debugging output and string formatting of tensors."""
import torch
import torch.nn as nn


def describe(t: torch.Tensor) -> str:
    return f"shape={tuple(t.shape)} dtype={t.dtype}"


class DebugEncoder(nn.Module):
    def __init__(self, dim=8, debug=True):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.debug = debug

    def forward(self, x):
        h = self.lin(x)
        if self.debug:
            print("encoder out:", describe(h), "mean", h.mean())
        return h.relu()


class NamedOutputs(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        key = "out_" + str(h.shape[-1]) + "_" + str(h.dtype).split(".")[-1]
        return {key: h, "summary": f"{h.shape[0]} rows"}


def tensor_to_caption(scores: torch.Tensor, labels=("cat", "dog", "bird")) -> str:
    best = scores.argmax(-1)
    return ", ".join(labels[i] for i in best.tolist())


def make_inputs():
    return [((), (torch.randn(2, 8),)) for _ in range(2)]


def make_inputs_cap():
    return [(torch.randn(4, 3),) for _ in range(2)]


EXAMPLES = {"DebugEncoder": make_inputs, "NamedOutputs": make_inputs, "tensor_to_caption": make_inputs_cap}
