"""A JSON-RPC 2.0 server over WebSocket for testing `sansrpc check`, with ganache 7.9's
fault over WebSocket: it answers every request for an unknown method with -32700 (Parse
error), echoing its id exactly; everything else is as the specification says. Prints its
port on the first line of stdout, then serves until killed. Standard library only: the
WebSocket handshake and frames by hand (RFC 6455, enough for one client's text frames).
"""
import base64
import hashlib
import json
import socket
import struct
import sys
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def error(code, message, id_):
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id_}


class Raw(str):
    """An id's JSON text as it was sent, echoed byte for byte."""


def raw_ids(text):
    """The raw text of a top-level object's members, by name (an empty dict otherwise)."""
    decoder = json.JSONDecoder()
    ws = " \t\r\n"
    at = len(text) - len(text.lstrip(ws))
    if text[at : at + 1] != "{":
        return {}
    at += 1
    members = {}
    while True:
        while text[at : at + 1] in tuple(ws):
            at += 1
        if text[at : at + 1] != '"':
            return members
        name, at = decoder.raw_decode(text, at)
        while text[at : at + 1] in tuple(ws):
            at += 1
        at += 1  # ':'
        while text[at : at + 1] in tuple(ws):
            at += 1
        _, end = decoder.raw_decode(text, at)
        members[name] = text[at:end]
        at = end
        while text[at : at + 1] in tuple(ws):
            at += 1
        if text[at : at + 1] != ",":
            return members
        at += 1


def dumps(out):
    """`out` as JSON, an id that is `Raw` written as it came."""
    if isinstance(out, list):
        return "[" + ",".join(map(dumps, out)) + "]"
    if isinstance(out, dict) and isinstance(out.get("id"), Raw):
        rest = json.dumps({k: v for k, v in out.items() if k != "id"})
        return rest[:-1] + ', "id": ' + out["id"] + "}"
    return json.dumps(out)


def no_constants(name):
    raise ValueError("not JSON: " + name)


def answer(msg):
    if not isinstance(msg, dict):
        return error(-32600, "Invalid Request", None)
    id_ = msg.get("id")
    if not (id_ is None or isinstance(id_, (str, int, float)) and not isinstance(id_, bool)):
        return error(-32600, "Invalid Request", None)
    params = msg.get("params", [])
    if (
        msg.get("jsonrpc") != "2.0"
        or not isinstance(msg.get("method"), str)
        or not isinstance(params, (list, dict))
    ):
        return error(-32600, "Invalid Request", id_)
    if "id" not in msg:
        return None
    # The fault: an unknown method is a "parse error", with the right id.
    return error(-32700, "Parse error", id_)


def reply(text):
    try:
        msg = json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return error(-32700, "Parse error", None)
    if isinstance(msg, list):
        if not msg:
            return error(-32600, "Invalid Request", None)
        answers = [a for a in map(answer, msg) if a is not None]
        return answers or None
    out = answer(msg)
    if out is not None and out["id"] is not None:
        out["id"] = Raw(raw_ids(text)["id"])
    return out


def read_exact(conn, n):
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def unmask(data, mask):
    """`data` XORed with the 4-byte `mask`, as whole integers: a byte-at-a-time loop
    takes seconds on the 16 MiB case, long enough to be judged dead on a busy machine."""
    n = len(data)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")


def send_frame(conn, opcode, payload):
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    conn.sendall(head + payload)


def serve(conn):
    try:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        key = None
        for line in request.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"sec-websocket-key":
                key = value.strip()
        if key is None:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        message = b""
        while True:
            b0, b1 = read_exact(conn, 2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", read_exact(conn, 2))[0]
            elif n == 127:
                n = struct.unpack(">Q", read_exact(conn, 8))[0]
            mask = read_exact(conn, 4) if b1 & 0x80 else b"\0\0\0\0"
            payload = unmask(read_exact(conn, n), mask)
            opcode = b0 & 0x0F
            if opcode == 8:
                send_frame(conn, 8, b"")
                return
            if opcode == 9:
                send_frame(conn, 10, payload)
                continue
            if opcode in (0, 1, 2):
                message += payload
                if not b0 & 0x80:
                    continue
                text, message = message.decode("utf-8", "replace"), b""
                out = reply(text)
                if out is not None:
                    send_frame(conn, 1, dumps(out).encode())
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
sys.setrecursionlimit(2000)
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
