"""The language server's side of the wire: message framing, malformed input, and the end of a session.

pygls's own stdio loop trusts its input: it allocates whatever a ``Content-Length`` header
announces (one huge header ends the process), drops requests whose parameters do not
validate without answering them (the editor waits forever), ignores requests after
``shutdown`` silently, swallows the exit status of ``exit``, and keeps a finished future for
each notification it handled.  Here every request gets an
answer, a bad frame costs only itself, and the session ends with the status the LSP
specification gives (0 after ``shutdown``, 1 otherwise) as soon as ``exit`` arrives or the
input ends.
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any, BinaryIO, Generator

from lsprotocol import types
from pygls.exceptions import (JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest,
                              JsonRpcParseError)
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from dynalint.adapters.lsp.worker import DaemonWorker

log = logging.getLogger("dynalint.adapters.lsp")

#: The largest message accepted: far above any source file, far below what would exhaust memory.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: Header lines longer than this are not headers (the rest of a rejected frame's body, say).
MAX_HEADER_LINE = 4096
_CHUNK = 1 << 20
_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*([^\r\n]*)\r?\n?\Z", re.IGNORECASE)


class FrameError(Exception):
    """A frame that cannot be read; the stream goes on at the next header."""


def _header_line(stream: BinaryIO) -> bytes:
    """One line of input, or its last :data:`MAX_HEADER_LINE` bytes if it is longer (a header that follows
    the unread body of a rejected frame ends that line); empty at the end of input."""
    line = stream.readline(MAX_HEADER_LINE)
    while line and not line.endswith(b"\n"):
        more = stream.readline(MAX_HEADER_LINE)
        if not more:
            break
        line = (line + more)[-MAX_HEADER_LINE:]
    return line


def _body(stream: BinaryIO, length: int) -> bytes | None:
    """Exactly ``length`` bytes, read in chunks (memory follows what arrives, not what was announced)."""
    parts, left = [], length
    while left:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_frame(stream: BinaryIO) -> bytes | FrameError | None:
    """The next message body, a :class:`FrameError` for a frame that cannot be used, or None at the
    end of input.  Headers other than ``Content-Length`` are ignored, as the specification allows."""
    length: int | None = None
    error: FrameError | None = None
    seen = False
    while True:
        line = _header_line(stream)
        if not line:
            return None
        if not line.strip():
            if error is not None:
                return error
            if length is not None:
                break
            if seen:
                return FrameError("a message header without Content-Length")
            continue  # blank lines between messages
        seen = True
        match = _CONTENT_LENGTH.search(line)
        if match is None:
            continue
        value = match.group(1).strip()
        if not value.isdigit():
            error, length = FrameError(f"invalid Content-Length {value[:40]!r}"), None
        elif int(value) > MAX_MESSAGE_BYTES:
            error, length = FrameError(f"a message of {int(value)} bytes exceeds the limit of "
                                       f"{MAX_MESSAGE_BYTES} bytes"), None
        else:
            error, length = None, int(value)
    body = _body(stream, length)
    return body


def _cause(exc: BaseException) -> str:
    """What cattrs found wrong, in one short line."""
    cause = exc.__cause__ or exc
    notes = getattr(cause, "exceptions", None)
    text = str(notes[0]) if notes else str(cause)
    return " ".join(text.split())[:200]


class DynalintProtocol(LanguageServerProtocol):
    """pygls's LSP protocol, answering what it would leave unanswered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_code: int | None = None

    def send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        self._send_response(msg_id, error=error.to_response_error())

    def receive(self, body: bytes) -> None:
        """Handle one message body; a request that cannot be handled is answered with the JSON-RPC error."""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            log.error("unreadable message: %s", exc)
            self.send_error(None, JsonRpcParseError(f"Parse Error: {str(exc)[:200]}"))
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != self.VERSION:
            log.error("not a JSON-RPC %s message: %.200s", self.VERSION, body)
            msg_id = data.get("id") if isinstance(data, dict) else None
            self.send_error(msg_id if isinstance(msg_id, (int, str)) else None, JsonRpcInvalidRequest())
            return
        is_request = "method" in data and "id" in data
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:
            if is_request and isinstance(data["id"], (int, str)) and isinstance(data["method"], str):
                # the envelope is sound, so what failed to validate is the parameters
                message = f"Invalid Params for {data['method'][:100]}: {_cause(exc)}"
                self.send_error(data["id"], JsonRpcInvalidParams(message))
            elif is_request:
                self.send_error(data["id"] if isinstance(data["id"], (int, str)) else None,
                                JsonRpcInvalidRequest())
            return  # a notification or a response that does not validate: logged by pygls, nothing to answer
        self.handle_message(message)

    def handle_message(self, message: Any) -> None:
        if self._shutdown and getattr(message, "method", None) not in (None, types.EXIT) \
                and getattr(message, "id", None) is not None:
            self.send_error(message.id, JsonRpcInvalidRequest(
                f"Invalid Request: {message.method} after shutdown"))
            return
        super().handle_message(message)

    def _check_handler_result(self, future: Any) -> None:
        """A notification's handler ended: forget its future.  pygls files the future of each
        notification whose handler is a generator or a coroutine (``didOpen``, ``didChange``, ``didSave``,
        ``didClose``...) among the requests awaiting an answer and never takes it out, so a long session
        would keep one per edit."""
        super()._check_handler_result(future)
        for msg_id in [k for k, f in self._request_futures.items() if f is future]:
            del self._request_futures[msg_id]

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """End the session (pygls's would raise SystemExit inside the event loop, which loses the status)."""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        self.exit_code = 0 if self._shutdown else 1


async def serve(protocol: DynalintProtocol, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Read and handle messages until ``exit`` or the end of input; the exit status.  Each frame is read
    on a daemon thread while the event loop runs the handlers; ``exit`` is handled before the next read
    starts, so no read is left waiting when the session ends."""
    protocol.set_writer(StdoutWriter(stdout))
    reader = DaemonWorker("dynalint-lsp-read")
    while protocol.exit_code is None:
        frame = await asyncio.wrap_future(reader.submit(read_frame, stdin))
        if frame is None:
            log.info("end of input")
            break
        if isinstance(frame, FrameError):
            log.error("unreadable message: %s", frame)
            protocol.send_error(None, JsonRpcParseError(f"Parse Error: {frame}"))
            continue
        try:
            protocol.receive(frame)
        except BrokenPipeError:
            break
        except Exception:  # a handler bug must not end the session
            log.exception("handling a message failed")
    reader.stop()
    if protocol.exit_code is not None:
        return protocol.exit_code
    return 0 if protocol._shutdown else 1
