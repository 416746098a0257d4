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


_SCALAR = "<scalar>"
_ANY = "<broadcast>"
_UNKNOWN = "<unknown>"
#: Calls and methods known to change the shape of what they are given.
_RESHAPING = frozenset("""
pad cat concat concatenate stack hstack vstack reshape view flatten unflatten squeeze unsqueeze transpose
permute expand expand_as repeat tile narrow split chunk unbind arange zeros ones full empty rand randn randint
matmul mm bmm einsum interpolate linear conv1d conv2d conv3d embedding index_select gather nonzero argwhere
repeat_interleave topk kthvalue diag diagonal outer kron cross pixel_shuffle unfold fold
""".split())
#: Functions and methods that keep the shape of their (first) tensor argument.
_ELEMENTWISE = frozenset("""
abs absolute acos asin atan ceil clamp clamp_min clamp_max clip cos cosh erf exp exp2 expm1 floor frac gelu
hardtanh isfinite isinf isnan leaky_relu lerp log log10 log1p log2 logical_not logit masked_fill mish nan_to_num
neg negative reciprocal relu relu6 round rsqrt selu sigmoid sign silu sin sinh softmax log_softmax softplus sqrt
square tan tanh trunc float double half bfloat16 to type_as int long bool contiguous clone detach normalize
layer_norm zeros_like ones_like full_like empty_like elu celu hardsigmoid hardswish logsigmoid softsign tanhshrink
threshold where pow tril triu flip roll cumsum cumprod logcumsumexp masked_scatter sort_values
""".split())
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "std", "var", "logsumexp",
                         "all", "any", "median", "nansum", "nanmean"})


def _shape(expr: cst.BaseExpression, ctx) -> str | None:
    """A token standing for the shape of ``expr``: the name of the tensor whose shape it keeps,
    ``<scalar>`` for numbers and full reductions, ``<broadcast>`` for elementwise combinations of
    different tensors, ``<unknown>`` for calls of modules or other functions, or None when the
    shape changes (padding, indexing, reshaping...)."""
    v = ctx.value(expr)
    if v is not None and v.kind in (Kind.PYTHON, Kind.SIZE):
        return _SCALAR
    if isinstance(expr, (cst.Integer, cst.Float)):
        return _SCALAR
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return ctx.code(expr).strip() if v is not None and v.kind is Kind.TENSOR else None
    if isinstance(expr, cst.UnaryOperation):
        return _shape(expr.expression, ctx)
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
            return None
        parts = [expr.left, expr.right] if isinstance(expr, cst.BinaryOperation) else \
            [expr.left, *(c.comparator for c in expr.comparisons)]
        return _combine([_shape(p, ctx) for p in parts])
    if isinstance(expr, cst.Call):
        func = expr.func
        name = func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name)
                                                                         else None)
        is_method = isinstance(func, cst.Attribute) and ctx.program.index.resolve_expr(func) is None
        positional = [a.value for a in expr.args if a.keyword is None and not a.star]
        if name in _REDUCTIONS:
            has_dim = any(a.keyword is not None and a.keyword.value == "dim" for a in expr.args) or \
                (positional if is_method else positional[1:])
            return None if has_dim else _SCALAR
        if name in ("zeros", "ones", "full", "empty", "tensor") and positional and \
                (isinstance(positional[0], cst.Tuple) and not positional[0].elements or name == "tensor"):
            return _SCALAR
        if name in _ELEMENTWISE:
            if name == "where":
                return _combine([_shape(p, ctx) for p in positional[1:3]])
            base = func.value if is_method else (positional[0] if positional else None)
            return _shape(base, ctx) if base is not None else None
        return None if name in _RESHAPING else _UNKNOWN
    if isinstance(expr, cst.Subscript):
        return None
    return _UNKNOWN


def _combine(tokens: list[str | None]) -> str | None:
    if any(t is None for t in tokens):
        return None
    if _UNKNOWN in tokens:
        return _UNKNOWN
    concrete = {t for t in tokens if t != _SCALAR}
    if not concrete:
        return _SCALAR
    return concrete.pop() if len(concrete) == 1 else _ANY


def same_shape(ctx, *exprs: cst.BaseExpression, fallback: str | None = None, strict: bool) -> bool:
    """Whether the alternatives of a selection keep one shape.

    None of them may change the shape (padding, indexing, reshaping); with ``strict``,
    calls whose effect on shapes is unknown (modules, other functions) are refused too."""
    tokens = [_shape(e, ctx) for e in exprs]
    if fallback is not None:
        tokens.append(fallback)
    combined = _combine(tokens)
    return combined is not None and not (strict and combined == _UNKNOWN)


def resolved(values: list[cst.BaseExpression], branches) -> list[cst.BaseExpression]:
    """Branch values with names bound earlier in the same branch replaced by what they were bound to
    (one level), so that ``t = x * 2; y = t`` is seen as keeping the shape of ``x``."""
    local: dict[str, cst.BaseExpression] = {}
    for stmts in branches:
        for _, small in stmts:
            if isinstance(small, cst.Assign):
                local.setdefault(small.targets[0].target.value, small.value)
    return [local.get(v.value, v) if isinstance(v, cst.Name) and v.value in local and local[v.value] is not v
            else v for v in values]
