"""sansrpc-lsp's example servers driven by pytest-lsp (pygls's language client), which
initializes with the client capabilities real editors send (pytest-lsp's captures of them).

- ``todo_server`` (``SANSRPC_TODO_SERVER``): documents in incremental sync, TODO
  diagnostics, hovers answering ``version V: LINE``; the ordering, lifecycle and
  editor-death tests.
- ``context_server`` (``SANSRPC_CONTEXT_SERVER``): ``custom/greet``, whose handler calls the
  editor back (``workspace/configuration``, work-done progress) under ``--max-inflight 1``.

Each variable is a command line, split like a shell's (the binary, then any arguments).
The Rust wrapper ``lsp/tests/pytest_lsp.rs`` sets them to the examples it builds.

Every await is bounded (``asyncio.wait_for``), and pytest-timeout bounds each test as a
whole (``pytest.ini``): a server that stops answering fails the test, never hangs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities


def command(variable: str) -> list[str]:
    line = shlex.split(os.environ.get(variable, ""))
    if not line:
        raise RuntimeError(f"set {variable} to the server's command line")
    return line


TODO_SERVER = command("SANSRPC_TODO_SERVER")
CONTEXT_SERVER = command("SANSRPC_CONTEXT_SERVER")

# Editors whose `initialize` capabilities pytest-lsp captured, with the position encoding
# each one gets: VS Code 1.65 offers none (UTF-16), Neovim 0.11 offers UTF-8 first, Emacs
# 29.1 (eglot) UTF-32 first.
VSCODE = "visual-studio-code"
EDITORS = {
    VSCODE: "utf-16",
    "neovim@v0.11.0": "utf-8",
    "emacs@v29.1": "utf-32",
}

# One bound for anything a healthy server answers at once.
ANSWER = 10.0
URI = "file:///tmp/sansrpc-pytest-lsp/notes.txt"


def initialize_params(
    editor: str = VSCODE, process_id: int | None = None
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(editor),
        process_id=process_id,
        client_info=types.ClientInfo(name="pytest-lsp", version="1.0.1"),
        root_uri="file:///tmp/sansrpc-pytest-lsp",
    )


async def initialize(
    client: LanguageClient,
    name: str,
    editor: str = VSCODE,
    process_id: int | None = None,
) -> types.InitializeResult:
    """`initialize` (then `initialized`); pytest-lsp fills in its own pid when none."""
    result = await asyncio.wait_for(
        client.initialize_session(initialize_params(editor, process_id)), ANSWER
    )
    assert result.server_info is not None
    assert result.server_info.name == name
    return result


@contextlib.asynccontextmanager
async def running(server: list[str], *args: str):
    """A client connected to a new server process started with `args` after the
    command; the process is killed at the end if it is still running."""
    config = ClientServerConfig(server_command=[*server, *args])
    client = await asyncio.wait_for(config.start(), ANSWER)
    try:
        yield client
    finally:
        process = server_process(client)
        if process.returncode is None:
            process.kill()
        await asyncio.wait_for(client.stop(), ANSWER)


def server_process(client: LanguageClient) -> asyncio.subprocess.Process:
    # pytest-lsp keeps the server's process here (its own `shutdown_session` waits on it).
    process = client._server
    assert process is not None
    return process


async def exit_status(client: LanguageClient) -> int:
    """Waits (bounded) for the server process to end by itself; its status."""
    return await asyncio.wait_for(server_process(client).wait(), ANSWER)


def send_hover(client: LanguageClient, line: int = 0) -> asyncio.Future:
    """Sends `textDocument/hover` now (the `_async` variants only send when awaited)."""
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=line, character=0),
    )
    return asyncio.wrap_future(client.text_document_hover(params))


def send_request(client: LanguageClient, method: str, params) -> asyncio.Future:
    """Sends a request now; its answer, as a future."""
    return asyncio.wrap_future(client.protocol.send_request(method, params))


async def error_code(request: asyncio.Future) -> int:
    """The code of the error `request` is answered with (fails on a result)."""
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(request, ANSWER)
    return error.value.code


def units(text: str, encoding: str) -> int:
    """The length of `text` in `encoding`'s code units (Python's own encoders)."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


# ----- 1. ordering: notifications are barriers -----------------------------------------


# Appended to line 0 one per change: characters of every UTF-8 width, non-BMP ones (two
# UTF-16 units), and a TODO now and then.
PIECES = ["é", "😀", " TODO", "日本", "𝄞", "x"]


@pytest.mark.parametrize("editor", EDITORS)
async def test_every_hover_sees_the_change_sent_before_it(editor: str):
    encoding = EDITORS[editor]
    async with running(TODO_SERVER) as client:
        result = await initialize(client, "todo", editor)
        capabilities = result.capabilities
        assert capabilities.position_encoding == encoding
        assert capabilities.hover_provider is True
        sync = capabilities.text_document_sync
        assert isinstance(sync, types.TextDocumentSyncOptions)
        assert sync.open_close is True
        assert sync.change == types.TextDocumentSyncKind.Incremental

        lines = ["# notes 😀", "second line"]
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=URI, language_id="plaintext", version=0, text="\r\n".join(lines)
                )
            )
        )
        # 20 pairs on the wire back to back, nothing awaited in between: each change
        # appends to line 0 at its end, counted in the negotiated encoding; a hover that
        # overtook the change before it would answer an older version.
        hovers, expected = [], []
        for version in range(1, 21):
            piece = PIECES[version % len(PIECES)]
            end = types.Position(line=0, character=units(lines[0], encoding))
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(
                        uri=URI, version=version
                    ),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(start=end, end=end), text=piece
                        )
                    ],
                )
            )
            lines[0] += piece
            hovers.append(send_hover(client))
            expected.append(f"version {version}: {lines[0]}")
        answers = await asyncio.wait_for(asyncio.gather(*hovers), ANSWER)

        seen = [a.contents.value if a is not None else None for a in answers]
        assert seen == expected
        for answer in answers:
            assert isinstance(answer.contents, types.MarkupContent)
            assert answer.contents.kind == types.MarkupKind.PlainText

        # The diagnostics of the final version (the only one with four TODOs: versions 2, 8,
        # 14 and 20 add one each): one warning per TODO of the final text, its range in the
        # negotiated encoding. The server analyses beside the hovers, once typing pauses:
        # they may come after the last hover's answer, and the versions superseded within
        # its debounce publish nothing.
        todos = []
        at = lines[0].find("TODO")
        while at != -1:
            start = units(lines[0][:at], encoding)
            todos.append(((0, start), (0, start + 4)))
            at = lines[0].find("TODO", at + 4)
        assert len(todos) == 4

        async def final_diagnostics():
            while len(client.diagnostics.get(URI, [])) != 4:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(final_diagnostics(), ANSWER)
        diagnostics = client.diagnostics[URI]
        ranges = [
            (
                (d.range.start.line, d.range.start.character),
                (d.range.end.line, d.range.end.character),
            )
            for d in diagnostics
        ]
        assert ranges == todos
        for d in diagnostics:
            assert d.severity == types.DiagnosticSeverity.Warning
            assert (d.source, d.message) == ("todo", "TODO found")

        await asyncio.wait_for(client.shutdown_session(), ANSWER)
        assert server_process(client).returncode == 0


# ----- 2. lifecycle ----------------------------------------------------------------------


async def test_lifecycle_not_initialized_shut_down_and_exit_status_0():
    async with running(TODO_SERVER) as client:
        # Before `initialize`: -32002 ServerNotInitialized.
        assert await error_code(send_hover(client)) == -32002
        await initialize(client, "todo")
        # Running: answered (no document open: null).
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        await asyncio.wait_for(client.shutdown_async(None), ANSWER)
        # After `shutdown`: -32600 InvalidRequest.
        assert await error_code(send_hover(client)) == -32600
        client.exit(None)
        assert await exit_status(client) == 0


async def test_exit_without_shutdown_ends_with_status_1():
    async with running(TODO_SERVER) as client:
        await initialize(client, "todo")
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        client.exit(None)
        assert await exit_status(client) == 1


async def test_end_of_input_without_shutdown_ends_with_status_1():
    async with running(TODO_SERVER) as client:
        await initialize(client, "todo")
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        # The editor goes away without a word: the server's stdin ends.
        server_process(client).stdin.close()
        assert await exit_status(client) == 1


# ----- 3. liveness: a handler waiting on the client, with one request in flight ----------


async def test_handler_calling_the_editor_back_with_max_inflight_1():
    async with running(CONTEXT_SERVER, "--max-inflight", "1") as client:
        await initialize(client, "context")
        # pytest-lsp's client answers `workspace/configuration` from this.
        client.set_configuration("Howdy", section="greeting")
        # Both sent at once: the server hands out the first and holds the second; the
        # first's handler asks the client for `workspace/configuration`, then (VS Code
        # handles it) `window/workDoneProgress/create`, and the server must still read
        # those answers while the second request is held.
        first = send_request(client, "custom/greet", {"name": "Ada"})
        second = send_request(client, "custom/greet", {"name": "Bob"})
        answers = await asyncio.wait_for(asyncio.gather(first, second), ANSWER)
        assert answers == ["Howdy, Ada!", "Howdy, Bob!"]
        logged = sorted(m.message for m in client.log_messages)
        assert logged == ["greeting Ada", "greeting Bob"]
        # Each handler's progress, on the token it created: begin, report, end.
        reports = list(client.progress_reports.values())
        assert len(reports) == 2
        for report in reports:
            assert [type(r) for r in report] == [
                types.WorkDoneProgressBegin,
                types.WorkDoneProgressReport,
                types.WorkDoneProgressEnd,
            ]
            assert report[0].title == "greeting"
            assert report[1].percentage == 50
        await asyncio.wait_for(client.shutdown_session(), ANSWER)
        assert server_process(client).returncode == 0


# ----- 4. the editor's process dies ------------------------------------------------------


async def test_server_exits_when_the_editor_process_is_gone():
    editor = await asyncio.create_subprocess_exec("sleep", "60")
    try:
        async with running(TODO_SERVER) as client:
            await initialize(client, "todo", process_id=editor.pid)
            assert await asyncio.wait_for(send_hover(client), ANSWER) is None
            editor.kill()
            await asyncio.wait_for(editor.wait(), ANSWER)
            # The server checks `processId` every 3 s: gone, it exits by itself (status 1:
            # no `shutdown` came).
            status = await asyncio.wait_for(server_process(client).wait(), 10.0)
            assert status == 1
    finally:
        if editor.returncode is None:
            editor.kill()
            await editor.wait()
