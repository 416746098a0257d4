"""Data-dependent values: a dynamic-shape operator and a scalar read, both kept in the graph by
Dynamo's capture settings."""
import torch


def routed(x):
    idx = (x > 0).nonzero()
    scale = x.abs().max().item()
    return x[idx[:, 0]].sum() / scale


def dynalint_inputs():
    return [(torch.tensor([1.0, -2.0, 3.0, 0.5]),), (torch.tensor([-1.0, 2.0, -3.0, 4.0]),)]
