"""DYN203 on an attribute of an object ``self`` holds: ``self.model.num_batches += 1`` in a compiled method,
read there, is a Python number of an ``nn.Module`` that Dynamo guards on, so every call recompiles (measured
on torch 2.13, ``self.model.num_batches == 0``, then ``== 1``...); a plain object's number becomes dynamic
after one recompile."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_script

TASK = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self.num_batches = 0

    def forward(self, x):
        return self.lin(x)


class Stats:
    def __init__(self):
        self.seen = 0


class Task:
    def __init__(self, model):
        self.model = model
        self.stats = Stats()

    def step(self, x):
        out = self.model(x).sum()
        self.model.num_batches += 1
        self.stats.seen += 1
        if self.model.num_batches % 2 == 0:
            out = out * 2
        return out * self.stats.seen


if __name__ == "__main__":
    task = Task(Net())
    step = torch.compile(task.step, backend="eager")
    for _ in range(4):
        step(torch.randn(3, 4))
"""


def test_check() -> None:
    found = {d.line: d.message for d in check(TASK) if d.code == "DYN203"}
    assert sorted(found) == [26, 27]
    assert "`self.model.num_batches`" in found[26] and "on every call" in found[26]
    assert "`self.stats.seen`" in found[27] and "once when it first changes" in found[27]


@requires_torch
def test_dynamo(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "task", TASK)
    assert len(messages) == 3, messages
    assert any("num_batches" in m for m in messages) and any("seen" in m for m in messages)
