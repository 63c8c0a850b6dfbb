"""A deliberately broken JSON-RPC 2.0 server, newline-framed on stdio, for testing
`sansrpc check`. Its faults, each one a case the checker must report:

- numeric ids come back as floats (1 -> 1.0, 1e3 -> 1000.0);
- notifications are answered (with id null);
- an empty batch `[]` is never answered;
- input nested deeper than Python's recursion limit kills it (RecursionError);
- Python's json module accepts NaN, so `"id": NaN` is not a parse error;
- with `--hang`, deep nesting does not kill it: it stops answering for good instead.
Everything else is answered -32601, or -32600 / -32700 as the specification says.
"""
import json
import sys
import time

HANG = "--hang" in sys.argv[1:]


def error(code, message, id_):
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": id_}


def answer(msg):
    if not isinstance(msg, dict):
        return error(-32600, "Invalid Request", None)
    id_ = msg.get("id")
    if isinstance(id_, (int, float)) and not isinstance(id_, bool):
        id_ = float(id_)  # the fault: 1 comes back as 1.0
    elif not (id_ is None or isinstance(id_, str)):
        id_ = None
    if msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return error(-32600, "Invalid Request", id_)
    # The fault: notifications get an answer too.
    return error(-32601, "Method not found", id_)


for line in sys.stdin:
    if not line.strip():
        continue
    try:
        msg = json.loads(line)
    except RecursionError:
        if HANG:
            time.sleep(3600)  # the fault: the server stops answering, and stays alive
        raise  # the fault: deep nesting kills the server
    except ValueError:
        print(json.dumps(error(-32700, "Parse error", None)), flush=True)
        continue
    if msg == []:
        continue  # the fault: never answered
    if isinstance(msg, list):
        print(json.dumps([answer(m) for m in msg]), flush=True)
    else:
        print(json.dumps(answer(msg)), flush=True)
