#!/usr/bin/env python3
"""The client of callgrind/http.sh: HTTP/1.1 connections POSTing JSON-RPC requests (`add`
for even ids, `echo` for odd), every answer checked. Three shapes:

  C N:          C keep-alive connections each POSTing one request at a time (loadgen's
                keep-alive scenarios), 20 requests each to warm up; then N requests in all.
  burst CONC N: connections that each POST one request and close, CONC at a time
                (loadgen's burst), 500 to warm up; then N of them.
  open C:       C connections opened (50 at a time) and all held open, then one request
                on each (100 at a time), then all closed (loadgen's many-connections rows).

A line once warm, then the work after a line on stdin, then a line."""
import asyncio, json, sys

host, port = sys.argv[1].rsplit(":", 1)
shape = sys.argv[2] if sys.argv[2] in ("burst", "open") else "keep-alive"
counts = [int(a) for a in sys.argv[2 + (shape != "keep-alive"):]]


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


async def connect(c):
    streams = []
    for k in range(0, c, 50):
        streams += await asyncio.gather(
            *(asyncio.open_connection(host, int(port)) for _ in range(min(50, c - k))))
    return streams


async def keep_alive(streams, n):
    left = [n]

    async def work(r, w):
        while left[0] > 0:
            left[0] -= 1
            await ask(r, w, left[0])

    await asyncio.gather(*(work(r, w) for r, w in streams))


async def burst(conc, n):
    left = [n]

    async def one(i):
        r, w = await asyncio.open_connection(host, int(port))
        await ask(r, w, i)
        w.close()
        await w.wait_closed()

    async def worker():
        while left[0] > 0:
            left[0] -= 1
            await one(left[0])

    await asyncio.gather(*(worker() for _ in range(conc)))


async def held_open(c):
    streams = await connect(c)
    await asyncio.sleep(1)
    at_once = asyncio.Semaphore(100)

    async def each(i, r, w):
        async with at_once:
            await ask(r, w, i)

    await asyncio.gather(*(each(i, r, w) for i, (r, w) in enumerate(streams)))
    for _, w in streams:
        w.close()


async def main():
    if shape == "keep-alive":
        streams = await connect(counts[0])

        async def warm(j, r, w):
            for t in range(20):
                await ask(r, w, j * 20 + t)

        await asyncio.gather(*(warm(j, r, w) for j, (r, w) in enumerate(streams)))
    elif shape == "burst":
        await burst(counts[0], 500)
    print("warm", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if shape == "keep-alive":
        await keep_alive(streams, counts[1])
    elif shape == "burst":
        await burst(*counts)
    else:
        await held_open(counts[0])
        # The server sees every close before its counters are dumped.
        await asyncio.sleep(2)
    print("done", flush=True)
    if shape == "keep-alive":
        for _, w in streams:
            w.close()


asyncio.run(main())
