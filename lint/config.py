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
    exclude = ["third_party/*"]
    entry-points = ["*.train_step"]       # qualified names (globs) analysed as compiled entry points
"""
from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from dynalint.settings import Scope, Settings, default_settings, parse_version

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
    codes = tuple(c.upper() for c in _as_list(key, value))
    for c in codes:
        if not c.startswith("DYN") or not c[3:].isdigit() and c != "DYN":
            raise ConfigError(f"{key}: {c!r} is not a dynalint code or prefix (like DYN101 or DYN1)")
    return codes


def _as_scope(key: str, value: Any) -> Scope:
    try:
        return Scope(str(value).strip().lower())
    except ValueError:
        raise ConfigError(f"{key}: expected one of {', '.join(s.value for s in Scope)}, got {value!r}") from None


def _as_version(key: str, value: Any):
    try:
        return parse_version(str(value))
    except ValueError:
        raise ConfigError(f"{key}: expected a torch version like \"2.13\", got {value!r}") from None


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


def read_config_file(path: str) -> ConfigSource | None:
    """The dynalint section of one file, or None if it has none."""
    name = os.path.basename(path)
    try:
        if name.endswith(".toml"):
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
            section = data.get("tool", {}).get("dynalint")
            if section is None:
                return None
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: [tool.dynalint] must be a table")
            return ConfigSource(path, "[tool.dynalint]", section)
        parser = configparser.ConfigParser(interpolation=None)
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
        if not parser.has_section("dynalint"):
            return None
        return ConfigSource(path, "[dynalint]", dict(parser.items("dynalint")))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
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


def load_settings(paths: list[str], config_path: str | None = None) -> tuple[Settings, ConfigSource | None]:
    """Default settings updated by the configuration file (explicit, or found from the paths)."""
    settings = default_settings()
    if config_path is not None:
        source = read_config_file(config_path)
        if source is None:
            raise ConfigError(f"{config_path}: no [tool.dynalint] or [dynalint] section")
    else:
        start = os.path.commonpath([os.path.abspath(p) for p in paths]) if paths else os.getcwd()
        source = find_config(start)
    if source is None:
        return settings, None
    return apply(settings, parse_options(source.values, f"{source.path} {source.section}")), source
