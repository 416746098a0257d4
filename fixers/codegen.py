"""Shared helpers of the fixers: purity of expressions, renaming, tensor conditions."""
from __future__ import annotations

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.syntax import dotted_name, walk
from dynalint.analysis.values import Kind

#: torch functions and tensor methods that draw random numbers: evaluating them on
#: both sides of a branch would change the random stream.
RANDOM_OPS = frozenset({"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                        "bernoulli", "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d",
                        "dropout3d", "alpha_dropout", "feature_alpha_dropout", "gumbel_softmax", "rrelu"})
_PURE_BUILTINS = frozenset({"float", "int", "abs", "min", "max", "len", "tuple", "range", "round"})


def is_pure(expr: cst.CSTNode, ctx) -> bool:
    """Whether evaluating ``expr`` has no side effects and does not consume random numbers:
    literals, names, attributes, arithmetic, indexing, and calls of non-random, out-of-place
    torch functions and tensor methods."""
    for node in walk(expr):
        if isinstance(node, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr, cst.ListComp, cst.GeneratorExp,
                             cst.DictComp, cst.SetComp)):
            return False
        if isinstance(node, cst.Call) and not _pure_call(node, ctx):
            return False
    return True


def _pure_call(call: cst.Call, ctx) -> bool:
    func = call.func
    q = ctx.program.index.resolve_expr(func)
    if q is not None:
        last = q.rsplit(".", 1)[-1]
        module = q.rsplit(".", 1)[0]
        if last.endswith("_") or last in RANDOM_OPS:
            return False
        return module in ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "math")
    if isinstance(func, cst.Name):
        return func.value in _PURE_BUILTINS and func.value not in ctx.program.index.functions
    if isinstance(func, cst.Attribute):
        recv = ctx.value(func.value)
        name = func.attr.value
        if recv is None or recv.kind is not Kind.TENSOR:
            return False
        if name.endswith("_") or name in RANDOM_OPS or name in K.SCALAR_METHODS:
            return False
        return name in K.TENSOR_METHODS or name in K.SIZE_METHODS or name in K.PYTHON_METHODS
    return False


class _Rename(cst.CSTTransformer):
    """Rename variables (not attributes, keywords or parameters)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping
        self._skip = 0

    def visit_Attribute_attr(self, node: cst.Attribute) -> None:
        self._skip += 1

    def leave_Attribute_attr(self, node: cst.Attribute) -> None:
        self._skip -= 1

    def visit_Arg_keyword(self, node: cst.Arg) -> None:
        self._skip += 1

    def leave_Arg_keyword(self, node: cst.Arg) -> None:
        self._skip -= 1

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if self._skip == 0 and original_node.value in self.mapping:
            return updated_node.with_changes(value=self.mapping[original_node.value])
        return updated_node


def rename(node: cst.CSTNode, mapping: dict[str, str]) -> cst.CSTNode:
    return node.visit(_Rename(mapping)) if mapping else node


def paren(code: str) -> str:
    """``code`` wrapped in parentheses unless it is an atom."""
    try:
        expr = cst.parse_expression(code)
    except Exception:
        return f"({code})"
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
                         cst.SimpleString)) or expr.lpar:
        return code
    return f"({code})"


def tensor_condition(expr: cst.BaseExpression, ctx) -> str | None:
    """A boolean-tensor expression equal to Python's truth of ``expr`` (which holds a
    tensor): ``a or b`` -> ``a | b``, ``not a`` -> ``~a``, a numeric tensor -> ``t != 0``.
    None when some part is not known to be a tensor."""
    if isinstance(expr, cst.BooleanOperation):
        left = tensor_condition(expr.left, ctx)
        right = tensor_condition(expr.right, ctx)
        if left is None or right is None:
            return None
        op = "|" if isinstance(expr.operator, cst.Or) else "&"
        return f"{paren(left)} {op} {paren(right)}"
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = tensor_condition(expr.expression, ctx)
        return None if inner is None else f"~{paren(inner)}"
    v = ctx.value(expr)
    if v is None or not v.is_tensor:
        return None
    code = ctx.code(expr).strip()
    return code if v.is_bool else f"{paren(code)} != 0"


def resolves_to(ctx, node: cst.CSTNode, qualname: str) -> bool:
    return ctx.program.index.resolve_expr(node) == qualname


def torch_name(ctx) -> str | None:
    """How the module refers to ``torch`` (None if it does not import it as a module)."""
    for local, q in ctx.program.index.imports.items():
        if q == "torch":
            return local
    return None


def number_dtype(value: cst.BaseExpression) -> str | None:
    """The torch dtype that keeps a Python number literal (``3``, ``-0.5``) exact in a tensor:
    ``long`` for an int, ``float64`` for a float; None for anything else."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    if isinstance(value, cst.Integer):
        return "long"
    if isinstance(value, cst.Float):
        return "float64"
    return None


def name_of(node: cst.CSTNode) -> str | None:
    return dotted_name(node)


def broadcast_mask(base: cst.BaseExpression, mask: cst.BaseExpression, ctx, force_reshape: bool = False) -> str:
    """``mask`` (which selects leading dimensions of ``base``, as in ``base[mask]``) as an expression
    that broadcasts over ``base``."""
    m = ctx.code(mask).strip()
    b = ctx.code(base).strip()
    if not force_reshape and isinstance(mask, cst.Comparison) and ctx.code(mask.left).strip() == b:
        return m  # a comparison of the base itself has its shape
    pm = paren(m)
    return f"{pm}.reshape({pm}.shape + (1,) * ({paren(b)}.dim() - {pm}.dim()))"
