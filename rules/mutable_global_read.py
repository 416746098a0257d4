"""DYN201: compiled code reads a global the module rebinds or mutates."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from dynalint.analysis.closure_cells import rebound_cells
from dynalint.analysis.events import CallEvent, ContextManagerEvent, Event, GlobalReadEvent
from dynalint.analysis.in_place_changes import attribute_read, key_read
from dynalint.analysis.instance_writes import changes_only_tensors, rebuilt_alike
from dynalint.analysis.module_index import AttributeKey
from dynalint.analysis.resume_paths import guardless_functions
from dynalint.analysis.syntax import NOT_LITERAL
from dynalint.analysis.value_uses import returned_as_is
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT


@register
class MutableGlobalRead(Rule):
    code = "DYN201"
    name = "mutable-global-read"
    kind = "recompile"
    summary = "Compiled code reads a module-level global that the module rebinds or mutates."
    rationale = """
        Dynamo bakes the values of globals into the graph and guards on them. When a global is rebound
        (`global rate; rate = ...`, or by a script's own statements after a compiled call: its
        `__main__` block) or mutated (`+=`, `.append`, `[k] = ...`) between calls, the guard
        fails and the function recompiles: a float changes once and then becomes dynamic, but a list
        whose length changes recompiles on every call, and """ + RECOMPILE_LIMIT + """. A global read
        only after a graph break, in a resumed frame with no graph operation (Python tests and
        arithmetic on numbers, no tensor operation or traced call), is not guarded: Dynamo skips such
        a frame (measured on torch 2.13). Nor is an instance of a class of the module whose only
        changes are calls of its own methods that write into its tensors (`self.seen[idx] = labels`,
        `self.count.add_(1)`): Dynamo guards on tensors' metadata, not their values. A helper that
        returns the global's value as it is (`return _factor[0]`) is reported where it is called, the
        line Dynamo's recompile reason names (measured). A registry that a function of the module used
        only as a decorator of its module-level definitions fills (`@register(0.5)`) is filled while the
        module is imported, before any compiled call: no change Dynamo sees (measured). A variable of a
        function that a function it defines and compiles reads (`scale = 1.0`, `@torch.compile def fn(x):
        return x * scale`) is guarded the same way: rebound to another number, string or flag between two
        calls of the compiled function, it recompiles it, and so does an attribute of an object it holds, set
        between two calls (`opts.temperature = 0.5`), a counter the compiled function changes itself at each
        call (`nonlocal calls; calls += 1`), and a parameter of a function whose calls each compile a closure
        that reads it (`make(2)(x)`, `make(3)(x)`: the closures share the cache of one code object) (measured
        on torch 2.13: a number once, then it is dynamic; a string for each new value).
    """
    fix = """
        Pass the value as an argument (a tensor if it changes often), read it once when the module is
        built (`self.rate = rate` in `__init__`, updated outside `forward`), or keep it in a tensor
        buffer updated in place.
    """
    INVALID = [
        Example("""
            import torch

            drop_rate = 0.0

            def set_drop_rate(rate):
                global drop_rate
                drop_rate = rate

            @torch.compile
            def residual(x):
                return x * (1.0 - drop_rate)
        """, target="residual", inputs="[(torch.randn(4),)] * 3", between_calls="set_drop_rate(0.1 * i)", line=11),
        Example("""
            import torch

            step = 0

            @torch.compile
            def warmup(x):
                global step
                step += 1
                return x * min(1.0, step / 100)
        """, inputs="[(torch.randn(4),)] * 3", line=8),
    ]
    VALID = [
        Example("""
            import torch

            class Seen:
                def __init__(self):
                    self.mask = torch.zeros(8)

                def mark(self, idx):
                    self.mask[idx] = 1.0

            seen = Seen()

            @torch.compile
            def step(x, idx):
                seen.mark(idx)
                return x * seen.mask[:4]
        """, inputs="[(torch.randn(4), torch.tensor([0])), (torch.randn(4), torch.tensor([1]))]"),
        Example("""
            import torch

            DROP_RATE = 0.1

            @torch.compile
            def residual(x):
                return x * (1.0 - DROP_RATE)
        """, inputs="[(torch.randn(4),)] * 3"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        mutated = ctx.program.index.mutated_globals
        seen: set[tuple[int, str]] = set()
        called = {id(c.callee) for c in ctx.events(CallEvent) if c.callee is not None}
        guardless: set[int] | None = None  # (found when a read asks: most modules have no mutated global)
        for ev in ctx.events(GlobalReadEvent):
            if ev.name not in mutated or ev.value is None or ev.value.kind is Kind.FUNCTION:
                continue
            if changes_only_tensors(ctx.program.index, ev.name):
                continue  # its own methods write into its tensors only: nothing guarded changes
            if ev.value.kind is Kind.TENSOR and rebuilt_alike(ctx.program.index, ev.name):
                continue  # a tensor is guarded on its sizes, dtype and device, which one made alike keeps
            if _unread_keys_changed(ctx, ev.name):
                continue  # only keys compiled code never reads are stored into: no guard reads them
            if _other_attribute_read(ctx, ev):
                continue  # a torch module whose attributes stored into this read does not read
            if ctx.breaks.in_skipped_frame(ev):
                continue  # read only in a resumed frame Dynamo skips: no guard
            if guardless is None:
                guardless = guardless_functions(ctx.program, ctx.breaks, ctx.events(CallEvent),
                                                ctx.events(ContextManagerEvent))
            if id(ev.function) in guardless and not ctx.breaks.body_works(ev.function):
                continue  # read only in a frame of its own that Dynamo skips, having no graph
            where = mutated[ev.name][1]
            for site in _use_sites(ctx, ev):
                key = (id(site.function), ev.name) if site is ev else (id(site.node), ev.name)
                if key in seen:
                    continue
                seen.add(key)
                through = "" if site is ev else f", and `{ctx.code(site.node)}` returns it"
                fn = site.function.name
                recompiled = f"the compiled function that calls `{fn}`" if id(site.function) in called else f"`{fn}`"
                by = f"`{where.name}()`" if where is not None \
                    else "the module's own code, after a compiled call,"
                yield self.finding(
                    site,
                    f"`{ev.name}` is a global that {by} rebinds or mutates{through}: Dynamo guards on "
                    f"its value, so every change recompiles {recompiled}.",
                    hint="pass it as an argument or store it on the module outside forward",
                )
        for cell in rebound_cells(ctx.program):
            parent, change = cell.parent.name.value, ctx.code(cell.rebinding)
            if cell.how == "made":
                what = f"`{cell.read.value}` is a parameter of `{parent}`, whose calls (`{change}`) each compile " \
                       f"a closure of `{cell.function.name}` that reads it, all sharing one cache"
            elif cell.how == "counted":
                what = f"`{cell.read.value}` is a variable of `{parent}` that compiled `{cell.function.name}` " \
                       f"changes itself at each call (`{change}`) and reads"
            elif type(cell.read) is cst.Attribute:
                what = f"`{ctx.code(cell.read)}` is an attribute of an object `{parent}` built, which " \
                       f"`{change}` sets between two calls of compiled `{cell.function.name}`, which reads it"
            else:
                what = f"`{cell.read.value}` is a variable of `{parent}` that `{change}` rebinds between two " \
                       f"calls of compiled `{cell.function.name}`, which reads it"
            yield Finding(
                rule=type(self), node=cell.read, statement=cell.function.node,
                message=f"{what}: Dynamo guards on its value, so the change recompiles it (a number once, after "
                        "which it is dynamic; a flag once for each value; a string for each new value).",
                hint="pass it as an argument",
            )


def _unread_keys_changed(ctx: RuleContext, name: str) -> bool:
    """Every change of the global ``name`` stores into a literal key (``CFG["run"] = ...``) that compiled code
    never reads, and compiled code reads it by literal keys only: Dynamo guards the values of the keys read,
    not the dict's other keys (measured on torch 2.13: ``x * CFG["scale"]`` does not recompile when another
    key is stored or added)."""
    changed = ctx.program.index.global_keys_changed.get(name, {NOT_LITERAL})
    if NOT_LITERAL in changed or any(type(key) is AttributeKey for key in changed):
        return False
    read = {key_read(ev.node, ev.statement) for ev in ctx.events(GlobalReadEvent) if ev.name == name}
    return NOT_LITERAL not in read and not read & changed


def _other_attribute_read(ctx: RuleContext, ev: GlobalReadEvent) -> bool:
    """``ev`` reads a global that holds a module of ``torch.nn`` whose every change stores into an attribute
    of it (``model.step_count += 1``), and is no read of one of those attributes: Dynamo guards a module on
    the attributes the code it traces reads, and torch's own module code reads none a script adds (measured
    on torch 2.13: a function that runs ``model(x)``, ``model.eval()``, ``model.train()`` does not recompile
    when ``model.step_count`` changes; one that reads it does)."""
    value = ev.value
    changed = ctx.program.index.global_keys_changed.get(ev.name, {NOT_LITERAL})
    if value is None or value.kind is not Kind.MODULE or value.cls is not None \
            or not (value.qualname or "").startswith("torch.nn.") \
            or not all(type(key) is AttributeKey for key in changed):
        return False
    read = attribute_read(ev.node, ev.statement)
    return read is None or AttributeKey(read) not in changed


_MAX_RETURNS = 3
"""Calls a global's value is followed through, from the helper that returns it to its callers."""


def _use_sites(ctx: RuleContext, ev: GlobalReadEvent) -> list[Event]:
    """Where Dynamo names the guard on a global: the read itself, or, when the function that reads it
    returns the value as it is (``return _factor[0]``), each call of that function (followed through
    callers that return it in turn) - the line where the value is used is the one Dynamo's recompile
    reason names (measured on torch 2.13: ``return x * _factor_cell()`` in the compiled function;
    ``return y * SCALE`` in the helper itself when the helper uses it)."""
    calls = [c for c in ctx.events(CallEvent) if c.callee is not None]
    out: list[Event] = []
    stack: list[tuple[Event, int]] = [(ev, 0)]
    while stack:
        event, depth = stack.pop()
        callers = [c for c in calls if c.callee is event.function] if depth < _MAX_RETURNS \
            and returned_as_is(event.node, event.function.node) else []
        if callers:
            stack.extend((c, depth + 1) for c in callers)
        else:
            out.append(event)
    return out

