"""DYN203 where the state a compiled method changes is read only in a frame resumed after a graph break that
holds no graph operation: Dynamo skips such a frame (it has no graph), so nothing there is guarded and nothing
recompiles.  A counter bumped in the branch of a tensor condition (``if contact.any(): self.events += 1``) and
a dict item stored from ``.item()`` (``self.stats["mean"] = y.mean().item()``: the dict is read after the
value, in the resumed frame) are such reads, and so is a counter bumped after a ``print`` (the frame the print
ends holds the value it prints; the counter is in the one resumed after it); the same counter followed by
tensor work in that frame is guarded and recompiles.  Each script also runs under real Dynamo (torch
2.13)."""
from __future__ import annotations

from helpers import script_case_tests

COUNTER_IN_A_BRANCH = """\
import torch
import torch.nn as nn


class World(nn.Module):
    def __init__(self):
        super().__init__()
        self.events = 0

    def step(self, pos):
        pos = (pos - 0.1).clamp(min=0.0)
        contact = pos == 0
        if contact.any():
            self.events += 1
        return {returned}


if __name__ == "__main__":
    w = World()
    f = torch.compile(w.step, backend="eager")
    pos = torch.tensor([0.05, 1.0])
    for i in range(4):
        pos = f(pos)
"""

ITEM_STORED = """\
import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.stats = {}

    def forward(self, x, record=False):
        y = self.fc(x)
        if record:
            self.stats["mean"] = y.mean().item()
        return y


if __name__ == "__main__":
    m = Tiny()
    cm = torch.compile(m, backend="eager")
    for _ in range(4):
        cm(torch.randn(2, 3), record=True)
"""

COUNTER_AFTER_A_PRINT = """\
import torch
import torch.nn as nn


class Evaluator(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def step(self, x):
        total = self.lin(x).sum()
        print("total", {shown})
        self.calls += 1
        return total


if __name__ == "__main__":
    e = Evaluator()
    f = torch.compile(e.step, backend="eager")
    for _ in range(4):
        f(torch.randn(2, 4))
"""

CASES = {
    "counter-after-a-print": (COUNTER_AFTER_A_PRINT.format(shown="total.shape"), [], 0),
    "counter-after-a-print-of-an-item": (COUNTER_AFTER_A_PRINT.format(shown="total.item()"), [], 1),
    "counter-in-a-skipped-frame": (COUNTER_IN_A_BRANCH.format(returned="pos"), [], 0),
    "counter-with-tensor-work-after": (COUNTER_IN_A_BRANCH.format(returned="pos * 2"), [14], 3),
    "item-stored-in-a-skipped-frame": (ITEM_STORED, [], 0),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN203")
