"""Regenerates :mod:`dynalint.analysis.skipped_calls` from the installed torch.

    python -m dynalint.verify.skipped_calls_table > lint/analysis/skipped_calls.py

Lists the module-level functions of standard-library modules that ML code calls which Dynamo
graph-breaks on when a compiled function calls them. Candidates come from Dynamo's own trace rules
(``torch._dynamo.trace_rules.lookup``): a function it skips is never entered while tracing, so its
arguments cannot change the verdict, except for the few it evaluates ahead when every argument is a
constant (``re.sub``...). Each candidate is then confirmed by compiling a tiny function that calls it
through its module, as user code does (``random.random()``), since Dynamo handles some skipped
functions before the trace rules are asked (``operator.add``, ``math.sqrt``...).

The probes compile with ``fullgraph=True``: at a break Dynamo raises instead of running the call, so a
probe never runs ``os.remove`` or ``os.fork``. A skipped function is probed twice, with a placeholder
string and then a placeholder integer for each required parameter; one that Dynamo would trace into is
probed only when it needs no argument (the others would need real arguments, which are not guessed).
A function is listed only when every probe breaks, with the graph-break type of the first probe.
"""
from __future__ import annotations

import importlib
import inspect
import sys
import types
from typing import Any, Iterator

#: Standard-library modules whose functions appear in model and training code.
MODULES = ("random", "copy", "warnings", "time", "os", "os.path", "sys", "inspect", "logging", "pickle",
           "json", "re", "itertools", "functools", "operator", "math", "collections", "weakref",
           "threading", "traceback", "gc", "io", "tempfile", "socket", "subprocess", "shutil", "glob",
           "datetime", "uuid", "platform", "getpass", "hashlib", "struct", "string", "textwrap",
           "dataclasses", "contextlib", "typing")
_MODULE = "dynalint.verify.skipped_calls_table"
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _functions(module_name: str) -> Iterator[tuple[str, Any]]:
    """(dotted name, function) for the public functions reachable as attributes of the module."""
    module = importlib.import_module(module_name)
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        fn = getattr(module, name, None)
        if isinstance(fn, _FUNCTION_TYPES):
            yield f"{module_name}.{name}", fn


def _required(fn: Any) -> int | None:
    """How many parameters must be passed, or None when the signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in params if p.default is p.empty
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _probes(fn: Any) -> tuple[bool, list[tuple[Any, ...]]]:
    """(whether the trace rules skip ``fn``, the argument tuples to call it with: none when it cannot
    be probed without guessing its arguments)."""
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
    return False, [()] if required == 0 else []


def _break(dotted: str, args: tuple[Any, ...]) -> str | None:
    """The graph-break type Dynamo reports for calling ``dotted(*args)`` in a compiled function."""
    import torch
    from torch._dynamo.exc import Unsupported

    root = dotted.split(".")[0]
    namespace = {root: importlib.import_module(root)}
    exec(f"def probe(x):\n    {dotted}({', '.join(map(repr, args))})\n    return x + 1\n", namespace)
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
                skipped, probes = _probes(fn)
                kinds = [_break(dotted, args) for args in probes]
                if _confirmed(skipped, kinds):
                    found[dotted] = kinds[0]
    return dict(sorted(found.items()))


def table() -> dict[str, str]:
    """:func:`probe_all` run in a child process with its own working and temporary directories: a
    probe that Dynamo traces through runs for real, and its effects stay there."""
    import json
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch}
        out = os.path.join(scratch, "found.json")
        subprocess.run([sys.executable, "-m", _MODULE, "--probe", out], cwd=scratch, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=600, check=True)
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def main() -> None:
    import torch

    found = table()
    w = sys.stdout.write
    w('"""Standard-library functions Dynamo graph-breaks on when compiled code calls them (generated from\n'
      f'torch {torch.__version__.split("+")[0]} by ``python -m dynalint.verify.skipped_calls_table``; '
      'do not edit).\n\n'
      "``BREAKING_CALLS``: dotted name, as user code calls it -> the graph-break type Dynamo reports.\n"
      'Each was confirmed by compiling a call to it; functions Dynamo handles are not listed.\n"""\n\n')
    w("BREAKING_CALLS: dict[str, str] = {\n")
    for dotted, gb in found.items():
        w(f"    {dotted!r}: {gb!r},\n")
    w("}\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--probe"]:
        import json

        found = probe_all()
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            json.dump(found, f)
    else:
        main()
