"""Top-k token-choice MoE feed-forward with per-expert dispatch, plus a grouped, dense-compute variant."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, dim=16, hidden=32, num_experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.num_experts = num_experts
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(num_experts))

    def forward(self, hidden_states):
        batch, seq, dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            current = hidden_states[None, top_x].reshape(-1, dim)
            current = self.experts[expert_idx](current) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, current)
        return final.reshape(batch, seq, dim), router_logits


class DenseMoeBlock(SparseMoeBlock):
    """Computes every expert on every token and mixes with the sparse top-k weights (no dispatch)."""

    def forward(self, hidden_states):
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, shape[-1])
        logits = self.gate(x)
        weights, selected = torch.topk(logits.softmax(-1), self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        dense = torch.zeros_like(logits).scatter(1, selected, weights)
        outs = torch.stack([expert(x) for expert in self.experts], dim=1)
        return (outs * dense.unsqueeze(-1)).sum(1).reshape(shape), logits


def make_inputs():
    return [((), (torch.randn(2, 5, 16),)) for _ in range(2)]


EXAMPLES = {"SparseMoeBlock": make_inputs, "DenseMoeBlock": make_inputs}
