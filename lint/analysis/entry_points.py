"""Entry points: which functions of a module are analysed as compiled code (``forward``, functions
handed to ``torch.compile``, configured patterns, and per scope the library helpers), and what a
``torch.compile(x)`` call compiles.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.class_model import _PROPERTY_DECORATORS
from dynalint.analysis.interface import ProgramParts
from dynalint.analysis.module_index import ClassInfo, FunctionInfo, body_bindings, decorated, names_bound_by
from dynalint.analysis.number_callers import called_here_only
from dynalint.analysis.program_part import ProgramPart
from dynalint.analysis.project import split_entry
from dynalint.analysis.syntax import dotted_name, position_bound, walk
from dynalint.analysis.values import UNKNOWN_VALUE, Kind, Value
from dynalint.config.settings import Scope


class EntryPoints(ProgramPart[ProgramParts]):
    """Which functions of one module the analysis starts from, and why: it owns the sets that say how a
    root was found, since what a root's parameters are (graph inputs, or a library caller's values) and
    whether its findings count as compiled code depend on it."""

    def __init__(self, program: ProgramParts) -> None:
        super().__init__(program)
        self.entered: set[int] = set()
        """Functions handed to torch.compile (or matched by a configured pattern): their parameters are the
        graph's inputs, like ``forward``'s."""
        self.library: set[int] = set()
        """Roots only because they take tensors (scope auto): callers outside the checked files may compile
        them."""
        self.widened: set[int] = set()
        """Roots only because the scope is ALL (analysed after every other root)."""

    def roots(self) -> list[tuple[FunctionInfo, ClassInfo | None]]:
        """Entry points of this module: (function, class of ``self`` when it is inherited)."""
        program = self.program
        idx = program.index
        roots: list[tuple[FunctionInfo, ClassInfo | None]] = []
        seen: set[tuple[int, int]] = set()

        def add(fn: FunctionInfo | None, bound: ClassInfo | None = None) -> None:
            if fn is None or fn.disabled or fn.custom_op is not None or fn.constant_result:
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
                # a `__call__` in place of `nn.Module`'s is what `torch.compile(module)` runs (its
                # `super().__call__(...)` runs `forward`)
                call = cls.instance_method("__call__")
                if call is not None:
                    add(call, cls if call.cls is not cls else None)
        for fn in idx.all_functions:
            if fn.compile_decorated:
                self.entered.add(id(fn))
                add(fn)
            for node in fn.nested_compiled:  # `@torch.compile def train_step` inside `main()`
                nested = self.nested_function(fn, node)
                self.entered.add(id(nested))
                add(nested)
        compiled = [(call.args[0].value, where) for call, where in idx.compile_targets
                    if call.args and call.args[0].keyword is None]
        for arg, where in [*compiled, *self._wrapped_targets()]:
            target = self.target_of(arg, where)
            for fn, cls in [target] if target is not None else self.loop_targets(arg, where):
                if fn.owner is not idx:
                    program.calls.note_outgoing(fn, None, compiled=True, bound=cls)
                    continue
                # the compiled function's (or module's forward's) arguments are the graph's inputs
                self.entered.add(id(fn))
                add(fn, cls)
        for arg, where in self._forward_hooks():
            target = self.target_of(arg, where)
            if target is not None and target[0].owner is idx:
                add(*target)
        if program.entry_patterns:
            for fn in idx.all_functions:
                if self.matches_pattern(fn):
                    self.entered.add(id(fn))
                    add(fn)
        if program.scope is Scope.ALL:
            for fn in idx.all_functions:
                if fn.name != "__init__" and (id(fn), id(None)) not in seen:
                    self.widened.add(id(fn))
                    add(fn)
        elif program.scope is Scope.AUTO and idx.imports_torch:
            # library helpers and callable objects (augmentations, losses, matchers) that take tensors:
            # callers outside the checked files compile them
            candidates = list(idx.functions.values())
            # public methods of plain classes (a scheduler's step(model_output, timestep, sample)) are
            # library helpers like `__call__`: users call them inside compiled loops
            candidates += [m for c in idx.classes.values() if not c.is_module
                           for name, m in c.methods.items() if name == "__call__" or _public_method(m)]
            summarised = self._summary_roots()
            # a file that compiles code of its own is a script: a helper it only calls itself (a method of
            # its own objects) is analysed where compiled code calls it, and runs eagerly elsewhere
            script = idx.compiles_code
            for fn in candidates:
                if (id(fn), id(None)) not in seen and id(fn) not in summarised \
                        and program.signatures.has_tensor_params(fn) \
                        and not (script and called_here_only(program, fn)):
                    self.library.add(id(fn))
                    add(fn)
        if program.scope is Scope.ALL or (program.scope is Scope.AUTO and idx.imports_torch):
            # a base's method run on a subclass's instance (:func:`_template_methods`): the widest scope too
            for cls in idx.classes.values():
                for fn in _template_methods(cls) if not cls.is_module else ():
                    if program.signatures.has_tensor_params(fn):
                        self.library.add(id(fn))
                        add(fn, cls)
        return roots

    def _forward_hooks(self) -> list[tuple[cst.BaseExpression, FunctionInfo | None]]:
        """The hooks this module registers to run inside a module's call (``self.proj.register_forward_hook(
        self._record)``), with the function each registration sits in: Dynamo traces them as part of the
        module's ``forward``, so they are roots as ``forward`` is, whoever calls them."""
        found = []
        for name in K.FORWARD_HOOK_REGISTRATIONS:
            for call, where in self.program.index.call_sites.get(name, ()):
                given = [a.value for a in call.args if (a.keyword is None and not a.star)
                         or (a.keyword is not None and a.keyword.value == "hook")]
                if given:
                    found.append((given[0], where))
        return found

    def _summary_roots(self) -> set[int]:
        """Functions that incoming entries analyse anyway (with their callers' arguments)."""
        program = self.program
        out = set()
        for name in program.entries:
            q, bound = split_entry(name)
            fn = program.calls.function_named(q) if bound is None else None  # one subclass's run is not the class's own
            if fn is not None:
                out.add(id(fn))
        return out

    def matches_pattern(self, fn: FunctionInfo) -> bool:
        """Whether a configured entry-point pattern names ``fn`` (by qualname, or with the module's name)."""
        program = self.program
        names = [fn.qualname]
        if program.index.name:
            names.append(f"{program.index.name}.{fn.qualname}")
        return any(fnmatch.fnmatchcase(n, pat) for pat in program.entry_patterns for n in names)

    def _wrapped_targets(self) -> list[tuple[cst.BaseExpression, FunctionInfo | None]]:
        """What the module's own compile wrappers compile (``def maybe_compile(fn): return torch.compile(fn)``:
        a module-level function that hands one of its parameters to ``torch.compile``, or a name bound to a
        lambda that does, ``c = lambda f: torch.compile(f)``): at each call of one in the module (of the
        lambda's name, where it is bound), the argument passed for that parameter (``maybe_compile(step)``
        compiles ``step``), with the calling function."""
        idx = self.program.index
        out: list[tuple[cst.BaseExpression, FunctionInfo | None]] = []
        for call, where in idx.compile_targets:
            if not call.args or call.args[0].keyword is not None or type(call.args[0].value) is not cst.Name:
                continue
            param = call.args[0].value.value
            wrapper = _lambda_wrapper(call, where, idx.module)  # `c = lambda f: torch.compile(f)`; `c(fn)`
            if wrapper is not None:
                name, names = wrapper
                sites = [(site, caller) for site, caller in idx.call_sites.get(name, ()) if caller is where]
            elif where is not None and where.cls is None and idx.functions.get(where.name) is where:
                name, names, sites = where.name, where.param_names(), idx.call_sites.get(where.name, [])
            else:
                continue
            if param not in names:
                continue
            position = names.index(param)
            for site, caller in sites:
                if type(site.func) is not cst.Name or any(a.star for a in site.args):
                    continue
                given = [a for a in site.args if a.keyword is not None and a.keyword.value == param] or \
                    [a for a in site.args[position:position + 1] if a.keyword is None]
                if given:
                    out.append((given[0].value, caller))
        return out

    def nested_function(self, parent: FunctionInfo, node: cst.FunctionDef) -> FunctionInfo:
        """The function ``node`` defines inside ``parent`` as an entry point of its own: its names from the
        enclosing function are not known (it is not analysed where it is defined), the same object for the
        same definition."""
        made: dict[int, FunctionInfo] = parent.derived("nested entry points", lambda _: {})
        info = made.get(id(node))
        if info is None or info.node is not node:
            decorators, compiled, disabled = decorated(self.program.index, node)
            info = made[id(node)] = FunctionInfo(
                node=node, name=node.name.value, qualname=f"{parent.qualname}.{node.name.value}",
                decorators=decorators, compile_decorated=compiled, disabled=disabled, outer=parent.outer or parent)
        self.program.calls.prepare_function(info)
        info.closure = self._objects_made_in(parent)
        return info

    def _objects_made_in(self, parent: FunctionInfo) -> dict[str, Value]:
        """The names ``parent`` binds once, to an object it builds (``model = Net().to(device)``, ``opt =
        torch.optim.SGD(...)``), and its parameters annotated as such an object (``opt: torch.optim.Optimizer``)
        that it does not bind again: what a function it defines and compiles finds there.  A name bound
        otherwise or more than once is left unknown."""
        bound: dict[str, int] = {}
        made: dict[str, Value] = {}
        for n in walk(parent.node.body, into_scopes=False):
            for name in names_bound_by(n):
                bound[name] = bound.get(name, 0) + 1
            if type(n) is cst.Assign and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name:
                value = self._object_made(n.value)
                if value is not None:
                    made[n.targets[0].target.value] = value
        found = {name: value for name, value in made.items() if bound.get(name) == 1}
        for name, declared in self.program.signatures.declared_types(parent).items():
            if name not in bound and declared.kind is not Kind.TENSOR and (declared.cls is not None or (
                    declared.kind is Kind.UNKNOWN and declared.qualname is not None)):
                found[name] = declared
        return found

    def _object_made(self, expr: cst.BaseExpression) -> Value | None:
        """The object a call builds: an instance of a class of the checked code, a ``torch.nn`` module, a
        ``torch.optim`` optimizer or scheduler, a gradient scaler (through methods that return it:
        ``.to(device)``, ``.eval()``)."""
        while type(expr) is cst.Call and type(expr.func) is cst.Attribute and expr.func.attr.value in _RETURN_SELF:
            expr = expr.func.value
        if type(expr) is not cst.Call:
            return None
        callee = self.program.names.static_value_of(expr.func)
        if callee is not None and callee.cls is not None and callee.kind is Kind.FUNCTION:
            return self.program.classes.instance(callee.cls)
        dotted = dotted_name(expr.func)
        q = (self.program.index.resolve(dotted) or dotted) if dotted is not None else ""
        if f"{q}()" in _STATE_OBJECTS:  # a random number generator: its state lives outside the graph
            return Value(Kind.UNKNOWN, qualname=f"{q}()")
        last = q.rpartition(".")[2]
        if not last[:1].isupper():
            return None
        if q.startswith("torch.nn.") and not q.startswith("torch.nn.functional.") and last not in K.NN_TENSOR_CLASSES:
            return Value(Kind.MODULE, qualname=q)
        if q.startswith("torch.optim.") or K.skipped_torch_instance(q + "()"):
            return Value(Kind.UNKNOWN, qualname=q + "()")
        return None

    def compile_target(self, call: cst.Call, where: FunctionInfo | None
                       ) -> tuple[FunctionInfo, ClassInfo | None] | None:
        """What ``torch.compile(x)`` compiles: a function, or ``type(model).forward``."""
        if not call.args or call.args[0].keyword is not None:
            return None
        return self.target_of(call.args[0].value, where)

    def target_of(self, arg: cst.BaseExpression, where: FunctionInfo | None
                  ) -> tuple[FunctionInfo, ClassInfo | None] | None:
        """What compiling ``arg`` (written in ``where``) compiles."""
        arg = self._method_named(arg, where)
        whole, method = arg, None
        if isinstance(arg, cst.Attribute):
            method, arg = arg.attr.value, arg.value
        v = self._static_object(arg, where)
        if v is None:
            return None
        if v.kind is Kind.FUNCTION and v.func is not None and method is None:
            return v.func, None
        cls = v.cls
        if cls is None:
            return None
        fn = cls.find_method(method) if method is not None else None
        if method is not None and fn is None:
            v = self._static_object(whole, where)  # `agent.actor`: a module (an object) the object holds
            cls = v.cls if v is not None else None
            if cls is None:
                return None
            method = None
        # (compiling an object that is not a module compiles what calling it runs: its class's `__call__`)
        fn = fn or cls.find_method(method or ("forward" if cls.is_module or v.kind is Kind.MODULE else "__call__"))
        return (fn, cls) if fn is not None else None

    def loop_targets(self, arg: cst.BaseExpression, where: FunctionInfo | None
                      ) -> list[tuple[FunctionInfo, ClassInfo | None]]:
        """What compiling the variable of a loop over a table compiles: each function of ``for fn in (f, g):``
        or ``for fn, args in CASES:`` (a tuple or list written out, or a name bound once to one)."""
        if type(arg) is not cst.Name:
            return []
        found: list[tuple[FunctionInfo, ClassInfo | None]] = []
        scopes: list[Any] = [where.node.body] if where is not None else [self.program.index.module]
        for loop in (n for scope in scopes for n in walk(scope, into_scopes=False) if type(n) is cst.For):
            position = position_bound(loop.target, arg.value)
            rows = _table(loop.iter, scopes[0], self.program.index.module) if position is not None else None
            for row in rows or ():
                item = row if position == -1 else \
                    row.elements[position].value if type(row) in (cst.Tuple, cst.List) \
                    and position < len(row.elements) else None
                target = self.target_of(item, where) if item is not None else None
                if target is not None:
                    found.append(target)
        return found

    def _method_named(self, arg: cst.BaseExpression, where: FunctionInfo | None, follow: bool = True
                      ) -> cst.BaseExpression:
        """``getattr(model, "encode")`` read as ``model.encode``, and a name bound once (in ``where``, else in
        the module) to such an expression (``fn = model.encode``) read as that expression; else ``arg``."""
        if type(arg) is cst.Call and dotted_name(arg.func) == "getattr" and len(arg.args) == 2 \
                and type(arg.args[1].value) is cst.SimpleString:
            attr = arg.args[1].value.evaluated_value
            if isinstance(attr, str) and attr.isidentifier():
                return cst.Attribute(value=arg.args[0].value, attr=cst.Name(attr))
        if type(arg) is cst.Name and follow:
            values = _first_binding(arg.value, where, self.program.index.module)
            if values:
                named = self._method_named(values[0], where, follow=False) if len(values) == 1 else arg
                return named if type(named) is cst.Attribute else arg
        return arg

    def _static_object(self, expr: cst.BaseExpression, where: FunctionInfo | None) -> Value | None:
        """The object or function ``expr`` is, written in ``where``: one a call builds (``Model(...).eval()``),
        a name's (:meth:`_static_name`), or a submodule of one (``tagger.crf``)."""
        if type(expr) is cst.Call:
            return self._object_made(expr) or self._factory_result(expr, where) \
                or self.partial_target(expr, where)
        if type(expr) is cst.Name:
            return self._static_name(expr.value, where)
        if type(expr) is cst.Attribute:
            base = self._static_object(expr.value, where)
            if base is not None and base.cls is not None and base.kind is not Kind.FUNCTION:
                member = self.program.classes.member(base, expr.attr.value)
                return member if member.cls is not None and member.kind is not Kind.FUNCTION else None
        return None

    def _static_name(self, name: str, where: FunctionInfo | None) -> Value | None:
        """A name's class or function, from the definitions, ``name = Class(...)`` assignments (also
        unpacked: ``env, agent = Env(), Agent()``) and a method's ``self``."""
        names, classes = self.program.names, self.program.classes
        if where is not None and where.is_method and not where.is_classmethod \
                and where.param_names()[:1] == [name]:
            return classes.instance(where.cls)  # `torch.compile(self.step)` compiles this class's method
        scopes: list[Any] = [where.node.body] if where is not None else []
        if where is not None:  # `torch.compile(eval_step)` of a function defined there
            for n in walk(where.node.body, into_scopes=False):
                if type(n) is cst.FunctionDef and n.name.value == name:
                    return Value(Kind.FUNCTION, func=self.nested_function(where, n))
        scopes.append(self.program.index.module)
        for scope in scopes:
            for value in _assigned_values(scope, name):
                made = self._object_made(value)
                if made is not None and made.cls is not None:
                    return made
                if type(value) is cst.Call and made is None:
                    function = self._factory_result(value, where)  # `step = make_step(model, opt)`
                    if function is not None:
                        return function
        return names.static_value(name)

    def _factory_result(self, call: cst.Call, where: FunctionInfo | None) -> Value | None:
        """The function a call of a factory of the module returns (``torch.compile(make_step(model, opt))``
        with ``def make_step(model, opt): def step(x): ...; return step``): its nested definition, whose
        names from the factory are the objects the factory builds and those this call passes it."""
        callee = self.program.names.static_value_of(call.func)
        factory = callee.func if callee is not None and callee.kind is Kind.FUNCTION else None
        bound = None
        if factory is None and type(call.func) is cst.Attribute:
            # a method of an object the module builds (`store.make_hook("fc")`), bound to that object
            owner = self._static_object(call.func.value, where)
            method = owner.cls.find_method(call.func.attr.value) \
                if owner is not None and owner.cls is not None and owner.kind is not Kind.FUNCTION else None
            if method is not None and not method.is_static and not method.is_classmethod:
                factory, bound = method, owner
        if factory is None or (factory.cls is not None and bound is None) \
                or factory.owner is not self.program.index:
            return None
        node = _returned_definition(factory.node)
        if node is None:
            return None
        nested = self.nested_function(factory, node)
        names = factory.param_names()
        passed: dict[str, Value] = {}
        if bound is not None:
            passed[names[0]] = bound
            names = names[1:]
        rebound = factory.derived("names bound in the body", body_bindings)
        for position, arg in enumerate(call.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None \
                else names[position] if position < len(names) else None
            if name is None or name in rebound:
                continue
            value = self._argument_object(arg.value, where)
            if value is not None:
                passed[name] = value
        nested.closure = {**(nested.closure or {}), **passed}
        return Value(Kind.FUNCTION, func=nested)

    def partial_target(self, call: cst.Call, where: FunctionInfo | None) -> Value | None:
        """``functools.partial(train_step, model, opt)`` of a function of the module: that function as an
        entry point of its own whose bound parameters hold the objects the partial binds (a model, an
        optimizer: :meth:`_argument_object`; another argument is left unknown), the same object for the same
        call.  Dynamo traces the partial's call of the function, so what breaks in it breaks the compiled
        call."""
        if self.program.index.resolve_expr(call.func) != "functools.partial" or not call.args \
                or call.args[0].keyword is not None or call.args[0].star:
            return None
        target = self._static_object(call.args[0].value, where)
        fn = target.func if target is not None and target.kind is Kind.FUNCTION else None
        if fn is None or fn.cls is not None or fn.owner is not self.program.index:
            return None
        names = fn.param_names()
        bound: dict[str, Value] = {}
        for position, arg in enumerate(call.args[1:]):
            if arg.star:
                return None
            name = arg.keyword.value if arg.keyword is not None \
                else names[position] if position < len(names) else None
            value = self._argument_object(arg.value, where) if name is not None else None
            bound[name or ""] = value if value is not None else UNKNOWN_VALUE
        made: dict[int, FunctionInfo] = fn.derived("partial entry points", lambda _: {})
        info = made.get(id(call))
        if info is None:
            info = made[id(call)] = dataclasses.replace(fn, _derived={})
            self.program.calls.prepare_function(info)
        info.bound = bound
        return Value(Kind.FUNCTION, func=info)

    def _argument_object(self, expr: cst.BaseExpression, where: FunctionInfo | None) -> Value | None:
        """The object ``expr`` (an argument written in ``where``) is: one built there (``opt =
        torch.optim.SGD(...)``, bound once) or that :meth:`_static_object` knows."""
        if type(expr) is cst.Name:
            values = _first_binding(expr.value, where, self.program.index.module)
            if values:
                return self._object_made(values[0]) if len(values) == 1 else None
        return self._static_object(expr, where)


#: methods of a module or an optimizer that return the object itself
_RETURN_SELF = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16",
                          "requires_grad_", "manual_seed"})
_STATE_OBJECTS = frozenset({K.TORCH_GENERATOR, "random.Random()"}) | K.NUMPY_GENERATOR_OBJECTS


def _table(iterable: cst.BaseExpression, scope: cst.CSTNode, module: cst.Module
           ) -> list[cst.BaseExpression] | None:
    """The rows of a tuple or list written out, directly or bound once to a name in ``scope`` or the
    module."""
    if type(iterable) is cst.Name:
        values = _first_binding(iterable.value, scope, module)
        iterable = values[0] if len(values) == 1 else iterable
    if type(iterable) not in (cst.Tuple, cst.List):
        return None
    return [e.value for e in iterable.elements if type(e) is cst.Element]


def _returned_definition(fdef: cst.FunctionDef) -> cst.FunctionDef | None:
    """The function ``fdef`` defines in its own body and returns, by name, from every ``return``."""
    returned: set[str] = set()
    defined: dict[str, list[cst.FunctionDef]] = {}
    for n in walk(fdef.body, into_scopes=False):
        if type(n) is cst.Return:
            if type(n.value) is not cst.Name:
                return None
            returned.add(n.value.value)
        elif type(n) is cst.FunctionDef:
            defined.setdefault(n.name.value, []).append(n)
    if len(returned) != 1:
        return None
    nodes = defined.get(returned.pop(), [])
    return nodes[0] if len(nodes) == 1 else None


def _lambda_wrapper(call: cst.Call, where: FunctionInfo | None, module: cst.Module
                    ) -> tuple[str, list[str]] | None:
    """The name and the parameters of the lambda whose body is ``call``, when it is bound by an assignment
    to that name alone in ``where`` (the module's own statements when None)."""
    for n in walk(where.node.body if where is not None else module, into_scopes=False):
        if type(n) is cst.Assign and type(n.value) is cst.Lambda and n.value.body is call \
                and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name:
            params = n.value.params
            return n.targets[0].target.value, [p.name.value for p in (*params.posonly_params, *params.params)]
    return None


def _first_binding(name: str, where: "FunctionInfo | cst.CSTNode | None", module: cst.Module
                   ) -> list[cst.BaseExpression]:
    """The values ``name`` is assigned in ``where`` (a function's body or a node), else in the module:
    a name with one value here is read as that value, one with several as none of them."""
    scope = where.node.body if isinstance(where, FunctionInfo) else where
    for node in (scope, module):
        values = _assigned_values(node, name) if node is not None else []
        if values:
            return values
    return []


def _assigned_values(scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values ``name = ...`` and ``a, name = ..., ...`` assign in a function body or module (not in
    nested scopes)."""
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
