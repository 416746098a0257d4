"""docs/rules.md is generated from the rule and fixer classes and must match them."""
from __future__ import annotations

import os
import re

from dynalint.adapters import rules_reference as docs
from dynalint.fixers.support.base import fixers_for
from dynalint.rules.base import all_codes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = os.path.join(ROOT, docs.DOCS_PATH)


def test_committed_reference_is_current():
    with open(COMMITTED, encoding="utf-8") as fh:
        committed = fh.read()
    assert committed == docs.render(), f"{docs.DOCS_PATH} is out of date: run `{docs.REGENERATE}`"


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (DYN\d{3})$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_rule_has_a_complete_section():
    sections = _sections(docs.render())
    rules = all_codes()
    assert sorted(sections) == [r.code for r in rules]
    for rule in rules:
        section = sections[rule.code]
        assert f"**`{rule.name}`**" in section
        headings = ["### What it does", "### Why is this bad?", "### Use instead", "### Fix safety", "### Options"]
        if rule.INVALID:
            headings.append("### Example")
        for heading in headings:
            assert heading in section, (rule.code, heading)
        for gb in rule.gb_types:
            assert gb.id in section
        if rule.kind == "recompile" and not rule.gb_types:
            assert "no graph break" in section
        if rule.INVALID and not rule.code.startswith("DYN0"):
            assert rule.INVALID[0].source.strip() in section
        fixers = fixers_for(rule.code)
        for fixer in fixers:
            assert f"`{fixer.name}` ({fixer.safety}" in section
        if not fixers:
            assert "No automatic fix" in section
        for option in rule.options:
            assert f"`{option}`" in section.split("### Options")[1]


def test_check_mode_reports_a_stale_file(tmp_path, capsys):
    target = tmp_path / "rules.md"
    assert docs.main(["--output", str(target)]) == 0
    assert docs.main(["--check", "--output", str(target)]) == 0
    target.write_text(target.read_text() + "edited\n")
    assert docs.main(["--check", "--output", str(target)]) == 1
    assert docs.REGENERATE in capsys.readouterr().err


def test_rst_literals_become_markdown():
    text = """
        Turns ``x[m]`` into a masked sum.

        Before::

            y = x[m].sum()

        Done.
    """
    md = docs.rst_to_markdown(text)
    assert md == "Turns `x[m]` into a masked sum.\n\nBefore:\n\n```python\ny = x[m].sum()\n```\n\nDone."


def test_one_renderer_serves_every_interface(capsys):
    """`dynalint rule`, docs/rules.md, SARIF help and fixer pages are the same text."""
    from dynalint.adapters.cli import main
    from dynalint.adapters.sarif import sarif_log

    reference = docs.render()
    descriptors = {d["id"]: d for d in sarif_log([])["runs"][0]["tool"]["driver"]["rules"]}
    for rule in all_codes():
        section = docs.rule_section(rule)
        assert section in reference
        assert main(["rule", rule.code]) == 0
        assert capsys.readouterr().out == section + "\n"
        assert descriptors[rule.code]["help"]["markdown"] == section
        for fixer in fixers_for(rule.code):
            assert docs.fixer_section(fixer, 4, summary=False) in section
            assert docs.documentation(fixer) == docs.fixer_section(fixer, 2)
    assert main(["rule", "masked-reduction"]) == 0
    assert "## `masked-reduction` (unsafe)" in capsys.readouterr().out


def test_every_fixer_page_names_the_rules_it_serves():
    """``dynalint rule keep-tensor`` says which findings the fixer rewrites, by code and rule name."""
    from dynalint.fixers.support.base import all_fixers
    from dynalint.rules.base import get_rule

    for fixer in all_fixers():
        page = docs.documentation(fixer)
        for code in fixer.codes:
            assert f"{code} (`{get_rule(code).name}`)" in page.split("\n\n")[1], (fixer.name, code)
