"""Tracebacks trimmed to the user's frames.

An exception in user code is reported with the frames of the user's files
only: the frames of torch, of Dynamo's generated code, of the standard library
and of dynalint itself say nothing about what went wrong in the model.
"""
from __future__ import annotations

import importlib.util
import os
import sysconfig
import traceback
from functools import lru_cache


@lru_cache(maxsize=1)
def _foreign_prefixes() -> tuple[str, ...]:
    prefixes = []
    for pkg in ("torch", "dynalint", "dynalint.verify", "dynalint.rules", "dynalint.fixers", "pytest", "_pytest",
                "pluggy", "numpy"):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        for loc in (spec.submodule_search_locations or []) if spec else []:
            prefixes.append(os.path.realpath(loc) + os.sep)
    return tuple(prefixes)


@lru_cache(maxsize=1)
def _stdlib_prefixes() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


def is_user_file(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    if any(real.startswith(p) for p in _foreign_prefixes()):
        return False
    in_stdlib = any(real.startswith(p) for p in _stdlib_prefixes())
    return not in_stdlib or "site-packages" in real or "dist-packages" in real


def user_traceback(exc: BaseException, limit: int = 12) -> str:
    """The exception with the user's frames (innermost ``limit``); the exception line always."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    lines = ["Traceback (user frames):\n"] + traceback.format_list(frames[-limit:]) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).rstrip()
    return text if len(text) < 8000 else text[:3000] + "\n...\n" + text[-3000:]


def describe(exc: BaseException) -> str:
    """``ValueError: bad shape (model.py:12 in forward)``: one line, at the innermost user frame."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(msg) > 200:
        msg = msg[:197] + "..."
    return f"{type(exc).__name__}{': ' + msg if msg else ''}{where}"
