"""Rows at the last ``True`` of a mask, picked by boolean selection (DYN104 ``data-dependent-shape``) ->
picked by index.

Before::

    eos = ids.eq(eos_id)
    if not eos.any():
        raise ValueError("no <eos> in the batch")
    if len(torch.unique_consecutive(eos.sum(1))) > 1:
        raise RuntimeError("every row needs the same number of <eos>")
    pooled = h[eos, :].view(h.size(0), -1, h.size(-1))[:, -1, :]

After::

    eos = ids.eq(eos_id)
    if not eos.any():
        raise ValueError("no <eos> in the batch")
    eos_counts = eos.sum(1)
    torch._assert_async((eos_counts[1:] == eos_counts[:-1]).all(), "every row needs the same number of <eos>")
    if eos.shape != h.shape[:2]:
        raise IndexError("the mask does not match the first two dimensions of the indexed tensor")
    last_eos = (torch.arange(eos.size(1), device=eos.device) * eos).argmax(1)
    pooled = h[torch.arange(h.size(0), device=h.device), last_eos, :].view(h.size(0), -1, h.size(-1))[:, -1, :]

The selection has a data-dependent number of rows and ``unique_consecutive`` a
data-dependent length: each ends the graph (measured on torch 2.13: two
``Dynamic shape operator`` breaks, ``nonzero`` and ``unique_consecutive``; none
after).  When every row of the mask holds the same number ``k >= 1`` of
``True``, the selected rows of batch row ``b`` are consecutive, so the last of
each group is the row at the last ``True`` of ``b``: the position of the
largest of ``arange(T) * mask`` (``argmax`` returns the first largest, which is
the last ``True``; ``0`` when only position ``0`` holds one).  The ``view`` and
the ``[:, -1, :]`` are kept, applied to those rows: for a tensor of more than
three dimensions they pick the same last chunk of each row as before.  The
values are copied, so the output and its gradients are bitwise the original's.

What the original rejected is rejected again, with the same exception type
(measured on torch 2.13, eager and compiled): rows of different counts by the
check, kept inside the graph as ``torch._assert_async`` (each row's count equal
to the one before, as ``unique_consecutive`` tests), which raises the
``RuntimeError`` the original check raised; a mask that does not match the
tensor's first two dimensions (the selection's ``IndexError``) by a shape test,
which Dynamo decides while tracing (no graph code; compiled, a mask of the wrong
shape whose rows also differ in count still raises the ``RuntimeError`` first).
A mask with no ``True`` passes the count check (every count is 0): the
original then takes ``[:, -1]`` of no rows and raises ``IndexError``, where the
rows picked by index would need a check that raises ``RuntimeError``, so the
rewrite requires that the code before has already rejected it.

Proves, or refuses: the expression is exactly ``x[m, :].view(x.size(0), -1,
x.size(-1))[:, -1]`` (``x.shape[0]``/``x.shape[-1]`` too, with or without the
last ``, :``), the whole value of an assignment or a ``return``; the mask is a
local name that is certainly a boolean tensor, and ``x`` is pure; the statement
right before is a check that raises unless every row holds the same count:
``if len(torch.unique_consecutive(m.sum(1))) > 1: raise ...`` (or ``!= 1``, or
``.numel()``), raising the builtin ``RuntimeError`` with a literal message or
none (a ``ValueError`` check is refused: compiled, it would raise another type);
and the statement right before that check raises unless the mask holds a
``True``: ``if not m.any(): raise ...`` (or ``torch.any(m)``; any exception,
the statement is kept) or ``torch._assert_async(m.any(), ...)``.  With equal
counts a ``True`` anywhere is a ``True`` in every row, so no mask with no
``True`` (nor an empty batch) reaches the rewritten code.  Refused: an
``assert`` count check (it raises ``AssertionError``; kept in the graph it
would raise ``RuntimeError``, and ``torch._check_with(AssertionError, ...)``
reads the condition on the host, one break, or raises ``RuntimeError`` with
``capture_scalar_outputs``: measured on torch 2.13; under ``python -O`` it is
not there at all), an ``assert m.any()`` for the same reasons, and a check made
by calling another function (``check(cond, message)``): whether it raises is
not known (it may be switched off), and where it does not, the original's rows
are not the rows at the last ``True``.  In code that pools without first
rejecting a mask with no ``True`` (the usual classification head) the fixer
therefore refuses.

Unsafe (hazards): on accelerators a failing count check is raised
asynchronously; a mask of more than two dimensions now raises ``IndexError``
(the shape test).
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import simple_statements
from dynalint.fixers.async_assert import raise_message
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.codegen import certain_tensor, use_torch
from dynalint.fixers.support.purity import impurity


@register
class LastTruePooling(Fixer):
    name = "last-true-pooling"
    codes = ("DYN104",)
    safety = "unsafe"
    summary = "Pick the rows at the last `True` of each mask row by index instead of selecting every " \
              "`True` row and keeping the last of each group."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                def pool_last_eos(hidden, input_ids):
                    eos_mask = input_ids.eq(2)
                    if not eos_mask.any():
                        raise ValueError("no <eos> token in the batch")
                    if len(torch.unique_consecutive(eos_mask.sum(1))) > 1:
                        raise RuntimeError("All examples must have the same number of <eos> tokens.")
                    return hidden[eos_mask, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
            """,
            after="""
                import torch

                @torch.compile
                def pool_last_eos(hidden, input_ids):
                    eos_mask = input_ids.eq(2)
                    if not eos_mask.any():
                        raise ValueError("no <eos> token in the batch")
                    eos_counts = eos_mask.sum(1)
                    torch._assert_async((eos_counts[1:] == eos_counts[:-1]).all(), "All examples must have the same number of <eos> tokens.")
                    if eos_mask.shape != hidden.shape[:2]:
                        raise IndexError("the mask does not match the first two dimensions of the indexed tensor")
                    last_eos = (torch.arange(eos_mask.size(1), device=eos_mask.device) * eos_mask).argmax(1)
                    return hidden[torch.arange(hidden.size(0), device=hidden.device), last_eos, :].view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]
            """,
            inputs="[(torch.randn(2, 6, 4), torch.tensor([[5, 2, 7, 2, 1, 1], [2, 3, 4, 5, 1, 2]])),"
                   " (torch.randn(3, 5, 4), torch.tensor([[1, 1, 1, 1, 2], [2, 1, 1, 1, 1], [1, 1, 2, 1, 1]]))]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        selection = finding.node
        rows = _masked_rows(selection)
        if rows is None:
            return None
        base, mask = rows
        pooled = _pooled(selection, base, ctx)
        if pooled is None:
            bound = ctx.parent(selection)
            if isinstance(bound, cst.Assign) and bound.value is selection and len(bound.targets) == 1 \
                    and isinstance(bound.targets[0].target, cst.Name):
                raise Refused(f"the selected rows are bound to `{bound.targets[0].target.value}`: only the "
                              "pooling written as one expression, `x[m, :].view(x.size(0), -1, x.size(-1))"
                              "[:, -1]`, is rewritten (a name may be used for the number of rows too)")
            return None
        if not isinstance(mask, cst.Name):
            raise Refused("the mask is not a local name")
        value = ctx.value(mask)
        if value is None or not value.is_tensor or not value.is_bool or not certain_tensor(mask, ctx):
            raise Refused("the mask is not certainly a boolean tensor")
        reason = impurity(base, ctx)
        if reason is not None:
            raise Refused(f"the indexed tensor is not pure: {reason}")
        parent = ctx.parent(pooled)
        if not (isinstance(parent, cst.Return) or isinstance(parent, cst.Assign) and parent.value is pooled):
            raise Refused("the pooled rows are not the whole value of an assignment or a return")
        where = ctx.block_of(parent)
        if where is None or where[1] == 0:
            raise Refused("no check right before the selection proves that every row of the mask holds the "
                          "same number of True")
        block, i = where
        check = block.body[i - 1]
        counted, message = _same_count_check(check, mask.value, ctx)
        if i < 2 or not _rejects_no_true(block.body[i - 2], mask.value, ctx):
            raise Refused(f"nothing right before the count check rejects a mask with no True (`if not "
                          f"{mask.value}.any(): raise ...`): the original's `[:, -1]` of no rows raises "
                          "IndexError there, where the rows picked by index would need a check that raises "
                          "RuntimeError")
        plan = FixPlan("pick the rows at the last True of each mask row by index; the count check stays in "
                       "the graph as torch._assert_async (raises RuntimeError)", "unsafe")
        torch = use_torch(plan, ctx, selection)
        function = ctx.enclosing_function(selection) or ctx.module
        stem = _stem(mask.value)
        counts = ctx.fresh_name(f"{stem}_counts", function)
        last = ctx.fresh_name(f"last_{stem}", function, {counts})
        m, x = mask.value, ctx.code(base).strip()
        lines = [
            f"{counts} = {counted}\n",
            f"{torch}._assert_async(({counts}[1:] == {counts}[:-1]).all(){message})\n",
            f"if {m}.shape != {x}.shape[:2]:\n"
            f"    raise IndexError(\"the mask does not match the first two dimensions of the indexed tensor\")\n",
            f"{last} = ({torch}.arange({m}.size(1), device={m}.device) * {m}).argmax(1)\n",
        ]
        statements = [cst.parse_statement(line) for line in lines]
        statements[0] = statements[0].with_changes(leading_lines=check.leading_lines)
        plan.replace(check, cst.FlattenSentinel(statements))
        rest = "".join(", " + ctx.code(e.slice).strip() for e in selection.slice[1:])
        picked = cst.parse_expression(f"{x}[{torch}.arange({x}.size(0), device={x}.device), {last}{rest}]")
        return plan.replace(selection, picked)


def _masked_rows(node: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``(x, m)`` of ``x[m, :]``."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 2:
        return None
    first, second = (e.slice for e in node.slice)
    if isinstance(first, cst.Index) and first.star is None and _full_slice(second):
        return node.value, first.value
    return None


def _full_slice(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Slice) and node.lower is None and node.upper is None and node.step is None


def _pooled(selection: cst.Subscript, base: cst.BaseExpression, ctx) -> cst.Subscript | None:
    """The whole ``x[m, :].view(x.size(0), -1, x.size(-1))[:, -1]`` (or ``[:, -1, :]``) around the
    selection, or None when the selection is not used this way."""
    attr = ctx.parent(selection)
    call = ctx.parent(attr)
    if not (isinstance(attr, cst.Attribute) and attr.attr.value == "view" and isinstance(call, cst.Call)
            and call.func is attr):
        return None
    args = call.args
    if len(args) != 3 or any(a.keyword is not None or a.star for a in args):
        return None
    x = ctx.code(base).strip()
    first, middle, last = (ctx.code(a.value).strip() for a in args)
    if first not in (f"{x}.size(0)", f"{x}.shape[0]") or middle != "-1" \
            or last not in (f"{x}.size(-1)", f"{x}.shape[-1]"):
        return None
    pooled = ctx.parent(call)
    if not isinstance(pooled, cst.Subscript) or pooled.value is not call or len(pooled.slice) not in (2, 3):
        return None
    parts = [e.slice for e in pooled.slice]
    if not (_full_slice(parts[0]) and isinstance(parts[1], cst.Index) and ctx.code(parts[1]).strip() == "-1"
            and all(_full_slice(p) for p in parts[2:])):
        return None
    return pooled


def _same_count_check(check: cst.CSTNode, mask: str, ctx) -> tuple[str, str]:
    """``(counts, message)`` of a statement that raises unless every row of ``mask`` holds the same
    number of True: the code of ``mask.sum(1)`` it counts with and the message argument for
    ``torch._assert_async`` (``", msg"`` or ``""``)."""
    refusal = f"the statement before the selection is not a check that every row of `{mask}` holds the " \
              f"same number of True (`len(torch.unique_consecutive({mask}.sum(1))) > 1` raising)"
    if isinstance(check, cst.If) and check.orelse is None:
        body = simple_statements(check.body)
        if len(body) != 1 or not isinstance(body[0], cst.Raise):
            raise Refused(refusal)
        counted = _unique_count_test(check.test, mask, (">", "!="), ctx)
        if counted is None:
            raise Refused(refusal)
        return counted, raise_message(body[0], ctx)
    small = check.body if isinstance(check, cst.SimpleStatementLine) else ()
    if len(small) == 1 and isinstance(small[0], cst.Assert) \
            and _unique_count_test(small[0].test, mask, ("==", "<="), ctx) is not None:
        raise Refused("the count check is an `assert`: it raises AssertionError, which no check kept in the "
                      "graph raises (torch._assert_async raises RuntimeError; torch._check_with(AssertionError, "
                      "...) reads the condition on the host), and under `python -O` it proves nothing")
    raise Refused(refusal)


def _rejects_no_true(stmt: cst.CSTNode, mask: str, ctx) -> bool:
    """Whether ``stmt`` raises unless ``mask`` holds a ``True``: ``if not m.any(): raise ...`` (no
    ``else``; the statement is kept, so whatever it raises is raised by both versions) or
    ``torch._assert_async(m.any()[, msg])``, as ``async-assert`` writes that check.  An ``assert`` is
    not one: ``python -O`` removes it."""
    if isinstance(stmt, cst.If) and stmt.orelse is None:
        body = simple_statements(stmt.body)
        test = stmt.test
        return len(body) == 1 and isinstance(body[0], cst.Raise) and isinstance(test, cst.UnaryOperation) \
            and isinstance(test.operator, cst.Not) and _any_true(test.expression, mask, ctx)
    small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
    if len(small) != 1 or not isinstance(small[0], cst.Expr):
        return False
    call = small[0].value
    return isinstance(call, cst.Call) and ctx.program.index.resolve_expr(call.func) == "torch._assert_async" \
        and len(call.args) in (1, 2) and all(a.keyword is None and not a.star for a in call.args) \
        and _any_true(call.args[0].value, mask, ctx)


def _any_true(expr: cst.BaseExpression, mask: str, ctx) -> bool:
    """``mask.any()`` or ``torch.any(mask)``: whether the whole mask holds a ``True`` (false for an empty
    batch)."""
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "any" and not expr.args:
        return isinstance(expr.func.value, cst.Name) and expr.func.value.value == mask
    return ctx.program.index.resolve_expr(expr.func) == "torch.any" and len(expr.args) == 1 \
        and expr.args[0].keyword is None and not expr.args[0].star \
        and isinstance(expr.args[0].value, cst.Name) and expr.args[0].value.value == mask


_OPERATORS = {">": cst.GreaterThan, "!=": cst.NotEqual, "==": cst.Equal, "<=": cst.LessThanEqual}


def _unique_count_test(test: cst.BaseExpression, mask: str, operators: tuple[str, ...], ctx) -> str | None:
    """The code of ``mask.sum(1)`` when ``test`` is ``len(torch.unique_consecutive(mask.sum(1))) OP 1``
    (or ``.numel()``) with one of ``operators``."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    comparison = test.comparisons[0]
    if not (isinstance(comparison.comparator, cst.Integer) and comparison.comparator.evaluated_value == 1
            and any(isinstance(comparison.operator, _OPERATORS[op]) for op in operators)):
        return None
    count = test.left
    if isinstance(count, cst.Call) and isinstance(count.func, cst.Name) and count.func.value == "len" \
            and "len" not in ctx.program.index.functions and len(count.args) == 1:
        unique = count.args[0].value if count.args[0].keyword is None and not count.args[0].star else None
    elif isinstance(count, cst.Call) and isinstance(count.func, cst.Attribute) \
            and count.func.attr.value == "numel" and not count.args:
        unique = count.func.value
    else:
        return None
    if not (isinstance(unique, cst.Call) and len(unique.args) == 1 and unique.args[0].keyword is None
            and not unique.args[0].star
            and ctx.program.index.resolve_expr(unique.func) == "torch.unique_consecutive"):
        return None
    counted = unique.args[0].value
    if not (isinstance(counted, cst.Call) and isinstance(counted.func, cst.Attribute)
            and counted.func.attr.value == "sum" and isinstance(counted.func.value, cst.Name)
            and counted.func.value.value == mask and len(counted.args) == 1 and not counted.args[0].star):
        return None
    arg = counted.args[0]
    if not (isinstance(arg.value, cst.Integer) and arg.value.evaluated_value == 1
            and (arg.keyword is None or arg.keyword.value == "dim")):
        return None
    return ctx.code(counted).strip()


def _stem(mask: str) -> str:
    """``eos`` for ``eos_mask`` or ``mask_eos``: the names of the counts and positions are built on it."""
    for prefix, suffix in (("", "_mask"), ("mask_", "")):
        if mask.startswith(prefix) and mask.endswith(suffix) and len(mask) > len(prefix) + len(suffix):
            return mask[len(prefix):len(mask) - len(suffix)]
    return mask
