"""eager-head runs the Python prelude of a function the file compiles (a draw from ``random``, a counter)
before the compiled code, which starts at the first tensor operation; it refuses what would change what
either part sees (measured through real Dynamo, torch 2.13, backend ``eager``)."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

AGENT = """\
import random

import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.q = nn.Linear(3, 4)
        self.steps = 0

    @torch.no_grad()
    def act(self, obs, explore=True):
        self.steps += 1
        if explore and random.random() < 0.5:
            return random.randrange(4)
        # the greedy action
        return self.q(obs).argmax(-1)


def main(xs):
    random.seed(0)
    torch.manual_seed(0)
    agent = Agent()
    agent.act = torch.compile(agent.act, backend="eager")
    return [agent.act(x) for x in xs] + [agent.steps]
"""
SPLIT = """\
    @torch.no_grad()
    def act(self, obs, explore=True):
        self.steps += 1
        if explore and random.random() < 0.5:
            return random.randrange(4)
        return self._act_compiled(obs)

    def _act_compiled(self, obs):
        # the greedy action
        return self.q(obs).argmax(-1)
"""
RANDOM_LINE = 15


def _fix(code: str):
    return fix_source(textwrap.dedent(code), "agent.py", Settings(), unsafe=True)


def test_the_prelude_stays_and_the_rest_is_compiled_on_the_instance():
    result = _fix(AGENT)
    start = AGENT.index("    @torch.no_grad()")
    end = AGENT.index("\n\ndef main")
    assert result.source == (AGENT[:start] + SPLIT + AGENT[end:]).replace(
        "agent.act = torch.compile(agent.act,", "agent._act_compiled = torch.compile(agent._act_compiled,")
    assert [(a.fixer, a.line) for a in result.applied] == [("eager-head", RANDOM_LINE)]
    again = _fix(result.source)
    assert again.source == result.source and not again.applied


def test_a_module_function_and_its_compile_decorator():
    code = """\
        import random

        import torch

        @torch._dynamo.config.patch(capture_scalar_outputs=True)
        @torch.compile
        def pick(x, p):
            draw = random.random()
            if draw < p:
                return None
            return (x * draw).sum()
        """
    source = _fix(code).source
    assert "def pick(x, p):\n    draw = random.random()\n    if draw < p:\n        return None\n" \
           "    return _pick_compiled(x, draw)\n" in source
    assert "@torch._dynamo.config.patch(capture_scalar_outputs=True)\n@torch.compile\ndef _pick_compiled(x, draw):\n" \
           "    return (x * draw).sum()\n" in source


@pytest.mark.parametrize("code, reason", [
    ("""
        import random
        import torch

        def f(x, flag):
            if flag:
                scale = random.random()
            return x * scale

        f = torch.compile(f)
    """, "`scale` may be unbound"),
    ("""
        import random
        import torch

        def f(x):
            r = random.random()
            return x * r

        g = torch.compile(f)
        h = torch.compile(f)
    """, "exactly one place"),
    ("""
        import random
        import torch

        def f(x):
            r = random.random()
            y = x * r
            return locals()["y"]

        f = torch.compile(f)
    """, "reads the calling frame"),
])
def test_refused(code, reason):
    result = _fix(code)
    assert result.source == textwrap.dedent(code)
    assert any(r.fixer == "eager-head" and reason in r.reason for r in result.refused), result.refused


def test_a_break_after_the_first_tensor_operation_is_not_the_prelude():
    code = """\
        import random
        import torch

        def f(x):
            y = x * 2
            if random.random() < 0.5:
                y = y + 1
            return y

        f = torch.compile(f)
        """
    result = _fix(code)
    assert not any(a.fixer == "eager-head" for a in result.applied)  # (eager-tail compiles `y = x * 2`)
    assert not any(r.fixer == "eager-head" for r in result.refused)


@requires_torch
def test_under_dynamo_the_split_breaks_nowhere_and_gives_the_same_results(tmp_path):
    import torch

    from helpers import run_original_and_fixed

    inputs = [([torch.randn(3) for _ in range(6)],)]
    before, after, seen_before, seen_after = run_original_and_fixed(tmp_path, AGENT, _fix(AGENT).source, "main", inputs)
    assert RANDOM_LINE in seen_before.break_lines(before.__file__)
    assert not seen_after.break_lines(after.__file__)
    got, want = seen_after.outputs[0], seen_before.outputs[0]
    assert len(got) == len(want) == 7
    assert all(torch.equal(torch.as_tensor(a), torch.as_tensor(b)) for a, b in zip(got, want)), (got, want)


def test_a_function_the_file_does_not_compile_is_left_to_its_callers():
    code = """\
        import random

        def act(q):
            if random.random() < 0.5:
                return random.randrange(4)
            return q.argmax()
        """
    result = fix_source(textwrap.dedent(code), "agent.py", Settings(scope=Scope.ALL), unsafe=True)
    assert result.source == textwrap.dedent(code)
    assert not any(r.fixer == "eager-head" for r in result.refused)
