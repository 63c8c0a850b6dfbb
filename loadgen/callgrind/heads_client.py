"""WebSocket subscribers to newHeads for loadgen/callgrind/heads.sh: S raw sockets, each
upgraded and subscribed (`eth_subscribe("newHeads")` or, with `topic`, `rpc.subscribe` to
`{"topic": "newHeads"}`), then read for SECONDS; prints "subscribed" once all are, then the number of
notifications received (every frame read is counted by its method name)."""
import base64
import os
import selectors
import socket
import struct
import sys
import time

addr, subscribers, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "ethereum"
host, port = addr.rsplit(":", 1)


def frame(text):
    body, mask = text.encode(), os.urandom(4)
    head = bytes([0x81]) + (
        bytes([0x80 | len(body)]) if len(body) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(body))
    )
    return head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(body))


if mode == "topic":
    subscribe, method = '{"jsonrpc":"2.0","id":1,"method":"rpc.subscribe","params":{"topic":"newHeads"}}', b"rpc.notification"
else:
    subscribe, method = '{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}', b"eth_subscription"
sel = selectors.DefaultSelector()
for _ in range(subscribers):
    s = socket.create_connection((host, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        f"GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    s.sendall(frame(subscribe))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("subscribed", flush=True)
received, start = 0, time.time()
while time.time() - start < seconds:
    for key, _ in sel.select(0.5):
        try:
            received += key.fileobj.recv(1 << 16).count(method)
        except BlockingIOError:
            pass
print("notifications", received, flush=True)
