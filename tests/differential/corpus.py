"""The differential corpus: realistic model code written to attack each fixer.

Each case states the fixer expected to rewrite it (None: every fixer must refuse)
and, when the rewrite may still differ, the phrase of that fixer's documentation
naming the hazard.  Input sets cover edge inputs: empty masks, NaN/inf, half
precision, batch 1.
"""
from __future__ import annotations

import textwrap

from harness import Case

HEADER = "import math\nimport os\nimport warnings\nimport logging\n\nimport torch\nimport torch.nn as nn\n" \
         "import torch.nn.functional as F\n\n"

CASES: list[Case] = []


def case(name: str, code: str, inputs: str, fixer: str | None, target: str = "f", **kw) -> None:
    CASES.append(Case(name, HEADER + textwrap.dedent(code).strip("\n") + "\n", target, inputs, fixer, **kw))


def variants(name: str, code: str, fixer: str | None, inputs: dict[str, str], target: str = "f", **kw) -> None:
    """One code, several kinds of inputs (each its own case)."""
    for label, expr in inputs.items():
        case(f"{name}-{label}", code, expr, fixer, target=target, **kw)


FLOATS = {
    "f32": "[(torch.randn(4),), (-torch.rand(4),), (torch.rand(4),)]",
    "batch1": "[(torch.randn(1),), (-torch.rand(1),)]",
    "fp16": "[(torch.randn(8).half(),), (-torch.rand(8).half(),)]",
    "bf16": "[(torch.randn(8).bfloat16(),), (torch.rand(8).bfloat16(),)]",
    "nan-inf": "[(torch.tensor([1.0, nan, -2.0]),), (torch.tensor([inf, -1.0, 3.0]),), (torch.tensor([-inf, -1.0]),)]",
    "2d": "[(torch.randn(3, 5),), (-torch.rand(2, 5),)]",
}

# ----------------------------------------------------------------------------- branch-to-where
variants("where-assign", """
    def f(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
""", "branch-to-where", FLOATS)
variants("where-ifexp", """
    def f(x):
        return x * 2 if x.mean() > 0 else x
""", "branch-to-where", {k: FLOATS[k] for k in ("f32", "fp16", "nan-inf")})
case("where-elif-activation", """
    def f(h):
        spread = h.std()
        if spread > 1.5:
            return torch.tanh(h)
        elif h.min() < -2.0:
            return F.gelu(h)
        else:
            return torch.relu(h)
""", "[(torch.randn(8),), (torch.randn(8) * 3,), (torch.randn(8) - 2,)]", "branch-to-where")
case("where-tuple-return", """
    def f(x):
        if x.sum() > 0:
            return x * 2, x + 1
        return x - 1, x * 3
""", FLOATS["f32"], "branch-to-where")
case("where-rebinds-read-name", """
    def f(x):
        y = x * 2
        if y.sum() > 0:
            y = y - 1
            z = y * 2
        else:
            z = y + 1
        return y, z
""", FLOATS["f32"], "branch-to-where")
case("where-loop-rebound", """
    class M(nn.Module):
        def forward(self, x):
            t = x
            for k in range(3):
                if t.sum() > 0:
                    t = t * 2
                t = t - 1
            return t
""", "[(torch.randn(3, 4),), (torch.randn(2, 4),)]", "branch-to-where", target="M")
case("where-temp-in-loop", """
    def f(x):
        acc = x * 0
        for i in range(3):
            if x.sum() > i:
                tmp = x * 2
                acc = acc + tmp
        return acc
""", FLOATS["f32"], "branch-to-cond")
case("where-fuse-two-inputs", """
    def f(a, b):
        if a.abs().mean() > b.abs().mean():
            return a + 0.5 * b
        return 0.5 * a + b
""", "[(torch.randn(2, 3), torch.randn(2, 3)), (torch.randn(1, 3), torch.randn(1, 3))]", "branch-to-where")
case("where-huber-elif", """
    class M(nn.Module):
        def __init__(self, delta=1.0):
            super().__init__()
            self.delta = delta

        def forward(self, pred, target):
            err = (pred - target).abs()
            mean_err = err.mean()
            if mean_err < 0.1 * self.delta:
                loss = 0.5 * err.pow(2)
            elif mean_err < 10 * self.delta:
                loss = torch.where(err < self.delta, 0.5 * err.pow(2), self.delta * (err - 0.5 * self.delta))
            else:
                loss = self.delta * err
            return loss.mean()
""", "[(torch.randn(6), torch.randn(6)), (torch.randn(6) * 0.01, torch.zeros(6)), (torch.randn(6) * 50, torch.zeros(6))]",
     "branch-to-where", target="M")
case("where-nan-clean", """
    def f(g):
        if not torch.isfinite(g).all():
            g = torch.nan_to_num(g, nan=0.0)
        return g.clamp(-10.0, 10.0)
""", FLOATS["nan-inf"], "branch-to-where")
# attacks: refused by torch.where, and by torch.cond too
case("where-reduction-vs-full", """
    def f(x):
        if x.sum() > 0:
            y = x.sum()
        else:
            y = x
        return y * 2
""", FLOATS["f32"], None)
case("where-ifexp-reduction-vs-full", """
    def f(x):
        return x.mean() if x.sum() > 0 else x
""", FLOATS["f32"], None)
case("where-int-vs-float-literal", """
    def f(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x * 0.5
        return y
""", "[(torch.tensor([1, 2, 3]),), (torch.tensor([-4, 1, 0]),)]", None)
case("where-python-number-branch", """
    def f(x):
        if x.sum() > 0:
            return x * 2
        return 0.0
""", FLOATS["f32"], None)
case("where-random-branch", """
    def f(x):
        if x.sum() > 0:
            y = x + torch.randn_like(x)
        else:
            y = x
        return y
""", FLOATS["f32"], None)
case("where-inplace-branch", """
    def f(x):
        y = x.clone()
        if x.sum() > 0:
            y.add_(1)
        return y
""", FLOATS["f32"], None)
case("where-print-branch", """
    @torch.compile(backend="eager")
    def f(x):
        if x.sum() > 0:
            print("positive")
            y = x * 2
        else:
            y = x
        return y
""", FLOATS["f32"], "defer-logging")
case("where-int-parameter-guess", """
    class M(nn.Module):
        def forward(self, x, n):
            if n > 0:
                return x * 2
            return x
""", "[(torch.randn(4), 3), (torch.randn(4), -1)]", None, target="M")
case("where-dropout-branch", """
    def f(x):
        if x.sum() > 0:
            y = F.dropout(x, 0.5, training=True)
        else:
            y = x
        return y
""", FLOATS["f32"], None)
case("where-walrus-condition", """
    def f(x):
        if (s := x.sum()) > 0:
            y = x * 2
        else:
            y = x - 1
        return y + s
""", FLOATS["f32"], None)
# guarded singular ops: torch.where would give NaN gradients; torch.cond runs one branch
case("guard-division", """
    class M(nn.Module):
        def forward(self, x, d):
            if d.abs() > 0:
                y = x / d
            else:
                y = x * 0.0
            return y
""", "[(torch.randn(4), torch.tensor(2.0)), (torch.randn(4), torch.tensor(0.0))]", None,
     target="M")  # `d` read by one branch only: its gradient would be zero instead of None
case("guard-sqrt", """
    class M(nn.Module):
        def forward(self, v):
            if v.min() > 0:
                y = v.sqrt()
            else:
                y = v * 0.0
            return y
""", "[(torch.rand(4) + 0.1,), (torch.tensor([0.0, 1.0, 4.0, 9.0]),)]", "branch-to-cond", target="M")
case("guard-log", """
    class M(nn.Module):
        def forward(self, p):
            if (p > 0).all():
                y = p.log()
            else:
                y = p - 1.0
            return y
""", "[(torch.rand(4) + 0.1,), (torch.tensor([0.0, 0.5, 1.0]),)]", "branch-to-cond", target="M")
case("guard-count-division", """
    def f(loss):
        num_active = (loss > 0).sum()
        if num_active:
            out = loss.sum() / num_active
        else:
            out = loss.sum()
        return out
""", "[(torch.randn(6),), (-torch.rand(6),)]", "branch-to-cond")

# ----------------------------------------------------------------------------- branch-to-cond
GATE = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                y = torch.relu(self.a(x))
            else:
                y = self.b(x) * 2
            return y + 1
"""
# `self.a`, `self.b` read by one branch each: their gradients would be zero instead of None
case("cond-gate", GATE, "[(torch.randn(4),), (-torch.rand(4),), (torch.rand(4),)]", None, target="M")
case("cond-gate-batch1", GATE, "[(torch.randn(1, 4),), (-torch.rand(1, 4),)]", None, target="M")
case("cond-residual", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.abs().max() > 1:
                return self.fc(x) + x
            return x
""", "[(torch.randn(4) * 3,), (torch.rand(4) * 0.5,)]", None, target="M")  # `self.fc`: one branch only
case("cond-shared-layer", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.mean() > 0:
                y = self.fc(x) * 2
            else:
                y = self.fc(x) - 1
            return y
""", "[(torch.randn(2, 4),), (-torch.rand(2, 4),)]", "branch-to-cond", target="M")
case("cond-batchnorm", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                y = self.bn(x)
            else:
                y = self.fc(x)
            return y
""", "[(torch.randn(3, 4),), (-torch.rand(3, 4),)]", None, target="M")
case("cond-dropout-module", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                y = self.drop(self.fc(x))
            else:
                y = self.fc(x)
            return y
""", "[(torch.randn(3, 4),), (-torch.rand(3, 4),)]", None, target="M")
case("cond-own-helper", """
    def helper(x):
        print("called")
        return x * 2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                y = helper(self.fc(x))
            else:
                y = self.fc(x)
            return y
""", "[(torch.randn(2, 4),), (-torch.rand(2, 4),)]", None, target="M")  # `print` in an inlined helper
case("cond-safe-cross-entropy", """
    class M(nn.Module):
        def forward(self, logits, targets):
            loss = F.cross_entropy(logits, targets)
            if torch.isnan(loss) or torch.isinf(loss):
                return torch.zeros((), dtype=logits.dtype)
            return loss
""", "[(torch.randn(4, 3), torch.tensor([0, 1, 2, 1])), (torch.tensor([[nan, 1.0, 0.0]] * 2), torch.tensor([0, 1]))]",
     None, target="M")  # `logits` read by one branch only
case("cond-episode-tracker", """
    class M(nn.Module):
        def forward(self, rewards, returns, done):
            returns = returns * 0.9 + rewards
            if done.any():
                returns = torch.where(done, torch.zeros_like(returns), returns)
            return returns
""", "[(torch.randn(6), torch.zeros(6), torch.tensor([0, 0, 1, 0, 0, 0], dtype=torch.bool)),"
     " (torch.randn(6), torch.randn(6), torch.zeros(6, dtype=torch.bool))]", "branch-to-cond", target="M")

case("cond-half-against-full", """
    class M(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                y = x.half()
            else:
                y = x
            return y
""", "[(torch.randn(2, 4),), (-torch.rand(2, 4),)]", None, target="M")
case("cond-parameter-against-input", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(4))

        def forward(self, x):
            if x.sum() > 0:
                y = self.bias
            else:
                y = x * 2
            return y * 2
""", "[(torch.randn(2, 4),), (-torch.rand(2, 4),)]", None, target="M")

# ----------------------------------------------------------------------------- keep-tensor
variants("keep-normalize", """
    def f(x):
        scale = x.abs().max().item()
        return x / scale
""", "keep-tensor", {k: FLOATS[k] for k in ("f32", "batch1", "fp16", "bf16", "2d")})
case("keep-fp16-overflow", """
    def f(x):
        s = x.abs().max().item()
        return F.gelu(x) / (s * 1000.0)
""", "[(torch.full((4,), 60000.0).half(),), (torch.randn(4).half() * 100,)]", "keep-tensor")
case("keep-float64-cancellation", """
    def f(x):
        m = x.mean().item()
        return (x - 1.0) / (m - 1.0)
""", "[(1.0 + 1e-9 * torch.arange(1, 5, dtype=torch.float64),), (torch.randn(4, dtype=torch.float64),)]",
     "keep-tensor")
case("keep-clamp-value-first", """
    def f(q):
        var = q.var().item()
        return q / math.sqrt(max(var, 1e-6))
""", "[(torch.randn(5),), (torch.tensor([nan, 1.0, 2.0]),), (torch.zeros(4),)]", "keep-tensor")
case("keep-clamp-constant-first", """
    def f(q):
        var = q.var().item()
        return q / math.sqrt(max(1e-6, var))
""", "[(torch.randn(5),), (torch.tensor([nan, 1.0, 2.0]),)]", None)
case("keep-entropy-bonus", """
    def f(logits):
        p = logits.softmax(-1)
        ent = -(p * p.clamp(min=1e-9).log()).sum(-1).mean()
        return logits * math.exp(-ent.item())
""", "[(torch.randn(2, 5),), (torch.randn(1, 5),)]", "keep-tensor")
case("keep-float-call", """
    class M(nn.Module):
        def forward(self, x, w):
            m = float(w.mean())
            return x * m
""", "[(torch.randn(4), torch.randn(3)), (torch.arange(4), torch.randn(3))]", "keep-tensor", target="M",
     hazard="no longer warns")
case("keep-int-item-int-output", """
    class M(nn.Module):
        def forward(self, x, lengths):
            n = lengths.max().item()
            return x * n
""", "[(torch.arange(4), torch.tensor([1, 3, 2])),]", "keep-tensor", target="M")
case("keep-math-domain", """
    def f(x):
        v = x.min().item()
        return torch.tanh(x) * math.log(v)
""", "[(torch.rand(4) + 1,), (torch.zeros(3),)]", None)
case("keep-math-domain-proven", """
    def f(x):
        v = x.abs().min().item()
        return torch.tanh(x) * math.log(v + 1.0)
""", "[(torch.rand(4) + 1,), (torch.zeros(3),), (-torch.rand(5),)]", "keep-tensor")
case("keep-returned-value", """
    def f(x):
        v = x.sum().item()
        return v
""", FLOATS["f32"], None, grad=False)
case("keep-tested-value", """
    def f(x):
        v = x.sum().item()
        if v > 0:
            return x * 2
        return x
""", FLOATS["f32"], None)
case("keep-assert", """
    def f(lengths, slen: int):
        assert lengths.long().max().item() <= slen
        return torch.arange(slen) < lengths[:, None]
""", "[(torch.tensor([1, 4, 2]), 5), (torch.tensor([3, 5, 1]), 5)]", "keep-tensor", grad=False)

# ----------------------------------------------------------------------------- masked-reduction
MASKS = {
    "f32": "[(torch.randn(6),), (torch.randn(6),)]",
    "empty-mask": "[(-torch.rand(5),), (torch.zeros(3),)]",
    "nan": "[(torch.tensor([nan, 1.0, -2.0, 3.0]),)]",
    "fp16-large": "[(torch.full((8,), 30000.0).half(),), (torch.randn(8).half(),)]",
    "bf16": "[(torch.randn(8).bfloat16(),)]",
    "batch1": "[(torch.randn(1),), (-torch.rand(1),)]",
}
variants("reduce-sum", """
    def f(x):
        return x[x > 0].sum() * 2
""", "masked-reduction", MASKS)
variants("reduce-mean", """
    def f(x):
        return x[x > 0].mean()
""", "masked-reduction", MASKS)
case("reduce-mean-rows", """
    class M(nn.Module):
        def forward(self, x, scores):
            keep = scores > 0
            return x[keep].mean()
""", "[(torch.randn(5, 3), torch.tensor([1.0, -1.0, 2.0, 0.5, -3.0])), (torch.randn(5, 3), -torch.rand(5))]",
     "masked-reduction", target="M")
case("reduce-int-sum", """
    def f(x):
        return x[x > 2].sum()
""", "[(torch.arange(6),), (torch.zeros(4, dtype=torch.long),)]", "masked-reduction", grad=False)
case("reduce-int-mean", """
    def f(x):
        return x[x > 2].mean()
""", "[(torch.arange(6),)]", "masked-reduction", grad=False, hazard="integer ``x``")
case("reduce-random-mask", """
    def f(x):
        return x[torch.rand(x.shape[0]) < 0.5].mean()
""", "[(torch.randn(6),), (torch.randn(6),)]", None)
case("reduce-update", """
    def f(x):
        x = x.clone()
        mask = x < 0
        x[mask] += 1
        return x
""", FLOATS["f32"], "masked-reduction")
case("reduce-update-tensor-value", """
    def f(x, v):
        x = x.clone()
        mask = x < 0
        x[mask] += v
        return x
""", "[(torch.randn(4), torch.tensor(0.5))]", None)

# ----------------------------------------------------------------------------- masked-elementwise-loss
ELEM = {
    "f32": "[(torch.randn(12, 4), torch.randn(12, 4), torch.rand(12)) for _ in range(2)]",
    "empty": "[(torch.randn(5, 4), torch.randn(5, 4), torch.zeros(5))]",
    "nan-unselected": "[(torch.tensor([[nan] * 4, [1.0] * 4]), torch.tensor([[inf] * 4, [2.0] * 4]),"
                      " torch.tensor([0.0, 1.0]))]",
    "fp16": "[(torch.randn(6, 4).half() * 200, torch.randn(6, 4).half() * 200, torch.rand(6).half())]",
    "batch1": "[(torch.randn(1, 4), torch.randn(1, 4), torch.tensor([0.9]))]",
}
variants("elem-smooth-l1-sum", """
    def f(box_pred, box_target, iou):
        pos = iou > 0.5
        pos_pred = box_pred[pos]
        pos_tgt = box_target[pos]
        return F.smooth_l1_loss(pos_pred, pos_tgt, reduction="sum") / pos.sum().clamp(min=1)
""", "masked-elementwise-loss", ELEM)
variants("elem-mse-mean", """
    class M(nn.Module):
        def forward(self, pred, target, w):
            valid = w > 0.5
            return F.mse_loss(pred[valid], target[valid])
""", "masked-elementwise-loss", ELEM, target="M")
case("elem-bce", """
    class M(nn.Module):
        def forward(self, logits, target, w):
            keep = w > 0.2
            return F.binary_cross_entropy_with_logits(logits[keep], target[keep])
""", "[(torch.randn(6, 3), torch.rand(6, 3), torch.rand(6)), (torch.randn(2, 3), torch.rand(2, 3), torch.zeros(2))]",
     "masked-elementwise-loss", target="M")
case("elem-random-mask-bound-once", """
    def f(pred, target):
        keep = torch.rand(pred.shape[0]) < 0.5
        return F.l1_loss(pred[keep], target[keep])
""", "[(torch.randn(6, 2), torch.randn(6, 2))]", "masked-elementwise-loss")
case("elem-random-mask-inline", """
    def f(pred, target):
        return F.l1_loss(pred[torch.rand(pred.shape[0]) < 0.5], target[torch.rand(pred.shape[0]) < 0.5])
""", "[(torch.randn(6, 2), torch.randn(6, 2))]", None)
case("elem-different-masks", """
    def f(pred, target, a, b):
        return F.l1_loss(pred[a > 0], target[b > 0])
""", "[(torch.randn(4, 2), torch.randn(4, 2), torch.ones(4), torch.ones(4))]", None)

# ----------------------------------------------------------------------------- masked-loss
CE = {
    "f32": "[(torch.randn(6, 3), torch.tensor([0, -100, 2, 1, -100, 0])), (torch.randn(6, 3), torch.tensor([1, 1, -100, 2, 0, 0]))]",
    "all-ignored": "[(torch.randn(3, 3), torch.tensor([-100, -100, -100]))]",
    "batch1": "[(torch.randn(1, 3), torch.tensor([2]))]",
}
variants("ce-ignore", """
    def f(logits, labels):
        keep = labels != -100
        return F.cross_entropy(logits[keep], labels[keep])
""", "masked-loss", CE)
case("ce-sum", """
    def f(logits, labels):
        keep = labels >= 0
        return F.cross_entropy(logits[keep], labels[keep], reduction="sum")
""", CE["f32"], "masked-loss")
case("ce-nan-unselected", """
    def f(logits, labels):
        keep = labels != -100
        return F.cross_entropy(logits[keep], labels[keep])
""", "[(torch.tensor([[nan, 0.0, 1.0], [0.5, 0.2, 0.1]]), torch.tensor([-100, 1]))]", "masked-loss",
     hazard="NaN\ngradients for those rows")

TOKENS = {  # a padded token loss: (B, T, C) logits, (B, T) tags; T == C once, T != C once
    "t-eq-c": "[(torch.randn(2, 3, 3), torch.tensor([[0, 2, -100], [1, -100, -100]]))]",
    "t-ne-c": "[(torch.randn(2, 3, 5), torch.tensor([[4, 2, 1], [0, 3, -100]]))]",
}
variants("ce-token-mask", """
    def f(logits, tags):
        keep = tags != -100
        return F.cross_entropy(logits[keep], tags[keep])
""", "masked-loss", TOKENS)
case("ce-mask-from-elsewhere", """
    def f(logits, tags, attention):
        mask = attention.bool()
        return F.cross_entropy(logits[mask], tags[mask])
""", "[(torch.randn(2, 3, 3), torch.tensor([[0, 2, 1], [1, 0, 2]]), torch.tensor([[1, 1, 0], [1, 0, 0]]))]", None)

# ----------------------------------------------------------------------------- async-assert
case("assert-raise", """
    def f(x):
        if torch.isnan(x).any():
            raise RuntimeError("NaN in input")
        return x * 2
""", "[(torch.randn(4),), (torch.tensor([1.0, 2.0]),)]", "async-assert")
case("assert-raise-nan", """
    def f(x):
        if torch.isnan(x).any():
            raise RuntimeError("NaN in input")
        return x * 2
""", "[(torch.tensor([nan, 1.0]),)]", "async-assert")
case("assert-raise-value-error", """
    def f(x):
        if torch.isnan(x).any():
            raise ValueError("NaN in input")
        return x * 2
""", "[(torch.tensor([nan, 1.0]),)]", None)
case("assert-not", """
    def f(w):
        assert not torch.isnan(w).any(), "bad weights"
        return w + 1
""", "[(torch.randn(3),), (torch.ones(2),)]", "async-assert")
case("assert-fstring-message", """
    def f(x):
        if torch.isnan(x).any():
            raise ValueError(f"NaN in input of shape {x.shape}")
        return x * 2
""", "[(torch.randn(4),)]", None)
case("assert-computed-message", """
    def f(x):
        assert not torch.isinf(x).any(), "inf: " + str(x.shape)
        return x * 2
""", "[(torch.randn(4),)]", None)

# ----------------------------------------------------------------------------- defer-logging
case("defer-print", """
    @torch.compile(backend="eager")
    def f(x):
        y = x + 1
        print("y:", y.sum())
        return y * 2
""", FLOATS["f32"], "defer-logging")
case("defer-print-then-inplace", """
    def f(x):
        y = x + 1
        print("y:", y)
        y.mul_(2)
        return y
""", FLOATS["f32"], None)
case("defer-warn", """
    @torch.compile(backend="eager")
    def f(x):
        warnings.warn("experimental")
        return x.float().mean()
""", FLOATS["f32"], "defer-logging")
case("defer-logging-warning", """
    @torch.compile(backend="eager")
    def f(x):
        logging.warning("scaling")
        return x * 2
""", FLOATS["f32"], "defer-logging")
case("defer-print-before-failure", """
    @torch.compile(backend="eager")
    def f(x):
        print("shape ok")
        return x.view(2, 2)
""", "[(torch.randn(4),), (torch.randn(3),)]", "eager-head")  # `x.view(2, 2)` may raise: defer-logging
# refuses (its print would be lost); eager-head runs the print before the compiled part, which then raises
case("defer-print-in-submodule", """
    class Sub(nn.Module):
        def forward(self, x):
            print("sub")
            return x * 2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x):
            return self.sub(x) + 1
""", FLOATS["f32"], None, target="M")  # inlined: Dynamo would drop the deferred print

# ----------------------------------------------------------------------------- skip-logging-while-compiling
case("skip-logger", """
    logger = logging.getLogger("dynalint.differential")

    def f(x):
        h = torch.tanh(x)
        logger.warning("encoded %s", tuple(h.shape))
        return h * 2
""", FLOATS["f32"], "skip-logging-while-compiling", hazard="never emitted from compiled code")

# ----------------------------------------------------------------------------- hoist-decision
case("hoist-step", """
    @torch.compile(backend="eager")
    def f(x, t):
        if t < 100:
            x = torch.cat([x, x * 0.1])
        return x.relu()
""", "[(torch.randn(4), torch.tensor(5)), (torch.randn(4), torch.tensor(500))]", "hoist-decision")
case("hoist-inplace-before", """
    @torch.compile(backend="eager")
    def f(x, t):
        t.add_(50)
        if t < 100:
            x = torch.cat([x, x * 0.1])
        return x.relu()
""", "[(torch.randn(4), torch.tensor(70)), (torch.randn(4), torch.tensor(10))]", None)
case("hoist-compiled-caller", """
    @torch.compile(backend="eager")
    def g(x, t):
        if t < 100:
            x = torch.cat([x, x * 0.1])
        return x.relu()

    @torch.compile(backend="eager")
    def f(x, t):
        return g(x, t) * 2
""", "[(torch.randn(4), torch.tensor(5))]", None)

# ----------------------------------------------------------------------------- python-state-to-buffer
case("buffer-counter", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return self.fc(x) * self.calls
""", "[(torch.randn(2, 4),)] * 3", "python-state-to-buffer", target="M", hazard="``named_buffers()``")
case("buffer-warmup", """
    class M(nn.Module):
        def __init__(self, warmup=3):
            super().__init__()
            self.remaining = warmup

        def forward(self, q):
            scale = 1.0 / (1 + self.remaining * q.abs().mean())
            self.remaining = max(0, self.remaining - 1)
            return q * scale
""", "[(torch.randn(6),) for _ in range(5)]", "python-state-to-buffer", target="M", hazard="``named_buffers()``")
case("buffer-float-schedule", """
    class M(nn.Module):
        def __init__(self, eps=1.0):
            super().__init__()
            self.eps = eps

        def forward(self, q):
            out = q * self.eps
            self.eps = max(0.05, self.eps * 0.5)
            return out
""", "[(torch.randn(4),) for _ in range(3)]", None, target="M")
case("buffer-int-gets-float", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0

        def forward(self, x):
            self.steps += 0.5
            return x * self.steps
""", "[(torch.randn(4),) for _ in range(3)]", None, target="M")
case("buffer-alias", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0

        def forward(self, x):
            saved = self.steps
            self.steps += 1
            return x * self.steps + saved
""", "[(torch.randn(4),) for _ in range(3)]", None, target="M")

# ----------------------------------------------------------------------------- global-to-tensor
case("global-float-rate", """
    drop_rate = 0.1

    def set_drop_rate(rate: float):
        global drop_rate
        drop_rate = rate

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            keep = 1.0 - drop_rate
            return x + self.fc(x) * keep
""", "[(torch.randn(2, 4),)] * 2", "global-to-tensor", target="M")
case("global-int-gets-float", """
    scale = 1

    def set_scale(s):
        global scale
        scale = s

    class M(nn.Module):
        def forward(self, x):
            return x * scale
""", "[(torch.randn(4),)]", None, target="M")
case("global-alias", """
    rate = 0.5

    def bump():
        global rate
        saved = rate
        rate = rate * 2
        return saved

    class M(nn.Module):
        def forward(self, x):
            return x * rate
""", "[(torch.randn(4),)]", None, target="M")
case("global-float-setter-of-anything", """
    gain = 1.0

    def set_gain(g):
        global gain
        gain = g

    class M(nn.Module):
        def forward(self, x):
            return x * gain
""", "[(torch.randn(4),)]", None, target="M")
case("global-read-by-eager-code", """
    rate = 0.5

    def set_rate(r: float):
        global rate
        rate = r

    def describe():
        return f"rate={rate}"

    class M(nn.Module):
        def forward(self, x):
            return x * rate
""", "[(torch.randn(4),)]", None, target="M")
case("global-restored-through-the-module", """
    import sys

    rate = 0.5

    def set_rate(r: float):
        global rate
        rate = r

    def run_with(r: float, fn):
        this = sys.modules[__name__]
        saved = this.rate
        this.rate = r
        try:
            return fn()
        finally:
            this.rate = saved

    class M(nn.Module):
        def forward(self, x):
            return x * rate
""", "[(torch.randn(4),)]", None, target="M")
case("global-0d-promotion", """
    factor = 0.5

    def set_factor(v: float):
        global factor
        factor = v

    class M(nn.Module):
        def forward(self, x):
            return x.sum() * (1.0 - factor)
""", "[(torch.randn(4),)]", "global-to-tensor", target="M", hazard="promoted to float64")

# ----------------------------------------------------------------------------- env-read-once
case("env-get", """
    class M(nn.Module):
        def forward(self, x):
            if os.environ.get("DYNALINT_DIFFERENTIAL_UPCAST", "0") == "1":
                return x.double().softmax(-1).float()
            return x.softmax(-1)
""", "[(torch.randn(2, 4),)] * 2", "env-read-once", target="M")
case("env-subscript", """
    class M(nn.Module):
        def forward(self, x):
            if x.shape[0] > 100:
                return x * float(os.environ["DYNALINT_DIFFERENTIAL_UNSET_GAIN"])
            return x
""", "[(torch.randn(2, 4),)]", None, target="M")
case("env-written", """
    class M(nn.Module):
        def forward(self, x):
            if os.environ.get("DYNALINT_DIFFERENTIAL_FLAG", "0") == "1":
                return x * 2
            return x

    def enable():
        os.environ["DYNALINT_DIFFERENTIAL_FLAG"] = "1"
""", "[(torch.randn(2, 4),)]", None, target="M")
case("keep-bool-tested", """
    def f(values, valid):
        denom = valid.sum().clamp(min=1)
        has_signal = bool(values.abs().sum() > 0)
        out = values.sum() / denom
        return out if has_signal else out * 0
""", "[(torch.randn(8), torch.ones(8)), (torch.zeros(4), torch.ones(4))]", "keep-tensor")
case("keep-bool-used-as-value", """
    def f(x):
        flag = bool(x.sum() > 0)
        return x * 2, flag
""", FLOATS["f32"], None)

# ----------------------------------------------------------------------------- check-in-graph
CHECKED = {
    "f32": "[(torch.randn(4),), (torch.randn(3, 2),)]",
    "fails": "[(torch.full((3,), 1e9),), (torch.randn(4),)]",
    "nan-inf": "[(torch.tensor([1.0, nan]),), (torch.tensor([inf, 1.0]),), (torch.tensor([2.0]),)]",
    "empty": "[(torch.zeros(0),), (torch.zeros(0, 3),)]",
    "fp16": "[(torch.randn(8).half(),), (torch.full((2,), 7e4).half(),)]",
}
variants("check-tensor-all", """
    def f(x):
        torch._check_tensor_all(x.abs() < 1e6, lambda: "activation out of range")
        return x * 2
""", "check-in-graph", CHECKED)
variants("check-tensor-all-helper", """
    def check(cond, msg):
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)

    class M(nn.Module):
        def forward(self, x):
            check(torch.isfinite(x), "non-finite input")
            check(x.shape[-1] > 0, "empty feature dimension")
            return x.relu()
""", "check-in-graph", {k: CHECKED[k] for k in ("f32", "nan-inf", "empty")}, target="M")
case("check-tensor-all-not-bool", """
    def f(x):
        torch._check_tensor_all(x.abs())
        return x
""", CHECKED["f32"], "check-in-graph", hazard="no longer raises ``TypeError``")
case("check-tensor-all-with-type", """
    def f(x):
        torch._check_tensor_all_with(ValueError, x.abs() < 1e6, lambda: "out of range")
        return x + 1
""", CHECKED["fails"], "check-in-graph", hazard="its own exception type")
variants("check-item", """
    def f(x):
        torch._check((x == x).all().item(), lambda: "NaN in activations")
        return x.sum()
""", "check-in-graph", {k: CHECKED[k] for k in ("f32", "nan-inf", "empty")})
case("check-bool-several-elements", """
    def f(x):
        torch._check(bool(x.abs() < 1e6))
        return x
""", "[(torch.randn(1),), (torch.randn(3),)]", "check-in-graph")
case("assert-item-fails", """
    def f(x):
        assert (x.abs() < 1e6).all().item(), "out of range"
        return x * 3
""", CHECKED["fails"], "check-in-graph", hazard="no longer raises ``AssertionError``")
case("check-tensor-all-formatted-message", """
    def f(x):
        torch._check_tensor_all(x.abs() < 1e6, lambda: f"out of range: {x.max()}")
        return x
""", CHECKED["f32"], None)
case("check-tensor-all-result-used", """
    def f(x):
        ok = torch._check_tensor_all(x.abs() < 1e6)
        return x, ok
""", CHECKED["f32"], None)
case("check-item-of-parameter", """
    def f(x, limit):
        torch._check(limit.item() > 0)
        return x * limit
""", "[(torch.randn(4), torch.tensor(2.0)), (torch.randn(2), torch.tensor(1.5))]", None)
case("check-item-not-bool", """
    def f(x):
        torch._check(x.abs().sum().item())
        return x
""", CHECKED["f32"], None)

case("where-int-clamp-float-bounds", """
    def f(x):
        if x.sum() > 0:
            y = x.clamp(0.5, 2.5)
        else:
            y = x
        return y
""", "[(torch.tensor([1, 2, 3]),), (torch.tensor([-4, 1, 0]),)]", None)
case("where-clamp-layer-output", """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            h = self.proj(x)
            if h.abs().max() > 1.0:
                h = h.clamp(-1.0, 1.0)
            return torch.tanh(h)
""", "[(torch.randn(2, 4),), (torch.randn(2, 4) * 10,), (torch.randn(1, 4) * 0.1,)]", "branch-to-where", target="M")

# ----------------------------------------------------------------------------- last-true-pooling
#: (hidden, ids) with ``k`` end-of-sequence tokens (id 2) at random places of every row: one or several,
#: at position 0 only, or every position; hidden of several dtypes, with NaN and inf.
EOS = "[(torch.randn(b, t, d).to(dtype), torch.zeros(b, t, dtype=torch.long).scatter(1, torch.rand(b, t).argsort(1)[:, :k], 2))" \
      " for b, t, d, k, dtype in {}]"
EOS_ROWS = {
    "one-each": EOS.format("[(2, 6, 4, 1, torch.float32), (3, 5, 4, 1, torch.float32), (1, 4, 4, 1, torch.float32)]"),
    "several": EOS.format("[(2, 6, 4, 2, torch.float32), (3, 7, 4, 3, torch.float32), (4, 5, 4, 5, torch.float32)]"),
    "half": EOS.format("[(2, 6, 4, 2, torch.float16), (2, 6, 4, 1, torch.bfloat16), (2, 6, 4, 3, torch.float64)]"),
    "first-only": "[(torch.randn(2, 5, 4), torch.tensor([[2, 0, 0, 0, 0], [2, 1, 1, 1, 1]]))]",
    "nan-inf": "[(torch.tensor([[[nan, 1.0, 2.0, 3.0]] * 3, [[inf, -inf, 0.0, 1.0]] * 3]),"
               " torch.tensor([[0, 2, 2], [2, 2, 0]]))]",
    "unequal": "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 0, 0, 2]]))]",
    "no-eos": "[(torch.randn(2, 4, 4), torch.zeros(2, 4, dtype=torch.long))]",
    "mask-too-short": "[(torch.randn(2, 5, 4), torch.tensor([[2, 0, 0, 2], [0, 0, 2, 2]]))]",
    "mask-one-row": "[(torch.randn(3, 4, 4), torch.tensor([[0, 2, 0, 2]]))]",
    "empty-batch": "[(torch.randn(0, 4, 4), torch.zeros(0, 4, dtype=torch.long))]",
}
_EOS_HEAD = """
    class Head(nn.Module):
        def __init__(self, d=4, labels=3, eos=2):
            super().__init__()
            self.eos = eos
            self.dense = nn.Linear(d, labels)

        def forward(self, hidden, input_ids):
            eos_mask = input_ids.eq(self.eos)
            if not eos_mask.any():
                raise ValueError("no <eos> token in the batch")
            if len(torch.unique_consecutive(eos_mask.sum(1))) > 1:
                raise RuntimeError("All examples must have the same number of <eos> tokens.")
            sentence = hidden[eos_mask, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
            return self.dense(sentence.float())
"""
variants("eos-pool-head", _EOS_HEAD, "last-true-pooling",
         {k: v for k, v in EOS_ROWS.items() if k != "unequal"}, target="Head")
case("eos-pool-head-unequal", _EOS_HEAD, EOS_ROWS["unequal"], "last-true-pooling", target="Head")
case("eos-pool-head-value-error", _EOS_HEAD.replace("raise RuntimeError", "raise ValueError"), EOS_ROWS["unequal"],
     None, target="Head")
# the head as usually written: on a mask with no True the original raises IndexError, refused
case("eos-pool-head-unchecked", _EOS_HEAD.replace("""    if not eos_mask.any():
                raise ValueError("no <eos> token in the batch")
            """, ""), EOS_ROWS["no-eos"], None, target="Head")
case("eos-pool-assert-async-any", """
    def f(hidden, input_ids):
        eos = input_ids == 2
        torch._assert_async(eos.any(), "no <eos> token in the batch")
        if len(torch.unique_consecutive(eos.sum(1))) > 1:
            raise RuntimeError
        return hidden[eos, :].view(hidden.shape[0], -1, hidden.shape[-1])[:, -1]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]])), (torch.randn(2, 4, 4), torch.zeros(2, 4, dtype=torch.long))]",
     "last-true-pooling")
case("eos-pool-4d", """
    def f(hidden, input_ids):
        eos = input_ids == 2
        if not torch.any(eos): raise IndexError("no <eos> token in the batch")
        if torch.unique_consecutive(eos.sum(dim=1)).numel() != 1:
            raise RuntimeError
        return hidden[eos, :].view(hidden.shape[0], -1, hidden.shape[-1])[:, -1]
""", "[(torch.randn(2, 5, 3, 4), torch.tensor([[2, 0, 2, 0, 0], [0, 2, 0, 0, 2]])),"
     " (torch.randn(1, 3, 2, 2), torch.tensor([[2, 2, 2]]))]", "last-true-pooling")
case("eos-pool-assert", """
    def f(hidden, input_ids):
        eos = input_ids == 2
        if not eos.any():
            raise ValueError("no <eos> token in the batch")
        assert len(torch.unique_consecutive(eos.sum(1))) == 1, "same number of <eos> in every row"
        pooled = hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
        return pooled.tanh()
""", EOS_ROWS["unequal"], None)  # an `assert` raises AssertionError, no check kept in the graph does
case("eos-pool-check-call", """
    CHECKS = True

    def check(cond, message):
        if CHECKS and not cond:
            raise ValueError(message)

    def f(hidden, input_ids):
        eos = input_ids == 2
        check(torch.unique_consecutive(eos.sum(1)).numel() == 1, "same number of <eos> in every row")
        return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
""", EOS_ROWS["several"], None)
case("eos-pool-no-check", """
    def f(hidden, input_ids):
        eos = input_ids == 2
        return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]]))]", None)
case("eos-pool-first-group", """
    def f(hidden, input_ids):
        eos = input_ids == 2
        if len(torch.unique_consecutive(eos.sum(1))) > 1:
            raise ValueError("same number of <eos> in every row")
        return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, 0, :]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]]))]", None)
case("eos-pool-other-mask", """
    def f(hidden, input_ids, other):
        eos = input_ids == 2
        if len(torch.unique_consecutive(eos.sum(1))) > 1:
            raise ValueError("same number of <eos> in every row")
        keep = other > 0
        return hidden[keep, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]]), torch.tensor([[1, 0, 1, 0], [0, 1, 1, 0]]))]",
     None)
case("eos-pool-float-mask", """
    def f(hidden, input_ids):
        eos = input_ids.eq(2).to(hidden)
        if len(torch.unique_consecutive(eos.sum(1))) > 1:
            raise ValueError("same number of <eos> in every row")
        return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]]))]", None)
case("eos-pool-mask-to-a-dtype", """
    def f(hidden, input_ids, dtype):
        eos = input_ids.eq(2).to(dtype)
        if len(torch.unique_consecutive(eos.sum(1))) > 1:
            raise ValueError("same number of <eos> in every row")
        return hidden[eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
""", "[(torch.randn(2, 4, 4), torch.tensor([[2, 0, 2, 0], [0, 2, 2, 0]]), torch.float32)]", None)

# ----------------------------------------------------------------------------- capture-flags
case("capture-nonzero-script", """
    def gather(x):
        idx = torch.nonzero(x > 0).squeeze(-1)
        return x.index_select(0, idx).sum()

    gather = torch.compile(gather, backend="eager")
""", "[(torch.randn(6),), (torch.tensor([-1.0, 2.0, nan]),), (-torch.rand(3),)]", "capture-flags",
     target="gather", grad=False, compile_target=False)
case("capture-nonzero-library", """
    def gather(x):
        idx = torch.nonzero(x > 0).squeeze(-1)
        return x.index_select(0, idx).sum()
""", "[(torch.randn(6),)]", None, target="gather", grad=False)
case("capture-module-used-after", """
    class M(nn.Module):
        def forward(self, x):
            idx = torch.nonzero(x > 0).squeeze(-1)
            return x.index_select(0, idx).sum()

    def f(x):
        model = torch.compile(M(), backend="eager")
        model.eval()
        return model(x)
""", "[(torch.randn(6),)]", None, grad=False, compile_target=False)
