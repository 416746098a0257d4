"""What the calls of a compiled function pass keeps the analysis from taking Python values for tensors: a list
of numbers every call passes is filtered in Python (no tensor test), and a string a rebound method
(``t.step = torch.compile(t.step)``) hands to a helper is compared as a string.  A store into a key the
value stored has just read (``self.mom[n] = 0.9 * self.mom[n] + p``) adds no key.  A method of a plain
class that a script only calls itself, outside compiled code, is not analysed as compiled code.  Each case
also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests, check, script_case_tests

NUMBERS_AND_STRINGS = """\
    import torch
    import torch.nn.functional as F


    @torch.compile(backend="eager")
    def weighted(x, weights):
        kept = [i for i, w in enumerate(weights) if w > 0]
        positive = list(filter(lambda w: w > 0, weights))
        return x * len(kept) + sum(positive)


    def act_fn(x, w, activation="relu"):
        h = F.linear(x, w)
        h = torch.relu(h) if activation == "relu" else torch.tanh(h)
        return h.sum()


    class Trainer:
        def step(self, x, w, activation):
            return act_fn(x, w, activation)


    def main(x):
        t = Trainer()
        t.step = torch.compile(t.step, backend="eager")
        return weighted(x, [1.0, -1.0, 0.5]), t.step(x.view(1, 4), torch.randn(3, 4), "relu")
"""

test_check, test_dynamo = break_tests(NUMBERS_AND_STRINGS, set(), "[(torch.rand(4),)]")

MOMENTUM = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.mom = {n: torch.zeros_like(p) for n, p in self.net.named_parameters()}

    def step(self, x):
        loss = self.net(x).pow(2).mean()
        with torch.no_grad():
            for n, p in self.net.named_parameters():
                self.mom[n] = 0.9 * self.mom[n] + p
                p.sub_(1e-3 * self.mom[n])
        return loss.detach()


if __name__ == "__main__":
    t = Trainer()
    t.step = torch.compile(t.step, backend="eager")
    for i in range(4):
        t.step(torch.randn(3, 4))
"""

METRICS = """\
import torch


class Metrics:
    def __init__(self):
        self.correct = 0
        self.total = 0

    def update(self, pred, target):
        self.correct += int((pred == target).sum())
        self.total += target.numel()


@torch.compile(backend="eager")
def predict(x):
    return x.argmax(-1)


if __name__ == "__main__":
    m = Metrics()
    for T in [8, 8, 8]:
        x = torch.randn(2, T, 4)
        m.update(predict(x), torch.randint(0, 4, (2, T)))
"""

#: name -> (script, DYN203 lines, recompiles Dynamo logs)
CASES = {
    "a-key-read-before-it-is-stored": (MOMENTUM, [], 0),
    "a-method-the-script-calls-eagerly": (METRICS, [], 0),
}

test_check_state, test_dynamo_state = script_case_tests(CASES, "DYN203")


def test_a_method_the_script_calls_eagerly_breaks_nothing() -> None:
    assert [d.code for d in check(METRICS)] == []
