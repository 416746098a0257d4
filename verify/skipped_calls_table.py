"""Regenerates :mod:`dynalint.analysis.skipped_calls` from the installed torch.

    python -m dynalint.verify.skipped_calls_table > lint/analysis/skipped_calls.py

Lists the module-level functions of standard-library modules that ML code calls, and of torch's own
top-level namespaces, which Dynamo graph-breaks on when a compiled function calls them. Candidates come
from Dynamo's own trace rules (``torch._dynamo.trace_rules.lookup``): a function it skips is never entered
while tracing, so its arguments cannot change the verdict, except for the few it evaluates ahead when every
argument is a constant (``re.sub``...). Each candidate is then confirmed by compiling a tiny function that calls it
through its module, as user code does (``random.random()``), since Dynamo handles some skipped
functions before the trace rules are asked (``operator.add``, ``math.sqrt``...).

The probes compile with ``fullgraph=True``: at a break Dynamo raises instead of running the call, so a
probe never runs ``os.remove`` or ``os.fork``. A skipped function is probed twice, with a placeholder
string and then a placeholder integer for each required parameter; one that Dynamo would trace into is
probed only when it needs no argument (the others would need real arguments, which are not guessed).
A function is listed only when every probe breaks, with the graph-break type of the first probe.

The classes of the standard-library modules are candidates too, as user code calls them (``threading.local()``):
one that can be built with no argument (built eagerly first, in the probing process) is listed when
constructing it so in a compiled function breaks; the trace rules say nothing of a class.

Two more tables come from probes of the same kind: the ``Tensor`` methods that break when called with no
argument (:func:`probe_methods`), and the ``torch.nn`` modules whose construction creates parameters,
which Dynamo breaks on inside compiled code (:func:`probe_modules`).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
import types
from typing import Any, Iterator

class torch_dtype:  # noqa: N801 - written as the dtype it stands for
    """A probe argument written ``torch.<name>`` in the probe (the table is built without importing torch)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


#: Standard-library modules whose functions appear in model and training code.
MODULES = ("random", "copy", "warnings", "time", "os", "os.path", "sys", "inspect", "logging", "pickle",
           "json", "re", "itertools", "functools", "operator", "math", "collections", "weakref",
           "threading", "traceback", "gc", "io", "tempfile", "socket", "subprocess", "shutil", "glob",
           "datetime", "uuid", "platform", "getpass", "hashlib", "struct", "string", "textwrap",
           "dataclasses", "contextlib", "typing", "bisect", "heapq", "zlib", "binascii", "cmath",
           # torch's namespaces whose functions are not all traced (``torch.save``, ``torch.set_rng_state``,
           # ``torch.initial_seed()``); ``torch.cuda`` is left out: probed on a machine without a GPU, its
           # functions would fail for want of one, not for Dynamo
           "torch", "torch.random", "torch.autograd", "torch.jit", "torch.backends.cuda", "torch.backends.cudnn",
           "torch.backends.mkldnn", "torch.backends.mps", "torch.backends.openmp", "torch.utils.checkpoint",
           # probed with the GPUs hidden (:func:`probe_in_child`): only the functions that run without one
           # (``device_count()``), see :func:`_runs_without_arguments`
           "torch.cuda")
#: Standard-library functions that need arguments, with arguments of the kind model code passes them (a
#: beam's scores, a list of losses): Dynamo inlines them, and what breaks is inside (``heapq.nlargest``
#: compares with an ``object()`` sentinel, ``statistics`` groups with ``itertools.groupby``), so only a call
#: shows it.  The other functions that need arguments are not probed: their arguments are not guessed.
ARGUMENT_PROBES: dict[str, tuple[Any, ...]] = {
    "heapq.nlargest": (1, [3.0, 1.0, 2.0]),
    "heapq.nsmallest": (2, [3.0, 1.0, 2.0]),
    "heapq.merge": ([1.0, 3.0], [2.0]),
    "statistics.mean": ([1.0, 2.0, 4.0],),
    "statistics.fmean": ([1.0, 2.0, 4.0],),
    "statistics.median": ([1.0, 2.0, 4.0],),
    "statistics.mode": ([1.0, 2.0, 2.0],),
    "statistics.stdev": ([1.0, 2.0, 4.0],),
    "statistics.variance": ([1.0, 2.0, 4.0],),
    "statistics.pstdev": ([1.0, 2.0, 4.0],),
    "statistics.pvariance": ([1.0, 2.0, 4.0],),
    # checksums of a feature's bytes (the hashing trick of recommendation models)
    "zlib.crc32": (b"user=42",),
    "zlib.adler32": (b"user=42",),
    "binascii.crc32": (b"user=42",),
    "binascii.crc_hqx": (b"user=42", 0),
    # parameter names matched against patterns (freeze lists, weight-decay groups)
    "fnmatch.fnmatch": ("blocks.0.weight", "*.weight"),
    "fnmatch.fnmatchcase": ("blocks.0.weight", "*.weight"),
    "fnmatch.filter": (["blocks.0.weight", "blocks.0.bias"], "*.weight"),
    "fnmatch.translate": ("*.weight",),
    # a batch of samples collated in the model
    "torch.utils.data.default_collate": ([1.0, 2.0],),
    # file-system queries of a feature cache (they call `os.stat`/`os.scandir`, which Dynamo skips)
    "os.path.exists": ("probe_cache",),
    "os.path.isfile": ("probe_cache",),
    "os.path.isdir": ("probe_cache",),
    "os.path.getsize": ("probe_cache",),
    "os.path.getmtime": ("probe_cache",),
    "os.makedirs": ("probe_cache",),
    "glob.glob": ("probe_cache/*.pt",),
    # anomaly detection turned on around a loss (the context managers' constructors break)
    "torch.autograd.detect_anomaly": (),
    "torch.autograd.set_detect_anomaly": (True,),
    # dtype queries (a tensor's dtype is a constant under Dynamo, as these are)
    "torch.result_type": (2, 2.5),
    "torch.can_cast": (torch_dtype("float32"), torch_dtype("int32")),
}
#: the standard-library modules among them (their classes are probed too; torch's are built from arguments)
_STANDARD_LIBRARY = frozenset(m.split(".")[0] for m in MODULES if not m.startswith("torch"))
_MODULE = "dynalint.verify.skipped_calls_table"
#: (a function kept behind ``functools.lru_cache``, ``torch.backends.mps.is_available``, is one too)
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type(functools.lru_cache(len)))


def _functions(module_name: str) -> Iterator[tuple[str, Any]]:
    """(dotted name, function) for the public functions reachable as attributes of the module (of the module
    a ``torch.backends`` property module wraps, whose own ``dir()`` lists its properties alone)."""
    module = importlib.import_module(module_name)
    wrapped = getattr(module, "m", None)
    for name in sorted(dir(wrapped if isinstance(wrapped, types.ModuleType) else module)):
        if name.startswith("_"):
            continue
        fn = getattr(module, name, None)
        if isinstance(fn, _FUNCTION_TYPES):
            yield f"{module_name}.{name}", fn


def _classes(module_name: str) -> Iterator[tuple[str, type]]:
    """(dotted name, class) for the public classes of a standard-library module, exceptions aside, which can
    be built with no argument (tried eagerly: a class needing arguments is not probed, as they are not
    guessed)."""
    module = importlib.import_module(module_name)
    for name in sorted(dir(module)):
        cls = getattr(module, name, None)
        if name.startswith("_") or not isinstance(cls, type) or issubclass(cls, BaseException):
            continue
        try:
            cls()
        except Exception:  # noqa: BLE001 - one that needs arguments, or cannot be built, is not probed
            continue
        yield f"{module_name}.{name}", cls


def _required(fn: Any) -> int | None:
    """How many parameters must be passed, or None when the signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in params if p.default is p.empty
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _runs_without_arguments(fn: Any) -> bool:
    """Whether calling ``fn()`` eagerly succeeds (in the probing process): a torch function whose signature
    cannot be read (a builtin: ``torch.get_num_threads``) may still need arguments, and one of ``torch.cuda``
    may need a GPU; Dynamo's verdict on such a call is about the failure, not the function."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - any failure: the function is not probed
        return False
    return True


def _probes(fn: Any, module_name: str = "") -> tuple[bool, list[tuple[Any, ...]]]:
    """(whether the trace rules skip ``fn``, the argument tuples to call it with: none when it cannot
    be probed without guessing its arguments).  A function of torch's namespaces (``module_name``) whose
    signature cannot be read, or of ``torch.cuda``, is probed with no argument only when it runs so eagerly
    (:func:`_runs_without_arguments`); the standard library's are never run."""
    from torch._dynamo import trace_rules
    from torch._dynamo.variables.functions import SkipFunctionVariable

    required = _required(fn)
    try:
        skipped = trace_rules.lookup(fn) is SkipFunctionVariable
    except Exception:  # noqa: BLE001 - a function the trace rules cannot look up is not a candidate
        return False, []
    if skipped:
        n = required or 0
        return True, [("x",) * n, (1,) * n]
    in_torch = module_name.split(".")[0] == "torch"
    if in_torch and (required is None or module_name == "torch.cuda"):
        return False, [()] if _runs_without_arguments(fn) else []
    return False, [()] if required == 0 else []


def _break(dotted: str, args: tuple[Any, ...]) -> str | None:
    """The graph-break type Dynamo reports for calling ``dotted(*args)`` in a compiled function."""
    root = dotted.split(".")[0]
    return _probe_break(f"{dotted}({', '.join(map(repr, args))})", {root: importlib.import_module(root)})


def _probe_break(statement: str, namespace: dict[str, Any]) -> str | None:
    """The graph-break type Dynamo reports for ``statement`` in a compiled function of a float tensor
    ``x``, run in ``namespace``; None when it is traced or fails otherwise."""
    import torch
    from torch._dynamo.exc import Unsupported

    exec(f"def probe(x):\n    {statement}\n    return x + 1\n", namespace)
    compiled = torch.compile(namespace["probe"], backend="eager", fullgraph=True)
    try:
        compiled(torch.ones(2))
    except Unsupported as e:
        return e.gb_type or None
    except Exception:  # noqa: BLE001 - an error that is not a graph break says nothing
        return None
    finally:
        torch._dynamo.reset()
    return None


def _confirmed(skipped: bool, kinds: list[str | None]) -> bool:
    """Whether the probes show a break that is Dynamo's refusal of the call, not of the placeholders:
    a skipped function must be refused as skipped (a function Dynamo handles before the trace rules
    may instead fail on a placeholder); a function called with no argument may break on any type the
    analysis reports (an exception raised by the call itself is not a refusal)."""
    from dynalint.core import gb_types

    if not kinds or not all(kinds):
        return False
    if skipped:
        return all(k == gb_types.SKIPPED_FUNCTION.text for k in kinds)
    return kinds[0] in {gb.text for gb in gb_types.ALL}


def probe_all() -> dict[str, str]:
    """dotted name -> graph-break type, for the functions every probe breaks on (in this process)."""
    import warnings

    found: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in MODULES:
            for dotted, fn in _functions(module_name):
                skipped, probes = _probes(fn, module_name)
                kinds = [_break(dotted, args) for args in probes]
                if _confirmed(skipped, kinds):
                    found[dotted] = kinds[0]
            if module_name.split(".")[0] in _STANDARD_LIBRARY:
                for dotted, _ in _classes(module_name):
                    kind = _break(dotted, ())
                    if _confirmed(False, [kind]):
                        found[dotted] = kind  # type: ignore[assignment]
        for dotted, args in ARGUMENT_PROBES.items():
            kind = _break(dotted, args)
            if kind is not None and _confirmed(False, [kind]):
                found[dotted] = kind
    return dict(sorted(found.items()))


#: what a Tensor method is called on in its probes: a graph input, and a tensor computed in the graph
_RECEIVERS = ("x", "(x + 1)")


def _needs_arguments(name: str) -> bool:
    """Whether ``torch.Tensor.name`` cannot be called without arguments (run eagerly: Dynamo's verdict
    on a call missing its arguments is about the arguments, not the method)."""
    import torch

    try:
        getattr(torch.ones(2), name)()
    except TypeError:
        return True
    except Exception:  # noqa: BLE001 - any other failure is the method's own, called as it may be
        return False
    return False


def probe_methods() -> dict[str, str]:
    """Tensor method name -> graph-break type, for the public methods of ``torch.Tensor`` that break
    when called with no argument, on a graph input and on a tensor computed in the graph alike (a
    method that breaks on one only depends on the tensor's state: ``requires_grad_()``). A method that
    needs arguments fails on the call itself, which is not a graph break, and is not listed."""
    import warnings

    import torch

    from dynalint.core import gb_types

    known = {gb.text for gb in gb_types.ALL}
    found: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(dir(torch.Tensor)):
            if name.startswith("_") or not callable(getattr(torch.Tensor, name, None)):
                continue
            if _needs_arguments(name):
                continue
            kinds = [_probe_break(f"{r}.{name}()", {}) for r in _RECEIVERS]
            if all(k in known for k in kinds):
                found[name] = kinds[0]  # type: ignore[assignment]
    return found


def _module_classes() -> Iterator[tuple[str, type, list[inspect.Parameter]]]:
    """(name, class, positional parameters of ``__init__`` after ``self``) for the public module
    classes of ``torch.nn``."""
    import torch

    for name in sorted(dir(torch.nn)):
        cls = getattr(torch.nn, name)
        if name.startswith("_") or not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            continue
        try:
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        except (TypeError, ValueError):
            continue
        yield name, cls, [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _has_parameters(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | None:
    """Whether ``cls(*args, **kwargs)`` built eagerly holds parameters (None: it cannot be built so)."""
    try:
        return bool(list(cls(*args, **kwargs).parameters()))
    except Exception:  # noqa: BLE001 - arguments it does not take: not probed
        return None


def probe_modules() -> dict[str, dict[str, int]]:
    """``torch.nn.X`` -> its switches, for the module classes whose construction inside compiled code
    breaks because it creates parameters ("``torch.nn.Parameter()`` constructor"): built with ``2`` for
    each required argument, the module holds parameters, and compiling that construction breaks so.
    A switch is a parameter defaulting to True that, set False, leaves the module without parameters
    (``LayerNorm(elementwise_affine=False)``), by name -> position among the positional arguments:
    a call that may set one is not judged."""
    import warnings

    from dynalint.core import gb_types

    found: dict[str, dict[str, int]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls, params in _module_classes():
            args = (2,) * sum(1 for p in params if p.default is p.empty)
            if not _has_parameters(cls, args, {}):
                continue
            switches = {p.name: i for i, p in enumerate(params)
                        if p.default is True and _has_parameters(cls, args, {p.name: False}) is False}
            call = f"torch.nn.{name}({', '.join(map(repr, args))})"
            import torch

            if _probe_break(call, {"torch": torch}) == gb_types.PARAMETER_CONSTRUCTOR.text:
                found[f"torch.nn.{name}"] = switches
    return found


def probe_in_child(module: str) -> Any:
    """What ``python -m module --probe OUT`` writes to ``OUT`` as JSON, run in a child process with its
    own working and temporary directories: a probe that Dynamo traces through runs for real, and its
    effects stay there."""
    import json
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        # (with the GPUs hidden, a machine that has one probes as one without; with the terminal's size
        # unset, `shutil.get_terminal_size` asks the terminal, as it does when nothing set them: the table
        # depends on neither)
        env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
               "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch, "CUDA_VISIBLE_DEVICES": ""}
        out = os.path.join(scratch, "found.json")
        subprocess.run([sys.executable, "-m", module, "--probe", out], cwd=scratch, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=600, check=True)
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def table() -> dict[str, dict[str, Any]]:
    """:func:`probe_all` run in a child process with its own working and temporary directories: a
    probe that Dynamo traces through runs for real, and its effects stay there. ``functions``: what
    :func:`probe_all` finds; ``methods``: what :func:`probe_methods` finds; ``modules``: what
    :func:`probe_modules` finds."""
    return probe_in_child(_MODULE)


def skipped_packages() -> list[str]:
    """The third-party packages Dynamo's trace rules skip whole, sorted (NumPy aside, see the module's text)."""
    from torch._dynamo import trace_rules

    return sorted(set(trace_rules.THIRDPARTY_SKIPLIST) - {"numpy"})


def main() -> None:
    import torch

    found = table()
    w = sys.stdout.write
    w('"""Standard-library and torch functions Dynamo graph-breaks on when compiled code calls them '
      '(generated from\n'
      f'torch {torch.__version__.split("+")[0]} by ``python -m dynalint.verify.skipped_calls_table``; '
      'do not edit).\n\n'
      "``BREAKING_CALLS``: dotted name, as user code calls it -> the graph-break type Dynamo reports.\n"
      'Each was confirmed by compiling a call to it (a class: built with no argument; a function of\n'
      '``ARGUMENT_PROBES``: with the arguments given there); functions Dynamo handles are not listed.\n'
      "``BREAKING_TENSOR_METHODS``: ``torch.Tensor`` methods that break when called with no argument\n"
      '(``t.storage_offset()``), on a graph input and on a tensor computed in the graph alike.\n'
      "``PARAMETER_MODULES``: ``torch.nn`` modules whose construction in compiled code breaks (it creates\n"
      "parameters) -> the switches that build one without parameters, by name -> positional index.\n"
      "``SKIPPED_PACKAGES``: third-party packages whose every function and class Dynamo skips (its trace\n"
      "rules' ``THIRDPARTY_SKIPLIST``), NumPy aside: Dynamo traces NumPy calls through ``torch._numpy``.\n"
      '"""\n\n')
    for i, (title, kind, entries) in enumerate((("BREAKING_CALLS", "str", found["functions"]),
                                                ("BREAKING_TENSOR_METHODS", "str", found["methods"]),
                                                ("PARAMETER_MODULES", "dict[str, int]", found["modules"]))):
        w("\n\n" if i else "")
        w(f"{title}: dict[str, {kind}] = {{\n")
        for dotted, gb in entries.items():
            w(f"    {dotted!r}: {gb!r},\n")
        w("}\n")
    w("\n\nSKIPPED_PACKAGES: frozenset[str] = frozenset({\n")
    for name in skipped_packages():
        w(f"    {name!r},\n")
    w("})\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        import json

        found = {"functions": probe_all(), "methods": probe_methods(), "modules": probe_modules()}
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(found, f)
    else:
        main()
