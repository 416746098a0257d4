"""DYN202: compiled code reads the environment at trace time."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.events import CallEvent, ContainmentEvent, SubscriptEvent
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class EnvironmentRead(Rule):
    code = "DYN202"
    name = "environment-read"
    kind = "recompile"
    summary = "Compiled code reads `os.environ`/`os.getenv`: a recompile per change, or a silently stale value."
    rationale = """
        Dynamo evaluates environment reads at trace time. `os.environ[k]` and `os.environ.get(k)` are
        guarded, so each change recompiles. Worse, `os.environ.get(k, default)` when `k` is unset at
        the first call, `os.getenv(k, default)` and `k in os.environ` install no guard at all on torch
        2.13: the compiled code silently keeps the value it saw first - a correctness bug, not only a
        performance one.
    """
    fix = """
        Read the environment once, at import time or in `__init__` (`self.upcast = os.environ.get(...)
        == "1"`), and branch on that attribute.
    """
    INVALID = [
        Example("""
            import os
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def forward(self, x):
                    if os.environ.get("UPCAST", "0") == "1":
                        return x.double().softmax(-1).float()
                    return x.softmax(-1)
        """, target="Scale", inputs="[(torch.randn(2, 4),)] * 3",
            between_calls='os.environ["UPCAST"] = "1" if i % 2 else "0"', line=7),
    ]
    VALID = [
        Example("""
            import os
            import torch
            import torch.nn as nn

            class Scale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.upcast = os.environ.get("UPCAST", "0") == "1"

                def forward(self, x):
                    if self.upcast:
                        return x.double().softmax(-1).float()
                    return x.softmax(-1)
        """, target="Scale", inputs="[(torch.randn(2, 4),)] * 3"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        stale = ("on torch 2.13 Dynamo installs no guard for it, so compiled code silently keeps the "
                 "first value it saw (a correctness bug)")
        for call in ctx.events(CallEvent):
            if call.qualname == "os.getenv" or call.qualname == "os.environ.get":
                has_default = len(call.args) >= 2 or "default" in call.kwargs
                if has_default:
                    detail = stale if call.qualname == "os.getenv" else (
                        "if the variable is unset at the first call, " + stale)
                else:
                    detail = "Dynamo guards on it, so each change recompiles"
                yield self.finding(call, f"`{ctx.code(call.node)}` is read at trace time: {detail}.",
                                   hint="read it once in __init__ or at import time")
        for sub in ctx.events(SubscriptEvent):
            if sub.base.qualname == "os.environ" and not sub.store:
                yield self.finding(sub, f"`{ctx.code(sub.node)}` is read at trace time: Dynamo guards on it, so "
                                        "each change recompiles.", hint="read it once in __init__ or at import time")
        for c in ctx.events(ContainmentEvent):
            if c.container.qualname == "os.environ":
                yield self.finding(c, f"`{ctx.code(c.node)}` is evaluated at trace time and {stale}.",
                                   hint="read it once in __init__ or at import time")
