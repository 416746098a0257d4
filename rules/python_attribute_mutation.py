"""DYN203: a Python value on ``self`` changed inside compiled code (Dynamo guards on it)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis.class_state import (initial_keys, initially_none, is_self, self_attribute,
                                           stores_at_held_key)
from dynalint.analysis.entry_arguments import passed_afresh, second_calls_recompile
from dynalint.analysis.events import AttributeEvent, CallEvent, ContextManagerEvent, Event, SubscriptEvent
from dynalint.analysis.in_place_changes import read_before_stored
from dynalint.analysis.module_index import built_only_in_compiled_code
from dynalint.analysis.resume_paths import guardless_functions, runs_eagerly, traced_on_early_return
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from dynalint.analysis.module_index import ClassInfo
    from dynalint.analysis.values import Value


@register
class PythonAttributeMutation(Rule):
    code = "DYN203"
    name = "python-attribute-mutation"
    kind = "recompile"
    summary = "A Python number/flag on `self` (or on a class) is changed inside compiled code and read there, or a list/dict on `self` is changed there: it recompiles when it changes."
    rationale = """
        Dynamo treats Python attributes of modules (ints, floats, bools, strings) as constants of the
        graph and guards on them. Changing one inside `forward` - a step counter, a decaying epsilon, a
        mode flag - makes the guard fail on the next call. An int counter (`self.step += 1`) on an
        `nn.Module` recompiles on every call, and """ + RECOMPILE_LIMIT + """. A float, or a number on an
        object that is not an `nn.Module`, recompiles once when it first changes and is then treated as
        dynamic (measured on torch 2.13). An attribute that `forward` sets before reading it carries nothing
        across calls and is not reported. Lists and dicts kept on `self` are guarded on their length and keys:
        a list that compiled code appends to (collected features, a history) recompiles on every call, a dict
        that it adds keys to (a cache keyed by shape) once per new key. A dict stored into at the keys it
        holds (in a loop over the keys of a dict `__init__` built it from, `self.masks = {n: ... for n, p in
        params.items()}` then `for n, p in self.params.items(): self.masks[n] = ...`) gains none and is not
        reported. A dict it stores literal keys into has them all after the first call, so it recompiles only
        the second, and not at all on its own when every loop that calls the compiled entry changes a tensor's
        size at its second iteration: that call recompiles anyway, for the size (measured on torch 2.13). An
        attribute that compiled code creates after testing for it (`if not hasattr(self, "index"):
        self.register_buffer("index", ...)`) is guarded on its absence, and one `__init__` sets to `None` that
        compiled code sets to a tensor (`if self.weight is None: self.weight = ...`) on being `None`: the next
        call recompiles once. A class attribute changed through the class (`Counter.calls += 1`,
        `type(self).seen += 1`, `Registry.names.append(...)`) is one value all instances share, guarded the
        same way (`G['Counter'].calls == 0`): an int or a list recompiles on every call, a float once
        (measured on torch 2.13, for `nn.Module` subclasses and plain classes alike). So is an attribute of an
        object `self` holds (`self.model.num_batches += 1`, `self.config.problem_type = ...` after `if
        self.config.problem_type is None:`), and of an object of a plain class the compiled function is given
        (`state.step += 1` of the `state` each call passes; one every call builds anew carries nothing to the
        next). An attribute that compiled code sets before reading it, in the frame that sets it (a
        submodule's `forward` reading what its parent stored there), carries nothing across calls either. A
        read Dynamo never traces (after a break inside a loop, unless an `if` between the read and the loop
        returns: the calls that take it are compiled) installs no guard, and neither does a frame Dynamo
        enters on its own (compiled directly, or called from code it runs eagerly) that runs no tensor
        operation: Dynamo skips it. The same holds for a frame resumed after a break that runs none: a
        counter bumped in the branch of a tensor condition (`if contact.any(): self.events += 1`) or after a
        `print`, or a dict item stored from `.item()` (`self.stats["mean"] = y.mean().item()`, whose dict is
        read after the value), recompiles nothing (measured on torch 2.13).
    """
    fix = """
        Keep changing state in a tensor buffer updated in place (`self.register_buffer("step",
        torch.zeros((), dtype=torch.long))` and `self.step.add_(1)`), or update the Python attribute
        outside the compiled forward. Return collected tensors instead of appending them to `self`, and
        fill caches in `__init__` or outside the compiled code.
    """
    INVALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.calls = 0

                def forward(self, x):
                    self.calls += 1
                    return self.fc(x) * 2
        """, target="Policy", inputs="[(torch.randn(2, 4),)] * 4", line=11),
        Example("""
            import torch
            import torch.nn as nn

            class Probe(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.activations = []

                def forward(self, x):
                    h = self.fc(x)
                    self.activations.append(h.detach())
                    return h.relu()
        """, target="Probe", inputs="[(torch.randn(2, 4),)] * 4", line=12),
        Example("""
            import torch
            import torch.nn as nn

            class Positions(nn.Module):
                def __init__(self):
                    super().__init__()
                    self._grids = {}

                def forward(self, x):
                    h, w = x.shape[-2:]
                    if (h, w) not in self._grids:
                        self._grids[(h, w)] = torch.stack(torch.meshgrid(
                            torch.arange(h), torch.arange(w), indexing="ij"), 0).float()
                    return x + self._grids[(h, w)].sum(0)
        """, target="Positions", inputs="[(torch.randn(1, 4, 4),)] * 3", line=12),
    ]
    VALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.register_buffer("calls", torch.zeros((), dtype=torch.long))
                    self.summary = ""

                def forward(self, x):
                    self.calls.add_(1)
                    h = self.fc(x)
                    self.summary = f"mean={h.mean():.3f}"
                    return h * 2
        """, target="Policy", inputs="[(torch.randn(2, 4),)] * 4"),
        Example("""
            import torch
            import torch.nn as nn

            class Scaled(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.k = 0

                def forward(self, x):
                    self.k = 1
                    self.k = self.k * 2
                    return x * self.k
        """, target="Scaled", inputs="[(torch.randn(4),)] * 4"),
        Example("""
            import torch
            import torch.nn as nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
                    self.cache = {"scale": torch.ones(4)}

                def forward(self, x):
                    features = []
                    for block in self.blocks:
                        x = block(x)
                        features.append(x)
                    self.cache["scale"] = x.detach().abs().amax(0)
                    return x, features
        """, target="Encoder", inputs="[(torch.randn(2, 4),)] * 4"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        seen: set[tuple[int, str]] = set()
        everything: list[Event] = ctx.program.events
        found = ctx.program.entry_events
        if found is not everything:
            # scope all: what the entry points reach first, as the default scope reports it, then what
            # only the functions analysed for the scope add
            yield from self._check(ctx, found, seen)
        yield from self._check(ctx, everything, seen)

    def _check(self, ctx: RuleContext, found: "Sequence[Event]", seen: set[tuple[int, str]]) -> Iterator[Finding]:
        guardless = guardless_functions(ctx.program, ctx.breaks, ctx.events(CallEvent),
                                        ctx.events(ContextManagerEvent))
        found = [e for e in found if e.function is None or id(e.function) not in guardless]
        events = [e for e in found if isinstance(e, AttributeEvent)]
        # (a read Dynamo never traces installs no guard)
        read = {(id(e.cls), e.name) for e in events if (not e.write or e.augmented) and e.cls is not None
                and (traced_on_early_return(ctx.breaks, e)
                     or not runs_eagerly(ctx.breaks, e) and not ctx.breaks.in_skipped_frame(e))}
        # an attribute the compiled code sets before reading it (`self.mode = x.dtype` then uses) carries
        # nothing across calls: Dynamo reads the value it just stored, no guard on the old one.  Judged in
        # each frame that changes it (a submodule's `forward`, analysed alone too, only reads it)
        first: dict[tuple[int, str], AttributeEvent] = {}
        set_first: dict[tuple[int, str], bool] = {}
        firsts: dict[tuple[tuple[int, str], int], AttributeEvent] = {}
        for e in events:
            if e.cls is not None:
                key = (id(e.cls), e.name)
                first.setdefault(key, e)
                firsts.setdefault((key, ctx.program.unit_of(e)), e)
        for e in events:
            if e.write and e.cls is not None:
                key = (id(e.cls), e.name)
                head = firsts[(key, ctx.program.unit_of(e))]
                set_first[key] = set_first.get(key, True) and head.write and not head.augmented
        read = {key for key in read if not set_first.get(key, False)}
        fresh: dict[int, bool] = {}
        for ev in events:
            if not ev.write or ev.cls is None or (id(ev.cls), ev.name) not in read:
                continue
            if id(ev.cls) not in fresh:
                fresh[id(ev.cls)] = built_only_in_compiled_code(ev.cls, ctx.program.compiled)
            if fresh[id(ev.cls)]:
                continue  # a new object each call: what the call changes on it, no later call reads
            if ev.path and ev.path in ev.function.param_names() \
                    and passed_afresh(ctx.program, ev.function, ev.path):
                continue  # an argument every call builds anew (`step(State(...))`)
            declared = ctx.program.classes.class_attrs(ev.cls).get(ev.name)
            if declared is not None and declared.kind in (Kind.TENSOR, Kind.MODULE):
                continue
            value = ev.value
            # `self.weight = None` in `__init__`, a tensor or module stored by compiled code that reads it first
            # (`if self.weight is None:`): the call after the one that stores it fails the guard on `None`
            lazy = value is not None and value.kind in (Kind.TENSOR, Kind.MODULE) and initially_none(ev.cls, ev.name)
            if value is None or value.kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
                if not (ev.augmented and declared is not None and declared.kind is Kind.PYTHON) and not lazy:
                    continue
            key = (id(ev.cls), ev.name)
            if key in seen:
                continue
            seen.add(key)
            if lazy:
                yield self.finding(
                    ev,
                    f"`self.{ev.name}` is `None` until compiled `{ev.function.name}` sets it, and read there: "
                    "Dynamo guards on it being `None`, so the function recompiles once, at the call after the one "
                    "that sets it.",
                    hint="create it in `__init__` (a buffer, or a lazy module such as `nn.LazyLinear`)",
                )
                continue
            if _float_update(ev.statement):
                how = "once when it first changes (a float then becomes dynamic)"
            elif ev.on_class:
                # `Box.n = Box.n + 1` reads the attribute in the statement that stores it: it changes every call
                reads_itself = any(e.statement is ev.statement and not e.write and e.cls is ev.cls
                                   and e.name == ev.name for e in events)
                how = "on every call" if ev.augmented or reads_itself else "whenever its value changes"
            elif not ev.cls.is_module:
                how = "once when it first changes (a number on an object that is not an nn.Module then " \
                      "becomes dynamic; a new bool or string value recompiles each time)"
            elif ev.augmented:
                how = "on every call"
            else:
                how = "whenever its value changes"
            held = f"`{_written(ev.cls, ev.name, ev.on_class, ev.path)}` is a Python " + \
                ("class attribute" if ev.on_class else "value")
            yield self.finding(
                ev,
                f"{held} changed inside compiled `{ev.function.name}` and read there: "
                f"Dynamo guards on it, so the function recompiles {how}.",
                hint="keep it in a tensor buffer updated in place, or update it outside forward",
            )
        rebound_first = {key for key, e in first.items() if e.write and not e.augmented}
        yield from self._containers(ctx, found, rebound_first, seen)
        yield from self._counted_items(ctx, found, rebound_first, seen)
        yield from self._made_lazily(ctx, found, seen)

    def _made_lazily(self, ctx: RuleContext, found: "Sequence[Event]", seen: set[tuple[int, str]]
                     ) -> Iterator[Finding]:
        """``if not hasattr(self, "index"): self.register_buffer("index", ...)`` in compiled code, for an
        attribute the class does not bind in ``__init__``: Dynamo guards on its absence, and the second call,
        which finds it, recompiles (once)."""
        tests: list[tuple[CallEvent, str]] = []
        made: set[tuple[int, str]] = set()
        for ev in found:
            if isinstance(ev, AttributeEvent) and ev.write and ev.cls is not None:
                made.add((id(ev.cls), ev.name))  # `self.index = ...`
            if not isinstance(ev, CallEvent) or ev.function is None or ev.function.cls is None \
                    or not isinstance(ev.call, cst.Call):
                continue
            if ev.qualname in _ATTRIBUTE_CALLS and len(ev.args) >= 2 and isinstance(ev.args[1].const, str) \
                    and is_self(ev.function, ev.call.args[0].value):
                if ev.qualname == "builtins.setattr":
                    made.add((id(ev.function.cls), ev.args[1].const))
                else:
                    tests.append((ev, ev.args[1].const))
            elif ev.method in _REGISTERING_METHODS and ev.args and isinstance(ev.args[0].const, str) \
                    and isinstance(ev.call.func, cst.Attribute) and is_self(ev.function, ev.call.func.value):
                made.add((id(ev.function.cls), ev.args[0].const))  # `self.register_buffer("index", ...)`
        for ev, name in tests:
            cls = ev.function.cls
            key = (id(cls), name)
            if key in seen or key not in made or name in ctx.program.classes.class_attrs(cls):
                continue
            seen.add(key)
            yield self.finding(
                ev,
                f"`{ctx.code(ev.node)}` tests for an attribute that compiled `{ev.function.name}` creates: Dynamo "
                "guards on its absence, so the call after the one that creates it recompiles.",
                hint="create it in `__init__` (a buffer, or a lazy module such as `nn.LazyLinear`)",
            )

    def _counted_items(self, ctx: RuleContext, found: "Sequence[Event]", rebound_first: set[tuple[int, str]],
                       seen: set[tuple[int, str]]) -> Iterator[Finding]:
        """``self.seen["calls"] += 1``: a Python number kept in a dict or list on ``self`` that compiled code
        changes. Dynamo guards on the item's value (``self.seen['calls'] == 0``), as on an attribute's: an int
        recompiles on every call, a float once (measured on torch 2.13); a tensor item is no guard."""
        changes: list[tuple[Event, cst.CSTNode]] = [
            (sub, sub.node.value) for sub in found
            if isinstance(sub, SubscriptEvent) and sub.store and sub.augmented and isinstance(sub.node, cst.Subscript)]
        for ev, _, cls, attr, through_class in _held_containers(found, changes):
            if _only_eager(ctx, found, cls, attr):
                continue
            declared = _open_container(ctx, cls, attr, seen, rebound_first)
            if declared is None:
                continue
            item = declared.element if declared.is_mapping else declared.elements()
            if item is None or item.kind is not Kind.PYTHON or item.is_bool or item.qualname is not None:
                continue  # tensors, or what the container holds is not known to be numbers
            operand = ev.operand  # type: ignore[attr-defined]
            if operand is None or operand.kind not in (Kind.TENSOR, Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
                continue
            seen.add((id(cls), attr))
            if operand.kind is Kind.TENSOR:
                how = "once, at the call after the first (the item then holds a tensor, which is not guarded " \
                      "by value)"
            elif _float_update(ev.statement):
                how = "once when it first changes (a float then becomes dynamic)"
            else:
                how = "on every call"
            yield self.finding(
                ev,
                f"`{_written(cls, attr, through_class)}` holds Python numbers that compiled `{ev.function.name}` "
                f"changes: Dynamo guards on each, so the function recompiles {how}.",
                hint="keep the counts in a tensor buffer updated in place, or update them outside forward",
            )

    def _containers(self, ctx: RuleContext, found: "Sequence[Event]", rebound_first: set[tuple[int, str]],
                    seen: set[tuple[int, str]]) -> Iterator[Finding]:
        """Lists and dicts on ``self`` that compiled code grows: Dynamo guards on their length and keys."""
        changes: list[tuple[Event, cst.CSTNode]] = []
        for sub in found:
            if isinstance(sub, SubscriptEvent) and sub.store and not sub.augmented \
                    and isinstance(sub.node, cst.Subscript):
                changes.append((sub, sub.node.value))
        for call in found:
            if isinstance(call, CallEvent) and call.method in _RESIZING_METHODS \
                    and isinstance(call.call.func, cst.Attribute):
                changes.append((call, call.call.func.value))
        held = _held_containers(found, changes)
        fresh: dict[int, bool] = {}
        for ev, target, cls, attr, through_class in held:
            if _only_eager(ctx, found, cls, attr):
                continue
            if id(cls) not in fresh:
                fresh[id(cls)] = built_only_in_compiled_code(cls, ctx.program.compiled)
            if not through_class and fresh[id(cls)] and not any(
                    c.callee is ev.function
                    and (runs_eagerly(ctx.breaks, c) or ctx.breaks.in_skipped_frame(c))
                    for c in found if isinstance(c, CallEvent)):
                # a new object each call (`with Recorder() as rec:`), changed where Dynamo inlines the method:
                # no later call reads its lists (a method called from code Dynamo runs eagerly is a frame of
                # its own, guarded on the list's length at each of its calls)
                continue
            declared = _open_container(ctx, cls, attr, seen, rebound_first)
            if declared is None:
                continue
            if declared.is_mapping and not isinstance(ev, SubscriptEvent) and \
                    ev.method not in ("update", "setdefault", "pop", "popitem", "clear"):
                continue
            if isinstance(ev, SubscriptEvent) and (not declared.is_mapping
                                                   or _literal_key(ev.node.slice) in initial_keys(cls, attr)
                                                   or read_before_stored(ev.node, ev.statement)
                                                   or _key_held(ctx, ev, cls, attr, held)):
                continue  # an item of a list, or a key the dict holds already: its length and keys stay
            seen.add((id(cls), attr))
            if declared.is_mapping and _constant_keys(held, cls, attr) \
                    and second_calls_recompile(ctx.program):
                continue  # its keys are all in after the first call, whose successor recompiles anyway
            if declared.is_mapping:
                what = "a dict that it adds keys to: Dynamo guards on its keys, so the function recompiles " \
                       "for every new key"
            else:
                what = "a list whose length it changes: Dynamo guards on the length, so the function " \
                       "recompiles on every call that grows it, and " + RECOMPILE_LIMIT
            yield self.finding(
                ev,
                f"`{_written(cls, attr, through_class)}` is kept across calls of compiled `{ev.function.name}` and "
                f"is {what}.",
                hint="return the values instead, or build the container outside the compiled code",
                node=target,
            )


def _open_container(ctx: RuleContext, cls: "ClassInfo", attr: str, seen: set[tuple[int, str]],
                    rebound_first: set[tuple[int, str]]) -> "Value | None":
    """The list or dict the class keeps in ``attr`` (from ``__init__`` or its body), unless it is reported
    already or compiled code rebinds it before reading it (then nothing carries across calls)."""
    key = (id(cls), attr)
    if key in seen or key in rebound_first:
        return None
    declared = ctx.program.classes.class_attrs(cls).get(attr)
    return declared if declared is not None and (declared.kind is Kind.SEQUENCE or declared.is_mapping) else None


def _only_eager(ctx: RuleContext, found: "Sequence[Event]", cls: "ClassInfo", attr: str) -> bool:
    """Every use of ``self.<attr>`` (of ``cls``) in ``found`` lies in the part of its function Dynamo runs
    eagerly, or in a frame resumed after a break that Dynamo skips: nothing guards the container there
    (measured on torch 2.13: a dict a ``forward`` fills with ``.item()`` values inside its loop, which makes
    Dynamo run it eagerly, recompiles nothing).  Not claimed in a function that calls one that breaks: a graph
    may end inside that call, before the loop, having read the container (the eager part is found from the
    function's own breaks)."""
    uses = [e for e in found if isinstance(e, AttributeEvent) and e.cls is cls and e.name == attr]
    functions = {id(e.function) for e in uses}
    if any(c.callee_broke and id(c.function) in functions for c in ctx.events(CallEvent)):
        return False  # (a break inside a function it calls first may end a graph that reads the container)
    return bool(uses) and all(runs_eagerly(ctx.breaks, e) or ctx.breaks.in_skipped_frame(e) for e in uses)


def _written(cls: "ClassInfo", attr: str, on_class: bool, path: str = "") -> str:
    """How code names the attribute: through the class (``Counter.calls``), an object ``self`` holds
    (``self.model.num_batches``) or the instance (``self.calls``)."""
    return f"{cls.name}.{attr}" if on_class else f"{path or 'self'}.{attr}"


Held = "list[tuple[Event, cst.CSTNode, ClassInfo, str, bool]]"


def _held_containers(found: "Sequence[Event]", changes: "list[tuple[Event, cst.CSTNode]]") -> Held:
    """Each change with the class and attribute of the container it changes: ``self.<attr>`` of the method's
    class, or a class's own container read through the class (``Registry.names.append(...)``); a change of
    anything else is left out."""
    on_class = {id(e.node): e for e in found if isinstance(e, AttributeEvent) and e.on_class and not e.write}
    held = []
    for ev, target in changes:
        shared = on_class.get(id(target))
        cls, attr, through_class = (shared.cls, shared.name, True) if shared is not None else \
            (ev.function.cls, self_attribute(ev.function, target), False)
        if cls is not None and attr is not None:
            held.append((ev, target, cls, attr, through_class))
    return held


def _key_held(ctx: RuleContext, ev: SubscriptEvent, cls: "ClassInfo", attr: str, held: Held) -> bool:
    """``self.<attr>[k] = ...`` at a key ``self.<attr>`` holds already (:func:`stores_at_held_key`), of a dict
    that neither the compiled code (``held``) nor the module's other code gives a key (measured on torch 2.13:
    masks made in ``__init__`` for every parameter name and overwritten in a compiled loop over the parameters
    recompile nothing)."""
    changed = {name for _, _, owner, name, _ in held if owner is cls and name != attr}
    changed |= set(ctx.program.index.attr_changes_outside)
    return stores_at_held_key(ev.function, ev.node, cls, attr, changed)


def _constant_keys(held: Held, cls: object, attr: str) -> bool:
    """Every change of ``self.<attr>`` in ``held`` stores at a literal key (``self.stats["frac"] = v``):
    the dict has all its keys after the first call."""
    return all(isinstance(ev, SubscriptEvent) and _literal_key(ev.node.slice) is not _NO_KEY
               for ev, _, owner, name, _ in held if owner is cls and name == attr)


#: The builtins that test for an attribute by name, or set one.
_ATTRIBUTE_CALLS = frozenset({"builtins.hasattr", "builtins.setattr"})
#: ``nn.Module`` methods that create an attribute named by their first argument.
_REGISTERING_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})


#: List and dict methods that change the length or the keys of the container.
_RESIZING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
                               "setdefault"})


_NO_KEY = object()


def _literal_key(index: "Sequence[cst.SubscriptElement]") -> object:
    """The constant of a one-element subscript written as a literal (``d["scale"]``), else a sentinel."""
    if len(index) == 1 and isinstance(index[0].slice, cst.Index) and \
            isinstance(index[0].slice.value, (cst.SimpleString, cst.Integer)):
        return index[0].slice.value.evaluated_value
    return _NO_KEY


def _float_update(statement: cst.CSTNode) -> bool:
    """``self.x *= 0.5``, ``self.x = 1e-3``, ``self.x /= n``: the attribute holds a float."""
    if isinstance(statement, cst.AugAssign):
        return isinstance(statement.value, cst.Float) or isinstance(statement.operator, cst.DivideAssign)
    if isinstance(statement, cst.Assign):
        return isinstance(statement.value, cst.Float) or (
            isinstance(statement.value, cst.BinaryOperation) and isinstance(statement.value.operator, cst.Divide))
    return False
