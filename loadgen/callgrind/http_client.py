#!/usr/bin/env python3
"""The client of callgrind/http.sh: C keep-alive HTTP/1.1 connections POSTing JSON-RPC
one request at a time each (loadgen's requests: `add` for even ids, `echo` for odd), as
loadgen's keep-alive scenarios do. 20 requests per connection to warm up, a line, then N
requests in all after a line on stdin, a line. Every answer is checked."""
import asyncio, json, sys

host, port = sys.argv[1].split(":")
conns, n = int(sys.argv[2]), int(sys.argv[3])


def request(i):
    if i % 2 == 0:
        return b'{"jsonrpc":"2.0","id":%d,"method":"add","params":[%d,7]}' % (i, i)
    return b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":["hello",%d]}' % (i, i)


async def ask(r, w, i):
    body = request(i)
    w.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    head = await r.readuntil(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    assert head.startswith(b"HTTP/1.1 200"), head
    answer = json.loads(await r.readexactly(length))
    assert answer["id"] == i and "result" in answer, answer


async def main():
    streams = []
    for k in range(0, conns, 50):
        streams += await asyncio.gather(
            *(asyncio.open_connection(host, int(port)) for _ in range(min(50, conns - k))))
    async def warm(j, r, w):
        for t in range(20):
            await ask(r, w, j * 20 + t)
    await asyncio.gather(*(warm(j, r, w) for j, (r, w) in enumerate(streams)))
    print("warm", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    left = [n]
    async def work(r, w):
        while left[0] > 0:
            left[0] -= 1
            await ask(r, w, left[0])
    await asyncio.gather(*(work(r, w) for r, w in streams))
    print("done", flush=True)
    for _, w in streams:
        w.close()

asyncio.run(main())
