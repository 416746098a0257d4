"""Tensor-valued ``if``/``else`` with richer branches (DYN101 ``tensor-condition``) -> ``torch.cond``.

Before::

    if x.sum() > 0:
        h = self.a(x)
        y = torch.relu(h)
    else:
        y = self.a(x) * 2

After::

    def y_if_true():
        h_then = self.a(x)
        y_then = torch.relu(h_then)
        return y_then
    def y_if_false():
        y_else = self.a(x) * 2
        return y_else
    y = torch.cond(x.sum() > 0, y_if_true, y_if_false, ())

``torch.cond`` keeps both branches in the graph and runs the one selected by
the (0-d boolean) predicate, so branches may call layers and run ops that
``torch.where`` could not evaluate on both sides (a guarded ``sqrt``, a
reduction against a full tensor).  Used when the ``torch.where`` rewrite does not
apply.  Values a branch returns unchanged are cloned, because a branch may not
return an alias of its inputs.

Proves, or refuses: the predicate is a tensor for certain; the branches only
bind names or return tensors, and every call in them is pure - torch functions
and tensor methods that draw no random numbers and update nothing in place,
and ``torch.nn`` layers without state or randomness (``Linear``, ``LayerNorm``,
activations...): a ``print``, a random op, a ``BatchNorm`` (running statistics)
or ``Dropout``, a call of the file's own functions or modules is refused;
nothing in either branch breaks the graph or has a data-dependent output shape
(what the analysis classifies as a break with the capture settings off,
``x[mask]`` through a mask it cannot tell from an integer index included):
Dynamo must capture a ``torch.cond`` branch whole and raises
``UncapturedHigherOrderOpError`` on the first call where the original only broke
the graph (measured on torch 2.13); both branches read the same tensors,
parameters and modules from outside them (``torch.cond`` differentiates both
branches, so one read only by the branch not taken would get a zero gradient
where the original left it ``None``, and an optimizer with weight decay or
momentum would then change it; read by both, each gets the gradient of the
branch that ran, as in the original); every shape and dtype the analysis can
tell is the same one (``x.half()`` against ``x``, or a ``(d,)`` parameter
against an input ``x``, raise under ``torch.cond``: refused).

Unsafe (hazards): shapes or dtypes that differ in a way the analysis cannot see
(what a module returns) raise when Dynamo traces.
"""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from dynalint.analysis.breaks import NO_CAPTURE, BreakClassifier
from dynalint.analysis.events import SubscriptEvent
from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.branches import (
    Unsupported,
    chain,
    cond_compatible,
    dtype_token,
    floating_names,
    check_augmented,
    names_around,
    next_statement,
    renamed_assignment,
    resolved,
    statements,
    target_name,
)
from dynalint.fixers.support.codegen import is_variable, known_tensor, paren, tensor_condition, use_torch
from dynalint.fixers.support.purity import impurity


@register
class BranchToCond(Fixer):
    name = "branch-to-cond"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = "Rewrite a tensor-valued `if`/`else` whose branches call modules or functions into `torch.cond`."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Gate(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.a = nn.Linear(4, 4)

                    def forward(self, x):
                        if x.sum() > 0:
                            h = self.a(x)
                            y = torch.relu(h)
                        else:
                            y = self.a(x) * 2
                        return y + 1
            """,
            after="""
                import torch
                import torch.nn as nn

                class Gate(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.a = nn.Linear(4, 4)

                    def forward(self, x):
                        def y_if_true():
                            h_then = self.a(x)
                            y_then = torch.relu(h_then)
                            return y_then
                        def y_if_false():
                            y_else = self.a(x) * 2
                            return y_else
                        y = torch.cond(x.sum() > 0, y_if_true, y_if_false, ())
                        return y + 1
            """,
            target="Gate",
            inputs="[(torch.randn(4),), (-torch.rand(4),), (torch.rand(4),)]",
        ),
        FixExample(
            before="""
                import torch
                import torch.nn as nn

                class Scaled(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 4)

                    def forward(self, x):
                        if x.abs().max() > 1:
                            return self.fc(x / x.abs().max())
                        return self.fc(x)
            """,
            after="""
                import torch
                import torch.nn as nn

                class Scaled(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(4, 4)

                    def forward(self, x):
                        def result_if_true():
                            return self.fc(x / x.abs().max())
                        def result_if_false():
                            return self.fc(x)
                        return torch.cond(x.abs().max() > 1, result_if_true, result_if_false, ())
            """,
            target="Scaled",
            inputs="[(torch.randn(4) * 3,), (torch.rand(4) * 0.5,)]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        node = finding.statement
        if not isinstance(node, cst.If):
            return None
        parent = ctx.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return None
        conds, bodies, else_body = chain(node)
        if len(conds) != 1:
            return None
        pred = tensor_condition(conds[0], ctx)
        function = ctx.enclosing_function(node)
        if function is None:
            return None
        if pred is None:
            raise Refused("the condition is not certainly a tensor")
        try:
            then_stmts = statements(bodies[0])
            else_stmts = statements(else_body) if else_body is not None else None
            for stmts in (then_stmts, else_stmts or []):
                for _, small in stmts:
                    _check(small, ctx)
        except Unsupported:
            return None
        for stmts in (then_stmts, else_stmts or []):
            for _, small in stmts:
                reason = impurity(small.value, ctx) if small.value is not None else None
                if reason is not None:
                    raise Refused(f"a branch is not pure under torch.cond: {reason}")
        blocks = [bodies[0]] + ([else_body] if else_body is not None else [])
        reason = _breaking(blocks, ctx)
        if reason is not None:
            raise Refused(reason)
        returns = any(isinstance(s, cst.Return) for _, s in then_stmts + (else_stmts or []))
        plan = FixPlan("run the branches under torch.cond (both stay in the graph)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        taken: set[str] = set()
        if returns:
            if not then_stmts or not isinstance(then_stmts[-1][1], cst.Return):
                return None
            if else_stmts is None:
                following = next_statement(node, ctx)
                if following is None or not isinstance(following[1], cst.Return):
                    return None
                else_stmts = [following]
                plan.replace(following[0], cst.RemovalSentinel.REMOVE)
            if not isinstance(else_stmts[-1][1], cst.Return):
                return None
            if any(isinstance(s, cst.Return) for _, s in then_stmts[:-1] + else_stmts[:-1]):
                return None
            if not all(known_tensor(ctx, s[-1][1].value) for s in (then_stmts, else_stmts)):
                return None
            _same_leaves(ctx, function, [then_stmts, else_stmts], [])
            returned = [then_stmts[-1][1].value, else_stmts[-1][1].value]
            if not cond_compatible(ctx, *returned, floating=floating_names(node, ctx)):
                raise Refused("the branches return values not provably of one shape and dtype "
                              "(torch.cond raises when they differ)")
            base = "result"
            lines = self._functions(ctx, function, base, [then_stmts, else_stmts], None, taken)
            if lines is None:
                return None
            fn_true, fn_false = lines[1]
            lines = lines[0] + [cst.parse_statement(f"return {torch}.cond({pred}, {fn_true}, {fn_false}, ())")]
        else:
            before, after = names_around(node, function)
            branches = [then_stmts] + ([else_stmts] if else_stmts is not None else [])
            assigned = [[target_name(s) for _, s in b] for b in branches]
            names: list[str] = []
            for a in assigned:
                names.extend(n for n in a if n not in names)
            merged = [n for n in names if n in before or (len(branches) == 2 and all(n in a for a in assigned))]
            if not merged or any(n in after and n not in merged for n in names):
                return None
            if not all(_merged_is_tensor(ctx, n, branches, node, else_stmts is not None) for n in merged):
                return None
            for n in merged:
                values = [s.value for b in branches for _, s in b if target_name(s) == n]
                kept = None if else_stmts is not None and all(any(target_name(s) == n for _, s in b)
                                                              for b in branches) else n
                alternatives = resolved(values, branches)
                if not cond_compatible(ctx, *alternatives, fallback=kept, floating=floating_names(node, ctx)):
                    raise Refused(f"`{n}` gets values not provably of one shape and dtype "
                                  "(torch.cond raises when they differ)")
            _same_leaves(ctx, function, branches if else_stmts is not None else branches + [[]],
                         [n for n in merged if not all(any(target_name(s) == n for _, s in b) for b in branches)
                          or else_stmts is None])
            if else_stmts is None:
                branches.append([])
            result = self._functions(ctx, function, merged[0], branches, merged, taken)
            if result is None:
                return None
            lines, (fn_true, fn_false) = result
            targets = ", ".join(merged)
            lines.append(cst.parse_statement(f"{targets} = {torch}.cond({pred}, {fn_true}, {fn_false}, ())"))
        lines[0] = lines[0].with_changes(leading_lines=node.leading_lines)
        return plan.replace(node, cst.FlattenSentinel(lines))

    def _functions(self, ctx, function, base, branches, merged, taken):
        """Two local functions, one per branch, returning the merged names (or the returned value)."""
        lines: list[cst.BaseStatement] = []
        names = []
        for i, stmts in enumerate(branches):
            tag = ("then", "else")[i]
            fn_name = ctx.fresh_name(f"{base}_if_{'true' if i == 0 else 'false'}", function, taken)
            taken.add(fn_name)
            names.append(fn_name)
            mapping: dict[str, str] = {}
            body: list[cst.BaseStatement] = []
            for line, small in stmts:
                if isinstance(small, cst.Return):
                    value = _return_value(small.value, mapping, ctx)
                    body.append(cst.parse_statement(f"return {value}"))
                    continue
                new_line, mapping = renamed_assignment(line, small, mapping, tag, ctx, function, taken, True)
                body.append(new_line)
            if merged is not None:
                outs = [mapping[n] if n in mapping else f"{paren(n)}.clone()" for n in merged]
                body.append(cst.parse_statement("return " + ", ".join(outs)))
            lines.append(cst.FunctionDef(
                name=cst.Name(fn_name), params=cst.Parameters(), body=cst.IndentedBlock(body=body)))
        return lines, tuple(names)


def _check(small: cst.CSTNode, ctx) -> None:
    """Branches may bind names and return values; nothing else (no stores into objects, no
    expression statements).  Their values' purity is checked by the caller."""
    if isinstance(small, cst.Return):
        if small.value is None:
            raise Unsupported
        value = small.value
    elif isinstance(small, cst.Assign):
        if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
            raise Unsupported
        value = small.value
    elif isinstance(small, cst.AugAssign):
        check_augmented(small, ctx)
        value = small.value
    else:
        raise Unsupported
    if value is None:
        raise Unsupported


def _breaking(blocks: list[cst.BaseSuite], ctx) -> str | None:
    """Why a branch cannot run under ``torch.cond``: Dynamo must capture both branches whole, so an
    operation it breaks the graph at (``print``, ``.item()``), or one whose output shape depends on the
    data (``x[mask]``, ``nonzero``), raises ``UncapturedHigherOrderOpError`` on the first call, where the
    original only broke the graph.  Asked of the analysis' own break classification, with the capture
    settings off (they do not carry into a ``torch.cond`` branch) and counting what may break."""
    inside = {id(n) for block in blocks for n in walk(block)}
    off = replace(ctx.settings, capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False)
    classifier = BreakClassifier(ctx.program, off, own=NO_CAPTURE)
    for ev in ctx.program.events:
        if id(ev.node) in inside and (classifier.may_break_at(ev) or _may_be_mask_index(ev, ctx)):
            return (f"`{ctx.code(ev.node).strip()}` breaks the graph or may have a data-dependent shape, and "
                    "torch.cond raises (UncapturedHigherOrderOpError) on a branch Dynamo cannot capture whole")
    return None


def _may_be_mask_index(ev, ctx) -> bool:
    """A read through a tensor index the analysis cannot tell from a boolean mask (an untyped parameter):
    a data-dependent shape if it is one."""
    if not isinstance(ev, SubscriptEvent) or ev.store or not isinstance(ev.node, cst.Subscript):
        return False
    for element in ev.node.slice:
        index = element.slice
        if not isinstance(index, cst.Index):
            continue
        v = ctx.value(index.value)
        if v is not None and v.kind in (Kind.TENSOR, Kind.UNKNOWN) and dtype_token(index.value, ctx) not in _INTEGRAL:
            return True
    return False


_INTEGRAL = ("int64", "int32", "int16", "int8", "uint8")


def _same_leaves(ctx, function: cst.FunctionDef, branches, kept: list[str]) -> None:
    """Refuse unless both branches read the same tensors and module state from outside them.
    ``torch.cond`` differentiates both branches: a parameter, module or tensor only the branch not taken
    reads gets a zero gradient where the original left it ``None`` (an optimizer with weight decay or
    momentum then moves it).  Reading the same ones on both sides, every one of them gets the gradient
    of the branch that ran, as in the original.  ``kept`` are the names a branch that does not bind
    them passes on unchanged (they count as read by it)."""
    params = [*function.params.posonly_params, *function.params.params]
    self_name = params[0].name.value if params else None
    found = [_leaves(stmts, ctx, self_name) for stmts in branches]
    for i, leaves in enumerate(found):
        binds = {target_name(s) for _, s in branches[i] if not isinstance(s, cst.Return)}
        leaves.update(n for n in kept if n not in binds)
    one_sided = sorted(found[0] ^ found[1])
    if one_sided:
        raise Refused(f"`{one_sided[0]}` is read by one branch only: torch.cond differentiates both, so when the "
                      "other one runs, it (or each of its parameters) gets a zero gradient instead of None (an "
                      "optimizer with weight decay or momentum then changes it)")


#: Kinds of value that carry no gradient (numbers, sizes, functions; boolean tensors neither).
_NO_GRADIENT = (Kind.PYTHON, Kind.SCALAR, Kind.SIZE, Kind.FUNCTION)


def _leaves(stmts, ctx, self_name: str | None) -> set[str]:
    """What a branch reads from outside it that may carry a gradient: names bound before the ``if``
    and ``self.<attr>`` (parameters, buffers, modules), except what is known to be a number, a size or
    a function."""
    bound: set[str] = set()
    found: set[str] = set()
    for _, small in stmts:
        reads = [small.value] + ([small.target] if isinstance(small, cst.AugAssign) else [])
        for expr in reads:
            for n in walk(expr):
                parent = ctx.parent(n)
                if isinstance(n, cst.Attribute):
                    if _root(n) != self_name or (isinstance(parent, cst.Attribute) and parent.value is n):
                        continue  # not state of the module, or not the whole chain
                    receiver = ctx.value(n.value)
                    if isinstance(parent, cst.Call) and parent.func is n and receiver is not None \
                            and receiver.kind is Kind.TENSOR:
                        n = n.value  # a method of a tensor of the module (``self.w.t()``): the tensor
                elif isinstance(n, cst.Name) and n.value != self_name and n.value not in bound \
                        and is_variable(n, parent):
                    if ctx.program.index.resolve_expr(n) is not None:
                        continue  # an imported module or function (``torch``, ``F``)
                else:
                    continue
                v = ctx.value(n)
                if (v is None or (v.kind not in _NO_GRADIENT and not v.is_bool)) and not _integral(n, ctx):
                    found.add(ctx.code(n).strip())
        if not isinstance(small, cst.Return):
            bound.add(target_name(small))
    return found


def _integral(expr: cst.BaseExpression, ctx) -> bool:
    """A boolean or integer tensor (no gradient): of such a dtype, or the condition of ``torch.where``."""
    if dtype_token(expr, ctx) in (*_INTEGRAL, "bool"):
        return True
    arg = ctx.parent(expr)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    return isinstance(call, cst.Call) and call.args[0] is arg and arg.keyword is None \
        and ctx.program.index.resolve_expr(call.func) == "torch.where"


def _root(node: cst.BaseExpression) -> str | None:
    """``self`` for ``self.a.weight``: the name an attribute chain starts from."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _return_value(value: cst.BaseExpression, mapping: dict[str, str], ctx) -> str:
    from dynalint.fixers.support.codegen import rename

    if isinstance(value, cst.Name) and value.value not in mapping:
        return f"{value.value}.clone()"  # returning an input unchanged would alias it
    return cst.Module([]).code_for_node(rename(value, mapping)).strip()


def _merged_is_tensor(ctx, name: str, branches, node: cst.If, has_else: bool) -> bool:
    """Every value the name can have after the ``if`` is a tensor."""
    for stmts in branches:
        for _, small in stmts:
            if target_name(small) == name and not known_tensor(ctx, small.value):
                return False  # includes `x += [...]` on a list
    if has_else and all(any(target_name(s) == name for _, s in b) for b in branches):
        return True
    # the value from before the `if` is kept on some path: it must be a tensor too
    exprs = [node.test] + [s.value for b in branches for _, s in b]
    loads = [n for e in exprs for n in walk(e) if isinstance(n, cst.Name) and n.value == name]
    return bool(loads) and known_tensor(ctx, loads[0])
