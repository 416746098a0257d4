"""DYN102: moving tensor data into Python scalars."""
from __future__ import annotations

from typing import Iterator

from dynalint import gb_types as GB
from dynalint.analysis.events import CallEvent
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register

_EXTRACTING_METHODS = {"item": GB.ITEM, "tolist": GB.DATA_DEPENDENT_OPERATOR, "__bool__": GB.ITEM,
                       "__int__": GB.ITEM, "__float__": GB.ITEM, "__index__": GB.ITEM}
_CONVERSIONS = ("builtins.int", "builtins.float", "builtins.bool", "builtins.complex")
#: torch's checks of a boolean tensor: they read ``cond._is_all_true().item()`` on the host
#: (and raise TypeError for anything but a bool tensor, so the argument is a tensor).
TENSOR_CHECKS = ("torch._check_tensor_all", "torch._check_tensor_all_with")


def scalar_extraction(call: CallEvent, capture_scalar_outputs: bool):
    """The graph-break type if this call moves tensor data into Python and breaks, else None.

    Shared with DYN204, which needs to know whether a scalar's origin broke the graph.
    """
    recv = call.receiver
    if call.method in _EXTRACTING_METHODS and recv is not None and recv.is_tensor and call.qualname is None:
        if capture_scalar_outputs:
            return None
        return _EXTRACTING_METHODS[call.method]
    if call.qualname in TENSOR_CHECKS:
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname in _CONVERSIONS and call.args and call.args[0].is_tensor:
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname is not None and call.qualname.startswith("math.") and any(
        a.is_tensor or (capture_scalar_outputs and a.kind is Kind.SCALAR) for a in call.args
    ):
        # math.* calls float() on a tensor (or guards on a symbolic scalar): always a break
        return GB.DATA_DEPENDENT_OPERATOR
    return None


@register
class ScalarExtraction(Rule):
    code = "DYN102"
    name = "scalar-extraction"
    summary = "`.item()`, `.tolist()`, `int(t)`/`float(t)`/`bool(t)` or `math.*(t)` moves tensor data into Python."
    rationale = """
        A graph holds tensors; a Python number computed from tensor data does not exist until the graph
        has run. Dynamo therefore ends the graph at `.item()`, `.tolist()`, `int(t)`, `float(t)`,
        `bool(t)`, at `math.sqrt(t)`-style calls and at torch's own checks of a bool tensor
        (`torch._check_tensor_all`, which reads the tensor in Python), runs them eagerly and resumes in a new graph. The
        Python value then becomes a constant of the resumed graph, so a different value next call
        recompiles it (see DYN204).

        With `torch._dynamo.config.capture_scalar_outputs = True` (the `capture-scalar-outputs`
        setting) `.item()`, `int()`, `float()`, `bool()` and integer `.tolist()` stay in the graph as
        symbolic values; `math.*` on them still breaks, and so does branching on them (DYN101). On
        torch 2.13 `.numpy()` and `.cpu().numpy()` are traced and do not break.
    """
    fix = """
        Keep the value as a 0-d tensor (`t.max()` instead of `t.max().item()`) and keep computing with
        torch ops (`torch.sqrt`, `torch.exp`, `torch.clamp(min=...)`). Move logging and metrics that
        need Python numbers out of the compiled region, or enable `capture_scalar_outputs` when a
        symbolic scalar is what the code needs.
    """
    gb_types = (GB.ITEM, GB.DATA_DEPENDENT_OPERATOR)
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def normalize(x):
                scale = x.abs().max().item()
                return x / scale
        """),
        Example("""
            import math
            import torch

            @torch.compile
            def bonus(logits):
                ent = -(logits.softmax(-1) * logits.log_softmax(-1)).sum()
                return logits * math.exp(-ent)
        """),
        Example("""
            import torch

            @torch.compile
            def count(x):
                hits = int((x > 0).sum())
                return x * hits
        """),
        Example("""
            import torch

            @torch.compile
            def in_range(ids):
                torch._check_tensor_all(ids.abs() < 1000)
                return ids * 2
        """),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def in_range(ids):
                torch._assert_async((ids.abs() < 1000).all())
                return ids * 2
        """),
        Example("""
            import torch

            @torch.compile
            def normalize(x):
                scale = x.abs().max()
                return x / scale
        """),
        Example("""
            import torch

            @torch.compile
            def count(x):
                hits = int((x > 0).sum())
                return x * hits
        """, settings={"capture_scalar_outputs": True}),
        Example("""
            import numpy as np
            import torch

            @torch.compile
            def as_array(x):
                arr = x.numpy()
                return torch.from_numpy(np.abs(arr))
        """),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        capture = ctx.settings.capture_scalar_outputs
        for call in ctx.events(CallEvent):
            gb = scalar_extraction(call, capture)
            if gb is None:
                continue
            yield self.finding(
                call,
                f"`{ctx.code(call.node)}` moves tensor data into a Python value: the graph breaks here."
                + (" Inside a loop, Dynamo then runs the whole function eagerly." if call.in_loop else ""),
                gb=gb,
                hint="keep it a 0-d tensor and use torch ops, or move it out of the compiled region",
            )
