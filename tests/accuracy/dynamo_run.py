"""Run generated programs through real Dynamo (backend eager) and record what it did.

Many programs run in one process: each is imported afresh from its own package, run once eagerly
(a program that fails there is invalid and left out), then ``main()`` runs with Dynamo reset and
its graph-break and recompile logs read by :class:`dynalint.verify.probe.DynamoLog`, the reader
the project's verifier uses.  A break's line is the innermost frame of the program's own files.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import re
import sys
import types
from dataclasses import dataclass, field

import torch
import torch._dynamo

from dynalint.verify.probe import DynamoLog

from .generate import Program


@dataclass(frozen=True)
class Recompiled:
    function: str
    """The recompiled code object: the entry point, a helper or ``torch_dynamo_resume_in_f_at_LINE``."""
    file: str
    """File name in the package of the recompiled code object."""
    guards: tuple[str, ...]
    """The guards that failed."""


_TRACE_LINE = re.compile(r"TRACE starts_line (?P<file>.+):(?P<line>\d+) in ")


class TracedLines(contextlib.AbstractContextManager):
    """Collects the lines Dynamo traces, from its ``trace_source`` log, while active.

    Entered inside :class:`DynamoLog` (whose log settings it extends).
    """

    def __init__(self) -> None:
        self.lines: set[tuple[str, int]] = set()
        self._logger = torch._logging.getArtifactLogger("torch._dynamo.symbolic_convert", "trace_source")
        self._saved: tuple[list[logging.Handler], bool] | None = None

    def __enter__(self) -> "TracedLines":
        torch._logging.set_logs(graph_breaks=True, recompiles=True, trace_source=True)
        lines = self.lines

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                m = _TRACE_LINE.match(record.getMessage())
                if m:
                    lines.add((m["file"], int(m["line"])))

        self._saved = (list(self._logger.handlers), self._logger.propagate)
        for h in self._saved[0]:
            self._logger.removeHandler(h)
        self._logger.addHandler(_Handler(logging.DEBUG))
        self._logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        for h in list(self._logger.handlers):
            self._logger.removeHandler(h)
        if self._saved is not None:
            for h in self._saved[0]:
                self._logger.addHandler(h)
            self._logger.propagate = self._saved[1]


@dataclass
class Observed:
    name: str
    breaks: dict[str, set[int]] = field(default_factory=dict)
    """File name in the package -> lines where Dynamo broke the graph."""
    break_types: dict[tuple[str, int], str] = field(default_factory=dict)
    traced: dict[str, set[int]] = field(default_factory=dict)
    """File name in the package -> lines Dynamo traced (its ``trace_source`` log)."""
    recompiles: list[Recompiled] = field(default_factory=list)
    error: str | None = None
    """Why the program could not be measured (it failed eagerly or compiled)."""


def _import_fresh(root: str, name: str) -> types.ModuleType:
    """The program's ``model`` module, imported anew (new globals, new code objects)."""
    _forget(name)
    if root not in sys.path:
        sys.path.insert(0, root)
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.model")


def _forget(name: str) -> None:
    """Drop the program's modules from ``sys.modules``."""
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def observe(program: Program, root: str) -> Observed:
    """What Dynamo does with one program written under ``root``.

    A program may set Dynamo's config at import (a capture flag); the config is restored afterwards,
    so that it does not leak into the programs measured next in this process.  Dynamo logs a break
    whose kind and innermost location it has logged before (``copy.deepcopy`` breaks inside ``copy.py``
    wherever it is called) without the user's stack, which names the program's line: its duplicate
    check is turned off while a program runs.
    """
    saved = torch._dynamo.config.get_config_copy()
    dedup = torch._dynamo.utils.graph_break_dup_warning_checker
    saved_size, dedup.maxsize = dedup.maxsize, 0  # log every break in full, also a repeated one
    try:
        return _observe(program, root)
    finally:
        now = torch._dynamo.config.get_config_copy()
        for key in [k for k, v in saved.items() if now.get(k) != v]:  # only those: a deprecated key warns
            setattr(torch._dynamo.config, key, saved[key])
        dedup.maxsize = saved_size


def _observe(program: Program, root: str) -> Observed:
    pkg = os.path.realpath(os.path.join(root, program.name))
    obs = Observed(program.name)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            with torch.compiler.set_stance("force_eager"):
                _import_fresh(root, program.name).main()
    except Exception as exc:  # an invalid composition: left out of the scores
        obs.error = f"eager: {type(exc).__name__}: {exc}"
        _forget(program.name)
        return obs
    torch._dynamo.reset()
    try:
        mod = _import_fresh(root, program.name)
        with DynamoLog(is_user=lambda f: os.path.realpath(f).startswith(pkg + os.sep)) as log, \
                TracedLines() as traced, contextlib.redirect_stdout(sink):
            mod.main()
    except Exception as exc:
        obs.error = f"compiled: {type(exc).__name__}: {exc}"
    else:
        for b in log.breaks:
            fname = os.path.relpath(os.path.realpath(b.file), pkg)
            obs.breaks.setdefault(fname, set()).add(b.line)
            obs.break_types.setdefault((fname, b.line), b.gb_type)
        for path, line in traced.lines:
            if os.path.realpath(path).startswith(pkg + os.sep):
                obs.traced.setdefault(os.path.relpath(os.path.realpath(path), pkg), set()).add(line)
        for r in log.recompiles:
            path = r.where.rsplit(":", 1)[0]
            obs.recompiles.append(Recompiled(r.function, os.path.basename(path), r.guard_failures))
    finally:
        torch._dynamo.reset()
        _forget(program.name)
    return obs


def observe_all(programs: list[Program], root: str) -> dict[str, Observed]:
    return {p.name: observe(p, root) for p in programs}
