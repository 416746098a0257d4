"""DYN204: a Python value taken from tensor data at a graph break, used after it (a guard)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.breaks import (CAPTURE_SCALAR_OUTPUTS, VALUE_CAUSES, Break, Cause, reads_data,
                                      takes_tensor_data)
from dynalint.analysis.entry_arguments import fresh_data_functions, guarded_read
from dynalint.analysis.events import ArithmeticEvent, CallEvent, ScalarUseEvent, SubscriptEvent
from dynalint.analysis.resume_paths import branch_may_skip
from dynalint.analysis.value_uses import used_after
from dynalint.analysis.values import Kind, Value
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo


@register
class ScalarCrossesBreak(Rule):
    code = "DYN204"
    options = ("capture-scalar-outputs",)
    name = "scalar-crosses-break"
    kind = "recompile"
    summary = "A Python value taken from tensor data at a graph break is used afterwards: the code after the break recompiles when it changes."
    rationale = """
        After a graph break at `.item()`, `.tolist()`, `int(t)` or a skipped call such as
        `random.random()`, the rest of the function runs in a resumed frame that receives the Python
        number as an input. Dynamo specialises on it: the resumed graph is guarded on that exact value
        and recompiles when it first changes (then the number is treated as dynamic, measured on torch
        2.13; a branch on it compiles one resumed graph per outcome; a value that sizes a `range`
        recompiles for every new value), and """ + RECOMPILE_LIMIT + """. A value that is only returned is not guarded, nor
        one whose resumed frame Dynamo does not compile: nothing after the break runs a tensor
        operation (arithmetic, tests and `math` functions of Python numbers are none), a traced call or another break
        (a frame without a graph is skipped), or a break inside a later loop makes Dynamo run the
        whole resumed frame eagerly; nor when the value is tested by an `if` one of whose branches
        returns at once without a graph operation (`return random.randrange(n)`): a first call that
        takes it leaves the resumed frame without a graph, skipped from then on. Values
        computed only from parameters and buffers (constant between optimizer steps) and booleans (at most
        one extra graph) are not reported; a buffer that the module updates in place (a step counter,
        running statistics) changes every call and is reported. With `capture_scalar_outputs` the extraction stays in the graph, but a
        `range()` sized by it still recompiles for every new value. `range(t)` of a tensor breaks at
        `range` itself (DYN103) and hands the resumed frame the range object, whose bound it guards on:
        the loop recompiles when the bound first changes (measured), unless a break in the loop makes
        Dynamo run it eagerly; a bound computed from sizes alone (`torch.div(x.shape[1], 4)`) does not
        change. A tensor whose size comes from tensor data (`(x > 0).nonzero()`, `x[mask]`) breaks the
        same way and the resumed frame is guarded on its size, but whether that size changes between
        calls depends on the data alone (a mask that selects as many rows each time recompiles nothing),
        so it is reported only where the calls the project makes draw that data afresh
        (`f(torch.randn(8))` in a loop, or at two calls): the resumed frame then recompiles once when
        the size first changes, and the size is dynamic from then on. After a break inside a loop
        Dynamo runs the rest of the function eagerly: nothing there breaks, but each function of the
        project it calls is a frame of its own, guarded on a number taken from tensor data that the
        call hands it (also inside a list, dict or dataclass) where it reads it, so it recompiles when
        the data drawn afresh changes it (a number from a data test such as `torch.equal` is not
        reported: it may well stay the same); so is one a skipped call makes anew at every call
        (`t = time.perf_counter()`, `r = random.random()`), bound as it is and handed to a function
        that runs a tensor operation (a frame without one has no graph and is skipped); one cut down
        to a few values (`int(random.random() * 3)`, `int(time.time()) % 3`) may well repeat and is
        not reported. A `class` statement in compiled
        code breaks too, and builds a new class at every call: when the code after it uses the class, the resumed frame is guarded on the class's
        identity and recompiles at every call.
    """
    fix = """
        Keep the value as a tensor so it stays in the graph (`x / x.abs().max()`), or enable
        `capture_scalar_outputs`; for loop counts, use a fixed upper bound with masking.
    """
    INVALID = [
        Example("""
            import time
            import torch

            @torch.compile
            def stamp(x):
                now = time.time()
                return x * 2 + now
        """, inputs="[(torch.randn(3),), (torch.randn(3),)]", line=7),
        Example("""
            import torch

            @torch.compile
            def normalize(x):
                scale = x.abs().max().item()
                return x / scale
        """, inputs="[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]", line=6),
        Example("""
            import torch
            import torch.nn as nn

            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)
                    self.last_confidence = 0.0

                def forward(self, x):
                    logits = self.fc(x)
                    self.last_confidence = logits.softmax(-1).max().item()
                    return logits.log_softmax(-1)
        """, target="Classifier", inputs="[(torch.randn(2, 4),), (torch.randn(2, 4),), (torch.randn(2, 4),)]", line=12),
        Example("""
            import torch
            import torch.nn as nn

            class CumulativeMean(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("steps", torch.zeros((), dtype=torch.long))
                    self.register_buffer("mean", torch.zeros(4))

                def forward(self, x):
                    self.steps.add_(1)
                    factor = 1.0 / float(self.steps)
                    self.mean.lerp_(x.mean(0), factor)
                    return x - self.mean
        """, target="CumulativeMean", inputs="[(torch.randn(2, 4),)] * 3", line=12),
        Example("""
            import torch

            @torch.compile
            def trim(x, lengths):
                longest = int(lengths.max())
                return x[:, :longest] * 2
        """, inputs="[(torch.randn(2, 6), torch.tensor([5, 3])), (torch.randn(2, 6), torch.tensor([4, 2]))]", line=6),
        Example("""
            import torch

            @torch.compile
            def report(logits, target):
                loss = torch.nn.functional.cross_entropy(logits, target)
                acc = (logits.argmax(-1) == target).float().mean()
                return {"loss": loss.item(), "acc": acc.item()}
        """, inputs="[(torch.randn(4, 3), torch.tensor([0, 1, 2, 0])) for _ in range(3)]", line=7),
        Example("""
            import torch

            @torch.compile
            def repeat(x, times: torch.Tensor):
                for _ in range(times):
                    x = x * 2
                return x
        """, inputs="[(torch.randn(3), torch.tensor(2)), (torch.randn(3), torch.tensor(3))]", line=5),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def positives(x):
                idx = (x > 0).nonzero()
                return x * 2
        """, inputs="[(torch.tensor([1.0, -1.0, 2.0]),), (torch.tensor([1.0, 2.0, 3.0]),)]"),
        Example("""
            import torch

            @torch.compile
            def normalize(x):
                scale = x.abs().max()
                return x / scale
        """, inputs="[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]"),
        Example("""
            import torch

            @torch.compile
            def peak(x):
                y = x.softmax(-1)
                return y, y.max().item()
        """, inputs="[(torch.randn(4),), (torch.randn(4),), (torch.randn(4),)]"),
        Example("""
            import torch
            import torch.nn as nn

            class Classifier(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)
                    self.last_confidence = 0.0

                def forward(self, x):
                    logits = self.fc(x)
                    self.last_confidence = logits.softmax(-1).max().item()
                    return logits
        """, target="Classifier", inputs="[(torch.randn(2, 4),), (torch.randn(2, 4),), (torch.randn(2, 4),)]"),
        Example("""
            import torch

            @torch.compile
            def keep_filled(masks, scores):
                kept = torch.zeros_like(masks[0])
                for i in scores.argsort(descending=True).tolist():
                    if masks[i].sum() < 8:
                        continue
                    kept = kept + masks[i]
                return kept
        """, inputs="[(torch.rand(3, 4, 4), torch.rand(3)), (torch.rand(3, 4, 4), torch.rand(3))]"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        calls = {id(c.node): c for c in ctx.events(CallEvent)}
        seen: set[int] = set()
        for use in ctx.events(ScalarUseEvent):
            v = use.value
            if v.origin is None or id(v.origin) in seen:
                continue
            if v.origin_in_loop or v.is_bool or v.from_weights:
                continue
            origin = calls.get(id(v.origin))
            if origin is None:
                continue
            at = next((b for b in ctx.breaks.at(origin.node) if b.event is origin and b.cause in VALUE_CAUSES), None)
            sizes_range = use.context == "range" and (
                ctx.settings.capture_scalar_outputs or ctx.program.capture.on(CAPTURE_SCALAR_OUTPUTS, origin.function))
            if at is None and not sizes_range:
                continue
            if at is not None and ctx.breaks.loop_break_before(origin):
                continue  # Dynamo runs the frame eagerly there: no break (a helper it hands the value to is
                # reported as a frame of its own)
            if at is not None and not sizes_range and (not ctx.breaks.resumed_frame_compiles(at)
                                                       or branch_may_skip(ctx.program, ctx.breaks, at)):
                continue
            seen.add(id(v.origin))
            source = ctx.code(v.origin)
            if use.context == "range":
                detail = "it sizes a range(), so the loop is unrolled for that value and recompiles for every new one"
            else:
                detail = "the code after the break is specialised on it and recompiles once when it first " \
                         "changes (the number is then dynamic)"
            used = ctx.code(use.node)
            made = "taken from tensor data" if takes_tensor_data(origin) else "made by a skipped call"
            what = f"`{used}` is a Python value from `{source}`, {made}" if used != source else \
                f"`{source}` is a Python value {made}"
            yield self.finding(
                use,
                f"{what} at a graph break: {detail}.",
                hint="keep it a tensor (no .item()), or enable capture_scalar_outputs",
            )
        yield from self._pending_at_next_break(ctx, seen)
        yield from self._range_bounds(ctx)
        yield from self._class_objects(ctx)
        yield from self._data_sizes(ctx)
        yield from self._handed_from_eager_frames(ctx)

    def _handed_from_eager_frames(self, ctx: RuleContext) -> Iterator[Finding]:
        """A frame Dynamo runs eagerly (a break inside a loop before) calls a function of the project,
        which Dynamo compiles as a frame of its own: a Python number taken from tensor data that the
        call hands it (as an argument or inside a list, tuple, dict or dataclass) is an input of that
        frame, guarded where the function reads it, and changes with the data the calls draw afresh
        (measured on torch 2.13: ``p1[1] == 3`` fails, the helper recompiles).  A bool, or a number
        computed from one (``torch.equal``), may well stay the same and is not reported."""
        fresh: set[int] | None = None
        calls = {id(c.node): c for c in ctx.events(CallEvent)}
        for ev in ctx.events(CallEvent):
            callee = ev.callee
            if callee is None or callee.cls is not None or ev.module is not None \
                    or any(a.star or a.keyword for a in ev.call.args):
                continue
            names = callee.param_names()
            handed = [(i, v) for i, arg in enumerate(ev.args[:len(names)]) for v in _numbers_in(arg)
                      if _data_number(v, calls) or _new_number(v, calls)]
            if not handed or not ctx.breaks.loop_break_before(ev):
                continue
            if fresh is None and not all(_new_number(v, calls) for _, v in handed):
                fresh = fresh_data_functions(ctx.program)
            handed = [(i, v) for i, v in handed
                      if (_new_number(v, calls) and _runs_graph_op(ctx, callee))
                      or (_data_number(v, calls) and id(ev.function) in (fresh or ()))]
            guarded = [(i, v) for i, v in handed if guarded_read(ctx.program, callee, names[i])]
            if not guarded:
                continue
            i, v = guarded[0]
            new = _new_number(v, calls)
            made = "made by a skipped call, new at every call" if new else "taken from tensor data"
            changes = "when it changes" if new else "when it changes with the data the calls draw afresh"
            message = (f"`{ctx.code(ev.node)}` in `{ev.function.name}` hands `{callee.name}` a Python value from "
                       f"`{ctx.code(v.origin)}`, {made} (in `{names[i]}`), in a frame Dynamo runs "
                       f"eagerly (a graph break inside an earlier loop): `{callee.name}` is compiled as a frame "
                       f"of its own, guarded on that value, and recompiles {changes}.")
            hint = "keep it a tensor (no .item()), or move the loop's graph break out of the function"
            if any(fn is callee for fn in ctx.program.index.functions.values()):
                # on the `def` of the frame that recompiles (the call runs eagerly)
                yield Finding(rule=type(self), node=callee.node.name, statement=callee.node, message=message,
                              hint=hint)
            else:
                yield self.finding(ev, message, hint=hint)

    def _data_sizes(self, ctx: RuleContext) -> Iterator[Finding]:
        """``(x > 0).nonzero()``, ``x[mask]``: a tensor whose size comes from tensor data breaks the graph,
        and the frame resumed after the break is guarded on its size when the code after the break reads
        it (measured on torch 2.13: ``tensor '___stack0' size mismatch``, once, then the size is dynamic;
        nothing when the result is not used).  Whether the size changes depends on the data, so it is
        reported only where the module's calls draw that data afresh (:func:`fresh_data_functions`)."""
        fresh: set[int] | None = None
        for brk in ctx.breaks.of(Cause.DYNAMIC_SHAPE_OP, Cause.MASK_INDEX):
            if brk.in_loop or ctx.breaks.in_comprehension(brk) or not _from_inputs(brk):
                continue
            if fresh is None:
                fresh = fresh_data_functions(ctx.program)
            fn = brk.event.function
            if ctx.breaks.loop_break_before(brk.event):
                continue  # Dynamo runs the frame eagerly from that loop on: nothing breaks here
            if id(fn) not in fresh or not used_after(brk.node, brk.statement, fn.node) \
                    or not ctx.breaks.resumed_frame_compiles(brk, stop_at_break=True) \
                    or branch_may_skip(ctx.program, ctx.breaks, brk):
                continue
            yield self.finding(
                brk.event,
                f"`{ctx.code(brk.node)}` has a size taken from tensor data at a graph break, and the code "
                "after the break uses it: the resumed frame is guarded on that size, and the calls draw new "
                "random data each time, so it recompiles once when the size first changes (the size is "
                "then dynamic).",
                hint="keep a fixed size (mask with torch.where), or enable capture_dynamic_output_shape_ops",
            )

    def _class_objects(self, ctx: RuleContext) -> Iterator[Finding]:
        """``class Box: ...`` in compiled code breaks, and builds a new class object on every call: when
        the code after the break uses the class, the resumed frame guards on its identity, so every call
        recompiles (measured on torch 2.13); a class never used again adds no guard."""
        for brk in ctx.breaks.of(Cause.CLASS_STATEMENT):
            if brk.in_loop or not used_after(brk.node, brk.statement, brk.event.function.node) \
                    or not ctx.breaks.resumed_frame_compiles(brk, stop_at_break=True):
                continue
            yield self.finding(
                brk.event,
                f"`class {ctx.code(brk.node)}` builds a new class object at every call, at a graph break, and "
                "the code after the break uses it: the resumed code is guarded on the class's identity, so "
                f"every call recompiles it; {RECOMPILE_LIMIT}.",
                hint="define the class at module level",
            )

    def _range_bounds(self, ctx: RuleContext) -> Iterator[Finding]:
        """``for _ in range(t)``: the range object made at the break enters the resumed frame."""
        for brk in ctx.breaks.of(Cause.TENSOR_RANGE):
            if brk.in_loop or ctx.breaks.in_comprehension(brk) or not ctx.breaks.resumed_frame_compiles(brk):
                continue
            tensors = [a for a in brk.event.args if a.is_tensor]
            if all(a.constant for a in tensors):
                continue  # a torch function of sizes: the same bound at every call
            if any(a.entered for a in tensors) and ctx.breaks.follows_a_break(brk):
                continue  # may be such a function carried across the earlier break: not known to change
            yield self.finding(
                brk.event,
                f"`{ctx.code(brk.node)}` takes its bound from a tensor at a graph break: the loop resumes in a "
                "frame specialised on that bound, which recompiles once when it first changes (the bound "
                "is then dynamic).",
                hint="iterate over a size (x.shape[0]), or use a fixed number of iterations with masking",
            )

    def _pending_at_next_break(self, ctx: RuleContext, seen: set[int]) -> Iterator[Finding]:
        """A value still on the stack when a later break of the same statement ends the graph
        (``{"loss": loss.item(), "acc": acc.item()}``) is an input of the frame that resumes there,
        and Dynamo guards on it - even though it is only returned."""
        for brk in ctx.breaks.of(*VALUE_CAUSES):
            v = brk.event.result
            if brk.in_loop or id(brk.node) in seen or v is None or v.kind is not Kind.SCALAR or v.is_bool \
                    or v.from_weights:
                continue
            later = ctx.breaks.next_in_statement(brk)
            if later is None:
                continue
            seen.add(id(brk.node))
            yield self.finding(
                brk.event,
                f"`{ctx.code(brk.node)}` is a Python value taken from tensor data and still pending when "
                f"`{ctx.code(later.node)}` breaks the graph again: the resumed code is specialised on it "
                "and recompiles once when it first changes (the number is then dynamic).",
                hint="keep it a tensor (no .item()), or take the values in separate statements",
            )


def _numbers_in(v: Value) -> list[Value]:
    """``v`` and the elements of the tuples, lists, dicts and records it holds, one level deep."""
    return [v, *(v.items or ())]


def _data_number(v: Value, calls: dict[int, CallEvent]) -> bool:
    """A Python number (not a bool) that a call took from tensor data that is not weights alone
    (``x.sum().item()``, ``int(t)``); not one computed from a data test (``torch.equal``)."""
    if v.kind is not Kind.SCALAR or v.is_bool or v.from_weights or v.origin is None or v.origin_in_loop:
        return False
    origin = calls.get(id(v.origin))
    return origin is not None and takes_tensor_data(origin) and not reads_data(origin)


def _new_number(v: Value, calls: dict[int, CallEvent]) -> bool:
    """A Python number a skipped call made that is new at every call (``random.random()``,
    ``time.perf_counter()``, ``numpy.random.rand()``), bound to a name as it is
    (``t = time.perf_counter()``): it changes whatever data the calls draw.  One assigned through
    ``int(...)``, ``%`` or ``//`` takes a few values only, which a run may well repeat (under a fixed
    seed, within one second): not known to change."""
    if v.kind is not Kind.SCALAR or v.is_bool or v.origin is None or v.origin_in_loop:
        return False
    origin = calls.get(id(v.origin))
    q = origin.qualname if origin is not None else None
    return q is not None and (q in K.SKIPPED_NUMBER_CALLS or q.startswith("numpy.random.")) \
        and isinstance(origin.statement, cst.Assign) and origin.statement.value is origin.node


def _runs_graph_op(ctx: RuleContext, fn: FunctionInfo) -> bool:
    """``fn`` runs a tensor operation (arithmetic on a tensor, a call that makes one): a frame without
    one has no graph, and Dynamo skips it without guarding (measured on torch 2.13: a helper that only
    asserts on the number does not recompile)."""
    return any(e.function is fn and any(o.is_tensor for o in e.operands)
               for e in ctx.events(ArithmeticEvent)) \
        or any(e.function is fn and e.result is not None and e.result.is_tensor
               for e in ctx.events(CallEvent))


def _from_inputs(brk: Break) -> bool:
    """The data the size comes from is a tensor that is not computed from weights or Python numbers
    alone (those are the same at every call)."""
    ev = brk.event
    if isinstance(ev, CallEvent):
        receiver = ev.receiver if ev.receiver is not None and ev.receiver.is_tensor else None
        data = receiver if receiver is not None else (ev.args[0] if ev.args else None)
        sources = [data] if data is not None else []
    elif isinstance(ev, SubscriptEvent):
        sources = [ev.base, *ev.index]
    else:
        return False
    return bool(sources) and sources[0].is_tensor \
        and not any(v.from_weights or v.constant for v in sources if v.is_tensor)
