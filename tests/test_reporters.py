"""Output formats of ``dynalint check``: GitHub workflow commands (SARIF has its own tests)."""
from __future__ import annotations

import io
import re

from dynalint.core.diagnostics import Diagnostic
from dynalint.adapters.reporters import REPORTERS


def _diag(path: str, kind: str = "graph-break", message: str = "m", code: str = "DYN101") -> Diagnostic:
    return Diagnostic(path, 3, 5, 4, 9, code, kind, message)  # type: ignore[arg-type]


def _render(fmt: str, diagnostics: list[Diagnostic]) -> str:
    out = io.StringIO()
    REPORTERS[fmt](diagnostics, out)
    return out.getvalue()


def test_formats_offered() -> None:
    assert {"text", "json", "github", "sarif"} <= set(REPORTERS)


def test_github_annotations() -> None:
    text = _render("github", [_diag("src/m.py"), _diag("src/m.py", "recompile", code="DYN203"),
                              _diag("bad.py", "error", code="DYN000")])
    assert text.splitlines() == [
        "::warning file=src/m.py,line=3,col=5,endLine=4,endColumn=9,title=DYN101 (graph-break)::m",
        "::notice file=src/m.py,line=3,col=5,endLine=4,endColumn=9,title=DYN203 (recompile)::m",
        "::error file=bad.py,line=3,col=5,endLine=4,endColumn=9,title=DYN000 (error)::m",
    ]


def test_github_escapes_properties_and_messages() -> None:
    [line] = _render("github", [_diag("a,b:c%.py", message="50% of x\nthen: y, z")]).splitlines()
    m = re.fullmatch(r"::warning file=(?P<file>[^,]*),line=3,.*::(?P<message>.*)", line)
    assert m is not None, line
    assert m["file"] == "a%2Cb%3Ac%25.py"
    assert m["message"] == "50%25 of x%0Athen: y, z"
