"""A small editor for tests: drives ``dynalint lsp`` over stdio with pygls's client.

It keeps each document's text itself and applies the server's workspace edits
the way an editor does (UTF-16 positions, counted here independently of the
server), then reports them back as incremental ``didChange`` notifications.
"""
from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

TIMEOUT_S = 30.0
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def utf16_offset(text: str, position: types.Position) -> int:
    """Offset in ``text`` of an LSP position (0-based line, UTF-16 character)."""
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    if position.line >= len(starts):
        return len(text)
    start = starts[position.line]
    end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
    line = _LINE_BREAK.sub("", text[start:end])
    units = 0
    for i, ch in enumerate(line):
        if units >= position.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((utf16_offset(text, e.range.start), utf16_offset(text, e.range.end), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


class Editor:
    def __init__(self, cwd: Path, document_changes: bool = True, resolve: bool = True) -> None:
        self.cwd = cwd
        self.document_changes = document_changes
        self.resolve_edits = resolve
        self.client = BaseLanguageClient("dynalint-tests", "1")
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.messages: list[types.ShowMessageParams] = []
        self._arrived = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self._arrived.set()

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

    async def start(self, *args: str) -> types.InitializeResult:
        await self.client.start_io(sys.executable, "-m", "dynalint", "lsp", *args, cwd=str(self.cwd))
        capabilities = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            workspace=types.WorkspaceClientCapabilities(
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=self.document_changes)),
            text_document=types.TextDocumentClientCapabilities(
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
                code_action=types.CodeActionClientCapabilities(
                    data_support=self.resolve_edits,
                    resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
                    if self.resolve_edits else None)),
        )
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            process_id=None, root_uri=self.cwd.as_uri(), capabilities=capabilities)), TIMEOUT_S)
        self.client.initialized(types.InitializedParams())
        return result

    async def stop(self) -> int | None:
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT_S)
        self.client.exit(None)
        server = self.client._server
        code = await asyncio.wait_for(server.wait(), TIMEOUT_S) if server is not None else None
        await asyncio.wait_for(self.client.stop(), TIMEOUT_S)
        return code

    def kill(self) -> None:
        server = self.client._server
        if server is not None and server.returncode is None:
            server.kill()

    # -- documents ---------------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None, language: str = "python") -> str:
        uri = path.as_uri()
        self.texts[uri] = path.read_text() if text is None else text
        self.versions[uri] = 1
        item = types.TextDocumentItem(uri=uri, language_id=language, version=1, text=self.texts[uri])
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        return uri

    def change(self, uri: str, edits: list[types.TextEdit]) -> int:
        """Apply edits to the text and send them as incremental changes (last position first)."""
        self.texts[uri] = apply_edits(self.texts[uri], edits)
        self.versions[uri] += 1
        ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                             for e in ordered]))
        return self.versions[uri]

    def replace_all(self, uri: str, text: str) -> int:
        lines = _LINE_BREAK.split(self.texts[uri])
        end = types.Position(line=len(lines) - 1, character=utf16_len(lines[-1]))
        return self.change(uri, [types.TextEdit(range=types.Range(start=types.Position(line=0, character=0),
                                                                  end=end), new_text=text)])

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def apply(self, edit: types.WorkspaceEdit) -> int:
        """Apply a workspace edit from a code action, as an editor does; returns the new version."""
        if edit.document_changes:
            assert len(edit.document_changes) == 1
            change = edit.document_changes[0]
            assert isinstance(change, types.TextDocumentEdit)
            uri = change.text_document.uri
            assert change.text_document.version == self.versions[uri], "edit for a stale version"
            return self.change(uri, list(change.edits))
        assert edit.changes is not None and len(edit.changes) == 1
        uri, edits = next(iter(edit.changes.items()))
        return self.change(uri, list(edits))

    # -- requests --------------------------------------------------------------------------------------

    async def diagnostics(self, uri: str, version: int | None = None, *, after: int = 0
                          ) -> list[types.Diagnostic]:
        """The first diagnostics published for ``uri`` (at ``version``) after the ``after``-th publication."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        while True:
            for params in self.published.get(uri, [])[after:]:
                if version is None or params.version == version:
                    return list(params.diagnostics)
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def publications(self, uri: str) -> int:
        return len(self.published.get(uri, []))

    async def code_actions(self, uri: str, rng: types.Range,
                           diagnostics: list[types.Diagnostic] | None = None,
                           only: list[str] | None = None) -> list[types.CodeAction]:
        result = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
            context=types.CodeActionContext(diagnostics=diagnostics or [], only=only))), TIMEOUT_S)
        return [a for a in (result or []) if isinstance(a, types.CodeAction)]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """The action with its edit, as an editor asks for it when the user picks the action."""
        if action.edit is not None:
            return action
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), TIMEOUT_S)

    async def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position)), TIMEOUT_S)


_BLOCK = '''

class Block{i}(nn.Module):
    """Block {i}: a branch on a tensor, a scalar read, a masked mean, a helper in a loop."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = {i}

    def forward(self, x):
        h = self.proj(x) * self.scale
        if h.sum() > 0:
            h = h * 2
        n = h.max().item()
        y = h[h > 0].mean()
        return helper_{i}(h, n) + y


def helper_{i}(h, n):
    for _ in range(3):
        h = torch.relu(h) + n
    logger.info("helper {i}")
    return h
'''


def synthetic_model(lines: int) -> str:
    """A model file of at least ``lines`` lines, every block with graph breaks and fixes on offer."""
    head = "import logging\n\nimport torch\nimport torch.nn as nn\n\nlogger = logging.getLogger(__name__)\n"
    blocks, i = [head], 0
    while sum(b.count("\n") for b in blocks) < lines:
        blocks.append(_BLOCK.format(i=i))
        i += 1
    return "".join(blocks)


class RawServer:
    """``dynalint lsp`` fed bytes as they are, for what a well-behaved client never sends."""

    def __init__(self, cwd: Path, *args: str) -> None:
        import queue
        import subprocess
        import tempfile
        import threading

        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "dynalint", "lsp", *args], cwd=str(cwd),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self.messages: "queue.Queue[dict | None]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        import json

        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length is not None
            self.messages.put(json.loads(out.read(length)))

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        import json

        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, msg_id: int, method: str, params: object = None) -> None:
        self.send({"id": msg_id, "method": method, "params": params})

    def notify(self, method: str, params: object = None) -> None:
        self.send({"method": method, "params": params})

    def initialize(self, root: Path) -> dict:
        self.request(0, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        return self.answer(0)

    def next(self, timeout: float = TIMEOUT_S) -> dict | None:
        """The next message from the server (None: its output ended)."""
        return self.messages.get(timeout=timeout)

    def answer(self, msg_id: int | None, timeout: float = TIMEOUT_S) -> dict:
        """The response to ``msg_id`` (None: an error without an id), skipping notifications."""
        while True:
            message = self.next(timeout)
            if message is None:
                raise EOFError(f"the server ended before answering {msg_id}: {self.stderr()}")
            if "method" not in message and message.get("id") == msg_id:
                return message

    def close_input(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
