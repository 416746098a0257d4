"""What kind of change made a guard fail, read from Dynamo's recompile reason.

The remedy depends on the kind: a shape change is cured by dynamic shapes or
padding, a global or attribute value by keeping that state out of the
compiled region, a dtype/device change by not mixing them in one stream.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

CATEGORIES = ("shape", "dtype", "device", "grad", "global", "attribute", "argument", "other")

_COMMENT_RE = re.compile(r"\s{2,}#\s")
_TENSOR_RE = re.compile(r"^tensor '.*?' (?P<what>[\w ]+?) mismatch")
_LEAD_RE = re.compile(r"^(?:not\s+|len\()?(?P<root>L\[['\"](?P<local>\w+)['\"]\]|G\[['\"](?P<glob>\w+)['\"]\]|(?P<name>[A-Za-z_]\w*))"
                      r"(?P<rest>\S*)")


@dataclass(frozen=True)
class GuardFailure:
    """One failing guard: the guard expression, the user code it came from, and its kind."""

    guard: str
    user_code: str
    category: str


def split_guard(text: str) -> tuple[str, str]:
    """``"k == 1      # y = x * k  # model.py:8 in f"`` -> (``"k == 1"``, ``"y = x * k  # model.py:8 in f"``)."""
    parts = _COMMENT_RE.split(text.strip(), maxsplit=1)
    guard = parts[0].strip()
    return guard, (parts[1].strip() if len(parts) > 1 else "")


def classify(text: str, locals_: frozenset[str] = frozenset(), self_names: frozenset[str] = frozenset()) -> GuardFailure:
    """Classify one guard-failure line of a ``Recompiling function`` message.

    ``locals_`` are the parameter names of the compiled function and ``self_names``
    the ones that hold the module (``self``), so ``self.steps == 3`` reads as an
    attribute value and ``k == 1`` as an argument value.
    """
    guard, user = split_guard(text)
    return GuardFailure(guard, user, _category(guard, locals_, self_names))


def _category(guard: str, locals_: frozenset[str], self_names: frozenset[str]) -> str:
    low = guard.lower()
    m = _TENSOR_RE.match(guard)
    if m:
        what = m["what"]
        if what in ("size", "stride", "dimensionality", "dim", "ndim", "storage offset"):
            return "shape"
        if what in ("dtype", "device", "requires_grad"):
            return {"requires_grad": "grad"}.get(what, what)
        return "other"
    if "global_state changed" in low:
        return "grad" if "grad" in low else "other"
    if ".size()" in guard or ".stride()" in guard or ".shape" in guard or "storage_offset" in guard:
        return "shape"
    if ".dtype" in guard:
        return "dtype"
    if ".device" in guard:
        return "device"
    if ".requires_grad" in guard:
        return "grad"
    inner = guard
    for wrapper in ("___check_obj_id(", "___check_type_id(", "check_obj_id(", "check_type_id("):
        if inner.startswith(wrapper):
            inner = inner[len(wrapper):]
    m = _LEAD_RE.match(inner)
    if m is None:
        return "other"
    if m["glob"]:
        return "global"
    name = m["local"] or m["name"]
    rest = m["rest"] or ""
    if name in self_names or name == "self":
        return "attribute" if rest.startswith((".", "[")) else "argument"
    if name in locals_:
        return "attribute" if rest.startswith(".") else "argument"
    if m["name"] and not locals_:
        return "argument"
    return "other"
