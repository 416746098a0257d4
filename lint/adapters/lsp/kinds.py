"""The code-action kinds and titles the language server offers (no engine import: the server
advertises them in its answer to ``initialize``)."""
from __future__ import annotations

from lsprotocol import types

FIX_ALL_TITLE = "Fix all dynalint issues in this file"
FIX_ALL_UNSAFE_TITLE = "Fix all dynalint issues in this file (unsafe)"
#: Kinds for editors' "source action" menus and fix-on-save.  The unsafe variant
#: is deliberately outside ``source.fixAll``, so fix-on-save never applies it.
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.dynalint"
FIX_ALL_UNSAFE_KIND = f"{types.CodeActionKind.Source.value}.dynalint.fixAllUnsafe"
QUICKFIX = types.CodeActionKind.QuickFix.value
#: The key of a "fix all" action's ``data``: what ``codeAction/resolve`` needs to compute its edit.
FIX_ALL_DATA = "dynalintFixAll"
