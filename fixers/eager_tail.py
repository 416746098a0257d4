"""Several graph breaks at the end of a compiled function -> that end run outside the compiled code.

Before::

    import torch

    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.1)

    @torch.compile
    def step(x):
        loss = ((w * x).sum() - 1.0) ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

After::

    import torch

    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.1)

    def step(x):
        loss = _step_compiled(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()


    @torch.compile
    def _step_compiled(x):
        loss = ((w * x).sum() - 1.0) ** 2
        return loss

Some calls break the graph whatever the flags: ``optimizer.zero_grad()`` (skipped by Dynamo),
``loss.backward()`` and ``optimizer.step()`` (which calls ``torch._dynamo.graph_break()`` itself),
``load_state_dict``, a call into an extension.  Dynamo breaks at each, resumes in a new frame and
compiles the few operations until the next one, so a training step ends in a chain of breaks and
small graphs (measured on torch 2.13: three breaks for the update above).  Where the file compiles
the function itself (``@torch.compile`` on it, ``f = torch.compile(f)``, ``f_c = torch.compile(f)``,
``obj.m = torch.compile(obj.m)``), the statements before the first such call become the compiled
function, returning the variables the rest reads, and the function calls it, then runs the rest as
plain Python: callers call the same name with the same arguments and get the same result, and Dynamo
sees no break at all (measured: none, outputs and trained weights bitwise those of the code run
eagerly).  The compile call or decorator moves to the compiled part (``_f_compiled =
torch.compile(_f_compiled)``, then ``f_c = f``).  Elsewhere (a function the file does not compile, a
module's ``forward``), the statements from the first such call to the end, moved as they are into a
function decorated with ``torch.compiler.disable`` and called there, break the graph once, at the
call (measured: one break, "Skip calling torch.compiler.disable()d function"), and run eagerly, as
they did between the breaks::

    def step(x):  # compiled by its callers
        loss = ((w * x).sum() - 1.0) ** 2
        return _step_eager(loss)


    @torch.compiler.disable
    def _step_eager(loss):
        opt.zero_grad()
        ...

Applies from the first statement of the function's own body that makes such a call on every run
(not in a branch or loop body of it, nor behind ``and``/``or``: a ``warnings.warn`` under a flag breaks
only when the flag is on), when the statements from there to the end break the graph at two or more
statements on every run.  The moved statements start earlier over the statements right before that
one which break on every run where no capture flag helps (``if not torch.isfinite(loss):``, an op
Dynamo cannot capture) and call no module.  The helper follows the function in its block, so it sees
the same globals and enclosing variables: a method's helper is a method of its class, called on the
same instance (``self._learn_eager(...)``).

Proves, or refuses: the function is neither a generator nor ``async`` and declares nothing ``global``
or ``nonlocal``; a tensor operation or a module call stays compiled before the moved statements; they
call no module (a forward pass would run eagerly); they use no ``locals()``, ``vars()``,
``eval``/``exec`` (which see the frame), nor ``super()`` outside a method; each local variable of the
function that they use and the statements before them may bind (a parameter, or an assignment before
them) is bound for certain when they start - a parameter, or bound by a statement of the body itself
(or of a ``with`` block in it), and deleted by none - and is passed to the helper; a method is neither
static nor a class method, and its instance parameter is never rebound.  The helper's name is new to
the file.  A break in the moved statements marked ``# noqa`` leaves the function as written (the user
keeps that break where it is).

The split form proves, or the disable form is used: the function is compiled at one place of the file.
As a decorator, ``@torch.compile`` is the innermost one, under nothing but
``torch._dynamo.config.patch(...)`` (all move to the compiled part; another decorator wraps the whole
function).  As a call, its result is assigned and it is wrapped in nothing but such a patch, run once
(not in a loop), and the function has no decorator; ``f = torch.compile(f)`` and ``f_c =
torch.compile(f)`` are statements of the module for a function of the module, and ``f`` is used
nowhere else for the latter (an eager call of ``f`` would run the compiled part); a method is compiled
on one instance with ``obj.m = torch.compile(obj.m)`` (the compiled part is then set on that instance,
as the compiled method was), and no subclass in the file overrides it (``self.m`` would then compile
the override).  The compiled part holds no ``return``, reads no local variable that it
does not bind or take as a parameter, and returns no function, class, lambda or generator it makes
(a value Dynamo would have to build outside the graph).  Its parameters are those of the function it
reads, passed as they are; it returns the variables it binds that the rest reads.  A docstring stays
with the function.  The split falls between two statements of the function's own body, so no ``try``
or ``with`` holds both parts, and an exception raised in either reaches the caller as before.

Unsafe (hazards): what the helper calls is not compiled either (``torch.compiler.disable`` holds for
the functions it calls), so tensor work after the first break that Dynamo compiled in pieces now runs
eagerly: slower where that work is heavy, and computed as eager code computes it, which can differ in
rounding from what the compiled pieces gave (measured on the user scripts of ``benchmarks/userfiles``:
an optimizer step traced by Dynamo rounds differently from eager's, and the moved one gives eager's
results bitwise).  A traceback through the moved code shows the helper's frame.  In the split form the
compiled part is a new name: ``torch._dynamo`` logs and guards name it, code that inspects the
compiled callable (``f_c._orig_mod``, ``f_c.__wrapped__``) finds the plain function, and another
module importing ``f`` gets the partly compiled function.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis import capture_settings
from dynalint.analysis.breaks import Cause, capture_flag
from dynalint.analysis.module_index import local_names_of, names_bound_by
from dynalint.analysis import knowledge as K
from dynalint.analysis.syntax import assigned_names, children, decorator_target, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch, variable_names
from dynalint.rules.base import all_rules

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Break
    from dynalint.fixers.support.context import FixContext

#: expressions that compute a tensor in the graph when their value is one
_TENSOR_OPERATIONS = (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript)
#: names whose call reads the calling frame: moved into another function, they would see another one
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "dir"})


@register
class EagerTail(Fixer):
    name = "eager-tail"
    codes = ("DYN105",)
    safety = "unsafe"
    summary = ("Run the end of a compiled function that breaks the graph several times (backward, optimizer "
               "step...) outside the compiled code: where the file compiles the function, compile only the part "
               "before it (no break); elsewhere, move it into one `torch.compiler.disable`d helper (one break).")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                w = torch.nn.Parameter(torch.ones(4))
                opt = torch.optim.SGD([w], lr=0.1)

                @torch.compile(backend="eager")
                def step(x):
                    loss = ((w * x).sum() - 1.0) ** 2
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return loss.detach()
            """,
            after="""
                import torch

                w = torch.nn.Parameter(torch.ones(4))
                opt = torch.optim.SGD([w], lr=0.1)

                def step(x):
                    loss = _step_compiled(x)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return loss.detach()


                @torch.compile(backend="eager")
                def _step_compiled(x):
                    loss = ((w * x).sum() - 1.0) ** 2
                    return loss
            """,
            target="step",
            compile_target=False,
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Learner(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.lin = nn.Linear(4, 1)
                        self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)

                    def forward(self, x):
                        loss = self.lin(x).pow(2).mean()
                        # update the weights
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
                        return loss.detach(), loss.item()
            """,
            after="""
                import torch
                import torch.nn as nn

                class Learner(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.lin = nn.Linear(4, 1)
                        self.opt = torch.optim.SGD(self.lin.parameters(), lr=0.1)

                    def forward(self, x):
                        loss = self.lin(x).pow(2).mean()
                        return self._forward_eager(loss)

                    @torch.compiler.disable
                    def _forward_eager(self, loss):
                        # update the weights
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
                        return loss.detach(), loss.item()
            """,
            inputs="[(torch.randn(3, 4),), (torch.randn(3, 4),), (torch.randn(3, 4),)]",
            target="Learner",
        ),
    ]

    def plan(self, finding, ctx: "FixContext") -> FixPlan | None:
        brk: Break | None = finding.brk
        if brk is None or brk.cause is not Cause.UNTRACEABLE_CALL:
            return None
        function = brk.event.function
        fdef = function.node
        if not isinstance(fdef, cst.FunctionDef) or not isinstance(fdef.body, cst.IndentedBlock) \
                or _runs_eagerly(ctx, function, fdef):
            return None
        body = list(fdef.body.body)
        always = {id(n): i for i, stmt in enumerate(body) for n in _always(stmt)}
        own = [b for b in ctx.breaks if b.event.function is function and id(b.node) in always]
        anchor = min((b for b in own if b.cause is Cause.UNTRACEABLE_CALL), key=lambda b: always[id(b.node)],
                     default=None)
        if anchor is None or anchor.node is not brk.node:
            return None  # one plan per function, made for its first call that breaks on every run
        start = _start(ctx, body, always, own, always[id(anchor.node)])
        tail = body[start:]
        if _calls_compiled_part(ctx, body[:start]):
            return None  # already split: the compiled part is called, the rest runs outside the graph
        breaks = {id(b.statement) for b in own if always[id(b.node)] >= start}
        if len(breaks) < 2:
            if len(tail) == 1 and _calls_disabled(ctx, tail[0]):
                return None  # already a call of an eager helper
            raise Refused("the statements from this call to the end of the function break the graph once on "
                          "every run: an eager helper would break it there as well")
        moved = {id(n) for stmt in tail for n in walk(stmt)}
        marked = _marked_noqa(ctx, [b for b in ctx.breaks if b.event.function is function and id(b.node) in moved])
        if marked is not None:
            return None  # a break the user keeps (``# noqa``): the code around it stays as written
        if start == 0:
            raise Refused("the call is the function's first statement: the whole function would run eagerly")
        _refuse_frame_dependence(fdef, tail)
        _refuse_moved_compute(ctx, body[:start], tail)
        scope = ctx.parent(ctx.parent(fdef)) if isinstance(ctx.parent(fdef), cst.IndentedBlock) else None
        method = isinstance(scope, cst.ClassDef)
        self_name = _instance_name(function, fdef) if method else None
        if not method and any(isinstance(n, cst.Name) and n.value in ("super", "__class__")
                              for s in tail for n in walk(s)):
            raise Refused("the moved statements call `super()`, which needs a method of the class")
        passed = _passed_names(fdef, body[:start], tail, self_name)
        site = _compile_site(ctx, function, fdef, body[:start], tail, passed, self_name)
        if site is not None:
            return plan_split(ctx, fdef, start, site, passed, self_name, len(breaks),
                              blank=1 if method or _nested(ctx, fdef) else 2)
        helper_name = ctx.fresh_name(f"_{fdef.name.value}_eager", ctx.module)
        plan = FixPlan(f"move the statements from `{_shown(ctx, body[start])}` on into `{helper_name}`, "
                       "decorated with torch.compiler.disable: one graph break there instead of "
                       f"{len(breaks)}; they run eagerly", self.safety)
        torch = use_torch(plan, ctx, fdef)
        replacement = _split(fdef, start, helper_name, passed, self_name, torch,
                             blank=1 if method or _nested(ctx, fdef) else 2)
        plan.replace(fdef, replacement)
        return plan


def plan_split(ctx, fdef: cst.FunctionDef, start: int, site: "_CompileSite", passed: list[str],
               self_name: str | None, n_breaks: int, blank: int) -> FixPlan:
    """The split form: the statements before the moved ones become the compiled function (the compile
    call or decorator moves to it), and ``fdef`` calls it and runs the rest outside the graph."""
    name = fdef.name.value
    head_name = ctx.fresh_name(f"_{name}_compiled", ctx.module)
    body = list(fdef.body.body)
    head = body[_docstring_count(body):start]
    bound = {x for stmt in head for n in walk(stmt) for x in names_bound_by(n)}
    returned = [x for x in passed if x in bound]
    used = set(_variables_used(head, set(_param_names(fdef))))
    params = [x for x in _param_names(fdef) if x in used and x != self_name]
    plan = FixPlan(f"compile `{head_name}`, the statements of `{name}` before `{_shown(ctx, body[start])}`, and "
                   f"run those from there on after it, outside the compiled code: no graph break instead of "
                   f"{n_breaks}; they run eagerly", "unsafe")
    plan.replace(fdef, _split_compiled(fdef, start, head_name, params, returned, self_name, site.decorators,
                                       blank))
    if site.line is not None:
        plan.replace(site.line, _moved_compile_call(site, name, head_name))
    return plan


def _split(fdef: cst.FunctionDef, start: int, helper_name: str, passed: list[str], self_name: str | None,
           torch: str, blank: int) -> cst.FlattenSentinel:
    """``fdef`` ending in ``return <helper>(<passed>)`` (on ``self_name`` for a method), followed by the
    helper: the statements from ``start`` on, under ``@<torch>.compiler.disable``."""
    disable = cst.Decorator(decorator=cst.parse_expression(f"{torch}.compiler.disable"))
    return split_at(fdef, start, helper_name, passed, self_name, [disable], list(fdef.decorators), blank)


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


def _start(ctx, body: list[cst.BaseStatement], always: dict[int, int], own: "list[Break]", anchor: int) -> int:
    """Where the moved statements start: at the anchor's statement, or earlier over the statements right
    before it that break the graph on every run where no capture flag helps (``if not
    torch.isfinite(loss):`` before the update): moved too, their breaks go with them."""
    start = anchor
    while start > 0 and any(always[id(b.node)] == start - 1 and capture_flag(b) is None for b in own) \
            and not _module_call(ctx, body[start - 1]):
        start -= 1
    return start


def _always(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of a statement that every run of it to its end evaluates: not a branch or loop body,
    a handler, the right of ``and``/``or``, a branch of ``x if c else y`` or a comprehension's element
    (a ``with`` block's statements are)."""
    if isinstance(stmt, (cst.If, cst.While)):
        yield stmt
        yield from _always_expression(stmt.test)
    elif isinstance(stmt, cst.For):
        yield from _always_expression(stmt.iter)
    elif isinstance(stmt, cst.With):
        for item in stmt.items:
            yield from _always_expression(item.item)
        for inner in getattr(stmt.body, "body", ()):
            yield from _always(inner)
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


def _refuse_frame_dependence(fdef: cst.FunctionDef, tail: list[cst.BaseStatement]) -> None:
    """Refused for a generator or coroutine, ``global``/``nonlocal`` declarations, and moved statements
    that read the calling frame."""
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


def _refuse_moved_compute(ctx, before: list[cst.BaseStatement], tail: list[cst.BaseStatement]) -> None:
    """Refused when the statements kept compiled hold no tensor operation nor module call (the compile
    would be for nothing), or the moved ones call a module (a forward pass would run eagerly)."""
    if not any(isinstance(n, _TENSOR_OPERATIONS) and _is_tensor(ctx, n) for stmt in before for n in walk(stmt)) \
            and not any(_module_call(ctx, stmt) is not None for stmt in before):
        raise Refused("no tensor operation comes before the call: the function would run eagerly in all but name")
    for stmt in tail:
        call = _module_call(ctx, stmt)
        if call is not None:
            raise Refused(f"the moved statements call the module `{_shown(ctx, call.func)}`: its forward "
                          "pass would run eagerly")


def _module_call(ctx, stmt: cst.CSTNode) -> cst.Call | None:
    """A call of an ``nn.Module`` in ``stmt`` (a forward pass), if any."""
    for n in walk(stmt, into_scopes=False):
        if isinstance(n, cst.Call):
            callee = ctx.value(n.func)
            if callee is not None and callee.kind is Kind.MODULE:
                return n
    return None


def _marked_noqa(ctx, breaks: "list[Break]") -> int | None:
    """The line of one of ``breaks`` whose finding a ``# noqa`` comment suppresses, if any."""
    codes = [rule.code for rule in all_rules() if rule.kind == "graph-break"]
    for r in ctx.ranges(b.node for b in breaks).values():
        if any(ctx.noqa.suppresses((r.line, r.end_line), code, record=False) for code in codes):
            return r.line
    return None


def _runs_eagerly(ctx, function, fdef: cst.FunctionDef) -> bool:
    """The function is decorated with ``torch.compiler.disable`` (Dynamo never traces it)."""
    if function.disabled:
        return True
    for deco in fdef.decorators:
        target = decorator_target(deco)
        callee = target.func if isinstance(target, cst.Call) else target
        if ctx.program.index.resolve_expr(callee) in K.DISABLE_FUNCS:
            return True
    return False


def _calls_disabled(ctx, stmt: cst.CSTNode) -> bool:
    """``stmt`` calls a function of the file decorated with ``torch.compiler.disable``."""
    for n in walk(stmt, into_scopes=False):
        if isinstance(n, cst.Call):
            name = n.func.attr.value if isinstance(n.func, cst.Attribute) else getattr(n.func, "value", None)
            if any(fn.disabled and fn.name == name for fn in ctx.program.index.all_functions):
                return True
    return False


def _is_tensor(ctx, node: cst.CSTNode) -> bool:
    value = ctx.value(node)
    return value is not None and value.kind is Kind.TENSOR


def _instance_name(function, fdef: cst.FunctionDef) -> str:
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


def _passed_names(fdef: cst.FunctionDef, before: list[cst.BaseStatement], tail: list[cst.BaseStatement],
                  self_name: str | None) -> list[str]:
    """The local variables the moved statements use that the function has when they start (its
    parameters, what the statements before bind), in order of first use; refused when one of them may
    be unbound there."""
    local = local_names_of(fdef)[0]
    params = set(_param_names(fdef))
    maybe = params | {name for stmt in before for n in walk(stmt) for name in names_bound_by(n)}
    certain = (params | _bound_for_certain(before)) - _deleted(before)
    used = _variables_used(tail, (local & maybe) - {self_name})
    unsure = [name for name in used if name not in certain]
    if unsure:
        raise Refused(f"`{unsure[0]}` may be unbound where the moved statements start: passing it to the helper "
                      "would raise there")
    return used


def _bound_for_certain(stmts: list[cst.BaseStatement]) -> set[str]:
    """Names that running ``stmts`` to their end binds whatever the data: their simple statements'
    assignments and imports, definitions, ``with ... as`` and what a ``with`` block binds this way."""
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
    return out


def _deleted(stmts: list[cst.BaseStatement]) -> set[str]:
    return {name for stmt in stmts for n in walk(stmt) if isinstance(n, cst.Del)
            for name in assigned_names(n.target)}


def _nested(ctx, fdef: cst.FunctionDef) -> bool:
    """``fdef`` is defined inside another function (one blank line between definitions there)."""
    return ctx.enclosing_function(fdef) is not None


def _shown(ctx, stmt: cst.CSTNode) -> str:
    """The first line of a statement, without the comments above it, shortened."""
    if hasattr(stmt, "leading_lines"):
        stmt = stmt.with_changes(leading_lines=())
    lines = ctx.code(stmt).strip().splitlines()
    code = lines[0] if lines else ""
    return code if len(code) <= 40 else code[:37] + "..."


# --------------------------------------------------------------------------------------------------------
# The split form: the compiled part returns what the rest needs, and the rest runs outside the graph.
# --------------------------------------------------------------------------------------------------------

@dataclass
class _CompileSite:
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


def _compile_site(ctx, function, fdef: cst.FunctionDef, before: list[cst.BaseStatement],
                  tail: list[cst.BaseStatement], passed: list[str], self_name: str | None,
                  decorated: bool = False) -> _CompileSite | None:
    """The one place where this file compiles the function, when the split form keeps what callers see:
    None (the disable form then) when the function is compiled elsewhere or twice, when the compiled part
    would return early, read a variable only the moved statements bind, or hand back a function it
    defines, or when the compile call is not one the split can move (see :func:`_call_site`)."""
    index = ctx.program.index
    calls = [call for call, where in index.compile_targets
             if index.resolve_expr(call.func) in capture_settings.COMPILE_FUNCTIONS
             and (ctx.program.compile_target(call, where) or (None,))[0] is function]
    decorators = [d for d in fdef.decorators
                  if index.resolve_expr(decorator_target(d)) in capture_settings.COMPILE_FUNCTIONS]
    if len(calls) + len(decorators) != 1 or (function.compile_decorated and not decorators):
        return None
    head = before[_docstring_count(before):]
    if any(isinstance(n, cst.Return) for stmt in head for n in walk(stmt, into_scopes=False)):
        return None  # the compiled part could end the function before the rest
    bound = set(_param_names(fdef)) | {x for stmt in head for n in walk(stmt) for x in names_bound_by(n)}
    if set(_variables_used(head, local_names_of(fdef)[0])) - bound:
        return None  # a local variable read before any assignment: a global in the compiled part
    defined = {x for stmt in head for n in walk(stmt, into_scopes=False) for x in _defined_callables(n)}
    if defined & set(passed):
        return None  # a function or generator made in the graph, handed back out of it
    if decorators:
        return _decorator_site(ctx, fdef, decorators[0])
    return _call_site(ctx, function, fdef, calls[0], self_name, decorated)


def _decorator_site(ctx, fdef: cst.FunctionDef, compile_decorator: cst.Decorator) -> _CompileSite | None:
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
    return _CompileSite(decorators=list(fdef.decorators))


def _call_site(ctx, function, fdef: cst.FunctionDef, call: cst.Call, self_name: str | None,
               decorated: bool = False) -> _CompileSite | None:
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
    site = _CompileSite(decorators=[], line=line, assign=assign, arg=arg)
    if self_name is not None:
        cls = function.cls
        if cls is None or any(cls in other.mro() and other is not cls and name in other.methods
                              for other in index.classes.values()):
            return None  # a subclass's own method would be compiled, not the split one
        same = isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name) and arg.attr.value == name \
            and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
            and target.value.value == arg.value.value and target.attr.value == name
        return site if same else None
    if not (isinstance(arg, cst.Name) and arg.value == name and isinstance(target, cst.Name)
            and ctx.parent(fdef) is ctx.module and ctx.enclosing_function(assign) is None):
        return None
    if target.value != name:
        uses = [n for n in _name_uses(ctx.module, name) if n is not arg]
        if uses:
            return None  # called eagerly elsewhere: it would run the compiled part there
        site.alias = target.value
    return site


def _moved_compile_call(site: _CompileSite, name: str, head_name: str) -> cst.CSTNode | cst.FlattenSentinel:
    """The compile statement, compiling the compiled part instead (``_f_compiled = torch.compile(
    _f_compiled)``), followed by ``f_c = f`` where it bound another name."""
    arg, target = site.arg, site.assign.targets[0].target
    renamed = {
        id(arg): arg.with_changes(attr=cst.Name(head_name)) if isinstance(arg, cst.Attribute) else cst.Name(head_name),
        id(target): target.with_changes(attr=cst.Name(head_name)) if isinstance(target, cst.Attribute)
        else cst.Name(head_name),
    }
    line = site.line.visit(_Swap(renamed))
    if site.alias is None:
        return line
    return cst.FlattenSentinel([line, cst.parse_statement(f"{site.alias} = {name}\n")])


class _Swap(cst.CSTTransformer):
    """Replaces given nodes (by identity) in a tree."""

    def __init__(self, swaps: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.swaps = swaps

    def on_leave(self, original_node, updated_node):
        return self.swaps.get(id(original_node), updated_node)


def _split_compiled(fdef: cst.FunctionDef, start: int, head_name: str, params: list[str], returned: list[str],
                    self_name: str | None, decorators: list[cst.Decorator], blank: int) -> cst.FlattenSentinel:
    """``fdef`` calling ``head_name`` and running the statements from ``start`` on, followed by
    ``head_name``: the statements before (its docstring aside), returning ``returned``, with the moved
    decorators.  Comments stay with the statements they are above."""
    body = list(fdef.body.body)
    doc = _docstring_count(body)
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
    wrapper = fdef.with_changes(decorators=() if decorators else fdef.decorators,
                                body=fdef.body.with_changes(body=[*body[:doc], call_stmt, *body[start:]]))
    return cst.FlattenSentinel([wrapper, head])


def _calls_compiled_part(ctx, before: list[cst.BaseStatement]) -> bool:
    """``before`` (its docstring aside) is one call of a function this file compiles, its result
    assigned or not: the split form, whose rest is meant to run outside the graph."""
    head = before[_docstring_count(before):]
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


def _docstring_count(body: list[cst.BaseStatement]) -> int:
    """1 when ``body`` starts with a docstring (it stays with the function), else 0."""
    first = body[0] if body else None
    return int(isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1
               and isinstance(first.body[0], cst.Expr)
               and isinstance(first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _param_names(fdef: cst.FunctionDef) -> list[str]:
    """The parameter names of ``fdef``, in order (``*args`` and ``**kwargs`` included)."""
    p = fdef.params
    star = [s for s in (p.star_arg,) if isinstance(s, cst.Param)]
    kwargs = [p.star_kwarg] if p.star_kwarg is not None else []
    return [x.name.value for x in (*p.posonly_params, *p.params, *star, *p.kwonly_params, *kwargs)]


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


def _variables_used(stmts: list[cst.BaseStatement], names: "set[str] | frozenset[str]") -> list[str]:
    """The names of ``names`` that ``stmts`` use as variables (not ``x.attr`` nor ``f(key=...)``), in
    order of first use."""
    used = (n.value for stmt in stmts for n, _ in variable_names(stmt) if n.value in names)
    return list(dict.fromkeys(used))
