"""Forward passes instrumented for profiling: wall-clock timers, record_function ranges, memory stats."""
import time
from collections import defaultdict

import torch
import torch.nn as nn

TIMINGS = defaultdict(list)


class TimedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, x):
        start = time.perf_counter()
        y = self.ff(x)
        TIMINGS["ff"].append(time.perf_counter() - start)
        return y


class ProfiledBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, x):
        with torch.profiler.record_function("ff"):
            y = self.ff(x)
        with torch.autocast("cpu", enabled=False):
            y = y.float()
        if torch.cuda.is_available():
            y = y + 0
        return y


def make_inputs():
    return [((), (torch.randn(2, 8),)) for _ in range(2)]


EXAMPLES = {"TimedBlock": make_inputs, "ProfiledBlock": make_inputs}
