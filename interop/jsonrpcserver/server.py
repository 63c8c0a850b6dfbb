"""A JSON-RPC server written with Python's `jsonrpcserver` 5 behind its built-in HTTP server,
implementing the specification's example methods, so that
`sansrpc check --http 127.0.0.1:PORT` can check a server not written here.

Usage: python3 server.py PORT
"""
import sys

from jsonrpcserver import Result, Success, method, serve


@method
def subtract(*args, **kwargs) -> Result:
    if kwargs:
        return Success(kwargs["minuend"] - kwargs["subtrahend"])
    return Success(args[0] - args[1])


@method(name="sum")
def sum_(*args) -> Result:
    return Success(sum(args))


@method
def get_data() -> Result:
    return Success(["hello", 5])


@method
def update(*args) -> Result:
    return Success(None)


@method
def notify_hello(*args) -> Result:
    return Success(None)


@method
def notify_sum(*args) -> Result:
    return Success(None)


if __name__ == "__main__":
    serve("127.0.0.1", int(sys.argv[1]))
