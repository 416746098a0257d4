"""Hand-written model code labelled with real Dynamo (torch 2.13): for each case, the lines
Dynamo's graph-break log reports, with the rule that predicts each.

The static test checks dynalint's graph-break diagnostics against the labels; the Dynamo
test re-measures the labels, so a label cannot drift from what Dynamo does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from conftest import requires_torch
from dynalint.rules.base import Example

from helpers import check, run_example_under_dynamo


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    inputs: str
    breaks: dict[int, str] = field(default_factory=dict)
    """Line -> the rule code predicting Dynamo's break on that line."""
    target: str | None = None
    unpredicted: frozenset[int] = frozenset()
    """Lines Dynamo breaks on that the analysis rightly does not claim: what breaks there depends on a
    value it cannot type (an untyped parameter, one that may be None), and it stays silent rather than guess."""

    @property
    def example(self) -> Example:
        return Example(self.code, inputs=self.inputs, target=self.target)


CASES = [
    Case("sampler-early-stop", """
        import torch

        @torch.compile
        def denoise(x, steps: int = 6, tol: float = 1e-3):
            i = 0
            change = x.abs().sum()
            while i < steps and change > tol:
                y = x * 0.5
                change = (y - x).abs().sum()
                x = y
                i += 1
            return x
    """, "[(torch.randn(8),)]", {7: "DYN103"}),
    Case("optional-mask-check", """
        import torch
        from typing import Optional


        def pool(h, mask: Optional[torch.Tensor] = None):
            if mask is not None and mask.sum() == 0:
                return h.mean(1)
            weights = mask.float() if mask is not None else torch.ones_like(h[..., 0])
            return (h * weights.unsqueeze(-1)).sum(1) / weights.sum(1, keepdim=True)


        @torch.compile
        def embed(h, mask: torch.Tensor):
            return pool(h, mask) + pool(h)
    """, "[(torch.randn(2, 5, 3), torch.ones(2, 5, dtype=torch.bool))]", {6: "DYN101"}),
    # the test of an optional argument runs, the operand after it only when a caller passes one:
    # whether callers do is not known
    Case("optional-labels-omitted", """
        import torch
        import torch.nn as nn
        from typing import Optional

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 8)

            def forward(self, h, labels: Optional[torch.Tensor] = None):
                logits = self.proj(h)
                if labels is not None and labels.max() >= logits.shape[-1]:
                    raise ValueError("label out of range")
                return logits
    """, "[(torch.randn(2, 3),)]", {}, "Head"),
    Case("flagged-clamp", """
        import torch

        @torch.compile
        def clamp_outliers(x, robust: bool = True):
            if robust and (x.abs() > 6).any():
                x = x.clamp(-6, 6)
            return x * 2
    """, "[(torch.randn(16),)]", {5: "DYN101"}),
    Case("positions-from-lengths", """
        import torch

        @torch.compile
        def position_ids(lengths):
            longest = lengths.max()
            pos = torch.arange(longest).unsqueeze(0)
            return (pos < lengths.unsqueeze(1)).long()
    """, "[(torch.tensor([3, 1, 4]),)]", {6: "DYN102"}),
    Case("crop-to-valid", """
        import torch

        @torch.compile
        def crop(seq, valid):
            n = valid.sum()
            return seq[:, :n].mean(-1)
    """, "[(torch.randn(2, 6), torch.tensor([1, 1, 1, 0, 0, 0]))]", {6: "DYN102"}),
    Case("pick-a-scale", """
        import torch

        LEVELS = (1.0, 0.5, 0.25)

        @torch.compile
        def scale_for(x, level):
            return x * LEVELS[level]
    """, "[(torch.randn(4), torch.tensor(2))]", {}, unpredicted=frozenset({7})),
    Case("pick-a-scale-typed", """
        import torch

        LEVELS = (1.0, 0.5, 0.25)

        @torch.compile
        def scale_for(x, level: torch.Tensor):
            return x * LEVELS[level]
    """, "[(torch.randn(4), torch.tensor(2))]", {7: "DYN102"}),
    Case("grid-from-tensor-size", """
        import torch
        import torch.nn.functional as F

        @torch.compile
        def resize_to(x, hw: torch.Tensor):
            y = F.interpolate(x, size=(hw[0], hw[1]), mode="nearest")
            return y.view(y.shape[0], -1)
    """, "[(torch.randn(1, 2, 4, 4), torch.tensor([2, 3]))]", {6: "DYN102"}),
    Case("size-from-argument", """
        import torch

        @torch.compile
        def pad_rows(h, count: torch.Tensor):
            grown = h.new_zeros(count, h.shape[-1])
            head = h.narrow(0, 0, count)
            pos = torch.arange(count)
            n = (h > 0).sum()
            return grown, head, pos, h.new_zeros(n, 3)
    """, "[(torch.randn(4, 3), torch.tensor(2)), (torch.randn(4, 3), torch.tensor(3))]", {9: "DYN102"}),
    Case("sizes-through-torch-div", """
        import torch

        @torch.compile
        def split_heads(h):
            b, t, d = h.shape
            half = torch.div(t, 2, rounding_mode="trunc")
            return h.view(b, half, 2, d) + h.new_zeros(torch.div(t, 3, rounding_mode="floor"), 2, d).sum()
    """, "[(torch.randn(2, 6, 4),)]"),
    Case("module-flag-off", """
        import torch
        import torch.nn as nn

        TRACE = False

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x):
                if TRACE:
                    print("block input", x.shape)
                return self.proj(x)
    """, "[(torch.randn(2, 4),)]", {}, "Block"),
    Case("training-step", """
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        @torch.compile
        def train_step(x, y):
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
    """, "[(torch.randn(8, 4), torch.randn(8, 1))]", {10: "DYN105", 11: "DYN105", 12: "DYN105"}),
    Case("size-from-data-in-a-loop", """
        import torch

        @torch.compile
        def grow(x):
            for _ in range(2):
                x = x.new_zeros((x > 0).sum() + 1, 2)
            return x
    """, "[(torch.randn(3),)]", {6: "DYN102"}),
    Case("index-at-argmax", """
        import torch

        @torch.compile
        def pick(boxes: torch.Tensor, scores, n: torch.Tensor):
            other = boxes[n]
            best = boxes[scores.argmax()]
            return best + other
    """, "[(torch.randn(4, 2), torch.randn(4), torch.tensor(1))]", {6: "DYN102"}),
    Case("size-live-across-a-break", """
        import torch

        @torch.compile
        def grow(h):
            m = (h > 0).sum()
            print("positives", m)
            kept = h.new_zeros(m, 2)
            grown = h.new_zeros(m + 1, 2)
            return kept, grown
    """, "[(torch.randn(4, 3),)]", {6: "DYN105", 8: "DYN102"}),
    Case("folded-size-live-across-a-break", """
        import torch

        @torch.compile
        def blocks(h):
            n = torch.div(h.shape[1], 4, rounding_mode="trunc")
            print("blocks", n)
            kept = h.new_zeros(n)
            grown = h.new_ones(n * 4).view(n, 4)
            return kept, grown
    """, "[(torch.randn(4, 8),)]", {6: "DYN105", 8: "DYN102"}),
    Case("sizes-read-back-from-a-dict", """
        import torch

        @torch.compile
        def pad(h, count: torch.Tensor):
            inputs = {"h": h * 2, "count": count}
            grown = h.new_zeros(inputs["count"], 3)
            found = {"h": h, "n": (h > 0).sum()}
            return grown, h.new_zeros(found["n"], 3)
    """, "[(torch.randn(4, 3), torch.tensor(2)), (torch.randn(4, 3), torch.tensor(3))]", {8: "DYN102"}),
    Case("sizes-in-a-tuple-live-across-a-break", """
        import torch

        @torch.compile
        def grow(h):
            pair = (h, (h > 0).sum())
            print("positives", pair[1])
            return h.new_zeros(pair[1], 2)
    """, "[(torch.randn(4, 3),)]", {6: "DYN105"}),
    Case("annotated-helper-gets-a-folded-size", """
        import torch

        def pad(h: torch.Tensor, n: torch.Tensor):
            return h.new_zeros(n, h.shape[1])

        @torch.compile
        def blocks(h, count: torch.Tensor):
            return pad(h, torch.div(h.shape[1], 4, rounding_mode="trunc")), pad(h, count)
    """, "[(torch.randn(4, 8), torch.tensor(2)), (torch.randn(4, 8), torch.tensor(3))]", {}),
    Case("compiled-module-size-argument", """
        import torch
        import torch.nn as nn

        class Pad(nn.Module):
            def forward(self, h, count: torch.Tensor):
                return h.new_zeros(count, h.shape[1]) + torch.arange(count).sum()

        compiled = torch.compile(Pad())
    """, "[(torch.randn(4, 3), torch.tensor(2)), (torch.randn(4, 3), torch.tensor(3))]", {}, "Pad"),
    Case("folded-size-as-a-slice-bound", """
        import torch

        @torch.compile
        def head(h):
            n = torch.div(h.shape[1], 4, rounding_mode="trunc")
            kept = h.narrow(1, 0, n)
            return kept, h[:, :n], (h, kept)[torch.div(n, 2, rounding_mode="trunc")]
    """, "[(torch.randn(4, 8),)]", {7: "DYN102"}),
    Case("sizes-read-back-from-a-dataclass", """
        from dataclasses import dataclass

        import torch

        @dataclass
        class Pack:
            h: torch.Tensor
            n: torch.Tensor

        @torch.compile
        def grow(h, count: torch.Tensor):
            kept = Pack(h * 2, count)
            found = Pack(h, (h > 0).sum())
            folded = Pack(h, n=torch.div(h.shape[1], 4, rounding_mode="trunc"))
            return h.new_zeros(kept.n, 2), h.new_zeros(found.n, 2), h.new_zeros(folded.n, 2)
    """, "[(torch.randn(4, 3), torch.tensor(2)), (torch.randn(4, 3), torch.tensor(3))]", {15: "DYN102"}),
    Case("shape-driven-is-fine", """
        import torch
        import torch.nn.functional as F

        @torch.compile
        def resize_like(x, ref):
            y = F.interpolate(x, size=ref.shape[-2:], mode="nearest")
            pos = torch.arange(y.shape[-1])
            return y[..., : ref.shape[-1]] + pos
    """, "[(torch.randn(1, 2, 4, 4), torch.randn(1, 2, 2, 3))]", {}),
    Case("recurrent-encoder", """
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Linear(3, 6)
                self.rnn = nn.LSTM(6, 6, batch_first=True)

            def forward(self, x):
                h = self.embed(x)
                out, (last, _) = self.rnn(h)
                return last[-1]
    """, "[(torch.randn(2, 5, 3),)]", {12: "DYN105"}, "Encoder"),
    Case("tracing-only-branches", """
        import torch

        @torch.compile
        def safe(x):
            if torch.jit.is_tracing() or torch.jit.is_scripting():
                return x.clamp(0, 1)
            if torch._C._get_tracing_state() is not None:
                return x.item()
            return x.sigmoid()
    """, "[(torch.randn(4),)]", {}),
    Case("mask-check-skipped-under-compile", """
        import torch
        from typing import Optional

        def capturing(t=None) -> bool:
            capture = torch.compiler.is_compiling() or torch.jit.is_tracing()
            if t is not None:
                capture |= isinstance(t, torch.fx.Proxy)
            return capture

        @torch.compile
        def can_skip(x, padding_mask: Optional[torch.Tensor] = None):
            if padding_mask is not None and capturing(padding_mask):
                return x
            if padding_mask is None or padding_mask.all():
                return x + 1
            return x * 2
    """, "[(torch.randn(4), torch.ones(4, dtype=torch.bool)), (torch.randn(4),)]", {}),
    Case("capture-state-helpers-with-fallbacks", """
        import torch
        from typing import Optional

        def compiling() -> bool:
            try:
                import torch
                return torch.compiler.is_compiling()
            except Exception:
                return False

        def exporting() -> bool:
            try:
                from torch import compiler
                return compiler.is_exporting()
            except ImportError:
                return False

        def capturing(t=None) -> bool:
            capture = compiling() or torch.jit.is_tracing()
            if t is not None:
                capture |= isinstance(t, torch.fx.Proxy)
            return capture

        @torch.compile
        def can_skip(x, padding_mask: Optional[torch.Tensor] = None):
            if exporting() or (padding_mask is not None and capturing(padding_mask)):
                return x
            if x.shape[0] == 4 and (padding_mask is None or padding_mask.all()):
                return x + 1
            return x * 2
    """, "[(torch.randn(4), torch.ones(4, dtype=torch.bool)), (torch.randn(4),)]", {}),
    Case("mask-from-a-mapping", """
        import torch

        @torch.compile
        def scale(x, batch):
            if (batch["mask"] == 1).all():
                return x
            return x * batch["mask"]
    """, "[(torch.randn(4), {'mask': torch.ones(4)})]", {5: "DYN101"}),
    Case("numpy-array-reduction", """
        import numpy as np
        import torch

        @torch.compile
        def shift(x, offsets):
            table = np.asarray(offsets)
            if (table > 0).any():
                return x + 1
            return x
    """, "[(torch.randn(4), [0, 1, 2])]", {7: "DYN101"}),
    # the break inside the helper resumes the caller in a new frame: the 0-d tensor it returns,
    # computed before the break, is an input of that frame and reads as a size
    Case("size-returned-across-a-break", """
        import torch

        def global_counts(m):
            n = m.long().sum(1)
            most = n.max()
            local = torch.arange(most) < n.unsqueeze(-1)
            return most, local

        @torch.compile
        def gather(x: torch.Tensor, m: torch.Tensor):
            most, local = global_counts(m)
            y = x.new_zeros(2, most)
            return y.view(2, most, 1), x.narrow(-1, 0, most), local
    """, "[(torch.randn(3, 8), torch.rand(3, 8) > 0.5)]", {6: "DYN102"}),
    Case("repeat-by-counts", """
        import torch

        @torch.compile
        def tile(x, times):
            for _ in range(times.max()):
                x = torch.cat([x, x[:1]])
            return x
    """, "[(torch.randn(3), torch.tensor([1, 2]))]", {5: "DYN103"}),
    Case("sizes-after-breaks-inside-a-helper", """
        import torch

        def rows(mask):
            return mask.nonzero()

        @torch.compile
        def pick(h, mask):
            n = mask.sum(1).max()
            first = rows(mask)
            a = h.new_zeros(n, 2)
            m = mask.sum(0).max()
            again = rows(mask)
            b = h.new_zeros(m, 2)
            k = mask.sum().item()
            c = torch.arange(m + 1)
            return a, b, c, first, again, k
    """, "[(torch.randn(2, 3), torch.tensor([[1, 0, 1], [0, 1, 1]]))]", {4: "DYN104", 14: "DYN102", 15: "DYN102"}),
    Case("size-carried-across-a-break-in-a-layer-loop", """
        import torch
        from torch import nn

        class Block(nn.Module):
            def forward(self, h, mask=None):
                n, idx = self.select(mask)
                return h.new_zeros(n, 2), idx

            @staticmethod
            def select(mask):
                n = mask.long().sum(dim=1).max()
                idx = mask.nonzero(as_tuple=True)
                rows = torch.arange(n)
                return n, (idx, rows)

        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(2)])

            def forward(self, h, mask):
                for block in self.blocks:
                    out, idx = block(h, mask)
                return out
    """, "[(torch.randn(2, 3), torch.tensor([[1, 0, 1], [0, 1, 1]]).bool())] * 2", {12: "DYN104"}, "Stack"),
    Case("size-after-a-break-on-an-untyped-mask", """
        import torch
        from torch import nn

        class Gather(nn.Module):
            def forward(self, x, mask=None):
                n = mask.long().sum(dim=1).max()
                idx = mask.nonzero(as_tuple=True)
                return x, torch.arange(n), idx
    """, "[(torch.randn(2, 3), torch.tensor([[1, 0, 1], [0, 1, 1]]).bool())]", {}, "Gather", frozenset({7})),
    Case("method-chosen-in-a-base-init", """
        import torch

        class PairLoss(torch.nn.Module):
            def __init__(self, mat_based=False):
                super().__init__()
                self.loss_method = self.mat_loss if mat_based else self.pair_loss

            def forward(self, emb, labels):
                mat = emb @ emb.T
                return self.loss_method(mat, labels[:, None] == labels[None, :])

            def mat_loss(self, mat, same):
                mask = torch.zeros_like(mat)
                mask[same] = 1
                return self.compute(mat, mask)

            def pair_loss(self, mat, same):
                return self.compute(mat[0], same[0])

            def compute(self, mat, mask):
                raise NotImplementedError

        class MaskedLoss(PairLoss):
            def __init__(self):
                super().__init__(mat_based=True)

            def compute(self, mat, mask):
                keep = mask.bool()
                if keep.any():
                    return mat[keep].mean()
                return mat.sum() * 0
    """, "[(torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))]", {29: "DYN101", 30: "DYN104"}, "MaskedLoss"),
    Case("mapping-argument-of-an-autograd-function", """
        import torch

        class Cumulation(torch.autograd.Function):
            @staticmethod
            def forward(ctx, query, key, config):
                code_len = config["code_len"]
                capacity = int(2**code_len)
                return query * capacity + key

            @staticmethod
            def backward(ctx, grad):
                return grad, grad, None

        class Attn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.cfg = {"code_len": 3}

            def forward(self, q, k):
                return Cumulation.apply(q, k, self.cfg)
    """, "[(torch.randn(3), torch.randn(3))]", {}, "Attn"),
    Case("untyped-argument-as-a-slice-bound", """
        import torch
        from torch import nn

        class Crop(nn.Module):
            def forward(self, att, n_keep):
                keep = att.new_ones(att.shape[-1], att.shape[-1]).tril()[:n_keep]
                return att[..., :n_keep, :].masked_fill(keep == 0, float("-inf")).softmax(-1)
    """, "[(torch.randn(2, 4, 4), 3)]", {}, "Crop"),
    Case("one-tuple-return-annotation-holding-sizes", """
        import torch
        from torch import nn

        class Stage(nn.Module):
            def forward(self, h, dims: tuple[int, int]) -> tuple[torch.Tensor]:
                height, width = dims
                return h * 2, (height, width)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stage = Stage()

            def forward(self, h):
                out = self.stage(h, (h.shape[1], 1))
                dims = out[1]
                return out[0].view(h.shape[0], dims[0], dims[1])
    """, "[(torch.randn(2, 6),)]", {}, "Net"),
    Case("untyped-argument-compared-with-a-size", """
        import torch
        from torch import nn

        class CachedBias(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("bias", torch.randn(2, 6, 6), persistent=False)

            def forward(self, i, j):
                if self.bias.shape[-1] >= j and self.bias.shape[-2] >= i:
                    return self.bias[..., -i:, -j:]
                return self.bias.new_zeros(2, i, j)
    """, "[(3, 4), (2, 5), (7, 8)]", {}, "CachedBias"),
    # every call of the submodule in the module passes a Python number (a literal, a loop counter over
    # range, a number-valued attribute): Dynamo guards on the value, no break
    Case("numbers-from-every-caller", """
        import torch
        from torch import nn

        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)

            def forward(self, x, factor):
                if factor > 1.0:
                    x = x * factor
                return self.net(x)

        class Step(nn.Module):
            def forward(self, out, timestep, sample):
                if timestep == 0:
                    return sample - out
                return sample * 0.5 - out

        class Sampler(nn.Module):
            def __init__(self, guidance: float = 7.5):
                super().__init__()
                self.scale = Scale()
                self.step = Step()
                self.guidance = guidance

            def forward(self, x):
                x = self.scale(x, 2)
                for t in range(3):
                    x = self.step(self.scale(x, self.guidance), t, x)
                return x
    """, "[(torch.randn(2, 4),)] * 2", {}, "Sampler"),
    # one caller passes a tensor: the test needs its data
    Case("a-caller-passes-a-tensor", """
        import torch
        from torch import nn

        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Linear(4, 4)

            def forward(self, x, factor):
                if factor > 1.0:
                    x = x * factor
                return self.net(x)

        class Sampler(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = Scale()

            def forward(self, x):
                return self.scale(self.scale(x, 2), x.abs().sum())
    """, "[(torch.randn(2, 4),)]", {10: "DYN101"}, "Sampler"),
    # calls and stores Dynamo skips or cannot put in a graph, beyond logging and printing
    Case("generator-argument", """
        import torch

        GEN = torch.Generator()

        @torch.compile
        def noisy(x):
            keep = torch.bernoulli(x.sigmoid(), generator=GEN)
            return x * keep + torch.rand(x.shape, generator=None)
    """, "[(torch.randn(4),)]", {7: "DYN105"}),
    Case("generator-made-in-the-graph", """
        import torch

        @torch.compile
        def noisy(x):
            gen = torch.Generator()
            return x + torch.rand(x.shape, generator=gen)
    """, "[(torch.randn(4),)]", {5: "DYN105", 6: "DYN105"}),
    Case("rnn-flatten-parameters", """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 3)
                self.rnn = nn.GRU(3, 3)

            def forward(self, x):
                self.rnn.flatten_parameters()
                return self.proj(x)
    """, "[(torch.randn(2, 3),)]", {11: "DYN105"}, target="Encoder"),
    Case("shared-memory-and-environment", """
        import os
        import torch

        @torch.compile
        def publish(x):
            y = x * 2
            y.share_memory_()
            os.environ["STEP_DONE"] = "1"
            return y + 1
    """, "[(torch.randn(4),)]", {7: "DYN105", 8: "DYN105"}),
    Case("sorted-tensors", """
        import torch

        @torch.compile
        def smallest(x):
            by_size = sorted([x, x * 2], key=lambda t: t.shape[0])[0]
            return sorted([x.sum(), x.max()])[0] + by_size
    """, "[(torch.randn(4),)]", {6: "DYN105"}),
    # calling `disable` inside compiled code is skipped, and so is calling what it returned, where it
    # is called: in the helper it was passed to
    Case("disabled-function-passed-in", """
        import torch

        def head(fn, x):
            return fn(x) * 2

        def debug(t):
            return t + 0

        @torch.compile
        def step(x):
            x = x * 2
            y = head(torch.compiler.disable(debug), x)
            return y + 1
    """, "[(torch.randn(4),)]", {4: "DYN105", 12: "DYN105"}, target="step"),
    Case("disabled-function-bound-to-names", """
        import torch

        def debug(t):
            return t + 0

        quiet = torch._dynamo.disable(debug)

        @torch.compile
        def step(x):
            x = x * 2
            y = quiet(x)
            local = torch.compiler.disable(debug)
            return local(y) + 1
    """, "[(torch.randn(4),)]", {11: "DYN105", 12: "DYN105", 13: "DYN105"}, target="step"),
    Case("disabled-function-as-module-attribute", """
        import torch
        import torch.nn as nn

        def debug(t):
            return t + 0

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.post = torch.compiler.disable(debug)

            def forward(self, x):
                return self.post(self.fc(x)) * 2
    """, "[(torch.randn(2, 4),)]", {14: "DYN105"}, target="Block"),
    Case("class-statement-in-helper", """
        import torch

        def scaled(x):
            class Pair:
                scale = 2
            return x * Pair.scale

        @torch.compile
        def f(x):
            x = x * 2
            return scaled(x) + 1
    """, "[(torch.randn(4),)]", {4: "DYN105"}),
    # `with open(...)` gives up at the `with`; a file bound by a plain call breaks at each method
    Case("file-opened", """
        import torch

        @torch.compile
        def f(x, path: str):
            x = x * 2
            fh = open(path)
            n = len(fh.read())
            fh.close()
            with open(path) as again:
                n += len(again.readline())
            return x + n
    """, "[(torch.randn(4), __file__)]", {6: "DYN105", 7: "DYN105", 8: "DYN105", 9: "DYN105"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dynalint_predicts_labels(case: Case) -> None:
    found = {d.line: d.code for d in check(case.code) if d.kind == "graph-break"}
    assert found == case.breaks


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_labels_match_dynamo(case: Case, tmp_path) -> None:
    obs, module = run_example_under_dynamo(case.example, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == set(case.breaks) | case.unpredicted, \
        [(b.line, b.gb_type) for b in obs.breaks]


SILENT = [
    # a tensor where torch also takes one: the tensor overloads (measured not to break)
    """
    import torch

    @torch.compile
    def f(x, lo):
        return torch.full((3,), x.max()) + x.clamp(min=lo).max(lo) + x.clone().fill_(x.min())
    """,
    # slicing or indexing something the analysis does not know with a tensor: may be a mapping
    """
    import torch

    @torch.compile
    def f(x, table):
        return x * table[x.argmax()]
    """,
    # the tensor operand of `and` never runs when the left one is false under compile
    """
    import torch

    @torch.compile
    def f(x):
        if torch.compiler.is_exporting() and x.sum() > 0:
            return x
        return x + 1
    """,
    # a raise caught in the compiled code, here or in a caller; context managers Dynamo enters
    # (measured not to break)
    """
    import contextlib
    import warnings
    import torch

    class Timer:
        def __enter__(self):
            self.n = 1
            return self

        def __exit__(self, *exc):
            self.n = 0
            return False

    def checked(x):
        if x.dim() == 1:
            raise ValueError("a vector")
        return x

    @torch.compile
    def f(x):
        try:
            y = checked(x)
        except ValueError:
            y = x * 2
        with Timer(), contextlib.suppress(KeyError), warnings.catch_warnings():
            with torch.autograd.profiler.record_function("block"):
                y = y + 1
        return y
    """,
    # a function passed in and called there, not one made by `disable`
    """
    import torch

    def head(fn, x):
        return fn(x) * 2

    @torch.compile
    def f(x):
        return head(lambda t: t + 1, x)
    """,
    # data_ptr() values that are not compared
    """
    import torch

    @torch.compile
    def f(x):
        ptrs = {x.data_ptr(): 1}
        return x + len(ptrs)
    """,
]


@pytest.mark.parametrize("code", SILENT)
def test_silent_where_nothing_is_known_to_break(code: str) -> None:
    assert [d.code for d in check(code) if d.kind == "graph-break"] == []


#: `while` tests whose break Dynamo resumes at the loop header, or runs the function eagerly for
LOOP_TESTS = [
    ("""
    import torch

    @torch.compile
    def shrink(x):
        while x.abs().max() > 1:
            x = x / 2
        return x
    """, False),
    ("""
    import torch

    @torch.compile
    def shrink(x):
        for _ in range(2):
            while x.abs().max() > 1:
                x = x / 2
            x = x * 4
        return x
    """, True),
    ("""
    import torch

    @torch.compile
    def refine(x, steps: int = 6):
        i = 0
        change = x.abs().sum()
        while i < steps and change > 1e-3:
            y = x * 0.5
            change = (y - x).abs().sum()
            x = y
            i += 1
        return x
    """, False),
    ("""
    import torch

    def halved(x):
        print("halving")
        return x / 2

    @torch.compile
    def shrink(x):
        while x.abs().max() > 1:
            x = halved(x)
        return x
    """, True),
]


@pytest.mark.parametrize("code, eager", LOOP_TESTS)
def test_a_while_test_says_whether_the_function_runs_eagerly(code: str, eager: bool) -> None:
    (finding,) = [d for d in check(code) if d.code == "DYN103"]
    assert ("eagerly" in finding.message) == eager
    assert ("every iteration" in finding.message) != eager


@requires_torch
@pytest.mark.parametrize("code, eager", LOOP_TESTS)
def test_a_while_test_runs_eagerly_as_dynamo_does(code: str, eager: bool, tmp_path) -> None:
    obs, _ = run_example_under_dynamo(Example(code, inputs="[(torch.full((3,), 8.0),)]"), tmp_path)
    assert any(b.frame_skipped for b in obs.breaks) == eager, [(b.line, b.gb_type, b.frame_skipped) for b in obs.breaks]


#: Python state carried around a `while` whose test breaks, and whether Dynamo recompiles on it
CARRIED = [
    ("count", "n = 0", "n += 1", True),
    ("grow", "seen = []", "seen.append(x)", True),
    ("flag", "moved = False", "moved = True", False),
    ("tensor", "n = torch.zeros(())", "n = n + 1", False),
    ("text", "trail = ''", "trail += '.'", True),
    ("concatenate", "out = x[:1]", "out = torch.cat([out, x[:1]])", True),
    ("rotate", "out = x.clone()", "out = torch.cat([out[1:], x[:1]])", False),
]


def _carrying(before: str, change: str) -> str:
    return f"""
    import torch

    @torch.compile
    def shrink(x):
        {before}
        while x.abs().max() > 1:
            x = x / 2
            {change}
        return x
    """


@pytest.mark.parametrize("name, before, change, recompiles", CARRIED, ids=[c[0] for c in CARRIED])
def test_carried_loop_state_is_reported(name: str, before: str, change: str, recompiles: bool) -> None:
    assert ("DYN207" in {d.code for d in check(_carrying(before, change))}) == recompiles


@requires_torch
@pytest.mark.parametrize("name, before, change, recompiles", CARRIED, ids=[c[0] for c in CARRIED])
def test_carried_loop_state_recompiles_as_dynamo_does(name: str, before: str, change: str, recompiles: bool,
                                                      tmp_path) -> None:
    example = Example(_carrying(before, change), inputs="[(torch.full((3,), 8.0),), (torch.full((3,), 20.0),)]")
    obs, _ = run_example_under_dynamo(example, tmp_path)
    assert bool(obs.recompiles) == recompiles, obs.recompiles


#: loops in functions that nothing in the file compiles, checked because a parameter is a `Tensor`
UNCOMPILED_LOOPS = [
    ("DYN101", """
    import torch

    def shrink(x: torch.Tensor):
        for _ in range(3):
            if x.sum() > 0:
                x = x - 1
        return x
    """),
    ("DYN103", """
    import torch

    def shrink(x: torch.Tensor):
        for _ in range(2):
            while x.abs().max() > 1:
                x = x / 2
        return x
    """),
]


@pytest.mark.parametrize("code, source", UNCOMPILED_LOOPS, ids=[c for c, _ in UNCOMPILED_LOOPS])
def test_a_loop_nothing_compiles_is_not_said_to_run_eagerly(code: str, source: str) -> None:
    (finding,) = [d for d in check(source) if d.code == code]
    assert "nothing in the checked files compiles `shrink`" in finding.message.lower()
    assert "Dynamo then gives up" not in finding.message and "Dynamo runs" not in finding.message
    compiled = source.replace("    def shrink", "    @torch.compile\n    def shrink")
    (finding,) = [d for d in check(compiled) if d.code == code]
    assert "nothing in the checked files" not in finding.message.lower() and "eagerly" in finding.message


@requires_torch
@pytest.mark.parametrize("code, source", UNCOMPILED_LOOPS, ids=[c for c, _ in UNCOMPILED_LOOPS])
def test_compiled_such_a_loop_runs_eagerly(code: str, source: str, tmp_path) -> None:
    obs, _ = run_example_under_dynamo(Example(source, target="shrink", inputs="[(torch.full((3,), 8.0),)]"),
                                      tmp_path)
    assert any(b.frame_skipped for b in obs.breaks), [(b.line, b.gb_type, b.frame_skipped) for b in obs.breaks]


#: Python values guarded in the frame Dynamo resumes after a break: it compiles that frame only when
#: something there is a graph operation (a frame without one is skipped, and guards nothing)
RESUMED = [
    ("scalar-in-python-arithmetic", "DYN204", """
    import torch

    @torch.compile
    def f(x):
        n = x.sum().item()
        return x, n + 1
    """, None, False),
    ("scalar-in-python-test", "DYN204", """
    import torch

    @torch.compile
    def f(x):
        n = x.sum().item()
        if n > 0:
            return x, 1
        return x, 0
    """, None, False),
    ("scalar-in-tensor-arithmetic", "DYN204", """
    import torch

    @torch.compile
    def f(x):
        n = x.sum().item()
        return x * n
    """, None, True),
    ("global-in-python-code", "DYN201", """
    import torch

    FLAG = 1

    def bump(i):
        global FLAG
        FLAG = i + 1

    @torch.compile
    def f(x):
        y = x * 2
        print("step")
        if FLAG > 2:
            return y, 1
        return y, FLAG * 3
    """, "bump(i)", False),
    ("global-in-tensor-arithmetic", "DYN201", """
    import torch

    FLAG = 1

    def bump(i):
        global FLAG
        FLAG = i + 1

    @torch.compile
    def f(x):
        y = x * 2
        print("step")
        return y * FLAG
    """, "bump(i)", True),
]


@pytest.mark.parametrize("name, rule, code, between, recompiles", RESUMED, ids=[c[0] for c in RESUMED])
def test_a_resumed_frame_without_graph_work_is_not_reported(name: str, rule: str, code: str, between: str | None,
                                                            recompiles: bool) -> None:
    assert (rule in {d.code for d in check(code)}) == recompiles


@requires_torch
@pytest.mark.parametrize("name, rule, code, between, recompiles", RESUMED, ids=[c[0] for c in RESUMED])
def test_a_resumed_frame_recompiles_as_dynamo_does(name: str, rule: str, code: str, between: str | None,
                                                   recompiles: bool, tmp_path) -> None:
    example = Example(code, inputs="[(torch.randn(4) + i,) for i in range(4)]", between_calls=between)
    obs, _ = run_example_under_dynamo(example, tmp_path)
    assert bool(obs.recompiles) == recompiles, obs.recompiles
