"""flake8 plugin: ``flake8 --select DYN model.py`` reports the same diagnostics as ``dynalint check``.

Selection is left to flake8 (``--select``/``--extend-ignore``/``# noqa``); the
other dynalint settings (scope, target torch, Dynamo config mirrors) are read
from the project's ``[tool.dynalint]``/``[dynalint]`` section.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Iterator

from dynalint import __version__
from dynalint.config import ConfigError, load_settings
from dynalint.engine import check_source
from dynalint.settings import Settings


@functools.lru_cache(maxsize=64)
def _settings_for_directory(directory: str) -> Settings:
    try:
        settings, _ = load_settings([directory])
    except ConfigError:
        settings, _ = load_settings([os.sep])  # flake8 has no channel for our config errors; use defaults
    # flake8 owns selection and noqa
    return settings.with_changes(select=("DYN",), ignore=())


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
        settings = _settings_for_directory(directory)
        try:
            diagnostics = check_source(source, self.filename, settings)
        except Exception:  # never break the host linter
            return
        for d in diagnostics:
            if d.code == "DYN000":
                continue  # flake8 reports syntax errors itself (E999)
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
