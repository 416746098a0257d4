"""Where to write ``# noqa: CODE`` so that it suppresses a diagnostic.

A comment cannot go at the end of every physical line: not inside a
multi-line string, not after a backslash continuation.  The engine honours a
``noqa`` on the first or the last line of the flagged expression, so the
first of those that can take a comment is used; an existing ``# noqa: ...``
comment there is extended instead of adding a second one.
"""
from __future__ import annotations

import tokenize
from dataclasses import dataclass

from dynalint.core.noqa import _NOQA
from dynalint.core.text_lines import split_lines


@dataclass(frozen=True)
class Insertion:
    """Replace ``column``..``end_column`` of ``line`` by ``text`` (1-based, code points, end exclusive)."""

    line: int
    column: int
    end_column: int
    text: str


class CommentSites:
    """The lines of a source that can end with a comment, and the comments they already have."""

    def __init__(self, source: str) -> None:
        self.lines = split_lines(source)
        self.ends: set[int] = set()
        self.comments: dict[int, tuple[int, str]] = {}
        # the tokenizer reads lines ending in "\n": "\r" alone (or "\r\n") is given to it as "\n"
        readline = iter([line + "\n" for line in self.lines]).__next__
        try:
            for tok in tokenize.generate_tokens(readline):
                if tok.type in (tokenize.NEWLINE, tokenize.NL):
                    self.ends.add(tok.start[0])
                elif tok.type == tokenize.COMMENT:
                    self.comments[tok.start[0]] = (tok.start[1], tok.string)
        except (tokenize.TokenError, SyntaxError):
            pass  # lines before the error are still known

    def noqa(self, code: str, line: int, end_line: int | None = None) -> Insertion | None:
        """The edit adding ``code`` to a noqa comment on ``line`` (or ``end_line``); None if impossible."""
        for candidate in dict.fromkeys((line, end_line if end_line is not None else line)):
            if candidate in self.ends and 1 <= candidate <= len(self.lines):
                return self._insertion(code, candidate)
        return None

    def _insertion(self, code: str, line: int) -> Insertion | None:
        text = self.lines[line - 1]
        comment = self.comments.get(line)
        if comment is not None:
            start, comment_text = comment
            m = _NOQA.search(comment_text)
            if m is not None:
                if not m.group("codes"):
                    return None  # a bare `# noqa` already suppresses everything
                at = start + m.end("codes") + 1
                return Insertion(line, at, at, f",{code}")
        code_end = len(text.rstrip())
        return Insertion(line, code_end + 1, len(text) + 1, f"  # noqa: {code}")


def apply_insertion(source: str, ins: Insertion) -> str:
    """``source`` with the insertion made (for tests and non-LSP callers)."""
    lines = split_lines(source, keepends=True)
    text = lines[ins.line - 1]
    body = text.rstrip("\r\n")
    lines[ins.line - 1] = body[:ins.column - 1] + ins.text + body[ins.end_column - 1:] + text[len(body):]
    return "".join(lines)
