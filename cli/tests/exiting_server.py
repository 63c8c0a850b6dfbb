"""A JSON-RPC 2.0 server over HTTP (POST, keep-alive) for testing `sansrpc check`, right
in everything but one input: the body `null` kills it (the process exits with status 3,
as ganache 7.9 dies on it), or with `--close` only closes that connection and lives on.
Prints its port on the first line of stdout, then serves until killed.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLOSE = "--close" in sys.argv[1:]


def error(code, message, id_):
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id_}


def valid_id(msg):
    id_ = msg.get("id")
    return id_ is None or isinstance(id_, (str, int, float)) and not isinstance(id_, bool)


def answer(msg):
    """The answer to one request object, or None for a notification."""
    if not isinstance(msg, dict):
        return error(-32600, "Invalid Request", None)
    if not valid_id(msg):
        return error(-32600, "Invalid Request", None)
    id_ = msg.get("id")
    params = msg.get("params", [])
    if (
        msg.get("jsonrpc") != "2.0"
        or not isinstance(msg.get("method"), str)
        or not isinstance(params, (list, dict))
    ):
        return error(-32600, "Invalid Request", id_)
    if "id" not in msg:
        return None
    return error(-32601, "Method not found", id_)


def no_constants(name):
    raise ValueError("not JSON: " + name)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if body.strip() == b"null":
            if CLOSE:
                self.close_connection = True
                self.connection.close()
                return
            os._exit(3)
        try:
            msg = json.loads(body, parse_constant=no_constants)
        except (ValueError, RecursionError):
            return self.reply(200, json.dumps(error(-32700, "Parse error", None)).encode())
        if isinstance(msg, list):
            if not msg:
                out = error(-32600, "Invalid Request", None)
            else:
                out = [a for a in map(answer, msg) if a is not None] or None
        else:
            out = answer(msg)
        if out is None:
            return self.reply(204)
        self.reply(200, json.dumps(out).encode())


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
