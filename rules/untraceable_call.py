"""DYN105: calls Dynamo cannot trace on the target torch (measured, per version)."""
from __future__ import annotations

from typing import Iterator

from dynalint.core import gb_types as GB
from dynalint.analysis import knowledge as K
from dynalint.analysis.breaks import Break, Cause, is_optimizer
from dynalint.rules.base import Example, Finding, Rule, RuleContext, register


@register
class UntraceableCall(Rule):
    code = "DYN105"
    options = ("reorderable-logging-functions", "target-torch")
    name = "untraceable-call"
    summary = "A call Dynamo cannot trace on the target torch: print, logging, warnings, skipped functions..."
    rationale = """
        Dynamo only traces what it understands. Calls into code it deliberately skips (`warnings.warn`,
        `time.perf_counter`, `os.getcwd`, `gc.collect`, `random.random` before torch 2.14,
        `torch.manual_seed`; the standard-library ones are a table generated from torch by
        `python -m dynalint.verify.skipped_calls_table`, each confirmed by compiling a call), side effects it
        cannot put in a graph (`print`, `logging.*`, `logger.*`, `sys.stdout.write`), `str()`/`repr()`
        of a tensor, `copy.deepcopy` of tensors, calls to `@torch.compiler.disable` functions and to
        what `torch.compiler.disable(fn)`/`torch._dynamo.disable(fn)` returned (bound to a name, at module
        level or locally, or passed in as an argument and called there; calling `disable` itself inside
        compiled code breaks too), `open()` and the methods of the file it returns, a `class` statement
        ("Invalid call to __build_class__"), an
        explicit `torch._dynamo.graph_break()`, `requires_grad_()` on a tensor made in the graph (and
        `requires_grad_(False)` on a module's parameter: `for p in critic.parameters():`), `torch._assert` on
        a tensor, `"%s" % tensor` and `with` on a `threading.Lock` all end the graph. So do calls of
        `nn.LSTM`/`nn.GRU`/`nn.RNN` modules (and their subclasses; `nn.LSTMCell` is traced), and the
        `nn.Module` methods that visit every submodule (`train()`, `eval()`, `parameters()`, `modules()`,
        `zero_grad()`...) on a module that holds one at any depth,
        `pack_padded_sequence`/`pack_sequence`/`pad_packed_sequence` (`pad_sequence` is traced) and
        comparing `t.data_ptr()` values or doing arithmetic on one (`t.data_ptr() % 16`),
        `json.dumps`/`loads`/`dump`/`load`, `dataclasses.asdict`/`astuple` of a dataclass holding tensors
        (they deep-copy its fields), building a `TypedDict` with optional keys (`total=False`,
        `NotRequired[...]`), `assert` on a module, an object, or a list or tuple of them or of tensors (Dynamo
        turns the assert into `torch._assert(value)`, which cannot take such a value; the rest of the function
        then runs eagerly), `torch.nested.nested_tensor([...])`, the methods of a NumPy
        generator (`np.random.default_rng()`, a parameter annotated `np.random.RandomState`, the global one
        `np.random.random.__self__`; a name bound to `np.random.randint` on one path and to a generator's
        `randint` on another breaks either way), importing a module (`__import__(name)`,
        `importlib.import_module(name)`), `globals()`, `exec(...)`, building an instance of a `torch.Tensor`
        subclass of the checked code whose `__init__` requires an argument besides the instance (Dynamo
        passes it none: "failed to bind arguments when attempting to inline"), `ExitStack.enter_context(...)`
        of a context manager of torch or the standard library (one the checked code defines is traced),
        building an exception of the checked code whose `__init__` calls the builtin exception's
        (`super().__init__(msg)`, `ValueError.__init__(self, msg)`), `dir()` of a tensor, module or object
        (of a constant or a class it folds), calling a `functools.singledispatch` function,
        the methods of `t.untyped_storage()` other than `size()` and `resize_()`,
        `@functools.cache`/`lru_cache` on a function defined in compiled code (a cached function of the module
        is traced), the first read of a `functools.cached_property` on Python before 3.12 (its `__get__` enters
        an `RLock`), an assignment expression inside a list, set or dict comprehension on Python before 3.12
        (`[y for r in rs if (y := f(r))]`: the comprehension's frame holds the name as a cell Dynamo reads
        before it is set; not when the function bound the name before, nor when the comprehension also reads
        a parameter Dynamo holds as an object, a tensor or a module's `self`), using an f-string that formats
        a tensor (its `len`, `+`, `==`, `in`, a method; formatting it, or a shape, and passing it on are
        traced), setting `t.requires_grad` on a tensor (`t.grad = None` and `param.data = ...` are
        traced), and registering hooks on a module (`module.register_forward_hook`
        and the other `register_*_hook` methods of `nn.Module`: the handle they return bumps a class-level
        counter Dynamo cannot set; `Tensor.register_hook` is traced), a `torch.Generator` made in the
        compiled region or passed as `generator=` (one a global, an argument or the defining function
        holds), `t.share_memory_()`, an RNN module's own methods (`rnn.flatten_parameters()`),
        `module.load_state_dict(...)` and `module.share_memory()` (other
        `nn.Module` methods, `state_dict()`, `parameters()`, `apply`, `to`, `train`, are traced), setting
        `os.environ[...]` (it calls the skipped `os.putenv`) and `sorted(...)` or `list.sort()` without a
        `key` of tensors or of tuples holding them (`sorted(d.items())` of a dict of tensors), or with a
        `key=` that gives tensors, `max`/`min` of tensors with `key=` (whatever it gives), and
        `F.apply(...)` given an argument for each parameter of a `forward` that is a classmethod (Dynamo
        passes the context twice when an input requires grad, and the call fails to bind).  An `nn.Module`
        built in compiled code whose `__init__` breaks, or built where the function runs eagerly, has each
        `__init__` of its chain compiled as a frame of its own that cannot take the module before
        `nn.Module.__init__` ran: each breaks at its first use of `self` (its `super().__init__(...)`). A
        property read through `super()` is held unresolved: calling its methods or passing it to torch breaks.
        Torch's own functions that Dynamo skips or cannot put in a graph (`torch.save`, `torch.load`,
        `torch.get_rng_state`/`set_rng_state`, `torch.set_num_threads`, `torch.initial_seed()`...), the
        `Tensor` methods it breaks on when called without arguments (`t.storage_offset()`, `t.is_signed()`,
        `t.retain_grad()`...; `t.resize_(...)`, `t.resize_as_(...)` and `t.apply_(fn)` break whatever their
        arguments) and the `torch.nn` modules whose construction creates parameters
        (`nn.Linear(4, 4)` built inside compiled code; `nn.LayerNorm(n, elementwise_affine=False)` is not
        judged) are tables generated the same way; `nn.Parameter(...)` of a tensor the graph computed (of an
        argument or a global as it is, it is traced), `torch.autograd.grad` (under the
        default `trace_autograd_ops=False`), `F.one_hot(t)` without `num_classes` (it reads the class count
        from the data, whatever the capture flags), `warnings.simplefilter`/`filterwarnings`,
        NumPy functions `torch._numpy` lacks or whose version returns no array (`np.ndindex`, `np.isscalar`,
        `np.nanmean`...), the array attributes and methods it lacks (`a.dtype`, `a.flags`, `a.tobytes()`, on an
        array the compiled code holds: one made by NumPy or `t.numpy()`, or checked with
        `isinstance(a, np.ndarray)`) are a table generated by `python -m dynalint.verify.numpy_calls_table`;
        on an instance of a `torch.Tensor` subclass of the checked code (an annotation says so, or `isinstance`
        on a value not known as a plain tensor), `t.__dict__`, `t.as_subclass(...)` (where torch's own
        `__torch_function__` handles it; one of the class's own holds the break) and a call of one of its
        methods whose body breaks (at the call too, "Reconstruction failure", the caller then running eagerly);
        `with torch.device(...)` ("does not know how to enter a `device` context manager"; pass `device=`
        instead), and a `with` on a context manager of the checked code made before the compiled code runs
        (an argument, a global, `self.ctx` set in `__init__`, an object the function that defines and compiles
        this one built before calling it) break too.
        Dynamo traces `random.randint`/`randrange`/`uniform` but holds the number as a tensor: a Python
        operator on it and a number (`n - w`, `w * 2`) breaks, and the rest of the function runs
        eagerly (with a tensor or `min` it is traced); comparing two such numbers breaks too, while
        comparing one with a number gives a bool of data, so a branch on it breaks (DYN101); passed where a
        torch op takes a Python number (`torch.roll(x, random.randint(0, 3))`, a dropout rate) it breaks too
        (where the op takes a tensor as well, `torch.full`'s value, it is traced). A training step compiled whole
        breaks three times: `loss.backward()` on a tensor ("Unsupported Tensor.backward() call"), and
        `step()` and `zero_grad()` of an optimizer built by `torch.optim.X(...)` or annotated as a
        `torch.optim` class (step calls `torch._dynamo.graph_break()`, zero_grad is marked as skipped);
        an object nothing shows to be an optimizer is not reported. Every method of a learning-rate scheduler
        or a `GradScaler` breaks (their files are skipped: `sched.step()`, `scaler.scale(loss)`), and so does
        `.backward()` of what the analysis could not type (only a tensor has the method). A tensor method
        whose argument breaks while it is computed (`x.masked_fill(make_mask(n), 0.0)`, the break inside
        `make_mask` or on another line of the argument) breaks at its call too: Dynamo resumes with the
        method already looked up and calls it as a function marked as skipped (a `torch.*` function, a module
        call or an operator does not). Every method of a `logging.Logger` breaks, `isEnabledFor` too.
        (`kl_divergence` breaks only the first time a process meets a pair of distribution types, which
        depends on what ran before: not judged.) NumPy's global RNG is traced through `torch._numpy.random`
        where it draws an array (`np.random.rand(3)`, `np.random.normal(0, 1, size=n)`, `np.random.seed`,
        `np.random.shuffle`); a draw of one number (`np.random.rand()`, `np.random.choice(...)`) breaks, as
        does a function it does not map (`np.random.permutation`). A generator handed to `math.prod`/`math.fsum`,
        or to `max`/`min` with `default=`, breaks, and the rest of the function runs eagerly (a list is
        traced). A list, set or dict comprehension
        that Dynamo meets as a frame of its own cannot step the iterator it receives ("Missing
        tp_iternext", at the comprehension's first line): in a function Dynamo runs eagerly after a break
        inside one of its loops, one over `enumerate`/`zip`/`map`/`reversed`/`sorted`, a list display, a
        local list, a parameter annotated as a list (`masks: List[Tensor]`) or a dict view (a `range` or a
        tuple is stepped); one over `enumerate`/`zip` whose body breaks; in
        both cases only when it refers to `torch` or to a tensor or module of the function (Dynamo skips
        its frame otherwise). Each entry of the
        table was measured on torch 2.13; f-strings of tensors, `np.sum(t.numpy())`,
        `copy.deepcopy` of plain dicts, a bare `random.randint(...)`, `importlib.util.find_spec` and try/except do
        not break there and are not flagged; neither do a `raise` caught in the compiled code (in the
        same function or in a caller), `with` on an instance of a class of the checked code that defines
        `__enter__`/`__exit__` made in the compiled code, `contextlib.suppress`, `contextlib.nullcontext`,
        `warnings.catch_warnings()` and `torch.autograd.profiler.record_function`, or a lambda passed
        as an argument and called.
        A method whose body breaks, called on an object the function made itself (`s = Solver(y)` then
        `s.integrate(t)`, or `Solver(y).integrate(t)`; plain classes, dataclasses, named tuples, and
        `m.forward(x)` of a module made there), breaks at the call as well: Dynamo cannot rebuild the
        bound method of an object without a source to resume after it ("Reconstruction failure") and
        runs the rest of the function eagerly. An object passed in, one a helper receives as an
        argument, a module called as `m(x)` and a call inside a loop are not reported there.
        Dynamo skips `torch.sparse_coo_tensor`, and the frame it resumes in after the call cannot take
        the sparse tensor as an input: the first use of it there breaks too ("Attempted to wrap sparse
        Tensor"), and the rest of the function runs eagerly.
        Once the calls of a compiled function change a size of a tensor they pass or an int or float they
        pass, Dynamo recompiles it with that number symbolic (under `dynamic=True`, ints from the first call):
        `str`, `divmod`, `math.gcd`, `math.isqrt`, `math.isclose`, `sorted` (also by a `key=` that returns
        such sizes), `random.randint`/`randrange`/`uniform` and `%`-formatting of it (also of what
        `max`/`min` and arithmetic make of it) break on that recompile, which they do not on a static
        number; so does `str` of a whole shape one of whose sizes the calls change, and an f-string of an
        int or float argument the calls change (`f"n={n}"`, `f"{lr:.3e}"`; a float without a format spec
        breaks where the string is used, and a size read from a tensor is specialised by the f-string: each
        new size recompiles). The message of an `assert` or a `raise` is built only when it fails.
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
                GB.RICHCOMPARE, GB.GENERATOR_METHOD, GB.CONSTANT_FOLD,
                GB.UNSUPPORTED_SETATTR, GB.BACKWARD, GB.SKIPPED_INLINE, GB.BUILD_CLASS, GB.UNHANDLED_METHOD_ARGS,
                GB.TENSOR_BUILTIN_OPERATOR, GB.AUTOGRAD_GRAD, GB.ONE_HOT_DYNAMIC, GB.PARAMETER_CONSTRUCTOR,
                GB.RETAIN_GRAD, GB.DATA_DEPENDENT_OPERATOR, GB.IS_INFERENCE, GB.RANDOM_OP,
                GB.SPARSE_TENSOR, GB.MISSING_TP_ITERNEXT, GB.OBSERVED_EXCEPTION, GB.SETATTR_REQUIRES_GRAD,
                GB.FAKE_TENSOR_UNSUPPORTED, GB.RECONSTRUCTION_FAILURE, GB.INLINE_BINDING)
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
        Example("""
            import torch

            def head(fn, x):
                return fn(x) * 2

            def debug(t):
                return t + 0

            @torch.compile
            def step(x):
                x = x * 2
                return head(torch.compiler.disable(debug), x)
        """, target="step", line=(4, 12)),
        Example("""
            import torch

            @torch.compile
            def f(x):
                class Pair:
                    scale = 2
                return x * Pair.scale
        """, line=5),
        Example("""
            import torch

            class Scaler:
                def __init__(self, scale):
                    self.scale = scale

                def apply(self, x):
                    print("scaling")
                    return x * self.scale

            @torch.compile
            def f(x):
                s = Scaler(2)
                return s.apply(x) + 1
        """, line=(8, 14)),
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
        Example("""
            import contextlib
            import torch

            def checked(x):
                if x.dim() == 1:
                    raise ValueError("a vector")
                return x

            @torch.compile
            def f(x):
                try:
                    y = checked(x)
                except ValueError:
                    y = x * 2
                try:
                    raise KeyError("cached")
                except KeyError:
                    y = y - 1
                with contextlib.suppress(KeyError):
                    y = y + 1
                return y
        """),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for brk in ctx.breaks.of(Cause.UNTRACEABLE_CALL, Cause.ENVIRONMENT_WRITE, Cause.PERCENT_FORMAT,
                                 Cause.DATA_POINTER, Cause.LOCK, Cause.CLASS_STATEMENT, Cause.TRACED_RANDOM,
                                 Cause.EAGER_COMPREHENSION, Cause.TENSOR_ATTRIBUTE, Cause.TENSOR_TEXT,
                                 Cause.FRESH_OBJECT_METHOD, Cause.ATTRIBUTE_READ, *_WORDED):
            code = ctx.code(brk.node)
            if brk.cause in _WORDED:
                message, hint = _WORDED[brk.cause]
                yield self.reported(brk, message.format(code=code, detail=brk.detail), hint=hint)
                continue
            if brk.cause is Cause.FRESH_OBJECT_METHOD:
                yield self.reported(brk, f"`{code}`: {brk.detail}; the graph breaks here too and the rest of "
                                         "the function runs eagerly.",
                                    hint="remove the graph break inside the method, or call it outside the "
                                         "compiled region" if "tensor subclass" in brk.detail else
                                    "make the object outside the compiled function and pass it in, or "
                                    "remove the graph break inside the method")
                continue
            if brk.cause in (Cause.UNTRACEABLE_CALL, Cause.ENVIRONMENT_WRITE, Cause.TENSOR_ATTRIBUTE,
                             Cause.TENSOR_TEXT, Cause.ATTRIBUTE_READ):
                yield self.reported(brk, f"`{code}`: {brk.detail}, so the graph breaks here.", hint=untraced_hint(brk))
            elif brk.cause is Cause.PERCENT_FORMAT:
                yield self.reported(brk, f"`{code}`: %-formatting a tensor is not traced, so the graph breaks here.",
                                    hint="use an f-string, which Dynamo traces")
            elif brk.cause is Cause.CLASS_STATEMENT:
                yield self.reported(brk, f"`class {code}`: Dynamo cannot build a class while tracing, so the graph "
                                         "breaks here.",
                                    hint="define the class at module level, outside the compiled code")
            elif brk.cause is Cause.TRACED_RANDOM:
                yield self.reported(
                    brk, f"`{code}`: Dynamo holds a number drawn by `random.randint`/`randrange`/`uniform` as "
                         + _TRACED_RANDOM_USES.get(brk.detail, "a tensor and cannot apply a Python operator to it "
                                                   "and a number: the graph breaks here and the rest of the "
                                                   "function runs eagerly."),
                    hint="draw the number with torch (`torch.randint(...)`) or outside the compiled region and pass "
                         "it in")
            elif brk.cause is Cause.DATA_POINTER:
                what = "does arithmetic on a tensor's data pointer" if brk.detail == "arithmetic" \
                    else "compares tensor data pointers"
                yield self.reported(
                    brk, f"`{code}` {what}, which Dynamo cannot do while tracing: the graph breaks here.",
                    hint="compare in Python before calling the compiled code, or drop the aliasing check")
            else:
                yield self.reported(
                    brk, f"`with {code}`: {brk.detail}, so it gives up on the whole function.",
                    hint="take the lock outside the compiled region" if brk.detail.endswith("lock")
                    else "pass `device=` to the calls that make tensors, or enter it outside the compiled code"
                    if "torch.device" in brk.detail
                    else "build the context manager inside the compiled code, or enter it outside")


OUTSIDE = "move it out of the compiled region"
#: what a traced random number's break says, by the use that breaks (the detail of the break)
_TRACED_RANDOM_USES = {
    "argument": "a tensor, which this op cannot take where it needs a Python number: the graph breaks here and "
                "the rest of the function runs eagerly.",
    "comparison": "a tensor and cannot compare two such numbers: the graph breaks here.",
    "index": "a tensor and needs its value to index or slice with it: the graph breaks here.",
    "range": "a tensor and cannot step a `range` of it: the graph breaks here and the rest of the function "
             "runs eagerly.",
}
_FRAME_HINT = ("build the list with a `for` loop, or over `range(len(...))` or a tuple (iterators Dynamo "
               "steps), or remove the graph break that makes it a frame of its own")
LOGGING_HINT = f"{OUTSIDE} (or let Dynamo reorder logging calls)"
#: the causes whose finding reads the same whatever the break: its message (``{code}``, the node's text;
#: ``{detail}``, what the break names) and its hint
_WORDED: dict[Cause, tuple[str, str]] = {
    Cause.CACHED_NESTED_FUNCTION: ("`@{code}`: {detail}, so the graph breaks here.",
                                   "define the cached function at module level, or drop the cache"),
    Cause.CACHED_PROPERTY: ("`{code}`: {detail}, so the graph breaks here.",
                            "compute the value in `__init__`, or read it once before calling the compiled code"),
    Cause.COMPREHENSION_ASSIGNMENT: ("`{code}`: {detail}, so the graph breaks here.",
                                     "assign the name in a loop, or compute the value twice in the "
                                     "comprehension"),
    Cause.SYMBOLIC_INT: ("`{code}`: {detail}, so the graph breaks here on that recompile.",
                         "compute it outside the compiled code and pass it in, or keep the size static "
                         "(`torch._dynamo.mark_static`, or `dynamic=False`)"),
    Cause.NUMPY_TYPE_COMPARISON: ("`{code}`: {detail}, so the graph breaks here.",
                                  "compare NumPy types with `is` (`out_type is np.uint8`), or outside the compiled "
                                  "region"),
    Cause.ASSERTED_OBJECT: ("`assert {code}`: {detail}, so the graph breaks here.",
                            "assert a bool (`assert len(x) > 0`, `assert x is not None`), or check outside the "
                            "compiled region"),
    Cause.UNINITIALIZED_MODULE: ("`{code}`: {detail}; the graph breaks here too.",
                                 "build the module outside the compiled code and pass it in, or remove the graph "
                                 "break in its `__init__`"),
    Cause.SPARSE_RESUME: ("`{code}`: {detail}; the graph breaks here and the rest of the function runs eagerly.",
                          "make the dense tensor without a sparse one (`index_put_` with `accumulate=True`, "
                          "`scatter_add`), or outside the compiled region"),
    Cause.EAGER_COMPREHENSION: ("this comprehension: {detail}; the graph breaks here and the comprehension runs "
                                "eagerly.", _FRAME_HINT),
    Cause.GENERATOR_ARGUMENT: ("`{code}`: {detail}; the graph breaks here and the rest of the function runs "
                               "eagerly.", "pass a list (`[... for ...]`) instead of a generator"),
    Cause.HELD_TENSOR_METHOD: ("`{code}`: {detail}; the graph breaks here too.",
                               "compute the argument on a line of its own before the call, or remove the graph "
                               "break in it"),
    Cause.SUPER_PROPERTY: ("`{code}`: {detail}, so the graph breaks here.",
                           "call the base class's getter (`Base.mean.fget(self)`), or keep the value in an attribute "
                           "both classes read"),
}
_TRAINING = ("compile the forward pass (and the loss) only, and call backward() and the optimizer "
             "outside the compiled function")
_HINTS_BY_TYPE = {
    GB.CREATION_REQUIRES_GRAD: "make it outside the compiled region (an `nn.Parameter` or a buffer made in "
                               "`__init__`), or drop `requires_grad=True` if no gradient is wanted for it",
    GB.DISABLED_FUNCTION: "call it outside the compiled region, or stop wrapping it in `torch.compiler.disable` "
                          "(as a decorator or a call) if its body can be traced",
    GB.NOT_REORDERABLE: "pass it only tensors, constants and format strings (compute the rest outside the "
                        "compiled region), or move it out",
    GB.RNN_MODULE: "set `torch._dynamo.config.allow_rnn = True` (Dynamo then traces nn.LSTM/GRU/RNN), or run "
                   "the RNN outside the compiled region",
    GB.LOGGER_METHOD: LOGGING_HINT,
    GB.PYTHON_TYPE: LOGGING_HINT,
    GB.BACKWARD: _TRAINING,
    GB.UNSUPPORTED_SETATTR: "register the hook once, outside the compiled region (in `__init__`, or before "
                            "compiling)",
    GB.REQUIRES_GRAD: "set requires_grad on the tensor before calling the compiled code",
    GB.SETATTR_REQUIRES_GRAD: "set requires_grad on the tensor before calling the compiled code",
    GB.OBSERVED_EXCEPTION: "format the tensor's shape or a number taken outside the compiled region, or "
                           "build the text outside it",
    GB.DEEPCOPY_TENSOR: "copy the tensors with `.clone()`, which Dynamo traces, or copy outside the compiled "
                        "region",
    GB.PROXY_ARGUMENTS: "draw from the global generator inside the compiled region (seed it outside), or draw "
                        "the random tensor outside and pass it in",
    GB.OPAQUE_OBJECT: "create the generator once, outside the compiled region",
    GB.NUMPY_UNSUPPORTED: "write it with torch ops, or call it outside the compiled region",
    GB.NDARRAY_ATTRIBUTE: "work on the tensor (`torch.from_numpy(a)`) and read its attribute, or read it outside "
                          "the compiled region",
    GB.SORT_NON_CONSTANT_KEYS: "sort on the tensors' values with torch ops (`torch.stack(...).sort()`), or sort "
                               "by a key that is not a tensor",
}
#: tensor methods whose graph-break type other causes share (``apply_`` cannot pass its Python function)
_HINTS_BY_TENSOR_METHOD = {
    "apply_": "write the function as tensor operations (arithmetic, `torch.where`), which Dynamo traces",
}
_HINTS_BY_CALL = (
    (("builtins.print",), LOGGING_HINT),
    (("sys.stdout.write", "sys.stderr.write", "warnings.warn"), OUTSIDE),
    (("torch._dynamo.graph_break",), "remove it, unless the break is wanted"),
    (("time.",), "read the clock outside the compiled region and pass the value in"),
    (("random.", "numpy.random."), "draw the numbers with torch's random functions, which Dynamo traces, or "
                                   "outside the compiled region"),
    (("torch.manual_seed",), "seed the generator before calling the compiled code"),
    (("os.", "inspect.", "sys._getframe"), "compute it outside the compiled region and pass it in"),
    (("torch.nn.utils.rnn.",), "pack and unpack the sequences outside the compiled region (or pad and mask "
                               "them instead of packing)"),
    (("copy.copy",), "copy the tensor with `.clone()`, which Dynamo traces"),
    (("builtins.str", "builtins.repr"), "format the tensor outside the compiled region (or drop it)"),
    (("torch._assert",), "check the condition outside the compiled region"),
)


def untraced_hint(brk: Break) -> str:
    """What to do about an untraceable call: a hint for its cause (a logging hint on an RNN call or a
    clock read would send the user to the wrong remedy)."""
    method = getattr(brk.event, "method", None)
    if method in _HINTS_BY_TENSOR_METHOD and getattr(brk.event, "qualname", None) is None:
        return _HINTS_BY_TENSOR_METHOD[method]
    if brk.gb in _HINTS_BY_TYPE:
        return _HINTS_BY_TYPE[brk.gb]
    receiver = getattr(brk.event, "receiver", None)
    if receiver is not None and (is_optimizer(receiver) or K.skipped_torch_instance(receiver.qualname)):
        return _TRAINING  # an optimizer's step() and zero_grad(), a scheduler's or a gradient scaler's methods
    qualname = getattr(brk.event, "qualname", None) or ""
    args = getattr(brk.event, "args", ())
    if qualname == "copy.copy" and args and not args[0].is_tensor:
        return "copy the container with `dict(d)` or `list(xs)`, which Dynamo traces"
    for prefixes, hint in _HINTS_BY_CALL:
        if any(qualname == p or (p.endswith(".") and qualname.startswith(p)) for p in prefixes):
            return hint
    return OUTSIDE
