"""Entry points: which functions of a module are analysed as compiled code (``forward``, functions
handed to ``torch.compile``, configured patterns, and per scope the library helpers), and what a
``torch.compile(x)`` call compiles.
"""
from __future__ import annotations

import fnmatch
from typing import Any

import libcst as cst

from dynalint.analysis.class_model import _PROPERTY_DECORATORS
from dynalint.analysis.module_index import ClassInfo, FunctionInfo
from dynalint.analysis.project import split_entry
from dynalint.analysis.values import Kind, Value
from dynalint.config.settings import Scope


class EntryPoints:
    """The entry-point part of :class:`~dynalint.analysis.program.Program`."""

    def roots(self) -> list[tuple[FunctionInfo, ClassInfo | None]]:
        """Entry points of this module: (function, class of ``self`` when it is inherited)."""
        idx = self.index
        roots: list[tuple[FunctionInfo, ClassInfo | None]] = []
        seen: set[tuple[int, int]] = set()

        def add(fn: FunctionInfo | None, bound: ClassInfo | None = None) -> None:
            if fn is None or fn.disabled or fn.custom_op is not None:
                return
            if bound is not None and fn.cls is bound:
                bound = None
            key = (id(fn), id(bound))
            if key not in seen:
                seen.add(key)
                roots.append((fn, bound))

        for cls in idx.classes.values():
            if cls.is_module:
                fwd = cls.find_method("forward")
                # an inherited forward runs with this class's overrides (``self.make_params`` ...)
                add(fwd, cls if fwd is not None and fwd.cls is not cls else None)
        for fn in idx.all_functions:
            if fn.compile_decorated:
                self._entries.add(id(fn))
                add(fn)
        for call, where in idx.compile_targets:
            target = self.compile_target(call, where)
            if target is None:
                continue
            fn, cls = target
            if fn.owner is not idx:
                self._note_outgoing(fn, None, compiled=True, bound=cls)
                continue
            # the compiled function's (or module's forward's) arguments are the graph's inputs
            self._entries.add(id(fn))
            add(fn, cls)
        if self.entry_patterns:
            for fn in idx.all_functions:
                if self.matches_entry_pattern(fn):
                    self._entries.add(id(fn))
                    add(fn)
        if self.scope is Scope.ALL:
            for fn in idx.all_functions:
                if fn.name != "__init__" and (id(fn), id(None)) not in seen:
                    self._widened_roots.add(id(fn))
                    add(fn)
        elif self.scope is Scope.AUTO and idx.imports_torch:
            # library helpers and callable objects (augmentations, losses, matchers) that take tensors:
            # callers outside the checked files compile them
            candidates = list(idx.functions.values())
            # public methods of plain classes (a scheduler's step(model_output, timestep, sample)) are
            # library helpers like `__call__`: users call them inside compiled loops
            candidates += [m for c in idx.classes.values() if not c.is_module
                           for name, m in c.methods.items() if name == "__call__" or _public_method(m)]
            for fn in candidates:
                if (id(fn), id(None)) not in seen and id(fn) not in self._summary_roots() \
                        and self.signatures.has_tensor_params(fn):
                    self._library_roots.add(id(fn))
                    add(fn)
        if self.scope is Scope.ALL or (self.scope is Scope.AUTO and idx.imports_torch):
            # a base's method run on a subclass's instance (:func:`_template_methods`): the widest scope too
            for cls in idx.classes.values():
                for fn in _template_methods(cls) if not cls.is_module else ():
                    if self.signatures.has_tensor_params(fn):
                        self._library_roots.add(id(fn))
                        add(fn, cls)
        return roots

    def _summary_roots(self) -> set[int]:
        """Functions that incoming entries analyse anyway (with their callers' arguments)."""
        out = set()
        for name in self.entries:
            q, bound = split_entry(name)
            fn = self.function_named(q) if bound is None else None  # one subclass's run is not the class's own
            if fn is not None:
                out.add(id(fn))
        return out

    def matches_entry_pattern(self, fn: FunctionInfo) -> bool:
        names = [fn.qualname]
        if self.index.name:
            names.append(f"{self.index.name}.{fn.qualname}")
        return any(fnmatch.fnmatchcase(n, pat) for pat in self.entry_patterns for n in names)

    def compile_target(self, call: cst.Call, where: FunctionInfo | None
                       ) -> tuple[FunctionInfo, ClassInfo | None] | None:
        """What ``torch.compile(x)`` compiles: a function, or ``type(model).forward``."""
        if not call.args or call.args[0].keyword is not None:
            return None
        arg = call.args[0].value
        method = None
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name):
            method, arg = arg.attr.value, arg.value
        if isinstance(arg, cst.Call) and method is None:
            made = self._static_name_of(arg.func)  # `torch.compile(Model(...))`
            v = self.classes.instance(made.cls) if made is not None and made.cls is not None else None
        elif isinstance(arg, cst.Name):
            v = self._static_name(arg.value, where)
        else:
            return None
        if v is None:
            return None
        if v.kind is Kind.FUNCTION and v.func is not None and method is None:
            return v.func, None
        cls = v.cls
        if cls is None:
            return None
        fn = cls.find_method(method or "forward")
        return (fn, cls) if fn is not None else None

    def _static_name(self, name: str, where: FunctionInfo | None) -> Value | None:
        """A name's class or function, from the definitions, ``name = Class(...)`` assignments (also
        unpacked: ``env, agent = Env(), Agent()``) and a method's ``self``."""
        if where is not None and where.is_method and not where.is_classmethod \
                and where.param_names()[:1] == [name]:
            return self.classes.instance(where.cls)  # `torch.compile(self.step)` compiles this class's method
        scopes: list[Any] = [where.node.body] if where is not None else []
        scopes.append(self.index.module)
        for scope in scopes:
            for value in _assigned_values(scope, name):
                if isinstance(value, cst.Call):
                    callee = self._static_name_of(value.func)
                    if callee is not None and callee.cls is not None:
                        return self.classes.instance(callee.cls)
        return self._static_dotted(name)

    def _static_name_of(self, node: cst.BaseExpression) -> Value | None:
        from dynalint.analysis.syntax import dotted_name

        dotted = dotted_name(node)
        return self._static_dotted(dotted) if dotted is not None else None

    def _static_dotted(self, dotted: str) -> Value | None:
        """The class, function or value a dotted name denotes, without evaluating code."""
        head, _, rest = dotted.partition(".")
        v = self.names.global_value(head)
        for part in rest.split(".") if rest else ():
            if v is None or v.qualname is None:
                return None
            v = self.names.qualified_value(f"{v.qualname}.{part}")
        if v is not None and v.kind is Kind.FUNCTION and v.cls is not None:
            return Value(Kind.FUNCTION, cls=v.cls)
        return v


def _assigned_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values ``name = ...`` and ``a, name = ..., ...`` assign in a function body or module (not in
    nested scopes)."""
    from dynalint.analysis.syntax import walk

    out: list[cst.BaseExpression] = []
    for n in walk(scope, into_scopes=False):
        if not isinstance(n, cst.Assign):
            continue
        for t in n.targets:
            if isinstance(t.target, cst.Name) and t.target.value == name:
                out.append(n.value)
            elif isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(n.value, (cst.Tuple, cst.List)) \
                    and len(t.target.elements) == len(n.value.elements):
                out.extend(v.value for e, v in zip(t.target.elements, n.value.elements)
                           if isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
                           and e.value.value == name and isinstance(v, cst.Element))
    return out


def _template_methods(cls: ClassInfo) -> list[FunctionInfo]:
    """Public methods ``cls`` inherits that call a method of ``self`` it overrides (a base's
    ``integrate`` calling ``self._advance``): on an instance of ``cls`` they run its overrides, which
    the base's own analysis does not see."""
    from dynalint.analysis.syntax import walk

    out = []
    for base in list(cls.mro())[1:]:
        for name, fn in base.methods.items():
            if cls.find_method(name) is not fn or not _public_method(fn) or fn in out:
                continue
            self_name = fn.param_names()[0] if fn.param_names() else None
            if any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                   and isinstance(n.func.value, cst.Name) and n.func.value.value == self_name
                   and n.func.attr.value in cls.methods for n in walk(fn.node.body, into_scopes=False)):
                out.append(fn)
    return out


def _public_method(fn: FunctionInfo) -> bool:
    """An instance method callers outside the class use (not private, not a property or static helper)."""
    return not fn.name.startswith("_") and not fn.is_static and not fn.is_classmethod and not any(
        d in _PROPERTY_DECORATORS or d.endswith((".setter", ".deleter")) for d in fn.decorators)
