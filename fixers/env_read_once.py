"""An environment read in compiled code (DYN202 ``environment-read``) -> read once, at import time.

Before::

    import os

    class Scale(nn.Module):
        def forward(self, x):
            if os.environ.get("UPCAST", "0") == "1":
                return x.double().softmax(-1).float()
            return x.softmax(-1)

After::

    import os

    _ENV_UPCAST = os.environ.get("UPCAST", "0")

    class Scale(nn.Module):
        def forward(self, x):
            if _ENV_UPCAST == "1":
                return x.double().softmax(-1).float()
            return x.softmax(-1)

Dynamo reads the environment at trace time: a guarded read recompiles whenever
the variable changes, and an unguarded one (``os.getenv(k, default)``, or
``os.environ.get(k, default)`` with ``k`` unset at the first call) silently keeps
the first value, so compiled and eager code disagree.  Reading the variable once
at import makes both agree and leaves one constant for Dynamo to guard.

Proves, or refuses: the read cannot raise (``os.environ.get``, ``os.getenv``,
``k in os.environ``; ``os.environ[k]`` raises ``KeyError`` when ``k`` is unset,
and read at import it would raise even where the original only read it on a
rare path); the key and default are literals; the module itself never writes
the environment (``os.environ[k] = ...``, ``os.putenv``...).

Unsafe (hazards): the value is fixed when the module is imported, so a variable
set or changed after the import is no longer seen, in eager mode too.
"""
from __future__ import annotations

import re

import libcst as cst

from dynalint.analysis.syntax import single_index, walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register

_READERS = ("os.environ.get", "os.getenv")
_WRITERS = frozenset({"os.putenv", "os.unsetenv", "os.environ.update", "os.environ.setdefault", "os.environ.pop",
                      "os.environ.popitem", "os.environ.clear", "os.environ.__setitem__", "os.environ.__delitem__"})


@register
class EnvReadOnce(Fixer):
    name = "env-read-once"
    codes = ("DYN202",)
    safety = "unsafe"
    summary = "Read an environment variable once at import time instead of at every trace."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import os

                import torch
                import torch.nn as nn

                class Scale(nn.Module):
                    def forward(self, x):
                        if os.environ.get("DYNALINT_EXAMPLE_UPCAST", "0") == "1":
                            return x.double().softmax(-1).float()
                        return x.softmax(-1)
            """,
            after="""
                import os

                import torch
                import torch.nn as nn

                _ENV_DYNALINT_EXAMPLE_UPCAST = os.environ.get("DYNALINT_EXAMPLE_UPCAST", "0")

                class Scale(nn.Module):
                    def forward(self, x):
                        if _ENV_DYNALINT_EXAMPLE_UPCAST == "1":
                            return x.double().softmax(-1).float()
                        return x.softmax(-1)
            """,
            target="Scale",
            inputs="[(torch.randn(2, 4),)] * 4",
            between_calls='os.environ["DYNALINT_EXAMPLE_UPCAST"] = "1" if i % 2 else "0"',
            expect="read-once",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        node = finding.node
        parts = single_index(node)
        if parts is not None and ctx.program.index.resolve_expr(parts[0]) == "os.environ":
            raise Refused("`os.environ[key]` raises KeyError when the key is unset: read at import, it would raise "
                          "where the original did not")
        read = _env_read(node, ctx)
        if read is None:
            return None
        if _writes_environment(ctx):
            raise Refused("the module writes the environment")
        name = _constant_name(read, ctx)
        if name is None:
            raise Refused("the same key is read in several forms, or the constant's name is taken")
        code = ctx.code(node).strip()
        plan = FixPlan(f"read `{read[0]}` once at import time (a later change of the variable is no longer "
                       "seen, in eager mode too)", "unsafe")
        plan.replace(node, cst.Name(name))
        plan.module_statements.append(f"{name} = {code}")
        return plan


def _env_read(node: cst.CSTNode, ctx) -> tuple[str, str] | None:
    """``(key, form)`` of an environment read whose key and default are literals; form is
    ``"value"`` or ``"has"``/``"lacks"`` for ``k in os.environ``/``k not in os.environ``."""
    resolve = ctx.program.index.resolve_expr
    if isinstance(node, cst.Call) and resolve(node.func) in _READERS:
        if not node.args or not all(_literal(a.value) for a in node.args) or any(a.star for a in node.args):
            return None
        key = _string(node.args[0].value)
        return (key, "value") if key is not None and node.args[0].keyword is None else None
    parts = single_index(node)
    if parts is not None and resolve(parts[0]) == "os.environ":
        key = _string(parts[1])
        return (key, "value") if key is not None else None
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        comp = node.comparisons[0]
        if isinstance(comp.operator, (cst.In, cst.NotIn)) and resolve(comp.comparator) == "os.environ":
            key = _string(node.left)
            form = "has" if isinstance(comp.operator, cst.In) else "lacks"
            return (key, form) if key is not None else None
    return None


def _literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.ConcatenatedString):
        return _string(expr) is not None
    return isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")


def _string(expr: cst.CSTNode) -> str | None:
    value = expr.evaluated_value if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
    return value if isinstance(value, str) else None


def _writes_environment(ctx) -> bool:
    """Whether the module changes the environment anywhere: then reading once would change results."""
    resolve = ctx.program.index.resolve_expr
    for n in walk(ctx.module):
        if isinstance(n, cst.Call) and resolve(n.func) in _WRITERS:
            return True
        if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
            target = n.target
            for t in walk(target):
                if isinstance(t, cst.Subscript) and resolve(t.value) == "os.environ":
                    return True
    return False


def _constant_name(read: tuple[str, str], ctx) -> str | None:
    """``_ENV_<KEY>`` (``_HAS_ENV_<KEY>``...), unless the module already uses that name."""
    key, form = read
    stem = re.sub(r"\W", "_", key).upper()
    prefix = {"value": "_ENV_", "has": "_HAS_ENV_", "lacks": "_NO_ENV_"}[form]
    name = prefix + stem
    if not name.isidentifier():
        return None
    taken = any(isinstance(n, cst.Name) and n.value == name for n in walk(ctx.module))
    if taken:
        return None
    # every read of this key in this form must be the same expression, or one name would stand for two values
    texts = {ctx.code(n).strip() for n in walk(ctx.module)
             if isinstance(n, (cst.Call, cst.Subscript, cst.Comparison)) and _env_read(n, ctx) == read}
    return name if len(texts) == 1 else None
