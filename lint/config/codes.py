"""The codes dynalint reports, as a table below the settings.

The configuration checks ``select``/``ignore``/``per-file-ignores`` against this table, so reading
settings (``dynalint --version``, the language server's ``initialize``, the flake8 plugin's
configuration error) never imports the rules.  Each rule still declares its own code and name; the
test suite keeps this table and the rules' registry equal.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    opt_in: bool = False
    """Reported only when selected by its full code: a prefix such as ``DYN`` does not select it."""


CODES: tuple[Code, ...] = (
    Code("DYN000", "syntax-error"),
    Code("DYN001", "io-error"),
    Code("DYN002", "configuration-error"),
    Code("DYN003", "unused-noqa", opt_in=True),
    Code("DYN101", "tensor-condition"),
    Code("DYN102", "scalar-extraction"),
    Code("DYN103", "data-dependent-loop"),
    Code("DYN104", "data-dependent-shape"),
    Code("DYN105", "untraceable-call"),
    Code("DYN201", "mutable-global-read"),
    Code("DYN202", "environment-read"),
    Code("DYN203", "python-attribute-mutation"),
    Code("DYN204", "scalar-crosses-break"),
    Code("DYN205", "python-attribute-set-outside"),
    Code("DYN206", "python-argument-varies"),
    Code("DYN207", "loop-state-crosses-break"),
    Code("DYN208", "grad-mode-varies"),
)

#: Codes reported only when selected by their full code.
OPT_IN_CODES = frozenset(c.code for c in CODES if c.opt_in)


def is_code_or_prefix(text: str) -> bool:
    """``DYN``, ``DYN1``, ``DYN101``: the shape of a selector (whether it selects anything aside)."""
    return text.startswith("DYN") and (text == "DYN" or text[3:].isdigit())


def selects_any(prefix: str) -> bool:
    """Whether a code or prefix selects at least one code of the table."""
    return any(c.code.startswith(prefix) for c in CODES)
