"""``dynalint lsp`` driven over stdio the way an editor drives it."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from dynalint.engine.fixing import apply_text_edits, diagnostics_with_fixes, fix_source  # noqa: E402
from dynalint.adapters.lsp.kinds import FIX_ALL_KIND, FIX_ALL_TITLE, FIX_ALL_UNSAFE_TITLE  # noqa: E402
from dynalint.config.settings import Settings  # noqa: E402
from lsp_client import Editor, utf16_len  # noqa: E402

MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # positive inputs are doubled
                x = x * 2
            y = x[x > 0].sum()  # noqa: E501
            tag = ("😀", x.max().item())
            print(y)
            return y, tag
""").lstrip()

CONFIG = '[tool.dynalint]\nignore = ["DYN105"]\n'


def by_code(diagnostics: list[types.Diagnostic]) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in diagnostics}


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, 120))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def test_editor_session(project: Path) -> None:
    """Open, diagnostics, code actions, apply them, edit, save, hover, close, shut down."""

    async def session() -> None:
        editor = Editor(project)
        try:
            init = await editor.start()
            caps = init.capabilities
            assert caps.position_encoding == types.PositionEncodingKind.Utf16
            assert caps.hover_provider
            assert isinstance(caps.code_action_provider, types.CodeActionOptions)
            assert FIX_ALL_KIND in caps.code_action_provider.code_action_kinds
            assert caps.code_action_provider.resolve_provider

            uri = editor.open(project / "model.py")
            diagnostics = by_code(await editor.diagnostics(uri, 1))
            # DYN105 (print) is ignored by pyproject.toml, as `dynalint check` would
            assert set(diagnostics) == {"DYN101", "DYN104", "DYN102"}
            d101, d104, d102 = diagnostics["DYN101"], diagnostics["DYN104"], diagnostics["DYN102"]
            assert d101.severity == types.DiagnosticSeverity.Warning
            assert d101.source == "dynalint"
            assert d101.code_description is not None
            assert d101.code_description.href.endswith("rules.md#dyn101")
            assert (d101.range.start.line, d101.range.start.character) == (6, 11)
            # columns are UTF-16 code units: the emoji before `.item()` counts twice
            line = MODEL.splitlines()[9]
            start = line.index("x.max()")
            assert (d102.range.start.line, d102.range.start.character) == (9, utf16_len(line[:start]))
            assert d102.range.end.character == utf16_len(line[:line.index(")", start + 7) + 1])

            # the quick-fixes carry exactly the edits of `dynalint fix`
            settings = Settings(ignore=("DYN105",))
            expected = {d.code: d for d in diagnostics_with_fixes(MODEL, "model.py", settings)}
            actions = await editor.code_actions(uri, d101.range, [d101])
            titles = [a.title for a in actions]
            fix101 = expected["DYN101"].fix
            assert fix101 is not None and fix101.safety == "unsafe"
            # no fix is safe for every input, so "fix all" is only offered as unsafe
            assert titles == [f"DYN101: {fix101.description} (unsafe)",
                              "Ignore DYN101 for this line (# noqa: DYN101)", FIX_ALL_UNSAFE_TITLE]
            assert list(actions[0].diagnostics or []) == [d101]
            assert actions[0].kind == types.CodeActionKind.QuickFix
            version = editor.apply(actions[0].edit)
            assert editor.texts[uri] == apply_text_edits(MODEL, fix101.edits)
            after_fix = by_code(await editor.diagnostics(uri, version))
            assert "DYN101" not in after_fix and "DYN104" in after_fix

            # "ignore": extends the existing `# noqa: E501` instead of adding a second comment
            d104 = after_fix["DYN104"]
            actions = {a.title: a for a in await editor.code_actions(uri, d104.range, [d104])}
            fix104 = expected["DYN104"].fix
            assert fix104 is not None and fix104.safety == "unsafe"
            assert set(actions) == {f"DYN104: {fix104.description} (unsafe)",
                                    "Ignore DYN104 for this line (# noqa: DYN104)", FIX_ALL_UNSAFE_TITLE}
            version = editor.apply(actions["Ignore DYN104 for this line (# noqa: DYN104)"].edit)
            assert "y = x[x > 0].sum()  # noqa: E501,DYN104\n" in editor.texts[uri]
            after_noqa = by_code(await editor.diagnostics(uri, version))
            assert set(after_noqa) == {"DYN102"}

            # "ignore" on a line without a comment, after an astral character
            d102 = after_noqa["DYN102"]
            actions = {a.title: a for a in await editor.code_actions(uri, d102.range, [d102])}
            assert set(actions) == {"Ignore DYN102 for this line (# noqa: DYN102)"}
            version = editor.apply(actions["Ignore DYN102 for this line (# noqa: DYN102)"].edit)
            assert '        tag = ("😀", x.max().item())  # noqa: DYN102\n' in editor.texts[uri]
            assert await editor.diagnostics(uri, version) == []

            # hover shows the rule's documentation
            editor.replace_all(uri, MODEL)
            diagnostics = by_code(await editor.diagnostics(uri, editor.versions[uri]))
            hover = await editor.hover(uri, diagnostics["DYN101"].range.start)
            assert hover is not None and isinstance(hover.contents, types.MarkupContent)
            assert hover.contents.kind == types.MarkupKind.Markdown
            from dynalint.adapters.rules_reference import rule_section
            from dynalint.rules.base import get_rule

            # the same text as `dynalint rule DYN101` and docs/rules.md, one heading level down
            assert rule_section(get_rule("DYN101"), level=3).strip() in hover.contents.value
            assert "#### What it does" in hover.contents.value
            assert "branch-to-where" in hover.contents.value
            assert await editor.hover(uri, types.Position(line=0, character=0)) is None

            # fix all (unsafe) rewrites like `dynalint fix --unsafe-fixes`; there is no safe fix to apply
            actions = {a.title: a for a in await editor.code_actions(uri, diagnostics["DYN102"].range)}
            safe = fix_source(MODEL, "model.py", Settings(ignore=("DYN105",)))
            unsafe = fix_source(MODEL, "model.py", Settings(ignore=("DYN105",)), unsafe=True)
            assert safe.source == MODEL != unsafe.source
            assert FIX_ALL_TITLE not in actions
            origin = types.Position(line=0, character=0)
            top = types.Range(start=origin, end=origin)
            source_actions = await editor.code_actions(uri, top, only=[types.CodeActionKind.SourceFixAll])
            # fix-on-save ("source.fixAll") never applies unsafe fixes
            assert [a.title for a in source_actions] == []
            actions = {a.title: a for a in await editor.code_actions(uri, diagnostics["DYN102"].range)}
            # "fix all" is computed when picked (codeAction/resolve), not with the menu
            assert actions[FIX_ALL_UNSAFE_TITLE].edit is None
            version = editor.apply((await editor.resolve(actions[FIX_ALL_UNSAFE_TITLE])).edit)
            assert editor.texts[uri] == unsafe.source
            remaining = by_code(await editor.diagnostics(uri, version))
            assert "DYN101" not in remaining and "DYN104" not in remaining

            # edits are debounced: a burst of changes is checked once, on the last text
            before = editor.publications(uri)
            versions = [editor.replace_all(uri, MODEL.replace("x * 2", f"x * {i}")) for i in range(3, 7)]
            assert set(by_code(await editor.diagnostics(uri, versions[-1], after=before))) == \
                {"DYN101", "DYN104", "DYN102"}
            published = [p.version for p in editor.published[uri][before:]]
            assert published == [versions[-1]]

            # saving re-reads the configuration
            (project / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN101"]\n')
            before = editor.publications(uri)
            editor.save(uri)
            assert set(by_code(await editor.diagnostics(uri, after=before))) == {"DYN104", "DYN102", "DYN105"}

            # a file that does not parse: one error diagnostic, and nothing to suppress
            broken = project / "broken.py"
            broken.write_text("def f(:\n    pass\n")
            broken_uri = editor.open(broken)
            [syntax] = await editor.diagnostics(broken_uri, 1)
            assert syntax.code == "DYN000" and syntax.severity == types.DiagnosticSeverity.Error
            assert await editor.code_actions(broken_uri, syntax.range, [syntax]) == []
            # ... documented like a rule: linked and explained on hover
            assert syntax.code_description is not None and syntax.code_description.href.endswith("#dyn000")
            hover = await editor.hover(broken_uri, syntax.range.start)
            assert hover is not None and "syntax-error" in hover.contents.value

            # closing clears the document's diagnostics
            before = editor.publications(uri)
            editor.close(uri)
            assert await editor.diagnostics(uri, after=before) == []
            assert editor.messages == []
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def test_configuration_error_is_shown_not_raised(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.dynalint]\nscope = "everything"\n')

    async def session() -> None:
        editor = Editor(project, document_changes=False, resolve=False)
        try:
            await editor.start()
            uri = editor.open(project / "model.py")
            assert await editor.diagnostics(uri, 1) == []
            for _ in range(100):
                if editor.messages:
                    break
                await asyncio.sleep(0.05)
            [message] = editor.messages
            assert message.type == types.MessageType.Error
            assert "configuration error" in message.message and "scope" in message.message
            # fixed on disk and saved: diagnostics come back
            (project / "pyproject.toml").write_text(CONFIG)
            before = editor.publications(uri)
            editor.save(uri)
            assert set(by_code(await editor.diagnostics(uri, after=before))) == {"DYN101", "DYN104", "DYN102"}
            # a client without versioned edits gets plain `changes`
            [d101] = [d for d in await editor.diagnostics(uri, after=before) if d.code == "DYN101"]
            actions = await editor.code_actions(uri, d101.range, [d101])
            assert all(a.edit is not None and a.edit.document_changes is None and a.edit.changes for a in actions)
            # ... and, unable to resolve actions, "fix all" with its edit
            fix_all = [a for a in actions if a.title == FIX_ALL_UNSAFE_TITLE]
            assert fix_all and fix_all[0].data is None
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_cli_does_not_import_pygls() -> None:
    result = _python("import sys; from dynalint.adapters.cli import build_parser; build_parser(); "
                     "print(sorted(m for m in sys.modules "
                     "if m.split('.')[0] in ('pygls', 'lsprotocol', 'torch')))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_parser_and_the_server_start_without_the_engine() -> None:
    """`dynalint --version` and the answer to `initialize` do not wait for libcst, the rules and the
    fixers (the server imports them on its analysis thread)."""
    result = _python("import sys; from dynalint.adapters.cli import build_parser; build_parser(); "
                     "import dynalint.adapters.lsp.server; "
                     "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst' "
                     "or m.startswith(('dynalint.engine.pipeline', 'dynalint.engine.fixing', 'dynalint.rules'))))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_missing_pygls_says_how_to_install() -> None:
    result = _python("import sys; sys.modules['pygls'] = None; from dynalint.adapters.cli import main; "
                     "sys.exit(main(['lsp']))")
    assert result.returncode == 2
    assert result.stderr.strip() == "dynalint: the language server needs pygls: pip install 'dynalint[lsp]'"
    assert "Traceback" not in result.stderr


def test_each_version_is_analysed_once(project: Path, monkeypatch) -> None:
    """Diagnostics, quick-fixes and both "fix all" texts of one version share one analysis."""
    import dynalint.engine.pipeline
    import dynalint.engine.fixing
    import dynalint.adapters.lsp.analysis
    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.documents import Documents

    analysed: list[str] = []
    real = dynalint.engine.pipeline.analyse

    def counting(source, *args, **kwargs):
        analysed.append(source)
        return real(source, *args, **kwargs)

    for module in (dynalint.engine.pipeline, dynalint.engine.fixing, dynalint.adapters.lsp.analysis):
        monkeypatch.setattr(module, "analyse", counting, raising=False)
    monkeypatch.chdir(project)
    documents = Documents(build_parser().parse_args(["lsp"]))
    checked = documents.analyse((project / "model.py").as_uri(), 1, MODEL)
    with_fixes = checked.with_fixes(checked.diagnostics)
    fixed = {unsafe: checked.fixed(unsafe) for unsafe in (False, True)}
    assert analysed.count(MODEL) == 1
    assert {d.code for d in with_fixes if d.fix is not None} >= {"DYN101", "DYN104"}
    assert checked.safeties() == {"unsafe"}
    settings = Settings(ignore=("DYN105",))
    assert fixed[False] == fix_source(MODEL, "model.py", settings).source  # no fix is safe for every input
    assert fixed[True] == fix_source(MODEL, "model.py", settings, unsafe=True).source != MODEL
    # the fixes of a range: only its diagnostics', the same as those of the whole file
    [d101] = [d for d in checked.diagnostics if d.code == "DYN101"]
    [only] = checked.with_fixes([d101])
    assert only.fix == next(d.fix for d in diagnostics_with_fixes(MODEL, "model.py", settings) if d.code == "DYN101")


def test_a_quick_fix_menu_on_a_large_file_computes_its_range_only(tmp_path: Path) -> None:
    """Hundreds of fixable diagnostics: the menu on one of them is answered without fixing the others
    (computing every fix of this file takes minutes), and "fix all" waits until it is picked."""
    from lsp_client import synthetic_model

    path = tmp_path / "model.py"
    path.write_text(synthetic_model(1500))

    async def session() -> None:
        editor = Editor(tmp_path)
        try:
            await editor.start("--debounce", "0")
            uri = editor.open(path)
            diagnostics = await editor.diagnostics(uri, 1)
            assert len(diagnostics) > 300
            target = next(d for d in diagnostics[len(diagnostics) // 2:] if d.code == "DYN101")
            actions = await editor.code_actions(uri, target.range, [target])  # within the client's timeout
            titles = [a.title for a in actions]
            assert titles[0].startswith("DYN101: ") and titles[-1] == FIX_ALL_UNSAFE_TITLE
            assert actions[0].edit is not None and actions[-1].edit is None
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def test_the_analysis_process_collects_garbage_while_it_waits(tmp_path, monkeypatch):
    """A collection walks every tree the process keeps: the analysis process makes none during an answer,
    one when it waits after answering, and one after EDITS_PER_COLLECTION answers it had no time to wait
    between."""
    import gc

    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.documents import EDITS_PER_COLLECTION, Documents
    from dynalint.core.source import Collections

    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *args: collected.append(1) or 0)
    monkeypatch.chdir(tmp_path)
    uri = (tmp_path / "model.py").as_uri()
    collections = Collections(every=EDITS_PER_COLLECTION).start()
    try:
        documents = Documents(build_parser().parse_args(["lsp"]), collections=collections)
        documents.report(uri, 1, MODEL)
        assert not gc.isenabled() and collected == []
        while documents.idle():
            pass
        assert collected == [1]
        for version in range(2, 2 + EDITS_PER_COLLECTION):
            documents.report(uri, version, MODEL + f"\n# edit {version}\n")
        assert collected == [1, 1]  # the 20th answer in a row collected
    finally:
        collections.__exit__()
    assert gc.isenabled()
