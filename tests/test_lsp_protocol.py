"""``dynalint lsp`` on input no well-behaved editor sends, and at the end of a session.

Every request gets an answer (JSON-RPC errors included), a malformed frame costs only
itself, and the process ends promptly with the status the specification gives.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsp_client import RawServer, synthetic_model  # noqa: E402

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


@pytest.fixture
def server(tmp_path: Path):
    raw = RawServer(tmp_path)
    yield raw
    raw.kill()


def _alive(server: RawServer, msg_id: int) -> None:
    """The server still answers (a request for an unknown method gets its error)."""
    server.request(msg_id, "dynalint/unknown", {})
    assert server.answer(msg_id)["error"]["code"] == -32601


def test_an_oversized_frame_is_refused_and_the_session_goes_on(server: RawServer, tmp_path: Path) -> None:
    server.send_bytes(b"Content-Length: 99999999999\r\n\r\n")
    error = server.answer(None)["error"]
    assert error["code"] == PARSE_ERROR and "exceeds" in error["message"]
    assert "capabilities" in server.initialize(tmp_path)["result"]
    _alive(server, 1)
    assert "MemoryError" not in server.stderr()


@pytest.mark.parametrize("header", [b"Content-Length: abc\r\n", b"Content-Length: -5\r\n",
                                    b"Content-Type: application/json\r\n"])
def test_a_frame_with_a_bad_header_is_refused(server: RawServer, tmp_path: Path, header: bytes) -> None:
    server.send_bytes(header + b"\r\n")
    assert server.answer(None)["error"]["code"] == PARSE_ERROR
    server.initialize(tmp_path)
    _alive(server, 1)


def test_the_stream_recovers_after_a_refused_frame_whose_body_follows(server: RawServer, tmp_path: Path) -> None:
    body = b'{"jsonrpc": "2.0", "id": 7, "method": "shutdown"}'
    server.send_bytes(b"Content-Length: 99999999999\r\n\r\n" + body)  # the body is never read as a message
    assert server.answer(None)["error"]["code"] == PARSE_ERROR
    assert "capabilities" in server.initialize(tmp_path)["result"]  # its header ends the unread body's line
    _alive(server, 1)
    server.request(2, "shutdown")
    assert server.answer(2)["result"] is None  # the refused body was not taken for a shutdown


def test_unreadable_json_gets_a_parse_error(server: RawServer, tmp_path: Path) -> None:
    server.send_bytes(b"Content-Length: 9\r\n\r\n{not json")
    assert server.answer(None)["error"]["code"] == PARSE_ERROR
    server.send_bytes(b"Content-Length: 2\r\n\r\n[]")
    assert server.answer(None)["error"]["code"] == INVALID_REQUEST
    server.initialize(tmp_path)
    _alive(server, 1)


def test_a_request_whose_params_do_not_validate_gets_invalid_params(server: RawServer, tmp_path: Path) -> None:
    server.initialize(tmp_path)
    server.request(5, "textDocument/hover", {"textDocument": {"uri": 3}, "position": "here"})
    error = server.answer(5)["error"]
    assert error["code"] == INVALID_PARAMS and "textDocument/hover" in error["message"]
    server.request(6, "textDocument/codeAction", {})
    assert server.answer(6)["error"]["code"] == INVALID_PARAMS
    _alive(server, 7)


def test_a_request_after_shutdown_is_an_invalid_request(server: RawServer, tmp_path: Path) -> None:
    server.initialize(tmp_path)
    server.request(1, "shutdown")
    assert server.answer(1)["result"] is None
    server.request(2, "textDocument/hover", {"textDocument": {"uri": "file:///m.py"},
                                             "position": {"line": 0, "character": 0}})
    assert server.answer(2)["error"]["code"] == INVALID_REQUEST
    server.notify("exit")
    assert server.wait(5) == 0


def test_exit_without_shutdown_exits_1(server: RawServer, tmp_path: Path) -> None:
    server.initialize(tmp_path)
    server.notify("exit")
    assert server.wait(5) == 1


def _open(server: RawServer, path: Path) -> None:
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}})


def _exit_time(server: RawServer, tmp_path: Path, end) -> float:
    """Seconds from ``end(server)`` to the process being gone, with a large file open and checked."""
    path = tmp_path / "model.py"
    path.write_text(synthetic_model(4500))
    server.initialize(tmp_path)
    server.notify("initialized", {})
    _open(server, path)
    while (message := server.next()) is not None and message.get("method") != "textDocument/publishDiagnostics":
        pass
    start = time.perf_counter()
    end(server)
    server.wait(30)
    return time.perf_counter() - start


def test_exit_is_prompt_after_a_large_file(server: RawServer, tmp_path: Path) -> None:
    def shutdown_exit(s: RawServer) -> None:
        s.request(1, "shutdown")
        s.answer(1)
        s.notify("exit")

    assert _exit_time(server, tmp_path, shutdown_exit) < 1.0
    assert server.proc.returncode == 0


def test_end_of_input_ends_the_server_promptly(server: RawServer, tmp_path: Path) -> None:
    assert _exit_time(server, tmp_path, RawServer.close_input) < 1.0


def test_exit_during_an_analysis_does_not_wait_for_it(server: RawServer, tmp_path: Path) -> None:
    """A large file is being analysed (seconds): the process still ends at once."""
    path = tmp_path / "model.py"
    path.write_text(synthetic_model(4500) * 3)
    server.initialize(tmp_path)
    server.notify("initialized", {})
    _open(server, path)
    time.sleep(0.5)  # the analysis is under way
    # ... and requests are answered meanwhile
    server.request(1, "textDocument/hover", {"textDocument": {"uri": path.as_uri()},
                                             "position": {"line": 0, "character": 0}})
    waited = time.perf_counter()
    assert server.answer(1)["result"] is None
    assert time.perf_counter() - waited < 2.0
    start = time.perf_counter()
    server.notify("exit")
    assert server.wait(30) == 1
    assert time.perf_counter() - start < 1.0


def test_a_long_session_keeps_nothing_per_notification(tmp_path: Path) -> None:
    """Each edit is a notification: once handled, nothing of it stays (pygls alone keeps a future for
    each, a thousand edits a megabyte and more, for as long as the server runs)."""
    import asyncio
    import io
    import json

    from pygls.io_ import StdoutWriter

    from dynalint.adapters.cli import build_parser
    from dynalint.adapters.lsp.server import build_server

    def frame(message: dict) -> bytes:
        return json.dumps({"jsonrpc": "2.0", **message}).encode()

    async def session() -> int:
        server = build_server(build_parser().parse_args(["lsp"]))
        protocol = server.protocol
        protocol.set_writer(StdoutWriter(io.BytesIO()))
        protocol.receive(frame({"id": 0, "method": "initialize",
                                "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
        uri = (tmp_path / "notes.txt").as_uri()  # not Python: nothing is analysed, no process starts
        protocol.receive(frame({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": ""}}}))
        for version in range(2, 202):
            protocol.receive(frame({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                              "end": {"line": 0, "character": 0}}, "text": "x"}]}}))
        protocol.receive(frame({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}}))
        await asyncio.sleep(0)
        return len(protocol._request_futures)

    assert asyncio.run(session()) == 0
