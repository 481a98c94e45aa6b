"""OpenAI-compatible /embeddings client against a loopback server."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.backends.embedders.base import EMBEDDERS, EmbeddingError
from memeval.backends.embedders.openai_http import OpenAIHttpConfig, OpenAIHttpEmbedder
from memeval.registry import ConfigError
from tests.loopback import LoopbackServer, Received, Reply

KEY_ENV = "MEMEVAL_TEST_EMBED_KEY"


def raw_vector(text: str) -> list[float]:
    """Deterministic, text-dependent and deliberately not unit length."""
    return [float(len(text)), float(ord(text[0])), 3.0]


def embeddings_server(reverse: bool = True) -> LoopbackServer:
    def respond(req: Received) -> Reply:
        items = [
            {"object": "embedding", "index": i, "embedding": raw_vector(text)}
            for i, text in enumerate(req.body["input"])
        ]
        if reverse:
            items.reverse()  # servers may answer out of order; `index` is authoritative
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return Reply(200, {"object": "list", "data": items, "model": req.body["model"],
                           "usage": usage})

    return LoopbackServer(respond)


def embedder(base_url: str, **overrides: object) -> OpenAIHttpEmbedder:
    cfg = OpenAIHttpConfig(base_url=base_url, model="embed-test", **overrides)  # type: ignore[arg-type]
    cfg.validate()
    return OpenAIHttpEmbedder(cfg)


def expected(texts: list[str]) -> np.ndarray:
    rows = np.asarray([raw_vector(t) for t in texts], dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


TEXTS = ["alpha", "be", "gamma ray", "d", "epsilon!"]


def test_rows_follow_index_and_are_normalised_float32() -> None:
    with embeddings_server(reverse=True) as srv:
        emb = embedder(f"{srv.base_url}/v1")
        out = emb.embed(TEXTS)
        req = srv.requests[0]
    assert out.dtype == np.float32 and out.shape == (5, 3)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out, expected(TEXTS), rtol=1e-6)
    assert emb.dim == 3  # learned from the first response
    assert req.path == "/v1/embeddings"
    assert req.body == {"model": "embed-test", "input": TEXTS}
    assert "authorization" not in req.headers


def test_batching_splits_requests_and_keeps_order() -> None:
    with embeddings_server() as srv:
        out = embedder(f"{srv.base_url}/v1", batch_size=2).embed(TEXTS)
        inputs = [r.body["input"] for r in srv.requests]
    assert inputs == [["alpha", "be"], ["gamma ray", "d"], ["epsilon!"]]
    np.testing.assert_allclose(out, expected(TEXTS), rtol=1e-6)


def test_identity_and_registry() -> None:
    emb = EMBEDDERS.build({"name": "openai_http", "model": "nomic", "base_url": "http://127.0.0.1:1/v1/"})
    assert isinstance(emb, OpenAIHttpEmbedder)
    assert emb.identity == "openai_http:http://127.0.0.1:1/v1:nomic"
    assert EMBEDDERS.validate({"name": "openai_http"}).base_url == "http://127.0.0.1:8080/v1"


def test_api_key_sent_as_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-embed")
    with embeddings_server() as srv:
        embedder(f"{srv.base_url}/v1", api_key_env=KEY_ENV).embed(["x"])
        assert srv.requests[0].headers["authorization"] == "Bearer sk-embed"


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with embeddings_server() as srv:
        with pytest.raises(EmbeddingError, match=KEY_ENV):
            embedder(f"{srv.base_url}/v1", api_key_env=KEY_ENV).embed(["x"])
        assert srv.hits == 0


def test_server_down_raises_embedding_error_with_url() -> None:
    srv = embeddings_server().start()
    url = f"{srv.base_url}/v1"
    srv.stop()
    with pytest.raises(EmbeddingError) as info:
        embedder(url, max_retries=0).embed(["x"])
    assert f"{url}/embeddings" in str(info.value)


def test_http_error_raises_embedding_error() -> None:
    with LoopbackServer(lambda req: Reply(404, {"error": "model not found"})) as srv:
        with pytest.raises(EmbeddingError, match="model not found"):
            embedder(f"{srv.base_url}/v1").embed(["x"])
        assert srv.hits == 1


def test_dimension_mismatch_and_bad_shapes() -> None:
    with embeddings_server() as srv, pytest.raises(EmbeddingError, match="expected 4"):
        embedder(f"{srv.base_url}/v1", dim=4).embed(["x"])
    missing = Reply(200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
    with LoopbackServer(lambda req: missing) as srv, pytest.raises(EmbeddingError, match="indices"):
        embedder(f"{srv.base_url}/v1").embed(["x", "y"])
    with (
        LoopbackServer(lambda req: Reply(200, {"nope": []})) as srv,
        pytest.raises(EmbeddingError, match="unexpected response shape"),
    ):
        embedder(f"{srv.base_url}/v1").embed(["x"])


@pytest.mark.bad_input
@pytest.mark.parametrize(("text", "said"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ('{"data": [{"index": 0, "embedding": [NaN, 1.0]}]}', "NaN where JSON allows only numbers"),
], ids=["deep", "nan"])
def test_a_hostile_answer_is_one_embedding_error_line(text: str, said: str) -> None:
    with (
        LoopbackServer(lambda req: Reply(200, text=text)) as srv,
        pytest.raises(EmbeddingError) as info,
    ):
        embedder(f"{srv.base_url}/v1", max_retries=0).embed(["x"])
    assert said in str(info.value) and "\n" not in str(info.value)


def test_empty_input_makes_no_request() -> None:
    with embeddings_server() as srv:
        out = embedder(f"{srv.base_url}/v1", dim=3).embed([])
        assert srv.hits == 0
    assert out.shape == (0, 3) and out.dtype == np.float32


# -- preflight and failures -------------------------------------------------------------------


@pytest.mark.faults
def test_preflight_unreachable_names_the_url_and_embedder_base_url() -> None:
    srv = embeddings_server().start()
    url = f"{srv.base_url}/v1"
    srv.stop()
    with pytest.raises(ConfigError) as info:
        embedder(url, max_retries=0).preflight()
    message = str(info.value)
    assert f"from {url}/embeddings: is the server running? check embedder.base_url" in message
    assert "embedder.preflight=false" in message


@pytest.mark.faults
def test_preflight_needs_vectors_back() -> None:
    with (
        LoopbackServer(lambda req: Reply(200, {"object": "list", "data": []})) as srv,
        pytest.raises(ConfigError, match=f"{srv.base_url}/v1/embeddings returned indices"),
    ):
        embedder(f"{srv.base_url}/v1").preflight()


@pytest.mark.bad_input
def test_preflight_names_the_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    refused = f"HTTP 401 Unauthorized from .*: check the key in {KEY_ENV}"
    with (
        LoopbackServer(lambda req: Reply(401, {"error": "bad key"})) as srv,
        pytest.raises(ConfigError, match=refused),
    ):
        embedder(f"{srv.base_url}/v1", api_key_env=KEY_ENV).preflight()
    monkeypatch.delenv(KEY_ENV)
    with embeddings_server() as srv:
        with pytest.raises(ConfigError, match=f"{KEY_ENV} is not set"):
            embedder(f"{srv.base_url}/v1", api_key_env=KEY_ENV).preflight()
        assert srv.hits == 0


def test_preflight_embeds_one_text_learns_the_width_and_can_be_turned_off() -> None:
    with embeddings_server() as srv:
        emb = embedder(f"{srv.base_url}/v1")
        emb.preflight()
        assert srv.hits == 1 and len(srv.requests[0].body["input"]) == 1 and emb.dim == 3
        embedder(f"{srv.base_url}/v1", preflight=False).preflight()
        assert srv.hits == 1


@pytest.mark.faults
def test_a_server_that_fell_over_is_named_by_every_error_and_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with LoopbackServer(lambda req: Reply(503, {"error": "loading model"})) as srv:
        emb = embedder(f"{srv.base_url}/v1", max_retries=0)
        errors = []
        with caplog.at_level("WARNING"):
            for text in ("a", "b", "c"):
                with pytest.raises(EmbeddingError) as info:
                    emb.embed([text])
                errors.append(str(info.value))
        assert srv.hits == 1  # down for embedder.down_for_s after the first failure
    url = f"{srv.base_url}/v1/embeddings"
    assert all(url in error for error in errors) and errors[1] == errors[2]  # stable: countable
    assert "embedder.down_for_s" in errors[1] and "loading model" in errors[1]
    assert caplog.records and all(url in r.getMessage() for r in caplog.records)
