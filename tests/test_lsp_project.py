"""The language server analyses a document as a file of its project, as ``dynalint check .`` does.

The helper's tensor branch is reached only from the other file's ``forward`` (scope ``compiled``):
analysed alone, ``pkg/helpers.py`` has nothing to report.
"""
from __future__ import annotations

import asyncio
import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from dynalint.adapters.cli import main  # noqa: E402
from dynalint.adapters.lsp.kinds import FIX_ALL_UNSAFE_TITLE  # noqa: E402
from helpers import PACKAGE_HELPERS as HELPERS, PACKAGE_MODEL as MODEL  # noqa: E402
from lsp_client import Editor  # noqa: E402


UNCALLED = MODEL.replace("return scale(x)", "return x + 1")


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, 120))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "model.py").write_text(MODEL)
    return tmp_path


def cli_findings(root: Path, monkeypatch) -> list[dict]:
    """``dynalint check . --format json`` in ``root``: the findings in the helper file."""
    monkeypatch.chdir(root)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["check", ".", "--format", "json", "--no-cache"])
    return [d for d in json.loads(out.getvalue()) if os.path.normpath(d["path"]) == os.path.join("pkg", "helpers.py")]


def lines_and_codes(diagnostics: list[types.Diagnostic]) -> list[tuple[int, int, str]]:
    return sorted((d.range.start.line + 1, d.range.start.character + 1, str(d.code)) for d in diagnostics)


def test_an_open_helper_shows_what_check_reports(project: Path, monkeypatch) -> None:
    expected = cli_findings(project, monkeypatch)
    assert [d["code"] for d in expected] == ["DYN101"]  # the scenario matters: alone, the file is clean

    async def session() -> None:
        editor = Editor(project)
        try:
            await editor.start("--debounce", "0")
            uri = editor.open(project / "pkg" / "helpers.py")
            diagnostics = await editor.diagnostics(uri, 1)
            assert lines_and_codes(diagnostics) == sorted((d["line"], d["column"], d["code"]) for d in expected)
            # the quick fix is the one `check --format json` carries: found with the same entries
            [d101] = diagnostics
            actions = await editor.code_actions(uri, d101.range, [d101])
            [quick] = [a for a in actions if a.title.startswith("DYN101: ")]
            assert quick.edit is not None and quick.edit.document_changes
            edits = quick.edit.document_changes[0].edits
            want = expected[0]["fix"]["edits"]
            assert sorted((e.new_text, e.range.start.line + 1, e.range.start.character + 1) for e in edits) \
                == sorted((e["content"], e["location"]["row"], e["location"]["column"]) for e in want)
            # "fix all" on the buffer rewrites the branch too
            [fix_all] = [a for a in actions if a.title == FIX_ALL_UNSAFE_TITLE]
            resolved = await editor.resolve(fix_all)
            assert resolved.edit is not None
            version = editor.apply(resolved.edit)
            assert "torch.where" in editor.texts[uri]
            assert await editor.diagnostics(uri, version) == []
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def test_saving_the_caller_updates_the_open_helper(project: Path) -> None:
    async def session() -> None:
        editor = Editor(project)
        try:
            await editor.start("--debounce", "0")
            helper = editor.open(project / "pkg" / "helpers.py")
            assert [str(d.code) for d in await editor.diagnostics(helper, 1)] == ["DYN101"]
            model = editor.open(project / "pkg" / "model.py")
            await editor.diagnostics(model, 1)
            # an unsaved edit of the caller is not the project yet
            version = editor.replace_all(model, UNCALLED)
            await editor.diagnostics(model, version)
            before = editor.publications(helper)
            # saved: the caller no longer reaches the helper, whose diagnostics are published again
            (project / "pkg" / "model.py").write_text(UNCALLED)
            editor.save(model)
            assert await editor.diagnostics(helper, after=before) == []
            # and back: calling it again brings the finding back
            version = editor.replace_all(model, MODEL)
            (project / "pkg" / "model.py").write_text(MODEL)
            before = editor.publications(helper)
            editor.save(model)
            assert [str(d.code) for d in await editor.diagnostics(helper, after=before)] == ["DYN101"]
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def test_saving_the_configuration_updates_the_open_documents(project: Path) -> None:
    async def session() -> None:
        editor = Editor(project)
        try:
            await editor.start("--debounce", "0")
            helper = editor.open(project / "pkg" / "helpers.py")
            assert [str(d.code) for d in await editor.diagnostics(helper, 1)] == ["DYN101"]
            config = editor.open(project / "pyproject.toml", language="toml")
            before = editor.publications(helper)
            (project / "pyproject.toml").write_text('[tool.dynalint]\nscope = "compiled"\nignore = ["DYN101"]\n')
            editor.save(config)
            assert await editor.diagnostics(helper, after=before) == []
            assert editor.publications(config) == 0  # not Python: never checked
            assert await editor.stop() == 0
        finally:
            editor.kill()

    run(session())


def test_each_version_of_a_document_gets_an_index_of_its_own_without_reading_the_project_again(
        project: Path, monkeypatch) -> None:
    """An edit of a document is analysed with an index of its own (no module an earlier version's analysis
    indexed), which knows what a new index of the project's files knows, without reading them again."""
    import dynalint.analysis.project as project_module
    from dynalint.adapters.lsp.analysis import check_document, project_of
    from dynalint.analysis.project import SourceIndex
    from dynalint.config.resolver import resolve
    from dynalint.engine.session import Session

    monkeypatch.chdir(project)
    helper = str(project / "pkg" / "helpers.py")
    session = Session(resolve([helper]))
    first, entries = project_of(session, helper)
    first.load("pkg.model")  # a tree this version's analysis parsed
    reads: list[str] = []
    read = project_module.read_bytes
    monkeypatch.setattr(project_module, "read_bytes", lambda path, *a, **k: reads.append(path) or read(path, *a, **k))
    second, again = project_of(session, helper)
    assert second is not first and again == entries
    assert "pkg.model" in first._loaded and not second._loaded
    anew = SourceIndex(session.scope([helper])[1])
    assert (second.paths, second.names, second.packages, second.tops) == (anew.paths, anew.names, anew.packages,
                                                                           anew.tops)
    assert second.importers_of("pkg.helpers") == [("pkg.model", frozenset({"scale"}))]
    assert not reads  # nothing read again: the scan of the import lines is the session's
    assert anew.importers_of("pkg.helpers") == second.importers_of("pkg.helpers") and reads  # (a new one reads)
    checked = check_document(1, HELPERS, helper, "pkg/helpers.py", session)
    assert [d.code for d in checked.diagnostics] == ["DYN101"]  # the caller's compiled code still reaches it


def test_the_versions_of_a_document_share_the_trees_of_the_files_it_reaches(project: Path, monkeypatch) -> None:
    """Each version's analysis parses a file of the project it reaches (the module it imports) only once
    while the file stays as it is on disk: the next versions take that tree (immutable) and index it
    anew, without walking its functions again for their bindings; a change on disk makes the next
    version parse the file again."""
    import dynalint.analysis.module_index as module_index
    import dynalint.analysis.project as project_module
    from dynalint.adapters.lsp.analysis import check_document
    from dynalint.config.resolver import resolve
    from dynalint.engine.incremental import Baselines
    from dynalint.engine.session import Session

    monkeypatch.chdir(project)
    model = str(project / "pkg" / "model.py")
    parsed: list[str] = []
    parse = project_module.parse_module
    monkeypatch.setattr(project_module, "parse_module",
                        lambda text, path, *a, **k: parsed.append(os.path.basename(path)) or parse(text, path, *a, **k))
    walked: list[str] = []
    walk = module_index._walk_bindings
    monkeypatch.setattr(module_index, "_walk_bindings", lambda node: walked.append(node.name.value) or walk(node))
    session, baselines = Session(resolve([model])), Baselines()
    for version in range(1, 4):
        walked.clear()
        text = MODEL.replace("return scale(x)", f"return scale(x) + {version}")
        checked = check_document(version, text, model, "pkg/model.py", session, baselines)
        assert checked.error is None and checked.analysis is not None
        assert parsed == ["helpers.py"]  # by the first version's analysis only
        assert ("scale" in walked) == (version == 1)
    (project / "pkg" / "helpers.py").write_text(HELPERS.replace("return x * 2", "return x * 2.0"))
    checked = check_document(4, MODEL, model, "pkg/model.py", session, baselines)
    assert checked.error is None and parsed == ["helpers.py", "helpers.py"]


def test_a_check_of_a_version_reads_each_files_stamp_once(project: Path, monkeypatch) -> None:
    """The check of a version asks whether the project's files changed on disk in several places (the
    index, the search for callers, the settled entries, the document's key): each file's stamp is read
    once per check, and a change on disk between two checks is still seen by the next."""
    import dynalint.engine.session as session_module
    from dynalint.adapters.lsp.analysis import check_document
    from dynalint.config.resolver import resolve
    from dynalint.engine.session import Session

    monkeypatch.chdir(project)
    helper = str(project / "pkg" / "helpers.py")
    read: list[str] = []
    stamp = session_module.file_stamp
    monkeypatch.setattr(session_module, "file_stamp", lambda path: read.append(path) or stamp(path))
    session = Session(resolve([helper]))
    checked = check_document(1, HELPERS, helper, "pkg/helpers.py", session)
    assert [d.code for d in checked.diagnostics] == ["DYN101"]  # the caller's compiled code reaches it
    assert read and len(read) == len(set(read))
    (project / "pkg" / "model.py").write_text(UNCALLED)  # the caller no longer calls it
    read.clear()
    checked = check_document(2, HELPERS, helper, "pkg/helpers.py", session)
    assert not checked.diagnostics and read and len(read) == len(set(read))
