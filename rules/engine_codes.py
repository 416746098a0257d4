"""DYN0xx: what the engine reports about a file itself (it does not parse, it cannot be read) and
about its suppression comments.  Selected, ignored and documented like the rules."""
from __future__ import annotations

from dynalint.rules.base import EngineCode, Example, register


@register
class InvalidSyntax(EngineCode):
    code = "DYN000"
    name = "syntax-error"
    summary = "The file does not parse; it is reported and not analysed."
    rationale = """
        A file that is not valid Python cannot be analysed, so nothing in it would be reported: the
        error is reported instead of silently passing the file (the message and position are
        CPython's).
    """
    fix = "Fix the syntax error and check again."
    INVALID = [Example("def forward(self, x:\n    return x\n", dynamo=False)]
    VALID = [Example("def forward(self, x):\n    return x\n", dynamo=False)]


@register
class IoError(EngineCode):
    code = "DYN001"
    name = "io-error"
    summary = "The file cannot be read or decoded (ruff's E902); it is reported and not analysed."
    rationale = """
        A path that does not exist, a file without read permission, or bytes that are not valid in the
        file's encoding (UTF-8 unless a PEP 263 `# -*- coding: ... -*-` line says otherwise) would
        otherwise vanish from the report: CI would pass a file nobody checked.
    """
    fix = """
        Fix the path or the permissions, or save the file in UTF-8 (or declare its encoding on the first
        or second line).
    """


@register
class ConfigurationError(EngineCode):
    code = "DYN002"
    name = "configuration-error"
    summary = "The configuration cannot be used (reported by the flake8 plugin; the CLI exits with status 2)."
    rationale = """
        flake8 has no channel for a plugin's configuration errors. Rather than silently checking with
        default settings, the plugin reports the error on the first line of each file it checks.
    """
    fix = "Correct the `[tool.dynalint]` (or `[dynalint]`) section the message names."


@register
class UnusedNoqa(EngineCode):
    code = "DYN003"
    name = "unused-noqa"
    kind = "warning"  # opt-in: selected only by its full code (settings.OPT_IN_CODES)
    summary = "A `# noqa: DYN...` comment suppresses nothing (opt-in, like ruff's RUF100)."
    rationale = """
        A suppression left behind after the code was fixed hides the next real finding on that line.
        Only dynalint codes are considered (other tools' codes in the same comment are left alone), and
        only codes that are selected. Opt-in: select it by its full code (`extend-select = ["DYN003"]`
        or `--extend-select DYN003`); a prefix such as `DYN` does not enable it.
    """
    fix = "Remove the code from the comment (or the whole comment when nothing is left)."
    INVALID = [Example("""
        import torch

        @torch.compile
        def f(x):
            return x * 2  # noqa: DYN101
    """, dynamo=False, settings={"select": ["DYN003"]})]
    VALID = [Example("""
        import torch

        @torch.compile
        def f(x):
            if x.sum() > 0:  # noqa: DYN101
                return x * 2
            return x
    """, dynamo=False, settings={"select": ["DYN003"]})]
