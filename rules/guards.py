"""DYN2xx: state that Dynamo guards on and that changes between calls (recompiles)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis.events import (
    AttributeEvent,
    CallEvent,
    ConditionEvent,
    ContainmentEvent,
    Event,
    ForLoopEvent,
    GlobalReadEvent,
    ScalarUseEvent,
    SubscriptEvent,
)
from dynalint.analysis.syntax import children, simple_statements, walk
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.scalars import scalar_extraction
from dynalint.rules.unsupported_calls import VALUE_PRODUCING, unsupported_call

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from dynalint.analysis.module_index import ClassInfo, FunctionInfo

_LIMIT = "after 8 recompiles (torch 2.13's recompile_limit) Dynamo stops compiling it and runs eagerly"


def _compiled_ids(ctx: RuleContext) -> set[int]:
    return {id(fn) for fn in ctx.program.compiled}


@register
class MutableGlobalRead(Rule):
    code = "DYN201"
    name = "mutable-global-read"
    kind = "recompile"
    summary = "Compiled code reads a module-level global that the module rebinds or mutates."
    rationale = """
        Dynamo bakes the values of globals into the graph and guards on them. When a global is rebound
        (`global rate; rate = ...`) or mutated (`+=`, `.append`, `[k] = ...`) between calls, the guard
        fails and the function recompiles: a float changes once and then becomes dynamic, but a list
        whose length changes recompiles on every call, and """ + _LIMIT + """.
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
        """, target="residual", inputs="[(torch.randn(4),)] * 3", between_calls="set_drop_rate(0.1 * i)"),
        Example("""
            import torch

            step = 0

            @torch.compile
            def warmup(x):
                global step
                step += 1
                return x * min(1.0, step / 100)
        """, inputs="[(torch.randn(4),)] * 3"),
    ]
    VALID = [
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
        for ev in ctx.events(GlobalReadEvent):
            if ev.name not in mutated or ev.value is None or ev.value.kind is Kind.FUNCTION:
                continue
            key = (id(ev.function), ev.name)
            if key in seen:
                continue
            seen.add(key)
            where = mutated[ev.name][1]
            yield self.finding(
                ev,
                f"`{ev.name}` is a global that `{where.name}()` rebinds or mutates: Dynamo guards on its value, "
                f"so every change recompiles `{ev.function.name}`.",
                hint="pass it as an argument or store it on the module outside forward",
            )


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
            between_calls='os.environ["UPCAST"] = "1" if i % 2 else "0"'),
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


@register
class AttributeMutatedInForward(Rule):
    code = "DYN203"
    name = "python-attribute-mutation"
    kind = "recompile"
    summary = "A Python number/flag on `self` is changed inside compiled code and read there, or a list/dict on `self` is changed there: it recompiles when it changes."
    rationale = """
        Dynamo treats Python attributes of modules (ints, floats, bools, strings) as constants of the
        graph and guards on them. Changing one inside `forward` - a step counter, a decaying epsilon, a
        mode flag - makes the guard fail on the next call. An int counter (`self.step += 1`) on an
        `nn.Module` recompiles on every call, and """ + _LIMIT + """. A float, or a number on an object
        that is not an `nn.Module`, recompiles once when it first changes and is then treated as
        dynamic (measured on torch 2.13). An attribute that `forward` sets before reading it carries
        nothing across calls and is not reported. Lists and dicts kept on `self` are guarded on their
        length and keys: a list that compiled code appends to (collected features, a history) recompiles
        on every call, a dict that it adds keys to (a cache keyed by shape) once per new key.
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
        """, target="Policy", inputs="[(torch.randn(2, 4),)] * 4"),
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
        """, target="Probe", inputs="[(torch.randn(2, 4),)] * 4"),
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
        """, target="Positions", inputs="[(torch.randn(1, 4, 4),)] * 3"),
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
        events = ctx.events(AttributeEvent)
        read = {(id(e.cls), e.name) for e in events if (not e.write or e.augmented) and e.cls is not None}
        # an attribute the compiled code sets before reading it (`self.mode = x.dtype` then uses) carries
        # nothing across calls: Dynamo reads the value it just stored, no guard on the old one
        first: dict[tuple[int, str], AttributeEvent] = {}
        for e in events:
            if e.cls is not None:
                first.setdefault((id(e.cls), e.name), e)
        read = {key for key in read if not (first[key].write and not first[key].augmented)}
        seen: set[tuple[int, str]] = set()
        for ev in events:
            if not ev.write or ev.cls is None or (id(ev.cls), ev.name) not in read:
                continue
            declared = ctx.program.class_attrs(ev.cls).get(ev.name)
            if declared is not None and declared.kind in (Kind.TENSOR, Kind.MODULE):
                continue
            value = ev.value
            if value is None or value.kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
                if not (ev.augmented and declared is not None and declared.kind is Kind.PYTHON):
                    continue
            key = (id(ev.cls), ev.name)
            if key in seen:
                continue
            seen.add(key)
            if _float_update(ev.statement):
                how = "once when it first changes (a float then becomes dynamic)"
            elif not ev.cls.is_module:
                how = "once when it first changes (a number on an object that is not an nn.Module then " \
                      "becomes dynamic; a new bool or string value recompiles each time)"
            elif ev.augmented:
                how = "on every call"
            else:
                how = "whenever its value changes"
            yield self.finding(
                ev,
                f"`self.{ev.name}` is a Python value changed inside compiled `{ev.function.name}` and read there: "
                f"Dynamo guards on it, so the function recompiles {how}.",
                hint="keep it in a tensor buffer updated in place, or update it outside forward",
            )
        rebound_first = {key for key, e in first.items() if e.write and not e.augmented}
        yield from self._containers(ctx, rebound_first, seen)

    def _containers(self, ctx: RuleContext, rebound_first: set[tuple[int, str]],
                    seen: set[tuple[int, str]]) -> Iterator[Finding]:
        """Lists and dicts on ``self`` that compiled code grows: Dynamo guards on their length and keys."""
        changes: list[tuple[Event, cst.CSTNode]] = []
        for sub in ctx.events(SubscriptEvent):
            if sub.store and not sub.augmented and isinstance(sub.node, cst.Subscript):
                changes.append((sub, sub.node.value))
        for call in ctx.events(CallEvent):
            if call.method in _RESIZING_METHODS and isinstance(call.call.func, cst.Attribute):
                changes.append((call, call.call.func.value))
        for ev, target in changes:
            cls, attr = ev.function.cls, _self_attribute(ev.function, target)
            if cls is None or attr is None:
                continue
            key = (id(cls), attr)
            if key in seen or key in rebound_first:
                continue
            declared = ctx.program.class_attrs(cls).get(attr)
            if declared is None or not (declared.kind is Kind.SEQUENCE or declared.is_mapping):
                continue
            if declared.is_mapping and not isinstance(ev, SubscriptEvent) and \
                    ev.method not in ("update", "setdefault", "pop", "popitem", "clear"):
                continue
            if isinstance(ev, SubscriptEvent) and (not declared.is_mapping
                                                   or _literal_key(ev.node.slice) in _initial_keys(cls, attr)):
                continue  # an item of a list, or a key the dict was created with: its length and keys stay
            seen.add(key)
            if declared.is_mapping:
                what = "a dict that it adds keys to: Dynamo guards on its keys, so the function recompiles " \
                       "for every new key"
            else:
                what = "a list whose length it changes: Dynamo guards on the length, so the function " \
                       "recompiles on every call that grows it, and " + _LIMIT
            yield self.finding(
                ev,
                f"`self.{attr}` is kept across calls of compiled `{ev.function.name}` and is {what}.",
                hint="return the values instead, or build the container outside the compiled code",
                node=target,
            )


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


def _initial_keys(cls: "ClassInfo", attr: str) -> set[object]:
    """The literal keys of the dict display ``__init__`` assigns to ``self.<attr>`` (``{"scale": ...}``)."""
    init = cls.methods.get("__init__")
    if init is None:
        return set()
    keys: set[object] = set()
    for node in walk(init.node.body, into_scopes=False):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Dict) and any(
                _self_attribute(init, t.target) == attr for t in node.targets):
            for el in node.value.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, (cst.SimpleString, cst.Integer)):
                    keys.add(el.key.evaluated_value)
    return keys


def _self_attribute(function: "FunctionInfo", node: cst.CSTNode) -> str | None:
    """``x`` when ``node`` is ``self.x`` in a method whose first parameter is ``self``."""
    if function.cls is None or function.is_static or not isinstance(node, cst.Attribute):
        return None
    names = function.param_names()
    if not names or not isinstance(node.value, cst.Name) or node.value.value != names[0]:
        return None
    return node.attr.value


def _float_update(statement: cst.CSTNode) -> bool:
    """``self.x *= 0.5``, ``self.x = 1e-3``, ``self.x /= n``: the attribute holds a float."""
    if isinstance(statement, cst.AugAssign):
        return isinstance(statement.value, cst.Float) or isinstance(statement.operator, cst.DivideAssign)
    if isinstance(statement, cst.Assign):
        return isinstance(statement.value, cst.Float) or (
            isinstance(statement.value, cst.BinaryOperation) and isinstance(statement.value.operator, cst.Divide))
    return False


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
        recompiles for every new value), and """ + _LIMIT + """. A value that is only returned is not guarded, nor
        one whose resumed frame Dynamo does not compile: nothing after the break runs a tensor operation,
        a traced call or another break (a frame without a graph is skipped), or a break inside a later
        loop makes Dynamo run the whole resumed frame eagerly. Values
        computed only from parameters and buffers (constant between optimizer steps) and booleans (at most
        one extra graph) are not reported; a buffer that the module updates in place (a step counter,
        running statistics) changes every call and is reported. With `capture_scalar_outputs` the extraction stays in the graph, but a
        `range()` sized by it still recompiles for every new value.
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
        """, inputs="[(torch.randn(3),), (torch.randn(3),)]"),
        Example("""
            import torch

            @torch.compile
            def normalize(x):
                scale = x.abs().max().item()
                return x / scale
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
                    return logits.log_softmax(-1)
        """, target="Classifier", inputs="[(torch.randn(2, 4),), (torch.randn(2, 4),), (torch.randn(2, 4),)]"),
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
        """, target="CumulativeMean", inputs="[(torch.randn(2, 4),)] * 3"),
        Example("""
            import torch

            @torch.compile
            def trim(x, lengths):
                longest = int(lengths.max())
                return x[:, :longest] * 2
        """, inputs="[(torch.randn(2, 6), torch.tensor([5, 3])), (torch.randn(2, 6), torch.tensor([4, 2]))]"),
        Example("""
            import torch

            @torch.compile
            def report(logits, target):
                loss = torch.nn.functional.cross_entropy(logits, target)
                acc = (logits.argmax(-1) == target).float().mean()
                return {"loss": loss.item(), "acc": acc.item()}
        """, inputs="[(torch.randn(4, 3), torch.tensor([0, 1, 2, 0])) for _ in range(3)]"),
    ]
    VALID = [
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
        capture = ctx.settings.capture_scalar_outputs
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
            breaks = scalar_extraction(origin, capture) is not None or (
                origin.qualname in VALUE_PRODUCING and unsupported_call(origin, ctx) is not None
            ) or (origin.qualname is not None and origin.qualname.startswith("numpy.random."))
            if not breaks and not (capture and use.context == "range"):
                continue
            if breaks and not (capture and use.context == "range") and not _resumed_frame_compiles(origin, ctx):
                continue
            seen.add(id(v.origin))
            source = ctx.code(v.origin)
            if use.context == "range":
                detail = "it sizes a range(), so the loop is unrolled for that value and recompiles for every new one"
            else:
                detail = "the code after the break is specialised on it and recompiles once when it first " \
                         "changes (the number is then dynamic)"
            used = ctx.code(use.node)
            made = "taken from tensor data" if scalar_extraction(origin, False) is not None \
                else "made by a skipped call"
            what = f"`{used}` is a Python value from `{source}`, {made}" if used != source else \
                f"`{source}` is a Python value {made}"
            yield self.finding(
                use,
                f"{what} at a graph break: {detail}.",
                hint="keep it a tensor (no .item()), or enable capture_scalar_outputs",
            )
        yield from self._pending_at_next_break(ctx, seen)

    def _pending_at_next_break(self, ctx: RuleContext, seen: set[int]) -> Iterator[Finding]:
        """A value still on the stack when a later break of the same statement ends the graph
        (``{"loss": loss.item(), "acc": acc.item()}``) is an input of the frame that resumes there,
        and Dynamo guards on it - even though it is only returned."""
        capture = ctx.settings.capture_scalar_outputs
        breaking: dict[int, list[CallEvent]] = {}
        for call in ctx.events(CallEvent):
            if not call.in_loop and (scalar_extraction(call, capture) is not None
                                     or unsupported_call(call, ctx) is not None):
                breaking.setdefault(id(call.statement), []).append(call)
        for calls in breaking.values():
            by_node = {id(c.node): c for c in calls}
            if len(by_node) < 2:
                continue
            order = [by_node[id(n)] for n in walk(calls[0].statement, into_scopes=False) if id(n) in by_node]
            for i, origin in enumerate(order):
                v = origin.result
                if id(origin.node) in seen or v is None or v.kind is not Kind.SCALAR or v.is_bool or v.from_weights:
                    continue
                inside = {id(n) for n in walk(origin.node)}
                later = next((c for c in order[i + 1:] if id(c.node) not in inside), None)
                if later is None:
                    continue
                seen.add(id(origin.node))
                yield self.finding(
                    origin,
                    f"`{ctx.code(origin.node)}` is a Python value taken from tensor data and still pending when "
                    f"`{ctx.code(later.node)}` breaks the graph again: the resumed code is specialised on it "
                    "and recompiles once when it first changes (the number is then dynamic).",
                    hint="keep it a tensor (no .item()), or take the values in separate statements",
                )


def _code_after(function: cst.CSTNode, statement: cst.CSTNode) -> list[cst.CSTNode]:
    """What runs after a break in ``statement``: the statement itself (the rest of it, or the blocks of a
    compound statement whose header breaks) and every statement that follows it in the enclosing blocks."""
    out: list[cst.CSTNode] = []

    def search(node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            statements = simple_statements(node)
            for i, stmt in enumerate(statements):
                if stmt is statement or search(stmt):
                    if stmt is statement:
                        out.append(stmt)
                    out.extend(statements[i + 1:])
                    return True
            return False
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        return any(search(child) for child in children(node))

    if isinstance(function, cst.FunctionDef):
        search(function.body)
    return out


_OPERATORS = (cst.BinaryOperation, cst.Comparison, cst.AugAssign, cst.BooleanOperation)


def _breaks(ev: Event, ctx: RuleContext) -> bool:
    if isinstance(ev, ConditionEvent):
        return ev.value is not None and ev.value.is_tensor
    if isinstance(ev, CallEvent):
        return scalar_extraction(ev, ctx.settings.capture_scalar_outputs) is not None \
            or unsupported_call(ev, ctx) is not None
    return False


def _works(ev: Event, ctx: RuleContext) -> bool:
    """The event is something Dynamo compiles (a tensor operation, a call it may trace, a break)."""
    if _breaks(ev, ctx):
        return True
    if isinstance(ev, CallEvent):
        if ev.callee is not None or ev.module is not None:
            return True
        if ev.result is not None and ev.result.kind in (Kind.TENSOR, Kind.MODULE):
            return True
        if ev.receiver is not None and ev.receiver.kind is Kind.PYTHON:
            return False  # a method of a str/list/dict: no graph operation of its own
        if ev.qualname is None or not ev.qualname.startswith("builtins."):
            return True
        return any(v.kind in (Kind.TENSOR, Kind.MODULE, Kind.SEQUENCE, Kind.UNKNOWN)
                   for v in (*ev.args, *ev.kwargs.values()))
    if isinstance(ev, SubscriptEvent):
        return ev.base is not None and ev.base.kind is Kind.TENSOR
    if isinstance(ev, ForLoopEvent):
        return ev.iterable is not None and ev.iterable.kind is Kind.TENSOR
    return False


def _resumed_frame_compiles(origin: CallEvent, ctx: RuleContext) -> bool:
    """Whether Dynamo compiles the frame that resumes after the break at ``origin`` (and so guards on the
    Python value it receives). It does not when nothing after the break is compiled - no tensor operation,
    traced call or further break: Dynamo skips a frame without a graph (measured on torch 2.13) - nor when a
    graph break inside a loop after it makes Dynamo run the whole resumed frame eagerly. Unsure code counts
    as compiled."""
    after = _code_after(origin.function.node, origin.statement)
    if not after:
        return True
    skip = {id(n) for n in walk(origin.node)}
    region = {id(n) for stmt in after for n in walk(stmt, into_scopes=False)} - skip
    if any(isinstance(n, _OPERATORS) for stmt in after for n in walk(stmt, into_scopes=False) if id(n) in region):
        operators = True
    else:
        operators = False
    works = operators
    for ev_type in (CallEvent, SubscriptEvent, ConditionEvent, ForLoopEvent):
        for ev in ctx.events(ev_type):
            if ev.function is not origin.function or id(ev.node) not in region:
                continue
            if ev.in_loop and _breaks(ev, ctx):
                return False
            works = works or _works(ev, ctx)
    return works


@register
class ExternallySetAttribute(Rule):
    code = "DYN205"
    name = "python-attribute-set-outside"
    kind = "recompile"
    summary = "Compiled code reads a Python attribute that other code in the module sets to new values."
    rationale = """
        A Python flag or number on a module (`self.use_cache`, `self.temperature`) is a constant of the
        compiled graph, guarded by Dynamo. When a setter, another method or a training loop in the same
        file assigns it a different value, the next call fails the guard and recompiles (and after 8
        distinct values Dynamo falls back to eager).
    """
    fix = """
        Pass the value to `forward` as a tensor (so it becomes a graph input), or keep one compiled
        module per configuration; if the value changes only rarely, this is expected and can be
        silenced with `# noqa: DYN205`.
    """
    INVALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Proj(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.k = nn.Linear(4, 4)
                    self.use_cache = False

                def forward(self, x):
                    k = self.k(x)
                    if self.use_cache:
                        k = k * 0.5
                    return k

            def enable_cache(model, flag):
                model.use_cache = flag
        """, target="Proj", inputs="[(torch.randn(2, 4),)] * 3",
            between_calls="enable_cache(_instance, i >= 1)"),
    ]
    VALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Proj(nn.Module):
                def __init__(self, use_cache=False):
                    super().__init__()
                    self.k = nn.Linear(4, 4)
                    self.use_cache = use_cache

                def forward(self, x):
                    k = self.k(x)
                    if self.use_cache:
                        k = k * 0.5
                    return k
        """, target="Proj", inputs="[(torch.randn(2, 4),)] * 3"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        writes = ctx.program.index.attr_writes_outside
        compiled = _compiled_ids(ctx)
        seen: set[tuple[int, str]] = set()
        for ev in ctx.events(AttributeEvent):
            if ev.write or ev.cls is None or ev.name not in writes or ev.name == "training":
                continue
            declared = ctx.program.class_attrs(ev.cls).get(ev.name)
            if declared is None or declared.kind is not Kind.PYTHON:
                continue
            setters = [fn for _, fn in writes[ev.name] if fn is None or id(fn) not in compiled]
            if not setters:
                continue
            key = (id(ev.cls), ev.name)
            if key in seen:
                continue
            seen.add(key)
            where = next((f"`{fn.name}()`" for fn in setters if fn is not None), "module-level code")
            yield self.finding(
                ev,
                f"`self.{ev.name}` is a Python value that {where} sets from outside compiled code: Dynamo "
                f"guards on it, so each new value recompiles `{ev.function.name}`.",
                hint="pass it as a tensor argument, or keep one compiled module per setting",
            )


@register
class ArgumentVaries(Rule):
    code = "DYN206"
    name = "python-argument-varies"
    kind = "recompile"
    summary = "Callers in the file pass different Python values (True/False, 0.5/1.0, 'a'/'b') to a compiled entry point."
    rationale = """
        Dynamo specialises a compiled function on the Python values of its arguments and guards on
        them. When callers pass different literal values for the same parameter - `model(x, True)` in
        one place and `model(x, False)` in another, or changing temperatures - each new value fails the
        guard and recompiles: a bool compiles one graph per value, an int or float recompiles once and
        is then treated as dynamic, and a string recompiles for every new value.
    """
    fix = """
        Pass values that change as tensors (they become graph inputs), split the entry point into one
        function per mode, or accept the (bounded) extra graphs and silence with `# noqa: DYN206`.
    """
    INVALID = [
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                hot = head(x, 1.0)
                cold = head(x, 0.5)
                return hot, cold
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False),
    ]
    VALID = [
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                return head(x, 1.0), head(x * 2, 1.0)
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        program = ctx.program
        idx = program.index
        compiled = _compiled_ids(ctx)
        instances: dict[int, dict[str, str]] | None = None
        for fn in program.compiled:
            entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
            if not entry:
                continue
            params = list(fn.node.params.params)
            if fn.is_method:
                params = params[1:]
            if fn.cls is None:
                calls = idx.call_sites.get(fn.name, ())
            else:
                if instances is None:
                    instances = _instances_by_caller(idx, compiled)
                calls = [(call, caller) for sites in idx.call_sites.values() for call, caller in sites
                         if caller is not None and isinstance(call.func, cst.Name)
                         and instances.get(id(caller), {}).get(call.func.value) == fn.cls.name]
            values: dict[str, set] = {}
            for call, caller in calls:
                if caller is not None and id(caller) in compiled:
                    continue  # inlined into the caller's graph: no recompile
                for name, const in _literal_arguments(call, params):
                    values.setdefault(name, set()).add((type(const).__name__, const))
            for prm in params:
                seen = values.get(prm.name.value, set())
                if len(seen) < 2:
                    continue
                shown = ", ".join(repr(v) for _, v in sorted(seen, key=repr))
                kinds = {t for t, _ in seen}
                if kinds == {"bool"}:
                    effect = "so it compiles one graph per value"
                elif "str" in kinds or "NoneType" in kinds:
                    effect = "so each new value recompiles it"
                else:  # numbers: one recompile, then the parameter is dynamic (measured on torch 2.13)
                    effect = "so the second value recompiles it (numbers are then treated as dynamic)"
                yield Finding(rule=type(self), node=prm.name, statement=fn.node,
                              message=f"callers in this file pass `{prm.name.value}` as {shown}: Dynamo "
                                      f"specialises `{fn.name}` on Python arguments, {effect}.",
                              hint="pass the value as a tensor, or split the entry point per mode")


def _instances_by_caller(idx, compiled: set[int]) -> dict[int, dict[str, str]]:
    """For each function that is not compiled: local names bound to ``ClassName(...)`` of this file."""
    from dynalint.analysis.syntax import walk

    out: dict[int, dict[str, str]] = {}
    for fn in idx.all_functions:
        if id(fn) in compiled:
            continue
        bound: dict[str, str] = {}
        for n in walk(fn.node.body):
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) \
                    and n.value.func.value in idx.classes:
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        bound[t.target.value] = n.value.func.value
        if bound:
            out[id(fn)] = bound
    return out


def _literal_arguments(call: cst.Call, params):
    names = [p.name.value for p in params]
    position = 0
    for arg in call.args:
        if arg.star:
            return
        const = _literal(arg.value)
        if arg.keyword is not None:
            if const is not _NOT_LITERAL and arg.keyword.value in names:
                yield arg.keyword.value, const
            continue
        if position < len(names) and const is not _NOT_LITERAL:
            yield names[position], const
        position += 1


_NOT_LITERAL = object()


def _literal(node: cst.BaseExpression):
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return node.evaluated_value
        except Exception:
            return _NOT_LITERAL
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -node.expression.evaluated_value
    return _NOT_LITERAL
