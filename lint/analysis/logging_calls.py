"""Logging calls as Dynamo sees them: which calls log, and which it can defer to after the graph.

Dynamo reorders a call of a function in ``torch._dynamo.config.reorderable_logging_functions``
instead of breaking, but only when its arguments are values it can replay (measured on torch 2.13);
the rule that reports logging calls and the fixers that defer or guard them read the same facts.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import CallEvent
from dynalint.analysis.values import Kind, Value

#: methods of a ``logging.Logger`` (and of the loggers libraries build on it) that emit a message
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                            "warning_once", "info_once", "warning_advice"})
#: module-level functions of ``logging`` that emit a message
LOGGING_FUNCTIONS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
#: the logging calls Dynamo can reorder once they are in ``reorderable_logging_functions``
REORDERABLE_CALLS = frozenset({"builtins.print", "warnings.warn"} | {f"logging.{f}" for f in LOGGING_FUNCTIONS})


#: the logger classes of ``logging``: an instance of one, or of a class of the checked code derived from one,
#: is a logger (a ``LoggerAdapter``'s methods call its logger's: measured on torch 2.13, they break the same)
LOGGER_CLASSES = frozenset({"logging.Logger", "logging.LoggerAdapter"})


def is_logger(v: Value | None) -> bool:
    """A value returned by ``getLogger()`` / ``get_logger()``, or an instance of a logger class."""
    if v is None:
        return False
    q = v.qualname or ""
    if q.endswith("getLogger()") or q.endswith("get_logger()") or q[:-2] in LOGGER_CLASSES:
        return True
    cls = v.cls if v.kind is Kind.UNKNOWN else None
    return cls is not None and any((c.owner.resolve(b) if c.owner is not None else None) in LOGGER_CLASSES
                                   for c in cls.mro() for b in c.bases)


def is_logger_call(call: CallEvent) -> bool:
    """``logger.info(...)`` and the other message methods of a logger."""
    return call.method in LOGGER_METHODS and is_logger(call.receiver)


#: writes to a standard stream: a message, as ``print`` is
STREAM_WRITES = frozenset({"sys.stdout.write", "sys.stderr.write"})


def is_message_call(call: CallEvent) -> bool:
    """``print``, ``logging.<level>``, ``warnings.warn``, a logger's message method, a write to a standard
    stream: calls whose only effect is the message."""
    return is_logger_call(call) or call.qualname in REORDERABLE_CALLS or call.qualname in STREAM_WRITES


def reorderable_arguments(call: CallEvent) -> bool:
    """Dynamo reorders a logging call only when every argument is a tensor, a constant or
    a format string (a tuple, a class such as ``DeprecationWarning``, or an object is not)."""
    node = call.node
    assert isinstance(node, cst.Call)
    values = iter((*call.args, *call.kwargs.values()))
    for arg in node.args:
        if arg.star:
            return False
        value = next(values, None)
        expr = arg.value
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float)):
            continue
        if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
            continue
        if value is None:
            return False
        if value.kind is Kind.TENSOR and not value.maybe_none:
            continue
        if value.kind in (Kind.PYTHON, Kind.SIZE) and value.qualname is None and value.items is None:
            continue
        return False
    return True
