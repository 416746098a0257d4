"""DYN101: Python control flow on tensor values."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis.breaks import Cause
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class TensorCondition(Rule):
    code = "DYN101"
    options = ("capture-scalar-outputs",)
    name = "tensor-condition"
    summary = "Python `if`/ternary/`and`/`or`/`not` on a tensor value: the graph breaks there."
    rationale = """
        Dynamo traces a graph for one path through the Python code. A condition whose truth depends on
        tensor *data* (`if x.sum() > 0:`, `if mask.any():`, `if torch.isnan(x).any():`, a tensor in
        `and`/`or`) cannot be decided while tracing, so Dynamo ends the graph, runs the comparison eagerly
        and starts a new graph in the branch taken (also `if y in bank:` of a list of tensors, which
        compares `y` with each by `==`). Conditions on shapes, dtypes, devices,
        `requires_grad`, `self.training`, `is None` and `isinstance` are fine: they are decided at
        trace time and guarded.

        In a test, every operand of `and`/`or` that runs is converted to a bool: `if flag and
        x.max() > c:` breaks whenever `flag` is true (a false `flag`, or a false module constant,
        means the tensor operand never runs). After a test that an optional argument was passed
        (`if labels is not None and labels.max() >= n:`, `labels` defaulting to `None`) the tensor
        operand runs only for callers that pass one; whether they do is not known, so it is not
        reported (a caller in the checked code that passes a tensor makes it known, also to an argument
        annotated `Optional[Tensor]`). Code under `torch.jit.is_scripting()`,
        `torch.jit.is_tracing()`, `torch._C._get_tracing_state()` or FX/ONNX tracing checks never
        runs under torch.compile (they are false there) and is skipped like code under
        `not torch.compiler.is_compiling()`.

        On torch 2.13 a plain `assert <tensor>` with no message or a constant string one does not
        break (Dynamo turns it into an in-graph assertion), but `assert not <tensor>`, a computed
        message (`assert ok, f"bad {x.shape}"`, `.format(...)`, a name) and every operand of an
        `and`/`or` chain before the last one do; `while` and loop exits are reported by DYN103.

        A number `random.randint`/`randrange`/`uniform` draws in the graph is held by Dynamo as a
        tensor: a branch on it, or on its comparison with a number (`if random.randint(1, 3) > n:`),
        breaks the same way, unless a break between the draw and the branch hands the resumed frame
        a plain number.
    """
    fix = """
        Make the code branch-free: compute both results and select with `torch.where(cond, a, b)`, or
        apply the transform unconditionally when it is a no-op on well-behaved inputs
        (`torch.nan_to_num`, `clamp`). For branches with different computations use
        `torch.cond(pred, true_fn, false_fn, operands)`. Use `|`/`&`/`torch.logical_or` instead of
        Python `or`/`and` between tensors. Validation (`if torch.isnan(x).any(): raise`) becomes
        `torch._assert_async(...)`.
    """
    gb_types = (GB.DATA_DEPENDENT_BRANCHING, GB.DATA_DEPENDENT_OPERATOR)
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def pick(x):
                if x.sum() > 0:
                    return x * 2
                return x - 1
        """, line=5),
        Example("""
            import torch
            import torch.nn as nn

            class Clean(nn.Module):
                def forward(self, x):
                    if torch.isnan(x).any() or torch.isinf(x).any():
                        x = torch.nan_to_num(x)
                    return x
        """, target="Clean", line=6),
        Example("""
            import torch

            @torch.compile
            def scale(x):
                return x * 2 if x.mean() > 0 else x
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def check(w):
                assert not torch.isnan(w).any()
                return w + 1
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def increasing(t):
                assert (t[1:] > t[:-1]).all(), "{} must be increasing".format("t")
                return t.diff()
        """, inputs="[(torch.arange(5.0),)]", line=5),
        Example("""
            import torch

            @torch.compile
            def interval(t0, t, t1):
                assert t0 <= t and t <= t1
                return (t - t0) / (t1 - t0)
        """, inputs="[(torch.tensor(0.0), torch.tensor(0.5), torch.tensor(1.0))]", line=5),
        Example("""
            import torch

            @torch.compile
            def clip(x, enabled: bool = True, limit: float = 1.0):
                if enabled and x.abs().max() > limit:
                    x = x / x.abs().max()
                return x
        """, line=5),
        Example("""
            import torch
            from typing import Optional

            def masked(x, mask: Optional[torch.Tensor] = None):
                if mask is not None and not mask.any():
                    return x
                return x * 2 if mask is None or mask.all() else x

            @torch.compile
            def step(x, mask: torch.Tensor):
                return masked(x, mask)
        """, inputs="[(torch.randn(4), torch.ones(4, dtype=torch.bool))]", line=(5, 7)),
        Example("""
            from dataclasses import dataclass

            import torch
            import torch.nn as nn

            @dataclass
            class Batch:
                features: torch.Tensor
                labels: torch.Tensor

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, batch: Batch):
                    logits = self.fc(batch.features)
                    if (batch.labels < 0).any():
                        logits = logits * 0
                    return logits
        """, target="Head", inputs="[(Batch(torch.randn(2, 4), torch.tensor([0, 1])),)]", line=18),
    ]
    VALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Head(nn.Module):
                def forward(self, x, mask=None):
                    if x.dim() == 3 and x.shape[0] > 1:
                        x = x.mean(0)
                    if mask is not None and mask.dtype == torch.bool:
                        x = x.masked_fill(~mask, 0.0)
                    if self.training:
                        x = x * 0.5
                    return torch.where(x > 0, x, -x)
        """, target="Head", inputs="[(torch.randn(2, 3, 4),), (torch.randn(2, 3, 4), torch.ones(3, 4, dtype=torch.bool))]"),
        Example("""
            from dataclasses import dataclass

            import torch

            @dataclass
            class Options:
                threshold: float = 0.5
                clamp: bool = True

            @torch.compile
            def gate(x, opts: Options):
                if opts.clamp and opts.threshold > 0:
                    x = x.clamp(min=-opts.threshold)
                return x
        """, inputs="[(torch.randn(4), Options())]"),
        Example("""
            import torch

            @torch.compile
            def positive(p):
                assert torch.all(p >= 0)
                return p.sqrt()
        """, inputs="[(torch.rand(4),)]"),
        Example("""
            import torch

            @torch.compile
            def positive(p, strict: bool = True):
                assert strict and torch.all(p >= 0), "negative " "values"
                return p.sqrt()
        """, inputs="[(torch.rand(4),)]"),
        Example("""
            import torch

            @torch.compile
            def clip(x):
                # scripting and tracing are off under compile: `False and ...` never runs the tensor test
                if torch.jit.is_scripting() and x.abs().max() > 1:
                    x = x / x.abs().max()
                if torch.jit.is_scripting() or torch.jit.is_tracing():
                    return x
                if not torch.jit.is_scripting() and torch._C._get_tracing_state() is None:
                    return x + 1
                return x if x.sum() > 0 else -x
        """),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for brk in ctx.breaks.of(Cause.CONDITION, Cause.BOOL_OF_EACH):
            if brk.cause is Cause.BOOL_OF_EACH:
                yield self.reported(
                    brk, f"`{ctx.code(brk.node)}` converts each tensor to a Python bool: the graph breaks here.",
                    hint="stack the conditions and reduce in the graph: torch.stack(conds).any()",
                )
                continue
            ev = brk.event
            where = {
                "not": "`not` on", "boolop": "`and`/`or` on", "ifexp": "a conditional expression on",
                "comprehension": "a comprehension filter on", "assert": "`assert` on",
                "filter": "`filter` on", "itertools": "an `itertools` truth test on",
            }.get(ev.construct, "a Python branch on")
            what = "a data-dependent scalar" if ev.value.kind is Kind.SCALAR else "a tensor"
            yield self.reported(
                brk,
                f"{where} {what}: `{ctx.code(ev.node)}` needs tensor data to decide, so the graph breaks "
                f"here.{ctx.loop_note(ev)}",
                hint="compute both sides and select with torch.where, or use torch.cond",
            )
