"""One configuration root checked as one program, whatever face asks.

``dynalint check .`` analyses every file with what the compiled code of the other files hands it
(the functions they call, with their arguments).  Checking one file alone would lose that: a
helper whose tensor branch only another file's ``forward`` reaches would be reported by
``check .`` and by nothing else.  A :class:`Session` owns what makes the answers agree: which
files make the project (the configuration root's Python files, ``exclude`` and ``.gitignore``
respected; see :meth:`Session.project_roots`), the index their names resolve through, the entries
they settle on and the cache.
``check PATHS``, ``fix``, the flake8 plugin, pre-commit (which runs ``check`` on the changed
files), verify's planning, ``fix --verify`` and an editor's unsaved buffer all ask it, and report
only the files they were given.

Only the files whose entries can change the given files' are analysed with them: the given files
and the files that import them, directly or through others (entries flow from caller to callee,
and a caller imports its callee), followed through a package ``__init__`` only by the names it
re-exports, nearest first and at most :data:`MAX_CALLER_FILES` of them (see :func:`callers_of`).
The other files are only indexed (parsed if and when a name resolves into them).  The cache makes a
repeated run cheap.
"""
from __future__ import annotations

import json
import os
from collections import deque
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

from dynalint.config.resolver import Configuration, resolve
from dynalint.core.diagnostics import Diagnostic, FileResult
from dynalint.config.files import imported_siblings, iter_python_files
from dynalint.core.notebooks import NotebookError, decode_file, is_notebook
from dynalint.engine import run_record
from dynalint.config.settings import CACHE_DIR_NAME

# The engine (libcst, the analysis, the rules) is imported where a file is analysed: a run the
# cache answers whole (see :mod:`dynalint.engine.run_record`) never loads it.
if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.project import SourceIndex
    from dynalint.engine.pipeline import Analysis
    from dynalint.engine.fixing import FixProgress, FixResult
    from dynalint.engine.runner import Kept, ProjectView

STDIN = "-"
"""The path of code read from standard input without a name: no file of the project."""
MODULE_SUFFIXES = (".py", ".pyi")
"""Files other files can import (a notebook is checked, but nothing imports it)."""

MAX_SETTLED = 16
"""Settled entries remembered per session (one per set of files and their stamps)."""

MAX_KEPT = 16
"""Given files whose analysis the project pass keeps for a fix in this process to go on from (an
editor's buffer, verify's plans, ``fix --verify``: each holds its tree and values until it is used,
so a larger run analyses those files again).  ``fix`` keeps no analysis: the pass makes round one of
each fix where it analyses the file (``fixing`` of :meth:`Session.entries`), however many files."""

Entries = dict[str, dict[str, dict]]
"""Incoming entries of one file: qualname -> parameter -> encoded value."""


def _abs(path: str) -> str:
    return os.path.abspath(path)


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([_abs(path), root]) == root
    except ValueError:  # another drive
        return False


class Session:
    """The project of one configuration root, as every face sees it.

    ``around``: whether the root's other files take part (False: the given files are the whole
    program, as :func:`dynalint.engine.runner.check_files` checks them).  ``cache_dir``: where analyses
    are kept (None: nowhere; :meth:`default_cache_dir` is ``check``'s).
    """

    def __init__(self, config: Configuration, *, jobs: int = 1, cache_dir: str | None = None,
                 around: bool = True) -> None:
        self.config = config
        self.jobs = jobs
        self.cache_dir = cache_dir
        self.around = around
        self._files: dict[tuple[str, ...], list[str]] = {}
        self._settled: dict[tuple, dict[str, str]] = {}
        self._index: tuple[tuple, SourceIndex] | None = None
        self._scopes: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
        """:meth:`scope` of the given files, found from the index :meth:`index` keeps: emptied when it
        makes another (a file of the project changed on disk)."""
        self._kept: dict[str, Kept] = {}
        """Analyses the project pass kept for the fixes, by path as given (see :meth:`kept`)."""
        self._stamps: dict[str, tuple[str, int, int]] | None = None
        """Inside :meth:`stamps_once`: the stamp of each file read so far."""

    @contextmanager
    def stamps_once(self) -> Iterator[None]:
        """Inside, each file's stamp (:func:`file_stamp`) is read once, the files taken as they were then:
        an editor's check of one version asks for the stamps of every file of the project five times
        (the index, the search for callers, the settled entries and their key, the document's key), a
        system call and a tuple per file each time, which made a tenth of an edit's cost in a large
        project."""
        outer = self._stamps is None
        if outer:
            self._stamps = {}
        try:
            yield
        finally:
            if outer:
                self._stamps = None

    def stamp(self, path: str) -> tuple[str, int, int]:
        """:func:`file_stamp`, read once inside :meth:`stamps_once`."""
        stamps = self._stamps
        if stamps is None:
            return file_stamp(path)
        found = stamps.get(path)
        if found is None:
            found = stamps[path] = file_stamp(path)
        return found

    @classmethod
    def for_path(cls, path: str, **kwargs) -> "Session":
        """The session of the configuration found from ``path`` (raises ConfigError)."""
        return cls(resolve([path]), **kwargs)

    @property
    def root(self) -> str:
        return self.config.root

    def default_cache_dir(self) -> str:
        return os.path.join(self.root, CACHE_DIR_NAME)

    # ------------------------------------------------------------------ which files
    def project_roots(self, paths: Iterable[str]) -> list[str]:
        """The folders whose files make the project around ``paths``: the configuration root when
        there is a configuration file or a git work tree there; without either (a loose folder, the
        home directory) only the top-level packages that hold the given files, so that checking one
        file never walks a folder nobody declared a project."""
        inside = [p for p in paths if p != STDIN and _inside(p, self.root)]
        if not inside:
            return []
        if self.config.source is not None or _in_git_work_tree(self.root):
            return [self.root]
        return sorted({top for top in map(_top_package, inside) if top is not None})

    def refresh(self) -> None:
        """Find the project's files again on the next call (files were created or deleted: an editor
        calls this on its file-change notifications; changed contents are noticed without it)."""
        self._files.clear()

    def project_files(self, paths: Iterable[str] = ()) -> list[str]:
        """The importable files of the project around ``paths`` (absolute paths; found once per
        session and set of roots)."""
        roots = tuple(self.project_roots(paths) if paths else [self.root])
        if roots not in self._files:
            self._files[roots] = [_abs(p) for p in iter_python_files(list(roots), self.config)
                                  if p.endswith(MODULE_SUFFIXES)]
        return self._files[roots]

    def scope(self, paths: Iterable[str]) -> tuple[list[str], list[str]]:
        """(files to analyse, files to index) for reporting on ``paths``: the given files first (as
        spelt), then the project files that import them, directly or not; the index is every file."""
        given = list(dict.fromkeys(paths))
        if not self.around or not self.project_roots(given):
            # (loose scripts: the modules beside them that they import are read for the names they define)
            spelt = {_abs(p) for p in given}
            siblings = [s for p in given if p != STDIN and p.endswith(".py") for s in imported_siblings(p)
                        if s not in spelt] if self.around else []
            return given, given + list(dict.fromkeys(siblings))
        files = self.project_files(given)
        known = set(files)
        # the project's files in the walk's order (as ``check .`` indexes them), then given files elsewhere
        modules = files + [_abs(p) for p in given if _abs(p) not in known and p.endswith(MODULE_SUFFIXES)]
        source = self.index(modules)
        # an editor asks this twice per edit of a document: the search for callers, which follows every
        # import of a large project (a second or so), is made again only when a file changed on disk
        found = self._scopes.get(tuple(given))
        if found is None:
            reached = callers_of(source, [m for m in (source.module_of(p) for p in given) if m])
            spelt = {_abs(p) for p in given}
            others = [p for p in modules if p not in spelt and source.module_of(p) in reached]
            if len(self._scopes) >= MAX_SETTLED:
                self._scopes.pop(next(iter(self._scopes)))
            found = self._scopes[tuple(given)] = (given + others, modules)
        return list(found[0]), list(found[1])

    # ------------------------------------------------------------------ files on disk
    def check(self, paths: Iterable[str], *, with_fixes: bool = False,
              stdin: tuple[str, bytes] | None = None, keep: bool = False) -> Iterator[FileResult]:
        """Results for ``paths`` (in their order), each analysed with the project around it.
        ``stdin``: (shown path, content) of a file read from standard input, checked first, with
        the project around the path it is shown under.  ``keep``: the files will be fixed next
        (their analyses are kept, see :meth:`kept`)."""
        if stdin is not None:
            yield self._check_stdin(*stdin, with_fixes=with_fixes)
        paths = list(paths)
        if not paths:
            return
        key = listing = files = None
        if self.cache_dir is not None:
            key = run_record.run_key(paths, settings=self.config.settings.fingerprint(), root=self.root,
                                     with_fixes=with_fixes, around=self.around)
            listing = self.project_files(paths) if self.around and self.project_roots(paths) else []
            recorded = run_record.lookup(self.cache_dir, key, listing, paths)
            if recorded is not None:
                yield from recorded
                return
            files = run_record.depended(listing, paths)
        from dynalint.engine.runner import Cache, project_pass

        analysed, index = self.scope(paths)
        key_settled = self._settled_key(analysed, index)
        outcomes, settled = project_pass(analysed, self.config, jobs=self._jobs_for(paths),
                                         cache_dir=self.cache_dir, with_fixes=paths if with_fixes else (), index=index,
                                         project=self.index(index), keep=self._to_keep(paths) if keep else ())
        self._remember(key_settled, settled, outcomes)
        results = [outcomes[p].result for p in paths]
        if key is not None and listing is not None and files is not None and self.cache_dir is not None:
            for outcome in outcomes.values():
                for dep, digest in outcome.deps.items():
                    if files.setdefault(dep, digest) != digest:
                        files[dep] = "?"  # changed while the run read it: the record is never used
            if not any(r.error for r in results):
                Cache(self.cache_dir).put_run(key, run_record.record(results, listing, paths, files))
        yield from results

    def entries(self, paths: Iterable[str], *, keep: bool = False, fixing: Mapping[str, bool] | None = None
                ) -> dict[str, str]:
        """Each given file's incoming entries once the project has settled (canonical JSON, by path
        as given; a file nothing calls into is left out).  ``keep``: the files will be fixed next
        (the pass keeps their analyses, see :meth:`kept`).  ``fixing``: the files fixed next, each
        with whether unsafe fixes apply (the pass makes round one of each fix where it analyses the
        file, in a worker process perhaps: see :meth:`begun`)."""
        paths = [p for p in dict.fromkeys(paths) if p != STDIN]
        if not paths:
            return {}
        analysed, index = self.scope(paths)
        key = self._settled_key(analysed, index)
        settled = self._settled.get(key)
        if settled is None:
            from dynalint.engine.runner import project_pass

            outcomes, settled = project_pass(analysed, self.config, jobs=self._jobs_for(paths),
                                             cache_dir=self.cache_dir, index=index, project=self.index(index),
                                             keep=self._to_keep(paths) if keep else (), fixing=fixing)
            self._remember(key, settled, outcomes)
        return {p: settled[p] for p in paths if p in settled}

    def _jobs_for(self, given: list[str]) -> int:
        """Worker processes for a pass that reports on ``given``.  The files analysed around a few
        given ones are their importers, which import much the same modules, and each worker parses
        and indexes those again: on transformers' ``modeling_bert.py`` (28 files analysed, 96 more
        parsed for their names) two workers cost 1.3-1.7x the CPU time of one process for 0.75-0.95x
        its wall time.  Such a pass runs in this process; a pass over many given files is spread."""
        return self.jobs if len(given) >= MIN_GIVEN_FOR_WORKERS else 1

    def _settled_key(self, analysed: list[str], index: list[str]) -> tuple:
        """What the settled entries of a pass depend on: the files analysed, and every indexed file's stamp."""
        return tuple(analysed), tuple(map(self.stamp, index))

    @staticmethod
    def _to_keep(paths: list[str]) -> list[str]:
        """The given files whose analyses a pass keeps: all of them, when they are few."""
        return paths if len(paths) <= MAX_KEPT else []

    def _remember(self, key: tuple, settled: dict[str, str], outcomes: dict) -> None:
        """Keep what a project pass found: its settled entries (a later :meth:`entries` asks no second
        pass) and the analyses it kept (:meth:`kept`, replacing those of an earlier pass)."""
        if len(self._settled) >= MAX_SETTLED:  # a long-lived session (an editor's) keeps the recent ones
            self._settled.pop(next(iter(self._settled)))
        self._settled[key] = settled
        for path, outcome in outcomes.items():
            if outcome.kept is not None:
                self._kept[path] = outcome.kept

    def kept(self, path: str, text: str, entries: str) -> Analysis | None:
        """The analysis of ``text`` as ``path`` the last project pass kept (see ``keep`` of
        :meth:`entries`), handed out once: None unless it analysed this very text with ``entries``
        (canonical JSON, as :meth:`entries` gives them)."""
        found = self._kept.pop(path, None)
        if found is None or found.source != text or found.entries != entries:
            return None
        return found.analysis

    def begun(self, path: str, entries: str) -> FixProgress | None:
        """Round one of the fix of ``path`` the last project pass made (see ``fixing`` of
        :meth:`entries`), handed out once: None unless it was made with ``entries``.  Its
        ``original`` is the text it fixed: the caller compares it with the file's."""
        found = self._kept.get(path)
        if found is None or found.begun is None:
            return None  # an analysis kept alone is left to :meth:`kept`
        del self._kept[path]
        return found.begun if found.entries == entries else None

    def index(self, paths: list[str]) -> ProjectView:
        """The index of these files, kept while none of them changes on disk (its import scan and the
        trees it parsed serve every analysis of the session; an unsaved buffer gets its own)."""
        paths = [p for p in paths if not is_notebook(p)]
        key = tuple(map(self.stamp, paths))
        if self._index is None or self._index[0] != key:
            from dynalint.engine.runner import ProjectView

            self._index = (key, ProjectView(paths))
            self._scopes = {}  # found from the index replaced
        return self._index[1]

    def index_paths(self, paths: Iterable[str]) -> list[str]:
        """The files names resolve through when ``paths`` are analysed (see :meth:`scope`)."""
        paths = [p for p in paths if p != STDIN]
        return self.scope(paths)[1] if paths else []

    # ------------------------------------------------------------------ text not on disk
    def entries_for(self, path: str) -> Entries:
        """The settled incoming entries of one file of the project (decoded)."""
        found = self.entries([path]).get(path, "")
        return json.loads(found) if found else {}

    def analyse_buffer(self, path: str, text: str, *, record_values: bool = True) -> Analysis:
        """Analyse ``text`` as the content of ``path`` (an editor's unsaved buffer), with the names
        and settled entries of the rest of the project as it is on disk."""
        from dynalint.analysis.project import SourceIndex
        from dynalint.engine.pipeline import analyse

        entries = self.entries_for(path)
        index = SourceIndex(self.index_paths([path]))
        try:
            return analyse(text, path, self.config.settings_for(path), record_values=record_values,
                           project=index, entries=entries)
        finally:
            index.release(path)

    def check_buffer(self, path: str, text: str, *, with_fixes: bool = False, keep: bool = False
                     ) -> list[Diagnostic]:
        """The diagnostics of :meth:`analyse_buffer` (each with its fix when ``with_fixes``).  A buffer
        that holds what the file holds (flake8 hands the file's lines) is answered by the cache.
        ``keep``: the file will be fixed next (see :meth:`kept`)."""
        if path != STDIN and not is_notebook(path) and _holds(path, text):
            [result] = self.check([path], with_fixes=with_fixes, keep=keep)
            if result.error is None:
                return result.diagnostics
        analysis = self.analyse_buffer(path, text, record_values=with_fixes)
        if not with_fixes:
            return analysis.diagnostics
        from dynalint.engine.fixing import diagnostics_with_fixes

        return diagnostics_with_fixes(text, path, analysis.settings, analysis=analysis)

    def fix_buffer(self, path: str, text: str, *, unsafe: bool = False) -> "FixResult":
        """``text`` as ``dynalint fix`` would rewrite ``path`` holding it (a file on disk that holds it
        is analysed once: the project pass keeps its analysis for the first round)."""
        from dynalint.analysis.project import SourceIndex
        from dynalint.engine.fixing import fix_source

        found = self.entries([path], keep=path != STDIN and _holds(path, text)).get(path, "")
        index = SourceIndex(self.index_paths([path]))
        return fix_source(text, path, self.config.settings_for(path), unsafe=unsafe, project=index,
                          entries=json.loads(found) if found else {}, analysis=self.kept(path, text, found))

    def _check_stdin(self, path: str, data: bytes, *, with_fixes: bool) -> FileResult:
        from dynalint.engine.pipeline import SourceError, io_error

        settings = self.config.settings_for(path)
        try:
            text, notebook = decode_file(path, data)
        except (SourceError, NotebookError) as exc:
            return FileResult(path, io_error(path, str(exc), settings))
        try:
            found = self.check_buffer(path, text, with_fixes=with_fixes and notebook is None)
            if notebook is not None:
                found = [notebook.map_back(d) for d in found]
            return FileResult(path, found, source=text)
        except Exception as exc:  # an analysis bug must not stop the run
            return FileResult(path, error=f"internal error while analysing ({type(exc).__name__}: {exc}); "
                                          "please report it")


MIN_GIVEN_FOR_WORKERS = 4
"""Given files below which a pass runs in this process, whatever ``--jobs`` (see :meth:`Session._jobs_for`)."""

MAX_CALLER_FILES = 48
"""Files analysed around the given ones at most, nearest importers first: the entries a file gets
come mostly from the files that import it, and a package whose modules all reach each other through
a few hub modules would otherwise make one file cost the whole package."""


def callers_of(source: SourceIndex, modules: list[str], limit: int = MAX_CALLER_FILES) -> set[str]:
    """``modules`` and the modules that can call into them, found from import lines alone, nearest
    first, at most ``limit`` beyond ``modules``.

    A module that imports one of them can call it, and so can the modules that import any name that
    module binds (its functions may be the callers). A package ``__init__`` that only re-exports is
    followed by the names it re-exports: a module that takes other names from the package (its
    logger, a utility) cannot reach the given modules through it."""
    importers: dict[str, list[tuple[str, frozenset[str] | None]]] = {}
    for module, edges in source.import_edges().items():
        for target, names in edges:
            importers.setdefault(target, []).append((module, names))
    exposed: dict[str, frozenset[str] | None] = {m: None for m in modules}
    """What each reached module offers that leads to the given ones (None: the module itself)."""
    queue = deque(modules)
    reached = dict.fromkeys(modules)
    while queue:
        module = queue.popleft()
        offers = exposed[module]
        for importer, names in importers.get(module, ()):
            if importer in exposed and exposed[importer] is None:
                continue  # a given module
            if offers is not None and names is not None and "*" not in names and not names & offers:
                continue  # it takes only what does not lead to the given modules
            if source.paths[importer].endswith("__init__.py"):
                if names is None:
                    takes = frozenset({module.rsplit(".", 1)[-1]})
                elif "*" in names:
                    takes = source.defined_names(module) if offers is None else offers
                else:
                    takes = names if offers is None else names & offers
            else:
                takes = source.defined_names(importer)
            known = exposed.get(importer, frozenset())
            grown = known | takes
            if importer in exposed and grown == known:
                continue
            if importer not in reached:
                if len(reached) - len(modules) >= limit:
                    continue
                reached[importer] = None
            exposed[importer] = grown
            queue.append(importer)
    return set(reached)


def _holds(path: str, text: str) -> bool:
    """Whether the file at ``path`` holds ``text``."""
    from dynalint.engine.pipeline import SourceError, decode_source

    try:
        with open(path, "rb") as fh:
            return decode_source(fh.read()) == text
    except (OSError, SourceError):
        return False


def _in_git_work_tree(directory: str) -> bool:
    """Whether ``directory`` is in a git work tree (a ``.git`` in it or above it)."""
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _top_package(path: str) -> str | None:
    """The outermost package folder (with ``__init__.py``) that holds ``path``; None outside packages."""
    directory = os.path.dirname(_abs(path))
    top = None
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        top = directory
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return top


def file_stamp(path: str) -> tuple[str, int, int]:
    """What tells a file on disk changed: its modification time and size (-1 when it is gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return path, -1, -1
    return path, st.st_mtime_ns, st.st_size
