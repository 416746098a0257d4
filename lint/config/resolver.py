"""Reading settings from ``pyproject.toml`` (``[tool.dynalint]``) or ``setup.cfg`` (``[dynalint]``).

The keys, what they take and what they do are the table of :mod:`dynalint.config.options` (the README's
configuration example is generated from it)::

    [tool.dynalint]
    select = ["DYN1", "DYN201"]
    target-torch = "2.13"

Path patterns (``exclude``, ``per-file-ignores``) are resolved like ruff's: a pattern without a
``/`` matches a file or folder name anywhere; one with a ``/`` is anchored at the directory of the
configuration file (the project root), whatever directory dynalint runs from.

:func:`resolve` is the one place settings are computed: the command line (``check``, ``fix``,
``verify``), the language server and the flake8 plugin all call it.
"""
from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from dynalint.config.options import OPTIONS, ConfigError, find, unknown_key_message
from dynalint.config.path_globs import escape, glob_match
from dynalint.config.settings import Settings, default_settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class ConfigSource:
    path: str
    section: str
    values: dict[str, Any]


def parse_options(values: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate raw option values (keys of :data:`dynalint.config.options.OPTIONS`); returns Settings field ->
    value (plus ``extend_*`` keys)."""
    out: dict[str, Any] = {}
    for raw_key, raw in values.items():
        option = find(raw_key)
        if option is None:
            raise ConfigError(f"{where}: {unknown_key_message(raw_key)}")
        try:
            out[option.dest] = option.parse(option.key, raw)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return out


def apply(settings: Settings, options: dict[str, Any]) -> Settings:
    """``settings`` with the parsed options set; an ``extend-*`` option adds to the value its field has
    once the others are set."""
    options = dict(options)
    extensions = {o.field: options.pop(o.dest) for o in OPTIONS if o.extends and o.dest in options}
    settings = settings.with_changes(**options)
    if extensions:
        settings = settings.with_changes(**{name: getattr(settings, name) + tuple(extra)
                                            for name, extra in extensions.items()})
    return settings


def _read_text(path: str) -> str:
    """A configuration file's text: UTF-8 (TOML requires it; setup.cfg is read as UTF-8 too), from a
    regular file of bounded size."""
    from dynalint.core.source import SourceError, read_bytes

    try:
        data = read_bytes(path)
    except SourceError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None


def read_config_file(path: str) -> ConfigSource | None:
    """The dynalint section of one file, or None if it has none."""
    name = os.path.basename(path)
    try:
        if name.endswith(".toml"):
            data = tomllib.loads(_read_text(path))
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                raise ConfigError(f"{path}: `tool` must be a table, got {tool!r}")
            section = tool.get("dynalint")
            if section is None:
                return None
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: [tool.dynalint] must be a table")
            return ConfigSource(path, "[tool.dynalint]", section)
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(_read_text(path), path)
        if not parser.has_section("dynalint"):
            return None
        return ConfigSource(path, "[dynalint]", dict(parser.items("dynalint")))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    except configparser.Error as exc:
        raise ConfigError(f"{path}: invalid configuration: {exc.message if hasattr(exc, 'message') else exc}") \
            from None


def find_config(start: str) -> ConfigSource | None:
    """The nearest pyproject.toml with [tool.dynalint] or setup.cfg with [dynalint], upwards from ``start``."""
    directory = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        for name in ("pyproject.toml", "setup.cfg"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                source = read_config_file(candidate)
                if source is not None:
                    return source
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def overrides_from_args(args: Any) -> dict[str, Any]:
    """Command-line values of the configuration keys (an argparse namespace: ``--target-torch`` is
    ``args.target_torch``); options the command line does not set are left out."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        value = getattr(args, option.dest, None)
        if value is not None:
            out[option.key] = value
    return out


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def path_matches(path: str, pattern: str, root: str) -> bool:
    """Whether an absolute ``path`` matches a configuration pattern, as ruff matches them: by name
    anywhere for a pattern without ``/``, else anchored at ``root`` (or absolute); ``*`` stays in
    one path component and ``**`` spans directories (see :mod:`dynalint.config.path_globs`)."""
    pattern = _posix(pattern).rstrip("/") or "/"
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" not in pattern:
        return glob_match(pattern, os.path.basename(path))
    anchored = pattern if os.path.isabs(pattern) else escape(_posix(root).rstrip("/")) + "/" + pattern
    return glob_match(anchored, _posix(path))


@dataclass(frozen=True)
class Configuration:
    """The resolved configuration of a run: the configuration file (if any), the directory that anchors
    its path patterns, and the settings for each file."""

    settings: Settings
    root: str
    """Absolute directory that anchors path patterns: the configuration file's, else the current one."""
    source: ConfigSource | None = None

    def excluded(self, path: str) -> bool:
        """``path`` or one of its folders below the root matches an ``exclude`` pattern."""
        if not self.settings.exclude:
            return False
        current = os.path.abspath(path)
        while True:
            if any(path_matches(current, p, self.root) for p in self.settings.exclude):
                return True
            parent = os.path.dirname(current)
            if parent == current or not _posix(parent + "/").startswith(_posix(self.root.rstrip(os.sep) + "/")):
                return False
            current = parent

    def settings_for(self, path: str) -> Settings:
        """The settings with the ``per-file-ignores`` matching ``path`` applied."""
        settings = self.settings
        if not settings.per_file_ignores:
            return settings
        full = os.path.abspath(path)
        extra = [c for pattern, codes in settings.per_file_ignores if path_matches(full, pattern, self.root)
                 for c in codes]
        return settings.with_changes(ignore=settings.ignore + tuple(extra)) if extra else settings

    def describe(self) -> str:
        """The resolved settings as TOML-like lines (``--show-settings``)."""
        lines = [f"# configuration: {self.source.path} {self.source.section}" if self.source else
                 "# configuration: none found (defaults)", f"# project root: {self.root}"]
        lines += [f"{o.key} = {o.show(getattr(self.settings, o.field))}" for o in OPTIONS if not o.extends]
        return "\n".join(lines) + "\n"


def resolve(paths: list[str], *, config: str | None = None, overrides: Mapping[str, Any] | None = None,
            cwd: str | None = None) -> Configuration:
    """Default settings, updated by the configuration file (``config``, else the nearest one above the
    paths), then by ``overrides`` (the command line).  Raises :class:`ConfigError`."""
    settings = default_settings()
    if config is not None:
        source = read_config_file(config)
        if source is None:
            raise ConfigError(f"{config}: no [tool.dynalint] or [dynalint] section")
    else:
        start = os.path.commonpath([os.path.abspath(p) for p in paths]) if paths else (cwd or os.getcwd())
        source = find_config(start)
    if source is not None:
        settings = apply(settings, parse_options(source.values, f"{source.path} {source.section}"))
    if overrides:
        options = parse_options(dict(overrides), "command line")
        if "exclude" in options:  # as ruff: patterns typed on the command line are relative to where it runs
            here = cwd or os.getcwd()
            options["exclude"] = tuple(escape(_posix(here)).rstrip("/") + "/" + _posix(p).removeprefix("./")
                                       if "/" in _posix(p).rstrip("/") and not os.path.isabs(p) else p
                                       for p in options["exclude"])
        settings = apply(settings, options)
    root = os.path.dirname(os.path.abspath(source.path)) if source is not None else os.path.abspath(cwd or os.getcwd())
    return Configuration(settings, root, source)


def resolve_args(args: Any, paths: list[str]) -> Configuration:
    """:func:`resolve` for a parsed command line (``--config`` and the options of :data:`dynalint.config.options.OPTIONS`)."""
    return resolve(paths, config=getattr(args, "config", None), overrides=overrides_from_args(args))


def load_settings(paths: list[str], config_path: str | None = None) -> tuple[Settings, ConfigSource | None]:
    """Default settings updated by the configuration file (explicit, or found from the paths)."""
    resolved = resolve(paths, config=config_path)
    return resolved.settings, resolved.source
