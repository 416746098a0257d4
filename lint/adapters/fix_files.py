"""Fixing files as ``check`` analyses them: workers compute each file's fixes with the project
around it; this process alone writes them (:mod:`dynalint.core.writes`: atomically, through links,
keeping encoding, line endings, mode, owner and extended attributes, never over an edit saved
meanwhile)."""
from __future__ import annotations

import difflib
import functools
import json
import os
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from dynalint.analysis.project import SourceIndex
from dynalint.config.resolver import Configuration
from dynalint.engine.pipeline import Analysis, SourceError, analyse, decode_source
from dynalint.engine.fixing import FixProgress, FixResult, fix_source
from dynalint.core.notebooks import NotebookError, is_notebook, read_notebook
from dynalint.engine.pool import parallel_map
from dynalint.core.positions import LineMapping
from dynalint.engine.runner import CACHE_DIR_NAME, init_worker, worker_index
from dynalint.engine.session import Session
from dynalint.config.settings import Settings
from dynalint.core.source import on_large_stack, read_bytes
from dynalint.core.text_lines import split_lines
from dynalint.core.writes import ChangedOnDisk, stale_note, write_atomically


@dataclass
class Outcome:
    """What fixing one file did (returned by a worker, reported by the main process)."""

    path: str
    result: FixResult | None = None
    changed: bool = False
    diff: str = ""
    error: str | None = None
    note: str | None = None
    """Something to tell the user about the file that is no failure (a notebook is not rewritten)."""
    original: bytes | None = None
    """The file's content as read, when ``result.source`` is to be written over it."""


@dataclass(frozen=True)
class Job:
    path: str
    settings: Settings
    unsafe: bool
    diff: bool
    verify: tuple[str, ...]
    inputs: tuple[str, ...] | None
    timeout: float
    before_call: tuple[str, ...] | None = None
    devices: tuple[str, ...] = ("cpu",)
    mode: str = "eval"
    entries: str = ""
    """What the compiled code of the other files hands this one (canonical JSON, "" for nothing)."""
    begun: FixProgress | None = None
    """Round one of the fix, made where the project pass analysed the file (the fix goes on from it)."""

    @property
    def finished(self) -> bool:
        """Whether the fix is over: round one fixed nothing, what remains is known (nothing is
        analysed again, and no worker process is needed for it)."""
        return self.begun is not None and self.begun.result is not None


def fix_outcomes(jobs: list[Job], config: Configuration, workers: int, *, cache_dir: str | None | bool = True
                 ) -> Iterator[Outcome]:
    """Fix the files of ``jobs`` as ``check`` analyses them: each with the project around it (its
    names resolve into the other files, and it gets what their compiled code hands it).
    ``cache_dir``: where the analyses of the project are cached (True: ``check``'s default place)."""
    if cache_dir is True:
        cache_dir = os.path.join(config.root, CACHE_DIR_NAME)
    session = Session(config, jobs=workers, cache_dir=cache_dir or None)
    paths = [j.path for j in jobs]
    # round one of each fix is made where the pass analyses the file, and a fix confirmed by Dynamo
    # starts from the pass's analysis (kept in this process): no file is analysed twice
    confirmed = any(j.verify for j in jobs)
    entries = session.entries(paths, keep=confirmed, fixing={j.path: j.unsafe for j in jobs if not j.verify})
    index = session.index_paths(paths)
    jobs = [replace(j, entries=entries.get(j.path, ""), begun=session.begun(j.path, entries.get(j.path, "")))
            for j in jobs]
    project = SourceIndex(index)
    rest = [j for j in jobs if not j.finished]  # rewritten by round one (or not begun): analysed again
    if workers <= 1 or len(rest) <= 1:
        outcomes: Iterator[Outcome] = (
            _fix_one(job, project, functools.partial(session.kept, job.path, entries=job.entries)) for job in jobs)
    else:
        away = parallel_map(_fix_in_worker, rest, workers, most=8, initializer=init_worker, initargs=(index,))
        outcomes = (_fix_one(job, project) if job.finished else next(away) for job in jobs)
    for outcome in outcomes:
        yield _written(outcome)


def _written(outcome: Outcome) -> Outcome:
    """Write what a worker computed (in this process only, so that an interrupt stops every write)."""
    if outcome.original is None or outcome.result is None:
        return outcome
    try:
        removed = write_atomically(outcome.path, outcome.result.source, outcome.original)
    except ChangedOnDisk:
        return replace(outcome, changed=False, original=None, result=None,
                       error="changed on disk while it was being fixed; not fixed (run again)")
    except OSError as exc:
        return replace(outcome, changed=False, original=None, result=None,
                       error=f"cannot write: {exc.strerror or exc}")
    return replace(outcome, original=None, note=stale_note(removed) or outcome.note)


def _fix_in_worker(job: Job) -> Outcome:
    return _fix_one(job, worker_index())


def _fix_one(job: Job, project: SourceIndex | None, kept: Callable[[str], Analysis | None] | None = None
             ) -> Outcome:
    """Fix one file (``project``: the index of the files around it; the fix goes on from
    ``job.begun`` when it was made from the text the file holds; ``kept``: the analysis of a text of
    the file the project pass kept, if it kept one, for the fixes Dynamo confirms). Never raises."""
    source = None
    entries = json.loads(job.entries) if job.entries else None
    try:
        data = read_bytes(job.path)  # a regular file of bounded size, opened without blocking
        if is_notebook(job.path):
            return _notebook(job, data, project, entries)
        source = decode_source(data)
        if job.verify:
            from dynalint.verify.api import confirm_fixes

            result = confirm_fixes(job.path, list(job.verify), list(job.inputs) if job.inputs else None, job.settings,
                                   job.unsafe, job.timeout, devices=job.devices, mode=job.mode,
                                   before_call=list(job.before_call) if job.before_call else None,
                                   project=project, entries=entries, kept=kept)
        else:
            begun = job.begun if job.begun is not None and job.begun.original == source else None
            result = on_large_stack(fix_source, source, job.path, job.settings, unsafe=job.unsafe,  # deep code
                                    project=project, entries=entries, begun=begun)
        if result.source == source:
            return Outcome(job.path, result)
        if job.diff:  # nothing is written: remaining findings are numbered as in the file on disk
            back = LineMapping(source, result.source)
            result.remaining = [_renumbered(d, back) for d in result.remaining]
            diff = "".join(difflib.unified_diff(split_lines(source, keepends=True),
                                                split_lines(result.source, keepends=True),
                                                fromfile=job.path, tofile=job.path))
            return Outcome(job.path, result, True, diff)
        return Outcome(job.path, result, True, original=data)
    except (SourceError, OSError) as exc:
        return Outcome(job.path, error=str(exc))
    except Exception as exc:  # an internal error must not lose the other files
        return Outcome(job.path, _unfixed(source, job, project, entries),
                        error=f"internal error while fixing ({type(exc).__name__}: {exc}); "
                              "the file is left as it was. This is a bug in dynalint: please report it")


NOTEBOOK_NOTE = "not rewritten: dynalint fix edits Python files, not notebooks (the findings are listed)"


def _notebook(job: Job, data: bytes, project: SourceIndex | None, entries: dict | None) -> Outcome:
    """A notebook is checked, never rewritten: what remains is what ``check`` reports in its cells."""
    try:
        notebook = read_notebook(data)
    except NotebookError as exc:
        return Outcome(job.path, error=str(exc))
    found = _unfixed(notebook.text, job, project, entries)
    if found is None:
        return Outcome(job.path, error="internal error while checking the notebook; please report it")
    found.remaining = [notebook.map_back(d) for d in found.remaining]
    return Outcome(job.path, found, note=NOTEBOOK_NOTE)


def _unfixed(source: str | None, job: Job, project: SourceIndex | None, entries: dict | None
             ) -> FixResult | None:
    """What remains in a file that could not be fixed: its ``check`` diagnostics, when it can be checked."""
    if source is None:
        return None
    try:
        analysis = analyse(source, job.path, job.settings, project=project, entries=entries)
        return FixResult(source, remaining=analysis.diagnostics)
    except Exception:  # reported as the file's error already
        return None
    finally:
        if project is not None:
            project.release(job.path)


def _renumbered(d, back: LineMapping):
    from dataclasses import replace

    line, unchanged = back.original(d.line)
    end_line = line + (d.end_line - d.line) if unchanged else line
    return replace(d, line=line, end_line=end_line, column=d.column if unchanged else 1,
                   end_column=d.end_column if unchanged else 1)
