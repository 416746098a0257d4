"""Generated programs never crash ``check`` or ``fix``, and every fix is sound text.

Four strategies: model code from :mod:`model_code` (every rule fires and every
fixer applies), hypothesmith's programs from CPython's grammar and from libcst's
node types, and the latter mixed with model code.  For ``check``: no exception
and every range inside the source.  For ``fix`` with every fixer (unsafe ones
included): no exception and no fixer error, the output parses with ``ast`` and
libcst, a second run changes nothing, and the multiset of comments is the same.

A few examples per strategy run with the suite; ``DYNALINT_FUZZ_EXAMPLES=N``
runs N per strategy (see README, Testing).
"""
from __future__ import annotations

import ast
import contextlib
import io
import logging
import os
import textwrap
import tokenize
from collections import Counter

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, Phase, assume, event, find, given, settings
from hypothesis import strategies as st
from model_code import SNIPPETS, model_source

from dynalint.analysis.syntax import walk
from dynalint.engine.pipeline import check_source
from dynalint.fixers.support.base import all_fixers
from dynalint.engine.fixing import apply_text_edits, diagnostics_with_fixes, fix_source
from dynalint.rules.base import all_rules
from dynalint.config.settings import Settings

LONG = int(os.environ.get("DYNALINT_FUZZ_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code compiles with warnings


def budget(ci_examples: int) -> settings:
    return settings(max_examples=LONG or ci_examples, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


SCOPES = st.sampled_from(["auto", "all"])
GRAMMAR = hypothesmith.from_grammar()
NODES = hypothesmith.from_node()


@st.composite
def mixed_programs(draw) -> str:
    """hypothesmith's code inside a compiled function with a tensor branch, or before model code."""
    code = draw(NODES)
    if draw(st.booleans()):
        source = (f"import torch\n\n\n@torch.compile\ndef f(x):\n{textwrap.indent(code, '    ')}\n"
                  "    if x.sum() > 0:\n        x = x * 2\n    return x.item()\n")
    else:
        source = code + "\n" + draw(model_source())
    try:
        compile(source, "m.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        cst.parse_module(source)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        assume(False)
    return source


def comments(*sources: str) -> list[Counter[str]]:
    """The comments of each source, as the tokenize module sees them (line ends made uniform first, as
    ``compile`` does: it misreads a lone carriage return), else all as libcst does (tokenize rejects
    some code that compiles, such as odd backslash continuations)."""
    try:
        return [Counter(t.string for t in tokenize.generate_tokens(io.StringIO(uniform_ends(s)).readline)
                        if t.type == tokenize.COMMENT) for s in sources]
    except (tokenize.TokenError, SyntaxError):
        return [Counter(n.value for n in walk(cst.parse_module(s)) if isinstance(n, cst.Comment))
                for s in sources]


def uniform_ends(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")


def python_lines(text: str) -> list[str]:
    """The lines Python sees, with their ends (``\\n``, ``\\r\\n`` or ``\\r``; not form feeds)."""
    return io.StringIO(text, newline="").readlines()


def apply_on_python_lines(text: str, edits) -> str:
    """The edits applied at (line, column) positions counted on the lines Python sees."""
    starts = [0]
    for line in python_lines(text):
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return min(starts[min(line - 1, len(starts) - 1)] + column - 1, len(text))

    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        text = text[:offset(e.line, e.column)] + e.new_text + text[offset(e.end_line, e.end_column):]
    return text


@contextlib.contextmanager
def fixer_errors_logged():
    """The fixer errors ``diagnostics_with_fixes`` logs while in the block."""
    messages: list[str] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("dynalint.engine.fixing")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return False
    return True


def assert_check_sound(source: str, scope: str) -> None:
    diagnostics = check_source(source, "m.py", Settings(scope=scope))
    lines = [line.rstrip("\r\n") for line in python_lines(source)] or [""]
    for d in diagnostics:
        event(d.code)
        assert 1 <= d.line <= d.end_line <= len(lines) + 1, d
        assert 1 <= d.column <= len(lines[d.line - 1]) + 1 if d.line <= len(lines) else d.column == 1, d
        assert (d.line, d.column) <= (d.end_line, d.end_column), d


def assert_fix_sound(source: str, scope: str) -> str:
    config = Settings(scope=scope)
    result = fix_source(source, "m.py", config, unsafe=True)
    fixed = result.source
    assert not result.errors, [e.message() for e in result.errors]
    for applied in result.applied:
        event(f"fixed by {applied.fixer}")
    if not parses(source):
        assert fixed == source and not result.applied
        return fixed
    compile(fixed, "m.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    assert parses(fixed)
    before, after = comments(source, fixed)
    assert after == before
    again = fix_source(fixed, "m.py", config, unsafe=True)
    assert again.source == fixed and not again.applied, [a.fixer for a in again.applied]
    return fixed


@budget(40)
@given(model_source(), SCOPES)
def test_check_model_code(source, scope):
    # the generator's own contract: valid Python
    compile(source, "m.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    assert_check_sound(source, scope)


@budget(30)
@given(model_source(), SCOPES)
def test_fix_model_code(source, scope):
    fixed = assert_fix_sound(source, scope)
    if not source.endswith(("\n", "\r")):  # a missing final newline changes nothing else
        newline = "\r\n" if "\r\n" in source else "\r" if "\r" in source else "\n"
        assert fixed == assert_fix_sound(source + newline, scope)[:-len(newline)]


@budget(30)
@given(model_source())
def test_offered_fixes_apply_as_text_edits(source):
    """``check --format json`` and the editor carry each fix as text edits that apply on their own."""
    with fixer_errors_logged() as errors:
        diagnostics = diagnostics_with_fixes(source, "m.py", Settings())
    assert not errors, errors
    for d in diagnostics:
        if d.fix is not None:
            event(f"offered {d.code}")
            edited = apply_text_edits(source, d.fix.edits)
            assert edited == apply_on_python_lines(source, d.fix.edits)
            assert edited != source and parses(edited)
            before, after = comments(source, edited)
            assert after == before


@budget(25)
@given(GRAMMAR, SCOPES)
def test_check_and_fix_grammar_programs(source, scope):
    assert_check_sound(source, scope)
    assert_fix_sound(source, scope)


@budget(15)
@given(NODES, SCOPES)
def test_check_and_fix_node_programs(source, scope):
    assert_check_sound(source, scope)
    assert_fix_sound(source, scope)


@budget(20)
@given(mixed_programs(), SCOPES)
def test_check_and_fix_mixed_programs(source, scope):
    assert_check_sound(source, scope)
    assert_fix_sound(source, scope)


#: The snippets that lead to each fixer (the coverage check restricts the generator to them).
FIXER_SNIPPETS = {
    "branch-to-where": ("if-assign", "if-return", "ternary"), "branch-to-cond": ("if-call",),
    "async-assert": ("raise", "assert"), "hoist-decision": ("decision",), "keep-tensor": ("scalar",),
    "masked-reduction": ("masked",), "masked-loss": ("masked-loss",),
    "masked-elementwise-loss": ("masked-loss",), "defer-logging": ("logging",),
    "skip-logging-while-compiling": ("logging",), "global-to-tensor": ("global",),
    "env-read-once": ("env",), "python-state-to-buffer": ("counter",), "check-in-graph": ("check",),
    "last-true-pooling": ("pooling",), "capture-flags": ("nonzero",), "size-check": ("counted",),
    "full-range-loop": ("experts",), "expert-gather": ("experts",), "eager-tail": ("update",),
    "eager-head": ("prelude",), "eager-callee": ("callee",), "eager-helper": ("pick",),
    "allow-rnn": ("rnn",),
}
RULE_SNIPPETS = {
    "DYN101": ("if-assign",), "DYN102": ("scalar",), "DYN103": ("loop",), "DYN104": ("nonzero",),
    "DYN105": ("logging",), "DYN201": ("global",), "DYN202": ("env",), "DYN203": ("counter",),
    "DYN204": ("scalar",), "DYN205": ("flag",), "DYN206": tuple(SNIPPETS), "DYN207": ("loop",),
    "DYN208": tuple(SNIPPETS),
}
COVERAGE = settings(max_examples=300, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("code", [r.code for r in all_rules()])
def test_the_generator_makes_every_rule_fire(code):
    def fires(source: str) -> bool:
        return code in {d.code for d in check_source(source, "m.py", Settings())}

    find(model_source(RULE_SNIPPETS[code]), fires, settings=COVERAGE)


@pytest.mark.parametrize("name", [f.name for f in all_fixers()])
def test_the_generator_makes_every_fixer_apply(name):
    def applied(source: str) -> bool:
        return any(a.fixer == name for a in fix_source(source, "m.py", Settings(), unsafe=True).applied)

    find(model_source(FIXER_SNIPPETS[name]), applied, settings=COVERAGE)
