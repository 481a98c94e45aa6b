"""Runs Phoenix's server with its OTLP/gRPC listener on loopback, in the child process only.

Phoenix 20 binds that listener to every interface (`[::]:PORT`, hard-coded, no setting), while
memeval's servers must listen on loopback alone. Before handing over to
`python -m phoenix.server.main`, this rewrites the address of every port a gRPC asyncio server
adds from any-interface to 127.0.0.1. Nothing else of Phoenix changes, and `phoenix` itself is
still never imported by memeval's own process.
"""

from __future__ import annotations

import runpy
from typing import Any

import grpc.aio

ANY_INTERFACE = "[::]:"
LOOPBACK = "127.0.0.1:"


def on_loopback(address: str) -> str:
    return LOOPBACK + address[len(ANY_INTERFACE):] if address.startswith(ANY_INTERFACE) \
        else address


def _loopback_server(make_server: Any) -> Any:
    def server(*args: Any, **kwargs: Any) -> Any:
        built = make_server(*args, **kwargs)
        insecure, secure = built.add_insecure_port, built.add_secure_port
        built.add_insecure_port = lambda address: insecure(on_loopback(address))
        built.add_secure_port = lambda address, credentials: secure(on_loopback(address),
                                                                     credentials)
        return built

    return server


def main() -> None:
    grpc.aio.server = _loopback_server(grpc.aio.server)
    runpy.run_module("phoenix.server.main", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
