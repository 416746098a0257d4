"""Ask real TorchDynamo what happens to a piece of code.

Graph breaks are read from Dynamo's own ``graph_breaks`` log (what
``TORCH_LOGS=graph_breaks`` prints), not from ``explain()`` alone: ``explain``
misses a break that ends an empty graph and a break that makes Dynamo skip a
whole frame (a break inside a loop).  Recompiles are read from the
``recompiles`` log, with the guard that failed.

This module imports torch; only ``dynalint verify`` and the tests use it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import os
import re
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import torch
import torch._dynamo

__all__ = [
    "GraphBreak",
    "Recompile",
    "Observation",
    "DynamoLog",
    "observe",
    "load_module_from_source",
]

_GB_ID_RE = re.compile(r"/gb/(gb\d+)\.html", re.IGNORECASE)
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.MULTILINE)
_AT_RE = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)")
_RECOMPILING_RE = re.compile(r"Recompiling function (?P<func>\S+) in (?P<file>.+?):(?P<line>\d+)")
_LIMIT_FUNC_RE = re.compile(r"function: '(?P<func>[^']+)' \((?P<file>.+?):(?P<line>\d+)\)")
_FAILURE_RE = re.compile(r"^\s*-\s+\d+/\d+:\s*(?P<guard>.*)$", re.MULTILINE)
try:
    from torch._dynamo.graph_break_hints import FUNDAMENTAL as _FUNDAMENTAL_HINTS
except ImportError:  # a torch without Dynamo's hint table: no break is known to be fundamental
    _FUNDAMENTAL_HINTS = []


@dataclass(frozen=True)
class GraphBreak:
    """One graph break as Dynamo logged it."""

    file: str
    line: int
    function: str
    gb_type: str
    gb_id: str | None
    frame_skipped: bool
    """Dynamo gave up on the whole frame (a break in a loop, or one it could not resume from)."""
    message: str = field(repr=False, compare=False)
    input_index: int = field(default=-1, compare=False)
    """Index of the call in the stream during which Dynamo logged the break."""

    @property
    def fundamental(self) -> bool:
        """Dynamo's hints call the break fundamental: no setting lets it trace the code (a branch on
        a tensor's value)."""
        return any(hint in self.message for hint in _FUNDAMENTAL_HINTS)

    @property
    def explanation(self) -> str:
        """Dynamo's one-line explanation of the root cause (empty when it gave none)."""
        reason = self.message.split("Graph Break Reason:", 1)[-1]
        for ln in reason.splitlines():
            ln = ln.strip()
            if ln.startswith("Explanation:"):
                return ln[len("Explanation:"):].strip()
        return ""


@dataclass(frozen=True)
class Recompile:
    """One recompilation of an already compiled code object."""

    function: str
    input_index: int
    guard_failures: tuple[str, ...]
    where: str = field(default="", compare=False)
    """``file:first line`` of the recompiled code object, as Dynamo logged it."""

    @property
    def in_resume_function(self) -> bool:
        return self.function.startswith("torch_dynamo_resume_in_")


@dataclass
class Observation:
    """What Dynamo did over one stream of calls."""

    breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def break_lines(self, path: str | None = None) -> set[int]:
        real = os.path.realpath(path) if path else None
        return {b.line for b in self.breaks if real is None or os.path.realpath(b.file) == real}


def _parse_break(message: str, files_of_interest: Sequence[str],
                 is_user: Callable[[str], bool] | None = None) -> GraphBreak | None:
    """Parse one ``graph_breaks`` log record into a GraphBreak.

    The location is the innermost frame of the user traceback that lies in one of
    ``files_of_interest`` (so a break inside a helper is attributed to the helper's
    line), falling back to Dynamo's own "in user code at file:line".  With
    ``is_user`` instead, it is the innermost frame of any file ``is_user`` accepts
    (a break in a helper imported from another file is attributed to that helper).
    """
    wanted = {os.path.realpath(f) for f in files_of_interest}

    def keep(path: str) -> bool:
        return is_user(path) if is_user is not None else (not wanted or os.path.realpath(path) in wanted)

    loc: tuple[str, int, str] | None = None
    tb_start = message.find("User code traceback:")
    if tb_start >= 0:
        for m in _FRAME_RE.finditer(message, tb_start):
            if keep(m["file"]):
                loc = (m["file"], int(m["line"]), m["func"])
    if loc is None:
        at = _AT_RE.search(message)
        if at is None or not keep(at["file"]):
            return None
        loc = (at["file"], int(at["line"]), "?")
    reason = message.split("Graph Break Reason:", 1)[-1]
    gb_type = _underlying_gb_type(reason)
    ids = _GB_ID_RE.findall(reason)
    return GraphBreak(
        file=loc[0],
        line=loc[1],
        function=loc[2],
        gb_type=gb_type,
        gb_id=ids[0].upper() if ids else None,
        frame_skipped=any(s in reason for s in ("frame skipped:", "graph break in loop", "falling back to eager")),
        message=message,
    )


def _underlying_gb_type(reason: str) -> str:
    """The first graph-break type named in a reason (the root cause, not the wrapper)."""
    lines = [ln.strip() for ln in reason.strip().splitlines()]
    for i, ln in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1].startswith("Explanation:") and ln:
            return ln
    return lines[0] if lines else ""


class DynamoLog(contextlib.AbstractContextManager):
    """Collects Dynamo's graph-break and recompile log records while active."""

    def __init__(self, files_of_interest: Sequence[str] = (), *,
                 is_user: Callable[[str], bool] | None = None) -> None:
        self.files = list(files_of_interest)
        self.is_user = is_user
        self.breaks: list[GraphBreak] = []
        self.recompiles: list[Recompile] = []
        self.limit_hits: list[tuple[int, str]] = []
        """(call index, Dynamo's warning) each time a code object hit the recompile limit."""
        self.input_index = 0
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
        self._dedup: Any = None

    def __enter__(self) -> "DynamoLog":
        torch._logging.set_logs(graph_breaks=True, recompiles=True)
        # Dynamo logs a second break of the same type at the same innermost frame without its user stack
        # ("user stack suppressed due to duplicate graph break"): two `copy.copy(xs)` lines of one function both
        # break inside copy.py, and the second would be credited to no line of the user's file.  Every break
        # is logged with its stack while this log is open.
        from torch._dynamo import utils as dynamo_utils

        checker = dynamo_utils.graph_break_dup_warning_checker
        self._dedup = checker.__dict__.get("add")
        checker.add = lambda key: True  # type: ignore[method-assign]
        log = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                try:
                    log._on_record(record)
                except Exception:  # never disturb Dynamo
                    pass

        handler = _Handler(logging.DEBUG)
        loggers = [
            torch._logging.getArtifactLogger(
                "torch._dynamo.symbolic_convert" if name == "graph_breaks" else "torch._dynamo.guards", name)
            for name in ("graph_breaks", "recompiles")
        ]
        # the recompile-limit warning ("falling back to eager") comes from convert_frame's own logger
        loggers.append(logging.getLogger("torch._dynamo.convert_frame"))
        for logger in loggers:
            self._saved.append((logger, list(logger.handlers), logger.propagate, logger.level))
            for h in list(logger.handlers):
                logger.removeHandler(h)
            logger.addHandler(handler)
            logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        from torch._dynamo import utils as dynamo_utils

        checker = dynamo_utils.graph_break_dup_warning_checker
        if self._dedup is None:
            checker.__dict__.pop("add", None)  # the class's own method again
        else:
            checker.add = self._dedup  # type: ignore[method-assign]
        for logger, handlers, propagate, level in self._saved:
            for h in list(logger.handlers):
                logger.removeHandler(h)
            for h in handlers:
                logger.addHandler(h)
            logger.propagate = propagate
            logger.setLevel(level)
        self._saved.clear()
        torch._logging.set_logs()

    def _drop_refused(self, msg: str) -> None:
        """Forget the "Recompiling function" record of an attempt Dynamo then refused at the limit.

        Dynamo logs the recompile reasons before it checks the limit, so the attempt that hits
        the limit is logged as a recompile although nothing was compiled: the frame runs eagerly.
        """
        m = _LIMIT_FUNC_RE.search(msg)
        if m is None:
            return
        where = f"{m['file']}:{m['line']}"
        for i in range(len(self.recompiles) - 1, -1, -1):
            r = self.recompiles[i]
            if r.input_index != self.input_index:
                break
            if r.function == m["func"] and r.where == where:
                del self.recompiles[i]
                return

    def _on_record(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if record.name == "torch._dynamo.convert_frame":
            if "recompile_limit" in msg and record.levelno >= logging.WARNING:
                self.limit_hits.append((self.input_index, msg))
                self._drop_refused(msg)
        elif "Recompiling function" in msg:
            m = _RECOMPILING_RE.search(msg)
            self.recompiles.append(
                Recompile(
                    function=m["func"] if m else "?",
                    input_index=self.input_index,
                    guard_failures=tuple(g.strip() for g in _FAILURE_RE.findall(msg)),
                    where=f"{m['file']}:{m['line']}" if m else "",
                )
            )
        elif "Graph break" in msg:
            gb = _parse_break(msg, self.files, self.is_user)
            if gb is not None:
                self.breaks.append(dataclasses.replace(gb, input_index=self.input_index))


def load_module_from_source(source: str, directory: str | None = None, stem: str = "dynalint_probe") -> Any:
    """Write ``source`` to a real file (Dynamo reports file:line) and import it."""
    directory = directory or tempfile.mkdtemp(prefix="dynalint-probe-")
    name = f"{stem}_{uuid.uuid4().hex[:8]}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unwrap_compiled(obj: Any) -> Any:
    """The plain function behind ``@torch.compile`` (Dynamo keeps it as ``_torchdynamo_orig_callable``)."""
    return getattr(obj, "_torchdynamo_orig_callable", obj)


def dynamo_config_patches(obj: Any) -> list[Any]:
    """The ``torch._dynamo.config.patch(...)`` decorators wrapped around ``obj``, outermost first.

    ``torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(f))`` is a wrapper that
    copies the compiled function's attributes, ``_torchdynamo_orig_callable`` included: a target
    unwrapped to ``f`` and compiled again must be called under the same patches, or the settings the
    code chose are lost.  (torch 2.13: the wrapper is ``contextlib.ContextDecorator``'s ``inner``, its
    ``self`` the patch, whose ``__enter__`` closes over the config module.)"""
    out = []
    seen: set[int] = set()
    while callable(obj) and id(obj) not in seen:
        seen.add(id(obj))
        code, closure = getattr(obj, "__code__", None), getattr(obj, "__closure__", None)
        if code is not None and closure and "self" in code.co_freevars:
            patch = closure[code.co_freevars.index("self")].cell_contents
            if isinstance(patch, contextlib.ContextDecorator) and _patched_config(patch) is torch._dynamo.config:
                out.append(patch)
        obj = getattr(obj, "__wrapped__", None)
    return out


def _patched_config(patch: Any) -> Any:
    """The config module a ``ConfigModule.patch`` object sets (None for another context decorator)."""
    enter = getattr(type(patch), "__enter__", None)
    code, closure = getattr(enter, "__code__", None), getattr(enter, "__closure__", None)
    if code is None or not closure or "config" not in code.co_freevars:
        return None
    return closure[code.co_freevars.index("config")].cell_contents


def observe(
    fn: Callable[..., Any],
    input_sets: Sequence[tuple[Any, ...]],
    *,
    files_of_interest: Sequence[str] = (),
    before_call: Callable[[int], None] | None = None,
    backend: str = "eager",
    fresh: bool = True,
    compile: bool = True,
) -> Observation:
    """Compile ``fn`` and call it on every input set in order, recording what Dynamo did.

    With ``compile=False``, ``fn`` is called as it is: code that compiles parts of itself
    (a caller of a ``@torch.compile`` function) is observed without an outer graph.
    """
    if fresh:
        torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend) if compile else fn
    obs = Observation()
    with DynamoLog(files_of_interest) as log:
        for i, args in enumerate(input_sets):
            log.input_index = i
            if before_call is not None:
                before_call(i)
            try:
                obs.outputs.append(compiled(*args))
            except Exception as exc:  # user code may raise: record it, keep the report
                obs.outputs.append(None)
                obs.errors.append(f"call {i}: {type(exc).__name__}: {exc}")
    obs.breaks = _dedupe(log.breaks)
    obs.recompiles = log.recompiles
    if fresh:
        torch._dynamo.reset()
    return obs


def _dedupe(breaks: list[GraphBreak]) -> list[GraphBreak]:
    seen: set[tuple[str, int, str]] = set()
    out = []
    for b in breaks:
        key = (os.path.realpath(b.file), b.line, b.gb_type)
        if key not in seen:
            seen.add(key)
            out.append(b)
    return out


@contextlib.contextmanager
def dynamo_config(**settings: Any) -> Iterator[None]:
    """Temporarily set ``torch._dynamo.config`` values (e.g. capture_scalar_outputs)."""
    with torch._dynamo.config.patch(**settings):
        yield
