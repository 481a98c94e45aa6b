"""A real Phoenix server on free loopback ports, started once for this package's tests (it takes
~20 s) and stopped when they are done: an idle Phoenix keeps a fifth of a core busy, which the rest
of the session would pay for. Under pytest-xdist these tests all run in one worker
(tests/conftest.py), one after another."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memeval.reporting.phoenix.server import PhoenixServer, PhoenixSettings, free_port


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports on 127.0.0.1."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


@pytest.fixture(scope="session")
def phoenix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    """One server for the worker that runs tests/phoenix/ (tests/conftest.py groups them): a
    package-scoped one was torn down and started again whenever the worker ran another
    package's test between two of these, about 20 s each time."""
    port, grpc_port = free_ports(2)
    settings = PhoenixSettings(
        port=port, grpc_port=grpc_port, working_dir=tmp_path_factory.mktemp("phoenix")
    )
    server = PhoenixServer(settings)
    server.start()
    try:
        server.wait_healthy(timeout_s=180)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def phoenix_url(phoenix_server: PhoenixServer) -> str:
    """Base URL of the session's Phoenix, e.g. http://127.0.0.1:PORT (OTLP at /v1/traces)."""
    return phoenix_server.url
