"""DYN205: compiled code reads a Python attribute that other code sets."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from dynalint.analysis.class_state import is_self
from dynalint.analysis.compiled_instances import InstancesApart, instances_apart
from dynalint.analysis.events import AttributeEvent, ObjectAttributeReadEvent
from dynalint.analysis.entry_arguments import (grad_mode_differs, grad_mode_flips, only_printed,
                                               set_with_size_change, site_label)
from dynalint.analysis.in_place_changes import key_read
from dynalint.analysis.mode_flips import mode_flips
from dynalint.analysis.module_index import (may_run_between_calls, related, store_receivers,
                                            stores_loop_constants, stores_on_own_object, stores_on_self,
                                            unseen_by_compiled_code)
from dynalint.analysis.resume_paths import runs_eagerly, traced_on_early_return
from dynalint.analysis.syntax import NOT_LITERAL, literal_constant
from dynalint.analysis.values import Kind
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class PythonAttributeSetOutside(Rule):
    code = "DYN205"
    name = "python-attribute-set-outside"
    kind = "recompile"
    summary = ("Compiled code reads a Python attribute that other code in the module sets to new values, or "
               "`self.training` that `.train()`/`.eval()` flips between two calls.")
    rationale = """
        A Python flag or number on a module (`self.use_cache`, `self.temperature`) is a constant of the
        compiled graph, guarded by Dynamo. When a setter, another method or a training loop in the same
        file (a script's own statements too, after a compiled call: before the first one they configure
        what is compiled, once) assigns it a different value, the next call fails the guard and
        recompiles (and after 8 distinct values Dynamo falls back to eager). So does an attribute of an
        object of a class of the checked code that compiled code is handed (a config dataclass the callers
        pass, `cfg.loss`) when other code sets it between calls. A float that a setter method changes in a
        loop only at the iteration where a tensor passed to the compiled module first changes size (made
        there by `torch.randn(2, seq, 4)`-like factories of sizes the loop is known to take) adds no
        recompile of its own: Dynamo recompiles once for both and makes both dynamic (an int attribute
        of a module stays static and still recompiles at each new value). A list, dict, set or deque held
        in an attribute is guarded on its length (a dict's keys) and on the elements compiled code reads:
        code that changes it in place between calls (`m.skip.append(1)`, `m.hp["temperature"] = 2.0`)
        recompiles it too. The object may be read through a local name (`cfg = self.cfg`, then
        `cfg.gamma`: Dynamo guards `self.cfg.gamma`), set by a function of the script that built it and
        calls the compiled module before and after the change, or be a submodule's float the script sets to
        each constant a loop steps through (`m.sc.s = s`); a call of an instance whose `__call__` runs
        compiled code (`p(x)`) is a compiled call. Another instance of one module class built alike
        (`self.cache = Cache()` before each generation) is guarded on its class and what it holds, not on
        which instance it is: it recompiles nothing (measured).

        `.train()` and `.eval()` set `self.training` on the module and its submodules. A function (or a
        script's own statements, its `__main__` block) that calls a compiled module, switches its mode and
        calls it again recompiles it once, when its
        `forward` reads the flag: directly (`if self.training:`, `F.dropout(x, training=self.training)`)
        or through a submodule that does (dropout, batch and instance norm, multi-head attention, the
        transformer layers). Both graphs stay cached, so switching back and forth costs nothing more. A
        module without such a read (linear and convolution layers, layer and group norm) does not
        recompile. A switch of mode made together with one of grad mode (`model.eval()`, then a call under
        `torch.no_grad()`) is one recompile, which DYN208 reports (all measured on torch 2.13).

        Instances of one class compiled one by one (`torch.compile(Scaled(1.0))` and
        `torch.compile(Scaled(3.0))`, or `torch.compile(integ.step)` for each `integ` a loop builds) share the
        compiled code of the method they run: Dynamo keeps one cache per code object. An attribute their
        `__init__` stores from a parameter the constructions pass other constants to, read by that method,
        recompiles it for the next instance (a float once, then it is dynamic; an int of an `nn.Module` at
        each new value; a flag once for each value). A read after a break Dynamo does not resume from (in a
        loop, at an `nn.LSTM`) is never traced and guards nothing.
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
            between_calls="enable_cache(_instance, i >= 1)", line=12),
        Example("""
            import torch
            import torch.nn as nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.drop = nn.Dropout(0.1)

                def forward(self, x):
                    return self.drop(self.fc(x))

            def fit(x):
                model = torch.compile(Head())
                loss = model(x).sum()
                model.eval()
                return loss, model(x)
        """, target="fit", inputs="[(torch.randn(2, 4),)]", compile_target=False, line=10),
        Example("""
            import torch
            import torch.nn as nn

            class Stack(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
                    self.skip = []

                def forward(self, x):
                    for i, layer in enumerate(self.layers):
                        if i not in self.skip:
                            x = layer(x)
                    return x

            def skip_layer(model, i):
                model.skip.append(i)
        """, target="Stack", inputs="[(torch.randn(2, 4),)] * 3",
            between_calls="skip_layer(_instance, i)", line=12),
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
        Example("""
            import torch
            import torch.nn as nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.norm = nn.LayerNorm(4)

                def forward(self, x):
                    return self.norm(self.fc(x))

            def fit(x):
                model = torch.compile(Head())
                loss = model(x).sum()
                model.eval()
                return loss, model(x)
        """, target="fit", inputs="[(torch.randn(2, 4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        writes = ctx.program.index.attr_writes_outside
        compiled = {id(fn) for fn in ctx.program.entry_compiled}
        seen: set[tuple[int, str]] = set()
        setters_of: dict[tuple[int, str], list] = {}  # (the setters depend on the class and the name only)
        reads = [*ctx.events(AttributeEvent), *ctx.events(ObjectAttributeReadEvent)]
        for ev in reads:
            of_self = isinstance(ev, AttributeEvent)
            if of_self and (ev.write or ev.on_class) or ev.cls is None or ev.name not in writes \
                    or ev.name == "training":
                continue
            declared = ctx.program.classes.class_attrs(ev.cls).get(ev.name)
            # (a number taken from tensor data, `self.alpha = log_alpha.exp().item()`, is a Python number too)
            if declared is None or declared.kind not in (Kind.PYTHON, Kind.SCALAR, Kind.UNKNOWN) \
                    or only_printed(ctx.program, ev):
                continue
            if (runs_eagerly(ctx.breaks, ev) and not traced_on_early_return(ctx.breaks, ev)) \
                    or ctx.breaks.in_skipped_frame(ev):
                continue  # a read Dynamo never traces (after a break it cannot resume from) installs no guard
            key = (id(ev.cls), ev.name)
            if key not in setters_of:
                setters_of[key] = [
                    (stmt, fn) for stmt, fn in writes[ev.name] if (fn is None or id(fn) not in compiled)
                    and not (fn is None and _on_other_objects(ctx, stmt, ev.name))
                    and not (stores_on_self(stmt, fn, ev.name)
                             and not related(fn.cls, ev.cls))  # type: ignore[union-attr]
                    and (fn is None or may_run_between_calls(fn.owner or ctx.program.index, fn))]
            if declared.kind is Kind.UNKNOWN and not any(
                    _stores_literal(stmt, ev.name) and (fn is None or stores_on_self(stmt, fn, ev.name))
                    or fn is None and stores_loop_constants(ctx.program.index, stmt)
                    for stmt, fn in setters_of[key]):
                # (what `__init__` stored is not known: a Python value only where the script's own statements
                # store a literal, `opts.top_k = 3`, or constants a loop steps through, `for s in (1.0, 0.5):
                # m.sc.s = s`, or a method of the class on the instance; another object's `config.num_labels =
                # 1` says nothing of this one)
                continue
            if _one_new_module(ctx, [stmt for stmt, _ in setters_of[key]], ev.name):
                continue  # (another instance of one module class: guarded on its class and what it holds)
            setters = [fn for _, fn in setters_of[key]]
            if of_self and ev.path:
                # an object `self` holds (`self.cfg.rule`): only a script's own statements are known to change
                # that object (a function's `cfg.rule = ...` may be on a copy: `copy.deepcopy(config)`), or a
                # function that built it and handed it to a construction itself (`cfg = Cfg()`, `Block(4, cfg)`)
                setters = [fn for stmt, fn in setters_of[key]
                           if fn is None or fn.cls is None and stores_on_own_object(stmt, fn, ev.name)]
            if not setters:
                continue
            if None not in setters and ev.function.cls is not None and ev.function.cls.is_module \
                    and set_with_size_change(ctx.program, setters, ev.name):  # type: ignore[arg-type]
                continue  # each change comes with a size change that recompiles anyway
            if key in seen:
                continue
            seen.add(key)
            where = next((f"`{fn.name}()`" for fn in setters if fn is not None), "module-level code")
            read = f"self.{ev.name}" if of_self and not ev.path else ctx.code(ev.node)
            yield self.finding(
                ev,
                f"`{read}` is a Python value that {where} sets from outside compiled code: Dynamo "
                f"guards on it, so each new value recompiles `{ev.function.name}`.",
                hint="pass it as a tensor argument, or keep one compiled module per setting",
            )
        yield from self._changed_in_place(ctx, reads, compiled, seen)
        for apart in instances_apart(ctx.program):
            if (id(apart.cls), apart.attribute) in seen:
                continue
            seen.add((id(apart.cls), apart.attribute))
            shown = ", ".join(f"`{v!r}`" for v in apart.values[:3]) + (", …" if len(apart.values) > 3 else "")
            yield Finding(
                rule=type(self), node=apart.read, statement=apart.method.node,
                message=f"`self.{apart.attribute}` is {shown} in the instances of `{apart.cls.name}` "
                        f"compiled one by one (built at `{ctx.code(apart.built)}`): they share the compiled "
                        f"code of `{apart.method.name}`, and Dynamo guards on the value, so "
                        f"{_instances_effect(apart)}.",
                hint="pass it as an argument (a tensor if it is a number), or compile the code that holds "
                     "all the instances once",
            )
        grad_flipped: set[int] | None = None  # (found when a mode flip asks: most modules have none)
        for flip in mode_flips(ctx.program):
            forward = flip.cls.methods["forward"]
            if grad_mode_differs(flip.owner, flip.caller, flip.before, flip.after):
                if grad_flipped is None:
                    grad_flipped = {id(fn) for fn, _, _ in grad_mode_flips(ctx.program)}
                if id(forward) in grad_flipped:
                    continue  # one recompile for both the mode and the grad mode, which DYN208 reports
            before, switch, after = (site_label(ctx.program, flip.owner, n, flip.caller)
                                     for n in (flip.before, flip.switch, flip.after))
            modes = ("evaluation", "training") if flip.mode else ("training", "evaluation")
            yield Finding(
                rule=type(self), node=forward.node.name, statement=forward.node,
                message=f"a `{flip.cls.name}` is called in {modes[0]} mode, then switched to {modes[1]} mode and "
                        f"called again ({before}; {switch}; {after}): `{flip.cls.name}.forward` reads "
                        "`self.training` (itself or through a submodule), so Dynamo compiles one graph per mode "
                        "(one recompile, both then cached).",
                hint="one extra graph per mode, then cached: expected when a model is trained and evaluated; "
                     "silence with `# noqa: DYN205`",
            )

    def _changed_in_place(self, ctx: RuleContext, reads: list, compiled: set[int], seen: set[tuple[int, str]]
                          ) -> Iterator[Finding]:
        """A list, dict, set or deque held in an attribute that compiled code reads, and that code outside
        compiled code changes in place between calls (``m.skip.append(1)``, ``m.hp["temperature"] = 2.0``):
        Dynamo guards on its length (a dict's keys) and on the elements it reads (measured on torch 2.13:
        ``not self.skip``, then ``self.hp['temperature'] == 0.5``)."""
        changes = ctx.program.index.attr_changes_outside
        keys_read: dict[tuple[int, str], set[object]] = {}  # the keys compiled code reads, by class and name
        for ev in reads:
            if ev.cls is None or ev.name not in changes or getattr(ev, "write", False) \
                    or getattr(ev, "on_class", False) or only_printed(ctx.program, ev):
                continue
            key = (id(ev.cls), ev.name)
            declared = ctx.program.classes.class_attrs(ev.cls).get(ev.name)
            if key in seen or declared is None or declared.cls is not None or not (
                    declared.kind in (Kind.SEQUENCE, Kind.UNKNOWN) or declared.is_mapping):
                continue  # (an object of a class of the checked code: its `update()` is its own method)
            if key not in keys_read:
                keys_read[key] = {key_read(r.node, r.statement) for r in reads
                                  if r.cls is ev.cls and r.name == ev.name and not getattr(r, "write", False)}
            keys = keys_read[key]
            index = ctx.program.index
            setters = [fn for attribute, fn, stored in changes[ev.name] if (
                fn is None and not unseen_by_compiled_code(index, attribute.value) or fn is not None and (
                id(fn) not in compiled and not (is_self(fn, attribute.value) and not related(fn.cls, ev.cls))
                and may_run_between_calls(fn.owner or ctx.program.index, fn)))
                # (a key compiled code never reads, read by literal keys only: `enc.tags["domain"] = ...`)
                and (stored is NOT_LITERAL or NOT_LITERAL in keys or stored in keys)]
            if not setters:
                continue
            seen.add(key)
            where = next((f"`{fn.name}()`" for fn in setters if fn is not None), "module-level code")
            read = f"self.{ev.name}" if isinstance(ev, AttributeEvent) and not ev.path else ctx.code(ev.node)
            yield self.finding(
                ev,
                f"`{read}` is a Python container that {where} changes in place from outside compiled code: "
                f"Dynamo guards on its length and on the elements it reads, so each change recompiles "
                f"`{ev.function.name}`.",
                hint="keep it in a tensor (a mask, a buffer), or pass it as an argument that does not change",
            )


def _on_other_objects(ctx: RuleContext, stmt: cst.CSTNode, name: str) -> bool:
    """A script's own ``stmt`` stores ``name`` only on objects no compiled code is handed (``other.top_k = 3``
    of a second instance)."""
    receivers = store_receivers(stmt, name)
    return bool(receivers) and all(unseen_by_compiled_code(ctx.program.index, r) for r in receivers)


def _one_new_module(ctx: RuleContext, stmts: list[cst.CSTNode], name: str) -> bool:
    """Every store ``stmts`` make into the attribute ``name`` is one construction, written alike, of an
    ``nn.Module`` class of the module with literal arguments alone (``self.cache = Cache()``): Dynamo guards a
    module it reaches through an attribute on its class and on what it holds, not on which instance it is, so
    a new one of the same class does not recompile (measured on torch 2.13: a new ``Cache()`` holding a buffer
    before each of three calls, none)."""
    built: set[str] = set()
    for stmt in stmts:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        for small in smalls:
            if not (isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Attribute) and t.target.attr.value == name for t in small.targets)):
                continue
            value = small.value
            cls = ctx.program.index.classes.get(value.func.value) \
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) else None
            if cls is None or not cls.is_module or any(
                    a.star or literal_constant(a.value) is NOT_LITERAL for a in value.args):  # type: ignore
                return False
            built.add(ctx.code(value))
    return len(built) == 1


def _stores_literal(stmt: cst.CSTNode, name: str) -> bool:
    """``stmt`` stores a number, string or bool literal into the attribute ``name`` (``opts.top_k = 3``,
    ``cfg.scale *= 0.5``)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(_stores_literal(small, name) for small in stmt.body)
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AugAssign, cst.AnnAssign)):
        targets = [stmt.target]
    else:
        return False
    return stmt.value is not None and literal_constant(stmt.value) is not NOT_LITERAL and any(
        isinstance(t, cst.Attribute) and t.attr.value == name for t in targets)


def _instances_effect(apart: "InstancesApart") -> str:
    """What another instance's value does to the shared compiled code (measured on torch 2.13)."""
    kind = type(apart.values[0])
    if kind is bool:
        return "it compiles one graph for each value"
    if kind is str or kind is int and apart.cls.is_module:
        return "each new value recompiles it"
    return "the second value recompiles it (the number is then treated as dynamic)"
