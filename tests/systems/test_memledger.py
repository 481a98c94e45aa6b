"""system=memledger: the real memledger package, on a real SQLite file, with memeval's hashing
embedder in process (or through LiteLLM to a loopback /v1/embeddings)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.entry import Entry
from memeval.metrics.gate_metrics import SystemFailure
from memeval.quality.record import MemoryRecord
from memeval.registry import ConfigError
from memeval.runner import run_experiment
from memeval.systems.base import SYSTEMS, Capability, IndexedMemory
from memeval.systems.memledger.runtime import SEARCH_PATHS
from memeval.systems.memledger.system import MemledgerSystem
from tests.loopback import LOOPBACK_AUDIT

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

pytest.importorskip("memledger")

NEAR = ("Postgres max_connections is 200 on the prod cluster",
        "Postgres max_connections is 100 on the prod cluster")
APART = ("The orders-api CI workflow pins Node 18 in its matrix",
         "Grafana dashboards for billing live in the infra repository")


class Context:
    """What the system takes from a run: the embedder and the run directory."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.embedder = HashingEmbedder(256)
        self.seed = 0


def build(tmp_path: Path, **settings: Any) -> MemledgerSystem:
    system = SYSTEMS.build({"name": "memledger", **settings}, ctx=Context(tmp_path))
    assert isinstance(system, MemledgerSystem)
    return system


@pytest.fixture
def memledger(tmp_path: Path) -> Iterator[MemledgerSystem]:
    system = build(tmp_path)
    try:
        yield system
    finally:
        system.close()


def count_rows(system: MemledgerSystem) -> int:
    async def rows() -> int:
        cursor = await system._ledger._backend._conn.execute("SELECT count(*) FROM memories")
        return int((await cursor.fetchone())[0])

    return system._loop.run(rows())


def test_search_runs_on_sqlite_vec_and_says_so(memledger: MemledgerSystem,
                                               tmp_path: Path) -> None:
    assert memledger.notes["search_path"] == SEARCH_PATHS[True]
    assert (tmp_path / "memledger" / "memledger.db").is_file()
    assert memledger.capabilities == frozenset(Capability) - {Capability.FREEZE}


def test_every_turn_is_stored_and_a_restart_empties_the_ledger(
        memledger: MemledgerSystem, tmp_path: Path) -> None:
    entries = [Entry(f"e{i}", "q", text, "substantive", "human")
               for i, text in enumerate([*NEAR, *APART])]
    ingestor = memledger.ingestor(tmp_path / "state")
    items = ingestor.prepare(entries)
    decisions = list(ingestor.run_pass(items, 1))
    assert [d.outcome for d in decisions] == ["stored"] * 4
    assert all(d.retained and not d.judge_called and not d.system_error for d in decisions)
    assert ingestor.pass_state({})["memledger_conflicts_flagged"] == 1  # the near pair
    assert count_rows(memledger) == 4
    ingestor.restart(wipe_memories=True)
    assert count_rows(memledger) == 0
    with pytest.raises(ConfigError, match="cannot replay without learning: its ingestor"):
        ingestor.learning = False


def test_turns_are_redacted_before_they_reach_memledger(memledger: MemledgerSystem,
                                                        tmp_path: Path) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    ingestor = memledger.ingestor(tmp_path / "state")
    entry = Entry("e1", "q", f"The deploy key is {secret} for the staging bucket", None, None)
    list(ingestor.run_pass(ingestor.prepare([entry]), 1))

    async def contents() -> list[str]:
        cursor = await memledger._ledger._backend._conn.execute("SELECT content FROM memories")
        return [row[0] for row in await cursor.fetchall()]

    stored = memledger._loop.run(contents())
    assert len(stored) == 1 and secret not in stored[0]


def test_a_near_duplicate_pair_conflicts_and_unrelated_texts_do_not(
        memledger: MemledgerSystem) -> None:
    assert memledger.detect_conflict(*NEAR) == "conflict"
    assert memledger.detect_conflict(*APART) is None
    assert count_rows(memledger) == 0  # each pair is forgotten once judged


def test_search_finds_the_memory_and_feedback_is_recorded(
        memledger: MemledgerSystem) -> None:
    memories = [IndexedMemory("pg", NEAR[0]), IndexedMemory("ci", APART[0]),
                IndexedMemory("graf", APART[1])]
    memledger.index(memories)
    hits = memledger.search("how many Postgres max_connections on prod", 2)
    assert [h.id for h in hits][:1] == ["pg"] and len(hits) == 2
    memledger.record_outcome("pg", success=True)
    memledger.record_outcome("pg", success=False)
    found = memledger._loop.run(memledger._ledger.search(NEAR[0], top_k=1))
    assert (found.records[0].success_count, found.records[0].failure_count) == (1, 1)
    memledger.index(memories[:1])  # a new index replaces the old one
    assert count_rows(memledger) == 1
    with pytest.raises(KeyError, match="ci"):
        memledger.record_outcome("ci", success=True)


def test_trust_is_memledgers_mqs_with_its_own_weakest_link(
        memledger: MemledgerSystem) -> None:
    parent = MemoryRecord("p", "parent", confidence=0.3)
    child = MemoryRecord("c", "child", confidence=0.95, derived_from=["p"], success_count=2,
                         failure_count=1, access_count=2)
    hedged = MemoryRecord("h", "hedged", confidence=0.55, hedged=True, access_count=2,
                          conflicts=["p"])
    # child: 0.3×60 + 3/5×25 + 2×1.5 = 36; hedged: 33 + 12.5 + 3 − 10 − 5 = 33.5 → 34 (half even)
    assert memledger.score_records([parent, child, hedged]) == [30.0, 36.0, 34.0]


@pytest.mark.bad_input
def test_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="embeddings must be one of memeval, litellm"):
        build(tmp_path, embeddings="fastembed")
    with pytest.raises(ConfigError, match="conflict_threshold"):
        build(tmp_path, conflict_threshold=1.5)
    with pytest.raises(ConfigError, match="gate_min_confidence must not exceed"):
        build(tmp_path, gate_min_confidence=0.7)


@pytest.mark.integration
def test_litellm_embeddings_come_from_the_loopback_server(
        tmp_path: Path, embeddings_server: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = embeddings_server
    system = build(tmp_path, embeddings="litellm", embeddings_base_url=url)
    try:
        assert system.notes["search_path"] == SEARCH_PATHS[True]
        assert "256 dimensions" in system.notes["embeddings"]
        assert system.detect_conflict(*NEAR) == "conflict"
        assert system.detect_conflict(*APART) is None
    finally:
        system.close()
    assert len(seen) >= 5 and {body["model"] for body in seen} == {"memeval"}
    assert any(body["input"] in (NEAR[1], [NEAR[1]]) for body in seen)


@pytest.mark.integration
def test_a_missing_embeddings_server_is_named(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConfigError, match=f"no embeddings from http://127.0.0.1:{port}/v1"):
        build(tmp_path, embeddings="litellm", embeddings_base_url=f"http://127.0.0.1:{port}/v1",
              timeout_s=60.0)


NO_NETWORK = LOOPBACK_AUDIT + """
import threading
from pathlib import Path
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.serve.embeddings import EmbeddingsServer
from memeval.serve.http import make_server, url_of
from memeval.systems.base import SYSTEMS
import memeval.systems.memledger.system
http = make_server(EmbeddingsServer(HashingEmbedder(64), "h").routes, "127.0.0.1", 0)
threading.Thread(target=http.serve_forever, daemon=True).start()
class Ctx:
    run_dir = Path(sys.argv[1])
system = SYSTEMS.build({"name": "memledger", "embeddings": "litellm",
                        "embeddings_base_url": url_of(http) + "/v1"}, ctx=Ctx())
print(system.detect_conflict("a b c d", "a b c d"))
system.close()
print("ATTEMPTS", attempts)
"""


@pytest.mark.integration
def test_litellm_path_contacts_nothing_but_loopback(tmp_path: Path) -> None:
    """In a process of its own, so litellm's import (where its price list would be fetched
    from the internet without LITELLM_LOCAL_MODEL_COST_MAP) is seen by the audit hook."""
    done = subprocess.run([sys.executable, "-c", NO_NETWORK, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-2:] == ["conflict", "ATTEMPTS []"]


@pytest.mark.slow
def test_three_pass_with_memledger_names_its_search_path(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run_experiment(fast_config("+experiment=three_pass", "system=memledger",
                               "dataset.limit=40"), tmp_path / "run")
    assert f"memledger, search_path: {SEARCH_PATHS[True]}" in capsys.readouterr().out
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["system"]["name"] == "memledger"
    assert metrics["system"]["notes"]["search_path"] == SEARCH_PATHS[True]
    passes = metrics["passes"]
    assert [p["stage_counts"]["stored"] for p in passes] == [40, 40, 40]
    assert all(p["judge_calls"] == 0 and p["system_errors"] == 0 for p in passes)
    # a ledger emptied before each pass meets the same turns: the same conflicts each time
    assert len({p["memledger_conflicts_flagged"] for p in passes}) == 1
    assert (tmp_path / "run" / "memledger" / "memledger.db").is_file()


def test_the_fallback_search_path_is_named_when_sqlite_vec_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memeval.systems.memledger.system.vec_enabled", lambda ledger: False)
    system = build(tmp_path)
    try:
        assert system.notes["search_path"] == SEARCH_PATHS[False]
        assert "not semantic" in system.notes["search_path"]
    finally:
        system.close()


@pytest.mark.bad_input
def test_without_the_package_the_error_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "memledger" else real(name, *a))
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[memledger\]"'):
        build(tmp_path)


@pytest.mark.faults
def test_turns_memledger_failed_to_add_are_counted_and_fail_the_run_past_the_share(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = MemledgerSystem.add, {"n": 0}

    def flaky(self: MemledgerSystem, text: str, namespace: str, **fields: Any) -> Any:
        calls["n"] += 1
        if calls["n"] % 10 == 0:
            raise OSError("disk I/O error")
        return real(self, text, namespace, **fields)

    monkeypatch.setattr(MemledgerSystem, "add", flaky)
    with pytest.raises(SystemFailure, match=r"system\.max_error_share"):
        run_experiment(fast_config("+experiment=three_pass", "system=memledger",
                                   "dataset.limit=30", "plots=false"), tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())  # results kept
    assert [p["system_errors"] for p in metrics["passes"]] == [3, 3, 3]
    assert metrics["passes"][0]["system_error_reasons"] == {"OSError: disk I/O error": 3}
    assert metrics["failures"] and "system.max_error_share" in metrics["failures"][0]
