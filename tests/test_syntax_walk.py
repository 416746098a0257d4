"""The tree walks the analysis runs on every file: one walk that hands each node with its parent
gives the nodes, the order and the parents that a walk and the children of each node give."""
from __future__ import annotations

import os
import textwrap

import libcst as cst
import pytest

from dynalint.analysis.syntax import (Spans, child_list, children, encloses, nodes_and_parents, parent_map,
                                      walk, walk_with_parents)

CODE = textwrap.dedent('''
    import torch
    from . import helpers as h


    @torch.compile(mode="max-autotune")
    def step(x, *args, scale: float = 2.0, **kw):
        y = [v * scale for v in args if v is not None]
        f = lambda t: t.relu()
        class Inner(torch.nn.Module):
            def forward(self, z):
                return z + 1
        with torch.no_grad() as g:
            x[0], (a, b) = y[1:], divmod(3, 2)
        match x:
            case [first, *rest]:
                pass
        return f(x) if x.sum() > 0 else h.other(x, **kw)
''').lstrip()

SAMPLES = [CODE, "x = 1\n", "", "async def f():\n    async with a as b:\n        await b\n"]


def _tree_files() -> list[str]:
    root = os.path.join(os.path.dirname(__file__), "..", "lint", "engine")
    return sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith(".py"))[:3]


@pytest.mark.parametrize("code", SAMPLES + [open(p, encoding="utf-8").read() for p in _tree_files()])
def test_walk_with_parents_is_the_walk_with_each_nodes_parent(code: str) -> None:
    module = cst.parse_module(code)
    pairs = list(walk_with_parents(module))
    assert [id(n) for n, _ in pairs] == [id(n) for n in walk(module)]
    assert pairs[0] == (module, None)
    by_children = {id(c): n for n in walk(module) for c in children(n)}
    assert {id(n): p for n, p in pairs[1:]} == by_children
    assert all(p is not None and any(c is n for c in child_list(p)) for n, p in pairs[1:])
    assert parent_map(module) == by_children


@pytest.mark.parametrize("code", SAMPLES + [open(p, encoding="utf-8").read() for p in _tree_files()])
def test_nodes_and_parents_are_those_of_the_walk_with_parents(code: str) -> None:
    module = cst.parse_module(code)
    order, parents = nodes_and_parents(module)
    pairs = list(walk_with_parents(module))
    assert [id(n) for n in order] == [id(n) for n, _ in pairs]
    assert parents == {id(n): p for n, p in pairs if p is not None}


def _fields_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` read field by field, each value tested (what :func:`child_list` must give)."""
    from dynalint.analysis.syntax import _fields

    out: list[cst.CSTNode] = []
    for name in _fields(type(node)):
        value = getattr(node, name)
        items = value if isinstance(value, (list, tuple)) else [value]
        out += [v for v in items if isinstance(v, cst.CSTNode)]
    return out


@pytest.mark.parametrize("code", SAMPLES + [open(p, encoding="utf-8").read() for p in _tree_files()])
def test_child_list_reads_the_node_fields_of_every_node(code: str) -> None:
    """The reader written for each node type skips the fields declared as text and takes those declared
    as nodes without a test: the children are still exactly the nodes among the fields' values."""
    for node in walk(cst.parse_module(code)):
        kids = child_list(node)
        expected = _fields_children(node)
        assert len(kids) == len(expected) and all(a is b for a, b in zip(kids, expected)), type(node).__name__


def test_child_list_is_the_code_children_in_source_order() -> None:
    call = cst.parse_expression("f(a, b=c, *d)")
    assert [type(c).__name__ for c in child_list(call)] == ["Name", "Arg", "Arg", "Arg"]
    assert list(children(call)) == child_list(call)
    assert child_list(cst.parse_expression("x")) == []  # a name's text is no node


def test_walk_without_scopes_stops_at_nested_definitions() -> None:
    fn = cst.parse_module(CODE).body[-1]
    assert isinstance(fn, cst.FunctionDef)
    outer = list(walk(fn.body, into_scopes=False))
    names = {n.value for n in outer if isinstance(n, cst.Name)}
    assert {"f", "y", "scale", "g"} <= names
    assert not names & {"Inner", "forward", "z", "t", "relu"}  # inside the class and the lambda
    assert sum(isinstance(n, (cst.ClassDef, cst.Lambda)) for n in outer) == 2  # yielded, not entered
    inner = list(walk(fn, into_scopes=False))  # the root itself is entered even when it is a scope
    assert inner[0] is fn and len(inner) > 1



def test_spans_answer_encloses_for_every_pair_of_nodes() -> None:
    """The positions of a pre-order walk answer what a walk of ``outer`` answers, for every pair of nodes
    of a function (the bodies of its class and lambda included), and for nodes of another tree."""
    fn = cst.parse_module(CODE).body[-1]
    assert isinstance(fn, cst.FunctionDef)
    spans = Spans(fn.body)
    nodes = list(walk(fn.body))
    foreign = list(walk(cst.parse_module(CODE).body[-1]))[:40]  # equal nodes, other objects
    pairs = [(o, i) for o in nodes for i in nodes] + [(o, i) for o in nodes[:40] for i in foreign] \
        + [(o, i) for o in foreign for i in nodes[:40]]
    assert [spans.encloses(o, i) for o, i in pairs] == [encloses(o, i) for o, i in pairs]
    assert sum(spans.encloses(o, i) for o, i in pairs) > len(nodes)  # not only each node in itself


def test_spans_answer_encloses_where_a_node_object_is_met_twice() -> None:
    """A tree built by hand may hold one node object in two places: its position is not one place, and
    the answer is the walk's."""
    a, b = cst.Name("a"), cst.Name("b")
    inner = cst.BinaryOperation(left=a, operator=cst.Add(), right=b)
    call = cst.Call(func=cst.Name("f"), args=[cst.Arg(a)])
    tree = cst.BinaryOperation(left=inner, operator=cst.Add(), right=call)
    spans = Spans(tree)
    nodes = list(walk(tree))
    pairs = [(o, i) for o in nodes for i in nodes]
    assert [spans.encloses(o, i) for o, i in pairs] == [encloses(o, i) for o, i in pairs]
    assert spans.encloses(inner, a) and spans.encloses(call, a) and not spans.encloses(inner, call)

NUMBERS = textwrap.dedent('''
    import torch


    def scaled(x, factor):
        return x * factor


    @torch.compile
    def step(x):
        return scaled(x, 2.0)
''').lstrip()


def test_the_callers_search_keeps_the_trees_of_the_last_modules_only() -> None:
    """The uses the search for numbers passed keeps hold their modules' trees: a run over many files
    keeps those of the last few modules, not every tree it parsed (each garbage collection of the run
    would walk them all again)."""
    from dynalint.analysis import number_callers
    from dynalint.config.settings import Settings
    from dynalint.engine.pipeline import analyse

    # a run of its own: what earlier analyses in this process read is not this run's
    number_callers._STATEMENTS.clear()
    number_callers._RECENT.clear()
    runs = number_callers.KEEP_MODULES + 6
    builds = number_callers._BUILDS[0]
    per_module = len(cst.parse_module(NUMBERS).body)
    for k in range(runs):
        analyse(NUMBERS, f"kept_module_{k}.py", Settings())
    assert number_callers._BUILDS[0] - builds >= runs  # each module's uses were built
    assert len(number_callers._STATEMENTS) <= number_callers.KEEP_MODULES * per_module


def test_a_run_lets_go_of_the_kept_uses_before_it_collects_garbage(tmp_path, monkeypatch) -> None:
    """A run over many files collects garbage every so many files; the uses of the statements kept for
    later analyses hold the trees of the last modules, which the collection would walk again: the run
    lets go of them first (the next files are other modules)."""
    from dynalint.analysis import number_callers
    from dynalint.config.settings import Settings
    from dynalint.core import source
    from dynalint.engine.runner import check_files

    monkeypatch.setattr(source, "COLLECT_EVERY", 2)
    paths = []
    for k in range(2):
        p = tmp_path / f"collected_{k}.py"
        p.write_text(NUMBERS)
        paths.append(str(p))
    builds = number_callers._BUILDS[0]
    results = list(check_files(paths, Settings(), cache_dir=None))
    assert all(r.error is None for r in results)
    assert number_callers._BUILDS[0] > builds  # the search kept the uses of the modules it read
    assert not number_callers._STATEMENTS  # and the collection after the second file let go of them


def test_the_callers_search_makes_parents_only_of_the_statements_holding_a_use(monkeypatch) -> None:
    """The search for the numbers every caller passes looks at the parents of the uses of one name: it
    makes the parent map of the top-level statements that hold a use, not of every statement (a walk
    with parents of the whole module for each module checked), and its answer is the same."""
    from dynalint.analysis import number_callers
    from dynalint.config.settings import Settings
    from dynalint.engine.pipeline import analyse

    helpers = "".join(f"\n\ndef helper{k}(x):\n    return x + {k}\n" for k in range(8))
    text = "import torch\nfrom torch import nn\n" + helpers + textwrap.dedent('''


        class Block(nn.Module):
            def forward(self, x, scale):
                if scale > 1.0:
                    x = x * scale
                return x


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x, 2.0)
    ''')
    made: list[cst.CSTNode] = []
    real = number_callers.nodes_and_parents

    def counting(node: cst.CSTNode):
        made.append(node)
        return real(node)

    monkeypatch.setattr(number_callers, "nodes_and_parents", counting)
    number_callers._STATEMENTS.clear()
    diagnostics = analyse(text, "uses_only.py", Settings()).diagnostics
    assert made  # the search ran
    assert all(isinstance(n, (cst.ClassDef, cst.FunctionDef)) and n.name.value in ("Block", "Model") for n in made)
    # `scale` is a number at every call: its test is guarded, not a graph break
    assert not [d for d in diagnostics if d.line == text.splitlines().index("        if scale > 1.0:") + 1]


def test_the_binding_walk_asks_only_the_nodes_that_bind_names() -> None:
    """The walk over a function for its local names asks only the node types that bind names (a call per
    node of every function was a tenth of indexing a module): every node of a module whose type is left
    out binds none."""
    from dynalint.analysis.module_index import _BINDERS, names_bound_by

    source = CODE + textwrap.dedent('''
        def binders(a, *b, **c):
            global G
            x, (y, *z) = a
            w: int = 1
            w += 1
            for i, j in b:
                pass
            with open(a) as (f, g), open(b):
                pass
            try:
                pass
            except ValueError as e:
                pass
            import os.path as osp, sys
            from json import dumps as d, loads
            k = [m for m in a if (n := m)]
            class Inner:
                pass
            def inner():
                pass
            del x
            lambda q: q
            return {t: u for t, u in c.items()}
    ''')
    found = set()
    for n in walk(cst.parse_module(source)):
        if list(names_bound_by(n)):
            found.add(type(n))
            assert type(n) in _BINDERS
    assert found == _BINDERS  # (the sample binds through each of them)


@pytest.mark.parametrize("code", SAMPLES + [open(p, encoding="utf-8").read() for p in _tree_files()])
def test_the_parse_builds_libcsts_tree_through_plain_constructors(code: str, monkeypatch) -> None:
    """While the parse runs, libcst's node classes construct through constructors that store the fields
    and nothing else (defaults and default factories as libcst declares them); the tree is the one
    libcst's own parse makes, and after the parse a node built by hand is checked again."""
    from dynalint.core.source import parse_unchecked

    during: dict[str, object] = {}
    real = cst.parse_module

    def parse(text: str) -> cst.Module:
        during.update(init=cst.Name.__init__, comma=cst.Comma(), name=cst.Name("x"))
        return real(text)

    monkeypatch.setattr(cst, "parse_module", parse)
    module = parse_unchecked(code)
    monkeypatch.undo()
    assert during["init"] is not cst.Name.__init__
    comma, name = during["comma"], during["name"]
    assert isinstance(comma, cst.Comma) and comma.deep_equals(cst.Comma())
    assert isinstance(name, cst.Name) and name.deep_equals(cst.Name("x"))
    assert module.code == code and module.deep_equals(cst.parse_module(code))
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
