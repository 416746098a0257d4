"""The runs of the fourth held-out real-code set: Gaussian processes, attentive tabular networks and normalizing
flows, compiled as their READMEs show users using them.

``../realcode/label.py --specs`` labels them exactly as it labels ``../realcode/runspecs.py``: each spec builds
its callable from a tiny configuration with random weights (``build``, called once for the eager pass and again,
freshly, for the compiled one) and two or three input sets of varying shapes. ``setting`` is ``train`` (train
mode, grad enabled) or ``eval`` (eval mode, ``no_grad``). Library code is compiled directly where a user would (a
module such as TabNet's network or a flow's ``log_prob``); a small function or module stands in for user code where
users combine library calls (a GP model and its marginal log-likelihood, a posterior's predictive mean, a flow
assembled from transforms as nflows' README assembles one).

The spec helpers (``Spec``, ``module``, ``fn``, the seeded random tensors) are realcode's, so the sets build
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

# linear_operator is gpytorch's linear algebra (split out of gpytorch by its authors): every covariance a GP builds
# is one of its operators, so breaks inside it are breaks of a GP user's code just as gpytorch's own are.
LIBRARIES = ("gpytorch", "linear_operator", "pytorch_tabnet", "nflows")
DISTRIBUTIONS = {
    "gpytorch": "gpytorch",
    "linear_operator": "linear-operator",
    "pytorch_tabnet": "pytorch-tabnet",
    "nflows": "nflows",
    "jaxtyping": "jaxtyping",
    "sklearn": "scikit-learn",
    "scipy": "scipy",
    "pandas": "pandas",
    "matplotlib": "matplotlib",
    "numpy": "numpy",
}

SPECS, spec, versions = _rc.held_out_set(DISTRIBUTIONS)


# ======================================================================================= gpytorch
GP_SIZES = [12, 8, 16]


def _exact_gp(train_x: torch.Tensor, train_y: torch.Tensor, likelihood: Any, mean: Any, kernel: Any) -> Any:
    """The exact GP of gpytorch's README and regression tutorial: a mean, a kernel, a ``MultivariateNormal``
    (``MultitaskMultivariateNormal`` when the mean is multitask)."""
    import gpytorch

    class ExactGPModel(gpytorch.models.ExactGP):
        def forward(self, x: torch.Tensor) -> Any:
            mean_x, covar_x = self.mean_module(x), self.covar_module(x)
            if isinstance(self.mean_module, gpytorch.means.MultitaskMean):
                return gpytorch.distributions.MultitaskMultivariateNormal(mean_x, covar_x)
            return gpytorch.distributions.MultivariateNormal(mean_x, covar_x)

    model = ExactGPModel(train_x, train_y, likelihood)
    model.mean_module, model.covar_module = mean, kernel
    return model


def _gp_parts(kind: str, dims: int) -> tuple[Any, Any, Any]:
    """(likelihood, mean, kernel) of a tiny GP of the given ``kind``."""
    import gpytorch

    if kind == "rbf":
        return (gpytorch.likelihoods.GaussianLikelihood(), gpytorch.means.ConstantMean(),
                gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()))
    if kind == "matern_ard":
        return (gpytorch.likelihoods.GaussianLikelihood(), gpytorch.means.LinearMean(dims),
                gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5, ard_num_dims=dims)))
    if kind == "periodic_plus_rbf":
        return (gpytorch.likelihoods.GaussianLikelihood(), gpytorch.means.ConstantMean(),
                gpytorch.kernels.ScaleKernel(gpytorch.kernels.PeriodicKernel())
                + gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel()))
    assert kind == "multitask", kind
    return (gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2),
            gpytorch.means.MultitaskMean(gpytorch.means.ConstantMean(), num_tasks=2),
            gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), num_tasks=2, rank=1))


def _targets(n: int, tasks: int, seed: int) -> torch.Tensor:
    return randn(n, tasks, seed=seed) if tasks > 1 else randn(n, seed=seed)


class _ExactMLL(torch.nn.Module):
    """A user's training objective: ``-mll(model(x), y)`` after pointing the GP at the batch's data
    (``set_train_data(strict=False)``, since each input set has its own size)."""

    def __init__(self, kind: str, dims: int, tasks: int = 1) -> None:
        super().__init__()
        import gpytorch

        self.likelihood, mean, kernel = _gp_parts(kind, dims)
        self.model = _exact_gp(randn(10, dims, seed=90), _targets(10, tasks, 91), self.likelihood, mean, kernel)
        self.mll = gpytorch.mlls.ExactMarginalLogLikelihood(self.likelihood, self.model)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.model.set_train_data(x, y, strict=False)
        return -self.mll(self.model(x), y)


class _Posterior(torch.nn.Module):
    """A user's prediction: the predictive distribution ``likelihood(model(x))`` of a GP conditioned on fixed
    training data; its mean (and, with ``fast_pred_var``, its variance and 2-sigma band)."""

    def __init__(self, kind: str, dims: int, fast_pred_var: bool = False) -> None:
        super().__init__()
        self.likelihood, mean, kernel = _gp_parts(kind, dims)
        self.model = _exact_gp(randn(20, dims, seed=90), randn(20, seed=91), self.likelihood, mean, kernel)
        self.fast_pred_var = fast_pred_var

    def forward(self, x: torch.Tensor) -> Any:
        import gpytorch

        if not self.fast_pred_var:
            return self.likelihood(self.model(x)).mean
        with gpytorch.settings.fast_pred_var():
            observed = self.likelihood(self.model(x))
            lower, upper = observed.confidence_region()
            return observed.mean, observed.variance, lower, upper


def _gp_data(dims: int, tasks: int = 1) -> Callable[[], list[InputSet]]:
    return lambda: [([randn(n, dims, seed=i), _targets(n, tasks, 10 + i)], {}) for i, n in enumerate(GP_SIZES)]


def _gp_test_points(dims: int) -> Callable[[], list[InputSet]]:
    return lambda: [([randn(n, dims, seed=i)], {}) for i, n in enumerate([7, 15, 4])]


spec("gpytorch.exact_rbf:train", "gpytorch", "ExactGP ScaleKernel(RBF) ConstantMean, -ExactMarginalLogLikelihood",
     "train", module(lambda: _ExactMLL("rbf", 2), "train"), _gp_data(2))
spec("gpytorch.exact_matern_ard:train", "gpytorch",
     "ExactGP ScaleKernel(Matern(2.5, ard_num_dims=3)) LinearMean, -ExactMarginalLogLikelihood", "train",
     module(lambda: _ExactMLL("matern_ard", 3), "train"), _gp_data(3))
spec("gpytorch.exact_multitask:train", "gpytorch",
     "ExactGP MultitaskKernel(RBF, 2 tasks, rank=1) MultitaskGaussianLikelihood, -ExactMarginalLogLikelihood", "train",
     module(lambda: _ExactMLL("multitask", 1, tasks=2), "train"), _gp_data(1, tasks=2))
spec("gpytorch.posterior_mean:eval", "gpytorch", "ExactGP (RBF) likelihood(model(x)).mean", "eval",
     module(lambda: _Posterior("rbf", 2), "eval"), _gp_test_points(2))
spec("gpytorch.posterior_fast_pred_var:eval", "gpytorch",
     "ExactGP (Periodic + RBF) fast_pred_var: mean, variance, confidence_region", "eval",
     module(lambda: _Posterior("periodic_plus_rbf", 1, fast_pred_var=True), "eval"), _gp_test_points(1))


class _SVGPLoss(torch.nn.Module):
    """gpytorch's SVGP tutorial: an ``ApproximateGP`` with learned inducing points, ``-VariationalELBO``."""

    def __init__(self, dims: int = 2, inducing: int = 8) -> None:
        super().__init__()
        import gpytorch

        class SVGP(gpytorch.models.ApproximateGP):
            def __init__(self, inducing_points: torch.Tensor) -> None:
                dist = gpytorch.variational.CholeskyVariationalDistribution(inducing_points.size(0))
                strategy = gpytorch.variational.VariationalStrategy(self, inducing_points, dist,
                                                                    learn_inducing_locations=True)
                super().__init__(strategy)
                self.mean_module = gpytorch.means.ConstantMean()
                self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

            def forward(self, x: torch.Tensor) -> Any:
                return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

        self.model = SVGP(randn(inducing, dims, seed=92))
        self.likelihood = gpytorch.likelihoods.GaussianLikelihood()
        self.elbo = gpytorch.mlls.VariationalELBO(self.likelihood, self.model, num_data=100)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -self.elbo(self.model(x), y)


spec("gpytorch.svgp_elbo:train", "gpytorch", "ApproximateGP VariationalStrategy(8 inducing), -VariationalELBO",
     "train", module(_SVGPLoss, "train"), _gp_data(2))


def _kernel_matrix() -> Callable:
    import gpytorch

    kernel = gpytorch.kernels.SpectralMixtureKernel(num_mixtures=3, ard_num_dims=2)

    def k(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return kernel(x1, x2).to_dense()

    return k


spec("gpytorch.spectral_mixture:eval", "gpytorch", "SpectralMixtureKernel(3, ard_num_dims=2)(x1, x2).to_dense()",
     "eval", _kernel_matrix,
     lambda: [([randn(n, 2, seed=i), randn(m, 2, seed=10 + i)], {})
              for i, (n, m) in enumerate([(6, 4), (9, 9), (3, 7)])])


# ======================================================================================= pytorch_tabnet
TAB_FEATURES = 10
TAB_BATCHES = [16, 9, 24]
CAT_IDXS, CAT_DIMS = [0, 3], [5, 4]


def _tabnet(cls: str = "TabNet", grouped: list[list[int]] | None = None, **kw: Any) -> Callable[[], torch.nn.Module]:
    """TabNet's network as ``TabNetClassifier`` / ``TabNetPretrainer`` build it (``network``), with the group matrix
    from ``utils.create_group_matrix`` and a small virtual batch so that ghost batch norm splits the batch."""

    def build() -> torch.nn.Module:
        from pytorch_tabnet import tab_network
        from pytorch_tabnet.utils import create_group_matrix

        kw.setdefault("virtual_batch_size", 8)
        return getattr(tab_network, cls)(TAB_FEATURES, group_attention_matrix=create_group_matrix(
            grouped or [], TAB_FEATURES), n_d=8, n_a=8, n_steps=3, **kw)

    return build


def _tab_rows(categorical: bool = False) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        out = []
        for i, n in enumerate(TAB_BATCHES):
            x = randn(n, TAB_FEATURES, seed=i)
            if categorical:
                for j, (col, card) in enumerate(zip(CAT_IDXS, CAT_DIMS)):
                    x[:, col] = randint(card, n, seed=20 + 2 * i + j).float()
            out.append(([x], {}))
        return out

    return make


class _Explain(torch.nn.Module):
    """``TabNetModel.explain``'s network call: the aggregated feature importances and the per-step masks."""

    def __init__(self) -> None:
        super().__init__()
        self.network = _tabnet(output_dim=3)()

    def forward(self, x: torch.Tensor) -> Any:
        return self.network.forward_masks(x)


spec("tabnet.sparsemax:train", "pytorch_tabnet", "TabNet(10, 3, n_steps=3, sparsemax, virtual_batch_size=8)", "train",
     module(_tabnet(output_dim=3), "train"), _tab_rows())
spec("tabnet.entmax:eval", "pytorch_tabnet", "TabNet(10, 1, n_steps=3, mask_type=entmax) (regression)", "eval",
     module(_tabnet(output_dim=1, mask_type="entmax"), "eval"), _tab_rows())
spec("tabnet.categorical:train", "pytorch_tabnet",
     "TabNet(10, 2, cat_idxs=[0, 3], cat_dims=[5, 4], cat_emb_dim=[2, 3], grouped_features=[[1, 2]])", "train",
     module(_tabnet(output_dim=2, cat_idxs=CAT_IDXS, cat_dims=CAT_DIMS, cat_emb_dim=[2, 3], grouped=[[1, 2]]),
            "train"), _tab_rows(categorical=True))
spec("tabnet.multitask:train", "pytorch_tabnet", "TabNet(10, [3, 2]) (TabNetMultiTaskClassifier's network)",
     "train", module(_tabnet(output_dim=[3, 2]), "train"), _tab_rows())
spec("tabnet.explain:eval", "pytorch_tabnet", "TabNet(10, 3).forward_masks (explain)", "eval",
     module(_Explain, "eval"), _tab_rows())
spec("tabnet.pretraining:train", "pytorch_tabnet", "TabNetPretraining(10, pretraining_ratio=0.2) (obfuscated)",
     "train", module(_tabnet("TabNetPretraining", pretraining_ratio=0.2), "train"), _tab_rows())
spec("tabnet.pretraining:eval", "pytorch_tabnet", "TabNetPretraining(10, cat_idxs, cat_dims) (no obfuscation)",
     "eval", module(_tabnet("TabNetPretraining", cat_idxs=CAT_IDXS, cat_dims=CAT_DIMS, cat_emb_dim=[2, 2]), "eval"),
     _tab_rows(categorical=True))


# ======================================================================================= nflows
FLOW_BATCHES = [16, 7, 24]
FLOW_CONTEXT = 2


class _FlowNLL(torch.nn.Module):
    """A user's training objective (nflows' README): ``-flow.log_prob(inputs=x, context=c).mean()``."""

    def __init__(self, flow: torch.nn.Module) -> None:
        super().__init__()
        self.flow = flow

    def forward(self, x: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        return -self.flow.log_prob(inputs=x, context=c).mean()


class _FlowCall(torch.nn.Module):
    """A user's call of one of a flow's public methods (``log_prob``, ``sample_and_log_prob``,
    ``transform_to_noise``) on its inputs as given."""

    def __init__(self, flow: torch.nn.Module, method: str, **bound: Any) -> None:
        super().__init__()
        self.flow, self.method, self.bound = flow, method, bound

    def forward(self, *args: torch.Tensor, **kw: torch.Tensor) -> Any:
        return getattr(self.flow, self.method)(*args, **kw, **self.bound)


def _readme_flow(features: int = 2, layers: int = 3) -> torch.nn.Module:
    """nflows' README flow: reverse permutations between masked affine autoregressive transforms."""
    from nflows.distributions.normal import StandardNormal
    from nflows.flows.base import Flow
    from nflows.transforms.autoregressive import MaskedAffineAutoregressiveTransform
    from nflows.transforms.base import CompositeTransform
    from nflows.transforms.permutations import ReversePermutation

    transforms = []
    for _ in range(layers):
        transforms.append(ReversePermutation(features=features))
        transforms.append(MaskedAffineAutoregressiveTransform(features=features, hidden_features=4))
    return Flow(CompositeTransform(transforms), StandardNormal(shape=[features]))


def _spline_coupling_flow(features: int = 4) -> torch.nn.Module:
    """A neural spline flow from coupling layers (linear tails), random permutations and an LU linear layer."""
    from nflows import distributions, flows, transforms
    from nflows.nn import nets

    def net(in_features: int, out_features: int) -> torch.nn.Module:
        return nets.ResidualNet(in_features, out_features, hidden_features=8, num_blocks=1)

    layers = []
    for i in range(2):
        mask = torch.arange(features) % 2 == i
        layers += [transforms.PiecewiseRationalQuadraticCouplingTransform(
            mask=mask.int(), transform_net_create_fn=net, num_bins=4, tails="linear", tail_bound=3.0),
            transforms.RandomPermutation(features), transforms.LULinear(features)]
    return flows.Flow(transforms.CompositeTransform(layers), distributions.StandardNormal([features]))


def _conditional_spline_flow(features: int = 3) -> torch.nn.Module:
    """A conditional neural spline flow: a masked rational-quadratic autoregressive transform and a conditional
    diagonal normal base, both reading the context."""
    from nflows import distributions, flows, transforms

    transform = transforms.CompositeTransform([
        transforms.MaskedPiecewiseRationalQuadraticAutoregressiveTransform(
            features=features, hidden_features=8, context_features=FLOW_CONTEXT, num_bins=4, tails="linear",
            tail_bound=3.0, num_blocks=1),
        transforms.ReversePermutation(features),
        transforms.MaskedAffineAutoregressiveTransform(features=features, hidden_features=8,
                                                       context_features=FLOW_CONTEXT),
    ])
    base = distributions.ConditionalDiagonalNormal(shape=[features],
                                                   context_encoder=torch.nn.Linear(FLOW_CONTEXT, 2 * features))
    return flows.Flow(transform, base)


def _maf() -> torch.nn.Module:
    from nflows import flows

    return flows.MaskedAutoregressiveFlow(features=3, hidden_features=8, num_layers=2, num_blocks_per_layer=1,
                                          batch_norm_between_layers=True)


def _realnvp() -> torch.nn.Module:
    from nflows import flows

    return flows.SimpleRealNVP(features=4, hidden_features=8, num_layers=2, num_blocks_per_layer=1)


def _flow_rows(features: int, context: bool = False) -> Callable[[], list[InputSet]]:
    return lambda: [([randn(n, features, seed=i)] + ([randn(n, FLOW_CONTEXT, seed=10 + i)] if context else []), {})
                    for i, n in enumerate(FLOW_BATCHES)]


spec("nflows.readme:train", "nflows", "Flow(ReversePermutation + MaskedAffineAutoregressiveTransform x3) -log_prob",
     "train", module(lambda: _FlowNLL(_readme_flow()), "train"), _flow_rows(2))
spec("nflows.maf:train", "nflows", "flows.MaskedAutoregressiveFlow(3, 8, 2 layers, batch norm between) -log_prob",
     "train", module(lambda: _FlowNLL(_maf()), "train"), _flow_rows(3))
spec("nflows.realnvp:train", "nflows", "flows.SimpleRealNVP(4, 8, 2 layers) -log_prob", "train",
     module(lambda: _FlowNLL(_realnvp()), "train"), _flow_rows(4))
spec("nflows.realnvp_noise:eval", "nflows", "flows.SimpleRealNVP(4, 8, 2 layers).transform_to_noise", "eval",
     module(lambda: _FlowCall(_realnvp(), "transform_to_noise"), "eval"), _flow_rows(4))
spec("nflows.spline_coupling:train", "nflows",
     "PiecewiseRationalQuadraticCouplingTransform(linear tails) + RandomPermutation + LULinear -log_prob", "train",
     module(lambda: _FlowNLL(_spline_coupling_flow()), "train"), _flow_rows(4))
spec("nflows.conditional_log_prob:eval", "nflows",
     "MaskedPiecewiseRationalQuadraticAutoregressiveTransform(context) + ConditionalDiagonalNormal log_prob", "eval",
     module(lambda: _FlowCall(_conditional_spline_flow(), "log_prob"), "eval"), _flow_rows(3, context=True))
spec("nflows.conditional_sample:eval", "nflows", "conditional spline flow sample_and_log_prob(4, context)", "eval",
     module(lambda: _FlowCall(_conditional_spline_flow(), "sample_and_log_prob", num_samples=4), "eval"),
     lambda: [([], {"context": randn(n, FLOW_CONTEXT, seed=10 + i)}) for i, n in enumerate([5, 3, 8])])
