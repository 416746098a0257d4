"""The runs of the third held-out real-code set: normalizing flows, sparse attention maps, rotary and local
attention, Riemannian geometry, compiled as their READMEs show users using them.

``../realcode/label.py --specs`` labels them exactly as it labels ``../realcode/runspecs.py``: each spec builds
its callable from a tiny configuration with random weights (``build``, called once for the eager pass and again,
freshly, for the compiled one) and two or three input sets of varying shapes. ``setting`` is ``train`` (train
mode, grad enabled) or ``eval`` (eval mode, ``no_grad``). Library code is compiled directly where a user would (a
module, a public function); a small function or module stands in for user code where users combine library
calls (a flow's negative log-likelihood, an attention head built on ``entmax15``, queries and keys rotated before
attention, a Poincaré embedding's distances).

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

LIBRARIES = ("zuko", "entmax", "rotary_embedding_torch", "local_attention", "geoopt")
DISTRIBUTIONS = {
    "zuko": "zuko",
    "entmax": "entmax",
    "rotary_embedding_torch": "rotary-embedding-torch",
    "local_attention": "local-attention",
    "geoopt": "geoopt",
    "einops": "einops",
    "hyper_connections": "hyper-connections",
    "torch_einops_utils": "torch-einops-utils",
    "scipy": "scipy",
    "numpy": "numpy",
}

SPECS, spec, versions = _rc.held_out_set(DISTRIBUTIONS)


# ======================================================================================= zuko
FEATURES, CONTEXT = 3, 2


class _FlowNLL(torch.nn.Module):
    """A user's training objective: the negative log-likelihood of ``x`` under ``flow(c)``."""

    def __init__(self, flow: torch.nn.Module) -> None:
        super().__init__()
        self.flow = flow

    def forward(self, x: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
        return -self.flow(c).log_prob(x).mean()


class _FlowSample(torch.nn.Module):
    """A user's sampler: reparameterized draws from ``flow(c)`` (one per context row) and their log-density."""

    def __init__(self, flow: torch.nn.Module) -> None:
        super().__init__()
        self.flow = flow

    def forward(self, c: torch.Tensor) -> Any:
        return self.flow(c).rsample_and_log_prob()


def _zuko(name: str, wrapper: type, context: int = CONTEXT, **kw: Any) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import zuko

        return wrapper(getattr(zuko.flows, name)(FEATURES, context, **kw))

    return build


def _flow_data(context: bool = True) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        return [([randn(n, FEATURES, seed=i)] + ([randn(n, CONTEXT, seed=10 + i)] if context else []), {})
                for i, n in enumerate([8, 5, 12])]

    return make


def _contexts() -> list[InputSet]:
    return [([randn(n, CONTEXT, seed=10 + i)], {}) for i, n in enumerate([8, 5, 12])]


_HIDDEN = {"hidden_features": [16, 16]}
spec("zuko.maf:train", "zuko", "flows.MAF(3, 2, transforms=2) -log_prob", "train",
     module(_zuko("MAF", _FlowNLL, transforms=2, **_HIDDEN), "train"), _flow_data())
spec("zuko.nsf:train", "zuko", "flows.NSF(3, 2, transforms=2, bins=4) -log_prob", "train",
     module(_zuko("NSF", _FlowNLL, transforms=2, bins=4, **_HIDDEN), "train"), _flow_data())
spec("zuko.nsf_rsample:eval", "zuko", "flows.NSF(3, 2) rsample_and_log_prob", "eval",
     module(_zuko("NSF", _FlowSample, transforms=2, bins=4, **_HIDDEN), "eval"), _contexts)
spec("zuko.realnvp:train", "zuko", "flows.RealNVP(3, transforms=2) -log_prob (no context)", "train",
     module(_zuko("RealNVP", _FlowNLL, context=0, transforms=2, **_HIDDEN), "train"), _flow_data(context=False))
spec("zuko.nice_rsample:eval", "zuko", "flows.NICE(3, 2) rsample_and_log_prob", "eval",
     module(_zuko("NICE", _FlowSample, transforms=2, **_HIDDEN), "eval"), _contexts)
spec("zuko.naf:train", "zuko", "flows.NAF(3, 2, transforms=1, signal=4) -log_prob", "train",
     module(_zuko("NAF", _FlowNLL, transforms=1, signal=4, network={"hidden_features": [8]}, **_HIDDEN), "train"),
     _flow_data())
spec("zuko.gf:train", "zuko", "flows.GF(3, 2, transforms=2, components=4) -log_prob", "train",
     module(_zuko("GF", _FlowNLL, transforms=2, components=4, **_HIDDEN), "train"), _flow_data())
spec("zuko.cnf:eval", "zuko", "flows.CNF(3, 2, hidden_features=[16]) log_prob (adaptive ODE)", "eval",
     module(_zuko("CNF", _FlowNLL, hidden_features=[16]), "eval"), _flow_data())


# ======================================================================================= entmax
LOGITS = [(4, 7), (6, 10), (3, 5)]


def _logits(with_target: bool = False) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        out = []
        for i, (b, n) in enumerate(LOGITS):
            x = randn(b, n, seed=i).requires_grad_()
            out.append(([x] + ([randint(n, b, seed=20 + i)] if with_target else []), {}))
        return out

    return make


spec("entmax.entmax15:train", "entmax", "entmax15(x, dim=-1)", "train", fn("entmax.entmax15"), _logits())
spec("entmax.sparsemax_topk:eval", "entmax", "sparsemax(x, k=3)", "eval", fn("entmax.sparsemax", k=3), _logits())


def _entmax_bisect() -> torch.nn.Module:
    from entmax import EntmaxBisect

    return EntmaxBisect(alpha=1.3, n_iter=20)


spec("entmax.bisect:train", "entmax", "EntmaxBisect(alpha=1.3)", "train", module(_entmax_bisect, "train"),
     _logits())


def _entmax_losses() -> Callable:
    import entmax

    sparsemax_loss, entmax15_loss = entmax.SparsemaxLoss(), entmax.Entmax15Loss(k=4)
    bisect_loss = entmax.EntmaxBisectLoss(alpha=1.25, n_iter=20)

    def loss(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return sparsemax_loss(x, target) + entmax15_loss(x, target) + bisect_loss(x, target)

    return loss


spec("entmax.losses:train", "entmax", "SparsemaxLoss + Entmax15Loss(k=4) + EntmaxBisectLoss", "train",
     _entmax_losses, _logits(with_target=True))


class _EntmaxAttention(torch.nn.Module):
    """A user's attention head with ``Entmax15`` in place of softmax (sparse attention weights)."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        from entmax import Entmax15

        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.normalize = Entmax15(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.normalize(q @ k.transpose(-1, -2) / q.size(-1) ** 0.5) @ v


spec("entmax.attention:train", "entmax", "Entmax15 attention head", "train", module(_EntmaxAttention, "train"),
     lambda: [([randn(b, n, 8, seed=i)], {}) for i, (b, n) in enumerate([(2, 6), (3, 9), (1, 4)])])


# ======================================================================================= rotary_embedding_torch
HEADS, HEAD_DIM = 2, 16
SEQS = [(2, 8), (1, 12), (3, 5)]


def _qk(extra_keys: int = 0) -> list[InputSet]:
    """Queries and keys ``[batch, heads, seq, head_dim]``; ``extra_keys`` more keys than queries."""
    return [([randn(b, HEADS, n, HEAD_DIM, seed=i), randn(b, HEADS, n + extra_keys, HEAD_DIM, seed=10 + i)], {})
            for i, (b, n) in enumerate(SEQS)]


def _rotary(how: str, **kw: Any) -> Callable[[], Callable]:
    def build() -> Callable:
        from rotary_embedding_torch import RotaryEmbedding

        rotary = RotaryEmbedding(dim=HEAD_DIM // 2, **kw)

        def rotate(q: torch.Tensor, k: torch.Tensor) -> Any:
            if how == "each":
                q, k = rotary.rotate_queries_or_keys(q), rotary.rotate_queries_or_keys(k)
            elif how == "xpos":
                q, k = rotary.rotate_queries_and_keys(q, k)
            else:
                q, k = rotary.rotate_queries_with_cached_keys(q, k)
            return torch.softmax(q @ k.transpose(-1, -2) / HEAD_DIM**0.5, dim=-1)

        return rotate

    return build


spec("rotary.queries_keys:train", "rotary_embedding_torch", "RotaryEmbedding.rotate_queries_or_keys(q), (k)",
     "train", _rotary("each"), _qk)
spec("rotary.xpos:eval", "rotary_embedding_torch", "RotaryEmbedding(use_xpos).rotate_queries_and_keys", "eval",
     _rotary("xpos", use_xpos=True), _qk)
spec("rotary.cached_keys:eval", "rotary_embedding_torch",
     "RotaryEmbedding(interpolate_factor=2).rotate_queries_with_cached_keys", "eval",
     _rotary("cached", interpolate_factor=2.0), lambda: _qk(extra_keys=3))


def _axial() -> Callable:
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb

    rotary = RotaryEmbedding(dim=HEAD_DIM // 4, freqs_for="pixel", max_freq=64)

    def rotate(q: torch.Tensor) -> torch.Tensor:
        freqs = rotary.get_axial_freqs(q.size(1), q.size(2))
        return apply_rotary_emb(freqs, q)

    return rotate


spec("rotary.axial:train", "rotary_embedding_torch", "RotaryEmbedding(freqs_for=pixel).get_axial_freqs + "
     "apply_rotary_emb", "train", _axial,
     lambda: [([randn(b, h, w, HEAD_DIM, seed=i)], {}) for i, (b, h, w) in enumerate([(2, 4, 4), (1, 6, 3), (2, 5, 5)])])


# ======================================================================================= local_attention
WINDOW = 4
LOCAL_SEQS = [(2, 16), (1, 12), (2, 10)]


def _local_attention(**kw: Any) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        from local_attention import LocalAttention

        return LocalAttention(dim=HEAD_DIM, window_size=WINDOW, autopad=True, **kw)

    return build


def _qkv(mask: bool = False) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        out = []
        for i, (b, n) in enumerate(LOCAL_SEQS):
            q, k, v = (randn(b, HEADS, n, HEAD_DIM, seed=10 * j + i) for j in range(3))
            out.append(([q, k, v], {"mask": rand(b, n, seed=40 + i) > 0.2} if mask else {}))
        return out

    return make


spec("local.attn_causal:train", "local_attention", "LocalAttention(causal, look_backward=1, dropout, autopad)",
     "train", module(_local_attention(causal=True, look_backward=1, look_forward=0, dropout=0.1), "train"), _qkv())
spec("local.attn_mask:eval", "local_attention", "LocalAttention(bidirectional, exact_windowsize, mask)", "eval",
     module(_local_attention(causal=False, look_backward=1, look_forward=1, exact_windowsize=True), "eval"),
     _qkv(mask=True))


def _local_mha() -> torch.nn.Module:
    from local_attention import LocalMHA

    return LocalMHA(dim=32, window_size=WINDOW, dim_head=HEAD_DIM, heads=HEADS, causal=True, prenorm=True)


spec("local.mha:train", "local_attention", "LocalMHA(causal, prenorm)", "train", module(_local_mha, "train"),
     lambda: [([randn(b, n, 32, seed=i)], {}) for i, (b, n) in enumerate(LOCAL_SEQS)])


def _local_transformer() -> torch.nn.Module:
    from local_attention import LocalTransformer

    return LocalTransformer(num_tokens=50, max_seq_len=32, dim=32, depth=2, causal=True,
                            local_attn_window_size=WINDOW, dim_head=HEAD_DIM, heads=HEADS)


spec("local.transformer:eval", "local_attention", "LocalTransformer(depth=2, causal)", "eval",
     module(_local_transformer, "eval"),
     lambda: [([randint(50, b, n, seed=i)], {}) for i, (b, n) in enumerate([(2, 16), (1, 24), (2, 8)])])


# ======================================================================================= geoopt
def _ball_points(dims: list[tuple[int, int]], scale: float = 0.3) -> Callable[[], list[InputSet]]:
    """Pairs of points inside the unit Poincaré ball (random directions, norms below ``scale * sqrt(d)``)."""
    return lambda: [([randn(n, d, seed=i).mul(scale / d**0.5).requires_grad_(), randn(n, d, seed=10 + i).mul(
        scale / d**0.5)], {}) for i, (n, d) in enumerate(dims)]


def _poincare_ops() -> Callable:
    import geoopt

    ball = geoopt.PoincareBall(c=1.0)

    def ops(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        u = ball.logmap0(x)
        z = ball.mobius_add(ball.expmap0(u), y)
        w = ball.mobius_matvec(torch.eye(x.size(-1)) * 0.5, z)
        return ball.dist(w, y).sum() + ball.dist0(z).sum() + ball.egrad2rgrad(x, u).sum()

    return ops


spec("geoopt.poincare_ops:train", "geoopt", "PoincareBall logmap0/expmap0/mobius_add/mobius_matvec/dist", "train",
     _poincare_ops, _ball_points([(6, 3), (4, 5), (9, 2)]))


class _PoincareEmbedding(torch.nn.Module):
    """Poincaré embeddings (geoopt's README): points on the ball as ``ManifoldParameter``s, distances of pairs."""

    def __init__(self, n: int = 20, d: int = 3) -> None:
        super().__init__()
        import geoopt

        self.ball = geoopt.PoincareBall()
        self.emb = geoopt.ManifoldParameter(self.ball.random_normal(n, d, std=0.1), manifold=self.ball)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        u, v = self.emb[pairs[:, 0]], self.emb[pairs[:, 1]]
        return self.ball.dist(u, v)


spec("geoopt.poincare_embedding:train", "geoopt", "ManifoldParameter on PoincareBall, dist of pairs", "train",
     module(_PoincareEmbedding, "train"), lambda: [([randint(20, n, 2, seed=i)], {}) for i, n in enumerate([6, 9, 4])])


def _hyperplanes(ndim: int) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import geoopt
        from geoopt.layers.stereographic import Distance2StereographicHyperplanes

        ball = geoopt.Stereographic(-1)
        if ndim == 0:
            return torch.nn.Sequential(Distance2StereographicHyperplanes(2, 10, ball=ball), torch.nn.Linear(10, 4))
        return torch.nn.Sequential(Distance2StereographicHyperplanes(2, 6, ball=ball, ndim=2),
                                   torch.nn.Conv2d(6, 4, 3))

    return build


def _stereo_points(shapes: list[tuple[int, ...]], permute: bool) -> Callable[[], list[InputSet]]:
    def make() -> list[InputSet]:
        out = []
        for i, s in enumerate(shapes):
            x = randn(*s, seed=i).mul(0.2)
            out.append(([x.permute(0, 3, 1, 2).contiguous() if permute else x], {}))
        return out

    return make


spec("geoopt.hyperplanes:train", "geoopt", "Distance2StereographicHyperplanes(2, 10, ball=Stereographic(-1)) + Linear",
     "train", module(_hyperplanes(0), "train"), _stereo_points([(8, 2), (5, 2), (12, 2)], permute=False))
spec("geoopt.hyperplanes_2d:eval", "geoopt", "Distance2StereographicHyperplanes(ndim=2) + Conv2d", "eval",
     module(_hyperplanes(2), "eval"), _stereo_points([(2, 6, 6, 2), (1, 8, 5, 2), (3, 5, 7, 2)], permute=True))


class _StiefelLinear(torch.nn.Module):
    """A linear layer with an orthonormal weight on the Stiefel manifold, and the Riemannian gradient step a
    Riemannian optimizer would take for it (projection of a Euclidean gradient, retraction)."""

    def __init__(self, n: int = 6, p: int = 3) -> None:
        super().__init__()
        import geoopt

        self.manifold = geoopt.Stiefel()
        self.weight = geoopt.ManifoldParameter(self.manifold.random(n, p), manifold=self.manifold)

    def forward(self, x: torch.Tensor) -> Any:
        y = x @ self.weight
        rgrad = self.manifold.egrad2rgrad(self.weight, x.t() @ y)
        moved = self.manifold.retr(self.weight, -0.1 * rgrad)
        return y, self.manifold.inner(self.weight, rgrad), moved


spec("geoopt.stiefel:train", "geoopt", "Stiefel ManifoldParameter: egrad2rgrad, retr, inner", "train",
     module(_StiefelLinear, "train"), lambda: [([randn(n, 6, seed=i)], {}) for i, n in enumerate([4, 7, 3])])


def _sphere_lorentz() -> Callable:
    import geoopt

    sphere, lorentz = geoopt.Sphere(), geoopt.Lorentz()

    def ops(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a, b = sphere.projx(x), sphere.projx(y)
        on_sphere = sphere.dist(a, b) + sphere.inner(a, sphere.proju(a, y)).squeeze(-1)
        p = lorentz.expmap0(torch.nn.functional.pad(x, (1, 0)))
        q = lorentz.expmap0(torch.nn.functional.pad(y, (1, 0)))
        return on_sphere + lorentz.dist(p, q)

    return ops


spec("geoopt.sphere_lorentz:eval", "geoopt", "Sphere projx/dist/proju/inner, Lorentz expmap0/dist", "eval",
     _sphere_lorentz, _ball_points([(6, 3), (4, 5), (9, 2)]))
