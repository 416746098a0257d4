"""Two-tower retrieval with sampled-softmax training.

The user tower pools the user's (ragged) history with an ``EmbeddingBag``; the item tower embeds ids and
categories. Training scores each positive against negatives drawn from the item popularity
distribution, with log-Q correction and accidental-hit removal; the number of negatives grows over
training. Evaluation computes recall@k over the whole catalogue, excluding items already seen.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

N_USERS, N_ITEMS, N_CATS, DIM = 50, 200, 8, 16


class UserTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.user_emb = nn.Embedding(N_USERS, DIM)
        self.hist = nn.EmbeddingBag(N_ITEMS, DIM, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(2 * DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, user_ids, hist_items, hist_offsets):
        h = torch.cat([self.user_emb(user_ids), self.hist(hist_items, hist_offsets)], -1)
        return F.normalize(self.mlp(h), dim=-1)


class ItemTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.item_emb = nn.Embedding(N_ITEMS, DIM)
        self.cat_emb = nn.Embedding(N_CATS, DIM)
        self.mlp = nn.Sequential(nn.Linear(2 * DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM))

    def forward(self, item_ids, item_cats):
        h = torch.cat([self.item_emb(item_ids), self.cat_emb(item_cats)], -1)
        return F.normalize(self.mlp(h), dim=-1)


class TwoTower(nn.Module):
    def __init__(self, item_cats, item_freq):
        super().__init__()
        self.user = UserTower()
        self.item = ItemTower()
        self.register_buffer("item_cats", item_cats)
        self.register_buffer("sampling_probs", item_freq / item_freq.sum())
        self.log_temperature = nn.Parameter(torch.tensor(-2.0))

    def sampled_softmax_loss(self, u, pos_ids, num_neg, remove_accidental_hits=True):
        neg_ids = torch.multinomial(self.sampling_probs, num_neg, replacement=True)
        pos = self.item(pos_ids, self.item_cats[pos_ids])
        neg = self.item(neg_ids, self.item_cats[neg_ids])
        pos_logit = (u * pos).sum(-1, keepdim=True)
        neg_logit = u @ neg.T
        # log-Q correction for the popularity-biased sampler
        pos_logit = pos_logit - torch.log(self.sampling_probs[pos_ids])[:, None]
        neg_logit = neg_logit - torch.log(self.sampling_probs[neg_ids])[None, :]
        if remove_accidental_hits:
            hits = pos_ids[:, None] == neg_ids[None, :]
            neg_logit = neg_logit.masked_fill(hits, -1e9)
        logits = torch.cat([pos_logit, neg_logit], -1) / self.log_temperature.exp()
        labels = torch.zeros(u.shape[0], dtype=torch.long, device=u.device)
        return F.cross_entropy(logits, labels)

    def forward(self, user_ids, hist_items, hist_offsets, pos_ids, num_neg):
        u = self.user(user_ids, hist_items, hist_offsets)
        return self.sampled_softmax_loss(u, pos_ids, num_neg)

    @torch.no_grad()
    def recall_at_k(self, user_ids, hist_items, hist_offsets, held_out, k=10):
        u = self.user(user_ids, hist_items, hist_offsets)
        all_items = self.item(torch.arange(N_ITEMS), self.item_cats)
        scores = u @ all_items.T
        # never recommend what the user has already interacted with
        ends = torch.cat([hist_offsets[1:], torch.tensor([hist_items.numel()])])
        for row, (s, e) in enumerate(zip(hist_offsets.tolist(), ends.tolist())):
            scores[row, hist_items[s:e]] = float("-inf")
        topk = scores.topk(k, dim=-1).indices
        hits = (topk == held_out[:, None]).any(-1).float()
        return hits.mean()


def ragged_history(b, max_len):
    lengths = torch.randint(1, max_len + 1, (b,))
    items = torch.randint(0, N_ITEMS, (int(lengths.sum()),))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    return items, offsets


torch.manual_seed(0)
item_cats = torch.randint(0, N_CATS, (N_ITEMS,))
item_freq = torch.rand(N_ITEMS) ** 3 + 1e-3
model = TwoTower(item_cats, item_freq)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def train_step(batch, num_neg):
    loss = model(*batch, num_neg=num_neg)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


train_fn = torch.compile(train_step)
recall_fn = torch.compile(model.recall_at_k)


def main():
    for step in range(6):
        num_neg = 32 if step < 3 else 64  # more negatives once the towers are warm
        b = 16
        users = torch.randint(0, N_USERS, (b,))
        hist, offsets = ragged_history(b, 6)
        pos = torch.multinomial(model.sampling_probs, b, replacement=True)
        loss = train_fn((users, hist, offsets, pos), num_neg)
        print(f"step {step} negatives {num_neg} loss {loss.item():.4f}")
    for k in (10, 20):
        users = torch.randint(0, N_USERS, (8,))
        hist, offsets = ragged_history(8, 5)
        held_out = torch.randint(0, N_ITEMS, (8,))
        print(f"recall@{k}", recall_fn(users, hist, offsets, held_out, k=k).item())


if __name__ == "__main__":
    main()
