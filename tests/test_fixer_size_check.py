"""``size-check``: with the capture flags, a Python ``if`` on a number computed from a data-dependent size
breaks the graph there; the analysis reports it, and the check becomes ``torch._check``, which keeps it
in the graph and raises the same ``RuntimeError``."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source
from helpers import break_lines, check, dynamo_break_lines, marked_lines

FLAGS = "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"

#: each function tests a number read from a data-dependent size (marked lines: where Dynamo breaks
#: with the flag on); ``main`` calls each compiled once
COUNTS = """import torch
from typing import Optional

{flags}

def through_names(x, n: int, ignore: Optional[int] = None):
    k = len(torch.unique(x))
    check = k > n if ignore is None else k > n + 1
    if check:  # breaks
        raise RuntimeError("too many values")
    return x * 2


def negated(x, n: int):
    found = x.nonzero().size(0) + 1
    ok = found <= n * 2
    if not ok:  # breaks
        raise RuntimeError("too many hits")
    return x * 2


def in_an_expression(x, n: int):
    u = torch.unique(x)
    k = u.numel()
    return x * 2 if k > n else x  # breaks


def after_a_break(x, n: int):
    k = len(torch.unique(x))
    print("counted")
    if k > n:
        return x
    return x * 2


def passed_to_an_op(x, n: int):
    k = len(torch.unique(x))
    return torch.zeros(k).sum() + n


def main(x, n):
    for f in (through_names, negated, in_an_expression, after_a_break, passed_to_an_op):
        torch.compile(f, backend="eager")(x, n)
"""


def test_a_test_of_a_number_computed_from_a_data_dependent_size_breaks_under_the_flag():
    code = COUNTS.format(flags=FLAGS)
    reported = break_lines(code, scope=Scope.ALL)
    assert marked_lines(code) <= reported, sorted(reported)
    # the print breaks (DYN105): the number then enters the resumed frame as a plain int
    assert reported - marked_lines(code) == {code.splitlines().index('    print("counted")') + 1}, sorted(reported)


def test_without_the_flag_the_op_breaks_and_the_flag_is_not_claimed_for_it():
    """The flag moves the op's break to the test: it names no flag for the op."""
    code = COUNTS.format(flags="")
    findings = [d for d in check(code, scope=Scope.ALL) if d.kind == "graph-break" and "unique" in d.message
                and "through_names" in code.splitlines()[d.line - 2]]
    assert findings and all(d.remedy is None for d in findings), findings


@requires_torch
def test_the_reported_lines_are_dynamos(tmp_path):
    code = COUNTS.format(flags=FLAGS)
    lines = dynamo_break_lines(tmp_path, code, "[(torch.tensor([0, 0, 1, 1, 2, 2, 2, 2]), 4)]")
    assert lines == break_lines(code, scope=Scope.ALL)


def _fixed(source: str, **settings) -> str:
    result = fix_source(textwrap.dedent(source), "m.py", Settings(scope=Scope.ALL, **settings), unsafe=True)
    assert any(a.fixer == "size-check" for a in result.applied), result.refused
    again = fix_source(result.source, "m.py", Settings(scope=Scope.ALL, **settings), unsafe=True)
    assert again.source == result.source
    return result.source


FLAGGED = {"capture_dynamic_output_shape_ops": True, "capture_scalar_outputs": True}

CHECKS = """
    import torch

    def count(x, n: int):
        k = len(torch.unique(x))
        # at most n classes
        if k > 3:  # literal bound
            raise RuntimeError("too many classes")
        check = k > n
        if check:
            raise RuntimeError(f"found {k} classes, expected {n}")
        return x * 2

    def scaled(x, ratio: float):
        r = len(torch.unique(x)) * ratio
        if r > 2:
            raise RuntimeError("too many for the ratio")
        return x

    def finite(x):
        if x.sum() > 3:
            raise RuntimeError("too big")
        return x

    def total(x, n: int):
        s = int(x.sum().item())
        if s != n:
            raise RuntimeError("unexpected total")
        return x + s
"""


def test_the_rewrites():
    fixed = _fixed(CHECKS, **FLAGGED)
    # integers compared: the inverse comparison; a name: torch.sym_not; `!=`: `==` (exact for any numbers)
    assert ("    # at most n classes\n    # literal bound\n"
            '    torch._check(k <= 3, lambda: "too many classes")\n') in fixed, fixed
    assert ("    if torch.compiler.is_compiling():\n"
            '        torch._check(torch.sym_not(check), lambda: "found ... classes, expected ...")\n'
            "    elif check:\n"
            '        raise RuntimeError(f"found {k} classes, expected {n}")\n') in fixed, fixed
    assert '    torch._check(s == n, lambda: "unexpected total")\n' in fixed, fixed
    # a float operand may be NaN, where `r > 2` and `r <= 2` are both false: not inverted
    assert '    torch._check(torch.sym_not(r > 2), lambda: "too many for the ratio")\n' in fixed, fixed
    compile(fixed, "m.py", "exec")
    # a tensor condition is the tensor fixers' (async-assert)
    assert '    torch._assert_async(~(x.sum() > 3), "too big")\n' in fixed, fixed
    # without the flags the op breaks and the test reads a plain int: nothing for size-check
    result = fix_source(textwrap.dedent(CHECKS), "m.py", Settings(scope=Scope.ALL), unsafe=True)
    assert "size-check" not in {a.fixer for a in result.applied}
    assert not [r for r in result.refused if r.fixer == "size-check"]


REFUSALS = [
    ("""
        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise ValueError("too many")
            return x
    """, "`ValueError` is not the builtin RuntimeError"),
    ("""
        RuntimeError = ValueError

        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError("too many")
            return x
    """, "is not the builtin RuntimeError"),
    ("""
        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError("too many")
            else:
                x = x + 1
            return x
    """, "has an `elif`/`else`"),
    ("""
        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                print("over")
                raise RuntimeError("too many")
            return x
    """, "does more than raise"),
    ("""
        def f(x, n: int, msg: str):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError(msg)
            return x
    """, "neither a string literal nor a formatted one"),
    ("""
        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError(f"{log_it()} too many")
            return x
    """, "the message may have a side effect"),
    ("""
        def f(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError
            return x
    """, "is not `raise RuntimeError(<message>)`"),
]


@pytest.mark.parametrize("code, reason", REFUSALS, ids=[str(i) for i in range(len(REFUSALS))])
def test_refused_with_a_reason(code, reason):
    source = "import torch\n" + textwrap.dedent(code)
    result = fix_source(source, "m.py", Settings(scope=Scope.ALL, **FLAGGED), unsafe=True)
    assert "size-check" not in {a.fixer for a in result.applied}
    reasons = [r.reason for r in result.refused if r.fixer == "size-check"]
    assert any(reason in r for r in reasons), result.refused


@requires_torch
def test_under_the_flags_the_break_is_gone_and_the_same_exception_is_raised():
    import torch
    import torch._dynamo

    from dynalint.verify.probe import DynamoLog

    source = textwrap.dedent("""
        import torch

        def count(x, n: int):
            k = len(torch.unique(x))
            if k > n:
                raise RuntimeError("too many classes")
            return x * 2
    """)
    fixed = _fixed(source, **FLAGGED)
    assert "torch._check(torch.sym_not(k > n)" in fixed, fixed
    outcomes = []
    for name, text in (("before", source), ("after", fixed)):
        path = f"{name}.py"
        namespace: dict = {}
        exec(compile(text, path, "exec"), namespace)
        f = namespace["count"]
        torch._dynamo.reset()
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True), DynamoLog([path]) as log:
            compiled = torch.compile(f, backend="eager")
            assert torch.equal(compiled(torch.tensor([1, 1, 2, 2]), 2), torch.tensor([2, 2, 4, 4]))
            raised = []
            for run in (f, compiled):
                with pytest.raises(RuntimeError) as err:
                    run(torch.tensor([1, 2, 3, 4]), 2)
                raised.append(str(err.value))
        outcomes.append((sorted({b.gb_type for b in log.breaks}), raised))
    torch._dynamo.reset()
    (before_breaks, before_raised), (after_breaks, after_raised) = outcomes
    assert before_breaks == ["Data-dependent branching", "Observed exception"], before_breaks
    assert after_breaks == [], after_breaks
    assert before_raised == after_raised == ["too many classes", "too many classes"]


def test_a_name_read_in_an_assignment_target_is_still_bound_once():
    """``out[limit] = 0`` reads ``limit`` and binds nothing: ``limit`` is still bound once, to a size, so the
    comparison is inverted exactly (the binding is found by ``branches.only_binding``, shared with the
    shape proofs of the branch fixers)."""
    source = textwrap.dedent("""
        import torch

        def f(x, out):
            k = len(torch.unique(x))
            limit = x.size(0) - 1
            out[limit] = 0
            if k > limit:
                raise RuntimeError("too many classes")
            return x
    """)
    fixed = _fixed(source, **FLAGGED)
    assert '    torch._check(k <= limit, lambda: "too many classes")\n' in fixed, fixed
