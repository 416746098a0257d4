"""A string formatted from a tensor (``f"loss={loss:.3e}"``) is held unformatted while Dynamo traces, and what
uses it breaks: ``str.join`` of strings among which one is (a list display or a comprehension of them), and so
does ``+`` of one formatted from a tensor of a dict every call passes (``losses: dict``).  Run under real
Dynamo (torch 2.13) too."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch


def banner(loss: torch.Tensor, x: torch.Tensor):
    return " ".join([f"loss={loss:.3e}", "ok"]), x * 2


def report(losses: dict, weights: dict) -> str:
    return " ".join([f"{k}={v:.2e}(w={weights[k]:.1f})" for k, v in losses.items()])


def tagged(losses: dict, x: torch.Tensor):
    msg = f"pde={losses['pde']:.3e}"
    return "[train] " + msg, x * 2


def main(x):
    losses = {"pde": torch.tensor(0.3), "ic": torch.tensor(0.1)}
    return (torch.compile(banner, backend="eager")(torch.tensor(0.3), x),
            torch.compile(report, backend="eager")(losses, {"pde": 1.0, "ic": 2.0}),
            torch.compile(tagged, backend="eager")(losses, x))
"""

test_check, test_dynamo = break_tests(CODE, {(5, "DYN105"), (9, "DYN105"), (14, "DYN105")},
                                      "[(torch.rand(2),)]")
