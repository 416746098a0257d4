"""DYN102: moving tensor data into Python scalars."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis.breaks import Cause, fails_to_compile
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register

#: what each cause of the rule tells the user
_MESSAGES = {
    Cause.NUMBER_ARGUMENT: ("`{code}`: {detail} is a tensor where the op takes a Python number or size, which needs "
                            "the tensor's data: the graph breaks here (a data-dependent operator).",
                            "pass Python ints (sizes from .shape/.size()), or use an op that takes the tensor"),
    Cause.SCALAR_EXTRACTION: ("`{code}` moves tensor data into a Python value: the graph breaks here.",
                              "keep it a 0-d tensor and use torch ops, or move it out of the compiled region"),
    Cause.TENSOR_MEMBERSHIP: ("`{code}`: `in` on a tensor reads `(item == tensor).any()` into a Python bool with "
                              "`.item()`, inside torch's code: the graph breaks here, and Dynamo runs the rest of "
                              "the function eagerly.",
                              "keep the test a tensor: `(tensor == item).any()` (or `torch.isin`)"),
    Cause.DATA_INDEX: ("`{code}`: indexing with a 0-d tensor (an index from data, or a boolean mask) needs its "
                       "value as a Python number: the graph breaks here (a data-dependent operator).",
                       "keep the index a tensor of indices (index_select, gather, torch.take_along_dim) or use "
                       "a mask"),
    Cause.PYTHON_INDEX: ("`{code}`: a tensor used as a slice bound or a tuple/list index must become a Python "
                         "int, so Dynamo calls `.item()`: the graph breaks here.",
                         "index with Python ints (from shapes), or use torch ops: narrow with sizes, gather, "
                         "index_select, masks"),
    Cause.CAUSAL_MASK_CHECK: ("`{code}`: {detail}, the module compares the mask with a causal one and reads the "
                              "answer with `bool(...)`: the graph breaks there (inside torch).",
                              "pass the flag (`is_causal=True` for a causal mask, else `False`) with the mask"),
    Cause.CAPTURED_CONSTANT: ("`{code}`: {detail}.",
                              "keep the number a 0-d tensor and index with torch ops (index_select, gather), or "
                              "leave `capture_scalar_outputs` off for this code"),
}


@register
class ScalarExtraction(Rule):
    code = "DYN102"
    options = ("capture-scalar-outputs",)
    name = "scalar-extraction"
    summary = ("`.item()`, `.tolist()`, `int(t)`/`float(t)`/`bool(t)`, `math.*(t)`, or a tensor where Python or a "
               "torch op needs a number (`torch.arange(t.max())`, `x[:n]`), moves tensor data into Python.")
    rationale = """
        A graph holds tensors; a Python number computed from tensor data does not exist until the graph
        has run. Dynamo therefore ends the graph at `.item()`, `.tolist()`, `int(t)`, `float(t)`,
        `bool(t)`, at `math.sqrt(t)`-style calls and at torch's own checks of a bool tensor
        (`torch._check_tensor_all`, which reads the tensor in Python), runs them eagerly and resumes in a new graph. The
        Python value then becomes a constant of the resumed graph, so a different value next call
        recompiles it (see DYN204). Only tensors and NumPy arrays (tensors under Dynamo) have `.item()`
        and `.tolist()`, so these are reported also on a value the analysis could not type.

        With `torch._dynamo.config.capture_scalar_outputs = True` (the `capture-scalar-outputs`
        setting) `.item()`, `int()`, `float()`, `bool()` and integer `.tolist()` stay in the graph as
        symbolic values; `math.*` on them still breaks, and so does branching on them (DYN101), and
        `t.is_nonzero()` breaks with or without the flag. A symbolic number used where Python needs its
        value is then reported where it is used, in the same graph: as the index of a Python list or tuple
        (`sizes[n]`) or the seed of `random.Random(n)` Dynamo fails to compile (`GuardOnDataDependentSymNode`)
        where the code without the flag broke at `.item()` and ran; a store at it (`seq[n] = v`), a slice
        bound of a list (`seq[:n]`) and `range(n)` break there. On
        torch 2.13 `.numpy()` and `.cpu().numpy()` are traced and do not break.

        The same conversion happens implicitly when a tensor is passed where a number is needed: a
        size, dim, length or float parameter of a torch op (`torch.arange(t.max())`,
        `torch.zeros(n)`, `x.narrow(0, start, length)`, `x.view(b, n)`, `F.pad(x, pads)`,
        `F.interpolate(x, size=s)`, `F.dropout(x, p)`; "Data dependent operator"), a slice bound
        (`x[:n]`) or the index of a tuple, list or shape (`sizes[i]`; Dynamo calls `.item()`). Which
        parameters take numbers comes from torch's own operator signatures: where any overload
        accepts a tensor (`x.max(other)`, `x.clamp(min=t)`, `torch.full(size, fill)`), nothing is
        reported. With `capture_scalar_outputs` these sizes stay symbolic and are not reported.

        Only a tensor computed from data inside the graph needs it to run first: a 0-d tensor that
        enters the compiled frame as it is (an argument, a buffer of the module, a tensor computed
        before a `print(...)` or `torch._dynamo.graph_break()` statement, or before any statement
        that breaks, also inside a function it calls, and used after it, which the resumed frame
        receives) is a graph input
        Dynamo reads as a size (`h.new_zeros(count, d)`, `h.narrow(1, 0, count)`,
        `torch.arange(count)` do not break), and torch functions of Python numbers
        (`torch.div(h.size(1), 2, rounding_mode="trunc")`) are evaluated while tracing (a tensor a
        factory builds, even `torch.scalar_tensor(n)`, is a graph tensor). Arithmetic on an argument
        (`count + 1`) is computed in the graph and breaks, and
        a slice bound (`x[:count]`) or a tuple index breaks even for an argument or a torch function of
        sizes. A parameter nothing shows to be a
        tensor (no annotation, no tensor use) may be a Python number: it is not reported as a size.
        Reading or writing a tensor at a 0-d tensor computed in the graph (`boxes[scores.argmax()]`,
        `probs[0, i, tok]` with `tok = q.argmax()`, alone or among other indices) also needs the
        index as a number and breaks; an argument as the index (`boxes[n]`) or a tensor of indices is
        traced. A 0-d boolean mask (`s[s.sum() == 0] = 0`) is read as a Python bool, for a read or a
        store, under every capture setting. A parameter torch's signature types `Scalar` or `float` with no
        overload taking a tensor (`alpha=`, `beta=`, `value=`, a fill value, an activation's constant) reads a
        tensor computed in the graph too (`x.add(y, alpha=1 - d)`, `torch.full_like(x, t.max())`), though
        `torch.full`'s fill value is traced. A `torch.nn` transformer given a mask and no causal flag
        (`encoder(x, mask=m)` without `is_causal=`, `decoder(..., tgt_mask=m)` without `tgt_is_causal=`)
        compares the mask with a causal one inside and reads the answer with `bool(...)`.
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
        """, line=5),
        Example("""
            import math
            import torch

            @torch.compile
            def bonus(logits):
                ent = -(logits.softmax(-1) * logits.log_softmax(-1)).sum()
                return logits * math.exp(-ent)
        """, line=7),
        Example("""
            import torch

            @torch.compile
            def count(x):
                hits = int((x > 0).sum())
                return x * hits
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def positions(lengths):
                return torch.arange(lengths.max())
        """, inputs="[(torch.tensor([2, 5, 3]),)]", line=5),
        Example("""
            import torch
            import torch.nn.functional as F

            @torch.compile
            def pad_to(x, target: torch.Tensor):
                missing = target - x.shape[-1]
                return F.pad(x, (0, missing))
        """, inputs="[(torch.randn(2, 3), torch.tensor(5))]", line=7),
        Example("""
            import torch

            @torch.compile
            def head(x, n: torch.Tensor):
                return x[:, :n] * 2
        """, inputs="[(torch.randn(2, 6), torch.tensor(3))]", line=5),
        Example("""
            import torch

            SCALES = [0.5, 1.0, 2.0]

            @torch.compile
            def rescale(x, level: torch.Tensor):
                return x.narrow(0, 0, level + 1) * SCALES[level]
        """, inputs="[(torch.randn(4), torch.tensor(1))]", line=7),
        Example("""
            import torch

            @torch.compile
            def in_range(ids):
                torch._check_tensor_all(ids.abs() < 1000)
                return ids * 2
        """, line=5),
        Example("""
            from typing import NamedTuple

            import torch

            class Beams(NamedTuple):
                tokens: torch.Tensor
                scores: torch.Tensor

            @torch.compile
            def lengths(beams: Beams):
                done = (beams.tokens != 0).sum(-1)
                return done.tolist()
        """, inputs="[(Beams(torch.randint(0, 3, (2, 4)), torch.randn(2)),)]", line=12),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def grow(h, count: torch.Tensor):
                half = torch.div(h.size(1), 2, rounding_mode="trunc")
                return h.new_zeros(count, half) + h.narrow(0, 0, count).sum() + torch.arange(count).sum()
        """, inputs="[(torch.randn(4, 6), torch.tensor(2)), (torch.randn(4, 6), torch.tensor(3))]"),
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
        Example("""
            import torch
            import torch.nn.functional as F

            @torch.compile
            def pad_to(x, limit):
                missing = 8 - x.shape[-1]
                y = F.pad(x, (0, missing))[:, : x.shape[0]]
                return torch.arange(y.shape[-1]) * y.clamp(min=limit).max(limit).sum(-1, keepdim=True)
        """, inputs="[(torch.randn(2, 3), torch.tensor(0.5))]"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for brk in ctx.breaks.of(*_MESSAGES):
            message, hint = _MESSAGES[brk.cause]
            note = "" if fails_to_compile(brk) else ctx.loop_note(brk)  # (no graph to give up on)
            yield self.reported(brk, message.format(code=ctx.code(brk.node), detail=brk.detail) + note,
                                hint=hint)
