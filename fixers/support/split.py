"""Cutting a function in two at a statement of its own body: one part stays compiled, the other runs
outside the graph.

Three fixers make this cut (:mod:`dynalint.fixers.eager_tail`, :mod:`dynalint.fixers.eager_head`,
:mod:`dynalint.fixers.eager_callee`); they differ only in where they cut and which part they compile,
so the proofs the cut rests on live here, once:

* which functions can be cut at all (:func:`split_target`): a plain ``def`` with an indented body that
  Dynamo traces, and for a method an instance to call the new function on;
* which variables cross the cut (:func:`passed_names`): each one bound for certain where the second
  part starts, or the cut would raise ``NameError`` where the original did not;
* what the moved statements may not do (:func:`refuse_frame_dependence`,
  :func:`refuse_moved_compute`): read the calling frame, be a generator's body, run a forward pass
  eagerly;
* where the file compiles the function (:func:`compile_site`, :func:`split_form_site`), since the
  compile call or decorator must move to the part that stays compiled, and callers must still call
  the same name with the same arguments;
* the code each form generates (:func:`split_at`, :func:`plan_split`).

A change to any of these proofs then holds for every fixer that cuts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis import capture_settings
from dynalint.analysis import knowledge as K
from dynalint.analysis.module_index import local_names_of, names_bound_by
from dynalint.analysis.syntax import assigned_names, children, decorator_target, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixPlan, Refused
from dynalint.fixers.support.codegen import variable_names
from dynalint.rules.base import all_rules

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Break
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.fixers.support.context import FixContext

#: expressions that compute a tensor in the graph when their value is one
_TENSOR_OPERATIONS = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)
#: names whose call reads the calling frame: moved into another function, they would see another one
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})


# --------------------------------------------------------------------------------------------------------
# Which functions can be cut.
# --------------------------------------------------------------------------------------------------------

@dataclass
class SplitTarget:
    """A function a fixer may cut in two: a plain ``def`` with an indented body (a one-line body has no
    statement to cut at) that Dynamo traces (one run eagerly has no graph to split)."""

    function: "FunctionInfo"
    fdef: cst.FunctionDef
    method: bool
    """Defined in a class body: the new function is a method too, called on the same instance."""
    blank: int
    """Blank lines above the new function: one in a class or a function, two at module level."""
    body: list[cst.BaseStatement] = field(init=False)
    """The statements of the function's own body, where the cut falls."""

    def __post_init__(self) -> None:
        self.body = list(self.fdef.body.body)

    def instance_name(self) -> str | None:
        """For a method, its instance parameter (never rebound in it: the new function is called on it);
        None for a plain function.  Refused for a static method, class method or property."""
        return _instance_name(self.function, self.fdef) if self.method else None

    def refuse_super(self, stmts: list[cst.BaseStatement], what: str) -> None:
        """Refused when ``stmts``, which move into a new function, use ``super()`` or ``__class__`` outside
        a method: the new function would not be in the class, and they need it.  ``what`` names
        ``stmts`` in the reason."""
        if not self.method and any(isinstance(n, cst.Name) and n.value in ("super", "__class__")
                                   for s in stmts for n in walk(s)):
            raise Refused(f"{what} `super()`, which needs a method of the class")


def split_target(ctx: "FixContext", function: "FunctionInfo") -> SplitTarget | None:
    """``function`` as a :class:`SplitTarget`, or None when it is not one: the checks every fixer that
    cuts a function makes first, before it looks for where to cut."""
    fdef = function.node
    if not isinstance(fdef, cst.FunctionDef) or not isinstance(fdef.body, cst.IndentedBlock) \
            or runs_eagerly(ctx, function, fdef):
        return None
    scope = ctx.parent(ctx.parent(fdef)) if isinstance(ctx.parent(fdef), cst.IndentedBlock) else None
    method = isinstance(scope, cst.ClassDef)
    if method and fdef.name.value in _CONSTRUCTORS:
        return None  # it builds the object: a part of it moved elsewhere would build it elsewhere
    return SplitTarget(function, fdef, method, blank=1 if method or _nested(ctx, fdef) else 2)


_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__"})


def runs_eagerly(ctx: "FixContext", function: "FunctionInfo", fdef: cst.FunctionDef) -> bool:
    """The function is decorated with ``torch.compiler.disable`` (Dynamo never traces it)."""
    if function.disabled:
        return True
    for deco in fdef.decorators:
        target = decorator_target(deco)
        callee = target.func if isinstance(target, cst.Call) else target
        if ctx.program.index.resolve_expr(callee) in K.DISABLE_FUNCS:
            return True
    return False


def _nested(ctx: "FixContext", fdef: cst.FunctionDef) -> bool:
    """``fdef`` is defined inside another function (one blank line between definitions there)."""
    return ctx.enclosing_function(fdef) is not None


def _instance_name(function: "FunctionInfo", fdef: cst.FunctionDef) -> str:
    """The instance parameter of a method, never rebound in it (the helper is called on it)."""
    if function.is_static or function.is_classmethod or any(
            isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod", "property")
            for d in fdef.decorators):
        raise Refused("the function is a static method, class method or property: there is no instance to call "
                      "the helper on")
    params = [*fdef.params.posonly_params, *fdef.params.params]
    if not params:
        raise Refused("the method takes no instance parameter")
    name = params[0].name.value
    if any(name in names_bound_by(n) for n in walk(fdef.body)):
        raise Refused(f"`{name}` is rebound in the method: the helper could not be called on the instance")
    return name


# --------------------------------------------------------------------------------------------------------
# Where to cut, and what the moved statements may do.
# --------------------------------------------------------------------------------------------------------

def always_evaluated(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a statement that every run of it to its end evaluates: not a branch or loop body,
    a handler, the right of ``and``/``or``, a branch of ``x if c else y`` or a comprehension's element
    (a ``with`` block's statements are).  A cut falls only before a statement whose break or call
    happens on every run."""
    if isinstance(stmt, (cst.If, cst.While)):
        yield stmt
        yield from _always_expression(stmt.test)
    elif isinstance(stmt, cst.For):
        yield from _always_expression(stmt.iter)
    elif isinstance(stmt, cst.With):
        for item in stmt.items:
            yield from _always_expression(item.item)
        for inner in getattr(stmt.body, "body", ()):
            yield from always_evaluated(inner)
    elif isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        yield stmt
        for small in stmt.body:
            yield from _always_expression(small)


def _always_expression(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, cst.IfExp):
            stack.append(current.test)
        elif isinstance(current, cst.BooleanOperation):
            stack.append(current.left)
        elif isinstance(current, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            stack.append(current.for_in.iter)
        elif not isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            stack.extend(children(current))


def computes(ctx: "FixContext", stmt: cst.CSTNode) -> bool:
    """``stmt`` computes with tensors: a tensor operation or a module call (a forward pass).  The part
    that stays compiled needs one, or the compile is for nothing."""
    return any(isinstance(n, _TENSOR_OPERATIONS) and _is_tensor(ctx, n) for n in walk(stmt)) \
        or module_call(ctx, stmt) is not None


def may_compute(ctx: "FixContext", stmt: cst.CSTNode, named: bool = True) -> bool:
    """``stmt`` may compute with tensors: it :func:`computes`, or it calls what the analysis does not know
    (an unknown callable, or a function of the project) with an argument that may be a tensor
    (``model(x)`` with ``model`` and ``x`` parameters the analysis has no type for).  Statements that
    are moved out of the graph as Python bookkeeping must not: the work would run eagerly.  ``named``:
    any unknown callable counts (a function imported from a package the analysis does not read, a
    method of an unknown object), and a function of the project; without it, only a variable called
    as a function (``model(x)``), and a function of the project given a tensor or a module
    (``ppo_loss(agent, obs)`` returning a tuple), count, for a test that what stays compiled does some
    work."""
    if computes(ctx, stmt):
        return True
    for n in walk(stmt, into_scopes=False):
        if isinstance(n, cst.Call):
            callee = ctx.value(n.func)
            if callee is not None and callee.kind not in (Kind.UNKNOWN, Kind.FUNCTION):
                continue
            variable = isinstance(n.func, cst.Name) and (callee is None or callee.kind is Kind.UNKNOWN)
            if not named and not variable and (callee is None or callee.kind is not Kind.FUNCTION):
                continue
            # (without `named`, a function of the project counts when it is given a tensor or a module)
            maybe = (Kind.TENSOR, Kind.UNKNOWN, Kind.MODULE, Kind.SEQUENCE) if named or variable \
                else (Kind.TENSOR, Kind.MODULE)
            for arg in n.args:
                value = ctx.value(arg.value)
                if (value is None and (named or variable)) or value is not None and value.kind in maybe:
                    return True
    return False


def _is_tensor(ctx: "FixContext", node: cst.CSTNode) -> bool:
    value = ctx.value(node)
    return value is not None and value.kind is Kind.TENSOR


def module_call(ctx: "FixContext", stmt: cst.CSTNode) -> cst.Call | None:
    """A call of an ``nn.Module`` in ``stmt`` (a forward pass), if any: moved out of the graph, it would
    run eagerly."""
    for n in walk(stmt, into_scopes=False):
        if isinstance(n, cst.Call):
            callee = ctx.value(n.func)
            if callee is not None and callee.kind is Kind.MODULE:
                return n
    return None


def refuse_frame_dependence(fdef: cst.FunctionDef, tail: list[cst.BaseStatement]) -> None:
    """Refused for a generator or coroutine, ``global``/``nonlocal`` declarations, and moved statements
    that read the calling frame: in another function, each would mean something else."""
    if fdef.asynchronous is not None:
        raise Refused("the function is `async`: its end cannot move into a plain function")
    for n in walk(fdef.body, into_scopes=False):
        if isinstance(n, (cst.Yield, cst.Await)):
            raise Refused("the function is a generator or awaits: its end cannot move into a plain function")
        if isinstance(n, (cst.Global, cst.Nonlocal)):
            raise Refused("the function declares `global`/`nonlocal` names: the helper would bind them as its own")
    for stmt in tail:
        for n in walk(stmt):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value in _FRAME_READERS:
                raise Refused(f"the moved statements call `{n.func.value}()`, which reads the calling frame")


def refuse_moved_compute(ctx: "FixContext", before: list[cst.BaseStatement], tail: list[cst.BaseStatement]) -> None:
    """Refused when the statements kept compiled hold no tensor operation nor module call (the compile
    would be for nothing), or the moved ones call a module (a forward pass would run eagerly)."""
    if not any(may_compute(ctx, stmt, named=False) for stmt in before):
        raise Refused("no tensor operation comes before the call: the function would run eagerly in all but name")
    for stmt in tail:
        call = module_call(ctx, stmt)
        if call is not None:
            raise Refused(f"the moved statements call the module `{shown(ctx, call.func)}`: its forward "
                          "pass would run eagerly")


def marked_noqa(ctx: "FixContext", breaks: "list[Break]") -> int | None:
    """The line of one of ``breaks`` whose finding a ``# noqa`` comment suppresses, if any: the user keeps
    that break where it is, so the code around it stays as written."""
    codes = [rule.code for rule in all_rules() if rule.kind == "graph-break"]
    for r in ctx.ranges(b.node for b in breaks).values():
        if any(ctx.noqa.suppresses((r.line, r.end_line), code, record=False) for code in codes):
            return r.line
    return None


def shown(ctx: "FixContext", stmt: cst.CSTNode) -> str:
    """The first line of a statement, without the comments above it, shortened (for a fix's message)."""
    if hasattr(stmt, "leading_lines"):
        stmt = stmt.with_changes(leading_lines=())
    lines = ctx.code(stmt).strip().splitlines()
    return shortened(lines[0] if lines else "")


def shortened(code: str) -> str:
    """``code`` cut at 40 characters, so that a message stays one readable line."""
    return code if len(code) <= 40 else code[:37] + "..."


# --------------------------------------------------------------------------------------------------------
# The variables that cross the cut.
# --------------------------------------------------------------------------------------------------------

def passed_names(fdef: cst.FunctionDef, before: list[cst.BaseStatement], tail: list[cst.BaseStatement],
                 self_name: str | None) -> list[str]:
    """The local variables the moved statements use that the function has when they start (its
    parameters, what the statements before bind), in order of first use; refused when one of them may
    be unbound there."""
    local = local_names_of(fdef)[0]
    params = set(param_names(fdef))
    maybe = params | {name for stmt in before for n in walk(stmt) for name in names_bound_by(n)}
    certain = (params | _bound_for_certain(before)) - _deleted(before)
    used = variables_used(tail, (local & maybe) - {self_name})
    unsure = [name for name in used if name not in certain]
    if unsure:
        raise Refused(f"`{unsure[0]}` may be unbound where the moved statements start: passing it to the helper "
                      "would raise there")
    return used


def _bound_for_certain(stmts: list[cst.BaseStatement]) -> set[str]:
    """Names that running ``stmts`` to their end binds whatever the data: their simple statements'
    assignments and imports, definitions, ``with ... as`` and what a ``with`` block binds this way, and
    what every branch of an ``if`` with an ``else`` binds (:func:`_bound_by_if`)."""
    out: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    out.update(x for t in small.targets for x in assigned_names(t.target))
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)) and not (
                        isinstance(small, cst.AnnAssign) and small.value is None):
                    out.update(assigned_names(small.target))
                elif isinstance(small, (cst.Import, cst.ImportFrom)):
                    out.update(names_bound_by(small))
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            out.add(stmt.name.value)
        elif isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock):
            for item in stmt.items:
                out.update(names_bound_by(item))
            out |= _bound_for_certain(list(stmt.body.body))
        elif isinstance(stmt, cst.If):
            out |= _bound_by_if(stmt) or set()
    return out


def _bound_by_if(stmt: cst.If) -> set[str] | None:
    """Names an ``if``/``elif``/``else`` binds for certain on every path that runs on past it: those
    every branch binds, a branch that ends in ``return`` or ``raise`` aside (None when none runs on).
    Without an ``else``, the test may be false and nothing is bound."""
    if stmt.orelse is None:
        return set()
    other = _bound_by_if(stmt.orelse) if isinstance(stmt.orelse, cst.If) else _bound_by_block(stmt.orelse.body)
    this = _bound_by_block(stmt.body)
    if this is None or other is None:
        return other if this is None else this
    return this & other


def _bound_by_block(block: cst.BaseSuite) -> set[str] | None:
    """What running ``block`` to its end binds for certain; None when it ends the function (a ``return``
    or ``raise`` among its own statements: what follows it is never reached from there)."""
    stmts = list(block.body) if isinstance(block, cst.IndentedBlock) else [cst.SimpleStatementLine(body=block.body)]
    if any(isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in stmt.body)
           for stmt in stmts):
        return None
    return _bound_for_certain(stmts)


def _deleted(stmts: list[cst.BaseStatement]) -> set[str]:
    return {name for stmt in stmts for n in walk(stmt) if isinstance(n, cst.Del)
            for name in assigned_names(n.target)}


def docstring_count(body: list[cst.BaseStatement]) -> int:
    """1 when ``body`` starts with a docstring (it stays with the function), else 0."""
    first = body[0] if body else None
    return int(isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
               and isinstance(first.body[0], cst.Expr)
               and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def param_names(fdef: cst.FunctionDef) -> list[str]:
    """The parameter names of ``fdef``, in order (``*args`` and ``**kwargs`` included)."""
    p = fdef.params
    star = [s for s in (p.star_arg,) if isinstance(s, cst.Param)]
    kwargs = [p.star_kwarg] if p.star_kwarg is not None else []
    return [x.name.value for x in (*p.posonly_params, *p.params, *star, *p.kwonly_params, *kwargs)]


def variables_used(stmts: list[cst.BaseStatement], names: "set[str] | frozenset[str]") -> list[str]:
    """The names of ``names`` that ``stmts`` use as variables (not ``x.attr`` nor ``f(key=...)``), in
    order of first use."""
    used = (n.value for stmt in stmts for n, _ in variable_names(stmt) if n.value in names)
    return list(dict.fromkeys(used))


# --------------------------------------------------------------------------------------------------------
# Where the file compiles the function: the compile call or decorator moves to the compiled part.
# --------------------------------------------------------------------------------------------------------

@dataclass
class CompileSite:
    """Where the file compiles the function: its decorators (``@torch.compile``, and the
    ``torch._dynamo.config.patch`` ones above it), or the statement ``f = torch.compile(f)``."""

    decorators: list[cst.Decorator]
    """The decorators that move to the compiled part (empty for a compile call)."""
    line: cst.SimpleStatementLine | None = None
    """The statement of the compile call."""
    assign: cst.Assign | None = None
    arg: cst.BaseExpression | None = None
    """The compiled function in the call: ``f`` or ``obj.method``."""
    alias: str | None = None
    """The other name the compiled function is bound to (``step_fn = torch.compile(step)``)."""
    hoisted: bool = False
    """The compile call is a statement of another function (``step_fn = torch.compile(step)`` in
    ``main()``): it becomes a decorator of the compiled part, in ``decorators``, and the statement binds
    the alias to the function."""


def compile_places(ctx: "FixContext", function: "FunctionInfo",
                   fdef: cst.FunctionDef) -> tuple[list[cst.Call], list[cst.Decorator]]:
    """The compile calls of this file that compile the function, and its compile decorators."""
    index = ctx.program.index
    calls = [call for call, where in index.compile_targets
             if index.resolve_expr(call.func) in capture_settings.COMPILE_FUNCTIONS
             and (ctx.program.entry_points.compile_target(call, where) or (None,))[0] is function]
    decorators = [d for d in fdef.decorators
                  if index.resolve_expr(decorator_target(d)) in capture_settings.COMPILE_FUNCTIONS]
    return calls, decorators


def compile_site(ctx: "FixContext", function: "FunctionInfo", fdef: cst.FunctionDef, self_name: str | None,
                 calls: list[cst.Call], decorators: list[cst.Decorator],
                 decorated: bool = False) -> CompileSite | None:
    """The one place where this file compiles the function (``calls`` and ``decorators`` from
    :func:`compile_places`), in a form the split can move: None when it is compiled elsewhere or twice,
    or the place is not one the split can move (see :func:`_decorator_site` and :func:`_call_site`)."""
    if len(calls) + len(decorators) != 1 or (function.compile_decorated and not decorators):
        return None
    if decorators:
        return _decorator_site(ctx, fdef, decorators[0])
    return _call_site(ctx, function, fdef, calls[0], self_name, decorated)


def split_form_site(ctx: "FixContext", function: "FunctionInfo", fdef: cst.FunctionDef,
                    before: list[cst.BaseStatement], passed: list[str], self_name: str | None,
                    decorated: bool = False) -> CompileSite | None:
    """The one place where this file compiles the function, when the split form - ``before`` compiled,
    the rest run after it - keeps what callers see: None (the disable form then) when the function is
    compiled elsewhere or twice, when the compiled part would return early, read a variable only the
    moved statements bind, or hand back a function it defines, or when the compile call is not one the
    split can move (see :func:`compile_site`)."""
    head = before[docstring_count(before):]
    if any(isinstance(n, cst.Return) for stmt in head for n in walk(stmt, into_scopes=False)):
        return None  # the compiled part could end the function before the rest
    bound = set(param_names(fdef)) | {x for stmt in head for n in walk(stmt) for x in names_bound_by(n)}
    if set(variables_used(head, local_names_of(fdef)[0])) - bound:
        return None  # a local variable read before any assignment: a global in the compiled part
    defined = {x for stmt in head for n in walk(stmt, into_scopes=False) for x in _defined_callables(n)}
    if defined & set(passed):
        return None  # a function or generator made in the graph, handed back out of it
    return compile_site(ctx, function, fdef, self_name, *compile_places(ctx, function, fdef), decorated)


def _decorator_site(ctx: "FixContext", fdef: cst.FunctionDef, compile_decorator: cst.Decorator) -> CompileSite | None:
    """``@torch.compile`` as the innermost decorator, under nothing but ``torch._dynamo.config.patch``
    (which then holds while the compiled part is traced): they all move.  Another decorator wraps the
    whole function, and one under the compile call is compiled with it: the split would change either."""
    index = ctx.program.index
    if fdef.decorators[-1] is not compile_decorator:
        return None
    for deco in fdef.decorators[:-1]:
        if not isinstance(deco.decorator, cst.Call) \
                or index.resolve_expr(deco.decorator.func) != capture_settings.PATCH_FUNCTION:
            return None
    return CompileSite(decorators=list(fdef.decorators))


def _call_site(ctx: "FixContext", function: "FunctionInfo", fdef: cst.FunctionDef, call: cst.Call,
               self_name: str | None, decorated: bool = False) -> CompileSite | None:
    """``f = torch.compile(f, ...)`` or ``f_c = torch.compile(f, ...)`` at module level for a function of
    the module (``f`` then used nowhere else: it becomes a function that is partly compiled), and
    ``obj.m = torch.compile(obj.m, ...)`` for a method that no class of the file overrides (on the
    instance, as the compiled method was),
    possibly wrapped in ``torch._dynamo.config.patch(...)``; run once (not in a loop).  ``decorated``:
    the function may have decorators (a split whose function keeps them around the call of the
    compiled part)."""
    index = ctx.program.index
    if fdef.decorators and not decorated:
        return None  # what is compiled is what the decorators made of the function
    top: cst.CSTNode = call
    while isinstance(ctx.parent(top), cst.Arg):
        outer = ctx.parent(ctx.parent(top))
        if not (isinstance(outer, cst.Call) and len(outer.args) == 1 and isinstance(outer.func, cst.Call)
                and index.resolve_expr(outer.func.func) == capture_settings.PATCH_FUNCTION):
            return None
        top = outer
    assign = ctx.parent(top)
    line = ctx.parent(assign)
    if not (isinstance(assign, cst.Assign) and assign.value is top and len(assign.targets) == 1
            and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None
    current = ctx.parent(line)
    while current is not None:
        if isinstance(current, (cst.For, cst.While)):
            return None
        current = ctx.parent(current)
    arg, target, name = call.args[0].value, assign.targets[0].target, fdef.name.value
    site = CompileSite(decorators=[], line=line, assign=assign, arg=arg)
    if self_name is not None:
        cls = function.cls
        if cls is None or any(cls in other.mro() and other is not cls and name in other.methods
                              for other in index.classes.values()):
            return None  # a subclass's own method would be compiled, not the split one
        same = isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name) and arg.attr.value == name \
            and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
            and target.value.value == arg.value.value
        if not same:
            return None
        if target.attr.value != name:
            # `self.step = torch.compile(self._step)`: the instance's `step` becomes the partly compiled
            # method, when nothing else uses `_step` (an eager call of it would run the compiled part)
            uses = [n for n in walk(ctx.module) if isinstance(n, cst.Attribute) and n.attr.value == name
                    and n is not arg]
            if uses:
                return None
            site.alias = f"{target.value.value}.{target.attr.value}"
        return site
    if not (isinstance(arg, cst.Name) and arg.value == name and isinstance(target, cst.Name)
            and ctx.parent(fdef) is ctx.module):
        return None
    enclosing = ctx.enclosing_function(assign)
    if enclosing is not None:
        decorator = _hoisted_decorator(ctx, fdef, call, top, line, enclosing, target, decorated)
        if decorator is None:
            return None
        site = CompileSite(decorators=[decorator], line=line, assign=assign, arg=arg, hoisted=True)
    if target.value != name:
        uses = [n for n in _name_uses(ctx.module, name) if n is not arg]
        if uses:
            return None  # called eagerly elsewhere: it would run the compiled part there
        site.alias = target.value
    return site


def _hoisted_decorator(ctx: "FixContext", fdef: cst.FunctionDef, call: cst.Call, top: cst.CSTNode,
                       line: cst.SimpleStatementLine, enclosing: cst.FunctionDef,
                       target: cst.Name, decorated: bool = False) -> cst.Decorator | None:
    """``step_fn = torch.compile(step, ...)`` as a statement of the body of a function such as ``main()``
    (not in a branch, loop or ``with``: it runs whenever that function does), compiling an undecorated
    function, or one whose decorators the split keeps around the call of the compiled part (``decorated``:
    ``@torch.no_grad()`` then still holds where it runs): the same call as a decorator,
    ``@torch.compile(...)``, on the compiled part.  torch.compile
    only wraps the function; nothing is traced before the first call, so compiling at import is the same.
    None when the options read a variable of the enclosing function (they would not exist at module
    level), when ``torch.compile`` is wrapped (``config.patch(...)(...)``), or when the statement binds
    the function's own name (that name would then be a local read before assignment)."""
    if top is not call or (fdef.decorators and not decorated) or target.value == fdef.name.value:
        return None
    if ctx.parent(line) is not enclosing.body or not isinstance(enclosing.body, cst.IndentedBlock):
        return None
    local = local_names_of(enclosing)[0]
    options = [a.value for a in call.args[1:]]
    if any(isinstance(n, cst.Name) and n.value in local for part in (call.func, *options) for n in walk(part)):
        return None
    if len(call.args) == 1:
        return cst.Decorator(decorator=call.func)
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) if i == len(call.args) - 2 else a
            for i, a in enumerate(call.args[1:])]
    return cst.Decorator(decorator=call.with_changes(args=args))


def _defined_callables(n: cst.CSTNode) -> list[str]:
    """Names ``n`` binds to a function, class, lambda or generator it makes."""
    if isinstance(n, (cst.FunctionDef, cst.ClassDef)):
        return [n.name.value]
    if isinstance(n, cst.Assign) and isinstance(n.value, (cst.Lambda, cst.GeneratorExp)):
        return [x for t in n.targets for x in assigned_names(t.target)]
    return []


def _name_uses(module: cst.Module, name: str) -> list[cst.Name]:
    """The uses of ``name`` as a variable in the module (reads and bindings, not ``x.name`` nor
    ``f(name=...)`` nor the name of a definition)."""
    return [n for n, parent in variable_names(module) if n.value == name
            and not (isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is n)]


def calls_compiled_part(ctx: "FixContext", before: list[cst.BaseStatement]) -> bool:
    """``before`` (its docstring aside) is one call of a function this file compiles, its result
    assigned or not: the split form, whose rest is meant to run outside the graph (cut already)."""
    head = before[docstring_count(before):]
    if len(head) != 1 or not isinstance(head[0], cst.SimpleStatementLine) or len(head[0].body) != 1:
        return False
    small = head[0].body[0]
    value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    index = ctx.program.index

    def compiles(expr: cst.CSTNode) -> bool:
        return any(isinstance(n, cst.Call) and index.resolve_expr(n.func) in capture_settings.COMPILE_FUNCTIONS
                   for n in walk(expr))

    for n in walk(ctx.module):
        if isinstance(n, cst.FunctionDef) and n.name.value == name \
                and any(index.resolve_expr(decorator_target(d)) in capture_settings.COMPILE_FUNCTIONS
                        for d in n.decorators):
            return True  # ``@torch.compile`` on a function of that name (nested ones included)
        if isinstance(n, cst.Assign) and compiles(n.value) and any(
                getattr(t.target.attr if isinstance(t.target, cst.Attribute) else t.target, "value", None) == name
                for t in n.targets):
            return True  # ``name = torch.compile(name)``, ``obj.name = torch.compile(obj.name)``
    return False


# --------------------------------------------------------------------------------------------------------
# The code of the two parts.
# --------------------------------------------------------------------------------------------------------

def plan_split(ctx: "FixContext", fdef: cst.FunctionDef, start: int, site: CompileSite, passed: list[str],
               self_name: str | None, n_breaks: int, blank: int) -> FixPlan:
    """The split form: the statements before the moved ones become the compiled function (the compile
    call or decorator moves to it), and ``fdef`` calls it and runs the rest outside the graph."""
    name = fdef.name.value
    head_name = ctx.helper_name(name, "compiled")
    body = list(fdef.body.body)
    head = body[docstring_count(body):start]
    bound = {x for stmt in head for n in walk(stmt) for x in names_bound_by(n)}
    returned = [x for x in passed if x in bound]
    used = set(variables_used(head, set(param_names(fdef))))
    params = [x for x in param_names(fdef) if x in used and x != self_name]
    plan = FixPlan(f"compile `{head_name}`, the statements of `{name}` before `{shown(ctx, body[start])}`, and "
                   f"run those from there on after it, outside the compiled code: no graph break instead of "
                   f"{n_breaks}; they run eagerly", "unsafe")
    plan.replace(fdef, _split_compiled(fdef, start, head_name, params, returned, self_name, site.decorators,
                                       blank, keep_decorators=site.hoisted))
    if site.line is not None:
        plan.replace(site.line, moved_compile_call(site, name, head_name))
    return plan


def merged_split(ctx: "FixContext", fdef: cst.FunctionDef, start: int, passed: list[str],
                 self_name: str | None, n_breaks: int) -> FixPlan | None:
    """The split form when ``fdef`` is already the compiled part of another function: called once in the
    file, by the last statement ``return fdef(a, b)`` (``return self.fdef(a, b)`` in a method of the
    same class) of a function that is not compiled itself and hands on its own variables of the
    parameters' names (what :mod:`dynalint.fixers.eager_head` writes).  The statements from ``start``
    on then move into that caller, after the call, instead of into a third function: ``fdef`` keeps
    its compile decorator or call and returns what they read.  None when the form does not fit: then
    :func:`plan_split`."""
    name = fdef.name.value
    index = ctx.program.index
    uses = [n for n in walk(ctx.module) if isinstance(n, cst.Attribute) and n.attr.value == name
            or isinstance(n, cst.Name) and n.value == name and ctx.parent(n) is not fdef
            and not isinstance(ctx.parent(n), cst.Attribute)]
    calls = [n for n in uses if isinstance(ctx.parent(n), cst.Call) and ctx.parent(n).func is n]
    if len(calls) != 1:
        return None
    call = ctx.parent(calls[0])
    outer = ctx.enclosing_function(call)
    if outer is None or ctx.parent(outer) is not ctx.parent(fdef) or any(
            index.resolve_expr(decorator_target(d)) in capture_settings.COMPILE_FUNCTIONS for d in outer.decorators):
        return None
    if any(n is not calls[0] and not _in_compile_line(ctx, n) for n in uses):
        return None  # used otherwise: passed on, or called eagerly elsewhere
    if outer.asynchronous is not None or any(isinstance(n, (cst.Yield, cst.Await))
                                             for n in walk(outer.body, into_scopes=False)):
        return None  # a `return` moved into a generator or coroutine would mean something else
    outer_body = list(outer.body.body) if isinstance(outer.body, cst.IndentedBlock) else []
    last = outer_body[-1] if outer_body else None
    if not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1
            and isinstance(last.body[0], cst.Return) and last.body[0].value is call):
        return None
    params = param_names(fdef)
    if self_name is not None:
        outer_params = param_names(outer)
        if not (outer_params and outer_params[0] == self_name and isinstance(calls[0], cst.Attribute)
                and isinstance(calls[0].value, cst.Name) and calls[0].value.value == self_name):
            return None
        params = params[1:]
    elif not isinstance(calls[0], cst.Name):
        return None
    if len(call.args) != len(params) or any(
            arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Name) or arg.value.value != p
            for arg, p in zip(call.args, params)):
        return None  # the caller's variables are not the parameters' names
    body = list(fdef.body.body)
    head, tail = body[docstring_count(body):start], body[start:]
    own, outer_local = local_names_of(fdef)[0], local_names_of(outer)[0]
    free = {n.value for stmt in tail for n, _ in variable_names(stmt)} - own
    if free & outer_local:
        return None  # a global of the compiled part is a variable of the caller
    bound = {x for stmt in head for n in walk(stmt) for x in names_bound_by(n)}
    returned = [x for x in passed if x in bound]
    used = set(variables_used(head, set(params)))
    kept = [x for x in params if x in used]
    callee = f"{self_name}.{name}" if self_name else name
    call_text = f"{callee}({', '.join(kept)})"
    call_stmt = cst.parse_statement(f"{', '.join(returned)} = {call_text}\n" if returned else f"{call_text}\n")
    call_stmt = call_stmt.with_changes(leading_lines=last.leading_lines)
    head_body = body[:start] + ([cst.parse_statement(f"return {', '.join(returned)}\n")] if returned else [])
    remaining = [p for i, p in enumerate(fdef.params.params)
                 if p.name.value in kept or (i == 0 and self_name is not None)]
    if remaining:
        remaining[-1] = remaining[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new_params = fdef.params.with_changes(params=remaining)
    plan = FixPlan(f"compile only the statements of `{name}` before `{shown(ctx, body[start])}`, and run those from "
                   f"there on in `{outer.name.value}`, after it, outside the compiled code: no graph break "
                   f"instead of {n_breaks}; they run eagerly", "unsafe")
    plan.replace(outer, outer.with_changes(body=outer.body.with_changes(body=[*outer_body[:-1], call_stmt, *tail])))
    plan.replace(fdef, fdef.with_changes(params=new_params, body=fdef.body.with_changes(body=head_body)))
    return plan


def _in_compile_line(ctx: "FixContext", node: cst.CSTNode) -> bool:
    """``node`` is in a statement that calls ``torch.compile`` (``f = torch.compile(f)``)."""
    while node is not None and not isinstance(node, cst.SimpleStatementLine):
        node = ctx.parent(node)
    return node is not None and any(
        isinstance(n, cst.Call) and ctx.program.index.resolve_expr(n.func) in capture_settings.COMPILE_FUNCTIONS
        for n in walk(node))


def split_at(fdef: cst.FunctionDef, start: int, helper_name: str, passed: list[str], self_name: str | None,
             helper_decorators: list[cst.Decorator], decorators: list[cst.Decorator], blank: int
             ) -> cst.FlattenSentinel:
    """``fdef`` with ``decorators``, ending in ``return <helper>(<passed>)`` (on ``self_name`` for a method),
    followed by the helper: the statements from ``start`` on, with ``helper_decorators``.  Comment lines
    above the first moved statement move with it, blank lines before them stay above the call."""
    body = list(fdef.body.body)
    tail = body[start:]
    callee = f"{self_name}.{helper_name}" if self_name else helper_name
    call = cst.parse_statement(f"return {callee}({', '.join(passed)})\n")
    leading = list(getattr(tail[0], "leading_lines", ()))
    comment = next((i for i, line in enumerate(leading) if line.comment is not None), len(leading))
    call = call.with_changes(leading_lines=leading[:comment])
    if hasattr(tail[0], "leading_lines"):
        tail[0] = tail[0].with_changes(leading_lines=leading[comment:])
    params = ([self_name] if self_name else []) + passed
    helper = cst.parse_statement(f"def {helper_name}({', '.join(params)}):\n    pass\n")
    assert isinstance(helper, cst.FunctionDef)
    if helper_decorators:
        helper_decorators = [helper_decorators[0].with_changes(leading_lines=()), *helper_decorators[1:]]
    helper_body = fdef.body.with_changes(body=tail, header=cst.TrailingWhitespace(), footer=())
    helper = helper.with_changes(decorators=helper_decorators, body=helper_body,
                                 leading_lines=[cst.EmptyLine(indent=False)] * blank)
    wrapper = fdef.with_changes(decorators=decorators, body=fdef.body.with_changes(body=[*body[:start], call]))
    return cst.FlattenSentinel([wrapper, helper])


def moved_compile_call(site: CompileSite, name: str, head_name: str) -> cst.CSTNode | cst.FlattenSentinel:
    """The compile statement, compiling the compiled part instead (``_f_compiled = torch.compile(
    _f_compiled)``), followed by ``f_c = f`` where it bound another name."""
    if site.hoisted:  # the compiled part carries the compile call as its decorator
        return cst.parse_statement(f"{site.alias} = {name}\n").with_changes(leading_lines=site.line.leading_lines)
    arg, target = site.arg, site.assign.targets[0].target
    renamed = {
        id(arg): arg.with_changes(attr=cst.Name(head_name)) if isinstance(arg, cst.Attribute) else cst.Name(head_name),
        id(target): target.with_changes(attr=cst.Name(head_name)) if isinstance(target, cst.Attribute)
        else cst.Name(head_name),
    }
    line = site.line.visit(_Swap(renamed))
    if site.alias is None:
        return line
    method = f"{arg.value.value}.{name}" if isinstance(arg, cst.Attribute) else name
    return cst.FlattenSentinel([line, cst.parse_statement(f"{site.alias} = {method}\n")])


class _Swap(cst.CSTTransformer):
    """Replaces given nodes (by identity) in a tree."""

    def __init__(self, swaps: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.swaps = swaps

    def on_leave(self, original_node, updated_node):
        return self.swaps.get(id(original_node), updated_node)


def _split_compiled(fdef: cst.FunctionDef, start: int, head_name: str, params: list[str], returned: list[str],
                    self_name: str | None, decorators: list[cst.Decorator], blank: int,
                    keep_decorators: bool = False) -> cst.FlattenSentinel:
    """``fdef`` calling ``head_name`` and running the statements from ``start`` on, followed by
    ``head_name``: the statements before (its docstring aside), returning ``returned``, with
    ``decorators``: those moved from ``fdef``, or with ``keep_decorators`` new ones (a compile call made a
    decorator), ``fdef`` keeping its own (``@torch.no_grad()`` around the call of the compiled part).
    Comments stay with the statements they are above."""
    body = list(fdef.body.body)
    doc = docstring_count(body)
    callee = f"{self_name}.{head_name}" if self_name else head_name
    call = f"{callee}({', '.join(params)})"
    call_stmt = cst.parse_statement(f"{', '.join(returned)} = {call}\n" if returned else f"{call}\n")
    head_body = body[doc:start]
    if returned:
        head_body.append(cst.parse_statement(f"return {', '.join(returned)}\n"))
    head = cst.parse_statement(f"def {head_name}({', '.join(([self_name] if self_name else []) + params)}):\n"
                               "    pass\n")
    assert isinstance(head, cst.FunctionDef)
    if decorators:
        decorators = [decorators[0].with_changes(leading_lines=()), *decorators[1:]]
    head = head.with_changes(
        decorators=decorators, leading_lines=[cst.EmptyLine(indent=False)] * blank,
        body=fdef.body.with_changes(body=head_body, header=cst.TrailingWhitespace(), footer=()))
    wrapper = fdef.with_changes(decorators=() if decorators and not keep_decorators else fdef.decorators,
                                body=fdef.body.with_changes(body=[*body[:doc], call_stmt, *body[start:]]))
    return cst.FlattenSentinel([wrapper, head])
