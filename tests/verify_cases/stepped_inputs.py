"""Inputs for stepped.py that keep a scheduler in a module global: the factory sets it, the
before-call hook (named from the same file) reads it."""
import torch

SCHEDULER = None


class Scheduler:
    def __init__(self):
        self.timesteps = []

    def set_timesteps(self, n):
        self.timesteps = list(range(n))


def make_inputs():
    global SCHEDULER
    SCHEDULER = Scheduler()
    x = torch.randn(2, 4)
    return [((), (x, t)) for t in (1, 2, 3)]


def before_call(i):
    SCHEDULER.set_timesteps(i + 1)
    print("hook set", len(SCHEDULER.timesteps), "timesteps")
