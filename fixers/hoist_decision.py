"""A decision on the arguments of a compiled function (DYN101 ``tensor-condition``) -> taken in Python before
entering it.

Before::

    @torch.compile
    def step(x, t):
        if t < 100:
            x = torch.cat([x, x * 0.1])
        return x.relu()

After::

    @torch.compiler.disable
    def step(x, t):
        return _step_compiled(x, t, bool(t < 100))

    @torch.compile
    def _step_compiled(x, t, decision):
        if decision:
            x = torch.cat([x, x * 0.1])
        return x.relu()

When a tensor condition depends only on the arguments (a step counter, a
threshold, a flag passed as a tensor), the caller side can decide it: the
function keeps its name and signature, decides in Python (outside the
compiled region: ``torch.compiler.disable``), and passes the outcome to the
compiled function, which then has no graph break - it compiles one graph per
outcome instead (at most two for a bool).  Used when the branch cannot be made
branch-free (``torch.where``/``torch.cond`` do not apply).  Applied to ``@torch.compile``
functions whose tested arguments are never reassigned, when the ``if`` is
reached on every call (at the top of the body, before any ``return``/``raise``).
Unsafe: the decision is computed at entry (as the condition only reads the
arguments, its value is the same), and the public name is now an eager wrapper:
code that reaches into the compiled object (``step._torchdynamo_orig_callable``)
finds the wrapper instead.

Proves, or refuses: the tests are pure and read only arguments never
reassigned; every statement before a hoisted test is a pure assignment (an
in-place update of the tested tensor, or any call that could make one, would
change the decision computed at entry); no compiled code of the file calls the
function (the eager wrapper would only move the break into the caller).

Hazards: a compiled caller in another file still breaks at the wrapper.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.events import ConditionEvent
from dynalint.analysis.syntax import walk
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import use_torch, variable_names
from dynalint.fixers.support.purity import impurity, is_pure


@register
class HoistDecision(Fixer):
    name = "hoist-decision"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = "Decide a tensor condition on the arguments in Python before entering the compiled function."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def step(x, t):
                    if t < 100:
                        x = torch.cat([x, x * 0.1])
                    return x.relu()
            """,
            after="""
                import torch

                @torch.compiler.disable
                def step(x, t):
                    return _step_compiled(x, t, bool(t < 100))

                @torch.compile
                def _step_compiled(x, t, decision):
                    if decision:
                        x = torch.cat([x, x * 0.1])
                    return x.relu()
            """,
            inputs="[(torch.randn(4), torch.tensor(5)), (torch.randn(4), torch.tensor(500)),"
                   " (torch.randn(4), torch.tensor(7))]",
            target="step",
            compile_target=False,
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        stmt = finding.statement
        if not isinstance(stmt, cst.If):
            return None
        function = ctx.enclosing_function(stmt)
        if function is None or not isinstance(ctx.parent(function), cst.Module):
            return None
        info = ctx.program.index.functions.get(function.name.value)
        if info is None or info.node is not function or not info.compile_decorated:
            return None
        params = function.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT and params.star_arg is not None \
                or params.star_kwarg is not None or params.kwonly_params or params.posonly_params:
            return None
        names = [p.name.value for p in params.params]
        body = list(function.body.body)
        index = next((i for i, s in enumerate(body) if s is stmt), None)
        if index is None:
            return None  # nested: the condition is not evaluated on every call
        for before in body[:index]:
            if not isinstance(before, cst.SimpleStatementLine) or any(
                    isinstance(n, (cst.Return, cst.Raise)) for n in walk(before)):
                return None
            reason = _effect(before, ctx)
            if reason is not None:
                raise Refused(f"a statement before the test may change what it reads: {reason}")
        tests = _hoistable_tests(stmt, function, names, ctx)
        if not tests:
            return None
        for compiled in ctx.program.compiled:
            if compiled.node is not function and any(
                    isinstance(n, cst.Name) and n.value == function.name.value for n in walk(compiled.node)):
                raise Refused(f"compiled code calls `{function.name.value}`: the eager wrapper would move the break")
        compiled_name = ctx.helper_name(function.name.value, "compiled")
        taken: set[str] = set()
        outcome_names = []
        for _ in tests:
            name = ctx.fresh_name("decision", function, taken)
            taken.add(name)
            outcome_names.append(name)
        plan = FixPlan("take the decision in Python before entering the compiled function "
                       f"(`{function.name.value}` becomes an eager wrapper of `{compiled_name}`)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)

        replace_tests = {id(t): cst.Name(n) for t, n in zip(tests, outcome_names)}

        class _ReplaceTests(cst.CSTTransformer):
            def on_leave(self, original_node, updated_node):  # type: ignore[override]
                new = replace_tests.get(id(original_node))
                return new if new is not None else updated_node

        new_params = params.with_changes(params=[*params.params, *(
            cst.Param(name=cst.Name(n)) for n in outcome_names)])
        compiled = function.visit(_ReplaceTests()).with_changes(
            name=cst.Name(compiled_name), params=new_params, leading_lines=[cst.EmptyLine()])
        arguments = ", ".join([*names, *(f"bool({ctx.code(t).strip()})" for t in tests)])
        wrapper = cst.parse_statement(
            f"@{torch}.compiler.disable\n"
            f"def {function.name.value}{_signature(function, ctx)}:\n"
            f"    return {compiled_name}({arguments})\n"
        ).with_changes(leading_lines=function.leading_lines)
        return plan.replace(function, cst.FlattenSentinel([wrapper, compiled]))


def _hoistable_tests(first: cst.If, function: cst.FunctionDef, params: list[str], ctx) -> list[cst.BaseExpression]:
    """Tests of top-level ``if`` statements (from ``first`` on, each reached on every call) that
    read only arguments never reassigned in the function."""
    assigned = {n.value for n in walk(function.body) if isinstance(n, cst.Name) and isinstance(
        ctx.parent(n), (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor))}
    tensor_tests = {id(ev.node) for ev in ctx.program.events if isinstance(ev, ConditionEvent)}
    allowed = set(params) | set(ctx.program.index.imports)
    tests = []
    body = list(function.body.body)
    start = next(i for i, s in enumerate(body) if s is first)
    for stmt in body[start:]:
        if isinstance(stmt, cst.If):
            test = stmt.test
            names = {n.value for n, _ in variable_names(test)}
            v = ctx.value(test)
            if id(test) in tensor_tests and v is not None and v.is_tensor and names <= allowed \
                    and not (names & assigned) and is_pure(test, ctx):
                tests.append(test)
                inner = [*stmt.body.body, *(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [])] \
                    if isinstance(stmt.body, cst.IndentedBlock) else [stmt.body]
                if isinstance(stmt.orelse, cst.If) or any(_effect(s, ctx) is not None for s in inner):
                    break  # its branches may change what a later test reads
                continue
        if any(isinstance(n, (cst.Return, cst.Raise)) for n in walk(stmt)):
            break  # later tests may not be reached on every call
        if _effect(stmt, ctx) is not None:
            break  # later tests could read what this statement changes
    return tests


def _effect(stmt: cst.CSTNode, ctx) -> str | None:
    """Why a statement may change state a later test reads (None: it only binds names to pure values)."""
    if isinstance(stmt, cst.If):
        parts = [stmt.test]
        return next((r for r in (impurity(p, ctx) for p in parts) if r), None) or (
            "a branch runs statements before the next test")
    if not isinstance(stmt, cst.SimpleStatementLine):
        return "a compound statement runs first"
    for small in stmt.body:
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            if not all(isinstance(t, cst.Name) for t in targets):
                return "it stores into an object"
            reason = impurity(small.value, ctx)
            if reason is not None:
                return reason
        elif not isinstance(small, cst.Pass):
            return f"`{ctx.code(small).strip()}` is not a plain assignment"
    return None


def _signature(function: cst.FunctionDef, ctx) -> str:
    params = cst.Module([]).code_for_node(function.params)
    return f"({params})"
