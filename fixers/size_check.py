"""A check on a number read from data (DYN104, DYN101 under the capture flags) -> ``torch._check``.

Before::

    k = len(torch.unique(target))
    if k > 10:
        raise RuntimeError("more than 10 classes")

After::

    k = len(torch.unique(target))
    torch._check(k <= 10, lambda: "more than 10 classes")

With ``capture_dynamic_output_shape_ops`` the size of a data-dependent-size op's output (``unique``,
``nonzero``, a boolean mask) is an unbacked symbol in the graph, and with ``capture_scalar_outputs``
so is an ``.item()``: a Python ``if`` on it breaks the graph ("Data-dependent branching": the flags
move the op's break there).  ``torch._check`` takes the same test as a symbolic condition and keeps
it in the graph as a run-time assertion (measured on torch 2.13, with both flags on: no break, where
the check passes and where it fails).

The condition is negated without ``not`` (on a symbolic bool Dynamo breaks there): a comparison of
integers (sizes, integer literals, integer arithmetic of them, local names bound once to such) by
its inverse, ``==``/``!=`` of any numbers by the other, ``not c`` by ``c``, anything else by
``torch.sym_not(c)``, which Dynamo traces on a symbolic bool and which is ``not c`` eagerly
(``k > n`` with ``n`` a parameter: an ``int`` annotation is not enforced, and for a NaN both
``k > n`` and ``k <= n`` are false).  The message moves into a ``lambda``, which ``torch._check``
calls only when the check fails, so eager runs raise the same ``RuntimeError`` with the same
message.  A message that formats values (an f-string, a literal's ``.format(...)``) would hand
Dynamo a closure over them, which it cannot keep when they are symbolic (measured: a break at the
check); the check then runs only while compiling, its message the text with each formatted value
written ``...``::

    if torch.compiler.is_compiling():
        torch._check(torch.sym_not(k > n), lambda: "found ... unique values")
    elif k > n:
        raise RuntimeError(f"found {k} unique values")

Proves, or refuses: the finding is a Python ``if`` (no ``elif``/``else``) on a number the flags keep
symbolic (the analysis's value: a bool of sizes or of captured scalars, not a tensor, nor a value it
could not type); its body is exactly ``raise RuntimeError(<message>)`` with the builtin
``RuntimeError`` (not a name the module rebinds); the message is a string literal, an f-string or a
literal's ``.format(...)``, and neither it nor the condition has a side effect (a call that is not
known pure, a walrus).  Other exception types are refused: compiled, Dynamo keeps every
``torch._check*`` variant as the same assertion and a failing one raises ``RuntimeError``, not the
``ValueError``/``IndexError``/``TypeError``/``NotImplementedError`` that ``torch._check_value`` and
its siblings raise eagerly (measured on torch 2.13).

Unsafe (hazards): compiled with the flags, a failing check raises ``RuntimeError`` with the same
literal message, but a message that formatted values reads ``...`` in their place; a ``torch.sym_not``
negation that Dynamo meets on a plain bool (the flags off at run time, or a test it decides while
tracing) is a graph break of its own.  Eager runs are unchanged.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.breaks import Cause
from dynalint.analysis.events import ConditionEvent
from dynalint.analysis.syntax import simple_statements, string_literal
from dynalint.analysis.values import Kind
from dynalint.fixers.support.base import FixExample, FixPlan, Fixer, Refused, register
from dynalint.fixers.support.branches import only_binding
from dynalint.fixers.support.codegen import (builtin_class, check_while_compiling, known_tensor, message_text,
                                              string_literal_code, use_torch)
from dynalint.fixers.support.purity import impurity

#: a comparison's inverse: exact for integers; for ``==``/``!=`` (:data:`_ANY_NUMBERS`) for any numbers
_INVERSE: dict[type, str] = {cst.LessThan: ">=", cst.LessThanEqual: ">", cst.GreaterThan: "<=",
                             cst.GreaterThanEqual: "<", cst.Equal: "!=", cst.NotEqual: "=="}
_ANY_NUMBERS = (cst.Equal, cst.NotEqual)


@register
class SizeCheck(Fixer):
    name = "size-check"
    codes = ("DYN104", "DYN101")
    safety = "unsafe"
    summary = "Rewrite `if <test of a data-dependent size or captured scalar>: raise RuntimeError(msg)` " \
              "into `torch._check(<negated test>, lambda: msg)` (the break the flags move to the `if`)."
    reasoning = __doc__ or ""
    EXAMPLES = [
        FixExample(
            before="""
                import torch

                @torch.compile
                @torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)
                def distinct(x):
                    k = len(torch.unique(x.round()))
                    if k > 6:
                        raise RuntimeError("too many distinct values")
                    return x * 2
            """,
            after="""
                import torch

                @torch.compile
                @torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)
                def distinct(x):
                    k = len(torch.unique(x.round()))
                    torch._check(k <= 6, lambda: "too many distinct values")
                    return x * 2
            """,
            inputs="[(torch.arange(8.0) % 5,), (torch.zeros(8),), (torch.arange(8.0) % 3,)]",
        ),
        FixExample(
            before="""
                import torch

                @torch.compile
                @torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)
                def hits(x, limit: int = 3):
                    found = x.nonzero().size(0)
                    over = found > limit
                    if over:  # validate
                        raise RuntimeError(f"{found} hits, more than {limit}")
                    return x + 1
            """,
            after="""
                import torch

                @torch.compile
                @torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)
                def hits(x, limit: int = 3):
                    found = x.nonzero().size(0)
                    over = found > limit
                    if torch.compiler.is_compiling():
                        torch._check(torch.sym_not(over), lambda: "... hits, more than ...")
                    elif over:  # validate
                        raise RuntimeError(f"{found} hits, more than {limit}")
                    return x + 1
            """,
            inputs="[(torch.tensor([0., 1., 0., 0.]),), (torch.tensor([1., 1., 0., 0.]),), "
                   "(torch.zeros(4),)]",
        ),
    ]

    def plan(self, finding, ctx) -> FixPlan | None:
        brk = finding.brk
        ev = brk.event if brk is not None else None
        stmt = finding.statement
        if not (isinstance(ev, ConditionEvent) and ev.construct == "if" and isinstance(stmt, cst.If)):
            return None
        if not _symbolic_number_test(brk, ev):
            return None
        parent = ctx.parent(stmt)
        if stmt.orelse is not None or (isinstance(parent, cst.If) and parent.orelse is stmt):
            raise Refused("the check has an `elif`/`else`: only a lone `if <test>: raise` becomes "
                          "torch._check")
        body = simple_statements(stmt.body)
        if len(body) != 1 or not isinstance(body[0], cst.Raise):
            raise Refused("the `if` does more than raise")
        raised = body[0]
        exc = raised.exc
        if raised.cause is not None or not (isinstance(exc, cst.Call) and len(exc.args) == 1
                                            and exc.args[0].keyword is None and not exc.args[0].star):
            raise Refused("the raise is not `raise RuntimeError(<message>)`: torch._check raises with its "
                          "own message otherwise")
        if not builtin_class(exc.func, ctx, "RuntimeError"):
            raise Refused(f"`{ctx.code(exc.func).strip()}` is not the builtin RuntimeError: compiled, a "
                          "failing torch._check raises RuntimeError whichever variant is used (measured on "
                          "torch 2.13)")
        message = exc.args[0].value
        for part, what in ((stmt.test, "the condition"), (message, "the message")):
            why = impurity(part, ctx)
            if why is not None:
                raise Refused(f"{what} may have a side effect: {why}")
        plan = FixPlan("keep the check in the graph with torch._check (raises RuntimeError)", "unsafe")
        torch = use_torch(plan, ctx, finding.node)
        check = f"{torch}._check({_negated(stmt.test, ctx, torch)}, lambda: "
        if string_literal(message):
            new = cst.parse_statement(check + f"{ctx.code(message).strip()})")
            return plan.replace(stmt, new.with_changes(leading_lines=stmt.leading_lines))
        text = message_text(ctx.code(message).strip())
        if text is None:
            raise Refused("the message is neither a string literal nor a formatted one (an f-string, a "
                          "literal's `.format(...)`): torch._check could not keep it")
        inner = cst.parse_statement(check + f"{string_literal_code(text)})")
        plan.description = ("keep the check in the graph with torch._check while compiling (the same "
                            "RuntimeError, its formatted values written `...`)")
        return plan.replace(stmt, check_while_compiling(stmt, inner, torch))


def _symbolic_number_test(brk, ev: ConditionEvent) -> bool:
    """The break is a branch on a number the capture flags keep symbolic: a data-dependent size read in
    a test (DYN104, the flag moves the op's break there) or a captured ``.item()`` (DYN101), not a tensor."""
    value = ev.value
    if value is None or value.kind not in (Kind.SIZE, Kind.SCALAR):
        return False
    return brk.cause is Cause.DYNAMIC_SHAPE_OP or (brk.cause is Cause.CONDITION and value.kind is Kind.SCALAR)


def _negated(test: cst.BaseExpression, ctx, torch: str) -> str:
    """A bool that is true exactly when ``test`` is false, written without ``not`` (Dynamo breaks on
    ``not`` of a symbolic bool; measured on torch 2.13)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        if _is_bool(test.expression, ctx):
            return ctx.code(test.expression).strip()
        raise Refused("`not` of a value not shown to be a bool: torch._check takes only a bool")
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        inverse = _INVERSE.get(type(comp.operator))
        if inverse is not None and (isinstance(comp.operator, _ANY_NUMBERS)
                                    or (_integer(test.left, ctx) and _integer(comp.comparator, ctx))):
            return f"{ctx.code(test.left).strip()} {inverse} {ctx.code(comp.comparator).strip()}"
    if _is_bool(test, ctx):
        return f"{torch}.sym_not({ctx.code(test).strip()})"
    raise Refused("the condition is not shown to be a bool (torch._check takes only a bool)")


def _is_bool(expr: cst.BaseExpression, ctx) -> bool:
    """``expr`` is a Python bool of numbers: a comparison, or a value the analysis holds as one."""
    if isinstance(expr, cst.Comparison) and all(type(c.operator) in _INVERSE for c in expr.comparisons):
        return True
    v = ctx.value(expr)
    return v is not None and v.is_bool and v.kind in (Kind.SIZE, Kind.SCALAR, Kind.PYTHON)


#: arithmetic that keeps integers integers
_INTEGER_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
#: tensor methods that return an integer (``size`` given a dimension)
_SIZE_METHODS = frozenset({"size", "numel", "dim", "nelement"})


def _integer(expr: cst.BaseExpression, ctx, depth: int = 4) -> bool:
    """``expr`` is an integer for certain, never NaN (so a comparison of such numbers is inverted
    exactly): an integer literal, a size read (``len(t)``, ``t.size(0)``, ``t.numel()``, ``t.shape[0]``
    of a tensor), integer arithmetic of those, or a local name the function binds once, to such an
    expression.  A parameter is not one (an ``int`` annotation is not enforced)."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        return _integer(expr.expression, ctx, depth)
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, _INTEGER_OPERATORS) and _integer(expr.left, ctx, depth) \
            and _integer(expr.right, ctx, depth)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Name) and func.value == "len" and len(expr.args) == 1:
            return builtin_class(func, ctx, "len") and known_tensor(ctx, expr.args[0].value)
        return isinstance(func, cst.Attribute) and func.attr.value in _SIZE_METHODS \
            and len(expr.args) == (func.attr.value == "size") and known_tensor(ctx, func.value)
    if isinstance(expr, cst.Subscript):
        shape = expr.value
        return isinstance(shape, cst.Attribute) and shape.attr.value == "shape" and len(expr.slice) == 1 \
            and isinstance(expr.slice[0].slice, cst.Index) and known_tensor(ctx, shape.value)
    if isinstance(expr, cst.Name) and depth > 0:
        value = only_binding(expr, ctx)
        return value is not None and _integer(value, ctx, depth - 1)
    return False
