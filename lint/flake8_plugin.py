"""flake8 plugin: ``flake8 --select DYN model.py`` reports the same diagnostics as ``dynalint check``.

Selection is left to flake8 (``--select``/``--extend-ignore``/``# noqa``); the
other dynalint settings (scope, target torch, Dynamo config mirrors) are read
from the project's ``[tool.dynalint]``/``[dynalint]`` section.

The plugin never breaks flake8's run, and never hides a failure either: an
internal error while checking a file, or a configuration it cannot read, is
reported on that file as ``DYN000`` (as a rule panic is in ruff), and the other
files are checked as usual.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Iterator

from dynalint import __version__
from dynalint.config import ConfigError, load_settings
from dynalint.engine import SYNTAX_ERROR_CODE, check_source
from dynalint.settings import Settings


@functools.lru_cache(maxsize=64)
def _settings_for_directory(directory: str) -> tuple[Settings, str | None]:
    """The settings (flake8 owns selection and noqa) and, when the configuration is broken, why."""
    problem = None
    try:
        settings, _ = load_settings([directory])
    except ConfigError as exc:
        settings, _ = load_settings([os.sep])
        problem = f"configuration error, checked with the default settings: {exc}"
    return settings.with_changes(select=("DYN",), ignore=()), problem


class DynalintChecker:
    name = "dynalint"
    version = __version__

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        directory = os.path.dirname(os.path.abspath(self.filename)) if self.filename not in ("-", "stdin") \
            else os.getcwd()
        settings, problem = _settings_for_directory(directory)
        if problem is not None:
            yield 1, 0, f"{SYNTAX_ERROR_CODE} {problem}", type(self)
        try:
            diagnostics = check_source(source, self.filename, settings)
        except Exception as exc:  # never break the host linter, never hide the failure
            yield 1, 0, (f"{SYNTAX_ERROR_CODE} internal error, file not analysed "
                         f"({type(exc).__name__}: {exc}). "
                         "This is a bug in dynalint: please report it with the file"), type(self)
            return
        for d in diagnostics:
            if d.code == SYNTAX_ERROR_CODE:
                continue  # flake8 reports syntax errors itself (E999)
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
