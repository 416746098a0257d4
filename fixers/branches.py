"""Shared pieces of the fixers that rewrite ``if``/``elif``/``else`` chains."""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import walk
from dynalint.analysis.values import Kind
from dynalint.fixers.codegen import paren, rename

AUG_OPS = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
          cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
          cst.MatrixMultiplyAssign: "@", cst.BitAndAssign: "&", cst.BitOrAssign: "|", cst.BitXorAssign: "^"}


class Unsupported(Exception):
    """The statement shape is not one the rewrite handles."""


def chain(node: cst.If):
    conds, bodies = [node.test], [node.body]
    cur = node.orelse
    while isinstance(cur, cst.If):
        conds.append(cur.test)
        bodies.append(cur.body)
        cur = cur.orelse
    return conds, bodies, (cur.body if isinstance(cur, cst.Else) else None)


def statements(block: cst.BaseSuite) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """(line, small statement) pairs of a block; one small statement per line."""
    out = []
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for line in body:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or len(line.body) != 1:
            raise Unsupported
        out.append((line, line.body[0]))
    return out


def target_name(small: cst.CSTNode) -> str:
    if isinstance(small, cst.Assign):
        return small.targets[0].target.value
    return small.target.value


def branch_tag(i: int, n: int) -> str:
    if n <= 2:
        return ("then", "else")[i]
    return f"b{i}"


def renamed_assignment(line, small, mapping, tag, ctx, function, taken, rename_target: bool):
    """The statement with loads renamed by ``mapping`` and, when asked, its target renamed to a
    branch-local name (returned in the updated mapping)."""
    target = target_name(small) if not isinstance(small, cst.Return) else None
    value = rename(small.value, mapping)
    if isinstance(small, cst.AugAssign):
        op = AUG_OPS[type(small.operator)]
        current = mapping.get(target, target)
        value = cst.parse_expression(f"{current} {op} {paren(ctx.code(value).strip())}")
    new_mapping = dict(mapping)
    new_target = target
    if rename_target and target is not None:
        new_target = mapping.get(target)
        if new_target is None:
            new_target = ctx.fresh_name(f"{target}_{tag}", function or ctx.module, taken)
            taken.add(new_target)
        new_mapping[target] = new_target
    new_small = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(new_target))], value=value)
    return line.with_changes(body=[new_small]), new_mapping


def tensor_or_number(ctx, *exprs) -> bool:
    """The selected values are tensors or plain numbers, and at least one is a tensor.

    The result of arithmetic is numeric even when an operand's type is unknown (``loss * 0.0``)."""
    kinds = []
    for e in exprs:
        v = ctx.value(e)
        if v is None or v.maybe_none:
            return False
        if v.kind is Kind.UNKNOWN and isinstance(e, (cst.BinaryOperation, cst.UnaryOperation)) \
                and not isinstance(getattr(e, "operator", None), cst.Not):
            kinds.append(Kind.PYTHON)
            continue
        if v.kind not in (Kind.TENSOR, Kind.PYTHON, Kind.SIZE):
            return False
        kinds.append(v.kind)
    return Kind.TENSOR in kinds


def next_statement(node: cst.CSTNode, ctx):
    found = ctx.block_of(node)
    if found is None:
        return None
    block, i = found
    body = block.body
    if i + 1 >= len(body):
        return None
    nxt = body[i + 1]
    if isinstance(nxt, cst.SimpleStatementLine) and len(nxt.body) == 1:
        return nxt, nxt.body[0]
    return None


def names_around(node: cst.CSTNode, function: cst.FunctionDef | None) -> tuple[set[str], set[str]]:
    """(names bound before ``node`` in the function or as parameters, names read after it)."""
    if function is None:
        return set(), set()
    p = function.params
    before = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    after: set[str] = set()
    state = "before"
    inside = {id(n) for n in walk(node)}
    for n in walk(function.body):
        if id(n) in inside:
            state = "inside"
            continue
        if state == "inside":
            state = "after"
        if state == "before":
            if isinstance(n, cst.AssignTarget) or isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                target = n.target
                if isinstance(target, cst.Name):
                    before.add(target.value)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    before.update(el.value.value for el in target.elements if isinstance(el.value, cst.Name))
            elif isinstance(n, (cst.For, cst.CompFor)) and isinstance(n.target, cst.Name):
                before.add(n.target.value)
        elif state == "after" and isinstance(n, cst.Name):
            after.add(n.value)
    return before, after


def check_augmented(small: cst.AugAssign, ctx) -> None:
    """``x += v`` becomes ``x = x + v`` in the rewrites: only allowed when ``x`` cannot alias
    something the caller sees (a parameter's tensor would no longer be updated in place)."""
    if not isinstance(small.target, cst.Name) or type(small.operator) not in AUG_OPS:
        raise Unsupported
    function = ctx.enclosing_function(small)
    if function is not None:
        p = function.params
        if small.target.value in {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}:
            raise Unsupported
