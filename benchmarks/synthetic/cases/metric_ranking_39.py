"""Ranking metrics: binary AUROC by sorting, mean reciprocal rank, and recall@k over a similarity matrix."""
import torch


def binary_auroc(preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if len(torch.unique(target)) < 2:
        return torch.tensor(0.5)
    order = torch.argsort(preds, descending=True)
    t = target[order].float()
    tps = torch.cumsum(t, 0)
    fps = torch.cumsum(1 - t, 0)
    tpr = torch.cat([torch.zeros(1), tps / tps[-1]])
    fpr = torch.cat([torch.zeros(1), fps / fps[-1]])
    return torch.trapz(tpr, fpr)


def mean_reciprocal_rank(scores: torch.Tensor, relevant: torch.Tensor) -> torch.Tensor:
    ranks = scores.argsort(dim=-1, descending=True).argsort(dim=-1) + 1
    rr = (1.0 / ranks.float()) * relevant
    return rr.max(dim=-1).values.mean()


def recall_at_k(query: torch.Tensor, gallery: torch.Tensor, labels_q, labels_g, ks=(1, 5)):
    sim = query @ gallery.T
    topk = sim.topk(max(ks), dim=1).indices
    hits = labels_g[topk] == labels_q[:, None]
    return {f"R@{k}": hits[:, :k].any(1).float().mean() for k in ks}


def make_inputs():
    return [(torch.rand(10), torch.tensor([0, 1, 1, 0, 1, 0, 0, 1, 0, 1])) for _ in range(2)]


def make_inputs_mrr():
    return [(torch.randn(4, 6), (torch.rand(4, 6) > 0.7).float()) for _ in range(2)]


def make_inputs_rk():
    return [(torch.randn(4, 8), torch.randn(10, 8), torch.randint(0, 3, (4,)), torch.randint(0, 3, (10,)))
            for _ in range(2)]


EXAMPLES = {"binary_auroc": make_inputs, "mean_reciprocal_rank": make_inputs_mrr, "recall_at_k": make_inputs_rk}
