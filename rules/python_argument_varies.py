"""DYN206: callers pass different Python values to a compiled entry point."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from dynalint.analysis.entry_arguments import (ParameterValues, closure_argument_values,
                                               entry_argument_values, frame_argument_values,
                                               frame_may_hold_tensors, guarded_read, handed_on, read_before,
                                               surely_framed)
from dynalint.analysis.events import CallEvent
from dynalint.analysis.eager_part import breaking_calls, read_before_first_break, runs_in_wrapper, skips_frame
from dynalint.analysis.resume_paths import FrameGraphs, eager_part, runs_eagerly
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.rules.recompiles import RECOMPILE_LIMIT

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo


@register
class PythonArgumentVaries(Rule):
    code = "DYN206"
    name = "python-argument-varies"
    kind = "recompile"
    summary = ("Callers in the project pass different Python values (True/False, 0.5/1.0, 'a'/'b', None/a tensor, "
               "a list/a tuple) to a compiled entry point.")
    rationale = """
        Dynamo specialises a compiled function on the Python values of its arguments and guards on them. When
        callers pass different literal values for the same parameter - `model(x, True)` in one place and
        `model(x, False)` in another, or changing temperatures - each new value fails the guard and
        recompiles: a bool compiles one graph per value, an int or float recompiles once and is then treated
        as dynamic (under `torch.compile(..., dynamic=False)` every new number recompiles), and a string
        recompiles for every new value. `None` at one call and a tensor at another compile one graph each;
        `None` and numbers (`smoothing=None`, then `0.05`) recompile on `smoothing is None`, then as numbers
        do; a list, a tuple, a dict, a string and a tensor compile one graph each; and so do lists, tuples
        or dicts written at the calls with another length (other keys) or another literal in an element the
        function reads (`reshape((2, 3))` then `reshape((3, 2))`, `cfg["beta"]`). Calls of what
        `torch.compile(...)` returned count the same, calls from the other
        files of the project (through any name their imports bind) too, and so does a number computed from the
        variable of the loop that makes the calls (`compiled(x, step + 1)`, `for t in (1.0, 0.5): step(x, t)`,
        a schedule bound once to such a tuple or list), also through a function that hands its parameter on,
        as it is or in arithmetic (`def train_step(p, step): adam(p, step + 1)`). A loop that makes the call
        on every iteration, or on those a test of what it knows selects (`if it % 3 == 0:`), is replayed with
        the values it is known to
        take: a curriculum (`iters = 2 if epoch < 4 else 3`), a ramp (`min(1.0, step / 4)`), the index of
        `enumerate`, an attribute of a configuration object the script makes (what its `__init__` stores, a
        class attribute), a tensor made by a torch function or a tensor method against `None` on other
        iterations (`real.flip(-1) if it >= 6 else None`), a flag (`use_aux=step >= 2`), the settings of a
        list of dicts (`for cfg in
        settings: f(x, **cfg)`, `scenes[i % 2]["far"]`), a warm start (`prev = None` before the loop, `f(x,
        prev)` then `prev = out[:, ::4]` in it, or a state the compiled function returns itself, `out, state =
        f(x, state)`: `None` at the first call, a tensor at the next). A list, dict, set or deque the caller
        keeps and changes in place between two calls that pass it (`history.append(y)` after `f(x, history)`,
        `coeffs["mse"] = 0.5`, `disabled.add(2)`) fails the same guards (measured: `not history`, then
        `len(history) == 1`...); one built afresh before each call, or an element replaced by a tensor, does
        not. So does what a loop binds into the functions it compiles: the argument of a factory whose
        nested function it compiles (`torch.compile(make_huber(delta))` for each `delta`) or a keyword of a
        `functools.partial` (one code object, guarded on `delta == 1.0`, `fn.keywords['gamma'] == 2.0`).
        Keyword-only parameters count as the
        others; dataclass and NamedTuple arguments written with literals at the calls (`Cfg()`, then
        `Cfg(scale=3.0)`), and those of a plain class whose `__init__` only stores its parameters, are
        compared field by field where the function reads them; `None` at one call and an
        object of a class of the checked code at another (`cache=Cache()`) fails the `is None` guard. A 0-d
        integer tensor counts too when the calls pass `torch.tensor(n)` of different numbers and the function
        uses it as an index (`x[i]`, `x[:, i] = v`, also through a copy, a list or record that carries it, or
        a helper it hands it to) or as the size of a tensor it iterates over (`for e in x.new_ones(i)`):
        Dynamo reads its value there and guards on it (`i.item() == 1`), so every new value recompiles, with
        no automatic dynamic; arithmetic with it guards on nothing. A parameter a call leaves out passes its
        default; arithmetic of number literals (`1 + 0.5`) is its value; calls of `obj.f` after `obj.f =
        torch.compile(obj.f)`, of a function a method compiles into an attribute (`self.prop =
        torch.compile(propagate)` in `__init__`, called as `self.prop(...)` in the class or `m.prop(...)` on
        an instance), and of a handle wrapped in `torch._dynamo.config.patch(...)`, count too. Values
        that change only together with the grad mode (`with torch.no_grad():` around one of the calls) add no
        recompile of their own: the grad mode already makes another graph (DYN208). A first call that returns
        an argument as it is (`if bias is None: return x`) traces nothing: Dynamo skips the frame from then
        on, and later calls run eagerly without recompiling. The loops of the calling code are replayed with
        what they step through: lists it grows with `append`/`extend` before the loop (also in loops of their
        own), repeated and joined displays, `list(range(...))`, constants of the module passed at its own
        calls, methods of objects it built that only compute (`sched.lr(s)`), and helpers of the modules
        beside a script that it imports (`from _utils import warmup_cosine`). A flag drawn at random at each
        iteration (`random.random() < ratio`, teacher forcing) counts as taking both values when the draws
        make that all but sure (95%: six draws at one half); a position the loop counts up from a size
        (`pos = prompt.shape[1]`, `pos += 1`) takes a new value at each call; a list or tuple a call passes
        where another passes `None` (a cache the compiled module returned, handed back) fails `past is
        None`; and an int that indexes a list or module container (`self.branches[idx]`) is never made
        dynamic, so each new value recompiles (measured). The message names a call that passes each value,
        and every parameter that varies. A function with a graph break inside one of its loops runs eagerly
        (Dynamo gives up on the frame; a break inside a function the loop calls breaks it at the call): only a
        value it hands to a function of the project (compiled as a
        frame of its own), also as a number computed from it and packed in a tuple, list, dict or record (`p =
        (h, int(k)); helper(h, p)`), is guarded there; when a break outside any loop comes first, the part of
        the function before that break is compiled and guarded on what it reads, and only the frame resumed
        after it runs eagerly; so is the test of an `if` before the loop whose branch returns (`if mode ==
        "greedy": return ...`: a call that takes it never reaches the loop); a break inside a `try`
        statement, or at the context manager a `with` statement enters (`with open(...)`), cannot be resumed
        from either. A function decorated with one of torch's
        context managers (`@torch.no_grad()`) or with a decorator of the file that returns a wrapper runs
        inside that wrapper, which Dynamo compiles: it is guarded on what a call passes by keyword (the
        wrapper's `**kwargs`, whose values Dynamo guards whatever the function does with them), and on what
        the function read before a first break it resumes after; one passed by position and read only in the
        part that runs eagerly is not guarded. A function of the module that Dynamo runs as a frame of its own
        is guarded on what its calls pass in the same way: one whose body breaks, called from compiled code
        (Dynamo breaks at the call and compiles the function as it runs: `group(x, None)`, then `group(x, x *
        2)` of
        a helper that indexes with a boolean mask, recompiles `group` on `feats is None`; also one call given
        `None` in one calling context and a tensor in another), or one with a graph called from the part of a
        frame Dynamo runs eagerly; a helper Dynamo inlines is part of its caller's graph and recompiles
        nothing of its own. A number, string or flag the compiled code only passes on (stores in a
        tuple, list or dict, returns) or hands as it is to a call that breaks the graph
        (`print("calling", name)`: the call runs eagerly with it), and any argument it never reads,
        installs no guard and does not recompile. An int the function counts a `range()` loop with is
        guarded on its value wherever it goes (Dynamo unrolls the loop), so each new value recompiles, under
        `dynamic=True` too. Extra arguments a `*args`/`**kwargs` function receives are a tuple guarded on its
        length and a dict guarded on its keys (`fn(x)`, `fn(x, t)`, `fn(x, bias=t)` recompile in turn); a list
        a comprehension builds (`[torch.randn(3) for _ in range(n)]`) has the length the loop gives it; and
        numbers that differ recompile whatever another call passes beside them (a tensor). Functions a
        function defines and compiles (`def case(): @torch.compile def fn`) are told apart by where they are
        defined: two of one name keep their calls apart (all measured on torch 2.13).
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
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x) * k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False, line=3),
        Example("""
            import torch

            SCHEDULE = (1.0, 0.5, 0.25)

            @torch.compile
            def step(x, t):
                return x * t

            def sample(x):
                for t in SCHEDULE:
                    x = step(x, t)
                return x
        """, target="sample", inputs="[(torch.randn(4),)]", compile_target=False, line=6),
        Example("""
            import torch

            @torch.compile
            def head(x, mask):
                if mask is not None:
                    x = x * mask
                return x.sin()

            def run(x):
                return head(x, None), head(x, torch.ones(4))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            @torch.compile
            def step(x, iters):
                for _ in range(iters):
                    x = x.sin()
                return x

            def train(x):
                for epoch in range(4):
                    iters = 1 if epoch < 2 else 2
                    x = step(x, iters)
                return x
        """, target="train", inputs="[(torch.randn(4),)]", compile_target=False, line=4),
        Example("""
            import torch

            @torch.compile
            def pool(x, dims):
                return x.sum(dims[0]) + len(dims)

            def run(x):
                return pool(x, [0]), pool(x, (0,))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False, line=4),
    ]
    VALID = [
        Example("""
            import torch

            def scale(x, k: int):
                return torch.sin(x), k

            compiled = torch.compile(scale)

            def run(size: int):
                outs = []
                for n in range(3):
                    outs.append(compiled(torch.ones(size), n + 1))
                return outs
        """, target="run", inputs="[(4,)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def head(x, temperature):
                return torch.softmax(x / temperature, dim=-1)

            def sample(x):
                return head(x, 1.0), head(x * 2, 1.0)
        """, target="sample", inputs="[(torch.randn(4),), (torch.randn(4),)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def march(x, step_size):
                t = 0.0
                while t < 1.0:
                    x = x * step_size
                    if x.max() > 100:
                        break
                    t += step_size
                return x

            def preview(x):
                for s in (0.5, 0.25):
                    x = march(x, s)
                return x
        """, target="preview", inputs="[(torch.randn(4),)]", compile_target=False),
        Example("""
            import torch

            @torch.compile
            def head(x, mask):
                return x.sin()

            def run(x):
                return head(x, None), head(x, torch.ones(4))
        """, target="run", inputs="[(torch.randn(4),)]", compile_target=False),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        # one finding per entry point (one per statement is kept), naming every parameter that varies
        grouped: dict[int, list[ParameterValues]] = {}
        graphs = FrameGraphs(ctx.program, ctx.breaks, ctx.settings)
        for entry in entry_argument_values(ctx.program, graphs.eager):
            grouped.setdefault(id(entry.function), []).append(entry)
        for entry in frame_argument_values(ctx.program, _frame_calls(ctx, graphs)):
            grouped.setdefault(id(entry.function), []).append(entry)
        for entry in closure_argument_values(ctx.program):
            grouped.setdefault(id(entry.function), []).append(entry)
        reads = {id(ev.node): _reader(ctx, graphs, ev.call, ev.callee) for ev in ctx.events(CallEvent)
                 if ev.callee is not None and ev.callee.cls is None and ev.module is None}
        for entries in grouped.values():
            fn = entries[0].function
            # (a break inside a function it calls breaks its frame at the call)
            eager = eager_part([*ctx.breaks, *breaking_calls(ctx.events(CallEvent), fn)], fn)
            if eager is not None:  # Dynamo runs (part of) the frame eagerly: only what it hands on is guarded
                wrapped = runs_in_wrapper(fn)
                frameless = frozenset(id(b.node) for b in ctx.breaks if skips_frame(b))
                entries = [e for e in entries
                           if e.indexes or handed_on(fn, e.param.name.value, reads, frameless)
                           or read_before(fn, e.param.name.value, eager)
                           or (wrapped and (e.by_keyword or eager.start >= 0
                                            and read_before_first_break(fn, e.param.name.value, ctx.breaks)))]
                if not entries:
                    continue
            if len(entries) == 1:
                entry = entries[0]
                message = (f"`{entry.param.name.value}` varies between calls ({_shown(entry)}): Dynamo "
                           f"specialises `{fn.name}` on Python arguments, {_effect(entry)}.")
            else:
                names = ", ".join(f"`{e.param.name.value}`" for e in entries)
                each = "; ".join(f"`{e.param.name.value}` ({_shown(e)}), {_effect(e)}" for e in entries)
                message = f"{names} vary between calls: Dynamo specialises `{fn.name}` on Python arguments. {each}."
            hint = ("index with a 1-element tensor instead (`x[i.view(1)]`, `x.index_select(0, i.view(1))`: no guard "
                    "on its value)") if all(e.indexes for e in entries) else \
                "pass the value as a tensor, or split the entry point per mode"
            yield Finding(rule=type(self), node=entries[0].param.name, statement=fn.node, message=message, hint=hint)


def _frame_calls(ctx: RuleContext, graphs: FrameGraphs) -> Iterator[tuple[CallEvent, "FunctionInfo"]]:
    """The calls in compiled code that run a function of the module as a frame of its own, with that function
    (a module's ``forward`` for a call of the module): one whose body breaks whatever path it takes, called
    where Dynamo traces (it breaks at the call, and compiles the function as it runs), or one with a graph
    called from the part of a frame Dynamo runs eagerly."""
    compiled = {id(fn) for fn in ctx.program.entry_compiled}
    framed = surely_framed(ctx.program, ctx.breaks)
    for ev in ctx.events(CallEvent):
        callee = ev.callee
        if ev.module is not None:
            cls = ev.module.cls
            callee = cls.find_method("forward") if cls is not None else None
        if callee is None or id(ev.function) not in compiled or not (
                ev.module is not None or frame_may_hold_tensors(ctx.program, ev, callee)):
            continue
        eager = runs_eagerly(ctx.breaks, ev)
        # (a helper that breaks only on some path, `if dim_size is None:`, may be inlined at these calls)
        if (ev.callee_broke and id(callee) in framed and not eager) or (eager and graphs.has_graph(callee)):
            yield ev, callee


def _reader(ctx: RuleContext, graphs: FrameGraphs, call: cst.Call, callee: "FunctionInfo") -> Callable[[int], bool]:
    """Whether ``callee``, called at ``call`` as a frame of its own, reads its ``i``-th argument where
    Dynamo guards on it, and has a graph (a frame without one is skipped, guarding nothing)."""
    def reads(i: int) -> bool:
        names = callee.param_names()
        if i >= len(names) or any(a.star or a.keyword for a in call.args):
            return False
        return guarded_read(ctx.program.program_for(callee.owner), callee, names[i]) and graphs.has_graph(callee)
    return reads


def _shown(entry: ParameterValues) -> str:
    """Which call passes which value."""
    return "; ".join(f"{where} passes {what}" for where, what in entry.sites)


#: how a message names a kind of value passed (:attr:`ParameterValues.values`)
_KIND_NAMES = {"object": "the object", "tensor": "a tensor", "list": "a list", "tuple": "a tuple",
               "dict": "a dict", "str": "a string", "int": "a number", "float": "a number", "bool": "a flag",
               "record": "a record"}


def _differing_fields(entry: ParameterValues) -> list[str]:
    """The fields of the records passed (:attr:`ParameterValues.values` of kind ``record``) whose values differ
    between two of them, in the order of the class."""
    records = [dict(content) for kind, content in entry.values if kind == "record" and content is not None]
    fields = list(dict.fromkeys(f for r in records for f in r if f != "__class__"))
    return [f for f in fields if len({r.get(f) for r in records}) > 1]


def _effect(entry: ParameterValues) -> str:
    """What the values passed do to the compiled code (measured on torch 2.13)."""
    kinds = {t for t, _ in entry.values}
    if entry.changed_in_place:
        return ("and guards on the container's length (a dict's keys) and on the elements it reads, so each "
                "change recompiles it")
    if entry.indexes:
        return ("and it uses the 0-d tensor as an index (or as the size of a tensor it iterates over), where "
                f"Dynamo reads its value and guards on it, so each new value recompiles it; {RECOMPILE_LIMIT}")
    if kinds == {"bool"}:
        return "so it compiles one graph per value"
    if kinds & {"str", "device", "dtype"}:
        return "so each new value recompiles it"
    if "NoneType" in kinds and len(kinds) == 2:
        other = next(k for k in kinds if k != "NoneType")
        return f"so it compiles one graph for `None` and one for {_KIND_NAMES.get(other, 'the other value')}"
    if kinds & {"NoneType", "tensor"}:
        return "so it compiles one graph for each kind of value"
    if kinds == {"record"}:
        differ = _differing_fields(entry)
        verb = "differs" if len(differ) == 1 else "differ"
        named = f" ({', '.join(f'`{entry.param.name.value}.{f}`' for f in differ)} {verb})" if differ else ""
        return (f"and guards on the class and on the fields it reads{named}: a new class, string or flag there "
                "recompiles it each time, a new number once (it is then dynamic)")
    if kinds == {"list", "tuple"}:
        return "so it compiles one graph for a list and one for a tuple"
    if len(kinds) > 1 and kinds & {"list", "tuple", "dict"}:
        return "so it compiles one graph for each kind of value"
    if kinds & {"list", "tuple", "dict"}:
        return "and guards on the length of the container and on the elements it reads, so each new one recompiles it"
    if entry.counts_loop:
        return ("and it counts a `range()` loop, which Dynamo unrolls for each value, so each new value "
                f"recompiles it; {RECOMPILE_LIMIT}")
    if entry.indexes_container:
        return ("and it indexes a list or module container, which needs its value, so each new value "
                f"recompiles it; {RECOMPILE_LIMIT}")
    if entry.static:  # dynamic=False: no automatic dynamic
        return f"and it is compiled with `dynamic=False`, so each new value recompiles it; {RECOMPILE_LIMIT}"
    # numbers: one recompile, then the parameter is dynamic
    return "so the second value recompiles it (numbers are then treated as dynamic)"
