"""A run that would embed many texts the cache lacks says so, with its numbers, before it starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.warm_up import Engine
from memeval.cache_warm_up import run_texts, warm_up
from memeval.components import load_components
from memeval.config import validate
from memeval.engine.gate.gate import prepared_texts
from memeval.experiments.base import RunContext
from memeval.reporting.table import WIDTH
from memeval.run_cost import Estimate, duration, say_cost, warning
from memeval.runner import run_experiment
from memeval.utils.redact import redact

load_components()

CORPORA = Path(__file__).resolve().parent / "data" / "corpora"
TINY = "cost_warning_s=1e-9"  # any run with a text to embed is over it


def context(cfg: DictConfig, run_dir: Path) -> RunContext:
    return RunContext(cfg, run_dir, validate(cfg))


def test_a_cold_run_says_its_cost_and_a_warm_one_does_not(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = fast_config("+experiment=three_pass", "dataset.limit=40", TINY)
    cold = context(cfg, tmp_path / "cold")
    texts = run_texts(cold, every=False)
    cold.embedder.embed(texts[:5])  # a cache that holds some of the run's texts
    found = say_cost(cold, ["+experiment=three_pass", "dataset.limit=40"])
    said = capsys.readouterr().err
    assert found is not None and found.texts == len(texts)
    assert found.uncached == len(texts) - 5  # exact: what the cache lacked
    assert found.seconds == pytest.approx(found.uncached * found.sample_s / found.sampled)
    assert f"{found.uncached:,} of the run's {found.texts:,} texts" in " ".join(said.split())
    assert f"about {duration(found.seconds)} to embed" in " ".join(said.split())
    assert "python -m memeval embed +experiment=three_pass dataset.limit=40;" in \
        " ".join(said.split())
    assert all(len(line) <= WIDTH for line in said.splitlines())
    run_experiment(cfg, tmp_path / "run")  # caches every text the estimate counts
    capsys.readouterr()
    assert say_cost(context(cfg, tmp_path / "warm"), None) is None
    assert capsys.readouterr().err == ""


def test_only_the_entries_the_experiment_replays_are_counted(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """compare_systems' write gate replays the splits it names, not its whole dataset; cutting
    the dataset's rows would cut those splits, so no cut is offered."""
    ctx = context(fast_config("+experiment=compare_systems", "dataset.limit=70",
                              "experiment.splits=[test1]", TINY), tmp_path / "run")
    test1 = [e for e in ctx.dataset.entries if e.meta["split"] == "test1"]
    assert len(test1) == 48 and len(ctx.dataset.entries) == 70
    texts = run_texts(ctx, every=False)
    assert texts == prepared_texts(ctx.gate_config(), redact, test1)
    found = say_cost(ctx, None)
    said = " ".join(capsys.readouterr().err.split())
    assert found is not None and found.texts == len(texts)
    assert said.endswith("Warm the cache first: python -m memeval embed with this run's "
                         "overrides") and "cut the run" not in said


def test_a_run_under_the_threshold_or_without_one_says_nothing(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    under = say_cost(context(fast_config("+experiment=three_pass", "dataset.limit=20"),
                             tmp_path / "a"), None)
    assert under is not None and under.uncached > 0 and under.seconds <= 60
    off = fast_config("+experiment=three_pass", "dataset.limit=20", "cost_warning_s=null")
    assert say_cost(context(off, tmp_path / "b"), None) is None
    assert capsys.readouterr().err == ""


def test_the_line_follows_from_the_counts_and_names_the_cut() -> None:
    found = Estimate(texts=6_000, uncached=5_882, sampled=16, sample_s=16 / 7, cores=2)
    assert found.rate == pytest.approx(7.0) and found.seconds == pytest.approx(840.29, 0.01)
    line = warning(found, ["+experiment=retrieval_replay", "dataset=locomo"], "limit", 10, 60)
    assert line.startswith("memeval: 5,882 of the run's 6,000 texts are not in the embedding "
                           "cache: about 14 min to embed at 7.0 texts/s (measured on 16, 2 cores)")
    assert "python -m memeval embed +experiment=retrieval_replay dataset=locomo;" in line
    assert line.endswith("or cut the run: dataset.limit=1")  # one conversation of ten: 84 s
    assert warning(found, None, "corpus_rows", 1000, 60).endswith("dataset.corpus_rows=71")
    # a fine-tuned content encoder's vectors only a run makes: no warm-up is offered
    unwarmable = warning(found, None, "limit", 10, 60, warmable=False)
    assert "memeval embed" not in unwarmable
    assert unwarmable.endswith("(measured on 16, 2 cores). Or cut the run: dataset.limit=1")


def test_a_run_says_it_before_its_work_and_a_run_after_it_does_not(
        fast_config: Callable[..., DictConfig], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = fast_config("+experiment=retrieval_replay", "dataset=locomo",
                      f"dataset.path={CORPORA / 'locomo_small.json'}", "plots=false", TINY)
    run_experiment(cfg, tmp_path / "run")
    out = capsys.readouterr()
    assert "texts are not in the embedding cache" in " ".join(out.err.split())
    assert "or cut the run: dataset.limit=" in " ".join(out.err.split())
    run_experiment(cfg, tmp_path / "again")  # the first run cached what it counts
    assert "embedding cache" not in capsys.readouterr().err
    # what the line says to run warms a cold cache as well
    cold = fast_config("+experiment=retrieval_replay", "dataset=longmemeval", "plots=false",
                       TINY, f"dataset.path={CORPORA / 'longmemeval_small.json'}")
    warmed = warm_up(cold, Engine("local"), tmp_path / "shards", progress=False)
    assert warmed.embedded > 0 and warmed.cached + warmed.embedded == warmed.texts
    run_experiment(cold, tmp_path / "warmed")
    assert "embedding cache" not in capsys.readouterr().err
