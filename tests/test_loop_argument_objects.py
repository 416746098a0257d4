"""DYN206 for the values a script's loops hand a compiled function, where the replay of the loops has to follow
more than numbers: a method compiled as a decorator or rebound to its compiled handle (``t.step =
torch.compile(t.step)``), dicts and records of a list the loop walks or built of its variable, a range bound
by a default the driver's calls keep, a warm start unpacked from a display, a tensor on every other
iteration and ``None`` on the rest, and a number a helper computes from the loop variable.  Each
script is also run under real Dynamo (torch 2.13), which counts the recompiles.  The values a wrapper hands
on as they are (``generate(x, t, k)`` calling ``sample(x, t, k)``) are followed to the wrapper's calls; a
helper made of ``return`` and ``if`` statements is run on the loop's values; ``zip`` of slices of a schedule,
a driver called with a literal list, tuple-unpacked lists made by one statement and an inner loop whose
count is not known (its enclosing loop still changes the values) are replayed."""
from __future__ import annotations

from helpers import check, script_case_tests

REBOUND_METHOD = """\
import torch


class Trainer:
    def __init__(self):
        self.emb = torch.randn(4, 8)

    def step(self, task_id, x):
        return (x @ self.emb[task_id]).sum()


if __name__ == "__main__":
    t = Trainer()
    t.step = torch.compile(t.step, backend="eager")
    for task_id in [0, 1, 2]:
        t.step(task_id, torch.randn(3, 8))
"""

DECORATED_METHOD = """\
import torch


class Predictor:
    @torch.compile(backend="eager")
    def predict(self, x, tta):
        if tta:
            return (x + x.flip(-1)) / 2
        return x.relu()


if __name__ == "__main__":
    p = Predictor()
    for tta in (False, True, True):
        p.predict(torch.randn(2, 4), tta)
"""

DICTS_IN_A_LOOP = """\
import torch


def scaled(x, cfg):
    return x * cfg["scale"] + cfg.get("bias", 0.0)


if __name__ == "__main__":
    f = torch.compile(scaled, backend="eager")
    for cfg in [{"scale": 1.0}, {"scale": 3.0}]:
        f(torch.randn(4), cfg)
"""

RECORDS_IN_A_LOOP = """\
import torch


class Episode:
    def __init__(self, n_way, k_shot):
        self.n_way, self.k_shot = n_way, k_shot


def logits(z, cfg):
    support = z[: cfg.n_way * cfg.k_shot].view(cfg.n_way, cfg.k_shot, -1).mean(1)
    return -torch.cdist(z, support)


if __name__ == "__main__":
    f = torch.compile(logits, backend="eager")
    for cfg in [Episode(5, 1), Episode(5, 5)]:
        f(torch.randn(30, 8), cfg)
"""

RECORD_OF_THE_LOOP_VARIABLE = """\
import torch


class Cfg:
    def __init__(self, scale):
        self.scale = scale


def scaled(x, cfg):
    return x * cfg.scale


if __name__ == "__main__":
    f = torch.compile(scaled, backend="eager")
    for s in [1.0, 2.5]:
        f(torch.randn(4), Cfg(s))
"""

A_DEFAULT_THE_DRIVER_KEEPS = """\
import torch


@torch.compile(backend="eager")
def warm(x, step):
    if step < 2:
        return x * (step + 1)
    return x


def train(steps=4):
    x = torch.randn(4)
    for step in range(steps):
        warm(x, step)


if __name__ == "__main__":
    train()
"""

WARM_START_UNPACKED = """\
import torch


def loss_fn(p, x, fisher=None, anchor=None):
    loss = (x @ p).pow(2).mean()
    if fisher is not None:
        loss = loss + (fisher * (p - anchor) ** 2).sum()
    return loss


if __name__ == "__main__":
    f = torch.compile(loss_fn, backend="eager")
    p = torch.randn(4)
    fisher, anchor = None, None
    for task in range(2):
        f(p, torch.randn(6, 4), fisher, anchor)
        fisher, anchor = torch.rand(4), p.clone()
"""

A_MASK_EVERY_OTHER_STEP = """\
import torch


def step(x, scale, mask=None):
    y = x * scale
    if mask is not None:
        y = y * mask
    return y.sum()


if __name__ == "__main__":
    f = torch.compile(step, backend="eager")
    for i in range(4):
        mask = torch.ones(8) if i % 2 else None
        f(torch.randn(8), 2.0, mask=mask)
"""

A_SCHEDULE_HELPER = """\
import torch


def ramp(step, total, max_eps=0.1):
    return max_eps * min(1.0, step / total)


@torch.compile(backend="eager")
def smooth(target, eps):
    return target * (1 - eps) + eps / target.shape[-1]


if __name__ == "__main__":
    for step in range(4):
        eps = ramp(step, 2)
        smooth(torch.rand(2, 5), eps)
"""

A_WRAPPER_HANDS_VALUES_ON = """\
import torch


@torch.compile(backend="eager")
def sample(logits, temperature=1.0, top_k=None):
    logits = logits / temperature
    if top_k is not None:
        v, _ = torch.topk(logits, top_k)
        logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
    return torch.softmax(logits, -1)


def generate(logits, temperature, top_k):
    return sample(logits, temperature, top_k)


if __name__ == "__main__":
    x = torch.randn(2, 50)
    for temp, k in [(1.0, None), (1.0, 20), (1.0, 10)]:
        generate(x, temp, k)
"""

A_WRAPPER_METHOD_HANDS_A_TENSOR_OR_NONE_ON = """\
import torch


class Trainer:
    def __init__(self):
        self.w = torch.randn(4, 4)

    @torch.compile(backend="eager")
    def loss(self, x, g=None):
        h = x @ self.w
        if g is not None:
            h = h + g
        return h.pow(2).mean()

    def train_step(self, x, g=None):
        return self.loss(x, g).item()


if __name__ == "__main__":
    tr = Trainer()
    for use_g in [False, True]:
        g = torch.randn(2, 4) if use_g else None
        tr.train_step(torch.randn(2, 4), g)
"""

A_SCHEDULE_WITH_A_WARMUP_BRANCH = """\
import torch


def tf_schedule(step, start=1.0, end=0.5, warmup=2, total=6):
    if step < warmup:
        return start
    return max(end, start - (start - end) * (step - warmup) / (total - warmup))


def loss_fn(x, target, tf_ratio):
    mix = tf_ratio * target + (1 - tf_ratio) * x
    return (mix - target).pow(2).mean()


if __name__ == "__main__":
    compiled = torch.compile(loss_fn, backend="eager")
    for step in range(4):
        compiled(torch.randn(2, 4), torch.randn(2, 4), tf_schedule(step))
"""

PAIRS_OF_A_SCHEDULE = """\
import torch


def step(x, t, t_prev, alphas_bar):
    ab_prev = alphas_bar[t_prev] if t_prev >= 0 else torch.tensor(1.0)
    return x * alphas_bar[t].sqrt() + ab_prev


if __name__ == "__main__":
    compiled_step = torch.compile(step, backend="eager")
    ab = torch.linspace(0.99, 0.1, 20)
    ts = [19, 14, 9, 4, -1]
    x = torch.randn(4)
    for t, t_prev in zip(ts[:-1], ts[1:]):
        x = compiled_step(x, t, t_prev, ab)
"""

A_DRIVER_GIVEN_THE_SCHEDULE = """\
import torch


def step(x, t_prev, alphas_bar):
    ab_prev = alphas_bar[t_prev] if t_prev >= 0 else torch.tensor(1.0)
    return x * ab_prev.sqrt()


compiled_step = torch.compile(step, backend="eager")


def sample(x, alphas_bar, ts):
    for t_prev in ts:
        x = compiled_step(x, t_prev, alphas_bar)
    return x


if __name__ == "__main__":
    sample(torch.randn(4), torch.linspace(0.99, 0.1, 20), [4, -1])
"""

MINIBATCHES_OF_UNKNOWN_COUNT = """\
import torch


def step(x, scale):
    return x * scale


if __name__ == "__main__":
    step_c = torch.compile(step, backend="eager")
    x = torch.randn(8, 4)
    for it in range(3):
        scale = 0.5 * it
        for i in range(x.shape[0] // 4):
            step_c(x[i * 4:(i + 1) * 4], scale)
"""

BUFFERS_MADE_BY_ONE_STATEMENT = """\
import torch


def gae(rewards, gamma):
    return rewards * gamma


if __name__ == "__main__":
    gae_c = torch.compile(gae, backend="eager")
    for it in range(3):
        buf_rew, buf_done = [], []
        for t in range(4):
            buf_rew.append(torch.randn(2))
            buf_done.append(t == 3)
        gamma = 0.99 if it < 2 else 0.995
        gae_c(torch.stack(buf_rew), gamma=gamma)
"""

A_CACHE_OVER_A_LIST = """\
import torch


def step(x, cache=None):
    if cache is None:
        cache = torch.zeros(x.shape[0], 2)
    y = torch.cat([cache, x], dim=-1)
    return y.sum(-1), y[:, -2:]


if __name__ == "__main__":
    compiled = torch.compile(step, backend="eager")
    cache = None
    for c in [torch.randn(1, 4) for _ in range(3)]:
        out, cache = compiled(c, cache)
"""

A_MODULE_AN_OBJECT_HOLDS = """\
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 2)

    def forward(self, obs, with_logprob=True):
        a = torch.tanh(self.mu(obs))
        logp = None
        if with_logprob:
            logp = a.sum(-1)
        return a, logp


class Agent:
    def __init__(self):
        self.actor = Policy()


if __name__ == "__main__":
    agent = Agent()
    policy = torch.compile(agent.actor, backend="eager")
    obs = torch.randn(3, 4)
    policy(obs, with_logprob=False)
    policy(obs)
"""

A_TENSOR_OR_NONE_IN_A_TUPLE = """\
import torch


def loss_fn(w, batch):
    x, y, spk = batch
    h = x @ w
    if spk is not None:
        h = h + spk[:, None]
    return ((h - y) ** 2).mean()


if __name__ == "__main__":
    compiled = torch.compile(loss_fn, backend="eager")
    w = torch.randn(3, 4)
    x, y = torch.randn(2, 3), torch.randn(2, 4)
    compiled(w, (x, y, torch.randn(2)))
    compiled(w, (x, y, None))
"""

AN_ATTRIBUTE_THE_LOOP_SETS = """\
import torch
from dataclasses import dataclass


@dataclass
class Cfg:
    alpha: float = 0.0


def mix(x, alpha):
    x = x - x.mean(0)
    if alpha <= 0:
        return x
    return alpha * x + (1 - alpha) * x.flip(0)


if __name__ == "__main__":
    compiled = torch.compile(mix, backend="eager")
    cfg = Cfg()
    for step in range(4):
        cfg.alpha = 0.0 if step < 2 else 0.4
        compiled(torch.rand(4, 3), cfg.alpha)
"""

REQUESTS_READ_WITH_GET = """\
import torch


def sample(logits, temperature, greedy):
    if greedy:
        return logits.argmax(-1)
    return (logits / temperature).softmax(-1)


if __name__ == "__main__":
    compiled_sample = torch.compile(sample, backend="eager")
    for params in [{"temperature": 1.0, "greedy": False}, {"temperature": 1.0, "greedy": True}]:
        compiled_sample(torch.randn(1, 16), params["temperature"], params.get("greedy"))
"""

ITEMS_A_WRAPPER_HANDS_ON = """\
import torch


def sample(logits, temperature, greedy):
    if greedy:
        return logits.argmax(-1)
    return (logits / temperature).softmax(-1)


compiled_sample = torch.compile(sample, backend="eager")


def generate(params):
    return compiled_sample(torch.randn(1, 16), params["temperature"], params["greedy"])


if __name__ == "__main__":
    for params in [{"temperature": 1.0, "greedy": False}, {"temperature": 1.0, "greedy": True}]:
        generate(params)
"""

#: name -> (script, DYN206 lines, recompiles Dynamo logs)
CASES = {
    "a-method-rebound-to-its-compiled-handle": (REBOUND_METHOD, [8], 1),
    "a-method-compiled-as-a-decorator": (DECORATED_METHOD, [6], 1),
    "dicts-of-a-loop": (DICTS_IN_A_LOOP, [4], 1),
    "records-of-a-loop": (RECORDS_IN_A_LOOP, [9], 1),
    "a-record-built-of-the-loop-variable": (RECORD_OF_THE_LOOP_VARIABLE, [9], 1),
    "a-default-the-driver-keeps": (A_DEFAULT_THE_DRIVER_KEEPS, [5], 2),
    "warm-start-unpacked": (WARM_START_UNPACKED, [4], 1),
    "a-mask-every-other-step": (A_MASK_EVERY_OTHER_STEP, [4], 1),
    "a-schedule-helper": (A_SCHEDULE_HELPER, [9], 1),
    "a-wrapper-hands-values-on": (A_WRAPPER_HANDS_VALUES_ON, [5], 2),
    "a-wrapper-method-hands-a-tensor-or-none-on": (A_WRAPPER_METHOD_HANDS_A_TENSOR_OR_NONE_ON, [9], 1),
    "a-schedule-with-a-warmup-branch": (A_SCHEDULE_WITH_A_WARMUP_BRANCH, [10], 1),
    "pairs-of-a-schedule": (PAIRS_OF_A_SCHEDULE, [4], 2),
    "a-driver-given-the-schedule": (A_DRIVER_GIVEN_THE_SCHEDULE, [4], 1),
    "minibatches-of-unknown-count": (MINIBATCHES_OF_UNKNOWN_COUNT, [4], 1),
    "buffers-made-by-one-statement": (BUFFERS_MADE_BY_ONE_STATEMENT, [4], 1),
    # a warm start over a list comprehension of three items; a module an object holds, compiled; a tensor,
    # then None, in a slot of a tuple the function unpacks
    "a-cache-carried-over-a-list": (A_CACHE_OVER_A_LIST, [4], 1),
    "a-module-an-object-holds": (A_MODULE_AN_OBJECT_HOLDS, [10], 1),
    "a-tensor-or-none-in-a-tuple": (A_TENSOR_OR_NONE_IN_A_TUPLE, [4], 1),
    # an attribute of an object the loop sets, then passes (`cfg.alpha = ...; mix(x, cfg.alpha)`)
    "an-attribute-the-loop-sets": (AN_ATTRIBUTE_THE_LOOP_SETS, [10], 1),
    # a dict of a loop read with `.get` (which changes nothing)
    "requests-read-with-get": (REQUESTS_READ_WITH_GET, [4], 1),
    # items of a dict a wrapper is given and hands on (`sample(x, params["greedy"])`)
    "items-a-wrapper-hands-on": (ITEMS_A_WRAPPER_HANDS_ON, [4], 1),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")


def test_a_number_of_a_list_the_driver_is_given_is_no_tensor() -> None:
    # (`t_prev >= 0` tests a number from `[4, -1]`; Dynamo logs no break running the script)
    assert [d.code for d in check(A_DRIVER_GIVEN_THE_SCHEDULE)] == ["DYN206"]


def test_a_record_finding_names_the_fields_that_differ() -> None:
    [finding] = [d for d in check(RECORDS_IN_A_LOOP) if d.code == "DYN206"]
    assert "(`cfg.k_shot` differs)" in finding.message  # (`n_way` is 5 in both)
