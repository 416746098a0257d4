"""Purity of expressions a fixer duplicates, moves or evaluates on both sides of a branch.

One question, shared by every fixer: may this expression be evaluated a different
number of times, or at another point of the program, without changing what the
program does?  Yes for literals, names, attributes, arithmetic, indexing, and calls
known to be out-of-place, deterministic and silent: torch functions and tensor
methods that draw no random numbers and update nothing in place, a few builtins,
``torch.nn`` layers whose forward neither updates state nor draws random
numbers, and functions of the file whose body only computes such values.
Anything else - a random op, an in-place op, I/O, a walrus, a call of a
function or module the analysis does not know - is an *impurity*, reported with
the reason a fixer then gives for refusing.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.events import CallEvent
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind

#: torch functions and tensor methods that draw random numbers.
RANDOM_OPS = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                        "bernoulli", "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d",
                        "dropout3d", "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax", "rrelu",
                        "random", "uniform", "exponential", "geometric", "cauchy", "log_normal"})
#: Modules whose functions are deterministic and out-of-place (except the names below).
_PURE_MODULES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft",
                           "math"})
#: Functions of those modules that change global state, do I/O or check at run time.
_EFFECTFUL = frozenset({"manual_seed", "seed", "set_rng_state", "set_default_dtype", "set_grad_enabled",
                        "save", "load", "set_printoptions", "use_deterministic_algorithms", "set_num_threads",
                        "set_float32_matmul_precision", "_assert", "_assert_async", "_check", "compile",
                        "cond", "no_grad", "enable_grad", "inference_mode", "autocast", "batch_norm",
                        "instance_norm"})
_PURE_BUILTINS = frozenset({"float", "int", "bool", "abs", "min", "max", "len", "tuple", "range", "round",
                            "isinstance", "sum", "divmod", "pow"})
#: torch.nn layers whose forward is a pure function of its input and parameters (no running
#: statistics, no dropout, no state kept between calls).
STATELESS_LAYERS = frozenset({
    "Linear", "Bilinear", "Identity", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "ReLU", "ReLU6",
    "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softplus", "Softmax", "LogSoftmax", "ELU", "SELU", "CELU",
    "LeakyReLU", "PReLU", "Hardtanh", "Hardswish", "Hardsigmoid", "Softsign", "Tanhshrink", "Flatten",
    "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "Upsample", "PixelShuffle", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "GLU", "CosineSimilarity",
    "PairwiseDistance",
})


def impurity(expr: cst.CSTNode, ctx, seen: frozenset[int] = frozenset()) -> str | None:
    """Why ``expr`` may not be evaluated more or fewer times, or elsewhere (None: it may).  ``seen``: the
    functions of the file whose bodies are being judged (a recursive call is not pure)."""
    for node in walk(expr):
        if isinstance(node, cst.NamedExpr):
            return "it binds a name (walrus)"
        if isinstance(node, (cst.Lambda, cst.Yield, cst.Await, cst.ListComp, cst.GeneratorExp, cst.DictComp,
                             cst.SetComp)):
            return "it contains a lambda, comprehension, yield or await"
        if isinstance(node, cst.Call):
            reason = call_impurity(node, ctx, seen)
            if reason is not None:
                return reason
    return None


def is_pure(expr: cst.CSTNode, ctx) -> bool:
    return impurity(expr, ctx) is None


def call_impurity(call: cst.Call, ctx, seen: frozenset[int] = frozenset()) -> str | None:
    """Why one call is not pure (None when it is)."""
    func = call.func
    code = ctx.code(func).strip()
    q = ctx.program.index.resolve_expr(func)
    if q is not None:
        module, _, last = q.rpartition(".")
        if last.endswith("_"):
            return f"`{code}` updates in place"
        if last in RANDOM_OPS:
            return f"`{code}` draws random numbers"
        if module in _PURE_MODULES and last not in _EFFECTFUL and not last[:1].isupper():
            return None
        return f"`{code}` may have side effects"
    if isinstance(func, cst.Name):
        if func.value in _PURE_BUILTINS and func.value not in ctx.program.index.functions:
            return None
        if func.value == "print":
            return "`print` writes output"
        own = ctx.program.index.functions.get(func.value)
        if own is not None and isinstance(own.node, cst.FunctionDef) and _pure_function(own.node, ctx, seen):
            return None
        return f"`{code}` is a call the analysis cannot see into"
    event = ctx.event(call, CallEvent)
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        recv = ctx.value(func.value) or (event.receiver if event is not None else None)
        if recv is not None and recv.kind is Kind.TENSOR:
            if name.endswith("_"):
                return f"`.{name}()` updates in place"
            if name in RANDOM_OPS:
                return f"`.{name}()` draws random numbers"
            if name in K.SCALAR_METHODS:
                return f"`.{name}()` moves tensor data into Python"
            if name in K.TENSOR_METHODS or name in K.SIZE_METHODS or name in K.PYTHON_METHODS:
                return None
            return f"`.{name}()` is not a known tensor method"
    callee = called_module(call, ctx)
    if callee is not None:
        if callee.startswith("torch.nn.") and callee.rsplit(".", 1)[1] in STATELESS_LAYERS:
            return None
        return f"`{code}` runs a module whose forward may update state or draw random numbers"
    return f"`{code}` is a call the analysis cannot see into"


def _pure_function(fdef: cst.FunctionDef, ctx, seen: frozenset[int]) -> bool:
    """A module-level function of the file whose body only binds names, tests and returns pure
    expressions (no decorator, no ``global``, no store into an object or an item, no augmented
    assignment, which updates a tensor argument in place, no loop): calling it is as pure as what it
    computes.  Functions it calls are judged the same way (a recursive one is not)."""
    if id(fdef) in seen or fdef.decorators or fdef.asynchronous is not None or len(seen) > 8:
        return False
    return isinstance(fdef.body, cst.IndentedBlock) and _pure_block(fdef.body.body, ctx, seen | {id(fdef)})


def _pure_block(stmts, ctx, seen: frozenset[int]) -> bool:
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and all(isinstance(t.target, (cst.Name, cst.Tuple))
                                                         and all(isinstance(n, cst.Name) for n in _targets(t.target))
                                                         for t in small.targets):
                    value = small.value
                elif isinstance(small, cst.Return):
                    value = small.value
                elif isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                              cst.ConcatenatedString)):
                    continue  # a docstring
                else:
                    return False
                if value is not None and impurity(value, ctx, seen) is not None:
                    return False
        elif isinstance(stmt, cst.If):
            if impurity(stmt.test, ctx, seen) is not None or not _pure_block(stmt.body.body, ctx, seen):
                return False
            orelse = stmt.orelse
            if isinstance(orelse, cst.If) and not _pure_block([orelse], ctx, seen):
                return False
            if isinstance(orelse, cst.Else) and not _pure_block(orelse.body.body, ctx, seen):
                return False
        else:
            return False
    return True


def _targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    return [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]


def called_module(call: cst.Call, ctx) -> str | None:
    """The qualified class name (``torch.nn.Linear``) of the module a call runs, or ``""`` for a module of
    unknown class; None when the call does not run a module."""
    callee = ctx.value(call.func)
    event = ctx.event(call, CallEvent)
    if callee is None and event is not None and event.receiver is not None and event.method is not None \
            and event.receiver.kind is Kind.MODULE and event.receiver.cls is not None:
        callee = ctx.program.classes.class_attrs(event.receiver.cls).get(event.method)
    if callee is None or callee.kind is not Kind.MODULE:
        return None
    return callee.qualname or ""
