#!/usr/bin/env python3
"""The client of callgrind/mcp.sh: a session (none on a stateless server) over one
keep-alive connection; 50 tools/call of `add`, a line, then N more after a line on stdin.
Every answer is checked."""
import http.client, json, sys
host, port = sys.argv[1].split(":")
n = int(sys.argv[2])
c = http.client.HTTPConnection(host, int(port))
sid = None
def post(msg):
    global sid
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream",
         "mcp-protocol-version": "2025-06-18"}
    if sid: h["mcp-session-id"] = sid
    c.request("POST", "/mcp", json.dumps(msg), h)
    r = c.getresponse()
    body = r.read().decode()
    s = r.getheader("mcp-session-id")
    if s: sid = s
    return r.status, body
st, b = post({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cg","version":"0"}}})
assert st == 200, (st, b)
post({"jsonrpc":"2.0","method":"notifications/initialized"})
def calls(k):
    for i in range(k):
        st, b = post({"jsonrpc":"2.0","id":i+1,"method":"tools/call","params":{"name":"add","arguments":{"a":i,"b":1}}})
        assert st == 200 and str(i+1) in b, (st, b)
calls(50)
print("warm", flush=True)
sys.stdin.readline()
calls(n)
print("done", flush=True)
