"""DYN105: calls Dynamo cannot trace on the target torch (measured, per version)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from dynalint import gb_types as GB
import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.calls import DATA_PTR
from dynalint.analysis.events import CallEvent, ComparisonEvent, ContextManagerEvent, StringFormatEvent
from dynalint.analysis.logging_calls import LOGGING_FUNCTIONS, is_logger_call, reorderable_arguments
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind, Value
from dynalint.gb_types import GraphBreakType
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register
from dynalint.settings import Version


@dataclass(frozen=True)
class SkippedCall:
    """A function Dynamo refuses to trace into, for torch versions in [since, until)."""

    qualname: str
    gb: GraphBreakType
    since: Version = (2, 0)
    until: Version | None = None
    why: str = "Dynamo does not trace it"


#: Measured on torch 2.13 (see the rule examples, which the test suite runs through Dynamo).
SKIPPED_CALLS: dict[str, SkippedCall] = {c.qualname: c for c in (
    SkippedCall("warnings.warn", GB.SKIPPED_FUNCTION, why="Python's warnings machinery is skipped"),
    SkippedCall("time.time", GB.SKIPPED_FUNCTION, why="wall-clock reads are skipped"),
    SkippedCall("time.perf_counter", GB.SKIPPED_FUNCTION, why="wall-clock reads are skipped"),
    SkippedCall("random.random", GB.SKIPPED_FUNCTION, until=(2, 14), why="Python's RNG is skipped"),
    SkippedCall("random.choice", GB.SKIPPED_FUNCTION, why="Python's RNG is skipped"),
    SkippedCall("torch.manual_seed", GB.SKIPPED_FUNCTION, why="reseeding the global generator is skipped"),
    SkippedCall("os.getpid", GB.SKIPPED_FUNCTION, why="process queries are skipped"),
    SkippedCall("inspect.stack", GB.SKIPPED_FUNCTION, why="frame introspection is skipped"),
    SkippedCall("inspect.currentframe", GB.SKIPPED_FUNCTION, why="frame introspection is skipped"),
    SkippedCall("sys._getframe", GB.SKIPPED_FUNCTION, why="frame introspection is skipped"),
    SkippedCall("torch._dynamo.graph_break", GB.EXPLICIT_BREAK, why="it is an explicit graph break"),
    SkippedCall("torch.nn.utils.rnn.pack_padded_sequence", GB.SKIPPED_FUNCTION,
                why="packing sequences is skipped (its lengths are read in Python)"),
    SkippedCall("torch.nn.utils.rnn.pack_sequence", GB.SKIPPED_FUNCTION,
                why="packing sequences is skipped (its lengths are read in Python)"),
    SkippedCall("torch.nn.utils.rnn.pad_packed_sequence", GB.SKIPPED_FUNCTION,
                why="unpacking packed sequences is skipped"),
    SkippedCall("sys.stdout.write", GB.UNSUPPORTED_METHOD, why="writing to a file object is not traced"),
    SkippedCall("sys.stderr.write", GB.UNSUPPORTED_METHOD, why="writing to a file object is not traced"),
)}

#: Calls whose Python result Dynamo bakes into the resumed graph (DYN204 follows them).
VALUE_PRODUCING = K.SKIPPED_NUMBER_CALLS


def _active(call: SkippedCall, target: Version) -> bool:
    return call.since <= target and (call.until is None or target < call.until)


def _has_tensors(v: Value) -> bool:
    return v.is_tensor or v.kind is Kind.MODULE or (v.kind is Kind.SEQUENCE and v.elements().is_tensor)


def reorderable_functions(ctx: RuleContext) -> set[str]:
    """Calls Dynamo defers instead of breaking: from the settings and from the module's own
    ``torch._dynamo.config.reorderable_logging_functions.add(...)`` statements."""
    names = {n if "." in n else f"builtins.{n}" for n in ctx.settings.reorderable_logging_functions}
    return names | ctx.program.index.reorderable


def unsupported_call(call: CallEvent, ctx: RuleContext) -> tuple[GraphBreakType, str] | None:
    """(graph-break type, explanation) if this call breaks the graph on the target torch."""
    q = call.qualname
    reorderable = reorderable_functions(ctx)
    if call.callee is not None and call.callee.disabled:
        return GB.DISABLED_FUNCTION, f"`{call.callee.name}` is decorated to be skipped by torch.compile"
    if q in reorderable:
        if reorderable_arguments(call):
            return None
        return GB.NOT_REORDERABLE, ("it is a reorderable logging function, but Dynamo only reorders calls whose "
                                    "arguments are tensors, constants or format strings")
    if call.module is not None and _is_rnn(call.module, ctx):
        return GB.RNN_MODULE, "Dynamo does not trace nn.LSTM/GRU/RNN modules"
    if q == "builtins.print":
        return GB.BUILTIN_OPERATOR, "print() cannot be traced"
    if q is not None and q.startswith("logging.") and q.count(".") == 1 and q.split(".")[1] in LOGGING_FUNCTIONS:
        return GB.PYTHON_TYPE, "module-level logging functions cannot be traced"
    if is_logger_call(call):
        return GB.LOGGER_METHOD, "logger methods cannot be traced"
    if q in SKIPPED_CALLS and _active(SKIPPED_CALLS[q], ctx.settings.target_torch):
        return SKIPPED_CALLS[q].gb, SKIPPED_CALLS[q].why
    if q is not None and q.startswith("numpy.random."):
        return GB.DATA_DEPENDENT_OPERATOR, "NumPy's global RNG is not traced"
    if q == "copy.deepcopy" and call.args and _has_tensors(call.args[0]):
        return GB.DEEPCOPY_TENSOR, "deep-copying tensors is not traced"
    if q == "copy.copy" and call.args and call.args[0].is_tensor:
        return GB.NON_TENSOR_OP, "copy.copy of a tensor is not traced"
    if q == "builtins.str" and call.args and call.args[0].is_tensor:
        return GB.BUILTIN_OPERATOR, "str() of a tensor needs its data"
    if q == "builtins.repr" and call.args and call.args[0].is_tensor:
        return GB.REPR_TENSOR, "repr() of a tensor needs its data"
    if q == "torch._assert" and call.args and call.args[0].is_tensor:
        return GB.DATA_DEPENDENT_OPERATOR, "torch._assert on a tensor condition needs its data"
    if _registers_module_hook(call):
        return GB.UNSUPPORTED_SETATTR, ("registering a module hook creates a `RemovableHandle`, whose class-level "
                                        "id counter Dynamo cannot update")
    training = _training_step(call)
    if training is not None:
        return training
    if call.method == "requires_grad_" and call.receiver is not None and call.receiver.is_tensor \
            and call.qualname is None and _turns_grad_on(call) and not _on_parameter(call):
        return GB.REQUIRES_GRAD, "changing requires_grad inside the graph is not supported"
    return None


#: what each optimizer method does under Dynamo (measured on torch 2.13)
_OPTIMIZER_METHODS: dict[str, tuple[GraphBreakType, str]] = {
    "step": (GB.EXPLICIT_BREAK, "torch.optim's step() calls torch._dynamo.graph_break()"),
    "zero_grad": (GB.SKIPPED_INLINE, "torch.optim's zero_grad() is marked as skipped"),
}


def _training_step(call: CallEvent) -> tuple[GraphBreakType, str] | None:
    """``loss.backward()`` on a tensor, ``optimizer.step()``/``zero_grad()`` on a torch.optim optimizer."""
    recv = call.receiver
    if recv is None:
        return None
    if call.method == "backward" and recv.is_tensor and call.qualname is None:
        return GB.BACKWARD, "Dynamo does not trace Tensor.backward()"
    if call.method in _OPTIMIZER_METHODS and is_optimizer(recv):
        return _OPTIMIZER_METHODS[call.method]
    return None


def is_optimizer(v: Value) -> bool:
    """An optimizer built by ``torch.optim.X(...)`` or annotated as one."""
    q = v.qualname or ""
    return v.kind is Kind.UNKNOWN and q.startswith("torch.optim.") and q.endswith("()") \
        and not q.startswith("torch.optim.lr_scheduler.")


def _registers_module_hook(call: CallEvent) -> bool:
    """``module.register_forward_hook(...)`` and the other hook registrations of ``nn.Module`` (or
    the global ``torch.nn.modules.module.register_module_*_hook``), unless the class overrides them."""
    q = call.qualname or ""
    if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1] in K.GLOBAL_MODULE_HOOK_FUNCS:
        return True
    return call.method in K.MODULE_HOOK_METHODS and call.callee is None and call.receiver is not None \
        and call.receiver.kind is Kind.MODULE


def _is_rnn(module: Value, ctx: RuleContext) -> bool:
    """An ``nn.LSTM``/``GRU``/``RNN`` instance, or one of a class derived from them."""
    if module.qualname in K.NN_RNN_CLASSES:
        return True
    if module.cls is None:
        return False
    index = ctx.program.index
    return any((index.resolve(b) or b) in K.NN_RNN_CLASSES for c in module.cls.mro() for b in c.bases)


def _turns_grad_on(call: CallEvent) -> bool:
    """``requires_grad_()``/``requires_grad_(True)``: turning it off does not break (measured on 2.13)."""
    args = call.node.args if isinstance(call.node, cst.Call) else ()
    return not any(isinstance(a.value, cst.Name) and a.value.value == "False" for a in args)


def _on_parameter(call: CallEvent) -> bool:
    """The receiver is a parameter of the function, never rebound.  Turning grad on breaks unless the
    tensor already requires grad or nothing was traced yet (measured on 2.13): for a parameter (an
    input, a hook's ``output``) that depends on the caller, so the rule stays silent."""
    func = call.node.func if isinstance(call.node, cst.Call) else None
    receiver = func.value if isinstance(func, cst.Attribute) else None
    if not isinstance(receiver, cst.Name) or receiver.value not in call.function.param_names():
        return False
    return not any(isinstance(n, cst.Name) and n.value == receiver.value
                   for t in walk(call.function.node.body) if isinstance(t, (cst.AssignTarget, cst.AugAssign))
                   for n in walk(t.target))


@register
class UntraceableCall(Rule):
    code = "DYN105"
    options = ("reorderable-logging-functions", "target-torch")
    name = "untraceable-call"
    summary = "A call Dynamo cannot trace on the target torch: print, logging, warnings, skipped functions..."
    rationale = """
        Dynamo only traces what it understands. Calls into code it deliberately skips (`warnings.warn`,
        `time.perf_counter`, `random.random` before torch 2.14, `torch.manual_seed`), side effects it
        cannot put in a graph (`print`, `logging.*`, `logger.*`, `sys.stdout.write`), `str()`/`repr()`
        of a tensor, `copy.deepcopy` of tensors, calls to `@torch.compiler.disable` functions, an
        explicit `torch._dynamo.graph_break()`, `requires_grad_()` on a tensor made in the graph, `torch._assert` on a
        tensor, `"%s" % tensor` and `with` on a `threading.Lock` all end the graph. So do calls of
        `nn.LSTM`/`nn.GRU`/`nn.RNN` modules (and their subclasses; `nn.LSTMCell` is traced),
        `pack_padded_sequence`/`pack_sequence`/`pad_packed_sequence` (`pad_sequence` is traced) and
        comparing `t.data_ptr()` values, and registering hooks on a module (`module.register_forward_hook`
        and the other `register_*_hook` methods of `nn.Module`: the handle they return bumps a class-level
        counter Dynamo cannot set; `Tensor.register_hook` is traced). A training step compiled whole
        breaks three times: `loss.backward()` on a tensor ("Unsupported Tensor.backward() call"), and
        `step()` and `zero_grad()` of an optimizer built by `torch.optim.X(...)` or annotated as a
        `torch.optim` class (step calls `torch._dynamo.graph_break()`, zero_grad is marked as skipped);
        an object nothing shows to be an optimizer is not reported. Each entry of the
        table was measured on torch 2.13; f-strings of tensors, `np.sum(t.numpy())`,
        `copy.deepcopy` of plain dicts, `random.randint`, `importlib.util.find_spec` and try/except do
        not break there and are not flagged.
    """
    fix = """
        Move side effects out of the compiled region (log outside `forward`, or after it returns), or
        let Dynamo defer them: `torch._dynamo.config.reorderable_logging_functions.add(print)` keeps
        `print`/logging output without a break (set `reorderable-logging-functions` so dynalint knows).
        Guarding with `if not torch.compiler.is_compiling():` drops the output under compile - only do
        that when losing it is acceptable. Replace `str(t)` by an f-string, seed generators outside the
        compiled code, register module hooks once before compiling, and use `torch._check`/`torch._assert_async` for validation.
    """
    gb_types = (GB.BUILTIN_OPERATOR, GB.PYTHON_TYPE, GB.LOGGER_METHOD, GB.SKIPPED_FUNCTION, GB.DEEPCOPY_TENSOR,
                GB.NON_TENSOR_OP, GB.REPR_TENSOR, GB.EXPLICIT_BREAK, GB.DISABLED_FUNCTION, GB.REQUIRES_GRAD,
                GB.UNSUPPORTED_METHOD, GB.CONTEXT_MANAGER, GB.NOT_REORDERABLE, GB.RNN_MODULE, GB.DATA_POINTER,
                GB.UNSUPPORTED_SETATTR, GB.BACKWARD, GB.SKIPPED_INLINE)
    INVALID = [
        Example("""
            import torch
            import torch.nn as nn

            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)

            @torch.compile
            def train_step(x, y):
                loss = ((model(x) - y) ** 2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                return loss
        """, inputs="[(torch.randn(8, 4), torch.randn(8, 1))]", line=(10, 11, 12)),
        Example("""
            import logging
            import torch
            import torch.nn as nn

            logger = logging.getLogger(__name__)

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    h = self.fc(x)
                    logger.info("encoded %s", tuple(h.shape))
                    return h * 2
        """, target="Encoder", line=14),
        Example("""
            import warnings
            import torch

            @torch.compile
            def loss(x):
                warnings.warn("experimental")
                return x.mean()
        """, line=6),
        Example("""
            import torch

            @torch.compile
            def describe(x):
                y = x.softmax(-1)
                label = "peak=" + str(y.max())
                return y, len(label)
        """, line=6),
        Example("""
            import torch

            @torch.compiler.disable
            def debug_hook(t):
                return t + 0

            @torch.compile
            def step(x):
                y = x * 2
                z = debug_hook(y)
                return z + 1
        """, target="step", line=10),
        Example("""
            import torch

            @torch.compile
            def f(x):
                print("y:", x.sum())
                return x + 1
        """, line=5),
        Example("""
            import torch

            @torch.compile
            def f(x):
                noise = torch.zeros_like(x)
                noise.requires_grad_()
                return x + noise
        """, line=6),
        Example("""
            import torch
            import torch.nn as nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRU(4, 8, batch_first=True)

                def forward(self, x):
                    out, _ = self.rnn(x * 2)
                    return out.relu()
        """, target="Encoder", inputs="[(torch.randn(2, 3, 4),)]", line=10),
        Example("""
            import torch
            from torch.nn.utils.rnn import pack_padded_sequence

            @torch.compile
            def pack(x):
                packed = pack_padded_sequence(x * 2, [3, 2], batch_first=True)
                return packed.data
        """, inputs="[(torch.randn(2, 3, 4),)]", line=6),
        Example("""
            import torch

            @torch.compile
            def add_into(x, out):
                if x.data_ptr() == out.data_ptr():
                    return x * 2
                return x + out
        """, inputs="[(torch.randn(4), torch.randn(4))]", line=5),
        Example("""
            import torch
            import torch.nn as nn

            def keep_outputs(module, store):
                def record(mod, args, output):
                    store.append(output)

                module.register_forward_hook(record)

            class Probe(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    store = []
                    keep_outputs(self.fc, store)
                    return self.fc(x) * 2
        """, target="Probe", inputs="[(torch.randn(2, 4),)]", line=8),
    ]
    VALID = [
        Example("""
            import torch
            import torch.nn as nn

            class Scaled(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    y = self.fc(x)
                    y.register_hook(lambda grad: grad * 0.5)
                    return y * 2
        """, target="Scaled", inputs="[(torch.randn(2, 4, requires_grad=True),)]"),
        Example("""
            import torch

            @torch.compile
            def f(x):
                y = torch.zeros_like(x)
                y.requires_grad_(False)
                return x * 2 + y
        """),
        Example("""
            import copy
            import torch

            DEFAULTS = {"scale": 2.0}

            @torch.compile
            def describe(x):
                y = x.softmax(-1)
                label = f"peak={y.max():.3f}"
                cfg = copy.deepcopy(DEFAULTS)
                return y * cfg["scale"], label
        """),
        Example("""
            import torch

            @torch.compile
            def f(x):
                print("y:", x.sum())
                return x + 1
        """, settings={"reorderable_logging_functions": ("print",)}),
        Example("""
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            class Cell(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cell = nn.LSTMCell(4, 4)

                def forward(self, x):
                    h, c = self.cell(x)
                    return pad_sequence([h, c[:1]], batch_first=True)
        """, target="Cell", inputs="[(torch.randn(2, 4),)]"),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for call in ctx.events(CallEvent):
            found = unsupported_call(call, ctx)
            if found is None:
                continue
            gb, why = found
            yield self.finding(
                call,
                f"`{ctx.code(call.node)}`: {why}, so the graph breaks here.",
                gb=gb,
                hint="move it out of the compiled region (or let Dynamo reorder logging calls)",
            )
        for fmt in ctx.events(StringFormatEvent):
            if any(v.is_tensor for v in fmt.values):
                yield self.finding(
                    fmt,
                    f"`{ctx.code(fmt.node)}`: %-formatting a tensor is not traced, so the graph breaks here.",
                    gb=GB.NON_TENSOR_OP,
                    hint="use an f-string, which Dynamo traces",
                )
        for cmp in ctx.events(ComparisonEvent):
            if any(v.qualname == DATA_PTR for v in cmp.operands):
                yield self.finding(
                    cmp,
                    f"`{ctx.code(cmp.node)}` compares tensor data pointers, which Dynamo cannot do while "
                    "tracing: the graph breaks here.",
                    gb=GB.DATA_POINTER,
                    hint="compare in Python before calling the compiled code, or drop the aliasing check",
                )
        for cm in ctx.events(ContextManagerEvent):
            q = cm.value.qualname or ""
            if q in ("threading.Lock()", "threading.RLock()", "multiprocessing.Lock()"):
                yield self.finding(
                    cm,
                    f"`with {ctx.code(cm.node)}`: Dynamo cannot enter a lock, so it gives up on the whole function.",
                    gb=GB.CONTEXT_MANAGER,
                    hint="take the lock outside the compiled region",
                )
