"""Code actions and hover text of the language server, for one version of one document.

Quick-fixes apply exactly the edits ``dynalint fix`` would make for that
diagnostic; "fix all" applies ``dynalint fix`` (``--unsafe-fixes`` for the
unsafe variant) to the unsaved text.  Unsafe rewrites say so in their title.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from lsprotocol import types

from dynalint.core.diagnostics import Diagnostic
from dynalint.adapters.rules_reference import rule_section, rule_url
from dynalint.adapters.lsp.kinds import (FIX_ALL_DATA, FIX_ALL_KIND, FIX_ALL_TITLE, FIX_ALL_UNSAFE_KIND,
                                         FIX_ALL_UNSAFE_TITLE, QUICKFIX)
from dynalint.adapters.lsp.convert import PositionMap, lsp_diagnostic, lsp_edits, text_edits
from dynalint.rules.base import get_code, get_rule
from dynalint.core.suppress import CommentSites


def quick_fix_title(d: Diagnostic) -> str:
    assert d.fix is not None
    return f"{d.code}: {d.fix.description}" + (" (unsafe)" if d.fix.safety == "unsafe" else "")


def noqa_title(code: str) -> str:
    return f"Ignore {code} for this line (# noqa: {code})"


@dataclass
class DocumentView:
    """What the actions are computed from: one version of a document and its diagnostics (those in
    the requested range carrying their fixes)."""

    uri: str
    version: int | None
    text: str
    positions: PositionMap
    diagnostics: list[Diagnostic]
    safeties: set[str]
    """The safeties of the fixes on offer anywhere in the file: which "fix all" actions exist."""
    fixed_text: Callable[[bool], str] | None = None
    """The text after ``dynalint fix`` (argument: whether unsafe fixes are applied), for a client that
    cannot resolve an action later; None: "fix all" carries no edit until ``codeAction/resolve``."""
    document_changes: bool = True
    _lsp: dict[int, types.Diagnostic] = field(default_factory=dict)

    def lsp(self, d: Diagnostic) -> types.Diagnostic:
        key = id(d)
        if key not in self._lsp:
            self._lsp[key] = lsp_diagnostic(d, self.positions)
        return self._lsp[key]

    def edit(self, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        if self.document_changes:
            doc = types.OptionalVersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
            change = types.TextDocumentEdit(text_document=doc, edits=edits)
            return types.WorkspaceEdit(document_changes=[change])
        return types.WorkspaceEdit(changes={self.uri: edits})

    def rewrite(self, new_text: str) -> types.WorkspaceEdit:
        return self.edit(text_edits(self.text, new_text, self.positions))


def _before(a: types.Position, b: types.Position) -> bool:
    return (a.line, a.character) <= (b.line, b.character)


def overlaps(a: types.Range, b: types.Range) -> bool:
    return _before(a.start, b.end) and _before(b.start, a.end)


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return only is None or any(kind == o or kind.startswith(o + ".") for o in only)


def _quick_fix(view: DocumentView, d: Diagnostic) -> types.CodeAction | None:
    """The diagnostic's own fix edits (those of ``check --format json``), converted once."""
    if d.fix is None or not d.fix.edits:
        return None
    return types.CodeAction(title=quick_fix_title(d), kind=QUICKFIX, diagnostics=[view.lsp(d)],
                            is_preferred=d.fix.safety == "safe", edit=view.edit(lsp_edits(d.fix.edits, view.positions)))


def _noqa(view: DocumentView, d: Diagnostic, sites: CommentSites) -> types.CodeAction | None:
    if get_rule(d.code) is None:  # the engine's codes (a syntax error...) cannot be suppressed per line
        return None
    ins = sites.noqa(d.code, d.line, d.end_line)
    if ins is None:
        return None
    edit = types.TextEdit(range=view.positions.range(ins.line, ins.column, ins.line, ins.end_column),
                          new_text=ins.text)
    return types.CodeAction(title=noqa_title(d.code), kind=QUICKFIX, diagnostics=[view.lsp(d)],
                            edit=view.edit([edit]))


def _fix_all(view: DocumentView, in_range: list[Diagnostic], kinds: tuple[str, str]
             ) -> list[types.CodeAction]:
    actions = []
    fixed = [view.lsp(d) for d in in_range if d.fix is not None] or None
    texts = {view.text}
    for unsafe, title, kind in ((False, FIX_ALL_TITLE, kinds[0]), (True, FIX_ALL_UNSAFE_TITLE, kinds[1])):
        if ("unsafe" if unsafe else "safe") not in view.safeties:
            continue
        action = types.CodeAction(title=title, kind=kind, diagnostics=fixed,
                                  data={FIX_ALL_DATA: {"uri": view.uri, "unsafe": unsafe}})
        if view.fixed_text is not None:  # computed now: the client cannot ask later
            text = view.fixed_text(unsafe)
            if text in texts:
                continue  # nothing (more) to fix
            texts.add(text)
            action.edit, action.data = view.rewrite(text), None
        actions.append(action)
    return actions


def fix_all_request(action: types.CodeAction) -> tuple[str, bool] | None:
    """The document and the variant (unsafe or not) of a "fix all" action to resolve, if it is one."""
    data = action.data.get(FIX_ALL_DATA) if isinstance(action.data, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str) \
            or not isinstance(data.get("unsafe"), bool):
        return None
    return data["uri"], data["unsafe"]


def resolve_fix_all(view: DocumentView, action: types.CodeAction, unsafe: bool) -> types.CodeAction:
    """``action`` with the edit of "fix all" on the view's text (empty when nothing is left to fix)."""
    assert view.fixed_text is not None
    action.edit = view.rewrite(view.fixed_text(unsafe))
    action.data = None
    return action


def requested(view: DocumentView, request: types.Range) -> list[Diagnostic]:
    """The diagnostics whose range overlaps the request's: the only ones whose fixes are computed (those
    on other lines are passed over without converting their positions)."""
    first, last, line = request.start.line, request.end.line, view.positions.line
    return [d for d in view.diagnostics
            if line(d.line) <= last and line(d.end_line) >= first and overlaps(view.lsp(d).range, request)]


def code_actions(view: DocumentView, request: types.Range, only: Sequence[str] | None = None
                 ) -> list[types.CodeAction]:
    """Actions for the diagnostics overlapping ``request``, then the whole-file fixes.

    In the quick-fix menu (no ``only``, or ``quickfix``) the whole-file fixes come
    with a diagnostic under the cursor; a request for source actions always gets them.
    """
    in_range = requested(view, request)
    actions: list[types.CodeAction] = []
    if in_range and _wanted(QUICKFIX, only):
        sites = CommentSites(view.text)
        for d in in_range:
            for action in (_quick_fix(view, d), _noqa(view, d, sites)):
                if action is not None:
                    actions.append(action)
        actions += _fix_all(view, in_range, (QUICKFIX, QUICKFIX))
    elif only is not None and (_wanted(FIX_ALL_KIND, only) or _wanted(FIX_ALL_UNSAFE_KIND, only)):
        actions += [a for a in _fix_all(view, in_range, (FIX_ALL_KIND, FIX_ALL_UNSAFE_KIND))
                    if a.kind is not None and _wanted(a.kind, only)]
    return actions


def hover_markdown(diagnostics: list[Diagnostic]) -> str | None:
    """The rule documentation for the diagnostics under the cursor."""
    parts = []
    for code in dict.fromkeys(d.code for d in diagnostics):
        rule = get_code(code)
        if rule is None:
            continue
        found = [d for d in diagnostics if d.code == code]
        head = [f"**{code}** ({rule.kind}): {found[0].message}"]
        if found[0].hint:
            head.append(f"Hint: {found[0].hint}")
        section = head + [rule_section(rule, level=3).rstrip()]
        section.append(f"[{code} in the rules reference]({rule_url(code)})")
        parts.append("\n\n".join(section))
    return "\n\n---\n\n".join(parts) if parts else None
