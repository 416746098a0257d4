"""The shortcuts of the hot path give what the slow ways give: ranges found by generating only the
top-level statements that hold the nodes (``ranges_within``) are those of generating the whole module
(``node_ranges``), and ``literal_value`` is libcst's ``evaluated_value``."""
from __future__ import annotations

import os
import random

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalint.core import positions
from dynalint.analysis.syntax import children, literal_value, walk
from dynalint.core.positions import changed_blocks, node_ranges, ranges_within
from lsp_client import synthetic_model
from model_code import model_source

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "model.py")
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


def _pairs(module: cst.Module, rng: random.Random, count: int) -> list[tuple[cst.CSTNode, cst.CSTNode]]:
    """Random nodes, each with a statement that holds it (the innermost one or a top-level one)."""
    out = []
    for top in module.body:
        todo: list[tuple[cst.CSTNode, cst.CSTNode]] = [(top, top)]
        while todo:
            node, statement = todo.pop()
            if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                statement = node
            if rng.random() < 0.2:
                out.append((node, statement if rng.random() < 0.7 else top))
            todo.extend((child, statement) for child in reversed(list(children(node))))
    rng.shuffle(out)
    return out[:count]


def _same_ranges(text: str, seed: int) -> int:
    """Compare both on random nodes of ``text``; returns how many ``ranges_within`` left to the slow way."""
    module = cst.parse_module(text)
    pairs = _pairs(module, random.Random(seed), 60)
    slow: list[cst.CSTNode] = []

    def counted(module: cst.Module, source: str, nodes) -> dict:
        slow.extend(nodes)
        return node_ranges(module, source, nodes)

    positions.node_ranges = counted
    try:
        found = ranges_within(module, text, pairs)
    finally:
        positions.node_ranges = node_ranges
    assert found == node_ranges(module, text, [n for n, _ in pairs])
    return len(slow)


@pytest.mark.parametrize("seed", range(3))
def test_ranges_within_statements_are_those_of_the_module(seed: int) -> None:
    with open(EXAMPLE, encoding="utf-8") as fh:
        assert _same_ranges(fh.read(), seed) == 0
    assert _same_ranges(synthetic_model(80), seed) == 0
    odd = ("import torch\r\n\r\n# a\r\n@torch.compile  # b\r\n\r\n# c\r\n@staticmethod\r\ndef f(x):\r\n"
           "    return (x\r\n        .item())\r\nx = 1; y = (2,\r\n 3)\r\nclass A: pass\r\n\r\n# d\r\n"
           "if x:\r\n"
           "    y = '''\r\nz'''\r\nelse:\r\n    pass\r\n# end")
    assert _same_ranges(odd, seed) <= 6  # the last statement (no line end) is left to the slow way
    assert _same_ranges(odd.replace("\r\n", "\r"), seed) <= 6


@given(model_source(), st.integers(0, 1000))
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_ranges_within_statements_of_generated_models(text: str, seed: int) -> None:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return
    _same_ranges(text, seed)


def test_a_statement_of_a_method_is_generated_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node in a method of a class: the statement of the method that holds it is generated, not the
    whole method (a model's ``forward`` is long), and the range is the one the whole module gives."""
    text = ("class M:\n    x = 1\n\n    def f(self, a):\n        # note\n        b = a + 1\n"
            "        if b:\n            return b.item()\n        return a\n\n    async def g(self):\n"
            "        await h()\n")
    module = cst.parse_module(text)
    method = module.body[0].body.body[1]
    branch = method.body.body[1]
    item = next(n for n in walk(branch) if isinstance(n, cst.Call))
    generated: list[cst.CSTNode] = []
    before = positions._OffsetState.before_codegen

    def spy(state: positions._OffsetState, node: cst.CSTNode) -> None:
        generated.append(node)
        before(state, node)

    monkeypatch.setattr(positions._OffsetState, "before_codegen", spy)
    found = ranges_within(module, text, [(item, branch)])
    assert any(n is branch for n in generated) and not any(n is method for n in generated)
    monkeypatch.undo()
    assert found == node_ranges(module, text, [item])


DEFINITIONS = ("import torch\n\n\n@torch.compile  # a\n@staticmethod\ndef f(x):\n    return x.item()\n\n\n"
               "class A(\n    torch.nn.Module,\n):\n    \"\"\"doc\nat the first column\n\"\"\"\n    k = (1,\n2)\n\n"
               "    # c\n    @property\n    def p(self):\n        return self.k\n\n"
               "    def forward(\n        self, x\n    ):\n        y = x + 1\n        if y.sum():\n"
               "            return y.item()\n        return y\n\n\n"
               "async def g(a):\n    await a\n\n\nclass B: pass\n")


@pytest.mark.parametrize("ends", ["\n", "\r\n"])
@pytest.mark.parametrize("seed", range(3))
def test_definitions_have_their_own_text_parsed(ends: str, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes inside top-level functions and classes: CPython parses the text of those classes alone, not
    the file (a function needs no parse), and the ranges are those of generating the whole module; a
    statement that is no definition, or a name defined twice, has the file parsed."""
    parsed: list[str] = []
    real = positions.cpython_tree

    def spy(source: str):
        parsed.append(source)
        return real(source)

    monkeypatch.setattr(positions, "cpython_tree", spy)
    text = DEFINITIONS.replace("\n", ends)
    module = cst.parse_module(text)
    first = {id(n) for n in walk(module.body[0])}  # the import: no definition
    pairs = [(n, s) for n, s in _pairs(module, random.Random(seed), 200) if id(s) not in first]
    assert pairs
    assert ranges_within(module, text, pairs) == node_ranges(module, text, [n for n, _ in pairs])
    assert parsed and text not in parsed
    parsed.clear()
    twice = text + "def f(x):" + ends + "    return x" + ends
    module = cst.parse_module(twice)
    function = module.body[1]
    assert ranges_within(module, twice, [(function.body, function)]) == node_ranges(module, twice, [function.body])
    assert parsed == [twice]


def test_a_name_with_a_combining_mark_is_found_at_its_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines that open definitions are read in one pass, by the word characters of their names; a name
    holding another character (a combining accent) is looked for on its own, and still needs no parse."""
    parsed: list[str] = []
    real = positions.cpython_tree
    monkeypatch.setattr(positions, "cpython_tree", lambda source: parsed.append(source) or real(source))
    text = "import torch\n\n\ndef sca\u0301le(x):\n    return x.item()\n\n\nasync def sca\u0301le(x):\n    return x\n" \
        "\n\ndef scale(x):\n    return x\n"
    module = cst.parse_module(text)
    pairs = [(f.body, f) for f in module.body[1:3]]
    assert ranges_within(module, text, pairs) == node_ranges(module, text, [n for n, _ in pairs])
    assert not parsed


LITERALS = ("''", "''''''", "'x'", "'''a\r\nb'''", "'''a\nb'''", "r'\\d'", "R'\\n'", "u'x'", "b'x'", "rb'x'",
            "'\\n'", "'\\N{EM DASH}'", "'\"'", "\"'\"", "'ü'", "0", "00", "7", "1_000", "0x1f", "0o7", "1.5",
            "1e3",
            "2j")


@pytest.mark.parametrize("code", LITERALS)
def test_literal_value_is_the_evaluated_value(code: str) -> None:
    node = cst.parse_expression(code)
    value = literal_value(node)
    assert value == node.evaluated_value and type(value) is type(node.evaluated_value)


def test_literal_values_of_a_model_file() -> None:
    with open(EXAMPLE, encoding="utf-8") as fh:
        module = cst.parse_module(fh.read() + synthetic_model(20))
    literals = [n for n in walk(module) if isinstance(n, (cst.SimpleString, cst.Integer))]
    assert len(literals) > 20
    for node in literals:
        assert literal_value(node) == node.evaluated_value


@given(st.lists(st.sampled_from(["a\n", "b\n", "c\n", "\n", "    return x\n"]), max_size=300),
       st.lists(st.tuples(st.integers(0, 300), st.integers(0, 3), st.sampled_from(["a\n", "z\n", "\n"])),
                max_size=4))
def test_changed_blocks_turn_one_text_into_the_other(a, edits):
    """The blocks :func:`changed_blocks` finds, applied to ``a``, give ``b``: in order, apart, and equal
    lines outside them (long equal heads and tails are compared in chunks, the rest line by line)."""
    b = list(a)
    for at, removed, line in edits:
        at = min(at, len(b))
        b[at:at + removed] = [line]
    _check_blocks(a, b)


@pytest.mark.parametrize("n,m", [(64, 65), (65, 64), (128, 130), (200, 100), (0, 70), (63, 64)])
def test_changed_blocks_of_one_repeated_line(n, m):
    """A head and a tail of equal lines that could overlap (one line repeated): neither takes lines the
    other took."""
    _check_blocks(["x\n"] * n, ["x\n"] * m)


def _check_blocks(a: list[str], b: list[str]) -> None:
    out: list[str] = []
    done = 0
    for i1, i2, j1, j2 in changed_blocks(a, b):
        assert done <= i1 <= i2
        assert a[done:i1] == b[len(out):len(out) + i1 - done]
        out += a[done:i1] + b[j1:j2]
        done = i2
    assert out + a[done:] == b
