"""Mixture-of-Depths language model: every other block processes only the top-``capacity`` fraction
of tokens chosen by a router, the rest skip it through the residual stream.

Training uses expert-choice top-k routing and an auxiliary router loss, and anneals the capacity from
dense to sparse. At inference (causal, no look-ahead) a token is routed when its router logit is
positive. Routing statistics are kept on the model for logging.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, -1).transpose(1, 2) for y in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = self.proj(a.transpose(1, 2).reshape(b, t, d))
        return h + self.mlp(self.ln2(x + h))


class MoDBlock(nn.Module):
    def __init__(self, dim, capacity=0.5):
        super().__init__()
        self.block = Block(dim)
        self.router = nn.Linear(dim, 1)
        self.capacity = capacity
        self.stats = {}

    def forward(self, x):
        b, t, d = x.shape
        logits = self.router(x).squeeze(-1)
        if self.training:
            k = max(1, int(t * self.capacity))
            top = logits.topk(k, dim=-1).indices
            idx = top.sort(dim=-1).values
            selected = torch.zeros_like(logits).scatter(1, idx, 1.0)
            self.aux_loss = F.binary_cross_entropy_with_logits(logits, selected)
        else:
            routed = logits > 0
            if not routed.any():
                return x
            k = int(routed.sum(-1).max())
            idx = torch.where(routed, torch.arange(t), t).sort(dim=-1).values[:, :k].clamp(max=t - 1)
        gather_idx = idx[..., None].expand(-1, -1, d)
        tokens = x.gather(1, gather_idx)
        out = self.block(tokens) * torch.sigmoid(logits.gather(1, idx))[..., None]
        self.stats["routed_frac"] = idx.shape[1] / t
        return x.scatter_add(1, gather_idx, out)


class MoDLM(nn.Module):
    def __init__(self, vocab=96, dim=32, layers=4, capacity=0.5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            [MoDBlock(dim, capacity) if i % 2 else Block(dim) for i in range(layers)]
        )
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def set_capacity(self, capacity):
        for layer in self.layers:
            if isinstance(layer, MoDBlock):
                layer.capacity = capacity

    def forward(self, idx, targets=None, aux_weight=0.01):
        x = self.emb(idx)
        for layer in self.layers:
            x = x + layer(x) if isinstance(layer, Block) else layer(x)
        logits = self.head(self.ln(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        aux = sum(l.aux_loss for l in self.layers if isinstance(l, MoDBlock))
        return logits, loss + aux_weight * aux


torch.manual_seed(0)
model = MoDLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
compiled = torch.compile(model)


def main():
    total_steps = 6
    for step in range(total_steps):
        capacity = 1.0 - 0.5 * min(1.0, step / (total_steps - 2))  # anneal dense -> 50%
        model.set_capacity(capacity)
        seq_len = (32, 48, 64)[step % 3]
        tokens = torch.randint(0, 96, (2, seq_len + 1))
        _, loss = compiled(tokens[:, :-1], tokens[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        fracs = [l.stats["routed_frac"] for l in model.layers if isinstance(l, MoDBlock)]
        print(f"step {step} capacity {capacity:.2f} loss {loss.item():.3f} routed {fracs}")

    model.eval()
    with torch.no_grad():
        for n in (16, 24):
            logits = compiled(torch.randint(0, 96, (1, n)))
            print("eval", tuple(logits.shape))


if __name__ == "__main__":
    main()
