"""Shared pieces of the fixers that rewrite ``if``/``elif``/``else`` chains."""
from __future__ import annotations

from typing import Callable

import libcst as cst

from dynalint.analysis.module_index import import_bindings
from dynalint.analysis.syntax import assigned_names, walk
from dynalint.analysis.values import Kind
from dynalint.fixers.support.codegen import paren, rename
from dynalint.fixers.support.purity import called_module

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


_SCALAR = "<number>"
_ZERO_D = "<0-d>"
_UNKNOWN = "<unknown>"
#: Calls and methods known to change the shape of what they are given.
_RESHAPING = frozenset("""
pad cat concat concatenate stack hstack vstack reshape view flatten unflatten squeeze unsqueeze transpose
permute expand expand_as repeat tile narrow split chunk unbind arange zeros ones full empty rand randn randint
matmul mm bmm einsum interpolate linear conv1d conv2d conv3d embedding index_select gather nonzero argwhere
repeat_interleave topk kthvalue diag diagonal outer kron cross pixel_shuffle unfold fold
""".split())
#: Functions and methods that keep the shape and dtype of their (first) tensor argument.
_KEEP_DTYPE = frozenset("""
abs absolute ceil clamp clamp_min clamp_max clip floor frac hardtanh leaky_relu masked_fill nan_to_num neg
negative relu relu6 round sign trunc contiguous clone detach zeros_like ones_like full_like empty_like where
tril triu flip roll masked_scatter new_zeros new_ones new_full new_empty
""".split())
#: Elementwise functions and methods whose result is floating point (or an error) whatever the input.
_TO_FLOAT = frozenset("""
acos asin atan cos cosh erf exp exp2 expm1 gelu log log10 log1p log2 logit mish reciprocal rsqrt selu sigmoid
silu sin sinh softmax log_softmax softplus sqrt tan tanh normalize layer_norm elu celu hardsigmoid hardswish
logsigmoid softsign tanhshrink lerp
""".split())
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
#: Dtype tokens of integer and boolean tensors.
_INTEGRAL = frozenset({"bool", "uint8", "int8", "int16", "int32", "int64"})
#: Ops that move or view elements without changing their dtype.
_LAYOUT = frozenset({"transpose", "permute", "reshape", "view", "flatten", "squeeze", "unsqueeze", "t", "expand",
                     "movedim", "swapaxes"})
#: Sums: of integer or boolean tensors they are int64 (a count), of floating ones their own dtype.
_SUMS = frozenset({"sum", "cumsum"})
#: Clamps whose bounds take part in type promotion.
_BOUNDED = frozenset({"clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "fmax", "fmin"})
_CASTS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
          "int": "int32", "bool": "bool"}
_ELEMENTWISE = _KEEP_DTYPE | _TO_FLOAT | frozenset(_CASTS) | frozenset({"isfinite", "isinf", "isnan",
                                                                       "logical_not", "pow"})
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "std", "var", "logsumexp",
                         "all", "any", "median", "nansum", "nanmean"})
#: Ops that give inf or NaN (or an infinite derivative) on part of their domain: evaluated on the side
#: of a selection that is not taken - where a guard kept them from running - they make the gradient NaN.
SINGULAR = frozenset({"sqrt", "rsqrt", "log", "log2", "log10", "log1p", "reciprocal", "acos", "asin", "atanh",
                      "acosh", "logit", "erfinv", "pow", "div", "divide", "true_divide", "float_power", "xlogy",
                      "digamma", "lgamma", "polygamma", "tan", "exp", "exp2", "expm1", "cosh", "sinh", "remainder",
                      "fmod", "floor_divide"})


_LOSSES = frozenset({"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                     "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"})


def only_binding(name: cst.Name, ctx) -> cst.BaseExpression | None:
    """The value of ``name = <value>`` when that is the enclosing function's only binding of the name:
    not a parameter, nor named by a ``global``/``nonlocal``, an import, a ``del``, a ``def`` or a
    ``class`` (any binding of it counts, in a nested scope too).  A name read inside a target
    (``x[mask] += 1``) is not bound by it."""
    function = ctx.enclosing_function(name)
    if function is None or any(isinstance(p, cst.Param) and p.name.value == name.value
                               for p in walk(function.params)):
        return None
    found = []
    for n in walk(function.body):
        if isinstance(n, (cst.Global, cst.Nonlocal)):
            if any(item.name.value == name.value for item in n.names):
                return None
        elif isinstance(n, (cst.Import, cst.ImportFrom)):
            if isinstance(n.names, cst.ImportStar) or name.value in import_bindings(n):
                return None
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            if n.name.value == name.value:
                return None
        elif isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr,
                            cst.AsName, cst.Del)) and name.value in assigned_names(
                                n.name if isinstance(n, cst.AsName) else n.target):
            found.append(n)
    if len(found) != 1 or not isinstance(found[0], cst.AssignTarget) or not isinstance(found[0].target, cst.Name):
        return None
    assign = ctx.parent(found[0])
    return assign.value if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None


def _call_name(expr: cst.Call) -> str | None:
    func = expr.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else None


def _is_method(expr: cst.Call, ctx) -> bool:
    return isinstance(expr.func, cst.Attribute) and ctx.program.index.resolve_expr(expr.func) is None


def _shape(expr: cst.BaseExpression, ctx, depth: int = 0) -> str | None:
    """A token standing for the shape of ``expr``: the name of the tensor whose shape it keeps,
    ``<number>`` for a Python number, ``<0-d>`` for a full reduction or a scalar tensor, ``<unknown>``
    for calls of modules or other functions, or None when the shape changes (padding, indexing,
    reshaping...) or mixes tensors of different shapes."""
    v = ctx.value(expr)
    if v is not None and v.kind in (Kind.PYTHON, Kind.SIZE) or isinstance(expr, (cst.Integer, cst.Float)):
        return _SCALAR
    if v is not None and v.kind is Kind.TENSOR and v.zero_dim and not v.maybe_none:
        return _ZERO_D  # what the analysis proves 0-d (a function of the file returning a full reduction)
    if isinstance(expr, cst.Name):
        bound = only_binding(expr, ctx) if depth < 3 else None
        if bound is not None:
            token = _shape(bound, ctx, depth + 1)
            if token in (_ZERO_D, _SCALAR):
                return token
        return expr.value
    if isinstance(expr, cst.Attribute):
        return _code(expr) if v is not None and v.kind is Kind.TENSOR else None
    if isinstance(expr, cst.UnaryOperation):
        return _shape(expr.expression, ctx, depth)
    if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
            return None
        return _broadcast([_shape(p, ctx, depth) for p in _operands(expr)])
    if isinstance(expr, cst.Call):
        name = _call_name(expr)
        is_method = _is_method(expr, ctx)
        positional = [a.value for a in expr.args if a.keyword is None and not a.star]
        if name in _LOSSES and not method_reduction_none(expr):
            return _ZERO_D
        if name in _REDUCTIONS:
            has_dim = any(a.keyword is not None and a.keyword.value == "dim" for a in expr.args) or \
                (positional if is_method else positional[1:])
            return None if has_dim else _ZERO_D
        if name in ("zeros", "ones", "full", "empty", "new_zeros", "new_ones", "new_full", "new_empty") and positional and \
                isinstance(positional[0], cst.Tuple) and not positional[0].elements:
            return _ZERO_D
        if name == "tensor" and positional and isinstance(positional[0], (cst.Integer, cst.Float)):
            return _ZERO_D
        if name in _ELEMENTWISE:
            if name == "where":
                return _broadcast([_shape(p, ctx, depth) for p in positional[:3]])
            base = expr.func.value if is_method else (positional[0] if positional else None)
            return _shape(base, ctx, depth) if base is not None else None
        return None if name in _RESHAPING else _UNKNOWN
    if isinstance(expr, cst.Subscript):
        return None
    return _UNKNOWN


def shape_token(expr: cst.BaseExpression, ctx, *, resolve: bool = True) -> str | None:
    """The shape token of ``expr`` (see ``_shape``): the name of the tensor whose shape it provably
    has, ``<unknown>``, or None when the shape changes.  With ``resolve`` it looks through unary
    operators and local names bound once."""
    return _shape(_through_names(expr, ctx) if resolve else expr, ctx)


def _through_names(expr: cst.BaseExpression, ctx) -> cst.BaseExpression:
    """What a local name bound once (or a unary operation on one) stands for, a few levels deep."""
    for _ in range(6):
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            expr = expr.expression
            continue
        bound = only_binding(expr, ctx) if isinstance(expr, cst.Name) else None
        if bound is None:
            break
        expr = bound
    return expr


def method_reduction_none(call: cst.Call) -> bool:
    """A loss call with a ``reduction`` other than a literal ``"mean"``/``"sum"``."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value in ("reduction", "reduce", "size_average"):
            return not (isinstance(a.value, cst.SimpleString) and a.value.evaluated_value in ("mean", "sum"))
    return False


def _operands(expr: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation):
        return [expr.left, expr.right]
    return [expr.left, *(c.comparator for c in expr.comparisons)]


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip()


def _broadcast(tokens: list[str | None]) -> str | None:
    """The shape of an elementwise combination: numbers and 0-d tensors take the other operand's
    shape; several named shapes give the token of their broadcast (``a|b``), equal for two
    alternatives that combine the same tensors."""
    if any(t is None for t in tokens):
        return None
    if _UNKNOWN in tokens:
        return _UNKNOWN
    named = {n for t in tokens if t not in (_SCALAR, _ZERO_D) for n in t.split("|")}
    if named:
        return "|".join(sorted(named))  # the broadcast of these tensors' shapes
    return _ZERO_D if _ZERO_D in tokens else _SCALAR


def _dtype(expr: cst.BaseExpression, ctx, depth: int = 0) -> str | None:
    """A token standing for the dtype of ``expr``: ``same(a|b)`` for the promotion of tensors ``a`` and
    ``b`` (their common dtype), ``float(a|b)`` for a floating-point result of an op on them (the same dtype
    when they are floating point, the default float dtype when they are integers), a torch dtype name
    for casts, ``<int>``/``<float>``/``<num>``/``<bool>`` for Python values; None when it cannot be told."""
    v = ctx.value(expr)
    if isinstance(expr, cst.Integer):
        return "<int>"
    if isinstance(expr, cst.Float):
        return "<float>"
    if v is not None and v.kind in (Kind.PYTHON, Kind.SIZE):
        if v.is_bool:
            return "<bool>"
        if v.kind is Kind.SIZE or isinstance(v.const, int):
            return "<int>"
        return "<float>" if isinstance(v.const, float) else "<num>"
    if isinstance(expr, cst.Name) and depth < 3:
        bound = only_binding(expr, ctx)
        if bound is not None:
            token = _dtype(bound, ctx, depth + 1)
            if token is not None and "(" not in token:
                return token  # a fixed dtype (a cast, a comparison); otherwise the name stands for itself
    if isinstance(expr, (cst.Name, cst.Attribute)):
        return f"same({_code(expr)})" if v is not None and v.kind is Kind.TENSOR else None
    if isinstance(expr, cst.UnaryOperation):
        if isinstance(expr.operator, cst.Not):
            return None
        return _dtype(expr.expression, ctx, depth)
    if isinstance(expr, cst.Comparison):
        return "bool"
    if isinstance(expr, cst.Subscript) and v is not None and v.kind is Kind.TENSOR:
        return _dtype(expr.value, ctx, depth)  # indexing keeps the tensor's dtype
    if isinstance(expr, cst.BinaryOperation):
        return _promote([_dtype(p, ctx, depth) for p in _operands(expr)], isinstance(expr.operator, cst.Divide))
    if isinstance(expr, cst.Call):
        name = _call_name(expr)
        method = _is_method(expr, ctx)
        positional = [a.value for a in expr.args if a.keyword is None and not a.star]
        dtype_kw = next((a.value for a in expr.args if a.keyword is not None and a.keyword.value == "dtype"), None)
        if dtype_kw is not None:
            if isinstance(dtype_kw, cst.Attribute) and dtype_kw.attr.value == "dtype":
                return _dtype(dtype_kw.value, ctx, depth)  # dtype=x.dtype
            return _code(dtype_kw).replace("torch.", "")
        if name in _CASTS and not positional and method:
            return _CASTS[name]
        if name in ("isfinite", "isinf", "isnan", "logical_not", "all", "any"):
            return "bool"
        base = expr.func.value if method else (positional[0] if positional else None)
        if base is None:
            return None
        if name in _SUMS:
            token = _dtype(base, ctx, depth)
            return "int64" if token in _INTEGRAL else (token if token in _FLOAT_DTYPES else None)
        if name == "where" and len(positional) == 3 and not method:
            return _promote([_dtype(positional[1], ctx, depth), _dtype(positional[2], ctx, depth)], False)
        if name in ("pow", "square"):
            exponent = positional[-1] if name == "pow" and positional[-1:] and positional[-1] is not base else None
            return _promote([_dtype(base, ctx, depth)] + ([_dtype(exponent, ctx, depth)] if exponent is not None else []), False)
        if name in _TO_FLOAT:
            return _promote([_dtype(base, ctx, depth)], True)
        if name in _BOUNDED:  # clamp(int_x, 0.5) is a float tensor: the bounds take part in promotion
            bounds = [a.value for a in expr.args if a.value is not base and not a.star
                      and (a.keyword is None or a.keyword.value in ("min", "max"))]
            return _promote([_dtype(base, ctx, depth), *(_dtype(b, ctx, depth) for b in bounds)], False)
        if name in _KEEP_DTYPE or name in _FLOAT_ONLY or name in _LAYOUT or name in ("max", "min", "amax", "amin",
                                                                                   "median"):
            others = positional[0 if method else 1:]
            if name in ("max", "min") and others:  # max(a, b) / a.max(b): elementwise, promotes
                return _promote([_dtype(base, ctx, depth), *(_dtype(o, ctx, depth) for o in others)], False)
            return _dtype(base, ctx, depth)
        return None
    return None


#: Ops that raise on integer tensors: their result has the dtype of their (floating) input.
_FLOAT_ONLY = frozenset("""
gelu silu mish softmax log_softmax layer_norm normalize elu selu celu mean std var norm logsumexp nanmean
hardswish hardsigmoid softplus logsigmoid cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss
binary_cross_entropy binary_cross_entropy_with_logits kl_div
""".split())


def _promote(tokens: list[str | None], to_float: bool) -> str | None:
    """The dtype token of an elementwise combination."""
    if any(t is None for t in tokens):
        return None
    names: set[str] = set()
    floating = to_float
    maybe = False
    for t in tokens:
        if t in ("<int>", "<bool>"):
            continue
        if t == "<float>":
            floating = True
        elif t == "<num>":
            maybe = True
        elif t.startswith(("same(", "float(", "num(")):
            names.update(t[t.index("(") + 1:-1].split("|"))
            floating = floating or t.startswith("float(")
            maybe = maybe or t.startswith("num(")
        else:
            return t if len(tokens) == 1 else None  # a fixed dtype meets others: promotion not followed
    if not names:  # Python numbers only
        return "<float>" if floating else ("<num>" if maybe else "<int>")
    joined = "|".join(sorted(names))
    if maybe:
        return f"num({joined})"  # float or same, depending on a Python number's type
    return f"float({joined})" if floating else f"same({joined})"


def _canonical(token: str | None, floating: frozenset[str]) -> str | None:
    """``float(a|b)`` and ``num(a|b)`` are ``same(a|b)`` when one of the tensors is known to be floating point
    (the promotion of a floating-point tensor with anything is floating point)."""
    if token is None or not token.startswith(("float(", "num(", "same(")):
        return token
    names = token[token.index("(") + 1:-1]
    if set(names.split("|")) & floating:
        return f"same({names})"
    return None if token.startswith("num(") else token


def certainly_floating(expr: cst.BaseExpression, ctx, before: cst.CSTNode | None = None) -> bool:
    """``expr`` is a floating-point tensor for certain: of a float dtype, the result of an op that
    raises on integers (``q.var()``) or gives floats (``x.sqrt()``), or computed from a tensor such an
    op was applied to before ``before`` (default: ``expr``; see :func:`floating_names`)."""
    token = _dtype(expr, ctx)
    if token is None:
        return False
    if token in _FLOAT_DTYPES or token.startswith("float("):
        return True
    if before is None and isinstance(expr, cst.Call) and _call_name(expr) in _FLOAT_ONLY and "dtype" not in {
            a.keyword.value for a in expr.args if a.keyword is not None}:
        return True
    return token.startswith("same(") and bool(set(token[5:-1].split("|")) & floating_names(before or expr, ctx))


def floating_names(node: cst.CSTNode, ctx) -> frozenset[str]:
    """Names the code before ``node`` in its function proves to be floating-point tensors: an op that
    raises on integer tensors (``h.std()``, ``F.gelu(h)``...) was applied to them, and they were not
    rebound since (the original would have raised before reaching ``node`` otherwise)."""
    function = ctx.enclosing_function(node)
    if function is None:
        return frozenset()
    found: set[str] = set()
    inside = {id(n) for n in walk(node)}
    for n in walk(function.body):
        if id(n) in inside:
            break
        if isinstance(n, (cst.AssignTarget, cst.AugAssign)) and isinstance(n.target, cst.Name):
            found.discard(n.target.value)
            assign = ctx.parent(n)
            if isinstance(n, cst.AssignTarget) and isinstance(assign, cst.Assign):
                token = _dtype(assign.value, ctx)
                if token is not None and (token.startswith("float(") or token in _FLOAT_DTYPES or "(" in token and set(
                        token[token.index("(") + 1:-1].split("|")) & found) or _weighted_layer(assign.value, ctx):
                    found.add(n.target.value)  # bound to a floating-point result
        if isinstance(n, cst.Call) and _call_name(n) in _FLOAT_ONLY:
            positional = [a.value for a in n.args if a.keyword is None and not a.star]
            base = n.func.value if _is_method(n, ctx) else (positional[0] if positional else None)
            if isinstance(base, cst.Name):
                found.add(base.value)
    return frozenset(found)


#: torch.nn layers whose output has the dtype of their floating-point weights.
_WEIGHTED_LAYERS = frozenset({"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                              "ConvTranspose3d", "Embedding", "LayerNorm", "GroupNorm", "RMSNorm"})


def _weighted_layer(value: cst.BaseExpression, ctx) -> bool:
    if not isinstance(value, cst.Call):
        return False
    module = called_module(value, ctx)
    return bool(module) and module.startswith("torch.nn.") and module.rsplit(".", 1)[1] in _WEIGHTED_LAYERS


def same_shape(ctx, *exprs: cst.BaseExpression, fallback: str | None = None, strict: bool) -> bool:
    """Whether the alternatives of a selection provably have one shape.

    Every alternative must keep the shape of the same tensor (or all be 0-d); none may change
    it (padding, indexing, reshaping).  With ``strict`` calls whose effect on shapes is unknown
    (modules, other functions) are refused too.  Without it only shapes that are changed by an op
    (``None``) or Python numbers are refused: ``torch.cond`` compares the shapes when it traces,
    and raises."""
    tokens = [_shape(e, ctx) for e in exprs]
    if fallback is not None:
        tokens.append(fallback)
    if any(t is None or t == _SCALAR for t in tokens):
        return False
    if not strict:  # torch.cond compares the shapes when it traces, and raises: refuse a likely mismatch only
        known = {t for t in tokens if t != _UNKNOWN}
        return not (_ZERO_D in known and len(known) > 1)
    return _UNKNOWN not in tokens and len(set(tokens)) == 1


def same_dtype(ctx, *exprs: cst.BaseExpression, fallback: str | None = None,
               floating: frozenset[str] = frozenset()) -> bool:
    """Whether the alternatives of a selection provably have one dtype (``torch.where`` would promote);
    ``floating`` names tensors known to be floating point."""
    tokens = [_dtype(e, ctx) for e in exprs]
    if fallback is not None:
        tokens.append(f"same({fallback})")
    canonical = [_canonical(t, floating) for t in tokens]
    return None not in canonical and len(set(canonical)) == 1


def cond_compatible(ctx, *exprs: cst.BaseExpression, fallback: str | None = None,
                    floating: frozenset[str] = frozenset()) -> bool:
    """For ``torch.cond`` (which raises when its branches differ in shape or dtype): every shape and
    every dtype the analysis can tell is the same one.  A shape that changes (indexing, reshaping) or
    two different known ones (a ``(d,)`` parameter against an input ``x``) refuse, as do two known
    dtypes that are not provably one (``x.half()`` against ``x``); what a module call returns is not
    known and is left to the documented hazard."""
    shapes = [shape_token(e, ctx) for e in exprs] + ([fallback] if fallback is not None else [])
    if any(t is None for t in shapes):
        return False
    named = [set(t.split("|")) for t in shapes if t != _UNKNOWN]
    if any(not (a <= b or b <= a) for a in named for b in named):
        return False  # unrelated tensors (a broadcast that includes the other is left to the hazard)
    dtypes = [_dtype(_through_names(e, ctx), ctx) for e in exprs] + (
        [f"same({fallback})"] if fallback is not None else [])
    known = {c for c in (_canonical(t, floating) for t in dtypes if t is not None) if c is not None}
    fixed = {t for t in known if "(" not in t}
    relative = [(t[:t.index("(")], set(t[t.index("(") + 1:-1].split("|"))) for t in known - fixed]
    if len(fixed) > 1 or (fixed and relative):
        return False  # two casts, or a cast against a dtype that follows an input (`x.half()` against `x`)
    # the promotion of tensors that include the other side's is left to the hazard, as for shapes
    return all(k == k2 and (a <= b or b <= a) for k, a in relative for k2, b in relative)


def dtypes_may_match(ctx, *exprs: cst.BaseExpression, fallback: str | None = None,
                     floating: frozenset[str] = frozenset()) -> bool:
    """For ``torch.cond`` (which raises on a mismatch): no two known dtypes provably differ.  ``same(x)``
    and ``float(x)`` differ for an integer ``x``, so they count as different unless ``x`` is floating."""
    tokens = [_dtype(e, ctx) for e in exprs]
    if fallback is not None:
        tokens.append(f"same({fallback})")
    known = {c for c in (_canonical(t, floating) for t in tokens if t is not None) if c is not None}
    fixed = {t for t in known if "(" not in t and not t.startswith("<")}
    if len(fixed) > 1:
        return False  # two different casts
    by_names: dict[str, set[str]] = {}
    for t in known - fixed:
        if "(" in t:
            by_names.setdefault(t[t.index("("):], set()).add(t)
    return all(len(kinds) == 1 for kinds in by_names.values())


def singular_op(expr: cst.CSTNode, nonzero: "Callable[[cst.BaseExpression], bool] | None" = None) -> str | None:
    """The first op in ``expr`` that can give inf/NaN on part of its domain (a division by a
    non-literal that ``nonzero`` does not prove non-zero, ``sqrt``, ``log``, a power with a
    non-literal exponent...), or None."""
    for node in walk(expr):
        if isinstance(node, cst.BinaryOperation):
            op = node.operator
            if isinstance(op, (cst.Divide, cst.FloorDivide, cst.Modulo)) and not _literal(node.right) \
                    and not (nonzero is not None and nonzero(node.right)):
                return f"`{_code(node)}` divides by a value that may be 0"
            if isinstance(op, cst.Power) and not (isinstance(node.right, cst.Integer)
                                                  and int(node.right.value) >= 0):
                return f"`{_code(node)}` raises to a power that may be singular"
        if isinstance(node, cst.Call) and _call_name(node) in SINGULAR and not _safe_power(node):
            return f"`{_code(node.func)}` can give inf or NaN"
    return None


def _safe_power(call: cst.Call) -> bool:
    """``x.pow(2)`` / ``torch.pow(x, 2)``: a non-negative integer exponent is smooth everywhere."""
    if _call_name(call) != "pow":
        return False
    exponent = call.args[-1].value if call.args else None
    return isinstance(exponent, cst.Integer) and int(exponent.value) >= 0


def _literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    if not isinstance(expr, (cst.Integer, cst.Float)):
        return False
    try:
        return float(expr.evaluated_value) != 0
    except (TypeError, ValueError):
        return False


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


def dtype_token(expr: cst.BaseExpression, ctx) -> str | None:
    """What the analysis can tell of the dtype of ``expr`` (see ``_dtype``)."""
    return _dtype(expr, ctx)
