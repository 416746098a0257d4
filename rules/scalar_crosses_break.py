"""DYN204: a Python value taken from tensor data at a graph break, used after it (a guard)."""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.breaks import (CAPTURE_SCALAR_OUTPUTS, VALUE_CAUSES, Break, Cause, capture_flag,
                                      python_bool_mask, reads_data, takes_tensor_data)
from dynalint.analysis.eager_part import in_own_loop
from dynalint.analysis.entry_arguments import calls_handing, fresh_data_functions, guarded_read, read_before
from dynalint.analysis.events import (ArithmeticEvent, CallEvent, ResumeInputsEvent, ScalarUseEvent,
                                      SubscriptEvent)
from dynalint.analysis.resume_paths import (FrameGraphs, branch_may_skip, breaks_between,
                                            builtin_method_held, eager_part, resumable, runs_eagerly,
                                            runs_graph_op)
from dynalint.analysis.syntax import encloses
from dynalint.analysis.value_uses import read_after, used_after
from dynalint.analysis.values import Kind, Value
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.analysis.program import Program


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
        recompiles for every new value), and """ + RECOMPILE_LIMIT + """. When the value is an argument of a
        method of a Python list, dict or string (`losses.append(loss.item())`, `"{:.3f}".format(v.item())`),
        the resumed frame also holds that bound method, a new object at every call: Dynamo compiles the
        frame again at every call until the recompile limit (measured; bound to a name first, the value
        recompiles once). A value that is only returned is not guarded, nor
        one whose resumed frame Dynamo does not compile: nothing after the break runs a tensor
        operation (arithmetic, tests and `math` functions of Python numbers are none), a traced call or another break
        (a frame without a graph is skipped), the frame holds nothing tensor-related (its inputs are
        Python numbers, strings, lists, tuples and dicts of them and objects of plain classes, and the
        function names no torch or NumPy module: Dynamo skips it), or a break inside a later loop makes
        Dynamo run the
        whole resumed frame eagerly (when another break outside any loop comes first, the resumed
        frame ends there, compiled and guarded on the value it received, and only the frame after it
        runs eagerly); nor when the value is tested by an `if` one of whose branches
        returns at once without a graph operation (`return random.randrange(n)`): a first call that
        takes it leaves the resumed frame without a graph, skipped from then on. Values
        computed only from parameters and buffers (constant between optimizer steps) and booleans (at most
        one extra graph) are not reported; a buffer that the module updates in place (a step counter,
        running statistics) changes every call and is reported. With `capture_scalar_outputs` the extraction stays in the graph, but a
        `range()` sized by it still recompiles for every new value, and a number still live at a later
        break (and used after it) reaches the frame resumed there as a Python number, guarded the same way.
        `range(t)` of a tensor breaks at
        `range` itself (DYN103) and hands the resumed frame the range object, whose bound it guards on:
        the loop recompiles when the bound first changes (measured), unless a break in the loop makes
        Dynamo run it eagerly; a bound computed from sizes alone (`torch.div(x.shape[1], 4)`) does not
        change. A tensor whose size comes from tensor data (`(x > 0).nonzero()`, `x[mask]`) breaks the
        same way and the resumed frame is guarded on its size, but whether that size changes between
        calls depends on the data alone (a mask that selects as many rows each time recompiles nothing),
        so it is reported only where the calls the project makes pass new data (`f(torch.randn(8))` in a
        loop, or at two calls; two different literal tensors, `f(torch.tensor([1, 5]))` and
        `f(torch.tensor([2, 2, 0]))`; what a loop over batches binds, `for x, y in loader: step(x, y)`): the
        resumed frame then recompiles once when
        the size first changes, and the size is dynamic from then on. An op that takes a size, given a
        0-d tensor computed from data (`torch.arange(n)`, `h.new_zeros(n, 8)`, `x.narrow(0, 0, n)`),
        breaks the same way and returns a tensor of that size, guarded the same way where the code
        after the break uses it (in a helper Dynamo inlines, nothing recompiles). After a break inside a loop
        Dynamo runs the rest of the function eagerly: nothing there breaks, but each function of the
        project it calls is a frame of its own, guarded on a number taken from tensor data that the
        call hands it (also inside a list, dict or dataclass) where it reads it, so it recompiles when
        the data drawn afresh changes it (also a number computed from a data test on that data,
        `int(torch.equal(a, b))`; not a bool itself, nor a read only in a part of that function
        Dynamo runs eagerly, such as the body of a `with open(...)`, nor one by a function without a
        graph, which only tests it); so is one a skipped call makes anew
        at every call
        (`t = time.perf_counter()`, `r = random.random()`), bound as it is and handed to a function
        that runs a tensor operation (a frame without one has no graph and is skipped); one cut down
        to a few values (`int(random.random() * 3)`, `int(time.time()) % 3`) may well repeat and is
        not reported.
        A number from tensor data handed after its break to a function of another module of the
        project (also inside a list, tuple, dict or dataclass) is guarded where that function reads
        it, in the resumed frame that inlines it; so is a size taken from data in a part of the
        function that Dynamo runs eagerly and handed to a function of the project, in that function's
        own frame. A `class` statement in compiled
        code breaks too, and builds a new class at every call: when the code after it uses the class, the resumed frame is guarded on the class's
        identity and recompiles at every call. So does `str(t)` of a tensor (it breaks) whose string the
        code after the break joins to another (`"value " + str(t)`): the resumed frame is guarded on the
        text, so every new value recompiles; reported where the calls draw the data afresh (a string
        only handed to a call such as `print` is not guarded). A size of a tensor whose shape the calls
        change (`b, c, h, w = x.shape`, `n = x.shape[0]`), taken before a break outside any loop and read
        after it, reaches the resumed frame as a Python int the same way: guarded, it recompiles that frame
        once when the size first changes; a call of a function whose body breaks splits the frame at the
        call just as well (`out = self.inner(x)` with a `print` in `inner`). A number taken from data inside
        a generator expression (`sum(float(v) for v in losses)`) crosses nothing: Dynamo cannot rebuild the
        generator to resume, and runs the whole function eagerly. A number taken from data and returned
        (`correct = (...).item()`, then `return correct, probs.mean()`) is guarded too: Python needs its value
        to hand it back. A count of values below `minlength` (`torch.bincount(idx, minlength=n * n)`, a
        confusion matrix) keeps its size and is not reported.
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
            if v.is_bool or v.from_weights:
                continue
            origin = calls.get(id(v.origin))
            if origin is None or v.origin_in_loop and in_own_loop(origin):
                continue
            at = next((b for b in ctx.breaks.at(origin.node) if b.event is origin and b.cause in VALUE_CAUSES), None)
            sizes_range = use.context == "range" and (
                ctx.settings.capture_scalar_outputs or ctx.program.capture.on(CAPTURE_SCALAR_OUTPUTS, origin.function))
            captured = at is None and not sizes_range
            if use.context == "return" and captured:
                # (returned: guarded when it enters the frame resumed at its own break, on the stack; one kept
                # in the graph and only returned after a later break is not guarded, measured on torch 2.13)
                continue
            if captured:
                at = _captured_crossing(ctx, origin, use)
                if at is None:
                    continue
            if at is not None and ctx.breaks.in_comprehension(at, around=use.node):
                continue  # a comprehension is a frame of its own, whose loop Dynamo runs eagerly at a break
            if at is not None and (ctx.breaks.loop_break_before(origin) or runs_eagerly(ctx.breaks, origin)
                                   or captured and (at.in_loop or runs_eagerly(ctx.breaks, at.event))):
                continue  # Dynamo runs the frame eagerly there: no break (a helper it hands the value to is
                # reported as a frame of its own)
            if at is not None and not sizes_range and (not _frame_guards(ctx, at, use)
                                                       or branch_may_skip(ctx.program, ctx.breaks, at)):
                continue
            seen.add(id(v.origin))
            source = ctx.code(v.origin)
            held = builtin_method_held(at, calls) if at is not None and not captured else None
            if use.context == "range":
                detail = "it sizes a range(), so the loop is unrolled for that value and recompiles for every new one"
            elif held is not None:
                detail = f"the frame resumed there also holds `{ctx.code(held.call.func)}`, a method " \
                         "object made anew at every call, so Dynamo drops that frame and compiles it again " \
                         "at every call, until torch 2.13's recompile_limit (8); then it runs eagerly"
            else:
                detail = "the code after the break is specialised on it and recompiles once when it first " \
                         "changes (the number is then dynamic)"
            used = ctx.code(use.node)
            made = "taken from tensor data" if takes_tensor_data(origin) else "made by a skipped call"
            what = f"`{used}` is a Python value from `{source}`, {made}" if used != source else \
                f"`{source}` is a Python value {made}"
            if captured:
                yield self.finding(
                    use,
                    f"{what} in the graph (`{CAPTURE_SCALAR_OUTPUTS}`), and still live at the graph break at "
                    f"`{ctx.code(at.node)}`: the frame resumed there receives it as a Python number, so {detail}.",
                    hint="keep it a tensor across the break (no .item()), or remove the break",
                )
                continue
            yield self.finding(
                use,
                f"{what} at a graph break: {detail}.",
                hint=_keep_tensor_hint(at) if held is None else
                f"bind it to a name first (`value = {source}`, then pass `value`): the frame then recompiles "
                "once, when the value first changes; or keep it a tensor",
            )
        shared = _Shared(ctx)
        yield from self._pending_at_next_break(ctx, seen)
        yield from self._range_bounds(ctx)
        yield from self._class_objects(ctx)
        yield from self._data_sizes(ctx, shared)
        yield from self._handed_from_eager_frames(ctx, shared)
        yield from self._handed_to_other_modules(ctx, seen)
        yield from self._sizes_handed_from_eager_frames(ctx, shared)
        yield from self._strings_of_data(ctx, shared)
        yield from self._sizes_across_breaks(ctx)

    def _sizes_across_breaks(self, ctx: RuleContext) -> Iterator[Finding]:
        """``b, c, h, w = x.shape`` of a tensor whose size the calls change, read after a graph break: the
        frame resumed there receives the size as a Python int and is guarded on it, so it recompiles when the
        size first changes (measured on torch 2.13: ``h == 4`` fails in ``torch_dynamo_resume_in_...``; the
        size is dynamic from then on)."""
        calls = [c for c in ctx.events(CallEvent) if c.callee_broke]
        for ev in ctx.events(ResumeInputsEvent):
            if not ev.sizes:
                continue
            fn = ev.function
            at = next((b.event for b in ctx.breaks if b.event.function is fn and encloses(ev.node, b.node)
                       and not b.in_loop and not ctx.breaks.in_comprehension(b)
                       and not ctx.breaks.loop_break_before(b.event) and not runs_eagerly(ctx.breaks, b.event)
                       and ctx.breaks.resumed_frame_compiles(b)), None)
            if at is None:
                # a call of a function that breaks splits this frame at the call too (measured on torch 2.13:
                # `B == 2` fails in the frame resumed after `out = self.inner(x)` whose `forward` prints)
                at = next((c for c in calls if c.function is fn and encloses(ev.node, c.node)
                           and not ctx.breaks.loop_break_before(c) and not runs_eagerly(ctx.breaks, c)), None)
            if at is None:
                continue
            read = sorted(name for name in ev.sizes if read_after(fn.node, ev.node, name))
            if not read:
                continue
            names = ", ".join(f"`{n}`" for n in read)
            what, it = ("is a size", "it as a Python int") if len(read) == 1 \
                else ("are sizes", "them as Python ints")
            yield self.finding(
                at,
                f"{names} {what} of a tensor whose shape the calls change, read after the graph break at "
                f"`{ctx.code(at.node)}`: the frame resumed there receives {it} and is guarded on "
                f"{it.split(' as ')[0]}, so it recompiles once when the size first changes (the size is then "
                "dynamic).",
                hint="remove the graph break, or mark the dimension dynamic before the first call "
                     "(`torch._dynamo.mark_dynamic(x, dim)`)",
            )

    def _strings_of_data(self, ctx: RuleContext, shared: "_Shared") -> Iterator[Finding]:
        """``"value " + str(t)``: ``str()`` of a tensor breaks the graph, and the frame resumed after the
        break receives the string it made; an operator that combines that string right there guards on
        its exact text, so every new value recompiles (measured on torch 2.13: ``___stack2 ==
        'tensor(2)'`` fails at each new value; a string only handed to a call such as ``print``, or only
        stored, installs no guard).  Whether the value changes depends on the data, so it is reported
        only where the module's calls draw that data afresh (:func:`_fresh_data_breaks`)."""
        combined = {id(side) for ev in ctx.events(ArithmeticEvent) if isinstance(ev.node, cst.BinaryOperation)
                    for side in (ev.node.left, ev.node.right)}
        texts = [b for b in ctx.breaks.of(Cause.UNTRACEABLE_CALL) if isinstance(b.event, CallEvent)
                 and b.event.qualname == "builtins.str" and id(b.node) in combined]
        for brk in _fresh_data_breaks(ctx, shared, texts):
            yield self.finding(
                brk.event,
                f"`{ctx.code(brk.node)}` makes a Python string of tensor data at a graph break, and the code "
                "after the break combines it: the resumed frame is guarded on that exact text, and the calls "
                f"pass new data each time, so each new value recompiles it; {RECOMPILE_LIMIT}.",
                hint="format the value outside the compiled region, or log the tensor itself",
            )

    def _sizes_handed_from_eager_frames(self, ctx: RuleContext, shared: "_Shared") -> Iterator[Finding]:
        """A tensor whose size comes from tensor data (``(x > 0).nonzero()``) has its size bound to a name
        (``n = idx.shape[0]``, ``len(idx)``), and a part of the function that Dynamo runs eagerly
        (:func:`runs_eagerly`) hands that number, as it is or packed in a tuple, list, dict or record,
        to a function of the project after that: the function is a frame of its own, guarded on
        the number where it reads it, and recompiles when the data the calls draw afresh changes it
        (measured on torch 2.13: ``p1.v == 2`` fails, the helper recompiles)."""
        sized = [(b, name) for b in [*ctx.breaks, *ctx.breaks.untraced]
                 if b.cause in (Cause.DYNAMIC_SHAPE_OP, Cause.MASK_INDEX)
                 if (name := _size_bound(b)) is not None and _from_inputs(b)
                 and eager_part(ctx.breaks, b.event.function) is not None]
        if not sized:
            return
        fresh = shared.fresh
        graphs = shared.graphs
        functions = {id(ev.node): ev for ev in ctx.events(CallEvent)
                     if ev.callee is not None and ev.callee.cls is None and ev.module is None}
        reported: set[int] = set()
        for brk, name in sized:
            fn = brk.event.function
            if id(fn) not in fresh:
                continue
            for call, positions in calls_handing(fn, name, frozenset(functions), brk.statement):
                ev = functions[id(call)]
                if ev.function is not fn or not runs_eagerly(ctx.breaks, ev) \
                        or any(a.star or a.keyword for a in ev.call.args):
                    continue
                callee = ev.callee
                names = callee.param_names()
                owner = ctx.program.program_for(callee.owner)
                held = [i for i in positions if i < len(names) and _frame_reads(graphs, owner, callee, names[i])]
                if not held or id(callee) in reported or not graphs.has_graph(callee):
                    continue
                reported.add(id(callee))
                message = (f"`{ctx.code(ev.node)}` in `{fn.name}` hands `{callee.name}` the size of "
                           f"`{ctx.code(brk.node)}`, taken from tensor data (in `{names[held[0]]}`), in a "
                           f"frame Dynamo runs eagerly (a graph break inside a loop): `{callee.name}` is "
                           "compiled as a frame of its own, guarded on that size, and recompiles when it "
                           "changes with the data the calls draw afresh.")
                hint = "keep a fixed size (mask with torch.where), or move the loop's graph break out of the function"
                yield self._at_frame(ctx, ev, callee, message, hint)

    def _at_frame(self, ctx: RuleContext, ev: CallEvent, callee: "FunctionInfo", message: str, hint: str) -> Finding:
        """The finding on the ``def`` of ``callee``, the frame that recompiles, where it is in this module (the
        call runs eagerly, so Dynamo never traces the call's line); else on the call."""
        if any(fn is callee for fn in ctx.program.index.functions.values()):
            return Finding(rule=type(self), node=callee.node.name, statement=callee.node, message=message, hint=hint)
        return self.finding(ev, message, hint=hint)

    def _handed_to_other_modules(self, ctx: RuleContext, seen: set[int]) -> Iterator[Finding]:
        """A Python number taken from tensor data at a break, handed after the break (as an argument or
        inside a list, tuple, dict or dataclass) to a function of another module of the project: Dynamo
        inlines that function into the resumed frame (or into the frame resumed after a break inside
        it), which receives the number and guards on it where the function reads it (measured on torch
        2.13: ``p0[1] == 2`` fails, the resumed frame recompiles).  The function's body is read in its
        own module, so the uses of the value there are found through the call."""
        calls = {id(c.node): c for c in ctx.events(CallEvent)}
        local = {id(fn) for fn in ctx.program.index.functions.values()}
        for ev in ctx.events(CallEvent):
            callee = ev.callee
            if callee is None or callee.cls is not None or ev.module is not None or id(callee) in local \
                    or callee.owner is None or any(a.star or a.keyword for a in ev.call.args):
                continue
            names = callee.param_names()
            handed = [(i, v) for i, arg in enumerate(ev.args[:len(names)]) for v in _numbers_in(arg)
                      if _data_number(v, calls) and id(v.origin) not in seen]
            if not handed or runs_eagerly(ctx.breaks, ev):
                continue  # (a frame run eagerly: the callee is a frame of its own, see above)
            owner = ctx.program.program_for(callee.owner)
            for i, v in handed:
                origin = calls[id(v.origin)]
                at = next((b for b in ctx.breaks.at(origin.node) if b.event is origin and b.cause in VALUE_CAUSES),
                          None)
                if at is None or at.in_loop or origin.function is not ev.function \
                        or not ctx.breaks.resumed_frame_compiles(at) or branch_may_skip(ctx.program, ctx.breaks, at) \
                        or not guarded_read(owner, callee, names[i]):
                    continue
                seen.add(id(v.origin))
                yield self.finding(
                    origin,
                    f"`{ctx.code(v.origin)}` is a Python value taken from tensor data at a graph break, handed "
                    f"to `{callee.name}` by `{ctx.code(ev.node)}` (in `{names[i]}`), which reads it: the resumed "
                    "code is specialised on it and recompiles once when it first changes (the number is then "
                    "dynamic).",
                    hint=_keep_tensor_hint(at),
                )
                break

    def _handed_from_eager_frames(self, ctx: RuleContext, shared: "_Shared") -> Iterator[Finding]:
        """A frame Dynamo runs eagerly (one that reaches a break inside a loop: :func:`runs_eagerly`) calls
        a function of the project,
        which Dynamo compiles as a frame of its own: a Python number taken from tensor data that the
        call hands it (as an argument or inside a list, tuple, dict or dataclass) is an input of that
        frame, guarded where the function reads it, and changes with the data the calls draw afresh
        (measured on torch 2.13: ``p1[1] == 3`` fails, the helper recompiles), also a number computed from a
        data test (``int(torch.equal(a, b)) + 1``), as the frames resumed after such a test are guarded on
        it; a bool itself is not reported (at most one more graph)."""
        fresh: set[int] | None = None
        calls = {id(c.node): c for c in ctx.events(CallEvent)}
        graphs = shared.graphs
        for ev in ctx.events(CallEvent):
            callee = ev.callee
            if callee is None or callee.cls is not None or ev.module is not None \
                    or any(a.star or a.keyword for a in ev.call.args):
                continue
            names = callee.param_names()
            handed = [(i, v) for i, arg in enumerate(ev.args[:len(names)]) for v in _numbers_in(arg)
                      if _data_number(v, calls, tests=True) or _new_number(v, calls)]
            if not handed or not runs_eagerly(ctx.breaks, ev):
                continue
            if fresh is None and not all(_new_number(v, calls) for _, v in handed):
                fresh = shared.fresh  # (asked only once a number from data is handed: until then, none)
            handed = [(i, v) for i, v in handed
                      if (_new_number(v, calls) and runs_graph_op(ctx.program, callee))
                      or (_data_number(v, calls, tests=True) and id(ev.function) in (fresh or ()))]
            guarded = [(i, v) for i, v in handed if _frame_reads(graphs, ctx.program, callee, names[i])]
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
            yield self._at_frame(ctx, ev, callee, message, hint)

    def _data_sizes(self, ctx: RuleContext, shared: "_Shared") -> Iterator[Finding]:
        """``(x > 0).nonzero()``, ``x[mask]``, ``torch.arange(n)`` of a 0-d tensor ``n`` computed from data: a
        tensor whose size comes from tensor data breaks the graph,
        and the frame resumed after the break is guarded on its size when the code after the break reads
        it (measured on torch 2.13: ``tensor '___stack0' size mismatch``, once, then the size is dynamic;
        nothing when the result is not used).  Whether the size changes depends on the data, so it is
        reported only where the module's calls draw that data afresh (:func:`_fresh_data_breaks`)."""
        def sized(brk: Break) -> bool:
            # (in a helper Dynamo inlines, the helper ends up a frame of its own, whose input the 0-d tensor
            # is: nothing recompiles, measured)
            if brk.cause is Cause.MASK_INDEX:
                return not python_bool_mask(brk.event)
            if isinstance(brk.event, CallEvent) and brk.event.qualname in _BOUNDED_BY_MINIMUM \
                    and "minlength" in brk.event.kwargs:
                return False  # (`torch.bincount(idx, minlength=n * n)` of a confusion matrix keeps its size)
            return brk.cause is not Cause.NUMBER_ARGUMENT \
                or (_sized_by_data(brk) and not _inlined(ctx, brk.event.function))

        breaks = ctx.breaks.of(Cause.DYNAMIC_SHAPE_OP, Cause.MASK_INDEX, Cause.NUMBER_ARGUMENT)
        for brk in _fresh_data_breaks(ctx, shared, breaks, sized,
                                      lambda b: used_after(b.node, b.statement, b.event.function.node)):
            flag = capture_flag(brk)
            yield self.finding(
                brk.event,
                f"`{ctx.code(brk.node)}` has a size taken from tensor data at a graph break, and the code "
                "after the break uses it: the resumed frame is guarded on that size, and the calls pass new "
                "data each time, so it recompiles once when the size first changes (the size is then "
                "dynamic).",
                hint="keep a fixed size (mask with torch.where)" + (f", or enable {flag}" if flag else ""),
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
                    or v.from_weights or ctx.breaks.in_comprehension(brk):
                continue  # (a comprehension is a frame of its own, whose loop Dynamo then runs eagerly)
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


def _captured_crossing(ctx: RuleContext, origin: CallEvent, use: ScalarUseEvent) -> Break | None:
    """The first break between ``origin`` and ``use`` (of one function) when ``origin`` takes a number from
    tensor data that ``capture_scalar_outputs`` keeps in the graph: the graph ends at that break with the
    number live, and the frame resumed there receives it as a Python number, guarded like one taken at a
    break (measured on torch 2.13: ``v == 4`` fails in the resumed frame; without a later break, or with the
    number only returned after it, nothing recompiles)."""
    fn = origin.function
    if not takes_tensor_data(origin) or use.function is not fn or not (
            ctx.settings.capture_scalar_outputs or ctx.program.capture.on(CAPTURE_SCALAR_OUTPUTS, fn)):
        return None
    crossing = [b for b in breaks_between(ctx.breaks, fn, origin.node, use.node)
                if not encloses(b.node, use.node)]  # (a break at a call given the number hands it on, unguarded)
    return crossing[0] if crossing else None


def _frame_guards(ctx: RuleContext, at: Break, use: ScalarUseEvent) -> bool:
    """The frame resumed after ``at`` is compiled and guards on the value: the rest of the function is
    compiled, or the frame ends at a later break outside any loop, compiled, and either ``use`` comes
    before that break or reads the value by the name it was bound to, which that frame hands the frame
    resumed at that break as a constant, when there is one (a break at a ``with open(...)`` runs the rest
    eagerly in the same frame).  Measured on torch 2.13: ``___stack0 == 6`` fails even where a later
    loop's break makes Dynamo run the next frame eagerly; a value read there only back from a tuple the
    earlier frame packed installs no guard."""
    breaks = ctx.breaks
    if breaks.resumed_frame_compiles(at) and not runs_eagerly(breaks, use):
        return True
    if not breaks.resumed_frame_compiles(at, stop_at_break=True):
        return False
    later = [b for b in breaks_between(breaks, at.event.function, at.node, use.node) if b is not at]
    if not later:
        return not runs_eagerly(breaks, use)
    return isinstance(use.node, cst.Name) and resumable(later[0])


def _frame_reads(graphs: FrameGraphs, program: "Program", callee: "FunctionInfo", name: str) -> bool:
    """``callee``, compiled as a frame of its own, reads its parameter ``name`` where Dynamo guards on it
    (:func:`guarded_read`), in the part of it that Dynamo compiles: a read only in a part it runs eagerly
    (the body of a ``with open(...)`` that breaks at its entry, what follows a loop that breaks) installs
    no guard (measured on torch 2.13: ``fh.write(str(p[1]))`` in such a body recompiles nothing), nor does
    a frame without a graph, which Dynamo skips (:meth:`FrameGraphs.has_graph`: ``assert v >= 0`` alone)."""
    if not guarded_read(program, callee, name) or not graphs.has_graph(callee):
        return False
    part = eager_part(graphs.breaks_of(callee), callee)
    return part is None or read_before(callee, name, part)


class _Shared:
    """What the parts of one check of a module read in common, each found once and only when first
    asked: the functions the module's calls give data drawn afresh (:func:`fresh_data_functions`), and
    whether a function of the project has a graph (:class:`FrameGraphs`, which finds the breaks of each
    other module once)."""

    def __init__(self, ctx: RuleContext) -> None:
        self._ctx = ctx

    @cached_property
    def fresh(self) -> set[int]:
        return fresh_data_functions(self._ctx.program)

    @cached_property
    def graphs(self) -> FrameGraphs:
        ctx = self._ctx
        return FrameGraphs(ctx.program, ctx.breaks, ctx.settings)


_BOUNDED_BY_MINIMUM = frozenset({"torch.bincount", "torch.Tensor.bincount"})
"""Ops whose output is at least ``minlength`` long: given one, data below it never changes the size (measured
on torch 2.13: a confusion matrix counted over four calls of random data, no recompile)."""


def _fresh_data_breaks(ctx: RuleContext, shared: _Shared, breaks: Iterable[Break],
                       kept: Callable[[Break], bool] = lambda brk: True,
                       used: Callable[[Break], bool] = lambda brk: True) -> Iterator[Break]:
    """The breaks of ``breaks`` that make something of tensor data the frame resumed after them is guarded
    on, where that data changes from call to call: outside any loop and comprehension, of data that is
    not weights or Python numbers alone (:func:`_from_inputs`), kept by ``kept``, in a part of the
    function Dynamo compiles (not after a loop's break, not run eagerly), in a function the module's
    calls give data drawn afresh (whether a size or value of such data changes depends on the data
    alone: :func:`fresh_data_functions`), whose result ``used`` says the code after the break uses,
    and whose resumed frame is compiled up to the next break (:meth:`Breaks.resumed_frame_compiles`)
    and not skipped by a branch that returns at once (:func:`branch_may_skip`)."""
    for brk in breaks:
        ev = brk.event
        if brk.in_loop or ctx.breaks.in_comprehension(brk) or not _from_inputs(brk) or not kept(brk) \
                or ctx.breaks.loop_break_before(ev) or runs_eagerly(ctx.breaks, ev):
            continue  # (after a loop's break Dynamo runs the frame eagerly: nothing breaks here)
        if id(ev.function) not in shared.fresh or not used(brk) \
                or not ctx.breaks.resumed_frame_compiles(brk, stop_at_break=True) \
                or branch_may_skip(ctx.program, ctx.breaks, brk):
            continue
        yield brk


def _keep_tensor_hint(brk: Break | None) -> str:
    """The remedy for a number that crosses the break at ``brk``: kept a tensor, or the capture flag where
    it keeps the number in the graph (:func:`capture_flag`). A number a skipped call makes (``time.time()``)
    the flag does not touch, and one Python then needs as a value (an index into a Python list) makes the
    compile fail with the flag on, so neither is offered it."""
    flag = capture_flag(brk) if brk is not None else CAPTURE_SCALAR_OUTPUTS
    return "keep it a tensor (no .item())" + (f", or enable {flag}" if flag else "")


def _numbers_in(v: Value) -> list[Value]:
    """``v`` and the elements of the tuples, lists, dicts and records it holds, one level deep."""
    return [v, *(v.items or ())]


def _data_number(v: Value, calls: dict[int, CallEvent], tests: bool = False) -> bool:
    """A Python number (not a bool) that a call took from tensor data that is not weights alone
    (``x.sum().item()``, ``int(t)``); one computed from a data test (``int(torch.equal(a, b))``) only
    with ``tests``."""
    if v.kind is not Kind.SCALAR or v.is_bool or v.from_weights or v.origin is None or v.origin_in_loop:
        return False
    origin = calls.get(id(v.origin))
    tested = reads_data(origin) if origin is not None else False
    return origin is not None and (tests and tested or takes_tensor_data(origin) and not tested)


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


def _size_bound(brk: Break) -> str | None:
    """The name a statement ``n = <brk>.shape[i]`` / ``.size(i)`` / ``len(<brk>)`` binds the size of the
    tensor the break makes to; None for any other statement."""
    statement = brk.statement
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
        else statement
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 \
            or not isinstance(small.targets[0].target, cst.Name):
        return None
    value = small.value
    sized = None
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) \
            and value.value.attr.value == "shape":
        sized = value.value.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" \
            and value.args:
        sized = value.func.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "len" \
            and len(value.args) == 1:
        sized = value.args[0].value
    return small.targets[0].target.value if sized is brk.node else None


#: functions and tensor methods whose arguments are the sizes of the tensor they return
_SIZED_BY_ARGUMENTS = frozenset({"torch.arange", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
                                 "torch.rand", "torch.randn"})
_SIZED_BY_METHOD_ARGUMENTS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "narrow", "view",
                                        "reshape", "expand", "repeat"})


def _sized_by_data(brk: Break) -> bool:
    """A break at an op that takes a size, given a tensor computed from data (``torch.arange(n)``,
    ``h.new_zeros(n, 8)``, ``h.view(n, 4)``): Dynamo runs the op outside the graph, and the tensor it
    returns has a size read from that data (measured on torch 2.13: the resumed frame fails ``tensor
    '___stack1' size mismatch`` when the data changes)."""
    ev = brk.event
    if not isinstance(ev, CallEvent):
        return False
    sized = ev.method in _SIZED_BY_METHOD_ARGUMENTS if ev.method is not None and ev.receiver is not None \
        and ev.receiver.is_tensor else ev.qualname in _SIZED_BY_ARGUMENTS
    return sized and any(a is not None and a.is_tensor and not (a.from_weights or a.constant)
                         for a in (*ev.args, *ev.kwargs.values()))


def _inlined(ctx: RuleContext, fn: "FunctionInfo") -> bool:
    """A compiled function of the module calls ``fn``: Dynamo inlines it there."""
    compiled = {id(f) for f in ctx.program.compiled}
    return any(caller is not None and id(caller) in compiled
               for _, caller in ctx.program.index.call_sites.get(fn.name, ()))


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
