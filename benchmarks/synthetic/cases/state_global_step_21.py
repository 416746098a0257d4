"""Schedules driven by module-level step counters and a warm-up flag set by the trainer."""
import math

import torch

_GLOBAL_STEP = 0
WARMUP_STEPS = 100
_WARMUP_DONE = False


def cosine_scale(step: int, total: int = 1000) -> float:
    return 0.5 * (1 + math.cos(math.pi * min(step, total) / total))


def scheduled_dropout(x: torch.Tensor) -> torch.Tensor:
    global _GLOBAL_STEP
    _GLOBAL_STEP += 1
    p = 0.1 * cosine_scale(_GLOBAL_STEP)
    return torch.nn.functional.dropout(x, p=p, training=True)


def warmup_scaled(x: torch.Tensor) -> torch.Tensor:
    if not _WARMUP_DONE:
        return x * 0.1
    return x


def fixed_schedule(x: torch.Tensor, step: int = 10) -> torch.Tensor:
    return x * cosine_scale(step) * min(1.0, step / WARMUP_STEPS)


def make_inputs():
    return [(torch.randn(4, 4),) for _ in range(3)]


def before_call(i):
    global _WARMUP_DONE
    _WARMUP_DONE = i >= 1


EXAMPLES = {"scheduled_dropout": make_inputs, "warmup_scaled": make_inputs, "fixed_schedule": make_inputs}
