"""sansrpc-blocking's ``lsp_server_threads`` example driven by pytest-lsp (pygls's language
client), which initializes with the client capabilities VS Code sends (captured by
pytest-lsp). It keeps the protocol of the hand-written LSP example it was written beside
(full sync, hovers answering ``version V, N chars``, ``custom/greet``) until it moves onto
sansrpc-lsp; the crate's examples have ``test_lsp_server.py``.

The server to run is named by the environment variable ``SANSRPC_LSP_SERVER``: a command
line, split like a shell's (the binary, then any arguments). The Rust wrapper
``adapters/blocking/tests/lsp_pytest.rs`` sets it to the ``lsp_server_threads`` example.

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

SERVER = shlex.split(os.environ.get("SANSRPC_LSP_SERVER", ""))
if not SERVER:
    raise RuntimeError("set SANSRPC_LSP_SERVER to the LSP server's command line")

# What VS Code declares in `initialize` (pytest-lsp's capture of it).
EDITOR = "visual-studio-code"
CAPABILITIES = client_capabilities(EDITOR)

# One bound for anything a healthy server answers at once.
ANSWER = 10.0
URI = "file:///tmp/sansrpc-pytest-lsp/notes.txt"


def initialize_params(process_id: int | None = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=CAPABILITIES,
        process_id=process_id,
        client_info=types.ClientInfo(name="pytest-lsp", version="1.0.1"),
        root_uri="file:///tmp/sansrpc-pytest-lsp",
    )


async def initialize(client: LanguageClient, process_id: int | None = None):
    """`initialize` (then `initialized`); pytest-lsp fills in its own pid when none."""
    result = await asyncio.wait_for(
        client.initialize_session(initialize_params(process_id)), ANSWER
    )
    assert result.server_info is not None
    assert result.server_info.name == "sansrpc-lsp-example"
    return result


@contextlib.asynccontextmanager
async def running(*args: str):
    """A client connected to a new server process started with `args` after the
    command; the process is killed at the end if it is still running."""
    config = ClientServerConfig(server_command=[*SERVER, *args])
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


def hover_params() -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=0, character=0),
    )


def send_hover(client: LanguageClient) -> asyncio.Future:
    """Sends `textDocument/hover` now (the `_async` variants only send when awaited)."""
    return asyncio.wrap_future(client.text_document_hover(hover_params()))


def send_request(client: LanguageClient, method: str, params) -> asyncio.Future:
    """Sends a request now; its answer, as a future."""
    return asyncio.wrap_future(client.protocol.send_request(method, params))


async def error_code(request: asyncio.Future) -> int:
    """The code of the error `request` is answered with (fails on a result)."""
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(request, ANSWER)
    return error.value.code


# ----- 1. ordering: notifications are barriers -----------------------------------------


@pytest.fixture
async def client():
    """An initialized client; shut down (`shutdown`, `exit`) at the end, which must end
    the server with status 0."""
    async with running() as client:
        await initialize(client)
        yield client
        await asyncio.wait_for(client.shutdown_session(), ANSWER)
        assert server_process(client).returncode == 0


def text_of(version: int) -> str:
    # Distinct lengths, with characters of several UTF-8 widths (the server counts chars).
    return "é" * version + "x" * (3 * version) + "\N{CRAB}"


async def test_every_hover_sees_the_change_sent_before_it(client: LanguageClient):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=URI, language_id="plaintext", version=0, text=""
            )
        )
    )
    # 20 pairs on the wire back to back, nothing awaited in between: the server's
    # `didChange` handler takes 20 ms to store the text, so a hover that started before
    # the change before it was stored would answer an older version.
    hovers = []
    for version in range(1, 21):
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=URI, version=version
                ),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=text_of(version))
                ],
            )
        )
        hovers.append(send_hover(client))
    answers = await asyncio.wait_for(asyncio.gather(*hovers), ANSWER)

    seen = [a.contents.value if a is not None else None for a in answers]
    expected = [f"version {v}, {len(text_of(v))} chars" for v in range(1, 21)]
    assert seen == expected
    for answer in answers:
        assert isinstance(answer.contents, types.MarkupContent)
        assert answer.contents.kind == types.MarkupKind.PlainText


# ----- 2. lifecycle ----------------------------------------------------------------------


async def test_lifecycle_not_initialized_shut_down_and_exit_status_0():
    async with running() as client:
        # Before `initialize`: -32002 ServerNotInitialized.
        assert await error_code(send_hover(client)) == -32002
        await initialize(client)
        # Running: answered (no document open: null).
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        await asyncio.wait_for(client.shutdown_async(None), ANSWER)
        # After `shutdown`: -32600 InvalidRequest.
        assert await error_code(send_hover(client)) == -32600
        client.exit(None)
        assert await exit_status(client) == 0


async def test_exit_without_shutdown_ends_with_status_1():
    async with running() as client:
        await initialize(client)
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        client.exit(None)
        assert await exit_status(client) == 1


async def test_end_of_input_without_shutdown_ends_with_status_1():
    async with running() as client:
        await initialize(client)
        assert await asyncio.wait_for(send_hover(client), ANSWER) is None
        # The editor goes away without a word: the server's stdin ends.
        server_process(client).stdin.close()
        assert await exit_status(client) == 1


# ----- 3. liveness: a handler waiting on the client, with one request in flight ----------


async def test_handler_calling_workspace_configuration_with_max_inflight_1():
    async with running("--max-inflight", "1") as client:
        await initialize(client)
        # pytest-lsp's client answers `workspace/configuration` from this.
        client.set_configuration("Howdy", section="greeting")
        # Both sent at once: the server hands out the first and holds the second; the
        # first's handler asks the client for `workspace/configuration`, and the server
        # must still read that answer while the second request is held.
        first = send_request(client, "custom/greet", {"name": "Ada"})
        second = send_request(client, "custom/greet", {"name": "Bob"})
        answers = await asyncio.wait_for(asyncio.gather(first, second), ANSWER)
        assert answers == ["Howdy, Ada!", "Howdy, Bob!"]
        logged = sorted(m.message for m in client.log_messages)
        assert logged == ["greeting Ada", "greeting Bob"]
        await asyncio.wait_for(client.shutdown_session(), ANSWER)
        assert server_process(client).returncode == 0


# ----- 4. the editor's process dies ------------------------------------------------------


async def test_server_exits_when_the_editor_process_is_gone():
    editor = await asyncio.create_subprocess_exec("sleep", "60")
    try:
        async with running() as client:
            await initialize(client, process_id=editor.pid)
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
