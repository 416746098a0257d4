"""``dynalint lsp`` keeps answering while one document's analysis takes long.

The analyses run in analysis processes: a libcst parse holds the interpreter lock for as long as
it runs, so the server's own process never analyses.  The end-to-end test opens a file whose parse is
made to take minutes and asserts, by the order of what arrives rather than by timings, that another
document is analysed, hovered and offered its quick fixes while that analysis runs, and that an edit
stops it.
The pool's choices (which process runs a call, when a superseded analysis is stopped) are tested
with stand-in processes.
"""
from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsp_client import Editor, synthetic_model  # noqa: E402

from dynalint.adapters.lsp.pool import WorkerPool  # noqa: E402
from dynalint.adapters.lsp.worker import WorkerGone  # noqa: E402


SLOW_MARK = "# parsed slowly"
SLOW_PARSE = """
import time

import libcst

_parse_module = libcst.parse_module


def parse_module(source, *args, **kwargs):
    text = source if isinstance(source, str) else bytes(source).decode(errors="replace")
    if "# parsed slowly" in text:
        time.sleep(300)  # as a parse of a file of megabytes
    return _parse_module(source, *args, **kwargs)


libcst.parse_module = parse_module
"""


@pytest.fixture
def slow_parses(tmp_path: Path, monkeypatch) -> None:
    """Every process started from now on (the server, its analysis processes) parses a text holding
    :data:`SLOW_MARK` for minutes (a ``sitecustomize`` module on ``PYTHONPATH``)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SLOW_PARSE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(c) for c in f.read().split()]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].startswith("Z")  # a zombie has ended
    except OSError:
        return True


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads the process tree from /proc")
def test_other_documents_are_answered_while_a_slow_analysis_runs(tmp_path: Path, slow_parses: None) -> None:
    slow = tmp_path / "generated.py"
    slow.write_text(f"{SLOW_MARK}\nDATA = [1, 2, 3]\n")
    small = tmp_path / "model.py"
    small.write_text(synthetic_model(60))

    async def session() -> None:
        editor = Editor(tmp_path)
        try:
            await editor.start()
            big = editor.open(slow)
            uri = editor.open(small)
            diagnostics = await editor.diagnostics(uri, 1)
            target = next(d for d in diagnostics if d.code == "DYN101")
            hover = await editor.hover(uri, target.range.start)
            actions = await editor.code_actions(uri, target.range, [target])
            # all of it answered while the generated file's analysis still runs
            assert editor.publications(big) == 0
            assert hover is not None and "DYN101" in str(hover.contents)
            assert any(a.title.startswith("DYN101: ") for a in actions)
            # an edit supersedes the running analysis: the new version is published, the old one never
            version = editor.replace_all(big, "x = 1\n")
            assert await editor.diagnostics(big, version) == []
            assert [p.version for p in editor.published[big]] == [version]
            server = editor.client._server
            assert server is not None
            workers = _children(server.pid)
            assert workers  # the analysis processes
            assert await editor.stop() == 0
            deadline = time.monotonic() + 30
            while not all(map(_gone, workers)) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert all(map(_gone, workers)), "the analysis processes outlived the server"
        finally:
            editor.kill()

    asyncio.run(asyncio.wait_for(session(), 240))


# -- the pool, with stand-in processes ----------------------------------------------------------------

class StandIn:
    """An analysis process that answers ``call(uri)`` at once, except for the URIs in ``held``, whose
    calls wait until :meth:`release`; the first two are ready, the others still loading."""

    def __init__(self, name: str, held: set[str], made: list["StandIn"]) -> None:
        self.name = name
        self.held = held
        self.calls: list[str] = []
        self.waiting: list[Future] = []
        self.killed = False
        self.ready = len(made) < 2  # a replacement is still loading the engine
        made.append(self)

    def submit(self, method: str, uri: str) -> Future:
        future: Future = Future()
        self.calls.append(uri)
        if self.killed:
            future.set_exception(WorkerGone(self.name))
        elif uri in self.held:
            self.waiting.append(future)
        else:
            future.set_result(f"{uri} by {self.name}")
        return future

    def release(self) -> None:
        for future in self.waiting:
            future.set_result("released")
        self.waiting.clear()

    def kill(self) -> None:
        self.killed = True
        for future in self.waiting:
            future.set_exception(WorkerGone(self.name))
        self.waiting.clear()


def _pool(held: set[str], **kwargs) -> tuple[WorkerPool, list[StandIn]]:
    made: list[StandIn] = []
    return WorkerPool(lambda name: StandIn(name, held, made), **kwargs), made  # type: ignore[arg-type]


def test_a_call_for_another_document_does_not_wait_for_a_long_one() -> None:
    async def go() -> None:
        pool, made = _pool({"slow"})
        slow = asyncio.ensure_future(pool.run("slow", "call", "slow"))
        await asyncio.sleep(0)
        assert await pool.run("other", "call", "other") == "other by dynalint-analysis-2"
        assert await pool.run("third", "call", "third") == "third by dynalint-analysis-2"
        assert not slow.done()
        made[0].release()
        assert await slow == "released"
        pool.stop()

    asyncio.run(go())


def test_a_call_waits_for_its_home_busy_with_the_same_document() -> None:
    """The process computing for a document answers that document's next call (it keeps its analysis)."""
    async def go() -> None:
        pool, made = _pool(set())
        assert await pool.run("doc", "call", "doc") == "doc by dynalint-analysis-1"
        made[0].held.add("doc")
        first = asyncio.ensure_future(pool.run("doc", "call", "doc"))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(pool.run("doc", "call", "doc"))
        await asyncio.sleep(0.05)
        assert made[1].calls == [] and not second.done()
        made[0].held.clear()
        made[0].release()
        assert await first == "released"
        assert await second == "doc by dynalint-analysis-1"
        pool.stop()

    asyncio.run(go())


def test_a_superseded_running_analysis_is_stopped_and_its_process_replaced() -> None:
    async def go() -> None:
        pool, made = _pool({"doc"}, supersede_after=0.0)
        stale = asyncio.ensure_future(pool.run("doc", "call", "doc", supersedable=True))
        await asyncio.sleep(0)
        stale.cancel()  # a newer edit
        with pytest.raises(asyncio.CancelledError):
            await stale
        await asyncio.sleep(0.05)
        assert made[0].killed
        assert len(pool.workers) == 2 and made[0] not in pool.workers  # replaced
        made[0].held.clear()
        # the new version goes to the process that is ready, not to the one still starting
        assert await pool.run("doc", "call", "fresh") == "fresh by dynalint-analysis-2"
        pool.stop()
        assert all(w.killed for w in pool.workers)

    asyncio.run(go())


def test_a_superseded_call_not_yet_started_is_dropped_and_other_calls_are_not_stopped() -> None:
    async def go() -> None:
        pool, made = _pool({"a", "b"}, size=1, supersede_after=0.0)
        running = asyncio.ensure_future(pool.run("a", "call", "a"))  # not supersedable: a code action's
        await asyncio.sleep(0)
        queued = asyncio.ensure_future(pool.run("b", "call", "b", supersedable=True))
        await asyncio.sleep(0)
        queued.cancel()
        running.cancel()
        await asyncio.sleep(0.05)
        assert made[0].calls == ["a"] and not made[0].killed
        assert pool.waiting == []
        pool.stop()

    asyncio.run(go())


def test_a_process_keeps_what_it_analysed_of_open_documents_only(tmp_path: Path, monkeypatch) -> None:
    """Every call says which documents are open: a process drops the analyses and baselines of the others
    (each process would otherwise hold a tree per document ever opened)."""
    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.documents import Documents

    monkeypatch.chdir(tmp_path)
    documents = Documents(build_parser().parse_args(["lsp"]), str(tmp_path))
    uris = []
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(synthetic_model(30))
        uris.append((tmp_path / name).as_uri())
        documents.call("report", uris, 0, (uris[-1], 1, synthetic_model(30)))
    assert set(documents.checked) == set(uris)
    report = documents.call("report", uris[1:2], 0, (uris[1], 2, synthetic_model(40)))
    assert report.version == 2 and any(d.code == "DYN101" for d in report.diagnostics)
    assert set(documents.checked) == {uris[1]}
    assert documents.baselines.get(str(tmp_path / "b.py")) is not None
    assert documents.baselines.get(str(tmp_path / "a.py")) is None
    assert documents.baselines.get(str(tmp_path / "c.py")) is None
    with pytest.raises(ValueError):
        documents.call("sessions", uris, 0, ())  # only the calls the server makes


def test_an_edit_finds_the_configuration_again_only_after_a_save(tmp_path: Path, monkeypatch) -> None:
    """Finding a document's configuration reads files and the installed torch's metadata (a few
    milliseconds): found once per document, and again after a save (which may have changed it)."""
    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp import documents as module

    found: list[list[str]] = []
    real = module.resolve_args

    def counting(args, paths):
        found.append(paths)
        return real(args, paths)

    monkeypatch.setattr(module, "resolve_args", counting)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    documents = module.Documents(build_parser().parse_args(["lsp"]), str(tmp_path))
    uri = (tmp_path / "model.py").as_uri()
    for version in range(1, 4):
        documents.call("report", [uri], 0, (uri, version, synthetic_model(20 + version)))
    assert len(found) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN101"]\n')
    report = documents.call("report", [uri], 1, (uri, 4, synthetic_model(30)))
    assert len(found) == 2 and not any(d.code == "DYN101" for d in report.diagnostics)


def test_a_process_with_nothing_to_answer_prepares_the_first_edit(tmp_path: Path, monkeypatch) -> None:
    """While it waits, an analysis process computes what the first edit after a full analysis would: the
    check that the tree writes its text back (a code generation of the whole tree) and the nesting scan
    of the text; the edit then computes neither, and is answered as a full analysis answers it."""
    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.documents import Documents
    from dynalint.engine import incremental

    monkeypatch.chdir(tmp_path)
    documents = Documents(build_parser().parse_args(["lsp"]), str(tmp_path))
    path = tmp_path / "model.py"
    text = synthetic_model(60)
    path.write_text(text)
    uri = path.as_uri()
    documents.call("report", [uri], 0, (uri, 1, text))
    assert documents.idle() and not documents.idle()  # one document: prepared once
    generated, scanned = [], []
    real_exact, real_scan = incremental.Tree.exact, incremental.scan_part
    monkeypatch.setattr(incremental.Tree, "exact", lambda tree: generated.append(tree._exact) or real_exact(tree))
    monkeypatch.setattr(incremental, "scan_part", lambda *a: scanned.append(a) or real_scan(*a))
    at = text.index("        return ")
    edited = text[:at] + "        h = h + 0\n" + text[at:]
    quick = documents.call("report", [uri], 0, (uri, 2, edited))
    assert documents.checked[uri]._full is not None  # answered from the last analysis
    assert generated == [True] and len(scanned) <= 2  # known before the edit; its own stretch scanned
    full = Documents(build_parser().parse_args(["lsp"]), str(tmp_path)).call("report", [uri], 0, (uri, 2, edited))
    assert quick.diagnostics == full.diagnostics
