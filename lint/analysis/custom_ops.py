"""Custom operators defined in a module (``torch.library``): which functions are ops (Dynamo
calls them as one opaque node, never tracing their body) and which ops have an output size
that depends on the data.

An op's output size is data-dependent when its fake (meta) implementation, the function
Dynamo runs to learn output shapes, asks for a fresh size: ``ctx.new_dynamic_size()`` or
``ctx.create_unbacked_symint()``.  Dynamo then breaks the graph at a call of the op
("Dynamic shape operator"), as for ``torch.nonzero``.  The fake may be registered in another module
than the call (:class:`KnownDynamicOps`): the project index looks for it in the checked files and in
the other modules of their packages.
"""
from __future__ import annotations

from typing import AbstractSet, Mapping, Protocol, Sequence

import libcst as cst

from dynalint.analysis.syntax import decorator_target, dotted_name, walk

_DEFINE = frozenset({"torch.library.custom_op", "torch.library.triton_op", "torch._library.custom_ops.custom_op"})
_REGISTER_FAKE = frozenset({"torch.library.register_fake", "torch.library.impl_abstract",
                            "torch.library.register_meta"})
_FRESH_SIZE = frozenset({"new_dynamic_size", "create_unbacked_symint"})
_FRESH_SIZE_TEXT = tuple(name.encode() for name in sorted(_FRESH_SIZE))


class _Function(Protocol):
    """What this module reads and writes of a function of the index (it sits below the index)."""

    node: cst.FunctionDef
    custom_op: str | None


class _Index(Protocol):
    """What this module reads and writes of a module's index."""

    dynamic_output_ops: set[str]

    @property
    def functions(self) -> Mapping[str, _Function]: ...

    @property
    def all_functions(self) -> Sequence[_Function]: ...

    def resolve(self, dotted: str | None) -> str | None: ...


def op_qualname(name: str) -> str | None:
    """``"ns::op"`` (or ``"ns::op.overload"``) -> ``torch.ops.ns.op``."""
    ns, sep, op = name.partition("::")
    if not sep or not ns or not op:
        return None
    return f"torch.ops.{ns}.{op.split('.')[0]}"


def _string_arg(dec: cst.Decorator) -> str | None:
    call = dec.decorator
    if isinstance(call, cst.Call) and call.args and isinstance(call.args[0].value, cst.SimpleString):
        value = call.args[0].value.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _asks_fresh_size(fn: _Function) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in _FRESH_SIZE
               for n in walk(fn.node.body))


def index_custom_ops(idx: _Index) -> None:
    """Fill ``FunctionInfo.custom_op`` and ``ModuleIndex.dynamic_output_ops``."""
    for fn in idx.all_functions:
        for dec in fn.node.decorators:
            if (idx.resolve(dotted_name(decorator_target(dec))) or "") in _DEFINE:
                fn.custom_op = op_qualname(_string_arg(dec) or "")
    for fn in idx.all_functions:
        for dec in fn.node.decorators:
            target = decorator_target(dec)
            name = dotted_name(target) or ""
            if (idx.resolve(name) or "") in _REGISTER_FAKE:
                op = op_qualname(_string_arg(dec) or "")
            elif isinstance(target, cst.Attribute) and target.attr.value == "register_fake" \
                    and isinstance(target.value, cst.Name) and target.value.value in idx.functions:
                op = idx.functions[target.value.value].custom_op  # `@my_op.register_fake`
            else:
                continue
            if op is not None and _asks_fresh_size(fn):  # the walk last: few functions get here
                idx.dynamic_output_ops.add(op)


def may_ask_fresh_size(text: bytes) -> bool:
    """Whether a module's text may hold a fake implementation that asks for a fresh size (a quick
    test before a module is parsed for its ops)."""
    return any(name in text for name in _FRESH_SIZE_TEXT)


class OpSource(Protocol):
    """What :class:`KnownDynamicOps` asks of the project index."""

    def dynamic_output_op(self, op: str) -> bool: ...


class KnownDynamicOps:
    """The custom ops a module may call whose output size depends on the data: those registered in the
    module itself, then those the project finds in its other modules (torch registers a package's ops
    when the package is imported, so an op is often called in one module and given its fake
    implementation in another).  The project is asked only for an op the module calls."""

    def __init__(self, own: AbstractSet[str], project: OpSource | None) -> None:
        self.own = own
        self.project = project

    def __contains__(self, op: object) -> bool:
        if op in self.own:
            return True
        return isinstance(op, str) and self.project is not None and self.project.dynamic_output_op(op)
