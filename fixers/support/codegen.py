"""Shared helpers of the fixers: renaming, the torch import, certain tensor conditions, masked means."""
from __future__ import annotations

import ast
import string
from typing import Iterator

import libcst as cst

from dynalint.analysis.syntax import dotted_name, walk, walk_with_parents
from dynalint.analysis.module_index import import_bindings, local_names_of, names_bound_by
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import Refused


def is_variable(name: cst.Name, parent: cst.CSTNode | None) -> bool:
    """Whether ``name``, a child of ``parent``, stands for a variable: the attribute of ``x.name`` and
    the keyword of ``f(name=...)`` name none, so a rename, a substitution or a count of reads must
    pass them by."""
    return not (isinstance(parent, cst.Attribute) and parent.attr is name
                or isinstance(parent, cst.Arg) and parent.keyword is name)


def variable_names(node: cst.CSTNode) -> Iterator[tuple[cst.Name, cst.CSTNode | None]]:
    """The names in ``node`` (itself included, nested scopes entered) that stand for variables
    (:func:`is_variable`), in source order, each with its parent: one walk, no parent map needed."""
    return ((n, parent) for n, parent in walk_with_parents(node)
            if isinstance(n, cst.Name) and is_variable(n, parent))


class VariableNames(cst.CSTTransformer):
    """Rewrites the names that are variables (:func:`is_variable`), which a rename or a substitution
    must tell from attribute names and keywords.  Subclasses say what a variable becomes in
    :meth:`variable`."""

    def __init__(self) -> None:
        super().__init__()
        self._skip = 0

    def visit_Attribute_attr(self, node: cst.Attribute) -> None:
        self._skip += 1

    def leave_Attribute_attr(self, node: cst.Attribute) -> None:
        self._skip -= 1

    def visit_Arg_keyword(self, node: cst.Arg) -> None:
        self._skip += 1

    def leave_Arg_keyword(self, node: cst.Arg) -> None:
        self._skip -= 1

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return updated_node if self._skip else self.variable(original_node, updated_node)

    def variable(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return updated_node


class _Rename(VariableNames):
    """Rename variables (not attributes, keywords or parameters)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        super().__init__()
        self.mapping = mapping

    def variable(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if original_node.value in self.mapping:
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
    if v is None or not v.is_tensor or not certain_tensor(expr, ctx):
        return None
    code = ctx.code(expr).strip()
    return code if v.is_bool else f"{paren(code)} != 0"


def certain_tensor(expr: cst.BaseExpression, ctx) -> bool:
    """Whether ``expr`` is a tensor for certain, not by a guess: the analysis takes an unannotated
    parameter of ``forward`` for a tensor (its value says it is :attr:`guessed
    <dynalint.analysis.values.Value.guessed>`), which is right for a linter's precision but not proof
    enough for a rewrite (``if n > 0`` on an ``int`` parameter ``n`` is a Python branch).  Certain:
    the result of a tensor operation (a call, method or indexing on a tensor), a parameter annotated
    as a tensor, a module attribute that is a tensor, or an operation with a certain tensor operand."""
    v = ctx.value(expr)
    if v is None or v.kind is not Kind.TENSOR:
        return False
    if isinstance(expr, cst.Call):
        return True  # a torch function or tensor method returned a tensor
    if isinstance(expr, (cst.Subscript, cst.Attribute)):
        base = expr.value
        bv = ctx.value(base)
        return bv is not None and (bv.kind is not Kind.TENSOR or certain_tensor(base, ctx))
    if isinstance(expr, cst.Name):
        return _certain_name(expr, ctx)
    if isinstance(expr, cst.UnaryOperation):
        return certain_tensor(expr.expression, ctx)
    if isinstance(expr, cst.BinaryOperation):
        return certain_tensor(expr.left, ctx) or certain_tensor(expr.right, ctx)
    if isinstance(expr, cst.Comparison):
        return certain_tensor(expr.left, ctx) or any(certain_tensor(c.comparator, ctx)
                                                     for c in expr.comparisons)
    if isinstance(expr, cst.BooleanOperation):
        return certain_tensor(expr.left, ctx) and certain_tensor(expr.right, ctx)
    return False


def _certain_name(name: cst.Name, ctx) -> bool:
    """A name is certain when it is not a parameter (the analysis bound it to a tensor operation's
    result) or when it is a parameter the analysis did not only take for a tensor: its annotation
    declares one (:attr:`~dynalint.analysis.values.Value.guessed` is not set), and the function never
    rebinds it."""
    function = ctx.enclosing_function(name)
    if function is None:
        return True
    p = function.params
    for prm in (*p.posonly_params, *p.params, *p.kwonly_params):
        if prm.name.value == name.value:
            v = ctx.value(name)
            return v is not None and not v.guessed and not _rebound(name.value, function)
    return True


def _rebound(name: str, function: cst.FunctionDef) -> bool:
    return any(isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign))
               and isinstance(n.target, cst.Name)
               and n.target.value == name for n in walk(function.body))


def use_torch(plan, ctx, at: cst.CSTNode) -> str:
    """How the rewrite at ``at`` refers to ``torch``; records ``import torch`` on the plan when the
    module does not import it at run time (the fix engine adds it with libcst's ``AddImportsVisitor``).

    A function around ``at`` that binds that name decides what it is there: accepted when its only
    bindings of it are plain ``import torch`` statements and one of them is a statement of the
    function body before the one holding ``at`` (the name is then the torch module at ``at``, and
    no import is added); refused otherwise (``import torch`` further down makes ``torch`` local to
    the whole function, so an earlier use would raise ``UnboundLocalError``)."""
    name = torch_name(ctx) or "torch"
    function = ctx.enclosing_function(at)
    while function is not None:
        if name in bound_names(function):
            if name == "torch" and _imports_torch_before(function, at, ctx):
                return name
            raise Refused(f"`{name}` is bound inside `{function.name.value}`, so the rewrite cannot refer "
                          "to the torch module there")
        function = ctx.enclosing_function(function)
    if torch_name(ctx) is None:
        if "torch" in ctx.program.index.imports.values():
            raise Refused("the module imports torch only conditionally (`if TYPE_CHECKING:`...), so the "
                          "rewrite would add a run-time import it avoids")
        if "torch" not in plan.imports:
            plan.imports.append("torch")
    return name


def bound_names(function: cst.FunctionDef) -> set[str]:
    """Names a function binds anywhere in its body, imports included."""
    names = set(local_names_of(function)[0])
    for n in walk(function.body):
        if isinstance(n, (cst.Import, cst.ImportFrom)):
            names.update(import_bindings(n))
    return names


def _plain_torch_import(node: cst.CSTNode) -> bool:
    """``import torch`` (possibly beside other modules), binding ``torch`` to the torch module."""
    return isinstance(node, cst.Import) and any(
        a.asname is None and dotted_name(a.name) == "torch" for a in node.names)


def _imports_torch_before(function: cst.FunctionDef, at: cst.CSTNode, ctx) -> bool:
    """Whether ``torch`` is the torch module at ``at`` in ``function``: the function binds it only by
    plain ``import torch`` (no parameter, assignment, other import, ``del``, ``global``/``nonlocal``
    or nested definition of that name), and one such import is a top-level statement of the body
    before the statement that holds ``at`` (so it ran, whatever path led there)."""
    p = function.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params,
              *(s for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param))]
    if any(prm.name.value == "torch" for prm in params):
        return False
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for n in walk(body):
        if isinstance(n, (cst.Import, cst.ImportFrom)):
            if "torch" in import_bindings(n) and not _plain_torch_import(n):
                return False
        elif "torch" in names_bound_by(n):
            return False
        if isinstance(n, (cst.Global, cst.Nonlocal)) and any(x.name.value == "torch" for x in n.names):
            return False
        if isinstance(n, cst.Del) and any(isinstance(x, cst.Name) and x.value == "torch" for x in walk(n.target)):
            return False
    stmt = at
    while stmt is not None and ctx.parent(stmt) is not body:
        stmt = ctx.parent(stmt)
    if stmt is None:
        return False
    index = next((i for i, s in enumerate(body.body) if s is stmt), None)
    return index is not None and any(
        isinstance(s, cst.SimpleStatementLine) and any(_plain_torch_import(x) for x in s.body)
        for s in body.body[:index])


def known_tensor(ctx, expr: cst.BaseExpression) -> bool:
    """The analysis knows ``expr`` is a tensor, never ``None`` (:attr:`Value.is_tensor`): only then may a
    fix hand it to a tensor operation."""
    v = ctx.value(expr)
    return v is not None and v.is_tensor


def builtin_class(node: cst.CSTNode | None, ctx, name: str) -> bool:
    """``node`` is the builtin ``name`` (an exception class, ``len``: not a name the module or a function
    binds), by the value the analysis gave it."""
    v = ctx.value(node) if isinstance(node, cst.Name) else None
    return v is not None and v.qualname == f"builtins.{name}"


def message_text(code: str) -> str | None:
    """The text of an f-string or of a string literal's ``.format(...)`` with each replacement field
    written ``...``; None for any other expression (or a format string that is not well formed)."""
    try:
        node = ast.parse(f"({code})", mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "..." for v in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        try:
            fields = list(string.Formatter().parse(node.func.value.value))
        except ValueError:
            return None
        return "".join(literal + ("" if field is None else "...") for literal, field, _, _ in fields)
    return None


def string_literal_code(text: str) -> str:
    """``text`` as a Python string literal, in double quotes where it holds none."""
    code = repr(text)
    if '"' not in text and code.startswith("'"):
        code = '"' + code[1:-1].replace("\\'", "'") + '"'
    return code


def resolves_to(ctx, node: cst.CSTNode, qualname: str) -> bool:
    return ctx.program.index.resolve_expr(node) == qualname


def torch_name(ctx) -> str | None:
    """How the module refers to ``torch`` at run time: an ``import torch [as t]`` at module level that
    always runs (not under ``if TYPE_CHECKING:`` or another condition). None if there is none."""
    for local, q in ctx.program.index.runtime_imports.items():
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


def module_imports_torch(ctx, at: cst.CSTNode) -> bool:
    """Whether the module imports torch in any form where ``at`` is: at module level (``import torch``,
    ``from torch import nn``, ``import torch.nn as nn``, under a condition too: the module index's
    :attr:`~dynalint.analysis.module_index.ModuleIndex.imports_torch`), or in a function around ``at``
    that binds ``torch`` (:func:`use_torch` decides whether the rewrite may use it there).  A fix that
    only matters in compiled code may take a module that imports none for one that holds no compiled
    code: what it reports there comes from ``--scope all``, and a function that another file's compiled code
    calls is reached from that file."""
    if ctx.program.index.imports_torch:
        return True
    function = ctx.enclosing_function(at)
    while function is not None:
        if "torch" in bound_names(function):
            return True
        function = ctx.enclosing_function(function)
    return False


def check_while_compiling(branch: cst.If, check: cst.BaseStatement, torch: str) -> cst.If:
    """``if torch.compiler.is_compiling(): <check>`` with ``branch`` (an ``if`` that raises, its
    comments and body kept) as its ``elif``: Dynamo takes ``torch.compiler.is_compiling()`` as true
    while it traces, so compiled code runs ``check`` (an assertion kept in the graph) and eager runs
    test and raise as before.  The new ``if`` takes the place, and the leading lines, of ``branch``."""
    return branch.with_changes(
        test=cst.parse_expression(f"{torch}.compiler.is_compiling()"),
        body=cst.IndentedBlock(body=[check]),
        orelse=branch.with_changes(leading_lines=[]),
    )
