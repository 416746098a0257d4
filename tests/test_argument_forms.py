"""DYN206 for more forms of what calls pass: the extra positional arguments and keywords a
``*args``/``**kwargs`` function receives (Dynamo guards the tuple's length and the dict's keys), a list at one
call and a dict at another, or a number at one and a tensor at another (one graph for each kind of value), a
list a comprehension builds with a length the loop changes, floats one call passes in turn beside a tensor
another call passes, a flag a loop computes by testing its variable against ``None``, and an int a function
compiled with ``dynamic=True`` counts a ``range()`` loop with (the loop is unrolled for each value, so each
new one recompiles).  The replay keeps a list sliced from a comprehension's (a new list) through a shuffle of
the slice.  A number a wrapper computes from its own parameter (``step + 1``) is a number, so ``math``
functions of it fold, no break, and it takes the values the wrapper's callers give it, computed.  ``None`` at
one call and a list at another (one the compiled module returned, handed back, or one a helper builds) is two
graphs, and so is a position a decoding loop counts up from a size (``pos += 1``), a flag a wrapper computes
(``step >= 2``) and a state handed back whole after ``None`` (``state = step(chunk, state)``); an int that
indexes a module container recompiles at each new value.  Each script also runs under real Dynamo (torch 2.13),
which counts the recompiles."""
from __future__ import annotations

from helpers import break_tests, check, script_case_tests

STAR_ARGUMENTS = """\
import torch


@torch.compile(backend="eager")
def fn(x, *args, **kwargs):
    out = x * 2
    for a in args:
        out = out + a
    if "bias" in kwargs:
        out = out + kwargs["bias"]
    return out


if __name__ == "__main__":
    x = torch.randn(4)
    fn(x)
    fn(x, torch.ones(4))
    fn(x, bias=torch.zeros(4))
"""

COMPREHENSION_LENGTH = """\
import torch


@torch.compile(backend="eager")
def fn(xs):
    return torch.stack(xs).mean(0)


if __name__ == "__main__":
    for n in (2, 3, 4):
        fn([torch.randn(3) for _ in range(n)])
"""

FLOATS_BESIDE_A_TENSOR = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x, sigma):
        return x * (sigma / 255.0)


net = torch.compile(Net(), backend="eager")

if __name__ == "__main__":
    for s in [15.0, 25.0, 50.0]:
        net(torch.rand(4), s)
    for n in [4, 4]:
        sig = torch.full((n,), 10.0)
        net(torch.rand(n), sig)
"""

UNROLLED_UNDER_DYNAMIC = """\
import torch


@torch.compile(backend="eager", dynamic=True)
def tta(x, n_aug):
    outs = []
    for mode in range(n_aug):
        y = x.flip(-1) if mode & 1 else x
        outs.append(y * 2)
    return torch.stack(outs).mean(0)


if __name__ == "__main__":
    for n_aug in [1, 1, 2, 4]:
        tta(torch.rand(3, 8, 8), n_aug)
"""

SLICE_SHUFFLED = """\
import random

import torch


@torch.compile(backend="eager")
def step(x, smoothing):
    target = torch.zeros(len(x), dtype=torch.long)
    return torch.nn.functional.cross_entropy(x, target, label_smoothing=smoothing)


if __name__ == "__main__":
    rng = random.Random(0)
    data = [torch.randn(3) for _ in range(12)]
    train = data[:8]
    for epoch in range(2):
        rng.shuffle(train)
        ls = 0.1 if epoch == 0 else 0.0
        for i in range(0, len(train), 4):
            step(torch.stack(train[i:i + 4]), ls)
"""

KINDS_OF_VALUE = """\
import torch


@torch.compile(backend="eager")
def fn(x):
    if isinstance(x, (list, tuple)):
        return torch.stack(list(x)).sum(0)
    if isinstance(x, dict):
        return torch.cat(list(x.values()))
    return x


if __name__ == "__main__":
    fn([torch.randn(2), torch.randn(2)])
    fn({"a": torch.randn(2)})
    fn(torch.randn(3))
"""

A_NUMBER_OR_A_TENSOR = """\
import torch


@torch.compile(backend="eager")
def f(x, y):
    return x + y


if __name__ == "__main__":
    x = torch.randn(4)
    f(x, 1)
    f(x, torch.ones(4))
"""

A_FLAG_FROM_A_TEST_OF_NONE = """\
import torch


@torch.compile(backend="eager")
def predict(pos, compute_stress=False):
    e = (pos ** 2).sum()
    if compute_stress:
        e = e * 2
    return e


if __name__ == "__main__":
    systems = [(torch.randn(4, 3), None), (torch.randn(4, 3), torch.eye(3))]
    for pos, cell in systems:
        predict(pos, compute_stress=cell is not None)
"""

test_check, test_dynamo = script_case_tests({
    "a-flag-from-a-test-of-none": (A_FLAG_FROM_A_TEST_OF_NONE, [5], 1),
    "kinds-of-value": (KINDS_OF_VALUE, [5], 2),
    "a-number-or-a-tensor": (A_NUMBER_OR_A_TENSOR, [5], 1),
    "star-arguments": (STAR_ARGUMENTS, [5], 2),
    "comprehension-length": (COMPREHENSION_LENGTH, [5], 2),
    "floats-beside-a-tensor": (FLOATS_BESIDE_A_TENSOR, [6], 2),
    "unrolled-under-dynamic": (UNROLLED_UNDER_DYNAMIC, [5], 2),
    "slice-shuffled": (SLICE_SHUFFLED, [7], 1),
}, "DYN206")

ARITHMETIC_HANDED_ON = """
import math
import torch


@torch.compile(backend="eager")
def adam_like(p, g, step, lr, beta2=0.999):
    bc2 = 1 - beta2 ** step
    p.add_(g / math.sqrt(bc2), alpha=-lr)
    return p


def train_step(p, step, lr):
    return adam_like(p, p.sin(), step + 1, lr)


def main():
    p = torch.zeros(4)
    for step in range(3):
        train_step(p, step, 0.1)
    return p


if __name__ == "__main__":
    main()
"""

test_check_handed_on, test_dynamo_handed_on = break_tests(ARITHMETIC_HANDED_ON, set(), "[()]")
test_check_varies_handed_on, test_dynamo_varies_handed_on = script_case_tests(
    {"arithmetic-handed-on": (ARITHMETIC_HANDED_ON.lstrip("\n"), [6], 1)}, "DYN206")


def test_each_new_value_recompiles_an_unrolled_loop() -> None:
    from helpers import check

    [finding] = [d for d in check(UNROLLED_UNDER_DYNAMIC) if d.code == "DYN206"]
    assert "each new value recompiles it" in finding.message

# `None` at one call and, at another, a list the compiled module itself returned (a cache handed back), or one
# a helper builds: `past is None` fails (also under `dynamic=True`)
CACHE_HANDED_BACK = """\
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, past=None):
        k = self.lin(x)
        if past is not None:
            k = torch.cat([past[0], k], dim=1)
        return k, [k]


def make_past():
    return [torch.randn(2, 1, 8)]


if __name__ == "__main__":
    m = torch.compile(Dec(), dynamic=True, backend="eager")
    out, past = m(torch.randn(2, 3, 8))
    {second}
"""

test_check_containers, test_dynamo_containers = script_case_tests({
    "returned-list-handed-back": (CACHE_HANDED_BACK.format(second="m(torch.randn(2, 1, 8), past)"), [10], 1),
    "helper-list": (CACHE_HANDED_BACK.format(second="m(torch.randn(2, 1, 8), make_past())"), [10], 1),
}, "DYN206")

# a decoding position the loop counts up from a size (`pos = prompt.shape[1]`, `pos += 1`): another value at
# each call, whatever it starts from; under `dynamic=True` the int is symbolic (no recompile of its own)
POSITION_COUNTED = """\
import torch


def decode(tok, pos):
    positions = torch.arange(pos, pos + tok.shape[1])
    return tok + positions


def generate(step, prompt):
    pos = prompt.shape[1]
    tok = prompt[:, -1:]
    for _ in range(3):
        tok = step(tok, pos)
        pos += 1
    return tok


if __name__ == "__main__":
    step = torch.compile(decode, backend="eager"{dynamic})
    generate(step, torch.zeros(1, 3, dtype=torch.long))
"""

test_check_counted, test_dynamo_counted = script_case_tests({
    "position-counted": (POSITION_COUNTED.format(dynamic=""), [4], 1),
}, "DYN206")
test_check_counted_dynamic = script_case_tests({
    "position-counted-dynamic": (POSITION_COUNTED.format(dynamic=", dynamic=True"), [], 0),
}, "DYN206")[0]

# a flag a wrapper computes from what its callers give it (`augment=step >= 2`), and a state the compiled
# function hands back whole (`state = step(chunk, state)` after `state = None`)
FLAG_COMPUTED_BY_A_WRAPPER = """\
import torch


@torch.compile(backend="eager")
def forward_loss(x, augment):
    if augment:
        x = x * 0.5
    return x.sum()


def train_step(x, step):
    return forward_loss(x, augment=step >= 2)


if __name__ == "__main__":
    for step in range(4):
        train_step(torch.randn(8), step)
"""

STATE_HANDED_BACK = """\
import torch


@torch.compile(backend="eager")
def step(chunk, state):
    prev = torch.zeros_like(chunk) if state is None else state
    return chunk + prev


if __name__ == "__main__":
    state = None
    for _ in range(3):
        state = step(torch.randn(4), state)
"""

test_check_computed, test_dynamo_computed = script_case_tests({
    "flag-computed-by-a-wrapper": (FLAG_COMPUTED_BY_A_WRAPPER, [5], 1),
    "state-handed-back": (STATE_HANDED_BACK, [5], 1),
}, "DYN206")

# an int that indexes a module container (`self.branches[idx]`): its value is needed, never dynamic
CONTAINER_INDEX = """\
import torch
import torch.nn as nn


class Picker(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.branches = nn.ModuleList([nn.Linear(d, d) for _ in range(4)])

    def forward(self, x, idx):
        return self.branches[idx](x)


if __name__ == "__main__":
    m = torch.compile(Picker(4), backend="eager")
    x = torch.randn(2, 4)
    for idx in (0, 1, 2, 3):
        m(x, idx)
"""


def test_check_container_index_message() -> None:
    found = [d for d in check(CONTAINER_INDEX) if d.code == "DYN206"]
    assert [d.line for d in found] == [10] and "each new value recompiles it" in found[0].message


test_dynamo_container_index = script_case_tests({"container-index": (CONTAINER_INDEX, [10], 3)}, "DYN206")[1]
