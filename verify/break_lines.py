"""Whether a graph-break line read from Dynamo's log can be trusted.

On Python 3.11 the line table Dynamo writes for the function that resumes after
a break is shifted down after any expression split across lines (a method chain
``(x\\n .exp()\\n .neg())``): later breaks in it are logged on a comment, a blank
line or code past the end of the function (measured with torch 2.13; the
``TORCH_LOGS=graph_breaks`` output says the same).  A line that is not code of
the function Dynamo names is such a shifted line: it is kept, marked uncertain,
and not matched against predictions.
"""
from __future__ import annotations

import ast
import functools
import io
import os
import re
import tokenize

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+?)_at_\d+$")


def original_function(name: str) -> str:
    """The user function a resume function continues (``torch_dynamo_resume_in_f_at_6`` -> ``f``)."""
    m = _RESUME.match(name)
    return m["name"] if m else name


@functools.lru_cache(maxsize=64)
def _layout(path: str, stamp: tuple[int, int]) -> tuple[dict[str, list[tuple[int, int]]], frozenset[int]]:
    """(function name -> (first, last) lines of each def of that name, lines that hold code)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError):
        return {}, frozenset()
    spans: dict[str, list[tuple[int, int]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.setdefault(node.name, []).append((node.lineno, node.end_lineno or node.lineno))
    code: set[int] = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    try:
        for tok in tokenize.tokenize(io.BytesIO(data).readline):
            if tok.type not in skip and tok.type != tokenize.ENCODING:
                code.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return spans, frozenset()
    return spans, frozenset(code)


def uncertain(path: str, line: int, function: str) -> bool:
    """The logged line is not code of a function of that name in the file (a shifted line table)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    spans, code = _layout(path, (st.st_mtime_ns, st.st_size))
    defs = spans.get(original_function(function))
    if not defs or not code:
        return False  # nothing to check against (a lambda, a module-level frame, a file that does not parse)
    return line not in code or not any(a <= line <= b for a, b in defs)


def function_spans(path: str, function: str) -> list[tuple[int, int]]:
    """(first, last) lines of every def of ``function`` (a resume function's user function) in the file."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return _layout(path, (st.st_mtime_ns, st.st_size))[0].get(original_function(function), [])
