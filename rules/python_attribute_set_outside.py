"""DYN205: compiled code reads a Python attribute that other code sets."""
from __future__ import annotations

from typing import Iterator

from dynalint.analysis.events import AttributeEvent, ObjectAttributeReadEvent
from dynalint.analysis.entry_arguments import (grad_mode_differs, grad_mode_flips, set_with_size_change,
                                               site_label)
from dynalint.analysis.mode_flips import mode_flips
from dynalint.analysis.module_index import may_run_between_calls, related, stores_on_self
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
        of a module stays static and still recompiles at each new value).

        `.train()` and `.eval()` set `self.training` on the module and its submodules. A function (or a
        script's own statements, its `__main__` block) that calls a compiled module, switches its mode and
        calls it again recompiles it once, when its
        `forward` reads the flag: directly (`if self.training:`, `F.dropout(x, training=self.training)`)
        or through a submodule that does (dropout, batch and instance norm, multi-head attention, the
        transformer layers). Both graphs stay cached, so switching back and forth costs nothing more. A
        module without such a read (linear and convolution layers, layer and group norm) does not
        recompile. A switch of mode made together with one of grad mode (`model.eval()`, then a call under
        `torch.no_grad()`) is one recompile, which DYN208 reports (all measured on torch 2.13).
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
            if declared is None or declared.kind is not Kind.PYTHON:
                continue
            key = (id(ev.cls), ev.name)
            if key not in setters_of:
                setters_of[key] = [
                    fn for stmt, fn in writes[ev.name] if (fn is None or id(fn) not in compiled)
                    and not (stores_on_self(stmt, fn, ev.name)
                             and not related(fn.cls, ev.cls))  # type: ignore[union-attr]
                    and (fn is None or may_run_between_calls(fn.owner or ctx.program.index, fn))]
            setters = setters_of[key]
            if of_self and ev.path:
                # an object `self` holds (`self.cfg.rule`): only a script's own statements are known to change
                # that object (a function's `cfg.rule = ...` may be on a copy: `copy.deepcopy(config)`)
                setters = [fn for fn in setters if fn is None]
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
