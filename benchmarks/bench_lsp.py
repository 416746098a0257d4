"""How quickly ``dynalint lsp`` answers an editor on a large file.

Drives the real server over stdio (the test suite's small editor, ``tests/lsp_client.py``) and
reports, in one run:

- ``dynalint --version`` (a command, wall clock, interpreter start-up included);
- start-up to the ``initialize`` answer;
- open -> first diagnostics;
- a quick-fix menu on one diagnostic -> its answer, and resolving "fix all (unsafe)";
- the median and worst of edit -> diagnostics over ``--edits`` edits (each inserts or removes a
  comment line in the middle of the file; ``--debounce 0`` so the figure is the server's work);
- the same over ``--edits`` edits of code inside function bodies, spread over the file: a literal
  changed, a local renamed (to the end of its function), a statement added after an assignment, an
  assignment removed, each followed by the edit that undoes it;
- a libcst parse of the same text in this process (median of 3): the yardstick of the edit cost;
- ``shutdown``+``exit`` -> process gone, end of input -> process gone, and ``exit`` sent while
  the server analyses the file -> process gone.

``--huge BYTES``: responsiveness while a huge file is analysed instead.  A generated file of that
many bytes on a single line is opened, then a small model file; the figures are the small file's
open -> diagnostics, a hover and a quick-fix menu on it, each while the huge file's analysis runs
(and whether it still ran), and an edit of the huge file that supersedes its running analysis.

``--memory-edits N``: memory over a long session instead: N edits of the file (comment lines and
code edits in turn, each waited for), with the resident memory of the server and its analysis
processes (from ``/proc``) every ``--every`` edits.

``--in-process``: only the code edits, answered by the server's engine side (the analysis process's
``Documents``) in this process, by CPU time against a libcst parse of the file: the figure the
server's own work on an edit comes to, without the transport or the machine's other load.  With
``--in-place``, the file is edited where it is (in memory only), as a file of the project around it
(run from the project's root; the server's ``.dynalint_cache`` is written there, as ``dynalint lsp``
writes it): what an edit costs in a large project.  Between
two calls the process does what it does while it waits (``Documents.idle``: what the first edit after
a full analysis would compute, computed ahead), reported apart and not counted in the edits.

The file: ``--file PATH``, else a synthetic model file of ``--lines`` lines (graph breaks and
fixes in every block).  A measurement script, not a test: it asserts nothing.

    python benchmarks/bench_lsp.py --lines 4531
    python benchmarks/bench_lsp.py --file path/to/modeling_longformer.py
    python benchmarks/bench_lsp.py --huge 2000000
    python benchmarks/bench_lsp.py --lines 600 --memory-edits 20000 --every 1000
    python benchmarks/bench_lsp.py --file path/to/modeling_longformer.py --in-process
    cd site-packages && python /path/to/bench_lsp.py --file transformers/models/longformer/modeling_longformer.py \
        --in-process --in-place --edits 6
"""
from __future__ import annotations

import argparse
import ast
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from lsprotocol import types  # noqa: E402

from lsp_client import Editor, synthetic_model  # noqa: E402


def _version_time() -> float:
    exe = Path(sys.executable).with_name("dynalint")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "dynalint"]
    start = time.perf_counter()
    subprocess.run([*command, "--version"], check=True, capture_output=True)
    return time.perf_counter() - start


def _parse_time(text: str) -> float:
    import libcst

    times = []
    for _ in range(3):
        start = time.perf_counter()
        libcst.parse_module(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _comment_line(text: str) -> int:
    """A 0-based line in the middle of the file, at the start of a top-level statement (a comment line
    inserted there keeps the file valid)."""
    lines = text.splitlines()
    middle = len(lines) // 2
    for i in list(range(middle, len(lines))) + list(range(middle, 0, -1)):
        if lines[i][:1].isalpha() and not lines[i - 1].rstrip().endswith(("\\", ",", "(", "[", "{")):
            return i
    return 0


Edit = tuple[int, int, str]
"""Lines ``first`` to ``end`` (0-based, end excluded) replaced by a text."""


def _code_edits(text: str, count: int) -> list[Edit]:
    """``count`` edits of code inside function bodies (see the module doc), each edit followed by the
    one that undoes it, at single-line assignments to a name spread evenly over the file."""
    lines = text.splitlines(keepends=True)
    sites: list[tuple[ast.AST, ast.Assign]] = []
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for block in ast.walk(fn):
            for name in ("body", "orelse", "finalbody"):
                body = getattr(block, name, None)
                if not isinstance(body, list) or len(body) < 2 or block is not fn and isinstance(
                        block, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                for st in body:
                    if isinstance(st, ast.Assign) and st.lineno == st.end_lineno and len(st.targets) == 1 \
                            and isinstance(st.targets[0], ast.Name) and lines[st.lineno - 1].isascii():
                        sites.append((fn, st))
    sites.sort(key=lambda s: s[1].lineno)
    pairs = max(count // 2, 1)
    chosen = [sites[i * len(sites) // pairs] for i in range(pairs)] if sites else []
    edits: list[Edit] = []
    for k, (fn, st) in enumerate(chosen):
        at = st.lineno - 1
        line = lines[at]
        target = st.targets[0].id  # type: ignore[attr-defined]
        indent = line[:len(line) - len(line.lstrip())]
        numbers = [c for c in ast.walk(st.value) if isinstance(c, ast.Constant) and type(c.value) is int]
        kind = k % 4
        if kind == 0 and numbers:
            c = numbers[0]
            new = line[:c.col_offset] + str(c.value + 1) + line[c.end_col_offset:]  # type: ignore[operator]
            edit: Edit = (at, at + 1, new)
        elif kind <= 1:
            end = fn.end_lineno or st.lineno  # type: ignore[attr-defined]
            old = "".join(lines[at:end])
            edit = (at, end, re.sub(rf"(?<![.\w]){target}\b", f"{target}_renamed", old))
        elif kind == 2:
            edit = (at + 1, at + 1, f"{indent}{target}_copy = {target}\n")
        else:
            edit = (at, at + 1, "")
        first, end, new = edit
        edits.append(edit)
        edits.append((first, first + new.count("\n"), "".join(lines[first:end])))
    return edits[:count]


def _line_edit(edit: Edit) -> types.TextEdit:
    first, end, new = edit
    return types.TextEdit(range=types.Range(start=types.Position(line=first, character=0),
                                            end=types.Position(line=end, character=0)), new_text=new)


async def _timed_edits(editor: Editor, uri: str, edits: list[types.TextEdit]) -> list[float]:
    """Edit -> diagnostics of that version, for each edit in turn."""
    latencies = []
    for edit in edits:
        before = editor.publications(uri)
        start = time.perf_counter()
        version = editor.change(uri, [edit])
        await editor.diagnostics(uri, version, after=before)
        latencies.append(time.perf_counter() - start)
    return latencies


async def _gone(editor: Editor) -> float:
    server = editor.client._server
    assert server is not None
    start = time.perf_counter()
    await asyncio.wait_for(server.wait(), 60)
    return time.perf_counter() - start


async def _shut_down(editor: Editor) -> float:
    """Ask the server to shut down and exit; the seconds from ``exit`` until its process is gone."""
    await asyncio.wait_for(editor.client.shutdown_async(None), 60)
    editor.client.exit(None)
    return await _gone(editor)


async def _session(root: Path, path: Path, edits: int) -> dict[str, float]:
    out: dict[str, float] = {}
    editor = Editor(root)
    start = time.perf_counter()
    await editor.start("--debounce", "0")
    out["initialize"] = time.perf_counter() - start
    try:
        start = time.perf_counter()
        uri = editor.open(path)
        diagnostics = await editor.diagnostics(uri, 1)
        out["open -> diagnostics"] = time.perf_counter() - start
        out["diagnostics"] = len(diagnostics)
        if diagnostics:
            target = diagnostics[len(diagnostics) // 2]
            start = time.perf_counter()
            try:
                actions = await editor.code_actions(uri, target.range, [target])
            except (TimeoutError, asyncio.TimeoutError):
                print(f"code action: no answer in {time.perf_counter() - start:.0f} s")
                return out
            out["code action"] = time.perf_counter() - start
            fix_all = [a for a in actions if a.edit is None]
            if fix_all:
                start = time.perf_counter()  # `dynalint fix` on the whole file: as long as the command takes
                await asyncio.wait_for(editor.client.code_action_resolve_async(fix_all[-1]), 600)
                out["resolve fix all"] = time.perf_counter() - start
        line = _comment_line(editor.texts[uri])
        comments = [_line_edit((line, line, f"# edit {k}\n") if k % 2 == 0 else (line, line + 1, ""))
                    for k in range(edits)]
        latencies = await _timed_edits(editor, uri, comments)
        out["edit -> diagnostics (median)"] = statistics.median(latencies)
        out["edit -> diagnostics (worst)"] = max(latencies)
        code = [_line_edit(e) for e in _code_edits(editor.texts[uri], edits)]
        if code:
            latencies = await _timed_edits(editor, uri, code)
            out["code edit -> diag. (median)"] = statistics.median(latencies)
            out["code edit -> diag. (worst)"] = max(latencies)
        out["exit -> gone"] = await _shut_down(editor)
    finally:
        editor.kill()
        await editor.client.stop()
    return out


async def _eof_session(root: Path, path: Path, busy: bool) -> float:
    """End of input (or, ``busy``, ``exit`` while the file is being analysed) -> process gone."""
    editor = Editor(root)
    await editor.start("--debounce", "0")
    try:
        uri = editor.open(path)
        if busy:
            await asyncio.sleep(0.2)  # the analysis has started
            editor.client.exit(None)
        else:
            await editor.diagnostics(uri, 1)
            server = editor.client._server
            assert server is not None and server.stdin is not None
            server.stdin.close()
        return await _gone(editor)
    finally:
        editor.kill()
        await editor.client.stop()


def _own_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (MB; 0 once it is gone)."""
    return _own_rss_mb(pid) + sum(_rss_mb(c) for c in _children(pid))


def generated_line(size: int) -> str:
    """A generated module of about ``size`` bytes on one line (a long list of calls)."""
    items: list[str] = []
    total = 0
    while total < size:
        items.append(f"f({len(items)}, 'k{len(items)}')")
        total += len(items[-1]) + 2
    return "def f(a, b):\n    return a\n\n\nDATA = [" + ", ".join(items) + "]\n"


async def _timed(coro) -> tuple[float, object]:
    start = time.perf_counter()
    result = await coro
    return time.perf_counter() - start, result


async def _huge_session(root: Path, size: int) -> dict[str, float]:
    huge = root / "generated.py"
    huge.write_text(generated_line(size))
    small = root / "model.py"
    small.write_text(synthetic_model(200))
    out: dict[str, float] = {"huge file (MB)": size / 1e6}
    editor = Editor(root)
    await editor.start("--max-file-memory", "0")  # analysed, not reported as too large to analyse
    try:
        big = editor.open(huge)
        await asyncio.sleep(1.0)  # its analysis is under way
        started = time.perf_counter()
        uri = editor.open(small)
        out["other: open -> diagnostics"], diagnostics = await _timed(editor.diagnostics(uri, 1))
        target = next(d for d in diagnostics if d.code == "DYN101")  # type: ignore[union-attr]

        async def answers(when: str) -> None:
            hovers = [(await _timed(editor.hover(uri, target.range.start)))[0] for _ in range(5)]
            actions = [(await _timed(editor.code_actions(uri, target.range, [target])))[0] for _ in range(3)]
            out[f"other: hover {when} (median of 5)"] = statistics.median(hovers)
            out[f"other: hover {when} (worst)"] = max(hovers)
            out[f"other: code action {when} (median of 3)"] = statistics.median(actions)
            out[f"other: code action {when} (worst)"] = max(actions)

        await answers("during")
        await asyncio.sleep(max(0.0, 15.0 - (time.perf_counter() - started)))
        await answers("15 s into it")
        out["huge still analysing (1=yes)"] = float(editor.publications(big) == 0)
        out["server + analysis processes RSS (MB)"] = _rss_mb(editor.client._server.pid)  # type: ignore[union-attr]
        editor.replace_all(big, "x = 1\n")  # supersedes the running analysis
        out["huge: superseding edit -> diagnostics"], _ = await _timed(editor.diagnostics(big, 2))
        out["huge: first diagnostics were published (1=yes)"] = float(
            any(p.version == 1 for p in editor.published.get(big, [])))
        out["seconds the huge analysis ran before being superseded"] = time.perf_counter() - started + 1.0
        await answers("after")
        out["exit -> gone"] = await _shut_down(editor)
    finally:
        editor.kill()
        await editor.client.stop()
    return out


async def _memory_session(root: Path, path: Path, edits: int, every: int) -> list[tuple[int, float]]:
    editor = Editor(root)
    await editor.start("--debounce", "0")
    samples: list[tuple[int, float]] = []
    try:
        uri = editor.open(path)
        await editor.diagnostics(uri, 1)
        pid = editor.client._server.pid  # type: ignore[union-attr]
        line = _comment_line(editor.texts[uri])
        code = [_line_edit(e) for e in _code_edits(editor.texts[uri], 200)]
        samples.append((0, _rss_mb(pid)))
        start = time.perf_counter()
        for k in range(edits):
            if k % 4 < 2:
                edit = _line_edit((line, line, f"# edit {k}\n") if k % 4 == 0 else (line, line + 1, ""))
            else:
                edit = code[(k // 2) % len(code)] if code else _line_edit((line, line, ""))
            await _timed_edits(editor, uri, [edit])
            if (k + 1) % every == 0:
                samples.append((k + 1, _rss_mb(pid)))
                each = " + ".join(f"{_rss_mb(c):.1f}" for c in _children(pid))
                print(f"  {k + 1:>6} edits  {samples[-1][1]:7.1f} MB (server {_own_rss_mb(pid):.1f} + analysis "
                      f"{each})  {time.perf_counter() - start:7.0f} s", flush=True)
        await editor.stop()
    finally:
        editor.kill()
        await editor.client.stop()
    return samples


def _in_process(root: Path, path: Path, count: int) -> None:
    """``--in-process``: the code edits answered by the engine side of the server in this process, by CPU
    time, against a libcst parse of the text (CPU time, median of 3): the server's own work on an edit,
    without the transport and the scheduling of its processes."""
    import libcst

    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.documents import Documents

    text = path.read_text()
    from dynalint.adapters.lsp.documents import EDITS_PER_COLLECTION
    from dynalint.core.source import Collections

    # (the garbage collections as the analysis process makes them: while it waits)
    documents = Documents(build_parser().parse_args(["lsp"]), root=str(root),
                          collections=Collections(every=EDITS_PER_COLLECTION).start())
    uri = path.as_uri()
    start = time.process_time()
    documents.report(uri, 0, text)
    opened = time.process_time() - start
    start = time.process_time()
    while documents.idle():  # what the analysis process does while it waits for the next call
        pass
    ahead = time.process_time() - start
    lines = text.splitlines(keepends=True)
    costs = []
    for version, (first, end, new) in enumerate(_code_edits(text, count), start=1):
        lines[first:end] = new.splitlines(keepends=True)
        start = time.process_time()
        documents.report(uri, version, "".join(lines))
        costs.append(time.process_time() - start)
        while documents.idle():
            pass
    parses = []
    for _ in range(3):
        start = time.process_time()
        libcst.parse_module(text)
        parses.append(time.process_time() - start)
    parse = statistics.median(parses)
    print(f"open (full analysis)        {opened:8.3f} s CPU")
    print(f"then, while idle            {ahead:8.3f} s CPU   (computed ahead for the first edit)")
    print(f"libcst parse only           {parse:8.3f} s CPU")
    print(f"code edit (median of {len(costs)})    {statistics.median(costs):8.3f} s CPU   "
          f"{statistics.median(costs) / parse:6.2f}x the parse (worst {max(costs) / parse:.2f}x)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--file", type=Path, help="a Python file to open (default: a synthetic model file)")
    p.add_argument("--lines", type=int, default=4531, help="length of the synthetic file (default 4531)")
    p.add_argument("--edits", type=int, default=20, help="edits to time (default 20)")
    p.add_argument("--huge", type=int, metavar="BYTES",
                   help="measure answers while a generated file of this many bytes on one line is analysed")
    p.add_argument("--memory-edits", type=int, metavar="N", help="measure memory over N edits")
    p.add_argument("--every", type=int, default=1000, help="edits between memory samples (default 1000)")
    p.add_argument("--in-process", action="store_true",
                   help="only the code edits, answered in this process by CPU time (no server, no transport)")
    p.add_argument("--in-place", action="store_true",
                   help="with --in-process and --file: edit the file where it is (never written), with the project "
                        "around it (run from the project's root), instead of a copy alone in a folder")
    args = p.parse_args()
    if args.in_process and args.in_place:
        if not args.file:
            p.error("--in-place needs --file")
        path = args.file.resolve()
        print(f"file: {args.file}, {path.read_text().count(chr(10))} lines, in its project ({Path.cwd()})")
        _in_process(Path.cwd(), path, args.edits)
        return
    if args.in_process:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / (args.file.name if args.file else "model.py")
            path.write_text(args.file.read_text() if args.file else synthetic_model(args.lines))
            print(f"file: {args.file or 'synthetic model'}, {path.read_text().count(chr(10))} lines")
            _in_process(Path(tmp), path, args.edits)
        return
    if args.huge:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"cpu count {os.cpu_count()}")
            for name, value in asyncio.run(_huge_session(Path(tmp), args.huge)).items():
                print(f"{name:<55}{value:8.3f}")
        return
    if args.memory_edits:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            path = root / (args.file.name if args.file else "model.py")
            path.write_text(args.file.read_text() if args.file else synthetic_model(args.lines))
            print(f"file: {args.file or 'synthetic model'}, {path.read_text().count(chr(10))} lines; "
                  f"{args.memory_edits} edits; resident memory of the server and its analysis processes")
            asyncio.run(_memory_session(root, path, args.memory_edits, args.every))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        text = args.file.read_text() if args.file else synthetic_model(args.lines)
        path = root / (args.file.name if args.file else "model.py")
        path.write_text(text)
        print(f"file: {args.file or 'synthetic model'}, {text.count(chr(10))} lines; cpu count {os.cpu_count()}")
        print(f"dynalint --version         {_version_time():8.3f} s")
        results = asyncio.run(_session(root, path, args.edits))
        results["end of input -> gone"] = asyncio.run(_eof_session(root, path, busy=False))
        results["exit mid-analysis -> gone"] = asyncio.run(_eof_session(root, path, busy=True))
        parse = _parse_time(text)
    for name, value in results.items():
        print(f"{name:<27}{value:8.0f}" if name == "diagnostics" else f"{name:<27}{value:8.3f} s")
    print(f"{'libcst parse only':<27}{parse:8.3f} s")
    edit = results.get("edit -> diagnostics (median)")
    if edit is not None:
        print(f"median edit / parse         {edit / parse:8.2f}x")
    code = results.get("code edit -> diag. (median)")
    if code is not None:
        print(f"median code edit / parse    {code / parse:8.2f}x")
    action = results.get("code action")
    if action is not None:
        print(f"code action / open          {action / results['open -> diagnostics']:8.2f}x")


if __name__ == "__main__":
    main()
