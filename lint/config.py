"""Reading settings from ``pyproject.toml`` (``[tool.dynalint]``) or ``setup.cfg`` (``[dynalint]``).

Keys (kebab-case; snake_case is accepted too)::

    [tool.dynalint]
    select = ["DYN1", "DYN201"]          # codes or prefixes; default: everything
    ignore = ["DYN105"]
    extend-select = []                    # added to select
    per-file-ignores = {"tests/*" = ["DYN1"]}
    scope = "auto"                        # auto | compiled | all
    target-torch = "2.13"                 # default: the installed torch, else 2.13
    capture-scalar-outputs = false        # mirror torch._dynamo.config
    capture-dynamic-output-shape-ops = false
    reorderable-logging-functions = ["print"]
    exclude = ["third_party/*"]           # on top of VCS folders, virtual environments, caches, builds
    respect-gitignore = true              # skip what git ignores
    entry-points = ["*.train_step"]       # qualified names (globs) analysed as compiled entry points

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
from typing import Any, Callable, Mapping

from dynalint.codes import is_code_or_prefix, selects_any
from dynalint.path_globs import escape, glob_match
from dynalint.settings import KNOWN_TORCH, Scope, Settings, default_settings, parse_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ConfigError(Exception):
    """A configuration file or option that cannot be used (exit status 2)."""


@dataclass(frozen=True)
class ConfigSource:
    path: str
    section: str
    values: dict[str, Any]


def _as_list(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [v.strip() for v in value.replace("\n", ",").split(",")]
        return tuple(v for v in items if v)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ConfigError(f"{key}: expected a list of strings, got {value!r}")


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def _as_codes(key: str, value: Any) -> tuple[str, ...]:
    """Codes or prefixes, each of which must select at least one code (a typo is an error, not a no-op)."""
    codes = tuple(c.upper() for c in _as_list(key, value))
    for c in codes:
        if not is_code_or_prefix(c):
            raise ConfigError(f"{key}: {c!r} is not a dynalint code or prefix (like DYN101 or DYN1)")
        if not selects_any(c):
            raise ConfigError(f"{key}: unknown rule code {c!r} (`dynalint rules` lists them)")
    return codes


def _as_scope(key: str, value: Any) -> Scope:
    try:
        return Scope(str(value).strip().lower())
    except ValueError:
        raise ConfigError(f"{key}: expected one of {', '.join(s.value for s in Scope)}, got {value!r}") from None


def _as_version(key: str, value: Any):
    if isinstance(value, float):  # TOML reads 2.10 as the number 2.1
        raise ConfigError(f"{key}: write the version as a string, e.g. \"2.10\" (unquoted, TOML reads it "
                          f"as the number {value!r})")
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a torch version string like \"2.13\", got {value!r}")
    try:
        version = parse_version(str(value))
    except ValueError:
        raise ConfigError(f"{key}: expected a torch version like \"2.13\", got {value!r}") from None
    if version not in KNOWN_TORCH:
        first, last = KNOWN_TORCH[0], KNOWN_TORCH[-1]
        raise ConfigError(f"{key}: unknown torch version {value!r} (dynalint knows {first[0]}.{first[1]} "
                          f"to {last[0]}.{last[1]})")
    return version


def _as_per_file(key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if isinstance(value, str):  # setup.cfg: "pattern: CODE, CODE" lines
        out = []
        for line in value.splitlines():
            if not line.strip():
                continue
            if ":" not in line:
                raise ConfigError(f"{key}: expected 'pattern: CODES' lines, got {line.strip()!r}")
            pat, codes = line.split(":", 1)
            out.append((pat.strip(), _as_codes(key, codes)))
        return tuple(out)
    if isinstance(value, dict):
        return tuple((str(k), _as_codes(key, v)) for k, v in value.items())
    raise ConfigError(f"{key}: expected a table of glob pattern -> codes")


_KEYS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "select": ("select", _as_codes),
    "ignore": ("ignore", _as_codes),
    "extend-select": ("extend_select", _as_codes),
    "extend-ignore": ("extend_ignore", _as_codes),
    "per-file-ignores": ("per_file_ignores", _as_per_file),
    "scope": ("scope", _as_scope),
    "target-torch": ("target_torch", _as_version),
    "capture-scalar-outputs": ("capture_scalar_outputs", _as_bool),
    "capture-dynamic-output-shape-ops": ("capture_dynamic_output_shape_ops", _as_bool),
    "reorderable-logging-functions": ("reorderable_logging_functions", _as_list),
    "exclude": ("exclude", _as_list),
    "respect-gitignore": ("respect_gitignore", _as_bool),
    "entry-points": ("entry_points", _as_list),
}


def parse_options(values: dict[str, Any], where: str) -> dict[str, Any]:
    """Validate raw option values; returns Settings field -> value (plus extend_* keys)."""
    out: dict[str, Any] = {}
    for raw_key, raw in values.items():
        key = raw_key.replace("_", "-").lower()
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}: unknown option {raw_key!r} (known: {known})")
        field_name, convert = _KEYS[key]
        try:
            out[field_name] = convert(key, raw)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return out


def apply(settings: Settings, options: dict[str, Any]) -> Settings:
    options = dict(options)
    extend_select = options.pop("extend_select", ())
    extend_ignore = options.pop("extend_ignore", ())
    settings = settings.with_changes(**options)
    if extend_select or extend_ignore:
        settings = settings.with_changes(select=settings.select + tuple(extend_select),
                                         ignore=settings.ignore + tuple(extend_ignore))
    return settings


def _read_text(path: str) -> str:
    """A configuration file's text: UTF-8 (TOML requires it; setup.cfg is read as UTF-8 too), from a
    regular file of bounded size."""
    from dynalint.source import SourceError, read_bytes

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
    for key in _KEYS:
        value = getattr(args, key.replace("-", "_"), None)
        if value is not None:
            out[key] = value
    return out


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def path_matches(path: str, pattern: str, root: str) -> bool:
    """Whether an absolute ``path`` matches a configuration pattern, as ruff matches them: by name
    anywhere for a pattern without ``/``, else anchored at ``root`` (or absolute); ``*`` stays in
    one path component and ``**`` spans directories (see :mod:`dynalint.path_globs`)."""
    pattern = _posix(pattern).rstrip("/") or "/"
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" not in pattern:
        return glob_match(pattern, os.path.basename(path))
    anchored = pattern if os.path.isabs(pattern) else escape(_posix(root).rstrip("/")) + "/" + pattern
    return glob_match(anchored, _posix(path))


@dataclass(frozen=True)
class Project:
    """Resolved settings: the configuration file (if any), its directory and the settings for each file."""

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
        for key, (field_name, _) in _KEYS.items():
            if key.startswith("extend-"):
                continue
            value = getattr(self.settings, field_name)
            if key == "per-file-ignores":
                shown = "{" + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value) + "}"
            else:
                shown = _toml_value(value)
            lines.append(f"{key} = {shown}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Scope):
        return f'"{value.value}"'
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f'"{value[0]}.{value[1]}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return repr(value)


def resolve(paths: list[str], *, config: str | None = None, overrides: Mapping[str, Any] | None = None,
            cwd: str | None = None) -> Project:
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
    return Project(settings, root, source)


def resolve_args(args: Any, paths: list[str]) -> Project:
    """:func:`resolve` for a parsed command line (``--config`` and the options of :data:`_KEYS`)."""
    return resolve(paths, config=getattr(args, "config", None), overrides=overrides_from_args(args))


def load_settings(paths: list[str], config_path: str | None = None) -> tuple[Settings, ConfigSource | None]:
    """Default settings updated by the configuration file (explicit, or found from the paths)."""
    project = resolve(paths, config=config_path)
    return project.settings, project.source
