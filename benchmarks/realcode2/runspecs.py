"""The runs of the held-out real-code set: libraries the analysis was not written against, compiled as users do.

``../realcode/label.py --specs`` labels them exactly as it labels ``../realcode/runspecs.py``: each spec builds
its callable from a tiny configuration with random weights (``build``, called once for the eager pass and again,
freshly, for the compiled one) and two or three input sets of varying shapes. ``setting`` is ``train`` (train
mode, grad enabled) or ``eval`` (eval mode, ``no_grad``). Library code is compiled directly where a user would (a
module, a public function); a small step function or module stands in for user code only where users combine
library calls (a graph classifier built from convolutions and pooling, an SDE integrated by ``sdeint``, several
log-densities summed into a loss, a Bayesian model written as a ``PyroModule``).

The spec helpers (``Spec``, ``module``, ``fn``, the seeded random tensors) are realcode's, so both sets build
their runs the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import torch


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/: realcode's spec helpers
from realcode import runspecs as _rc  # noqa: E402

Spec, module, fn, randn, randint, rand, g = _rc.Spec, _rc.module, _rc.fn, _rc.randn, _rc.randint, _rc.rand, _rc.g
InputSet = _rc.InputSet

LIBRARIES = ("torch_geometric", "torchsde", "pyro")
DISTRIBUTIONS = {
    "torch_geometric": "torch_geometric",
    "torchsde": "torchsde",
    "pyro": "pyro-ppl",
    "pyroapi": "pyro-api",
    "opt_einsum": "opt_einsum",
    "trampoline": "trampoline",
    "scipy": "scipy",
    "numpy": "numpy",
}

SPECS, spec, versions = _rc.held_out_set(DISTRIBUTIONS)


# ======================================================================================= torch_geometric
F_IN = 8
# (graphs, nodes per graph, edges per graph): every input set a batch of random graphs of its own size
GRAPHS = [(2, 10, 30), (3, 7, 18), (1, 15, 50)]


def _graph(n_graphs: int, nodes: int, edges: int, seed: int, f: int = F_IN) -> dict[str, torch.Tensor]:
    """A batch of random directed graphs in PyG's layout: ``x`` [N, f], ``edge_index`` [2, E], ``batch`` [N]."""
    gen = g(seed)
    src = torch.randint(0, nodes, (n_graphs, edges), generator=gen)
    dst = torch.randint(0, nodes, (n_graphs, edges), generator=gen)
    offset = (torch.arange(n_graphs) * nodes)[:, None]
    edge_index = torch.stack([(src + offset).reshape(-1), (dst + offset).reshape(-1)])
    return {
        "x": torch.randn(n_graphs * nodes, f, generator=gen),
        "edge_index": edge_index,
        "batch": torch.arange(n_graphs).repeat_interleave(nodes),
        "edge_weight": torch.rand(edge_index.size(1), generator=gen),
        "edge_attr": torch.randn(edge_index.size(1), 4, generator=gen),
    }


def _graphs(*keys: str, **kw_keys: str) -> Callable[[], list[InputSet]]:
    """Input sets of ``GRAPHS``: the named fields positionally, ``kw_keys`` (argument -> field) by keyword."""

    def make() -> list[InputSet]:
        out = []
        for i, (b, n, e) in enumerate(GRAPHS):
            gr = _graph(b, n, e, seed=i)
            out.append(([gr[k] for k in keys], {a: gr[k] for a, k in kw_keys.items()}))
        return out

    return make


def _pyg_model(name: str, **kw: Any) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        from torch_geometric.nn import models

        return getattr(models, name)(in_channels=F_IN, hidden_channels=16, num_layers=2, out_channels=4, **kw)

    return build


spec("pyg.gcn:train", "torch_geometric", "models.GCN", "train", module(_pyg_model("GCN"), "train"),
     _graphs("x", "edge_index"))
spec("pyg.gcn_weighted:eval", "torch_geometric", "models.GCN(edge_weight, cached=False)", "eval",
     module(_pyg_model("GCN", normalize=True), "eval"), _graphs("x", "edge_index", edge_weight="edge_weight"))
spec("pyg.gat:train", "torch_geometric", "models.GAT(heads=2)", "train",
     module(_pyg_model("GAT", heads=2, dropout=0.1), "train"), _graphs("x", "edge_index"))
spec("pyg.gatv2_edge:eval", "torch_geometric", "models.GAT(v2, edge_dim)", "eval",
     module(_pyg_model("GAT", v2=True, heads=2, edge_dim=4), "eval"),
     _graphs("x", "edge_index", edge_attr="edge_attr"))
spec("pyg.sage:train", "torch_geometric", "models.GraphSAGE(mean)", "train",
     module(_pyg_model("GraphSAGE"), "train"), _graphs("x", "edge_index"))
spec("pyg.gin:train", "torch_geometric", "models.GIN(batch norm)", "train", module(_pyg_model("GIN"), "train"),
     _graphs("x", "edge_index"))
spec("pyg.edgecnn:eval", "torch_geometric", "models.EdgeCNN", "eval", module(_pyg_model("EdgeCNN"), "eval"),
     _graphs("x", "edge_index"))


def _transformer_conv() -> torch.nn.Module:
    from torch_geometric.nn import TransformerConv

    return TransformerConv(F_IN, 8, heads=2, edge_dim=4, beta=True)


spec("pyg.transformer_conv:train", "torch_geometric", "TransformerConv(edge_dim, beta)", "train",
     module(_transformer_conv, "train"), _graphs("x", "edge_index", "edge_attr"))


class _GraphClassifier(torch.nn.Module):
    """A user's graph classifier: two convolutions, a readout, a linear head."""

    def __init__(self, readout: str = "mean") -> None:
        super().__init__()
        from torch_geometric import nn as pyg_nn

        self.conv1 = pyg_nn.GCNConv(F_IN, 16)
        self.conv2 = pyg_nn.SAGEConv(16, 16)
        self.pool = getattr(pyg_nn, f"global_{readout}_pool")
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        h = self.conv1(x, edge_index).relu()
        h = self.conv2(h, edge_index).relu()
        return self.head(self.pool(h, batch))


spec("pyg.graph_classifier:train", "torch_geometric", "GCNConv+SAGEConv+global_mean_pool", "train",
     module(_GraphClassifier, "train"), _graphs("x", "edge_index", "batch"))


def _global_pools() -> Callable:
    from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

    def readout(x: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        return torch.cat([global_mean_pool(x, batch), global_max_pool(x, batch), global_add_pool(x, batch)], -1)

    return readout


spec("pyg.global_pools:eval", "torch_geometric", "global_mean/max/add_pool", "eval", _global_pools,
     _graphs("x", "batch"))
spec("pyg.global_mean_pool_size:eval", "torch_geometric", "global_mean_pool(size=...)", "eval",
     fn("torch_geometric.nn.global_mean_pool"),
     lambda: [([gr["x"], gr["batch"]], {"size": b}) for i, (b, n, e) in enumerate(GRAPHS)
              for gr in [_graph(b, n, e, seed=i)]])


def _topk() -> torch.nn.Module:
    from torch_geometric.nn import TopKPooling

    return TopKPooling(F_IN, ratio=0.5)


def _sag() -> torch.nn.Module:
    from torch_geometric.nn import SAGPooling

    return SAGPooling(F_IN, ratio=0.5)


spec("pyg.topk_pool:train", "torch_geometric", "TopKPooling(ratio=0.5)", "train", module(_topk, "train"),
     _graphs("x", "edge_index", batch="batch"))
spec("pyg.sag_pool:train", "torch_geometric", "SAGPooling(GraphConv, ratio=0.5)", "train", module(_sag, "train"),
     _graphs("x", "edge_index", batch="batch"))
spec("pyg.to_dense_batch:eval", "torch_geometric", "utils.to_dense_batch", "eval",
     fn("torch_geometric.utils.to_dense_batch"), _graphs("x", "batch"))
spec("pyg.to_dense_batch_sized:eval", "torch_geometric", "utils.to_dense_batch(batch_size, max_num_nodes)", "eval",
     fn("torch_geometric.utils.to_dense_batch"),
     lambda: [([gr["x"], gr["batch"]], {"batch_size": b, "max_num_nodes": n}) for i, (b, n, e) in enumerate(GRAPHS)
              for gr in [_graph(b, n, e, seed=i)]])


class _DenseDiffPool(torch.nn.Module):
    """A user's dense pipeline: ``to_dense_batch``/``to_dense_adj``, ``DenseGCNConv``, ``dense_diff_pool``."""

    def __init__(self) -> None:
        super().__init__()
        from torch_geometric.nn import DenseGCNConv

        self.embed = DenseGCNConv(F_IN, 16)
        self.assign = DenseGCNConv(F_IN, 4)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor) -> Any:
        from torch_geometric.nn import dense_diff_pool
        from torch_geometric.utils import to_dense_adj, to_dense_batch

        xd, mask = to_dense_batch(x, batch)
        adj = to_dense_adj(edge_index, batch)
        z, s = self.embed(xd, adj, mask), self.assign(xd, adj, mask)
        return dense_diff_pool(z, adj, s, mask)


spec("pyg.dense_diff_pool:train", "torch_geometric", "to_dense_adj+DenseGCNConv+dense_diff_pool", "train",
     module(_DenseDiffPool, "train"), _graphs("x", "edge_index", "batch"))


def _graph_utils() -> Callable:
    from torch_geometric import utils

    def prep(edge_index: torch.Tensor, x: torch.Tensor) -> Any:
        ei = utils.to_undirected(edge_index)
        ei, _ = utils.remove_self_loops(ei)
        ei, _ = utils.add_self_loops(ei, num_nodes=x.size(0))
        deg = utils.degree(ei[0], x.size(0))
        alpha = utils.softmax(x[ei[0], 0], ei[1], num_nodes=x.size(0))
        return ei, deg, utils.scatter(x[ei[0]] * alpha[:, None], ei[1], 0, dim_size=x.size(0), reduce="sum")

    return prep


spec("pyg.graph_utils:eval", "torch_geometric", "to_undirected/self loops/degree/softmax/scatter", "eval",
     _graph_utils, _graphs("edge_index", "x"))


def _norms() -> torch.nn.Module:
    from torch_geometric.nn import GraphNorm, LayerNorm, aggr

    class Norms(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.graph_norm, self.layer_norm = GraphNorm(F_IN), LayerNorm(F_IN, mode="graph")
            self.attn = aggr.AttentionalAggregation(torch.nn.Linear(F_IN, 1))
            self.softmax = aggr.SoftmaxAggregation(learn=True)

        def forward(self, x: torch.Tensor, batch: torch.Tensor) -> Any:
            h = self.layer_norm(self.graph_norm(x, batch), batch)
            return self.attn(h, batch), self.softmax(h, batch)

    return Norms()


spec("pyg.norm_aggr:train", "torch_geometric", "GraphNorm+LayerNorm(graph)+Attentional/SoftmaxAggregation",
     "train", module(_norms, "train"), _graphs("x", "batch"))


# ======================================================================================= torchsde
class _SDE(torch.nn.Module):
    """A tiny neural SDE: drift and diffusion nets, the interface ``torchsde`` calls (``f``, ``g``)."""

    def __init__(self, noise_type: str = "diagonal", sde_type: str = "ito", dim: int = 3) -> None:
        super().__init__()
        self.noise_type, self.sde_type, self.dim = noise_type, sde_type, dim
        self.drift = torch.nn.Sequential(torch.nn.Linear(dim, 8), torch.nn.Tanh(), torch.nn.Linear(8, dim))
        out = dim * 2 if noise_type == "general" else dim
        self.diffusion = torch.nn.Sequential(torch.nn.Linear(dim, out), torch.nn.Sigmoid())
        self.sigma = torch.nn.Parameter(torch.full((dim,), 0.3))

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.drift(y)

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.noise_type == "additive":
            return self.sigma.expand(y.size(0), self.dim).diag_embed()
        if self.noise_type == "general":
            return self.diffusion(y).view(y.size(0), self.dim, 2)
        return self.diffusion(y)


def _sde(method: str, noise_type: str = "diagonal", sde_type: str = "ito", adjoint: bool = False,
         seeded_bm: bool = False, **kw: Any) -> Callable[[], Callable]:
    def build() -> Callable:
        import torchsde

        sde = _SDE(noise_type, sde_type)
        solve = torchsde.sdeint_adjoint if adjoint else torchsde.sdeint

        def integrate(y0: torch.Tensor, ts: torch.Tensor) -> torch.Tensor:
            extra: dict[str, Any] = {}
            if seeded_bm:
                size = (y0.size(0), 2 if noise_type == "general" else sde.dim)
                extra["bm"] = torchsde.BrownianInterval(t0=ts[0], t1=ts[-1], size=size, entropy=7)
            return solve(sde, y0, ts, method=method, dt=0.05, **extra, **kw)

        return integrate

    return build


def _sde_inputs() -> list[InputSet]:
    return [([randn(b, 3, seed=i), torch.linspace(0, 0.3, n)], {}) for i, (b, n) in enumerate([(2, 3), (4, 4), (3, 3)])]


spec("sde.euler:train", "torchsde", "sdeint(euler, diagonal ito)", "train", _sde("euler"), _sde_inputs)
spec("sde.milstein:eval", "torchsde", "sdeint(milstein, diagonal ito, seeded BrownianInterval)", "eval",
     _sde("milstein", seeded_bm=True), _sde_inputs)
spec("sde.srk_additive:eval", "torchsde", "sdeint(srk, additive noise, space-time Levy area)", "eval",
     _sde("srk", noise_type="additive"), _sde_inputs)
spec("sde.reversible_heun:train", "torchsde", "sdeint(reversible_heun, general stratonovich)", "train",
     _sde("reversible_heun", noise_type="general", sde_type="stratonovich", seeded_bm=True), _sde_inputs)
spec("sde.adjoint:train", "torchsde", "sdeint_adjoint(midpoint, diagonal stratonovich)", "train",
     _sde("midpoint", sde_type="stratonovich", adjoint=True, seeded_bm=True), _sde_inputs)
spec("sde.adaptive_heun:eval", "torchsde", "sdeint(euler_heun, adaptive)", "eval",
     _sde("euler_heun", sde_type="stratonovich", adaptive=True, seeded_bm=True), _sde_inputs)


# ======================================================================================= pyro
def _pyro_log_probs() -> Callable:
    import pyro.distributions as dist

    def loss(loc: torch.Tensor, raw_scale: torch.Tensor, x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        scale = torch.nn.functional.softplus(raw_scale) + 1e-3
        probs = torch.sigmoid(loc)
        terms = [
            dist.Normal(loc, scale).to_event(1).log_prob(x),
            dist.LogNormal(loc, scale).log_prob(x.exp()).sum(-1),
            dist.StudentT(3.0, loc, scale).log_prob(x).sum(-1),
            dist.GammaPoisson(scale, scale).log_prob(counts).sum(-1),
            dist.ZeroInflatedPoisson(scale, gate=probs).log_prob(counts).sum(-1),
            dist.BetaBinomial(scale, scale, total_count=10).log_prob(counts.clamp(max=10)).sum(-1),
            dist.AsymmetricLaplace(loc, scale, 0.5).log_prob(x).sum(-1),
            dist.Dirichlet(scale).log_prob(torch.softmax(x, -1)),
        ]
        return -torch.stack(terms).sum()

    return loss


def _pyro_inputs() -> list[InputSet]:
    out = []
    for i, (b, d) in enumerate([(4, 3), (6, 5), (2, 4)]):
        loc, raw = randn(b, d, seed=i).requires_grad_(), randn(b, d, seed=10 + i).requires_grad_()
        out.append(([loc, raw, randn(b, d, seed=20 + i), randint(6, b, d, seed=30 + i).float()], {}))
    return out


spec("pyro.log_probs:train", "pyro", "pyro.distributions log_prob (Normal.to_event, GammaPoisson, ZIP, ...)",
     "train", _pyro_log_probs, _pyro_inputs)


def _pyro_rsample() -> Callable:
    import pyro.distributions as dist

    def sample(loc: torch.Tensor, raw_scale: torch.Tensor, x: torch.Tensor, counts: torch.Tensor) -> Any:
        scale = torch.nn.functional.softplus(raw_scale) + 1e-3
        tril = torch.diag_embed(scale)
        z = dist.Normal(loc, scale).rsample()
        mvn = dist.MultivariateNormal(loc, scale_tril=tril)
        w = mvn.rsample((2,))
        gam = dist.Gamma(scale, 1.0).rsample()
        beta = dist.Beta(scale, scale + 1.0).rsample()
        return z.sum() + w.sum() + gam.sum() + beta.sum() + mvn.log_prob(w).sum()

    return sample


spec("pyro.rsample:train", "pyro", "pyro.distributions rsample (Normal, MVN, Gamma, Beta)", "train",
     _pyro_rsample, _pyro_inputs)


def _pyro_discrete() -> Callable:
    import pyro.distributions as dist

    def score(loc: torch.Tensor, raw_scale: torch.Tensor, x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        logits = loc + raw_scale
        c = dist.Categorical(logits=logits)
        oh = dist.OneHotCategorical(logits=logits)
        mask = counts[:, 0] > 1
        return (
            c.log_prob(counts[:, 0].long() % logits.size(-1)).sum()
            + oh.log_prob(torch.nn.functional.one_hot(c.sample(), logits.size(-1)).float()).sum()
            + dist.Normal(loc, 1.0).to_event(1).mask(mask).log_prob(x).sum()
            + dist.Delta(x).to_event(1).log_prob(x).sum()
            + c.entropy().sum()
        )

    return score


spec("pyro.discrete_masked:train", "pyro", "Categorical/OneHotCategorical/masked Normal/Delta", "train",
     _pyro_discrete, _pyro_inputs)


def _pyro_flow() -> torch.nn.Module:
    import pyro.distributions as dist
    import pyro.distributions.transforms as T

    class Flow(torch.nn.Module):
        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.transforms = torch.nn.ModuleList(
                [T.spline_coupling(dim, count_bins=4), T.affine_autoregressive(dim, hidden_dims=[8]),
                 T.affine_coupling(dim, hidden_dims=[8])]
            )
            self.dim = dim

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            base = dist.Normal(torch.zeros(self.dim), torch.ones(self.dim)).to_event(1)
            flow = dist.TransformedDistribution(base, list(self.transforms))
            return flow.log_prob(x).mean()

    return Flow()


spec("pyro.flow:train", "pyro", "TransformedDistribution(spline_coupling, affine_autoregressive, affine_coupling)",
     "train", module(_pyro_flow, "train"),
     lambda: [([randn(b, 4, seed=i)], {}) for i, b in enumerate([5, 8, 3])])


def _pyro_module(bayesian: bool) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import pyro
        import pyro.distributions as dist
        from pyro.nn import PyroModule, PyroParam, PyroSample

        pyro.clear_param_store()

        class Regression(PyroModule):
            def __init__(self, d_in: int = 5, d_hidden: int = 8) -> None:
                super().__init__()
                self.hidden = PyroModule[torch.nn.Linear](d_in, d_hidden)
                self.out = PyroModule[torch.nn.Linear](d_hidden, 1)
                if bayesian:
                    self.out.weight = PyroSample(dist.Normal(0.0, 1.0).expand([1, d_hidden]).to_event(2))
                    self.out.bias = PyroSample(dist.Normal(0.0, 1.0).expand([1]).to_event(1))
                self.noise = PyroParam(torch.tensor(0.5), constraint=dist.constraints.positive)

            def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                mean = self.out(self.hidden(x).tanh()).squeeze(-1)
                with pyro.plate("data", x.shape[0]):
                    pyro.sample("obs", dist.Normal(mean, self.noise), obs=y)
                return mean

        return Regression()

    return build


def _regression_inputs() -> list[InputSet]:
    return [([randn(n, 5, seed=i), randn(n, seed=10 + i)], {}) for i, n in enumerate([6, 10, 4])]


spec("pyro.pyro_module:train", "pyro", "PyroModule[Linear] + PyroParam, pyro.plate/sample(obs)", "train",
     module(_pyro_module(bayesian=False), "train"), _regression_inputs)
spec("pyro.pyro_module_bayes:eval", "pyro", "PyroModule with PyroSample priors (forward draws the weights)",
     "eval", module(_pyro_module(bayesian=True), "eval"), _regression_inputs)
