"""Conflict rules, the labelled-pairs loader, per-class metrics and the experiment end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.data.quality_sets import load_conflict_pairs
from memeval.metrics.classification import per_class_report, precision, recall
from memeval.quality.conflicts import ConflictDetector, ConflictRules, ConflictType
from memeval.quality.words import Lexicon, stem
from memeval.reporting.report import write_report
from memeval.results.run_dir import read_table
from memeval.runner import run_experiment

DETECT = ConflictDetector(ConflictRules())
REFERENCE = ConflictDetector(ConflictRules(compat=True))


@pytest.mark.parametrize(("a", "b", "kind"), [
    ("User likes tabs", "User dislikes tabs", ConflictType.CONTRADICTION),
    ("The staging database is Postgres", "The staging database isn't Postgres",
     ConflictType.CONTRADICTION),
    ("The API currently lives on host alpha", "The API lived on host alpha before the move",
     ConflictType.TEMPORAL),
    ("Postgres runs on port 5432 in staging", "Postgres in staging listens on port 5433",
     ConflictType.SEMANTIC),
    # one word apart: Jaccard 0.75 is above the document's band, so the rule misses it
    ("Postgres runs on port 5432 in staging", "Postgres runs on port 5433 in staging", None),
    ("User likes tabs", "The deploy runs nightly", None),
])
def test_each_rule(a: str, b: str, kind: ConflictType | None) -> None:
    found = DETECT.detect(a, b)
    assert (found.kind if found else None) == kind


def test_markers_of_one_period_can_still_be_a_temporal_conflict() -> None:
    """"now" is relative to when each memory was written: two "now"s can be two times."""
    found = DETECT.detect("Currently the queue runs on redis hosts",
                          "Today the queue runs on kafka brokers instead")
    assert found is not None and found.kind == ConflictType.TEMPORAL


def test_hidden_words_fire_only_under_substring_matching() -> None:
    lexicon, reference = Lexicon(["not", "is", "can"]), Lexicon(["not", "is", "can"], True)
    text = "This notable canary scan"
    assert lexicon.found(text) == [] and reference.found(text) == ["can", "is", "not"]
    assert Lexicon(["last week"]).found("Moved it LAST  week.") == ["last week"]


def test_stems_join_inflections() -> None:
    assert stem("dislikes") == stem("dislike") and stem("lived") == stem("lives") == stem("live")
    assert stem("is") == "is" and stem("was") == "was"


def test_per_class_metrics_are_hand_checkable() -> None:
    truth = np.array(["a", "a", "b", "none"])
    guess = np.array(["a", "b", "b", "a"])
    assert precision(truth, guess, "a") == 0.5 and recall(truth, guess, "a") == 0.5
    assert precision(truth, guess, "b") == 0.5 and recall(truth, guess, "b") == 1.0
    assert np.isnan(precision(truth, guess, "c")) and np.isnan(recall(truth, guess, "c"))
    report = per_class_report(truth, guess, ["a", "b", "c"], resamples=100, seed=0)
    assert report["b"]["f1"] == pytest.approx(2 / 3)
    assert report["c"]["precision"] is None and report["c"]["support"] == 0


@pytest.mark.bad_input
def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    good = {"pair_id": "p1", "a": {"content": "x is y"}, "b": {"content": "x is z"},
            "conflict": "semantic"}
    path.write_text("\n".join([json.dumps(good), json.dumps({**good, "pair_id": "p2",
                                                             "conflict": "maybe"}),
                               json.dumps(good), "{not json"]) + "\n")
    pairs, report = load_conflict_pairs(path)
    assert [p.id for p in pairs] == ["p1"] and report.skipped == 3
    text = " ".join(report.problems)
    assert f"{path}:2" in text and "maybe" in text and "duplicate id 'p1'" in text
    with pytest.raises(ValueError, match=":2"):
        load_conflict_pairs(path, on_error="raise")


@pytest.mark.slow
def test_the_experiment_compares_both_rule_sets(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = fast_config("+experiment=conflict_detection", "bootstrap=50", "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    conflicts = metrics["conflicts"]
    printed = capsys.readouterr().out
    tables = printed.partition("found: ")[0]
    assert "%" not in tables  # fractions throughout, as the learned detector's tables
    assert "headline figures (95% CIs): precision " in printed  # as every view shows them
    anyc = conflicts["memeval"]["any_conflict"]
    low, high = anyc["recall_ci95"]
    assert f"{anyc['recall']:.2f} [{low:.2f}–{high:.2f}]" in printed  # the rules carry CIs
    markdown = write_report([tmp_path / "run"])[1].read_text()  # the printed tables, CIs too
    assert f"| any conflict | {anyc['support']} | {anyc['precision']:.2f} [" in markdown
    assert "## learned detector on the test split (" in markdown
    rows = read_table(tmp_path / "run", "conflict_pairs")
    assert len(rows) == conflicts["pairs"] >= 60
    for mode in ("memeval", "compat"):
        report = conflicts[mode]
        assert report["accuracy"] == pytest.approx(
            (rows["label"] == rows[f"{mode}_predicted"]).mean())
        for kind, stats in report["per_type"].items():
            labelled = rows["label"] == kind
            assert stats["support"] == int(labelled.sum())
            if stats["recall"] is not None:
                assert stats["recall"] == pytest.approx(
                    (rows.loc[labelled, f"{mode}_predicted"] == kind).mean())
    assert (rows.loc[rows["same_source"], "memeval_predicted"] == "none").all()
    assert (tmp_path / "run" / "figures" / "conflict_confusion.png").is_file()


@pytest.mark.slow
def test_same_path_pairs_are_skipped_unless_switched_off(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    a, b = "User likes tabs", "User dislikes tabs"
    assert DETECT.detect(a, b, same_source=True) is None  # openclaw's rule, the default
    checked = ConflictDetector(ConflictRules(skip_same_path=False)).detect(a, b, same_source=True)
    assert checked is not None and checked.kind == ConflictType.CONTRADICTION
    run_experiment(fast_config("+experiment=conflict_detection", "bootstrap=20",
                               "experiment.rules.skip_same_path=false"), tmp_path / "run")
    rows = read_table(tmp_path / "run", "conflict_pairs")
    same = rows[rows["same_source"]]
    for mode in ("memeval", "compat"):  # the switch holds for both rule sets
        found = same[same[f"{mode}_predicted"] != "none"]
        assert not found.empty and (found["label"] == found[f"{mode}_predicted"]).any(), mode
