"""An edit answered from the last analysis (``dynalint.engine.incremental``) reports what a full analysis of
the new text reports: random edits of model files, each answer compared with a fresh analysis."""
from __future__ import annotations

import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalint.adapters.lsp.analysis import Checked, check_document
from dynalint.config.resolver import resolve
from dynalint.engine.incremental import Baselines
from dynalint.engine.session import Session
from lsp_client import synthetic_model
from model_code import model_source

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "model.py")
LONG = int(os.environ.get("DYNALINT_FUZZ_EXAMPLES", "0"))
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

#: Lines an edit inserts: comments (suppressions of every kind among them) and blank lines ...
TRIVIA = ("# a comment", "", "   ", "    # indented", "\t# tab", "#", "# page\x0cbreak") * 3 + (
    "# noqa", "# noqa: DYN102", "# noqa: DYN101,E501", "# dynalint: noqa", "# dynalint: noqa: DYN1",
    "# flake8: noqa: DYN2", "# type: (int) -> int", "# type: ignore")
#: ... and code, some of it not parsing (a form feed before a comment makes the parser cut it).
CODE = ("x = 1", "    h = h.max().item()", "    if h.sum() > 0:", "        pass", "def extra(x):",
        "    return x",
        "    '''", "'''", "class Extra(nn.Module):", "    def forward(self, x):", "        return x.item()",
        "\\", "(")
#: Statements an edit adds inside a function body (at the indentation of the line it goes before) ...
BODY = ("x = 1", "h = h * 2", "pass", "n = h.max().item()", "if h.sum() > 0:\n{indent}    h = h + 1",
        "print(h)", "h = torch.relu(h)", "return h", "for _ in range(2):\n{indent}    h = h.float()",
        "del h", "global label_smoothing", "self.extra = h.shape[0]", "h = h.tolist()")
#: ... and the unfinished text typed on the way to a statement (each a prefix that does not parse).
TYPING = ("h = torch.relu(", "if h.sum() > ", "return (h,", "x = '''", "h = [")
FORM_FEED = "\x0c# form feed"
"""Rare (a file holding it is analysed in full on every edit, until the line is removed)."""


def _between(lines: list[str]) -> list[int]:
    """The lines between top-level statements (blank or comment lines before a line of column 0), and
    the lines of column 0 (before which a line is inserted between two statements)."""
    out, top = [], True
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            top = not lines[i][0].isspace()
        if top:
            out.append(i)
    return out


def _code_edit(text: str, rng: random.Random) -> tuple[str, str | None]:
    """One edit of the code of a function body (a literal changed, a local renamed, a statement added or
    removed), or an unfinished statement typed into one: (the edited text, the text it is typed into,
    else None)."""
    lines = text.splitlines(keepends=True)
    end = re.search(r"\r\n|\r|\n", text)
    newline = end.group() if end else "\n"
    body = [i for i, line in enumerate(lines) if line[:1] in " \t" and line.strip()
            and not line.lstrip().startswith("#")]
    if not body:
        return text, None
    i = rng.choice(body)
    line = lines[i]
    indent = line[:len(line) - len(line.lstrip())]
    kind = rng.random()
    literals = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?", line))
    if kind < 0.2 and literals:
        m = rng.choice(literals)
        lines[i] = line[:m.start()] + rng.choice(("0", "1", "2", "3.5", "10", "-1", "True")) + line[m.end():]
    elif kind < 0.35:
        names = re.match(r"\s+([A-Za-z_]\w*)\s*=[^=]", line)
        if names is None:
            lines[i] = line.replace("(", "( ", 1)
        else:  # the name renamed from its assignment to the end of the block
            old, new = names.group(1), rng.choice(("renamed", "h2", "x", "h", "self"))
            j = i
            while j < len(lines) and (j == i or not lines[j].strip() or lines[j].startswith(indent)):
                lines[j] = re.sub(rf"\b{old}\b", new, lines[j])
                j += 1
    elif kind < 0.65:
        added = rng.choice(BODY).format(indent=indent)
        lines[i:i] = [indent + part + newline for part in added.split("\n")]
    elif kind < 0.8:
        del lines[i]
    else:
        typed = rng.choice(TYPING)
        complete = "".join(lines[:i] + [indent + "h = h + 0" + newline] + lines[i:])
        lines[i:i] = [indent + typed + newline]
        return "".join(lines), complete
    return "".join(lines), None


def _edit(text: str, rng: random.Random) -> str:
    """One random edit of ``text``: lines inserted, removed, replaced, duplicated or suffixed with a
    comment, or the line end at the end of the file changed.  Half the edits are of comments and blank
    lines between top-level statements (what is typed most while code is read), half anything anywhere."""
    lines = text.splitlines(keepends=True)
    end = re.search(r"\r\n|\r|\n", text)
    newline = end.group() if end else "\n"
    between = _between(lines)
    if between and rng.random() < 0.5:
        at, pool = rng.choice(between), TRIVIA
    else:
        at, pool = rng.randrange(len(lines) + 1), TRIVIA + CODE
    kind = rng.random()
    if kind < 0.35 or not lines:
        new = [FORM_FEED] if kind < 0.02 else [rng.choice(pool) for _ in range(rng.choice((1, 1, 2)))]
        lines[at:at] = [line + newline for line in new]
        return "".join(lines)
    i = min(at, len(lines) - 1)
    if kind < 0.5:
        del lines[i]
    elif kind < 0.65:
        lines[i] = rng.choice(pool) + newline
    elif kind < 0.75:
        lines.insert(i, lines[i])
    elif kind < 0.92:
        body = lines[i].rstrip("\r\n")
        lines[i] = body + rng.choice(("  # noqa", "  # noqa: DYN102", "  # note", "")) + lines[i][len(body):]
    else:
        joined = "".join(lines)
        return joined.rstrip("\r\n") if joined.endswith(("\n", "\r")) else joined + newline
    return "".join(lines)


def _opened(tmp_path, text: str) -> tuple[str, Session, Baselines, Checked]:
    """``text`` saved as the ``model.py`` of a project and opened in the editor: its path, the session,
    the documents' last analyses and the answer to opening it."""
    path = os.path.join(str(tmp_path), "model.py")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    session = Session(resolve([path]), cache_dir=None)
    baselines = Baselines()
    return path, session, baselines, check_document(0, text, path, "model.py", session, baselines)


def _differential(tmp_path, text: str, seed: int, edits: int, fix_all: bool = True) -> tuple[int, int, int]:
    """Edit ``text`` ``edits`` times; after each edit the document's answer (from its last analysis when
    the edit allows) must be a full analysis' answer.  Returns how many edits were answered from the
    last analysis, how many of those by parsing again the statements they touched, and how many units
    and calls their analyses replayed (``fix_all``: some of them are also fixed whole, as "fix all"
    does)."""
    path, session, baselines, _ = _opened(tmp_path, text)
    rng = random.Random(seed)
    quick = spliced = replayed = 0
    valid = text
    typed: str | None = None
    for version in range(1, edits + 1):
        # an edit of the last text that parsed (a text that does not is checked, then typed back), of
        # code in a function body a third of the time, or the statement whose start was typed, completed
        if typed is not None:
            text, typed = typed, None
        elif rng.random() < 1 / 3:
            text, typed = _code_edit(valid, rng)
        else:
            text = _edit(valid, rng)
        answer = check_document(version, text, path, "model.py", session, baselines)
        # the full analysis in a session of its own: a session keeps the tree of the last text analysed
        full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.error is None and full.error is None
        assert answer.diagnostics == full.diagnostics, (seed, version, text)
        if answer._full is not None:  # answered from the last analysis: its fixes come from a full one
            quick += 1
            if answer.analysis.module is not None:  # parsed again in part: the tree is one of the text
                assert answer.analysis.module.code == text
                spliced += 1
                tracker = answer.analysis.program.tracker if answer.analysis.program is not None else None
                replayed += tracker.replayed if tracker is not None else 0
            reported = [d for _, d in answer.analysis.reported]
            assert reported == [d for _, d in full.analysis.reported]
            middle = len(full.diagnostics) // 2  # two quick fixes (each proven by a parse: not all)
            assert answer.with_fixes(answer.diagnostics[middle:middle + 2]) == \
                full.with_fixes(full.diagnostics[middle:middle + 2])
            answer.complete()
            assert answer.analysis.module is not None and answer.analysis.diagnostics == full.diagnostics
            if fix_all and quick % 4 == 1:
                assert answer.fixed(unsafe=True) == full.fixed(unsafe=True)
        if full.analysis is not None and full.analysis.module is not None:
            valid = text
    return quick, spliced, replayed


def test_random_edits_of_a_model_file(tmp_path) -> None:
    with open(EXAMPLE, encoding="utf-8") as fh:
        text = fh.read()
    counts = [_differential(tmp_path, text, seed, 40) for seed in range(6)]
    # the comparison covers edits answered from the last analysis, of code among them, and analyses that
    # replayed what the edit left
    assert sum(q for q, _, _ in counts) >= 20 and sum(s for _, s, _ in counts) >= 10
    assert sum(r for _, _, r in counts) >= 10


def test_random_edits_of_a_long_file(tmp_path) -> None:
    counts = [_differential(tmp_path, synthetic_model(150), 100 + seed, 25, fix_all=False) for seed in range(3)]
    assert sum(q for q, _, _ in counts) >= 10 and sum(s for _, s, _ in counts) >= 5
    assert sum(r for _, _, r in counts) >= 10


@given(model_source(), st.integers(0, 2 ** 32 - 1))
@settings(max_examples=LONG or 12, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
def test_random_edits_of_generated_models(tmp_path, text: str, seed: int) -> None:
    _differential(tmp_path, text, seed, 12)


#: a generated model whose edits insert a line holding only a backslash between two statements (libcst
#: wrote the spliced tree back without it): found by the property test above
CONTINUED_LINE_MODEL = '# keep\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\ndef decode(t):\n    rows = []\n    for row in t:\n        rows.append(int(row.sum()))\n    return rows\n\nrnn = torch.nn.GRU(4, 4)\n\nclass Block0(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n        self.proj = nn.Linear(4, 4)\n        self.use_cache = False\n\n    def forward(self, x):\n        valid = x > 0\n        x_m = x[valid]\n        x_m = x[valid]\n        x = F.mse_loss(x_m, x_m)\n\ndef set_use_cache(model, flag):\n    model.use_cache = flag\n\nclass Block1(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n        self.proj = nn.Linear(4, 4)\n        self.calls = 0  # keep\n\n    def forward(self, x):\n        scores = x.softmax(-1)\n        labels = decode(scores)\n        # keep\n        x = torch.where(  # keep\n                x > 0,\n                x,\n                0.0)'


def test_an_inserted_backslash_line_is_not_spliced(tmp_path) -> None:
    _differential(tmp_path, CONTINUED_LINE_MODEL, 959665, 12)


#: a generated model whose edits give the caller of a compiled function a ``# type: (int) -> int`` comment
#: above its first statement (its parameter is then a number, and so is what it passes): found by the property
#: test above
TYPE_COMMENT_MODEL = (
    'import torch\n\ndrop_rate = 0.0  # keep\n\ndef set_drop_rate(value: float):\n    global drop_rate\n'
    '    drop_rate = value\n\ndef decode(t):\n    rows = []\n    for row in t:\n'
    '        rows.append(int(row.sum()))\n    return rows\n\nrnn = torch.nn.GRU(4, 4)\n\n@torch.compile\n'
    'def step0(x, h):  # keep\n    # keep\n    assert not x.sum() > 0\n\ndef run(x):\n'
    '    r0 = step0(x, 1.0)\n    r1 = step0(x, 1.0)\n    r2 = step0(x, 1.0)\n    return r0')


def test_a_type_comment_added_above_a_first_statement_changes_the_signature(tmp_path) -> None:
    _differential(tmp_path, TYPE_COMMENT_MODEL, 1601, 12)


def test_an_edit_between_statements_is_answered_without_analysing(tmp_path) -> None:
    """A comment line between two classes moves the findings below it a line down, and is answered
    from the last analysis; a changed statement is analysed again."""
    text = synthetic_model(60)
    path, session, baselines, first = _opened(tmp_path, text)
    at = text.index("class Block1")
    edited = text[:at] + "# about Block1\n" + text[at:]
    second = check_document(1, edited, path, "model.py", session, baselines)
    assert second._full is not None
    below = text[:at].count("\n") + 1
    assert [(d.code, d.line + (d.line >= below)) for d in first.diagnostics] == \
        [(d.code, d.line) for d in second.diagnostics]
    changed = _replace_nth(edited, "n = h.max().item()", "n = h.max()", 1)
    third = check_document(2, changed, path, "model.py", session, baselines)
    # a changed statement: the analysis runs again, on the last tree with the statements parsed again
    # (the one changed and the one the comment went before: the tree is of the text before it)
    assert third._full is not None and third.analysis.module is not None
    assert len(third.diagnostics) < len(second.diagnostics)


def _replace_nth(text: str, old: str, new: str, n: int) -> str:
    at = -1
    for _ in range(n + 1):
        at = text.index(old, at + 1)
    return text[:at] + new + text[at + len(old):]


#: Edits of code, each a function of the text: (what it does, the edit).
CODE_EDITS = (
    ("a literal in a method", lambda t: _replace_nth(t, "h = h * 2", "h = h * 3", 2)),
    ("a local renamed", lambda t: _replace_nth(
        t, "        y = h[h > 0].mean()\n        return helper_3(h, n) + y",
        "        z = h[h > 0].mean()\n        return helper_3(h, n) + z", 0)),
    ("a statement added to a method", lambda t: _replace_nth(
        t, "        return helper_2(h, n) + y", "        k = y.item()\n        return helper_2(h, n) + y", 0)),
    ("a statement removed from a method", lambda t: _replace_nth(t, "        n = h.max().item()\n", "", 3)),
    ("a branch removed", lambda t: _replace_nth(t, "        if h.sum() > 0:\n            h = h * 2\n", "", 1)),
    ("a method added", lambda t: _replace_nth(
        t, "    def forward(self, x):", "    def extra(self, x):\n        return x.item()\n\n"
        "    def forward(self, x):", 2)),
    ("a decorated method", lambda t: _replace_nth(
        t, "    def forward(self, x):", "    # a comment\n    @torch.no_grad()\n    def forward(self, x):", 1)),
    ("a top-level function changed", lambda t: _replace_nth(
        t, "        h = torch.relu(h) + n", "        h = torch.relu(h) + n.item()", 1)),
    ("a top-level statement added", lambda t: _replace_nth(t, "def helper_1(", "flag = 1\n\n\ndef helper_1(", 0)),
    ("a top-level function removed", lambda t: _replace_nth(
        t, 'def helper_4(h, n):\n    for _ in range(3):\n        h = torch.relu(h) + n\n'
        '    logger.info("helper 4")\n    return h\n', "", 0)),
    ("a statement before the first class removed", lambda t: _replace_nth(
        t, "logger = logging.getLogger(__name__)\n", "", 0)),
    ("the last method of a class", lambda t: _replace_nth(
        t, "        return helper_1(h, n) + y", "        return helper_1(h, n) + y.item()", 0)),
    ("the end of the file", lambda t: t + "\n\ndef tail(x):\n    return x.item()\n"),
    ("an indented line that joins the statement before", lambda t: _replace_nth(
        t, "\n\ndef helper_2(h, n):\n", "\n\n", 0)),
    ("a class body's indentation changed", lambda t: _replace_nth(
        t, "    def forward(self, x):\n        h = self", "    def forward(self, x):\n            h = self", 1)),
    ("a string opened", lambda t: _replace_nth(
        t, "        n = h.max().item()", '        n = """h.max().item()', 2)),
)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_edits_of_code_are_answered_as_a_full_analysis(tmp_path, newline: str) -> None:
    """Each edit of code, made after the others, is answered from the last tree where it can be (the
    statements it touched parsed again) and always as a full analysis answers it; a text that does
    not parse, typed on the way, is answered in full and the completed one from the tree before it."""
    text = synthetic_model(120)
    path, session, baselines, _ = _opened(tmp_path, text.replace("\n", newline))
    spliced = 0
    for version, (what, edit) in enumerate(CODE_EDITS, 1):
        edited = edit(text)
        assert edited != text, what
        lines = edited.splitlines(keepends=True)
        at = len(os.path.commonprefix([text.splitlines(keepends=True), lines]))
        indent = re.match(r"[ \t]*", lines[at] if at < len(lines) else "").group()
        typing = "".join(lines[:at] + [indent + "h = torch.relu(\n"] + lines[at:])  # an unfinished call
        for k, step in enumerate((typing, edited)):
            step = step.replace("\n", newline)
            answer = check_document(2 * version + k, step, path, "model.py", session, baselines)
            full = check_document(2 * version + k, step, path, "model.py", Session(resolve([path]), cache_dir=None))
            assert answer.diagnostics == full.diagnostics, what
            if answer._full is not None and answer.analysis.module is not None:
                assert answer.analysis.module.code == step, what
                spliced += k
            if k == 1:
                assert answer.with_fixes(answer.diagnostics[:2]) == full.with_fixes(full.diagnostics[:2]), what
        if full.analysis is not None and full.analysis.module is not None:
            text = edited
    assert spliced >= len(CODE_EDITS) - 4  # most are answered from the tree


def test_a_failure_of_the_quick_answer_falls_back_to_the_full_analysis(tmp_path, monkeypatch) -> None:
    """An error while answering from the last analysis is logged and the edit analysed in full, from a
    parse of the text: the editor sees the full analysis' diagnostics, no error."""
    import dynalint.adapters.lsp.analysis as lsp_analysis

    text = synthetic_model(60)
    path, session, baselines, _ = _opened(tmp_path, text)

    def broken(*args, **kwargs):
        raise RuntimeError("broken")

    monkeypatch.setattr(lsp_analysis, "reanalysed", broken)
    changed = _replace_nth(text, "n = h.max().item()", "n = h.max()", 1)
    answer = check_document(1, changed, path, "model.py", session, baselines)
    full = check_document(1, changed, path, "model.py", Session(resolve([path]), cache_dir=None))
    assert answer.error is None and answer._full is None
    assert answer.diagnostics == full.diagnostics
    assert answer.diagnostics != check_document(2, text, path, "model.py", session).diagnostics


def test_changes_far_apart_are_parsed_again_apart(tmp_path) -> None:
    """A comment typed before a class (answered from the last findings: the tree stays the one of the text
    before it) and then code changed in a method of a class further down: the two stretches are parsed
    again apart, the classes between them keep their nodes, the method's class keeps its other
    methods', and the answer is the full analysis'."""
    from dynalint.engine.incremental import _spliced
    from dynalint.core.text_lines import split_lines

    text = synthetic_model(120)
    path, session, baselines, _ = _opened(tmp_path, text)
    commented = _replace_nth(text, "class Block1", "# about Block1\nclass Block1", 0)
    check_document(1, commented, path, "model.py", session, baselines)
    edited = _replace_nth(commented, "        h = h * 2\n", "        h = h * 3\n        k = h.item()\n", 3)
    base = baselines.get(path)
    assert base is not None and base.tree is not None and base.tree.lines != base.lines
    old = base.tree.module
    tree = _spliced(base.tree, split_lines(edited, keepends=True))
    assert tree is not None and tree.module.code == edited
    names = [getattr(node, "name", None) for node in old.body]
    block1, block2, block3 = (names.index(next(n for n in names if n is not None and n.value == f"Block{i}"))
                              for i in (1, 2, 3))
    assert tree.module.body[block1] is not old.body[block1] and tree.module.body[block2] is old.body[block2]
    assert tree.module.body[block3] is not old.body[block3]
    assert tree.module.body[block3].body.body[1] is old.body[block3].body.body[1]  # __init__ kept
    answer = check_document(2, edited, path, "model.py", session, baselines)
    full = check_document(2, edited, path, "model.py", Session(resolve([path]), cache_dir=None))
    assert answer._full is not None and answer.analysis.module is not None
    assert answer.diagnostics == full.diagnostics
    assert any(d.line == edited[:edited.index("k = h.item()")].count("\n") + 1 for d in answer.diagnostics)


_NESTED = '''

if True:
    class Inner(nn.Module):
        class Nested:
            x = 1

        def forward(self, x):
            return x.item()


@decorated
class Last(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return x.tolist()'''


def _variant(kind: str) -> str:
    with open(EXAMPLE, encoding="utf-8") as fh:
        text = fh.read()
    if kind == "tabs":
        return "\n".join(line.replace("    ", "\t") for line in text.split("\n"))
    if kind == "cr":
        return text.replace("\n", "\r")
    return text + _NESTED + ("\n" if kind == "last class" else "")


@pytest.mark.parametrize("kind", ["tabs", "cr", "last class", "last class, no final line break"])
def test_random_edits_of_other_layouts(tmp_path, kind: str) -> None:
    """Tab indentation, line breaks that are carriage returns, nested and decorated classes, a file that
    ends in a class's method (with and without a final line break)."""
    counts = [_differential(tmp_path, _variant(kind), seed, 25, fix_all=False) for seed in range(2)]
    assert sum(q for q, _, _ in counts) >= 5


def test_an_edit_at_the_end_of_the_last_method_of_the_file(tmp_path) -> None:
    """The last class's last method edited, the final line break added and removed: the spliced tree
    writes the text back, and the answers are the full analysis'."""
    text = _variant("last class, no final line break")
    path, session, baselines, _ = _opened(tmp_path, text)
    for version, edited in enumerate((text + "\n", text.replace("x.tolist()", "x.tolist()[0]") + "\n",
                                      text.replace("x.tolist()", "x.tolist()[0]"), text), 1):
        answer = check_document(version, edited, path, "model.py", session, baselines)
        full = check_document(version, edited, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.diagnostics == full.diagnostics
        assert answer._full is not None and answer.analysis.module is not None
        assert answer.analysis.module.code == edited


SEPARATE = '''import torch
from torch import nn


class A(nn.Module):
    def forward(self, x):
        h = scale(x)
        if h.sum() > 0:
            h = h + 1
        return h


class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = A()

    def forward(self, x):
        return self.a(x) + 1


class C(nn.Module):
    def forward(self, x):
        return x.relu()


def scale(h):
    return h * 2
'''


CHAIN = '''import torch
from torch import nn


class Inner(nn.Module):
    def forward(self, x):
        return helper(x)


class Middle(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        h = self.inner(x)
        if h.sum() > 0:
            h = h + 1
        return h


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.middle = Middle()

    def forward(self, x):
        for _ in range(2):
            x = self.middle(x)
        return x * 2


def helper(h):
    return h * 2
'''


def test_an_edit_deep_in_a_model_replays_the_callers_its_result_leaves(tmp_path) -> None:
    """An edit of ``helper`` that leaves what it gives its caller (a tensor) evaluates ``helper`` and
    ``Inner.forward``, which looks it up, and replays ``Middle`` and ``Outer``, analysing again only
    the calls on the way down; an edit that changes the result (a list) is evaluated where the replay
    stops holding.  Each answer is the full analysis'."""
    path, session, baselines, _ = _opened(tmp_path, CHAIN)
    text = CHAIN
    counts = []
    for version, (old, new) in enumerate((("    return h * 2", "    return h * 3"),
                                          ("    return h * 3", "    return h.tolist()"),
                                          ("    return h.tolist()", "    return h * 2")), 1):
        text = text.replace(old, new)
        answer = check_document(version, text, path, "model.py", session, baselines)
        full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.diagnostics == full.diagnostics
        assert answer._full is not None and answer.analysis.module is not None
        tracker = answer.analysis.program.tracker
        counts.append((tracker.cut, tracker.evaluated))
    # Middle's and Outer's entry points, and Middle called from Outer, replayed: fewer evaluated
    assert counts[0][0] >= 2 and counts[0][1] < counts[1][1]
    assert counts[1][0] == 0  # the result changed: the replays were undone, and all evaluated


def test_an_edit_replays_the_analysis_of_the_code_it_does_not_reach(tmp_path) -> None:
    """The analysis of an edit replays what the analysis before recorded of the entry points and calls
    that read nothing the edit changed, and evaluates the others: an edit of ``C.forward`` evaluates
    ``C``'s entry point only; one of ``scale`` evaluates ``A`` and ``B``, which reach it, and replays
    ``C``.  Both answers are the full analysis'.  (The edit of ``C.forward`` parses ``scale`` again too,
    the blank lines after it being ``scale``'s; its text unchanged, its statement is kept.)"""
    path, session, baselines, _ = _opened(tmp_path, SEPARATE)
    edits = (("        return x.relu()", "        return x.relu().item()", 0, 1),
             ("    return h * 2", "    return h.tolist()", 2, 1))
    text = SEPARATE
    for version, (old, new, evaluated_at_least, replayed_at_least) in enumerate(edits, 1):
        text = text.replace(old, new)
        answer = check_document(version, text, path, "model.py", session, baselines)
        full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.diagnostics == full.diagnostics
        assert any(d.line == text[:text.index(new)].count("\n") + 1 for d in answer.diagnostics)
        tracker = answer.analysis.program.tracker
        assert tracker.replayed >= replayed_at_least and tracker.evaluated >= evaluated_at_least
        if version == 1:
            assert tracker.evaluated == 1  # C's entry point: it calls nothing


def test_an_edit_of_one_method_walks_only_its_class_for_the_callers_search(tmp_path, monkeypatch) -> None:
    """The search for the numbers every caller passes reads the whole module; after an edit it reads
    again only the top-level statement the edit touched (the spliced tree keeps the others' nodes),
    not the module, which made a code edit cost more than a parse of a large file.  (An edit of a
    method's header, which the search reads: one of its body alone does not search again.)"""
    import libcst as cst
    from dynalint.analysis import number_callers

    classes = "".join(f'''

class Block{k}(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, scale):
        y = self.proj(x)
        if scale > 1.0:
            y = y * scale
        return y
''' for k in range(6))
    text = "import torch\nfrom torch import nn\n" + classes + '''

def run(x):
    block = Block3()
    return torch.compile(block)(x, 2.0)
'''
    path, session, baselines, checked = _opened(tmp_path, text)
    roots: list[cst.CSTNode] = []
    walk = number_callers.walk

    def counting(node, **kwargs):
        roots.append(node)
        return walk(node, **kwargs)

    monkeypatch.setattr(number_callers, "walk", counting)
    nodes_and_parents = number_callers.nodes_and_parents

    def counting_with_parents(node):
        roots.append(node)
        return nodes_and_parents(node)

    monkeypatch.setattr(number_callers, "nodes_and_parents", counting_with_parents)
    edited = _replace_nth(text, "    def forward(self, x, scale):\n", "    def forward(self, x, scale, k=0):\n", 4)
    after = check_document(2, edited, path, path, session, baselines)
    walked = list(roots)
    assert after.diagnostics == check_document(3, edited, path, path, session, None).diagnostics
    assert walked and not any(isinstance(r, cst.Module) for r in walked)
    assert {r.name.value for r in walked if isinstance(r, cst.ClassDef)} <= {"Block4"}


NUMBER_CALLERS = '''import torch
from torch import nn


def unused(x):
    return x


class Block(nn.Module):
    def forward(self, x, scale):
        if scale > 1.0:
            x = x * scale
        return x.sum()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        s = self.block(x, 2.0)
        if s > 0:
            x = x + 1
        return x
'''


def test_an_edit_of_a_caller_or_a_callee_updates_the_other_ones_findings(tmp_path, monkeypatch) -> None:
    """What the callers pass (the search for numbers, which keeps each statement's uses across edits)
    and what a callee returns reach across statements: an edit of one statement, answered from the last
    analysis, must change the findings of the other, as a full analysis of the edited text finds them."""
    from dynalint.adapters.lsp import analysis

    spliced: list[bool] = []
    real = analysis.reanalysed

    def counted(*args, **kwargs):
        answer = real(*args, **kwargs)
        spliced.append(answer is not None)
        return answer

    monkeypatch.setattr(analysis, "reanalysed", counted)
    path, session, baselines, checked = _opened(tmp_path, NUMBER_CALLERS)
    lines = NUMBER_CALLERS.splitlines()
    test_line, caller_line = lines.index("        if scale > 1.0:") + 1, lines.index("        if s > 0:") + 1
    assert not [d for d in checked.diagnostics if d.line == test_line]  # every caller passes a number
    assert [d.code for d in checked.diagnostics if d.line == caller_line] == ["DYN101"]  # a tensor returned

    def answer(version: int, text: str) -> list:
        got = check_document(version, text, path, path, session, baselines).diagnostics
        assert got == check_document(version, text, path, path, session, None).diagnostics
        return got

    # the caller now passes a tensor: the callee's test of it breaks the graph
    tensor_passed = NUMBER_CALLERS.replace("self.block(x, 2.0)", "self.block(x, x.sum())")
    assert [d.code for d in answer(1, tensor_passed) if d.line == test_line] == ["DYN101"]
    assert not [d for d in answer(2, NUMBER_CALLERS) if d.line == test_line]
    # the callee now returns a Python number: the caller's test of it is guarded, not a break
    number_returned = NUMBER_CALLERS.replace("        return x.sum()\n", "        return float(x.shape[0])\n")
    assert not [d for d in answer(3, number_returned) if d.line == caller_line]
    assert [d.code for d in answer(4, NUMBER_CALLERS) if d.line == caller_line] == ["DYN101"]
    assert spliced == [True] * 4  # each edit was answered from the last analysis


def test_an_edit_classifies_again_only_the_events_it_evaluated_again(tmp_path, monkeypatch) -> None:
    """The events a replayed entry point puts back are the objects the analysis before classified: their
    breaks are taken over, and only the events of what the edit made evaluated again are classified;
    the answer is a full analysis'."""
    from dynalint.analysis.breaks import BreakClassifier

    text = "import torch\n" + "".join(f'''

@torch.compile
def step{k}(x):
    y = x * 2
    n = y.sum().item()
    print(n)
    return y + n
''' for k in range(4))
    path, session, baselines, checked = _opened(tmp_path, text)
    classified: list = []
    real = BreakClassifier._classified

    def counting(self, ev):
        classified.append(ev)
        return real(self, ev)

    monkeypatch.setattr(BreakClassifier, "_classified", counting)
    edited = _replace_nth(text, "y = x * 2", "y = x * 3", 2)
    after = check_document(1, edited, path, path, session, baselines)
    assert classified and {ev.function.name for ev in classified} == {"step2"}
    assert after.diagnostics == check_document(2, edited, path, path, session, None).diagnostics
    assert len({d.line for d in after.diagnostics}) >= 8  # `.item()` and `print` in each of the four


def test_an_edit_that_makes_every_call_readable_updates_the_callee_findings(tmp_path) -> None:
    """A call the search for numbers cannot read (``*rest``) leaves the callee's parameter a tensor; an
    edit of the method that makes it, which the callee's own analysis never evaluates, makes every
    call pass a number: the answer from the last analysis drops the callee's break, as a full
    analysis of the edited text does (and adds it back when the edit is undone)."""
    text = NUMBER_CALLERS + '''
    def again(self, x, *rest):
        return self.block(x, *rest)
'''
    path, session, baselines, checked = _opened(tmp_path, text)
    test_line = text.splitlines().index("        if scale > 1.0:") + 1
    assert [d.code for d in checked.diagnostics if d.line == test_line] == ["DYN101"]
    readable = text.replace("self.block(x, *rest)", "self.block(x, 3.0)")
    for version, edited, codes in ((1, readable, []), (2, text, ["DYN101"])):
        answer = check_document(version, edited, path, path, session, baselines)
        assert answer._full is not None and answer.analysis.module is not None  # answered from the last
        assert answer.diagnostics == check_document(version, edited, path, path, session, None).diagnostics
        assert [d.code for d in answer.diagnostics if d.line == test_line] == codes


def test_an_edit_no_search_for_numbers_reads_replays_what_the_search_found(tmp_path) -> None:
    """The search for the numbers every caller passes reads the uses of the names it looks for, not
    every function: an edit of a function that holds none of them replays the entry points whose
    parameters it found numbers for (``Block``, ``Model``), and evaluates only what reads the edited
    function; the answer is a full analysis'."""
    text = NUMBER_CALLERS + "\n\ndef helper(x):\n    return x * 2\n"
    path, session, baselines, checked = _opened(tmp_path, text)
    edited = text.replace("    return x * 2\n", "    return x * 3\n")
    answer = check_document(1, edited, path, path, session, baselines)
    assert answer._full is not None and answer.analysis.module is not None  # answered from the last
    assert answer.diagnostics == check_document(1, edited, path, path, session, None).diagnostics
    tracker = answer.analysis.program.tracker
    assert tracker.replayed >= 2 and tracker.evaluated <= 1


CALLS_MODEL = '''import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x, scale):
        if scale > 1.0:
            x = x * scale
        return x


class Head(nn.Module):
    def forward(self, x, n):
        for _ in range(n):
            x = x + 1
        return x


def shift(x, k):
    if k > 0:
        return x + k
    return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = Head()

    def forward(self, x):
        x = self.block(x, 2.0)
        x = shift(x, 1)
        return self.head(x, 3)

    def other(self, x, *rest):
        y = x * 2
        return y
'''
CALLS = ("self.block(x, {})", "self.head(x, {})", "shift(x, {})")
ARGUMENTS = ("2.0", "3", "x.sum()", "*rest", "len(rest)", "x.shape[0]", "y")


def test_random_edits_of_the_calls_a_search_for_numbers_reads(tmp_path) -> None:
    """Calls added, removed and given other arguments in the methods of ``Model``: what every caller
    passes decides whether the callees' tests of their parameters break the graph, and each edit is
    answered from the last analysis as a full analysis of the edited text answers it."""
    path, session, baselines, _ = _opened(tmp_path, CALLS_MODEL)
    rng = random.Random(4)
    text, spliced = CALLS_MODEL, 0
    call = re.compile(r"\(x, [^()]*(?:\([^()]*\))?[^()]*\)")
    for version in range(1, 31):
        lines = text.splitlines(keepends=True)
        start = lines.index("    def forward(self, x):\n", lines.index("class Model(nn.Module):\n"))
        body = [i for i in range(start + 1, len(lines)) if lines[i].startswith("        ")]
        calls = [i for i in body if call.search(lines[i])]
        added = [i for i in body if lines[i].startswith("        z = ")]
        kind = rng.random()
        if kind < 0.4 or not calls:
            at = rng.choice(body)
            made = rng.choice(CALLS).format(rng.choice(ARGUMENTS))
            lines.insert(at, f"        z = {made}\n")
        elif kind < 0.7 or not added:
            at = rng.choice(calls)
            lines[at] = call.sub(f"(x, {rng.choice(ARGUMENTS)})", lines[at], count=1)
        else:
            del lines[rng.choice(added)]
        text = "".join(lines)
        answer = check_document(version, text, path, path, session, baselines)
        full = check_document(version, text, path, path, session, None)
        assert answer.diagnostics == full.diagnostics, text
        spliced += answer._full is not None and answer.analysis.module is not None
    assert spliced >= 25  # answered from the last analysis, not analysed in full


LONG_METHOD = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        n = h.sum().item()
        h = h * 2
        if h.sum() > 0:
            h = h + 1
        h = h.relu()
        print(n)
        return h

    def extra(self, x):
        return x
'''


def test_an_edit_inside_a_method_parses_again_only_the_statements_it_touched(tmp_path, monkeypatch) -> None:
    """An edit of statements of a method's body parses again those statements (and the one on either
    side), not the method: the findings of the method, those in the statements parsed again and those
    in the others, are where a full analysis of the edited text puts them.  An edit of the method's last
    statement parses the method again."""
    from dynalint.engine import incremental

    parsed: list[str] = []
    real = incremental.parse_unchecked

    def recording(text: str):
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(incremental, "parse_unchecked", recording)
    path, session, baselines, checked = _opened(tmp_path, LONG_METHOD)
    assert {d.line for d in checked.diagnostics} >= {12, 14, 17}  # `.item()`, the branch, `print`
    edits = (("        h = h * 2\n", "        h = h * 3\n", False),
             ("        h = h.relu()\n", "        h = h.relu()\n        m = h.max().item()\n", False),
             ("        h = h * 3\n", "", False),
             ("        return h\n", "        return h * 2\n", True))
    text = LONG_METHOD
    for version, (old, new, whole) in enumerate(edits, 1):
        text = text.replace(old, new)
        parsed.clear()
        answer = check_document(version, text, path, path, session, baselines)
        assert answer._full is not None and answer.analysis.module is not None  # answered from the last
        assert answer.analysis.module.code == text
        assert answer.diagnostics == check_document(version, text, path, path, session, None).diagnostics
        assert parsed and any("def forward" in t for t in parsed) == whole
        assert whole or not any("self.proj(x)" in t for t in parsed)


def test_the_nesting_scan_of_an_edited_text_is_the_scan_of_the_whole_text() -> None:
    """An edit of code is answered only when the cheap nesting scan clears the new text, as the full
    analysis asks; the scan is kept by stretch between definitions and only the stretches an edit
    changed are scanned again: on random edits (brackets nested past the limit, in code, strings and
    comments, statements past the length limit, strings left open across definitions) its verdict
    is the scan's of the whole text."""
    from dynalint.core.source import MAX_SCAN_DEPTH, MAX_SCAN_STATEMENT, needs_exact_check
    from dynalint.engine.incremental import _scan_clears

    deep = MAX_SCAN_DEPTH + 1
    inserted = ("h = " + "(" * deep + "h" + ")" * deep, "h = " + "(" * (deep - 40) + "h" + ")" * (deep - 40),
                "h = " + "h + " * (MAX_SCAN_STATEMENT // 4) + "h", "'''", '"""', "# " + "(" * 60,
                "s = '" + "[" * 70 + "'", "h = [", "]", "s = 'a\\", "def f(x):", "class A:", "@decorated",
                "x = f(", "    def g(self):", ")")
    rng = random.Random(7)
    checked = cleared = 0
    for text in (synthetic_model(60), open(EXAMPLE, encoding="utf-8").read()):
        known: dict = {}
        for _ in range(120):
            lines = text.splitlines(keepends=True)
            at = rng.randrange(len(lines) + 1)
            if rng.random() < 0.3 and lines:
                del lines[min(at, len(lines) - 1)]
            else:
                lines[at:at] = [rng.choice(("", "    ", "        ")) + rng.choice(inserted) + "\n"]
            text = "".join(lines)
            clears, known = _scan_clears(text, known)
            assert clears == (not needs_exact_check(text))
            checked += 1
            cleared += clears
    assert 0 < cleared < checked
    # brackets left open in a string of one stretch count for the brackets of a later one
    model = synthetic_model(60)
    opened = "s = '" + "[" * 70 + "'\n" + model
    deeper = opened.replace("        return ", "        h = " + "(" * 40 + "h" + ")" * 40 + "\n        return ", 1)
    assert _scan_clears(opened, {})[0] and not needs_exact_check(opened)
    assert not _scan_clears(deeper, _scan_clears(opened, {})[1])[0] and needs_exact_check(deeper)


def _answers(tmp_path, text: str, edits: list[tuple[str, str]]) -> list:
    """The analyses answering ``edits`` of ``text`` (each ``(old, new)``, applied in turn) from the last
    analysis, each checked against a full analysis of its text."""
    path, session, baselines, _ = _opened(tmp_path, text)
    answers = []
    for version, (old, new) in enumerate(edits, 1):
        assert old in text
        text = text.replace(old, new, 1)
        answer = check_document(version, text, path, "model.py", session, baselines)
        full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.diagnostics == full.diagnostics, (version, text)
        assert answer._full is not None and answer.analysis.module is not None
        answers.append(answer.analysis)
    return answers


def test_an_edit_of_a_body_that_leaves_its_result_replays_its_direct_callers(tmp_path) -> None:
    """A caller reads of the function it calls the header (to find and bind it) and what the call gives:
    an edit of the body alone keeps the function (the same object, with the new definition), so its
    direct caller ``Inner.forward`` is replayed like the callers above it, with only the calls of
    ``helper`` analysed again; an edit of the header (a parameter added) makes a new function, whose
    callers are evaluated."""
    body, header = (a.program for a in _answers(tmp_path, CHAIN, [
        ("    return h * 2", "    h = h + 0\n    return h * 3"), ("def helper(h):", "def helper(h, k=1):")]))
    helper = body.index.functions["helper"]
    tracker = body.tracker
    assert tracker.cut >= 1 and tracker.evaluated == sum(1 for key in tracker.records if key[0] == id(helper))
    assert header.index.functions["helper"] is not helper
    assert header.tracker.evaluated > sum(1 for key in header.tracker.records if key[0] == id(helper))


CLOSURE = '''import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        f = make(2)
        h = f(x)
        if h.sum() > 0:
            h = h + 1
        return h


def make(k):
    def step(h):
        return h * k
    return step
'''


def test_an_edit_of_a_function_that_makes_a_closure_analyses_the_new_closure(tmp_path) -> None:
    """A function defined in an edited body is made again by the call that defines it: its calls are
    analysed in its new definition (a graph break added to it is found), never the old one's."""
    _answers(tmp_path, CLOSURE, [("        return h * k", "        return h * k.item()"),
                                 ("        return h * k.item()", "        print(h)\n        return h * k"),
                                 ("        print(h)\n", "")])


WRAPPER = '''import torch
from torch import nn


class M(nn.Module):
    def forward(self, x):
        if not is_compiling():
            print(x)
        return x * 2


def is_compiling():
    return False
'''


def test_an_edit_of_the_body_of_a_compiling_query_wrapper_updates_its_callers(tmp_path) -> None:
    """A call of a project's own ``is_compiling()`` reads the body of the function (whether it asks torch):
    an edit of that body alone that leaves what the call gives changes what its callers find (the
    ``print`` that runs only outside Dynamo)."""
    before, after = _answers(tmp_path, WRAPPER, [("    return False", "    x = 0\n    return False"),
                                                 ("    x = 0", "    x = torch.compiler.is_compiling()")])
    assert [d.code for d in before.diagnostics] == ["DYN105"] and after.diagnostics == []


CALLEES = '''import torch
from torch import nn


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.step = make(2)

    def forward(self, x):
        for _ in range(2):
            x = self.inner(x, 1)
        h = self.step(x)
        if is_compiling():
            h = h + 1
        return self.inner.scale(h)


class Inner(nn.Module):
    def forward(self, x, k):
        h = helper(x, k)
        if h.sum() > 0:
            h = h + 1
        return h

    def scale(self, h):
        return h * 2


def helper(h, k):
    return h * k


def make(k):
    def step(h):
        return h * k
    return step


def is_compiling():
    return False
'''
#: Edits of the callees: bodies that keep what a call gives or change it (a number, a list, a graph
#: break, the closure made, a query of torch), and headers (a parameter, a default, a decorator).
CALLEE_EDITS = (
    ("    return h * k\n", "    h = h + 0\n    return h * k\n"), ("    return h * k\n", "    return h.tolist()\n"),
    ("    return h * k\n", "    return (h * k).sum().item()\n"), ("    return h * k\n", "    print(k)\n    return h\n"),
    ("        return h * 2\n", "        h = h.relu()\n        return h * 2\n"),
    ("        return h * 2\n", "        return h.item()\n"), ("        return h * k\n", "        return h * k.item()\n"),
    ("        return h * k\n", "        return torch.relu(h)\n"), ("    return step\n", "    return helper\n"),
    ("    return False\n", "    x = torch.compiler.is_compiling()\n    return False\n"),
    ("    return False\n", "    return True\n"), ("def helper(h, k):", "def helper(h, k=1):"),
    ("def helper(h, k):", "@torch.compiler.disable\ndef helper(h, k):"),
    ("    def scale(self, h):", "    def scale(self, h, n=2):"),
    ("def make(k):", "def make(k):  # a note"), ("def is_compiling():", "def is_compiling(x=None):"))


def test_random_edits_of_the_functions_a_caller_calls(tmp_path) -> None:
    """Edits of the bodies and headers of the functions others call, undone at random: a body edit keeps
    the function, so its callers replay where what its calls give is unchanged; each answer is a full
    analysis'."""
    path, session, baselines, _ = _opened(tmp_path, CALLEES)
    rng = random.Random(11)
    text, done, cut = CALLEES, [], 0
    for version in range(1, 41):
        if done and rng.random() < 0.4:
            old, new = done.pop(rng.randrange(len(done)))
            edit = (new, old)
        else:
            edit = rng.choice([e for e in CALLEE_EDITS if e[0] in text and e not in done] or [("", "")])
            if not edit[0]:
                continue
            done.append(edit)
        text = text.replace(edit[0], edit[1], 1)
        answer = check_document(version, text, path, "model.py", session, baselines)
        full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
        assert answer.diagnostics == full.diagnostics, (version, text)
        if answer._full is not None and answer.analysis.module is not None:
            cut += answer.analysis.program.tracker.cut
    assert cut >= 3  # callers replayed with the calls of an edited function analysed again


def test_an_edit_derives_again_the_syntax_facts_of_the_definitions_it_changed_only(tmp_path, monkeypatch) -> None:
    """What the rules derive from a definition alone (its loops, ``try`` and ``with`` statements, where a
    break makes Dynamo run the rest eagerly) is kept with the function across edits: an edit derives it
    again for the definition it changed, not for the others, and a loop that now breaks makes the rest
    of that function eager (its ``print`` no longer reported), as a full analysis finds."""
    from dynalint.analysis import eager_part

    text = "import torch\n" + "".join(f'''

@torch.compile
def step{k}(x):
    y = x * 2
    print(y)
    return y
''' for k in range(4))
    path, session, baselines, checked = _opened(tmp_path, text)
    derived: list[str] = []
    real = eager_part._blocks

    def recording(node):
        derived.append(node.name.value)
        return real(node)

    monkeypatch.setattr(eager_part, "_blocks", recording)
    looped = _replace_nth(text, "    print(y)\n", "    for _ in range(2):\n        y = y + y.sum().item()\n"
                                                 "    print(y)\n", 1)
    relit = _replace_nth(looped, "y = x * 2", "y = x * 3", 2)
    printed = [line + 1 for line, code in enumerate(text.splitlines()) if code == "    print(y)"]
    for version, edited, changed in ((1, looped, "step1"), (2, relit, "step2")):
        derived.clear()
        answer = check_document(version, edited, path, path, session, baselines)
        assert answer._full is not None and answer.analysis.module is not None  # answered from the last
        assert derived == [changed]
        assert answer.diagnostics == check_document(version, edited, path, path, session, None).diagnostics
        reported = {d.line for d in answer.diagnostics if d.code == "DYN105"}
        assert len(reported) == 3 and printed[1] + 2 not in reported  # step1's print runs eagerly


def test_an_edit_of_a_body_puts_back_what_the_searches_and_silent_passes_found(tmp_path, monkeypatch) -> None:
    """What the analysis remembers outside the calls it records (the numbers every caller passes a
    function, what the uses of a function's untyped parameters say about them) is put back after an edit
    that changed nothing it read: an edit of a method's body searches its callers again for nobody (the
    search reads the method's header and its callers) and makes the silent pass of that method only;
    an edit of the caller searches again, and the callee's test of what it now passes breaks."""
    from dynalint.analysis import number_callers, signatures

    searched: list[str] = []
    collected: list[str] = []
    search, collect = number_callers._passed, signatures.Signatures._collect_evidence
    monkeypatch.setattr(number_callers, "_passed",
                        lambda program, fn, depth: searched.append(fn.qualname) or search(program, fn, depth))
    monkeypatch.setattr(signatures.Signatures, "_collect_evidence",
                        lambda self, fn: collected.append(fn.qualname) or collect(self, fn))
    path, session, baselines, checked = _opened(tmp_path, NUMBER_CALLERS)
    assert "Block.forward" in searched and "Model.forward" in collected
    test_line = NUMBER_CALLERS.splitlines().index("        if scale > 1.0:") + 1
    body = NUMBER_CALLERS.replace("            x = x * scale\n", "            x = x * scale + 1\n")
    caller = body.replace("self.block(x, 2.0)", "self.block(x, x.sum())")
    for version, edited, search_again, codes in ((1, body, False, []), (2, caller, True, ["DYN101"])):
        searched.clear()
        collected.clear()
        answer = check_document(version, edited, path, path, session, baselines)
        assert ("Block.forward" in searched) == search_again
        assert collected == (["Block.forward"] if version == 1 else ["Model.forward"])
        assert answer._full is not None and answer.analysis.module is not None  # answered from the last
        assert answer.diagnostics == check_document(version, edited, path, path, session, None).diagnostics
        assert [d.code for d in answer.diagnostics if d.line == test_line] == codes
        assert answer.analysis.program.tracker.reuses >= 1


SEEN_ELSEWHERE = '''import torch
from torch import nn


class Block(nn.Module):
    """The first indented block of the file (which an edit of its first statement would change)."""

    flag = True

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, k):
        h = self.proj(x)
        n = helper(h)
        if self.flag:
            h = h + 1
        if k > 1:
            h = h * k
        if n > 0:
            h = h - 1
        return h


LIMIT = 3


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        y = self.block(x, 2)
        if LIMIT > 2:
            y = y - 1
        return y


def helper(h):
    h = h * 2
    return h
'''


def test_edits_that_change_what_other_functions_see_are_answered_as_a_full_analysis(tmp_path) -> None:
    """Each edit changes what a function it does not touch sees, and is undone: a callee's result (a
    number instead of a tensor: the caller's test of it no longer breaks), a break added in a callee, a
    class attribute (a tensor: the test of it breaks), the value a caller passes (a tensor: the callee's
    test of it breaks), a module constant.  After each, the answer from the last analysis (replaying what
    the edit left, analysing again the calls it reached, putting back the results it did not change) is
    a full analysis' answer."""
    lines = SEEN_ELSEWHERE.splitlines()

    def line(text: str) -> int:
        return lines.index(text) + 1

    edits = (("    h = h * 2\n    return h", "    h = float(h.shape[0])\n    return h", line("        if n > 0:"), False),
             ("    h = h * 2\n    return h", "    h = h * 2\n    print(h)\n    return h", line("    h = h * 2"), True),
             ("    flag = True", "    flag = torch.ones(1)", line("        if self.flag:"), True),
             ("self.block(x, 2)", "self.block(x, x.sum())", line("        if k > 1:"), True),
             ("LIMIT = 3", "LIMIT = torch.ones(1)", line("        if LIMIT > 2:"), True))
    path, session, baselines, checked = _opened(tmp_path, SEEN_ELSEWHERE)
    before = {d.line for d in checked.diagnostics}
    version, reused = 0, 0
    for old, new, at, reported in edits:
        assert (at in before) != reported
        # the edit, then the edit undone (a tree spliced twice, each time from the analysis of the other)
        for text, there in ((SEEN_ELSEWHERE.replace(old, new, 1), reported), (SEEN_ELSEWHERE, not reported)):
            version += 1
            moved = 1 if new.count("\n") > old.count("\n") and text != SEEN_ELSEWHERE else 0
            answer = check_document(version, text, path, "model.py", session, baselines)
            full = check_document(version, text, path, "model.py", Session(resolve([path]), cache_dir=None))
            assert answer.diagnostics == full.diagnostics, (version, text)
            assert answer._full is not None and answer.analysis.module is not None  # answered from the last
            assert any(d.line == at + moved for d in answer.diagnostics) == there
            reused += answer.analysis.program.tracker.reuses
    assert reused >= 10
