"""flake8 plugin: ``flake8 --select DYN model.py`` reports the same diagnostics as ``dynalint check``.

Each file is analysed with the project around it (:class:`dynalint.engine.session.Session`): the files that
import it hand it what their compiled code passes, as in ``dynalint check .``, and the cache makes
a repeated run cheap.

Settings come from the project's ``[tool.dynalint]``/``[dynalint]`` section through the same resolver
as the CLI (select, ignore, per-file-ignores, scope, target torch, Dynamo config mirrors); flake8's own
``--select``/``--extend-ignore``/``# noqa`` filter on top.  A configuration that cannot be used is
reported (DYN002 on the first line) rather than silently replaced by defaults.

The plugin never breaks flake8's run, and never hides a failure either: an internal error while
checking a file is reported on that file as ``DYN000`` (as a rule panic is in ruff), and the other
files are checked as usual.  A file that CPython cannot parse is flake8's own ``E999`` (flake8 runs
no plugin on it: select ``DYN,E999`` to see both); one that CPython parses but dynalint's parser does
not is reported as ``DYN000``, as ``dynalint check`` reports it.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Iterator

from dynalint import __version__
from dynalint.config.resolver import ConfigError, resolve
from dynalint.engine.pipeline import SYNTAX_ERROR_CODE
from dynalint.engine.runner import CACHE_DIR_NAME
from dynalint.engine.session import Session

CONFIG_ERROR_CODE = "DYN002"


@functools.lru_cache(maxsize=64)
def _session_for_directory(directory: str) -> Session | str:
    """The session of the configuration found from ``directory`` (one per configuration, shared by the
    files flake8 checks in this process), or the configuration error's message."""
    try:
        config = resolve([directory])
    except ConfigError as exc:
        return str(exc)
    key = (config.root, config.source.path if config.source else "", config.settings.fingerprint())
    if key not in _SESSIONS:
        _SESSIONS[key] = Session(config, cache_dir=os.path.join(config.root, CACHE_DIR_NAME))
    return _SESSIONS[key]


_SESSIONS: dict[tuple[str, str, str], Session] = {}


class DynalintChecker:
    name = "dynalint"
    version = __version__

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        stdin = self.filename in ("-", "stdin")
        directory = os.getcwd() if stdin else os.path.dirname(os.path.abspath(self.filename))
        session = _session_for_directory(directory)
        if isinstance(session, str):
            yield 1, 0, f"{CONFIG_ERROR_CODE} dynalint configuration error: {session}", type(self)
            return
        try:  # the project around the file supplies its callers, as for `dynalint check`
            diagnostics = session.check_buffer("-" if stdin else self.filename, source)
        except Exception as exc:  # never break the host linter, never hide the failure
            yield 1, 0, (f"{SYNTAX_ERROR_CODE} internal error, file not analysed "
                         f"({type(exc).__name__}: {exc}). "
                         "This is a bug in dynalint: please report it with the file"), type(self)
            return
        for d in diagnostics:
            # flake8 runs this plugin only on files CPython parses (it reports the others as E999), so a
            # DYN000 here is a file dynalint's parser rejects: not analysed, which must not look clean
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
