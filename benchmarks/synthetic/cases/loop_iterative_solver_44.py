"""Iterative solvers inside a forward: Sinkhorn with a tolerance, power iteration, fixed-step refinement."""
import torch


def sinkhorn(cost: torch.Tensor, eps: float = 0.1, max_iter: int = 50, tol: float = 1e-4) -> torch.Tensor:
    K = torch.exp(-cost / eps)
    u = torch.ones(cost.shape[0]) / cost.shape[0]
    v = torch.ones(cost.shape[1]) / cost.shape[1]
    a, b = u.clone(), v.clone()
    for _ in range(max_iter):
        u_prev = u
        u = a / (K @ v)
        v = b / (K.T @ u)
        if (u - u_prev).abs().max() < tol:
            break
    return u[:, None] * K * v[None, :]


def sinkhorn_fixed(cost: torch.Tensor, eps: float = 0.1, n_iter: int = 5) -> torch.Tensor:
    log_k = -cost / eps
    log_u = torch.zeros(cost.shape[0])
    log_v = torch.zeros(cost.shape[1])
    for _ in range(n_iter):
        log_u = -torch.logsumexp(log_k + log_v[None, :], dim=1)
        log_v = -torch.logsumexp(log_k + log_u[:, None], dim=0)
    return torch.exp(log_u[:, None] + log_k + log_v[None, :])


def spectral_norm_estimate(w: torch.Tensor, n_iter: int = 3) -> torch.Tensor:
    v = torch.ones(w.shape[1]) / w.shape[1] ** 0.5
    for _ in range(n_iter):
        u = torch.nn.functional.normalize(w @ v, dim=0)
        v = torch.nn.functional.normalize(w.T @ u, dim=0)
    return u @ w @ v


def rows_l2(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([row.norm() for row in x])


def make_inputs():
    return [(torch.rand(4, 5),) for _ in range(2)]


EXAMPLES = {"sinkhorn": make_inputs, "sinkhorn_fixed": make_inputs, "spectral_norm_estimate": make_inputs,
            "rows_l2": make_inputs}
