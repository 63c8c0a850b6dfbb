"""A stateful JSON-RPC 2.0 server in the manner of MCP, on stdio, for testing
`sansrpc call`. Newline-framed by default; `--content-length` for LSP framing.

- Every request but `initialize` is refused (-32002 "not initialized") until `initialize`
  was answered and the `notifications/initialized` notification arrived.
- Lines that are not JSON are ignored (logged to stderr), as MCP servers do: a client using
  the wrong framing gets no byte back.
- `echo` answers {"has_params": ..., "params": ...}: whether a params member was sent.
- `slow` is never answered; cancellation notifications are logged to stderr as
  `cancel: METHOD PARAMS`.
- After `notifications/initialized` it sends `notifications/tools/list_changed`.
"""
import json
import sys

CONTENT_LENGTH = "--content-length" in sys.argv[1:]
state = {"initialize": False, "initialized": False}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def send(msg):
    body = json.dumps(msg)
    if CONTENT_LENGTH:
        data = body.encode()
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        sys.stdout.buffer.flush()
    else:
        print(body, flush=True)


def messages():
    if not CONTENT_LENGTH:
        for line in sys.stdin.buffer:
            yield line
        return
    while True:
        length = None
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if length is not None:
            yield sys.stdin.buffer.read(length)


def handle(msg):
    method, id_ = msg.get("method"), msg.get("id")
    if "id" not in msg:
        if method == "notifications/initialized" and state["initialize"]:
            state["initialized"] = True
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif method in ("notifications/cancelled", "$/cancelRequest"):
            log("cancel:", method, json.dumps(msg.get("params"), sort_keys=True))
        return
    if method == "initialize":
        state["initialize"] = True
        send({"jsonrpc": "2.0", "id": id_, "result": {"serverInfo": {"name": "stateful"}}})
        return
    if not state["initialized"]:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32002, "message": "not initialized"}})
        return
    if method == "tools/list":
        send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [{"name": "add"}]}})
    elif method == "echo":
        result = {"has_params": "params" in msg, "params": msg.get("params")}
        send({"jsonrpc": "2.0", "id": id_, "result": result})
    elif method == "slow":
        pass  # never answered
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "Method not found"}})


for raw in messages():
    if not raw.strip():
        continue
    try:
        msg = json.loads(raw)
    except ValueError:
        log("ignored, not JSON:", raw[:60])
        continue
    if isinstance(msg, dict):
        handle(msg)
