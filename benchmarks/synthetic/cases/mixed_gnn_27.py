"""Graph convolution with symmetric normalisation over an edge list, and graph-level readout."""
from typing import Optional

import torch
import torch.nn as nn


def add_self_loops(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    loops = torch.arange(num_nodes, device=edge_index.device).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


def gcn_norm(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    row, col = edge_index
    deg = torch.zeros(num_nodes).scatter_add_(0, col, torch.ones(col.shape[0]))
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt[deg_inv_sqrt == float("inf")] = 0
    return deg_inv_sqrt[row] * deg_inv_sqrt[col]


class GCNConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout, bias=False)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x, edge_index, num_nodes: Optional[int] = None):
        if num_nodes is None:
            num_nodes = int(edge_index.max()) + 1
        edge_index = add_self_loops(edge_index, num_nodes)
        norm = gcn_norm(edge_index, num_nodes)
        h = self.lin(x)
        msg = h[edge_index[0]] * norm.unsqueeze(-1)
        out = torch.zeros_like(h).index_add_(0, edge_index[1], msg)
        return out + self.bias


class GraphClassifier(nn.Module):
    def __init__(self, cin=4, hidden=8, n_classes=3):
        super().__init__()
        self.conv = GCNConv(cin, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x, edge_index, batch, num_graphs: int):
        h = torch.relu(self.conv(x, edge_index, num_nodes=x.shape[0]))
        pooled = torch.zeros(num_graphs, h.shape[1]).index_add_(0, batch, h)
        counts = torch.bincount(batch, minlength=num_graphs).clamp(min=1)
        return self.head(pooled / counts.unsqueeze(-1))


def make_edges():
    return torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 0, 4, 5, 3]])


def make_inputs():
    return [((4, 8), (torch.randn(6, 4), make_edges())) for _ in range(2)]


def make_inputs_cls():
    return [((), (torch.randn(6, 4), make_edges(), torch.tensor([0, 0, 0, 1, 1, 1]), 2)) for _ in range(2)]


EXAMPLES = {"GCNConv": make_inputs, "GraphClassifier": make_inputs_cls}
