"""Jupyter notebooks, checked as ruff checks them: the code cells concatenated into one module, and
each diagnostic mapped back to its cell (``nb.ipynb:cell 2:3:8``).

IPython syntax is not Python: a line magic or shell escape (``%time``, ``!pip``) is blanked, and a
cell magic (``%%bash``) blanks its whole cell, so the lines of everything else keep their numbers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from dynalint.core.diagnostics import Diagnostic
from dynalint.core.text_lines import source_lines

NOTEBOOK_SUFFIX = ".ipynb"


class NotebookError(Exception):
    """A file that is not a notebook dynalint can read."""


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class NotebookSource:
    text: str
    """The code cells, one after the other (each ends with a newline)."""
    lines: tuple[tuple[int, int], ...]
    """Line ``i + 1`` of :attr:`text` -> (cell number, line in the cell), both 1-based; cells are
    numbered among all the notebook's cells, as the notebook shows them."""

    def locate(self, line: int) -> tuple[int, int]:
        if not self.lines:
            return 1, line
        if line - 1 < len(self.lines):
            return self.lines[max(0, line - 1)]
        cell, last = self.lines[-1]
        return cell, last + line - len(self.lines)

    def map_back(self, d: Diagnostic) -> Diagnostic:
        """``d`` at its cell's line (a fix, whose edits address the concatenated text, is dropped)."""
        cell, line = self.locate(d.line)
        end_cell, end_line = self.locate(d.end_line)
        if end_cell != cell:  # a range past its cell ends with the cell's line
            end_line, end_column = line, d.column + 1
        else:
            end_column = d.end_column
        return replace(d, line=line, end_line=end_line, end_column=end_column, cell=cell, fix=None)


def _cell_lines(cell: dict) -> list[str]:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not isinstance(source, str):
        raise NotebookError("a cell's source is neither text nor a list of lines")
    lines = source_lines(source)
    if lines and lines[0].lstrip().startswith("%%"):
        return [""] * len(lines)  # a cell magic: the cell is another language
    return ["" if line.lstrip().startswith(("%", "!")) else line for line in lines]


def read_notebook(data: bytes) -> NotebookSource:
    """The code of a notebook file's content (raises :class:`NotebookError`)."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"not a valid notebook (JSON): {exc}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("not a valid notebook: no list of cells")
    text: list[str] = []
    where: list[tuple[int, int]] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        lines = _cell_lines(cell) or [""]
        text.extend(line + "\n" for line in lines)
        where.extend((number, i) for i in range(1, len(lines) + 1))
    return NotebookSource("".join(text), tuple(where))


def decode_file(path: str, data: bytes) -> tuple[str, NotebookSource | None]:
    """The Python text of a file's content: its code cells for a notebook (returned too, to map
    findings back), else the decoded source.  Raises ``SourceError`` or :class:`NotebookError`."""
    from dynalint.core.source import decode_source

    if is_notebook(path):
        notebook = read_notebook(data)
        return notebook.text, notebook
    return decode_source(data), None

