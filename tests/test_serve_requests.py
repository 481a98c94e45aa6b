"""What `serve` answers a malformed, hostile or oversized request: a 4xx with a one-line reason,
never a 500 and a server-side traceback. A stand-in route on loopback; the real engines behind
it are tested in tests/systems/test_serve.py."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.serve.embeddings import EmbeddingsServer
from memeval.serve.http import MAX_BODY_BYTES, Request, make_server, url_of

pytestmark = pytest.mark.bad_input


def echo(request: Request) -> tuple[int, Any]:
    return 200, {"got": request.body}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    embeddings = EmbeddingsServer(HashingEmbedder(dim=8), "hashing", max_inputs=3)
    served = make_server({"/api/echo": {"POST": echo}, **embeddings.routes}, "127.0.0.1", 0)
    thread = threading.Thread(target=served.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield url_of(served)
    served.shutdown()
    served.server_close()


@pytest.mark.parametrize(("body", "status", "said"), [
    ("[" * 100_000 + "]" * 100_000, 400, "refused JSON: JSON nested deeper than 64 levels"),
    ('{"a": ' * 65 + "1" + "}" * 65, 400, "refused JSON: JSON nested deeper than 64 levels"),
    ('{"stored": NaN}', 400, "refused JSON: NaN where JSON allows only numbers"),
    ("{not json", 400, "invalid JSON"),
], ids=["deep", "just-too-deep", "nan", "broken"])
def test_a_bad_request_body_is_a_400_with_its_reason(server: str, body: str, status: int,
                                                     said: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    answer = httpx.post(f"{server}/api/echo", content=body,
                        headers={"content-type": "application/json"})
    assert answer.status_code == status and answer.json()["error"].startswith(said)
    assert "Traceback" not in caplog.text


def test_a_body_over_the_cap_is_a_413_before_it_is_read(server: str) -> None:
    """Only the headers are sent: the answer comes without the server reading 16 MB."""
    url = httpx.URL(server)
    with socket.create_connection((url.host, url.port), timeout=5) as raw:
        raw.sendall(f"POST /api/echo HTTP/1.1\r\nHost: {url.host}\r\ncontent-type: "
                    f"application/json\r\ncontent-length: {MAX_BODY_BYTES + 1}\r\n\r\n"
                    .encode())
        answer = b"".join(iter(lambda: raw.recv(65536), b"")).decode()  # until it closes
    assert answer.startswith("HTTP/1.0 413") and f"body over {MAX_BODY_BYTES} bytes" in answer


def test_a_sound_body_is_answered(server: str) -> None:
    answer = httpx.post(f"{server}/api/echo", json={"a": [1, {"b": 2}]})
    assert answer.status_code == 200 and answer.json() == {"got": {"a": [1, {"b": 2}]}}


@pytest.mark.parametrize(("body", "field"), [
    (b'{"user_prompt": "\\ud800", "assistant_response": "fine"}', "user_prompt"),
    (b'{"input": ["fine", "\\udc00 half a pair"]}', "input[1]"),
    (b'{"a": {"b": "\xed\xa0\x80"}}', "a.b"),  # the surrogate's own UTF-8 bytes
    (b'{"\\ud83d": 1}', "a key of the body"),
], ids=["escaped", "in a list", "as bytes", "a key"])
def test_a_lone_surrogate_is_a_400_naming_its_field(server: str, body: bytes, field: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    answer = httpx.post(f"{server}/api/echo", content=body)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(f"refused JSON: {field} holds a lone surrogate")
    assert "Traceback" not in caplog.text


def test_embeddings_past_the_input_cap_are_a_413_naming_it(server: str) -> None:
    assert httpx.post(f"{server}/v1/embeddings", json={"input": ["a", "b", "c"]}).status_code \
        == 200
    answer = httpx.post(f"{server}/v1/embeddings", json={"input": ["word"] * 200_000})
    assert answer.status_code == 413
    assert answer.json()["error"].startswith("input holds 200000 texts, over the 3 one request")
