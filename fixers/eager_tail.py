"""Several graph breaks at the end of a compiled function -> that end in one eager helper, one break.

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

    @torch.compile
    def step(x):
        loss = ((w * x).sum() - 1.0) ** 2
        return _step_eager(loss)


    @torch.compiler.disable
    def _step_eager(loss):
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

Some calls break the graph whatever the flags: ``optimizer.zero_grad()`` (skipped by Dynamo),
``loss.backward()`` and ``optimizer.step()`` (which calls ``torch._dynamo.graph_break()`` itself),
``load_state_dict``, a call into an extension.  Dynamo breaks at each, resumes in a new frame and
compiles the few operations until the next one, so a training step ends in a chain of breaks and
small graphs (measured on torch 2.13: three breaks for the update above).  The statements from the
first such call to the end of the function, moved as they are into a function decorated with
``torch.compiler.disable`` and called there, break the graph once, at the call (measured: one break,
"Skip calling torch.compiler.disable()d function"), and run eagerly, as they did between the breaks.

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

Unsafe (hazards): what the helper calls is not compiled either (``torch.compiler.disable`` holds for
the functions it calls), so tensor work after the first break that Dynamo compiled in pieces now runs
eagerly: slower where that work is heavy, and computed as eager code computes it, which can differ in
rounding from what the compiled pieces gave (measured on the user scripts of ``benchmarks/userfiles``:
an optimizer step traced by Dynamo rounds differently from eager's, and the moved one gives eager's
results bitwise).  A traceback through the moved code shows the helper's frame.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis.breaks import Cause, capture_flag
from dynalint.analysis.module_index import local_names_of, names_bound_by
from dynalint.analysis import knowledge as K
from dynalint.analysis.syntax import assigned_names, children, decorator_target, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch
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
    summary = ("Move the end of a compiled function that breaks the graph several times (backward, optimizer "
               "step...) into one `torch.compiler.disable`d helper: one graph break instead of several.")
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
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
            """,
            after="""
                import torch

                w = torch.nn.Parameter(torch.ones(4))
                opt = torch.optim.SGD([w], lr=0.1)

                @torch.compile
                def step(x):
                    loss = ((w * x).sum() - 1.0) ** 2
                    return _step_eager(loss)


                @torch.compiler.disable
                def _step_eager(loss):
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    return loss.detach()
            """,
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
        helper_name = ctx.fresh_name(f"_{fdef.name.value}_eager", ctx.module)
        plan = FixPlan(f"move the statements from `{_shown(ctx, body[start])}` on into `{helper_name}`, "
                       "decorated with torch.compiler.disable: one graph break there instead of "
                       f"{len(breaks)}; they run eagerly", self.safety)
        torch = use_torch(plan, ctx, fdef)
        replacement = _split(fdef, start, helper_name, passed, self_name, torch,
                             blank=1 if method or _nested(ctx, fdef) else 2)
        plan.replace(fdef, replacement)
        return plan


def _split(fdef: cst.FunctionDef, start: int, helper_name: str, passed: list[str], self_name: str | None,
           torch: str, blank: int) -> cst.FlattenSentinel:
    """``fdef`` ending in ``return <helper>(<passed>)`` (on ``self_name`` for a method), followed by the
    helper: the statements from ``start`` on, under ``@<torch>.compiler.disable``.  Comment lines above
    the first moved statement move with it, blank lines before them stay above the call."""
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
    helper = cst.parse_statement(f"@{torch}.compiler.disable\ndef {helper_name}({', '.join(params)}):\n    pass\n")
    assert isinstance(helper, cst.FunctionDef)
    helper_body = fdef.body.with_changes(body=tail, header=cst.TrailingWhitespace(), footer=())
    helper = helper.with_changes(body=helper_body, leading_lines=[cst.EmptyLine(indent=False)] * blank)
    return cst.FlattenSentinel([fdef.with_changes(body=fdef.body.with_changes(body=[*body[:start], call])), helper])


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
    p = fdef.params
    params = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    params |= {s.name.value for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param)}
    maybe = params | {name for stmt in before for n in walk(stmt) for name in names_bound_by(n)}
    certain = (params | _bound_for_certain(before)) - _deleted(before)
    used: list[str] = []
    for stmt in tail:
        other = set()  # names that are no variables: ``x.attr``, ``f(key=...)``
        for n in walk(stmt):
            if isinstance(n, cst.Attribute):
                other.add(id(n.attr))
            elif isinstance(n, cst.Arg) and n.keyword is not None:
                other.add(id(n.keyword))
            elif isinstance(n, cst.Name) and id(n) not in other and n.value in local and n.value in maybe \
                    and n.value not in used and n.value != self_name:
                used.append(n.value)
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
