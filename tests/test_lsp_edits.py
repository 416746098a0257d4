"""The pieces of the language server that need no server: noqa placement, positions, edits."""
from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition, UnitCounter  # noqa: E402

from dynalint.engine.pipeline import check_source  # noqa: E402
from dynalint.adapters.lsp.actions import DocumentView, code_actions, overlaps  # noqa: E402
from dynalint.adapters.lsp.convert import FastPositionCodec, PositionMap, split_lines, text_edits  # noqa: E402
from dynalint.config.settings import Settings  # noqa: E402
from dynalint.core.suppress import CommentSites, apply_insertion  # noqa: E402
from lsp_client import apply_edits  # noqa: E402

HEAD = "import torch\n\n\n@torch.compile\ndef f(x, s):\n"


def _body(code: str) -> str:
    return HEAD + textwrap.indent(textwrap.dedent(code).lstrip("\n"), "    ")


def _suppressed(source: str, code: str) -> str | None:
    """The source with the noqa for the first ``code`` diagnostic added (None if none is possible)."""
    [d] = [d for d in check_source(source, "m.py", Settings()) if d.code == code]
    ins = CommentSites(source).noqa(code, d.line, d.end_line)
    if ins is None:
        return None
    new = apply_insertion(source, ins)
    assert code not in {d.code for d in check_source(new, "m.py", Settings())}, new
    return new


@pytest.mark.parametrize("line, expected", [
    ("return x.item()", "return x.item()  # noqa: DYN102"),
    ("return x.item()   ", "return x.item()  # noqa: DYN102"),
    ("return x.item()  # why: logged", "return x.item()  # why: logged  # noqa: DYN102"),
    ("return x.item()  # noqa: E501", "return x.item()  # noqa: E501,DYN102"),
    ("return x.item()  # noqa:E501 ", "return x.item()  # noqa:E501,DYN102 "),
    ("return x.item()  # type: ignore  # NOQA: E501, W291", "return x.item()  # type: ignore  # NOQA: E501, W291,DYN102"),
    ("return {'#': x.item()}", "return {'#': x.item()}  # noqa: DYN102"),
])
def test_noqa_on_the_flagged_line(line: str, expected: str) -> None:
    source = _body(line)
    assert _suppressed(source, "DYN102") == _body(expected)


def test_noqa_after_a_backslash_goes_to_the_last_line() -> None:
    source = _body("""
        y = x \\
            .item()
        return y
    """)
    assert _suppressed(source, "DYN102") == _body("""
        y = x \\
            .item()  # noqa: DYN102
        return y
    """)


def test_noqa_impossible_after_a_backslash_on_a_one_line_expression() -> None:
    source = _body("""
        y = x.item() + \\
            1
        return y
    """)
    assert _suppressed(source, "DYN102") is None


def test_noqa_impossible_inside_a_string() -> None:
    source = _body('''
        return s.format(x.item(), """
        text
        """)
    ''')
    assert _suppressed(source, "DYN102") is None


def test_noqa_keeps_crlf_line_endings() -> None:
    source = _body("y = x.item()\nreturn y\n").replace("\n", "\r\n")
    new = _suppressed(source, "DYN102")
    assert new is not None and "y = x.item()  # noqa: DYN102\r\n" in new
    assert new.count("\r\n") == source.count("\r\n") and "\n" not in new.replace("\r\n", "")


def test_bare_noqa_needs_nothing() -> None:
    assert CommentSites("x = 1  # noqa\n").noqa("DYN101", 1) is None


@pytest.mark.parametrize("encoding, expected", [
    (types.PositionEncodingKind.Utf16, 5), (types.PositionEncodingKind.Utf8, 8),
    (types.PositionEncodingKind.Utf32, 4),
])
def test_positions_follow_the_negotiated_encoding(encoding, expected) -> None:
    text = "a\r\nb😀é = 1\rc\n"
    positions = PositionMap(text, PositionCodec(encoding))
    assert positions.position(2, 5) == types.Position(line=1, character=expected)  # after "b😀é "
    assert positions.position(3, 1) == types.Position(line=2, character=0)  # "\r" alone ends a line too
    assert positions.end() == types.Position(line=3, character=0)
    assert positions.position(99, 1) == positions.end()


@pytest.mark.parametrize("old, new", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nC"),
    ("a\nb\nc", "a\nb\nc\nd\n"),
    ("x😀\r\ny\r\n", "x😀\r\nz\r\ny\r\n"),
    ("", "import torch\n"),
    ("one\n", ""),
])
def test_text_edits_round_trip(old: str, new: str) -> None:
    edits = text_edits(old, new, PositionMap(old))
    assert apply_edits(old, edits) == new
    assert len(edits) == 1  # one diff, narrowed to what changes


def test_edits_are_narrowed_to_the_changed_characters() -> None:
    edits = text_edits("x = a + b\n", "x = a * b\n", PositionMap("x = a + b\n"))
    assert [(e.range.start.line, e.range.start.character, e.range.end.character, e.new_text) for e in edits] == [
        (0, 6, 7, "*")]


def test_split_lines_matches_the_protocol() -> None:
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert split_lines("a\n") == ["a", ""]
    assert split_lines("a\r\nb\n", keepends=True) == ["a\r\n", "b\n"]
    assert split_lines("a\x0cb\n") == ["a\x0cb", ""]  # a form feed is not a line break


def test_unversioned_clients_get_plain_changes() -> None:
    source = _body("if x.sum() > 0:\n    x = x * 2\nreturn x.item()\n")
    from dynalint.engine.fixing import diagnostics_with_fixes

    diagnostics = diagnostics_with_fixes(source, "m.py", Settings())
    view = DocumentView(uri="file:///m.py", version=3, text=source, positions=PositionMap(source),
                        diagnostics=diagnostics, safeties={"safe", "unsafe"}, fixed_text=lambda unsafe: source,
                        document_changes=False)
    everything = types.Range(start=types.Position(line=0, character=0),
                             end=types.Position(line=99, character=0))
    actions = code_actions(view, everything)
    assert actions and all(a.edit is not None and a.edit.document_changes is None for a in actions)
    assert all(list(a.edit.changes) == ["file:///m.py"] for a in actions if a.edit and a.edit.changes)
    # nothing under the cursor, no `only`: nothing offered
    assert code_actions(view, types.Range(start=types.Position(line=0, character=0),
                                          end=types.Position(line=0, character=0))) == []


def test_overlap_includes_touching_ranges() -> None:
    def r(a: int, b: int) -> types.Range:
        return types.Range(start=types.Position(line=0, character=a), end=types.Position(line=0, character=b))

    assert overlaps(r(2, 5), r(5, 5)) and overlaps(r(2, 5), r(0, 2)) and not overlaps(r(2, 5), r(6, 7))


def _big_file(blocks: int) -> str:
    """Many repeated lines (blank lines, ``return x``): the case a plain diff compares quadratically."""
    return "".join(f"def f{i}(x):\n    if x:\n        return x\n\n    return x\n\n\n" for i in range(blocks))


def test_a_fix_in_a_large_file_gives_the_edits_of_its_places_only() -> None:
    """An import at the top and a rewrite deep in the file: two edits, each exactly what changes."""
    old = _big_file(3000)
    target = "def f2500(x):\n    if x:\n        return x\n\n    return x\n"
    new = "import torch\n" + old.replace(target, "def f2500(x):\n    return torch.where(x, x, x)\n")
    edits = text_edits(old, new, PositionMap(old))
    assert apply_edits(old, edits) == new
    line = old[:old.index(target)].count("\n")
    assert [(e.range.start.line, e.new_text) for e in edits] == [
        (0, "import torch\n"), (line + 1, "return torch.where(x, x, x)")]


@pytest.mark.parametrize("seed", range(40))
def test_text_edits_round_trip_on_repetitive_texts(seed: int) -> None:
    import random

    rng = random.Random(seed)
    pool = ["", "    return x", "x = 1", "def f():", "# c", "y"]
    lines = [rng.choice(pool) + "\n" for _ in range(rng.randint(0, 40))]
    changed = list(lines)
    for _ in range(rng.randint(1, 5)):
        k = rng.randint(0, len(changed))
        if rng.random() < 0.5:
            changed.insert(k, rng.choice(pool + [f"new {seed}"]) + "\n")
        elif changed:
            del changed[min(k, len(changed) - 1)]
    old, new = "".join(lines), "".join(changed)
    assert apply_edits(old, text_edits(old, new, PositionMap(old))) == new


ENCODINGS = [types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_fast_codec_answers_as_pygls(encoding) -> None:
    import random

    rng = random.Random(7)
    alphabet = ["a", "é", "😀", "中", "\r\n", " ", "\u00ff"]
    slow, fast = PositionCodec(encoding), FastPositionCodec(encoding)
    for _ in range(150):
        lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))) for _ in range(3)]
        for line in range(4):
            for character in range(32):  # past the end too, and inside a character's code units
                client = types.Position(line=line, character=character)
                assert fast.position_from_client_units(lines, client) == \
                    slow.position_from_client_units(lines, types.Position(line=line, character=character))
                if line < 3 and character <= len(lines[line]):
                    server = ServerTextPosition(line, character)
                    assert fast.position_to_client_units(lines, server) == slow.position_to_client_units(lines, server)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_positions_on_a_long_line_are_not_counted_one_character_at_a_time(encoding, monkeypatch) -> None:
    """pygls's codec walks the line in Python (seconds per position on a generated one-line file of
    megabytes, on the thread that answers); the server's codec does not."""
    def per_character(self, char: str) -> int:
        raise AssertionError("counted one character at a time")

    for counter in UnitCounter.__subclasses__():
        monkeypatch.setattr(counter, "code_units_for_char", per_character)
    codec = FastPositionCodec(encoding)
    for line in ("x = [" + "1, " * 50_000 + "]", "s = '😀é' + '" + "a" * 100_000 + "'"):
        end = codec.client_num_units(line)
        position = codec.position_from_client_units([line], types.Position(line=0, character=end - 1))
        assert position == ServerTextPosition(0, len(line) - 1)
        assert codec.position_to_client_units([line], position) == types.Position(line=0, character=end - 1)
        positions = PositionMap(line + "\n", codec)
        assert positions.position(1, len(line)) == types.Position(line=0, character=end - 1)
