"""SARIF 2.1.0 output, for code-scanning uploads (GitHub, Azure DevOps, IDE viewers).

Rules carry their reference section as help, so a code-scanning alert explains
itself without leaving the review page.  Output is deterministic (no
timestamps), so the same tree gives the same file.
"""
from __future__ import annotations

import os
import textwrap
from typing import Any
from urllib.parse import quote

from dynalint import __version__
from dynalint.core.diagnostics import Diagnostic
from dynalint.adapters.rules_reference import DOCS_URL, gb_description, rule_section, rule_url
from dynalint.engine.pipeline import IO_ERROR_CODE
from dynalint.fixers.support.base import fixers_for
from dynalint.rules.base import Rule, all_codes

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"

#: SARIF levels: graph breaks are certain, recompiles depend on how the code is called.
LEVELS = {"graph-break": "warning", "recompile": "note", "error": "error", "warning": "warning"}


def artifact_uri(path: str) -> dict[str, str]:
    """A relative path stays relative to the source root; an absolute one becomes a file URI.  A
    name that is not UTF-8 (read as surrogate escapes) is quoted as its original bytes."""
    if os.path.isabs(path):
        return {"uri": _as_file_uri(path)}
    norm = os.path.normpath(path).replace(os.sep, "/")
    return {"uri": quote(norm, safe="/-._~", errors="surrogateescape"), "uriBaseId": SRCROOT}


def _as_file_uri(path: str) -> str:
    norm = os.path.normpath(path).replace(os.sep, "/")
    if not norm.startswith("/"):  # a Windows drive path
        norm = "/" + norm
    return "file://" + quote(norm, safe="/-._~:", errors="surrogateescape")


def _rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    fixers = fixers_for(rule.code)
    help_text = rule_section(rule, level=2)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary.strip()},
        "fullDescription": {"text": textwrap.dedent(rule.rationale).strip()},
        "help": {"text": help_text, "markdown": help_text},
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": {"level": LEVELS[rule.kind]},
        "properties": {
            "kind": rule.kind,
            "gb_ids": [g.id for g in rule.gb_types],
            "gb_types": [g.text for g in rule.gb_types],
            "graph_break_type": gb_description(rule),
            "fixes": [{"name": f.name, "safety": f.safety} for f in fixers],
            "tags": ["torch.compile", rule.kind] if rule.gb_types or rule.kind in ("graph-break", "recompile")
            else [rule.kind],
            "precision": "high",
        },
    }


def _result(d: Diagnostic, rule_index: dict[str, int]) -> dict[str, Any]:
    message = d.message + (f" Hint: {d.hint}" if d.hint else "")
    region = {"startLine": d.line, "startColumn": d.column, "endLine": max(d.end_line, d.line),
              "endColumn": d.end_column if (d.end_line, d.end_column) > (d.line, d.column) else d.column + 1}
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": LEVELS.get(d.kind, "warning"),
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact_uri(d.path), "region": region}}],
    }
    if d.code in rule_index:
        result["ruleIndex"] = rule_index[d.code]
    properties: dict[str, Any] = {"kind": d.kind}
    if d.gb_id:
        properties["gb_id"] = d.gb_id
        properties["gb_type"] = d.gb_type
    if d.remedy:
        properties["remedy"] = d.remedy
    result["properties"] = properties
    return result


def sarif_log(diagnostics: list[Diagnostic]) -> dict[str, Any]:
    """The SARIF log object for one run of ``check``."""
    descriptors = [_rule_descriptor(r) for r in all_codes()]
    rule_index = {d["id"]: i for i, d in enumerate(descriptors)}
    unread = [d for d in diagnostics if d.code == IO_ERROR_CODE]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "dynalint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": DOCS_URL,
                "rules": descriptors,
            }},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {SRCROOT: {"description": {
                "text": "The directory dynalint was run from; result paths are relative to it."}}},
            "invocations": [{
                "executionSuccessful": not unread,
                # files that could not be read are also tool notifications: the run did not cover them
                "toolExecutionNotifications": [{
                    "level": "error",
                    "message": {"text": f"{d.path}: {d.message}"},
                    "locations": [{"physicalLocation": {"artifactLocation": artifact_uri(d.path)}}],
                    "descriptor": {"id": IO_ERROR_CODE, "index": rule_index[IO_ERROR_CODE]},
                } for d in unread],
            }],
            "results": [_result(d, rule_index) for d in diagnostics],
        }],
    }
