"""What the language server knows about one version of a document, computed on demand.

This is the server's only way into the engine: :func:`check_document` is the one analysis
call, and everything else (a diagnostic's fix, whether "fix all" has anything to do, the
fixed text) is derived from its result the first time something asks, never up front.  On a
large file the fixes of every diagnostic and two whole-file fix runs cost many times the
analysis; a quick-fix menu needs the fixes of the diagnostics under the cursor only.

A document is analysed as a file of its project (:class:`dynalint.engine.session.Session`): names
resolve into the other files as they are on disk, and the functions their compiled code calls
arrive with the arguments it passes (the entries the project settles on), so the editor shows
what ``dynalint check .`` reports.  Its fixes and "fix all" reuse that index and those entries,
so a quick fix always matches the diagnostic it is offered on.

The methods are called in an analysis process of the server (:mod:`dynalint.adapters.lsp.documents`),
one at a time.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from dynalint.analysis.project import SourceIndex
from dynalint.core.notebooks import is_notebook
from dynalint.core.diagnostics import Diagnostic
from dynalint.engine.pipeline import Analysis, analyse
from dynalint.fixers.support.base import fixers_for
from dynalint.engine.fixing import diagnostics_with_fixes, fix_source
from dynalint.engine.incremental import Baseline, Baselines, answered, baseline, reanalysed
from dynalint.engine.session import Session
from dynalint.config.settings import Settings

log = logging.getLogger("dynalint.adapters.lsp")


@dataclass
class Checked:
    """One analysed version of a document."""

    version: int | None
    text: str
    path: str
    settings: Settings
    diagnostics: list[Diagnostic]
    error: str | None = None
    """A configuration or internal error to show the user (once)."""
    analysis: Analysis | None = field(default=None, repr=False)
    project: SourceIndex | None = field(default=None, repr=False)
    """The index of the other files the analysis resolved names through (its fixes use it too)."""
    entries: dict[str, dict[str, Any]] | None = field(default=None, repr=False)
    """What the compiled code of the other files hands this one (see :meth:`Session.entries`)."""
    _fixes: dict[Diagnostic, Diagnostic] = field(default_factory=dict, repr=False)
    _fixed: dict[bool, str] = field(default_factory=dict, repr=False)
    _full: Callable[[], Analysis] | None = field(default=None, repr=False)
    """How to analyse this version in full, when its diagnostics were answered from the last analysis
    (see :mod:`dynalint.engine.incremental`): its fixes need the tree and the values."""

    def complete(self) -> None:
        """Make ``analysis`` a full analysis (with the tree and the values the fixers read)."""
        if self._full is not None:
            full, self._full = self._full, None
            try:
                self.analysis = full()
            except Exception:  # as check_document: no fixes, the diagnostics stay
                log.exception("analysing %s failed", self.path)
                return
            if self.analysis.diagnostics != self.diagnostics:
                log.error("%s: the diagnostics answered from the last analysis differ from a full analysis",
                          self.path)

    def with_fixes(self, wanted: Iterable[Diagnostic]) -> list[Diagnostic]:
        """``wanted``, each carrying its fix when one exists (the edits ``dynalint fix`` makes for it)."""
        wanted = list(wanted)
        todo = {d for d in wanted if d not in self._fixes}
        if todo:
            self.complete()
        if todo and self.analysis is not None and self.analysis.module is not None:
            reported = [(f, d) for f, d in self.analysis.reported if d in todo]
            only = dataclasses.replace(self.analysis, reported=reported)
            try:
                found = diagnostics_with_fixes(self.text, self.path, self.settings, analysis=only,
                                               project=self.project, entries=self.entries)
            except Exception:  # a fixer bug must not take the server down: no fix offered
                log.exception("computing fixes for %s failed", self.path)
                found = []
            self._fixes.update((d, d) for d in found if d in todo and d.fix is not None)
        for d in todo:
            self._fixes.setdefault(d, d)
        return [self._fixes[d] for d in wanted]

    def safeties(self) -> set[str]:
        """Which "fix all" actions to offer: the safeties of the fixes already computed, and of the
        fixers that may rewrite each other diagnostic.  A fixer's safety is fixed, so this plans nothing
        (planning every finding of a large file costs as much as analysing it); a fixer that then declines
        leaves "fix all" with less to do."""
        out: set[str] = set()
        by_code: dict[str, set[str]] = {}
        for finding, d in self.analysis.reported if self.analysis is not None else ():
            known = self._fixes.get(d)
            if known is not None:
                out |= {known.fix.safety} if known.fix is not None else set()
                continue
            code = finding.rule.code
            if code not in by_code:
                by_code[code] = {fixer.safety for fixer in fixers_for(code)}
            out |= by_code[code]
        return out

    def fixed(self, unsafe: bool) -> str:
        """The text after ``dynalint fix`` (``--unsafe-fixes`` with ``unsafe``)."""
        if unsafe not in self._fixed:
            self.complete()
            try:
                self._fixed[unsafe] = fix_source(self.text, self.path, self.settings, unsafe=unsafe,
                                                 analysis=self.analysis, project=self.project,
                                                 entries=self.entries).source
            except Exception:
                log.exception("fixing %s failed", self.path)
                self._fixed[unsafe] = self.text
        return self._fixed[unsafe]

    def fix_all_texts(self) -> None:
        """Compute the fixed text of each "fix all" on offer (for a client that cannot resolve actions)."""
        for safety in self.safeties():
            self.fixed(safety == "unsafe")


def project_of(session: Session, path: str) -> tuple[SourceIndex, dict[str, dict[str, Any]]]:
    """The index and the settled entries ``path`` is analysed with (the project on disk, the document's
    own file included until it is saved).  A file no other file imports gets no entries (only the
    compiled code of other files hands any), so the project is not analysed for it."""
    analysed, index = session.scope([path])
    entries = session.entries_for(path) if len(analysed) > 1 else {}
    if any(map(is_notebook, index)):  # (the session's index leaves notebooks out)
        return SourceIndex(index), entries
    # an index of its own, which reads no file again: the session's index of the same files (kept while
    # none changes on disk) lends what it read of them
    return session.index(index).fresh(), entries


def check_document(version: int | None, text: str, path: str | None, shown: str, session: Session,
                   baselines: Baselines | None = None) -> Checked:
    """Analyse one version of the document at ``path`` (absolute; None: a document not saved anywhere
    yet, analysed alone) as a file of ``session``'s project (``shown``: its path as ``dynalint check``
    reports it, for messages).  ``baselines``: the last analyses of the documents, from which an edit
    is answered: one that changes no statement, from the last findings; one that changes code, by
    parsing again the statements it touched only (and where this one is kept).  The files of the
    project are taken as they are on disk when the check starts (:meth:`Session.stamps_once`)."""
    with session.stamps_once():
        return _checked(version, text, path, shown, session, baselines)


def _checked(version: int | None, text: str, path: str | None, shown: str, session: Session,
             baselines: Baselines | None = None) -> Checked:
    """See :func:`check_document`."""
    settings = session.config.settings_for(path or shown)
    project, entries = None, None
    name = path or shown
    try:
        if path is not None:
            project, entries = project_of(session, path)
        key = _key(settings, project, entries, session.stamp)

        def full(parse: bool = False) -> Analysis:
            # the index lives as long as this version (its fixes resolve through it): not released here,
            # which would scan the imports of every file of the project on each edit; ``parse``: a tree
            # of the text, not the one the project holds (spliced, when the edit was answered quickly)
            return analyse(text, name, settings, record_values=True, project=project, entries=entries,
                           statements=baselines is not None, parse=parse)

        base = baselines.get(name) if baselines is not None else None
        quick: tuple[Analysis, Baseline | None] | None = None
        failed = False
        if base is not None:
            assert baselines is not None
            try:
                quick = answered(base, Analysis(settings), text, name, key) or \
                    reanalysed(base, settings, text, name, key, project, entries)
            except Exception:  # the full analysis answers instead, from a parse of the text
                log.exception("answering an edit of %s from its last analysis failed", shown)
                baselines.drop(name)
                failed = True
        if quick is not None:
            analysis, new_base = quick
            assert baselines is not None
            if new_base is not None:
                baselines.put(name, new_base)
            return Checked(version, text, name, settings, analysis.diagnostics, analysis=analysis,
                           project=project, entries=entries, _full=lambda: full(parse=True))
        analysis = full(parse=failed)
        new_base = baseline(analysis, text, key) if baselines is not None else None
        if new_base is not None:  # else the last one stays (a text that does not parse is often typed back)
            assert baselines is not None
            baselines.put(name, new_base)
    except Exception as exc:  # an analysis bug must not take the server down
        log.exception("checking %s failed", shown)
        return Checked(version, text, path or shown, settings, [], error=(
            f"dynalint: internal error while checking {shown} ({type(exc).__name__}: {exc}); "
            "please report it"))
    return Checked(version, text, path or shown, settings, analysis.diagnostics, analysis=analysis, project=project,
                   entries=entries)


def _key(settings: Settings, project: SourceIndex | None, entries: dict[str, dict[str, Any]] | None,
         stamp: Callable[[str], tuple]) -> tuple:
    """What an analysis of a document reads besides its text: the settings, the entries the project hands
    it and the project's files as they are on disk (``stamp``: of one file)."""
    files = tuple(map(stamp, project.paths.values())) if project is not None else ()
    return settings.fingerprint(), json.dumps(entries or {}, sort_keys=True), files
