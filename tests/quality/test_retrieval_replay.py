"""Ranking metrics by hand, and the retrieval replay end to end: on the bundled three-pass store
and on small files in the LoCoMo, LongMemEval and memory JSONL schemas."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig, OmegaConf

from memeval.data.quality_sets import load_queries
from memeval.metrics.ranking import ndcg_at_k, recall_at_k
from memeval.quality.graph import rank_agreement
from memeval.reporting.report import write_report
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment


def test_ndcg_by_hand() -> None:
    grades = {"a": 2, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], grades, 3) == pytest.approx(1.0)
    swapped = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "a"], grades, 3) == pytest.approx(swapped)
    assert ndcg_at_k(["x", "y"], grades, 2) == 0.0
    assert ndcg_at_k(["x", "a"], grades, 1) == 0.0  # cut at k


def test_recall_and_rank_agreement() -> None:
    assert recall_at_k(["a", "x", "b"], {"a", "b", "c"}, 2) == pytest.approx(1 / 3)
    assert rank_agreement({"a": 3, "b": 2, "c": 1}, {"a": 30, "b": 20, "c": 10}) == 1.0
    assert rank_agreement({"a": 3, "b": 2, "c": 1}, {"a": 1, "b": 2, "c": 3}) == -1.0
    assert rank_agreement({"a": 1}, {"a": 1}) is None


def test_the_query_set_points_at_substantive_entries() -> None:
    from memeval.data.labeled_jsonl import load_labeled_jsonl
    from memeval.paths import data_path

    queries, report = load_queries(data_path("retrieval/queries_v1.jsonl"))
    labels = {e.id: e.label for e in load_labeled_jsonl(data_path("labeled/write_gate_v1.jsonl"))
              .entries}
    assert len(queries) >= 60 and report.skipped == 0
    assert all(labels[e] == "substantive" for q in queries for e in q.relevant)
    assert all(2 in q.relevant.values() for q in queries)


ARMS = ("cosine", "bm25", "hybrid", "sip0001", "sip0001_positive", "sip0001_rank_fusion",
        "query_feedback")
FILES = Path(__file__).resolve().parents[1] / "data" / "corpora"


@pytest.mark.slow
def test_the_replay_compares_arms_on_held_out_queries(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "experiment.store_passes=1",
                      "experiment.passes=2", "bootstrap=50", "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    retrieval = metrics["retrieval"]
    rows = read_table(tmp_path / "run", "retrieval_queries")
    evaluated = retrieval["queries"]["evaluation"]
    assert len(rows) == 2 * len(ARMS) * evaluated  # passes × arms × held-out queries
    assert retrieval["queries"]["usage"] + evaluated + retrieval["queries"]["unreachable"] == \
        retrieval["queries"]["labelled"]
    assert retrieval["workload"]["kind"] == "three-pass store"
    for p in metrics["passes"]:
        assert p["arms"] == list(ARMS) and p["baseline"] == "cosine"
        base = rows[(rows["pass"] == p["pass"]) & (rows["arm"] == "cosine")]
        for arm in ARMS:
            mine = rows[(rows["pass"] == p["pass"]) & (rows["arm"] == arm)]
            assert list(mine["query_id"]) == list(base["query_id"])  # paired, query by query
            assert p[arm]["ndcg"] == pytest.approx(mine["ndcg"].mean())
            low, high = p[arm]["ndcg_ci95"]
            assert low <= p[arm]["ndcg"] <= high
            if arm != "cosine":
                diff = mine["ndcg"].to_numpy() - base["ndcg"].to_numpy()
                assert p["deltas"][arm]["ndcg"] == pytest.approx(diff.mean())
        assert sum(c["queries"] for c in p["by_category"].values()) == evaluated
        for category, scores in p["by_category"].items():
            kept = base[base["kind"] == category]
            assert scores["cosine"]["ndcg"] == pytest.approx(kept["ndcg"].mean())
        assert 0.0 <= p["sip0001"]["gini_recall"] <= 1.0 and p["sip0001"]["edges"] >= 0
    assert metrics["passes"][1]["sip0001"]["rank_tau_vs_previous"] is not None
    assert rows["top_mqs"].notna().all()
    assert all(len(t) == len(m) for t, m in zip(rows["served_texts"], rows["served_memories"],
                                                strict=True))
    assert (tmp_path / "run" / "figures" / "retrieval.png").is_file()
    markdown = write_report([tmp_path / "run"])[1].read_text()  # the printed tables, CIs too
    last = metrics["passes"][-1]["cosine"]
    low, high = last["ndcg_ci95"]
    assert f"| cosine | {last['ndcg']:.3f} [{low:.3f}–{high:.3f}] | baseline |" in markdown
    assert "## nDCG@5 per query category" in markdown


@pytest.mark.slow
def test_a_graph_that_counts_for_nothing_ranks_as_cosine(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "experiment.store_passes=1",
                      "experiment.passes=1", "experiment.arms.sip0001.weight=0", "bootstrap=20")
    metrics = run_experiment(cfg, tmp_path / "run")
    assert metrics["passes"][0]["deltas"]["sip0001"]["ndcg"] == 0.0
    assert metrics["passes"][0]["deltas"]["sip0001"]["ndcg_ci95"] == [0.0, 0.0]


def _served(rows: pd.DataFrame) -> dict[str, list[str]]:
    return {q: list(m) for q, m in zip(rows["query_id"], rows["served_memories"], strict=True)}


def test_a_locomo_file_is_searched_conversation_by_conversation(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "dataset=locomo",
                      f"dataset.path={FILES / 'locomo_small.json'}", "experiment.passes=1",
                      "experiment.usage_fraction=0.3", "bootstrap=20")
    metrics = run_experiment(cfg, tmp_path / "run")
    assert metrics["dataset"]["memories"] == 30 and metrics["dataset"]["queries"] == 11
    workload = metrics["retrieval"]["workload"]
    assert workload["kind"] == "corpus" and workload["queries"] == 10  # one has no evidence
    assert workload["answer_only_queries"] == 1
    rows = read_table(tmp_path / "run", "retrieval_queries")
    for query, served in _served(rows).items():
        conversation = query.split(":")[0]
        assert served and all(m.startswith(f"{conversation}:") for m in served), (query, served)
    categories = set(metrics["passes"][0]["by_category"])
    assert categories == set(rows["kind"]) and categories <= {
        "single-hop", "multi-hop", "temporal", "open-domain", "adversarial"}


def test_longmemeval_questions_see_only_sessions_written_before_them(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.components import load_components
    from memeval.data.base import CORPORA, MemoryCorpus

    path = FILES / "longmemeval_small.json"
    cfg = fast_config("+experiment=retrieval_replay", "dataset=longmemeval",
                      f"dataset.path={path}", "dataset.search=all", "experiment.passes=1",
                      "experiment.usage_fraction=0.34", "experiment.k=10", "bootstrap=20")
    metrics = run_experiment(cfg, tmp_path / "run")
    load_components()
    corpus = CORPORA.build(OmegaConf.create({"name": "longmemeval", "path": str(path),
                                             "search": "all"}))
    assert isinstance(corpus, MemoryCorpus)
    written = {m.id: m.timestamp for m in corpus.memories}
    asked = {q.id: q.asked_at for q in corpus.queries}
    rows = read_table(tmp_path / "run", "retrieval_queries")
    assert len(rows) > 0 and metrics["retrieval"]["queries"]["evaluation"] == len(rows) // len(ARMS)
    for query, served in _served(rows).items():
        # k = 10 asks for every session: only those written by the question's date come back
        assert sorted(served) == sorted(m for m, t in written.items() if t <= asked[query])


@pytest.mark.slow
def test_feedback_noise_flips_what_the_usage_queries_teach(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    lifted = {}
    for noise in ("0", "1"):
        cfg = fast_config("+experiment=retrieval_replay", "dataset=memory_jsonl",
                          f"dataset.memories={FILES / 'memories.jsonl'}",
                          f"dataset.queries={FILES / 'queries.jsonl'}", "experiment.passes=1",
                          f"experiment.feedback_noise={noise}", "bootstrap=20",
                          "experiment.k=3")
        metrics = run_experiment(cfg, tmp_path / f"noise{noise}")
        lifted[noise] = metrics["passes"][0]["query_feedback"]["memories_lifted"]
        assert metrics["retrieval"]["settings"]["feedback_noise"] == float(noise)
    # without noise only the relevant served memories are lifted; with every judgement flipped,
    # only the irrelevant ones: with k = 3 and one or two relevant memories, more of those
    assert 0 < lifted["0"] < lifted["1"]


def test_the_summary_fits_the_terminal_with_long_category_names() -> None:
    from memeval.experiments.retrieval_replay import summarise
    from memeval.reporting.table import WIDTH

    names = ["single-session-assistant", "single-session-preference", "single-session-user",
             "knowledge-update", "multi-session", "temporal-reasoning"]
    scores = {"ndcg": 0.5, "ndcg_ci95": [0.4, 0.6], "recall": 0.5, "recall_ci95": [0.4, 0.6]}
    delta = {"ndcg": -0.1, "ndcg_ci95": [-0.2, -0.05], "recall": 0.0, "recall_ci95": [0, 0]}
    arms = list(ARMS)
    last = {"pass": 3, "arms": arms, "baseline": "cosine", **{a: scores for a in arms},
            "deltas": {a: delta for a in arms[1:]},
            "by_category": {c: {"queries": 10, **{a: scores for a in arms}} for c in names}}
    printed = summarise([last], 5)
    assert max(len(line) for line in printed.splitlines()) <= WIDTH, printed
    header = next(line for line in printed.splitlines() if line.startswith("arm ") and "c1" in line)
    assert header.split() == ["arm", "c1", "c2", "c3", "c4", "c5", "c6"]  # named in the legend
    assert "c1 single-session-assistant 10" in " ".join(printed.split())
