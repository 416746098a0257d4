"""The sampling stream for sampler.py: a scheduler kept in a module global, set by the input
factory and advanced by the before-call hook."""
import torch

SCHEDULER = None


class Scheduler:
    def __init__(self, steps: int):
        self.timesteps = list(range(steps * 50, 0, -50))
        self.current = None

    def step(self, i: int) -> None:
        self.current = self.timesteps[i]


def make_inputs(steps: int = 12):
    global SCHEDULER
    SCHEDULER = Scheduler(steps)
    x = torch.randn(2, 3, 16, 16)
    return [((), (x, t)) for t in SCHEDULER.timesteps]


def before_call(i):
    SCHEDULER.step(i)


def make_long_inputs():
    """A sampling loop of 50 steps."""
    return make_inputs(50)
