"""system=mem0: the real mem0ai package on a local FAISS index, with memeval's embedder in its
embedder slot, telemetry off; its LLM (infer=True) on an OpenAI-compatible loopback server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.runner import run_experiment
from memeval.systems.base import SYSTEMS, IndexedMemory
from memeval.systems.mem0.system import AHEAD, Mem0System
from tests.backends.test_http_judges import openai_reply
from tests.loopback import LOOPBACK_AUDIT, HeaderTrickler, LoopbackServer, Received, Reply, scripted

pytestmark = pytest.mark.slow  # runs whole experiments: not the quick tier

pytest.importorskip("mem0")

LOCOMO = Path(__file__).parents[1] / "data" / "corpora" / "locomo_small.json"


def test_retrieval_through_mem0_matches_cosine_on_the_same_embedder(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """mem0 searches FAISS over memeval's own vectors: the same ranking as the cosine arm, which
    shows each memory went in through mem0 and came back by its id."""
    metrics = run_experiment(fast_config("+experiment=retrieval_replay", "dataset=locomo",
                                         f"dataset.path={LOCOMO}", "system=mem0",
                                         "experiment.passes=1", "bootstrap=20"),
                             tmp_path / "run")
    last = metrics["passes"][-1]
    assert last["mem0"]["ndcg"] == pytest.approx(last["cosine"]["ndcg"])
    assert metrics["system"]["capabilities"] == ["ingest", "reset_memories", "search"]
    assert metrics["system"]["notes"]["telemetry"] == "off (MEM0_TELEMETRY=False)"
    assert (tmp_path / "run" / "mem0" / "history.db").is_file()  # mem0's files stay in the run


def test_mem0_s_own_embedder_can_read_memeval_s_served_one(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        embeddings_server: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = embeddings_server
    metrics = run_experiment(fast_config("+experiment=retrieval_replay", "dataset=locomo",
                                         f"dataset.path={LOCOMO}", "system=mem0",
                                         f"system.embeddings_base_url={url}",
                                         "experiment.passes=1", "bootstrap=20"),
                             tmp_path / "run")
    assert 0.0 <= metrics["passes"][-1]["mem0"]["ndcg"] <= 1.0
    assert metrics["system"]["notes"]["embeddings"].endswith("(256 dimensions)")
    texts = [text for request in seen for text in request["input"]]
    assert len(texts) > 30  # the probe, every memory mem0 added and every query it searched
    assert len(seen) < len(texts)  # the memories embedded ahead, many to a request


def test_three_passes_through_mem0_store_every_turn_without_an_llm(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    passes = run_experiment(fast_config("+experiment=three_pass", "system=mem0",
                                         "dataset.limit=40"), tmp_path / "run")["passes"]
    assert [p["stage_counts"]["stored"] for p in passes] == [40, 40, 40]
    assert all(p["judge_calls"] == 0 for p in passes)


def test_with_infer_mem0s_llm_decides_what_each_turn_adds(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    """mem0's own extraction call goes to the loopback server, which keeps a fact from a turn
    that mentions a file and nothing from any other."""
    def extract(request: Received) -> Reply:
        turn = request.body["messages"][-1]["content"]
        facts = [{"text": "a fact about a file"}] if "." in turn and "/" in turn else []
        return openai_reply(json.dumps({"memory": facts}), 30, 8)

    with LoopbackServer(extract) as server:
        passes = run_experiment(fast_config("+experiment=three_pass", "system=mem0",
                                            "system.infer=true",
                                            f"system.llm_base_url={server.base_url}/v1",
                                            "experiment.passes=1", "dataset.limit=30"),
                                tmp_path / "run")["passes"]
        paths = [r.path for r in server.requests]
    counts = passes[0]["stage_counts"]
    assert len(paths) == 30 and set(paths) == {"/v1/chat/completions"}
    assert counts["stored"] + counts["judge"] == 30 and 0 < counts["stored"] < 30
    assert passes[0]["judge_calls"] == 30


NO_NETWORK = LOOPBACK_AUDIT + """
from memeval.__main__ import main
sys.argv = ["memeval", *sys.argv[1:]]
try:
    main()
finally:
    print("ATTEMPTS", attempts)
"""


@pytest.mark.integration
def test_mem0_contacts_nothing_but_loopback(tmp_path: Path) -> None:
    """In a process of its own, so mem0's import (where telemetry would start) is audited."""
    done = subprocess.run(
        [sys.executable, "-c", NO_NETWORK, "run", "+experiment=memory_qa", "dataset=locomo",
         f"dataset.path={LOCOMO}", "system=mem0", "embedder=hashing", "progress=false",
         "plots=false", "reporting.phoenix.endpoint=null", f"cache_dir={tmp_path / 'cache'}",
         f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "ATTEMPTS []"
    assert "memory QA: system mem0 on locomo_small" in done.stdout


WIDTH = 8
MEMORIES = [IndexedMemory("m1", "The cache key is sha256 of the identity and the text."),
            IndexedMemory("m2", "Judge retries live in conf/judge/anthropic.yaml.")]


def embeddings_body(vector: Any) -> dict[str, Any]:
    return {"object": "list", "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1},
            "data": [{"object": "embedding", "index": 0, "embedding": vector}]}


def mem0(tmp_path: Path, embedder: Any = None, **settings: Any) -> Mem0System:
    """mem0 built as a run builds it, without the run: cheap enough for one test per fault."""
    ctx = SimpleNamespace(run_dir=tmp_path, embedder=embedder or HashingEmbedder(WIDTH))
    system = SYSTEMS.build({"name": "mem0", **settings}, ctx=ctx)
    assert isinstance(system, Mem0System)
    return system


@pytest.mark.parametrize(("reply", "said"), [
    (Reply(500, {"error": "boom"}), "InternalServerError: Error code: 500"),
    (Reply(200, text='{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"),
     "an answer not shaped as embeddings"),
    (Reply(200, {"data": "nope"}), "an answer not shaped as embeddings"),
    (Reply(200, embeddings_body([0.5] * 3)), "a vector of 3 values, not the 8 of mem0's index"),
    (Reply(200, text=json.dumps(embeddings_body([0.5] * WIDTH)).replace("0.5", "NaN", 1)),
     "returned nan at position 0 of a vector (1 not finite)"),
], ids=["500", "deep", "shape", "width", "nan"])
def test_mem0_s_embeddings_endpoint_misbehaving_is_one_embedding_error(
        reply: Reply, said: str, tmp_path: Path) -> None:
    """The width probe is answered, then every embedding mem0 asks for is bad: one line naming
    mem0, the call and the value, not openai's, json's or FAISS's traceback, nor a NaN stored.
    (One memory: each answer holds one vector.)"""
    with LoopbackServer(scripted([Reply(200, embeddings_body([0.5] * WIDTH))], reply)) as srv:
        system = mem0(tmp_path, embeddings_base_url=f"{srv.base_url}/v1", max_retries=0)
        with pytest.raises(EmbeddingError) as failed:
            system.index(MEMORIES[:1])
    line = str(failed.value)
    assert line.startswith(f"mem0's OpenAI embedder at {srv.base_url}/v1, embedding for add")
    assert said in line and "\n" not in line


def test_mem0_s_embedder_ends_at_system_timeout_s_when_its_headers_never_end(
        tmp_path: Path) -> None:
    with HeaderTrickler(every_s=0.5, first=[embeddings_body([0.5] * WIDTH)]) as server:
        system = mem0(tmp_path, embeddings_base_url=f"{server.base_url}/v1", timeout_s=1.0,
                      max_retries=1)
        started = time.monotonic()
        with pytest.raises(EmbeddingError, match=r"embedding for add: APITimeoutError: .*"
                                                 r"\(ReadTimeout: no whole answer within 1 s\)"):
            system.index(MEMORIES)
        took = time.monotonic() - started
    assert server.hits == 3  # the probe, then mem0's request and its one retry
    assert took < 2 * 1.0 + 2.0  # two deadlines and openai's backoff, not mem0's 600 s
    assert (system.memory.llm.client.timeout, system.memory.llm.client.max_retries) == (1.0, 1)


class Poisoned:
    """memeval's hashing embedder, but NaN for any text that mentions poison."""

    dim, identity = WIDTH, "poisoned"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = HashingEmbedder(WIDTH).embed(texts)
        rows[["poison" in text for text in texts]] = np.nan
        return rows


def test_a_nan_vector_from_memeval_s_embedder_never_reaches_a_mem0_search(
        tmp_path: Path) -> None:
    system = mem0(tmp_path, embedder=Poisoned())
    system.index(MEMORIES)
    assert {hit.id for hit in system.search("the cache key", 2)} == {"m1", "m2"}
    with pytest.raises(EmbeddingError, match=r"^memeval's embedder \(poisoned\) in mem0, "
                                             r"embedding for search returned nan at position 0"):
        system.search("poison", 2)
    with pytest.raises(EmbeddingError, match="embedding for add returned nan"):
        system.index([IndexedMemory("m3", "poison in the well")])


def test_a_search_answer_mem0_cannot_give_is_one_system_failure(tmp_path: Path) -> None:
    system = mem0(tmp_path)
    system.memory.search = lambda *_, **__: {"results": [{"metadata": {}, "score": None}]}
    with pytest.raises(SystemFailure, match=r"^system 'mem0': search\(\) answered .*, which is "
                                            r"not a list of scored memories: TypeError"):
        system.search("the cache key", 2)


class Counting:
    """Poisoned, counting the calls mem0 makes into it and the texts of each."""

    dim, identity = WIDTH, "counting"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return Poisoned().embed(texts)


def stored_vectors(system: Mem0System) -> dict[str, np.ndarray]:
    """mem0's FAISS index, vector by the memeval id of the memory it holds."""
    store = system.memory.vector_store
    return {store.docstore[vector_id]["memeval_id"]: store.index.reconstruct(int(at))
            for at, vector_id in store.index_to_id.items()}


def test_memories_are_embedded_ahead_in_batches_to_the_same_vectors(tmp_path: Path) -> None:
    """mem0 asks for one text at a time; memeval embeds AHEAD of them in one call, and mem0
    stores exactly the vectors it would have asked for one by one."""
    memories = [IndexedMemory(f"m{i}", f"memory number {i} about topic {i % 7}")
                for i in range(AHEAD + 6)]
    counting = Counting()
    system = mem0(tmp_path, embedder=counting)
    system.index(memories)
    assert counting.calls == [AHEAD, 6]  # not a call per memory
    stored = stored_vectors(system)
    one_by_one = HashingEmbedder(WIDTH)
    for memory in memories:
        assert np.allclose(stored[memory.id], one_by_one.embed([memory.text])[0], atol=1e-6)
    assert re.fullmatch(r"70 add\(\) in [\d.]+ s: [\d.]+ s embedding, -?[\d.]+ s mem0's own; "
                        r"1 delete_all\(\) in [\d.]+ s", system.notes["time"])
    counting.calls.clear()
    system.search(memories[3].text, 1)
    assert counting.calls == [1]  # a search embeds its query: vectors held are for adds only


def test_a_bad_vector_embedded_ahead_fails_only_its_own_turn(tmp_path: Path) -> None:
    counting = Counting()
    system = mem0(tmp_path, embedder=counting)
    entries = [Entry(f"e{i}", "q", "poison in the well" if i == 2 else f"turn {i} of the pass")
               for i in range(5)]
    ingestor = system.ingestor(tmp_path)
    decisions = list(ingestor.run_pass(ingestor.prepare(entries), 1))
    assert [d.outcome for d in decisions] == ["stored", "stored", "error", "stored", "stored"]
    assert "embedding for add returned nan" in decisions[2].system_error
    assert counting.calls == [5]  # the whole pass in one call, the poisoned turn not retried
    assert len(stored_vectors(system)) == 4
