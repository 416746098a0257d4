"""The README's lists of options, generated from the option table (:mod:`dynalint.config.options`).

Two places list them: the usage block's ``COMMON OPTIONS`` (the flags) and the example
configuration under "Configuration" (every key, with what it does and its default).  The test suite
regenerates both and compares; ``python -m dynalint.adapters.option_docs README.md`` rewrites them.
"""
from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Sequence

from dynalint.config.options import OPTIONS, SETTINGS_COMMANDS, Option
from dynalint.config.settings import Settings

README = "README.md"
REGENERATE = f"python -m dynalint.adapters.option_docs {README}"
USAGE_HEAD = "COMMON OPTIONS (override the configuration file):\n"
USAGE_END = "every command:"
CONFIG_HEAD = "## Configuration\n"


def _flag(option: Option) -> str:
    if option.form == "switch":
        text = f"[--[no-]{option.key}]"
    else:
        text = f"[--{option.key} {option.metavar or 'VALUE'}]"
    if set(option.commands) != set(SETTINGS_COMMANDS):
        text += f" ({', '.join(option.commands)} only)"
    return text


def usage_options() -> str:
    """The flags every command that reads settings takes, wrapped as the usage block is."""
    words = ["[--config FILE]"] + [_flag(o) for o in OPTIONS if o.commands]
    return "\n".join(textwrap.wrap(" ".join(words), width=104, initial_indent="    ",
                                   subsequent_indent="    ", break_on_hyphens=False, break_long_words=False)) + "\n"


def _changes(option: Option) -> list[str]:
    from dynalint.rules.base import all_rules

    return [r.code for r in all_rules() if option.key in r.options]


def configuration_example() -> str:
    """``[tool.dynalint]`` with every key: what it does and its default (a comment), an example value."""
    lines = ["[tool.dynalint]"]
    for option in OPTIONS:
        comment = option.help + (f"; {option.note}" if option.note else "")
        codes = _changes(option)
        if codes:
            comment += f"; changes {', '.join(codes)}"
        if not option.extends:
            comment += f" (default: {option.default or option.show(getattr(Settings(), option.field))})"
        lines += textwrap.wrap(comment, width=100, initial_indent="# ", subsequent_indent="# ",
                               break_on_hyphens=False, break_long_words=False)
        lines.append(f"{option.key} = {option.example}")
    return "\n".join(lines) + "\n"


def _replace(text: str, start: str, end: str, new: str) -> str:
    """``text`` with what lies between the first ``start`` and the next ``end`` after it replaced."""
    head = text.index(start) + len(start)
    tail = text.index(end, head)
    return text[:head] + new + text[tail:]


def update_readme(text: str) -> str:
    """The README with both lists regenerated (raises ValueError when a list's place is not found)."""
    text = _replace(text, USAGE_HEAD, USAGE_END, usage_options())
    config = text.index(CONFIG_HEAD)
    return text[:config] + _replace(text[config:], "```toml\n", "```", configuration_example())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynalint.adapters.option_docs",
                                     description="Regenerate the README's lists of options.")
    parser.add_argument("readme", nargs="?", default=README, help=f"the README (default: {README})")
    parser.add_argument("--check", action="store_true", help="exit 1 if it is out of date (writes nothing)")
    args = parser.parse_args(argv)
    try:
        with open(args.readme, encoding="utf-8") as fh:
            current = fh.read()
        text = update_readme(current)
    except OSError as exc:
        print(f"dynalint: {args.readme}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ValueError:
        print(f"dynalint: {args.readme}: no {USAGE_HEAD.strip()!r} block or {CONFIG_HEAD.strip()!r} "
              "section with a ```toml block", file=sys.stderr)
        return 2
    if args.check:
        if text != current:
            print(f"dynalint: {args.readme} lists options that are out of date; run `{REGENERATE}`",
                  file=sys.stderr)
            return 1
        return 0
    if text != current:
        with open(args.readme, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
