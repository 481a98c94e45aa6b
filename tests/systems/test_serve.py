"""`python -m memeval serve`: the reference engine behind memoryd's API, driven by system=http,
must give the reference's own figures; the embedder behind the OpenAI wire format must give the
embedder's own vectors; and the command serves on loopback only, until Ctrl-C."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.embedders.openai_http import OpenAIHttpConfig, OpenAIHttpEmbedder
from memeval.config import validate
from memeval.experiments.base import RunContext
from memeval.runner import run_experiment
from memeval.serve.embeddings import EmbeddingsServer
from memeval.serve.http import Routes, make_server, url_of
from memeval.serve.memoryd import MemorydEngine
from memeval.systems.reference.system import ReferenceSystem

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

COMPARED = ("stage_counts", "judge_calls", "substantive_recall", "substantive_recall_ci95",
            "noise_stored", "low_value_filtered_rate", "per_label", "prejudge_filter_rate",
            "judge_call_saving", "rejection_store_size")


@contextmanager
def serving(routes: Routes) -> Iterator[str]:
    server = make_server(routes, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield url_of(server)
    finally:
        server.shutdown()
        server.server_close()


def in_process_and_served(tmp_path: Path, fast_config: Callable[..., DictConfig],
                          base: tuple[str, ...], *mapping: str
                          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run of `base` with the reference in process, then through system=http against the
    served engine (its routes mapped by `mapping`)."""
    reference = run_experiment(fast_config(*base), tmp_path / "reference")
    cfg = fast_config(*base)
    ctx = RunContext(cfg, tmp_path / "daemon", validate(cfg))
    engine = MemorydEngine(ReferenceSystem(ctx).ingestor(tmp_path / "daemon"),
                           ctx.dataset.entries)
    with serving(engine.routes) as url:
        served = run_experiment(fast_config(*base, "system=http", f"system.base_url={url}",
                                            "system.restart.path=/api/restart", *mapping),
                                tmp_path / "http")
    engine.close()
    return reference, served


@pytest.mark.integration
def test_the_served_engine_through_system_http_gives_the_references_own_figures(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """Every stage, judge call and rejection of every pass crosses the wire and comes back
    unchanged: the wire mapping loses nothing memeval counts."""
    reference, served = in_process_and_served(tmp_path, fast_config,
                                              ("+experiment=three_pass", "dataset.limit=80"))
    assert len(served["passes"]) == 3
    for ours, theirs in zip(reference["passes"], served["passes"], strict=True):
        assert {k: theirs[k] for k in COMPARED} == {k: ours[k] for k in COMPARED}
        assert theirs["system_errors"] == 0
    # the learning across passes is real: pass 2 drops at the content score what pass 1 judged
    assert served["passes"][1]["stage_counts"]["content_score"] > \
        served["passes"][0]["stage_counts"]["content_score"]


@pytest.mark.integration
def test_the_coding_benchmark_runs_through_the_served_engine_over_http(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """Its write path over the wire keeps what the in-process engine keeps; its search, mapped
    with ids and a depth, serves every question."""
    reference, served = in_process_and_served(
        tmp_path, fast_config,
        ("+experiment=coding_memory", "experiment.limit=12", "bootstrap=30"),
        "system.index.path=/api/index", "system.search.ids_field=ids",
        "system.search.k_field=top_k")
    ours, theirs = reference["coding"], served["coding"]
    assert theirs["questions"] == ours["questions"] == 12
    assert {k: w["stored"] for k, w in theirs["write"].items()} == \
        {k: w["stored"] for k, w in ours["write"].items()}
    dev = theirs["by_split"]["dev"]["by_category"]["answerable"]
    assert dev["write_recall"] == ours["by_split"]["dev"]["by_category"]["answerable"][
        "write_recall"]
    assert dev["recall"]["n"] == dev["questions"] and dev["recall"]["mean"] > 0


def test_the_engine_answers_in_memoryds_shapes(tmp_path: Path,
                                                fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=three_pass", "dataset.limit=40")
    ctx = RunContext(cfg, tmp_path, validate(cfg))
    engine = MemorydEngine(ReferenceSystem(ctx).ingestor(tmp_path / "state"), [])
    long = ("The embedding cache key is the sha256 of the model identity and the text, so a "
            "model change misses the cache instead of serving stale vectors.")
    with serving(engine.routes) as url, httpx.Client(base_url=url) as client:
        short = client.post("/api/ingest", json={"user_prompt": "ok", "assistant_response": "Done.",
                                                 "source": "cli"}).json()
        assert short == {"stage": "pre_filter", "stored": 0, "entry": None,
                         "summary": "skipped at pre_filter."}
        kept = client.post("/api/ingest", json={"user_prompt": "why?",
                                                "assistant_response": long}).json()
        assert kept["stored"] == 1 and kept["stage"] in ("stored", "no_synthesizer")
        memories = client.get("/api/memories").json()
        assert [m["id"] for m in memories] == [kept["entry"]["id"]]
        found = client.post("/api/search", json={"query": "embedding cache key"}).json()
        assert found["context"] == memories[0]["content"] and len(found["scores"]) == 1
        assert client.post("/api/ingest", json={"user_prompt": "x"}).status_code == 400
        surrogate = client.post("/api/ingest", content=b'{"user_prompt": "\\ud800", '
                                                        b'"assistant_response": "Done."}')
        assert surrogate.status_code == 400 and "user_prompt holds a lone" in surrogate.text
        assert client.get("/api/ingest").status_code == 405
        assert client.delete("/api/memories/nope").status_code == 404
        assert client.delete(f"/api/memories/{kept['entry']['id']}").status_code == 200
        assert client.get("/api/memories").json() == []
        assert client.post("/api/search", json={"query": "cache"}).json() == {
            "context": "No relevant memories found.", "scores": [], "ids": []}
        for n, text in enumerate(("retry with capped backoff", long, "schema migration")):
            assert client.post("/api/index", json={"content": text, "id": f"m{n}"}).json() == {
                "id": f"m{n}"}
        found = client.post("/api/search", json={"query": "embedding cache key sha256",
                                                 "top_k": 2}).json()
        assert found["ids"][0] == "m1" and len(found["ids"]) == len(found["scores"]) == 2
        assert client.post("/api/search", json={"query": "x", "top_k": 0}).status_code == 400
    engine.close()


def hashing() -> HashingEmbedder:
    return HashingEmbedder(dim=64)


def test_embeddings_speak_the_openai_wire_format() -> None:
    embedder = hashing()
    texts = ["the cache key is sha256", "retry with capped backoff"]
    with serving(EmbeddingsServer(embedder, "minilm").routes) as url, \
            httpx.Client(base_url=url) as client:
        answer = client.post("/v1/embeddings", json={"input": texts, "model": "m"}).json()
        one = client.post("/v1/embeddings", json={"input": texts[0],
                                                  "encoding_format": "base64"}).json()
        refused = client.post("/v1/embeddings", json={"input": texts, "dimensions": 8})
        tokens = client.post("/v1/embeddings", json={"input": [[1, 2, 3]]})
    assert answer["object"] == "list" and answer["model"] == "m"
    assert [d["index"] for d in answer["data"]] == [0, 1]
    np.testing.assert_allclose(np.array([d["embedding"] for d in answer["data"]]),
                               embedder.embed(texts), rtol=1e-6)
    assert one["model"] == "minilm"
    decoded = np.frombuffer(base64.b64decode(one["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(decoded, embedder.embed(texts[:1])[0], rtol=1e-6)
    assert refused.status_code == 400 and "differs from the model's 64" in refused.json()["error"]
    assert tokens.status_code == 400 and "send text" in tokens.json()["error"]


def test_memevals_own_openai_client_gets_the_served_vectors() -> None:
    """The client memeval uses for any OpenAI-compatible server, against the server memeval
    offers other tools: the same vectors as the embedder in process."""
    embedder = hashing()
    texts = [f"memory number {i} about the judge's retry policy" for i in range(40)]
    with serving(EmbeddingsServer(embedder, "hashing").routes) as url:
        client = OpenAIHttpEmbedder(OpenAIHttpConfig(base_url=f"{url}/v1",
                                                     model="hashing", batch_size=16))
        try:
            client.preflight()
            np.testing.assert_allclose(client.embed(texts), embedder.embed(texts), rtol=1e-6)
        finally:
            client.close()


@pytest.mark.bad_input
@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.com"])
def test_serve_refuses_any_host_but_loopback(host: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from memeval.__main__ import main

    assert main(["serve", "embeddings", "--host", host, "--", "embedder=hashing"]) == 2
    assert f"--host {host} is not a loopback address" in capsys.readouterr().err


def _banner_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert found, f"no URL in the banner: {line!r}"
    return found.group(0)


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_commands_drive_the_served_daemon_through_three_pass(tmp_path: Path) -> None:
    """As a user does it: `serve memoryd` in one shell, `run … system=http` in another, Ctrl-C."""
    env_args = [f"cache_dir={tmp_path / 'cache'}", "embedder=hashing", "progress=false"]
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memeval", "serve", "memoryd", "--port", "0",
         "--state-dir", str(tmp_path / "daemon"), "--", *env_args, "dataset.limit=60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _banner_url(daemon)
        run = subprocess.run(
            [sys.executable, "-m", "memeval", "run", "+experiment=three_pass", "system=http",
             f"system.base_url={url}", "system.restart.path=/api/restart", *env_args,
             "dataset.limit=60", "reporting.phoenix.endpoint=null",
             f"hydra.run.dir={tmp_path / 'run'}"],
            capture_output=True, text=True, timeout=600)
    finally:
        daemon.send_signal(signal.SIGINT)
        out, err = daemon.communicate(timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    printed = run.stdout.splitlines()
    outcomes = printed.index("write gate: outcomes")  # title, header, then a row per pass
    rows = [line for line in printed[outcomes + 2:outcomes + 5] if re.match(r"^[123]\s+\d", line)]
    assert len(rows) == 3, run.stdout[-2000:]
    assert daemon.returncode == 0 and "stopped" in out, err[-2000:]
    metrics: dict[str, Any] = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["system"]["name"] == "http"
    assert metrics["system"]["capabilities"] == ["ingest", "reset_memories"]
    assert [p["system_errors"] for p in metrics["passes"]] == [0, 0, 0]
