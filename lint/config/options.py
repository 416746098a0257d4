"""The options, as one table: every face of a setting is derived from its entry.

An :class:`Option` names a configuration key (``[tool.dynalint]`` key, and ``--key`` on the command
line), how a value is read and checked, what it does and which commands take it.  From the table
come the configuration file's validation and the command line's overrides (:mod:`dynalint.config.resolver`),
the options the commands add to their parsers (:func:`add_arguments`), ``--show-settings``
(``Option.show``) and the documentation's list of options (``python -m dynalint.adapters.rules_reference --readme``).
A value is checked by the same parser wherever it comes from, so a wrong one gets the same message
in ``pyproject.toml`` and on the command line.

Nothing here imports the engine or the rules: the command line builds its parser, and the language
server answers ``initialize``, from this table alone.
"""
from __future__ import annotations

import argparse
import difflib
import enum
from dataclasses import dataclass
from typing import Any, Callable, Literal

from dynalint.config.codes import is_code_or_prefix, selects_any
from dynalint.config.settings import CALIBRATED_TORCH, KNOWN_TORCH, Scope, Settings, Version, parse_version


class ConfigError(Exception):
    """A configuration file or option that cannot be used (exit status 2)."""


# -- reading values: each takes the key (for the message) and the raw value -----------------------

def as_list(key: str, value: Any) -> tuple[str, ...]:
    """A list of strings; a string is split at commas and newlines (``--exclude a,b``, setup.cfg)."""
    if isinstance(value, str):
        items = [v.strip() for v in value.replace("\n", ",").split(",")]
        return tuple(v for v in items if v)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ConfigError(f"{key}: expected a list of strings, got {value!r}")


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{key}: expected true or false, got {value!r}")


def as_codes(key: str, value: Any) -> tuple[str, ...]:
    """Codes or prefixes, each of which must select at least one code (a typo is an error, not a no-op)."""
    codes = tuple(c.upper() for c in as_list(key, value))
    for c in codes:
        if not is_code_or_prefix(c):
            raise ConfigError(f"{key}: {c!r} is not a dynalint code or prefix (like DYN101 or DYN1)")
        if not selects_any(c):
            raise ConfigError(f"{key}: unknown rule code {c!r} (`dynalint rules` lists them)")
    return codes


def as_scope(key: str, value: Any) -> Scope:
    text = str(value).strip().lower()
    try:
        return Scope(text)
    except ValueError:
        names = [s.value for s in Scope]
        close = difflib.get_close_matches(text, names, n=1)
        tip = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{key}: expected one of {', '.join(names)}, got {value!r}{tip}") from None


def as_version(key: str, value: Any) -> Version:
    if isinstance(value, float):  # TOML reads 2.10 as the number 2.1
        raise ConfigError(f"{key}: write the version as a string, e.g. \"2.10\" (unquoted, TOML reads it "
                          f"as the number {value!r})")
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a torch version string like \"2.13\", got {value!r}")
    try:
        version = parse_version(value)
    except ValueError:
        raise ConfigError(f"{key}: expected a torch version like \"2.13\", got {value!r}") from None
    if version not in KNOWN_TORCH:
        first, last = KNOWN_TORCH[0], KNOWN_TORCH[-1]
        raise ConfigError(f"{key}: unknown torch version {value!r} (dynalint knows {first[0]}.{first[1]} "
                          f"to {last[0]}.{last[1]})")
    return version


def as_megabytes(key: str, value: Any) -> int:
    """A whole number of MiB, 0 or more (text from the command line or setup.cfg included)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if type(value) is not int or value < 0:
        raise ConfigError(f"{key}: expected a whole number of megabytes (0 for no limit), got {value!r}")
    return value


def as_per_file(key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if isinstance(value, str):  # setup.cfg: "pattern: CODE, CODE" lines
        out = []
        for line in value.splitlines():
            if not line.strip():
                continue
            if ":" not in line:
                raise ConfigError(f"{key}: expected 'pattern: CODES' lines, got {line.strip()!r}")
            pat, codes = line.split(":", 1)
            out.append((pat.strip(), as_codes(key, codes)))
        return tuple(out)
    if isinstance(value, dict):
        return tuple((str(k), as_codes(key, v)) for k, v in value.items())
    raise ConfigError(f"{key}: expected a table of glob pattern -> codes")


# -- showing values (TOML) ------------------------------------------------------------------------

def toml_value(value: Any) -> str:
    """A Settings value as TOML (``--show-settings``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return f'"{value.value}"'
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f'"{value[0]}.{value[1]}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return repr(value)


def _toml_table(value: Any) -> str:
    return "{" + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value) + "}"


def plain_value(value: Any) -> str:
    """A Settings value as typed on the command line (the defaults in ``--help``)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}.{value[1]}"
    if isinstance(value, tuple):
        return ",".join(value) if value else "none"
    return str(value)


# -- the table ------------------------------------------------------------------------------------

#: The commands whose results depend on the settings: each takes the command-line options.
SETTINGS_COMMANDS = ("check", "fix", "verify", "lsp")

Form = Literal["list", "switch", "value"]


@dataclass(frozen=True)
class Option:
    key: str
    """The configuration key (kebab-case; snake_case is accepted too) and the flag ``--key``."""
    parse: Callable[[str, Any], Any]
    """Reads and checks a raw value (TOML, setup.cfg text or command-line text); raises ConfigError."""
    help: str
    """What it does, in a line: ``--help`` and the documentation's list."""
    example: str
    """A TOML value for the documentation's example configuration."""
    form: Form = "value"
    """On the command line: ``list`` (comma-separated), ``switch`` (``--x``/``--no-x``) or one ``value``."""
    metavar: str | None = None
    commands: tuple[str, ...] = SETTINGS_COMMANDS
    """The commands that take it on their command line; () for the configuration file only."""
    extends: str | None = None
    """For ``extend-*``: the option whose value this one adds to (it has no Settings field of its own)."""
    default: str | None = None
    """The default in words, where it is not the Settings field's (computed at run time)."""
    note: str = ""
    """More for the documentation (how patterns resolve...), after the help."""
    doc: str = ""
    """Markdown for the rules' "Options" sections (default: the help)."""
    dynamo: str | None = None
    """The ``torch._dynamo.config`` value it mirrors (``verify`` sets it for the measured code)."""
    show: Callable[[Any], str] = toml_value
    """The Settings value as TOML (``--show-settings``)."""

    @property
    def field(self) -> str:
        """The Settings field it sets (for ``extend-*``: the one it adds to)."""
        return (self.extends or self.key).replace("-", "_")

    @property
    def dest(self) -> str:
        """The argparse destination of ``--key``."""
        return self.key.replace("-", "_")

    def default_text(self) -> str | None:
        if self.extends:
            return None
        if self.default is not None:
            return self.default
        return plain_value(getattr(Settings(), self.field))

    def command_help(self) -> str:
        """The ``--help`` line."""
        text = self.help + (", comma-separated" if self.form == "list" else "")
        default = self.default_text()
        return text + (f" (default: {default})" if default is not None else "")


_CODES = "CODES"
_PATTERNS = "PATTERNS"

OPTIONS: tuple[Option, ...] = (
    Option("select", as_codes, "codes or prefixes to report", '["DYN"]', "list", _CODES),
    Option("ignore", as_codes, "codes or prefixes not to report", '["DYN205"]', "list", _CODES),
    Option("extend-select", as_codes, "codes added to `select`", '["DYN003"]', "list", _CODES,
           extends="select"),
    Option("extend-ignore", as_codes, "codes added to `ignore`", "[]", "list", _CODES, extends="ignore"),
    Option("per-file-ignores", as_per_file, "codes not reported in the files a glob pattern matches",
           '{"tests/*" = ["DYN1"]}', commands=(), show=_toml_table),
    Option("scope", as_scope, "which functions count as compiled: " + " | ".join(s.value for s in Scope),
           '"auto"', metavar="|".join(s.value for s in Scope)),
    Option("target-torch", as_version, "the torch version to predict for", '"2.13"', metavar="VERSION",
           default=f"the installed torch, else {CALIBRATED_TORCH[0]}.{CALIBRATED_TORCH[1]}",
           note="a string: 2.10 unquoted is the number 2.1",
           doc="the torch version predicted for: what breaks changes between releases"),
    Option("capture-scalar-outputs", as_bool, "mirror torch._dynamo.config.capture_scalar_outputs", "false",
           "switch", dynamo="capture_scalar_outputs",
           doc="mirrors `torch._dynamo.config.capture_scalar_outputs`: `.item()` and friends stay in the "
               "graph (as symbolic values), so what breaks moves to their uses; on for every checked file (a "
               "file that turns the flag on itself, where that provably covers its compiled code, is read as such "
               "without it)"),
    Option("capture-dynamic-output-shape-ops", as_bool,
           "mirror torch._dynamo.config.capture_dynamic_output_shape_ops", "false", "switch",
           dynamo="capture_dynamic_output_shape_ops",
           doc="mirrors `torch._dynamo.config.capture_dynamic_output_shape_ops`: `nonzero`, boolean masks "
               "and friends stay in the graph; on for every checked file (a file's own setting is read as for "
               "`capture-scalar-outputs`)"),
    Option("reorderable-logging-functions", as_list, "calls Dynamo is told to defer: not reported",
           '["print"]', commands=(), dynamo="reorderable_logging_functions",
           doc="calls Dynamo is told to defer (`torch._dynamo.config.reorderable_logging_functions`) are "
               "not reported"),
    Option("exclude", as_list, "glob patterns of paths to skip", '["third_party/*"]', "list", _PATTERNS,
           note="on top of VCS folders, virtual environments, caches and builds; `vendor` matches any "
                "folder so named, `third_party/*` is anchored at the configuration file's directory"),
    Option("respect-gitignore", as_bool, "skip files git ignores", "true", "switch"),
    Option("entry-points", as_list, "globs of qualified names analysed as compiled entry points",
           '["*.train_step", "mypkg.aug.Mixup.__call__"]', "list", _PATTERNS),
    Option("max-file-memory", as_megabytes, "MB of memory the parse of one file may take (0: no limit)", "400",
           metavar="MB",
           note="estimated from its tokens and their nesting before parsing; a file over it is reported "
                "as DYN001 and not analysed (generated code of a few MB on one line needs gigabytes)"),
)

BY_KEY = {o.key: o for o in OPTIONS}


def dynamo_config(settings: Settings) -> dict[str, Any]:
    """The ``torch._dynamo.config`` values the settings mirror; a list only when it is set (an empty
    one would replace Dynamo's own)."""
    out: dict[str, Any] = {}
    for option in OPTIONS:
        value = getattr(settings, option.field)
        if option.dynamo and (isinstance(value, bool) or value):
            out[option.dynamo] = list(value) if isinstance(value, tuple) else value
    return out


def find(raw_key: str) -> Option | None:
    """The option a configuration key names (``target_torch`` and ``Target-Torch`` included)."""
    return BY_KEY.get(raw_key.replace("_", "-").lower())


def unknown_key_message(raw_key: str) -> str:
    key = raw_key.replace("_", "-").lower()
    close = difflib.get_close_matches(key, list(BY_KEY), n=1)
    tip = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown option {raw_key!r} (known: {', '.join(sorted(BY_KEY))}){tip}"


def add_arguments(parser: argparse._ActionsContainer, command: str) -> None:
    """The options ``command`` takes, as ``--key`` arguments that leave unset ones ``None``.
    Values stay text: :func:`dynalint.config.resolver.resolve` checks them with the table's parsers."""
    for option in OPTIONS:
        if command not in option.commands:
            continue
        if option.form == "switch":
            parser.add_argument(f"--{option.key}", dest=option.dest, action=argparse.BooleanOptionalAction,
                                default=None, help=option.command_help())
        else:
            parser.add_argument(f"--{option.key}", dest=option.dest, metavar=option.metavar or "VALUE",
                                default=None, help=option.command_help())
