"""The rules reference (``docs/rules.md``), generated from the rule and fixer classes.

Generated rather than written so that it cannot drift from what ``check`` and
``fix`` do: the test suite regenerates it and compares.  The same sections are
the help text of SARIF rules and of the language server's hover.

Regenerate with ``python -m dynalint.adapters.rules_reference --output docs/rules.md``.
"""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
from typing import Sequence

from dynalint.fixers.support.base import Fixer, fixers_for
from dynalint.config.options import BY_KEY
from dynalint.rules.base import Example, Rule, all_codes, get_rule

#: Where the rendered reference is published; rule links are anchors in it.
DOCS_URL = "https://github.com/dynalint/dynalint/blob/main/docs/rules.md"
DOCS_PATH = "docs/rules.md"
REGENERATE = f"python -m dynalint.adapters.rules_reference --output {DOCS_PATH}"

_KIND_WORDS = {"graph-break": "graph break", "recompile": "recompile hazard"}


def anchor(code: str) -> str:
    """The heading anchor of a rule's section (headings are the bare code, so anchors stay stable)."""
    return code.lower()


def rule_url(code: str) -> str:
    return f"{DOCS_URL}#{anchor(code)}"


def rst_to_markdown(text: str) -> str:
    """Fixer docstrings use reStructuredText literals (````x````, ``Before::`` blocks): make them Markdown."""
    out: list[str] = []
    lines = textwrap.dedent(text).strip("\n").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and not line.strip().startswith(".."):
            head = line.rstrip()[:-2].rstrip()
            out.append(head + ":" if head else "")
            i += 1
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```python", *textwrap.dedent("\n".join(block)).strip("\n").splitlines(), "```", ""]
            continue
        out.append(line.replace("``", "`"))
        i += 1
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _paragraphs(text: str) -> str:
    return textwrap.dedent(text).strip()


def _example(example: Example) -> list[str]:
    lines = ["```python", example.source.rstrip(), "```"]
    if example.settings:
        options = ", ".join(f"`{k.replace('_', '-')} = {_toml(v)}`"
                            for k, v in sorted(example.settings.items()))
        lines = [f"With {options}:", ""] + lines
    return lines


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def code_span(text: str) -> str:
    """Inline code that may itself contain backticks."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def gb_description(rule: type[Rule]) -> str:
    if rule.gb_types:
        return ", ".join(f"{code_span(g.text)} ({g.id})" for g in rule.gb_types)
    if rule.kind == "recompile":
        return "none: no graph break; the hazard shows up as recompiles (`TORCH_LOGS=recompiles`)"
    return "none"


def fixer_summary(fixer: type[Fixer]) -> str:
    how = "applied by `dynalint fix`" if fixer.safety == "safe" else \
        "applied by `dynalint fix --unsafe-fixes` only"
    return f"`{fixer.name}` ({fixer.safety}, {how}): {fixer.summary.strip()}"


def fixer_rules(fixer: type[Fixer]) -> str:
    """The rules a fixer serves, by code and name (``Fixes DYN102 (`scalar-extraction`).``)."""
    served = [(code, get_rule(code)) for code in fixer.codes]
    return "Fixes " + ", ".join(f"{code} (`{rule.name}`)" if rule is not None else code
                                for code, rule in served) + "."


def fixer_section(fixer: type[Fixer], level: int = 4, *, summary: bool = True) -> str:
    """One fixer's documentation: the rules it serves, what it rewrites, why that keeps behaviour (its
    assumptions), an example."""
    lines = [f"{'#' * level} `{fixer.name}` ({fixer.safety})", "", fixer_rules(fixer), ""]
    if summary:
        lines += [fixer_summary(fixer), ""]
    lines += [rst_to_markdown(fixer.reasoning), ""]
    shows_example = "::" in fixer.reasoning  # the reasoning already has a before/after block
    for ex in fixer.EXAMPLES[:0 if shows_example else 1]:
        lines += ["Before:", "", "```python", ex.before_source.rstrip(), "```", "", "After:", "",
                  "```python", ex.after_source.rstrip(), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Options")


def option_doc(key: str) -> str:
    """What a configuration key does, for the rules' "Options" sections (from the option table)."""
    option = BY_KEY[key]
    return option.doc or option.help


def rule_section(rule: type[Rule], level: int = 2) -> str:
    """One rule's documentation (Markdown), in ruff's layout.  The only renderer: ``dynalint rule``,
    the language server's hover, ``docs/rules.md`` and SARIF help all use it."""
    h = "#" * (level + 1)
    fixers = fixers_for(rule.code)
    lines = [f"{'#' * level} {rule.code}", "",
             f"**`{rule.name}`** · {_KIND_WORDS.get(rule.kind, rule.kind)}" + (
                 f" · Dynamo graph-break type: {gb_description(rule)}" if rule.kind in _KIND_WORDS else ""), "",
             f"{h} What it does", "", _paragraphs(rule.summary), "",
             f"{h} Why is this bad?", "", _paragraphs(rule.rationale), ""]
    if rule.INVALID:
        lines += [f"{h} Example", "", *_example(rule.INVALID[0]), ""]
    lines += [f"{h} Use instead", "", _paragraphs(rule.fix), ""]
    if rule.VALID:
        lines += [*_example(rule.VALID[0]), ""]
    lines += [f"{h} Fix safety", ""]
    if fixers:
        lines += [f"- {fixer_summary(f)}" for f in fixers] + [""]
        lines += [fixer_section(f, level + 2, summary=False) for f in fixers]
    else:
        lines += ["No automatic fix: rewrite by hand as above, or suppress the line with "
                  f"`# noqa: {rule.code}`." if not rule.code.startswith("DYN0") else "No automatic fix.", ""]
    lines += [f"{h} Options", ""]
    if rule.options:
        lines += [f"- `{key}`: {option_doc(key)}" for key in rule.options] + [""]
    else:
        lines += ["None beyond selection (`select`, `ignore`, `per-file-ignores`)" +
                  (" and `scope`." if rule.kind in _KIND_WORDS else "."), ""]
    return "\n".join(lines).rstrip() + "\n"


def documentation(item: type[Rule] | type[Fixer]) -> str:
    """A rule's or a fixer's page (``dynalint rule CODE|NAME``): its section of the reference."""
    if isinstance(item, type) and issubclass(item, Rule):
        return rule_section(item)
    return fixer_section(item, level=2)


def _table(rules: list[type[Rule]]) -> list[str]:
    lines = ["| code | name | kind | Dynamo graph-break type | automatic fix |", "|---|---|---|---|---|"]
    for r in rules:
        gb = ", ".join(g.id for g in r.gb_types) or "-"
        fixes = ", ".join(f"`{f.name}` ({f.safety})" for f in fixers_for(r.code)) or "-"
        gb = gb if r.kind in _KIND_WORDS else "-"
        lines.append(f"| [{r.code}](#{anchor(r.code)}) | `{r.name}` | {r.kind} | {gb} | {fixes} |")
    return lines


def render() -> str:
    """The whole reference, deterministic for a given set of rules and fixers."""
    rules = all_codes()
    lines = [
        "# dynalint rules",
        "",
        f"<!-- Generated from the rule and fixer classes by `{REGENERATE}`; do not edit. -->",
        "",
        "Each rule predicts one way `torch.compile` (TorchDynamo) breaks the graph or recompiles. "
        "Graph-break rules name the `Gb_type` of torch's graph-break registry (with its `GBxxxx` id) "
        "that Dynamo reports there; recompile rules describe guards that fail. `DYN0xx` codes are the "
        "engine's: a file that does not parse or cannot be read, a configuration error, an unused `noqa`.",
        "",
        "Fix safety: **safe** fixes give the same results for every input the original code accepted "
        "and are applied by `dynalint fix`; **unsafe** fixes are correct under the stated assumptions "
        "and are applied only with `dynalint fix --unsafe-fixes` (the language server labels them "
        "\"(unsafe)\").",
        "",
        *_table(rules),
        "",
    ]
    for r in rules:
        lines += [rule_section(r)]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynalint.adapters.rules_reference",
                                     description="Generate the rules reference.")
    parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: standard output)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if FILE differs from the generated text (writes nothing)")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.output:
            parser.error("--check needs --output FILE")
        try:
            with open(args.output, encoding="utf-8") as fh:
                current = fh.read()
        except OSError as exc:
            print(f"dynalint: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        if current != text:
            print(f"dynalint: {args.output} is out of date; run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except OSError as exc:
            print(f"dynalint: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
