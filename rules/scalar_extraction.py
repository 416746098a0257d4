"""DYN102: moving tensor data into Python scalars."""
from __future__ import annotations

from typing import Iterator

from dynalint import gb_types as GB
from dynalint.analysis import number_args
from dynalint.analysis.knowledge import TENSOR_CHECKS
from dynalint.analysis.events import CallEvent, SubscriptEvent
from dynalint.analysis.values import Kind, Value
from dynalint.rules.base import Example, Finding, Rule, RuleContext, loop_note, register

_EXTRACTING_METHODS = {"item": GB.ITEM, "tolist": GB.DATA_DEPENDENT_OPERATOR, "__bool__": GB.ITEM,
                       "__int__": GB.ITEM, "__float__": GB.ITEM, "__index__": GB.ITEM}
_CONVERSIONS = ("builtins.int", "builtins.float", "builtins.bool", "builtins.complex")


def scalar_extraction(call: CallEvent, capture_scalar_outputs: bool):
    """The graph-break type if this call moves tensor data into Python and breaks, else None.

    Shared with DYN204, which needs to know whether a scalar's origin broke the graph.
    """
    recv = call.receiver
    if call.method in _EXTRACTING_METHODS and recv is not None and recv.is_tensor and not recv.constant \
            and call.qualname is None:
        if capture_scalar_outputs:
            return None
        return _EXTRACTING_METHODS[call.method]
    if call.qualname in TENSOR_CHECKS:
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname in _CONVERSIONS and call.args and call.args[0].is_tensor and not call.args[0].constant:
        return None if capture_scalar_outputs else GB.ITEM
    if call.qualname is not None and call.qualname.startswith("math.") and any(
        (a.is_tensor and not a.constant) or (capture_scalar_outputs and a.kind is Kind.SCALAR)
        for a in call.args
    ):
        # math.* calls float() on a tensor (or guards on a symbolic scalar): always a break
        return GB.DATA_DEPENDENT_OPERATOR
    return None


def _holds_data(v: Value) -> bool:
    """A tensor computed from data in this graph, or a tuple/list written with one in it (``(n, 4)``).

    A tensor that entered the frame (an argument, module state, a value live across a break) is a
    graph input Dynamo reads as a size without breaking, and torch functions of Python numbers are
    constants; neither is reported.
    """
    if v.kind is Kind.SEQUENCE:
        return any(_holds_data(i) for i in v.items) if v.items is not None else v.elements().data_dependent
    return v.data_dependent


def _signature(call: CallEvent) -> tuple[tuple, int] | None:
    """The number-parameter entry of a torch op call and the position of its first argument."""
    q = call.qualname
    if q is not None:
        module, _, name = q.rpartition(".")
        if module == "torch":
            entry = number_args.TORCH.get(name)
        elif module == "torch.nn.functional":
            entry = number_args.FUNCTIONAL.get(name) or number_args.TORCH.get(name)
        else:
            return None
        return (entry, 0) if entry is not None else None
    if call.method is not None and call.receiver is not None and call.receiver.is_tensor:
        entry = number_args.TORCH.get(call.method)
        if entry is not None and entry[3]:
            return entry, 1  # the receiver is the op's first (tensor) parameter
    return None


def tensor_for_number(call: CallEvent) -> str | None:
    """Which argument of a torch op is a tensor where the op takes a Python number or size
    (``torch.zeros(n)``, ``x.narrow(0, s, length)``, ``F.pad(x, pads)``), if one is."""
    found = _signature(call)
    if found is None:
        return None
    (positions, varargs, keywords, _), first = found
    last = max(positions) if positions else -1
    for i, v in enumerate(call.args):
        pos = first + i
        if (pos in positions or (varargs and pos >= last >= 0)) and _holds_data(v):
            return f"argument {i + 1}"
    for name, v in call.kwargs.items():
        if name in keywords and _holds_data(v):
            return f"`{name}=`"
    return None


def tensor_in_python_index(sub: SubscriptEvent) -> bool:
    """A tensor as a slice bound (``x[:n]``), or as the index of a tuple/list/shape (``sizes[i]``):
    Python needs an int there, and Dynamo calls ``.item()`` to get one, even on an argument or on a
    torch function of sizes (``torch.div(h.shape[1], 4)``, which is folded only where an op takes it)."""
    if sub.base.kind not in (Kind.TENSOR, Kind.SEQUENCE, Kind.SIZE) or sub.base.maybe_none:
        return False
    if any(b.is_tensor for b in sub.bounds):
        return True
    return sub.base.kind is not Kind.TENSOR and any(ix.is_tensor for ix in sub.index)


def tensor_indexed_by_data_scalar(sub: SubscriptEvent) -> bool:
    """``boxes[scores.argmax()]``: a tensor read at a 0-d integer tensor computed from data in this
    graph; Dynamo needs the index as a number ("Data dependent operator"). A 0-d tensor that entered
    the frame, or a tensor of indices, is traced."""
    if sub.store or not sub.base.is_tensor or sub.base.assumed or len(sub.index) != 1:
        return False
    ix = sub.index[0]
    return ix.zero_dim and ix.data_dependent and not ix.is_bool


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
        recompiles it (see DYN204).

        With `torch._dynamo.config.capture_scalar_outputs = True` (the `capture-scalar-outputs`
        setting) `.item()`, `int()`, `float()`, `bool()` and integer `.tolist()` stay in the graph as
        symbolic values; `math.*` on them still breaks, and so does branching on them (DYN101). On
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
        before a `print(...)` or `torch._dynamo.graph_break()` statement and used after it, which the
        resumed frame receives) is a graph input
        Dynamo reads as a size (`h.new_zeros(count, d)`, `h.narrow(1, 0, count)`,
        `torch.arange(count)` do not break), and torch functions of Python numbers
        (`torch.div(h.size(1), 2, rounding_mode="trunc")`) are evaluated while tracing (a tensor a
        factory builds, even `torch.scalar_tensor(n)`, is a graph tensor). Arithmetic on an argument
        (`count + 1`) is computed in the graph and breaks, and
        a slice bound (`x[:count]`) or a tuple index breaks even for an argument or a torch function of
        sizes. A parameter nothing shows to be a
        tensor (no annotation, no tensor use) may be a Python number: it is not reported as a size.
        Reading a tensor at a 0-d tensor computed in the graph (`boxes[scores.argmax()]`) also needs the
        index as a number and breaks; an argument as the index (`boxes[n]`) or a tensor of indices is
        traced.
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
        capture = ctx.settings.capture_scalar_outputs
        for call in ctx.events(CallEvent):
            where = None if capture else tensor_for_number(call)
            if where is not None:
                yield self.finding(
                    call,
                    f"`{ctx.code(call.node)}`: {where} is a tensor where the op takes a Python number or size, "
                    "which needs the tensor's data: the graph breaks here (a data-dependent operator)."
                    + loop_note(call),
                    gb=GB.DATA_DEPENDENT_OPERATOR,
                    hint="pass Python ints (sizes from .shape/.size()), or use an op that takes the tensor",
                )
                continue
            gb = scalar_extraction(call, capture)
            if gb is None:
                continue
            yield self.finding(
                call,
                f"`{ctx.code(call.node)}` moves tensor data into a Python value: the graph breaks here."
                + loop_note(call),
                gb=gb,
                hint="keep it a 0-d tensor and use torch ops, or move it out of the compiled region",
            )
        if capture:
            return
        for sub in ctx.events(SubscriptEvent):
            if tensor_indexed_by_data_scalar(sub):
                yield self.finding(
                    sub,
                    f"`{ctx.code(sub.node)}`: indexing with a 0-d tensor computed from data needs its value "
                    "as a Python int: the graph breaks here (a data-dependent operator)." + loop_note(sub),
                    gb=GB.DATA_DEPENDENT_OPERATOR,
                    hint="keep the index a tensor of indices (index_select, gather, torch.take_along_dim) or "
                         "use a mask",
                )
                continue
            if tensor_in_python_index(sub):
                yield self.finding(
                    sub,
                    f"`{ctx.code(sub.node)}`: a tensor used as a slice bound or a tuple/list index must become "
                    "a Python int, so Dynamo calls `.item()`: the graph breaks here." + loop_note(sub),
                    gb=GB.ITEM,
                    hint="index with Python ints (from shapes), or use torch ops: narrow with sizes, gather, "
                         "index_select, masks",
                )
