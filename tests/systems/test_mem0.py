"""system=mem0: the real mem0ai package on a local FAISS index, with memeval's embedder in its
embedder slot, telemetry off; its LLM (infer=True) on an OpenAI-compatible loopback server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.runner import run_experiment
from tests.backends.test_http_judges import openai_reply
from tests.loopback import LOOPBACK_AUDIT, LoopbackServer, Received, Reply

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
    assert len(seen) > 30  # the probe, every memory mem0 added and every query it searched


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
