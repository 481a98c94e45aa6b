"""`content_encoder`: the content stage's own embedder, fine-tuned on labelled turns, and the
refusal to evaluate a turn it read."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from memeval.backends.embedders.cache import CachedEmbedder
from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.backends.embedders.sentence_transformer import (
    SentenceTransformerConfig,
    SentenceTransformerEmbedder,
)
from memeval.backends.judges.labels import LabelJudge, LabelJudgeConfig
from memeval.config import validate
from memeval.engine.gate.gate import Gate
from memeval.entry import Entry
from memeval.experiments.base import RunContext
from memeval.registry import ConfigError
from memeval.results.run_dir import read_decisions, read_metrics
from memeval.run_cost import say_cost
from memeval.runner import run_experiment
from memeval.systems.reference.content_encoder import (
    ContentEncoder,
    Finetuned,
    FinetunedConfig,
    TunedEmbedder,
    build_finetuned,
    fingerprint,
    setfit_pairs,
    training_turns,
)
from memeval.utils.fit_cache import DIR_ENV, FitCache
from memeval.utils.progress import quiet
from memeval.utils.redact import redact
from tests.engine.fakes import CountingEmbedder, FakeScorer
from tests.engine.test_gate import NOISE, SUBST, SUBST2, config

FINDING = ("The build failed because `go.sum` pinned golang.org/x/net v0.17 while go.mod asked "
           "for v0.19; running `go mod tidy` fixed it.")
NARRATION = "Let me check the test output now and then look at the logs."


def labelled(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    """A labelled JSONL of (response, label, split) rows."""
    path.write_text("".join(json.dumps({"id": f"t{i}", "user_prompt": "q", "label": label,
                                        "assistant_response": text, "split": split}) + "\n"
                            for i, (text, label, split) in enumerate(rows)))
    return path


def finetuned(data: Path, **changes: object) -> FinetunedConfig:
    return replace(FinetunedConfig(data=str(data), values=["learn"]), **changes)  # type: ignore[arg-type]


def test_setfit_pairs_are_seeded_and_half_of_one_class() -> None:
    texts = [f"text {i}" for i in range(20)]
    positive = [i < 5 for i in range(20)]
    pairs = setfit_pairs(texts, positive, 40, seed=3)
    assert pairs == setfit_pairs(texts, positive, 40, seed=3)
    assert pairs != setfit_pairs(texts, positive, 40, seed=4)
    assert sum(label for _, _, label in pairs) == 20
    cls = dict(zip(texts, positive, strict=True))
    assert all((cls[a] == cls[b]) == (label == 1.0) for a, b, label in pairs)
    assert {cls[a] for a, _, _ in pairs} == {True, False}  # anchors from both classes


def test_training_turns_are_the_chosen_splits_that_reach_the_content_stage(
        tmp_path: Path) -> None:
    data = labelled(tmp_path / "l.jsonl", [(FINDING, "substantive", "learn"),
                                           (NARRATION, "noise", "learn"),  # claims nothing
                                           (NOISE.assistant_response, "noise", "learn"),
                                           (FINDING + " Also v2.", "substantive", "test")])
    texts, positive, read = training_turns(finetuned(data), config())
    assert positive == [True, False] and len(texts) == 2
    assert "go mod tidy" in texts[0] and "Happy to help" in texts[1]
    assert [e.id for e in read] == ["t0", "t1", "t2"]  # every chosen turn, kept or not


def test_a_missing_file_names_the_setting_that_points_at_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"content_encoder.data: labelled file not found"):
        training_turns(finetuned(tmp_path / "none.jsonl"), config())


@pytest.mark.parametrize(("rows", "values", "match"), [
    ([(FINDING, "substantive", "learn")], ["other"], "no turn has split in"),
    ([(FINDING, "substantive", "learn")], ["learn"], "needs turns of both classes"),
])
def test_turns_that_cannot_fine_tune_are_a_config_error(
        tmp_path: Path, rows: list[tuple[str, str, str]], values: list[str],
        match: str) -> None:
    data = labelled(tmp_path / "l.jsonl", rows)
    with pytest.raises(ConfigError, match=match):
        training_turns(finetuned(data, values=values), config())


def test_the_content_stage_embeds_with_its_encoder_and_the_writer_with_the_run_s(
        tmp_path: Path) -> None:
    content = CountingEmbedder(HashingEmbedder(32), identity="content")
    main = CountingEmbedder(HashingEmbedder(64), identity="main")
    gate = Gate(config(), embedder=main, content_embedder=content,
                judge=LabelJudge(LabelJudgeConfig()), scorer=FakeScorer(), redact=redact,
                state_dir=tmp_path)
    items = gate.prepare([SUBST, NOISE])
    assert all(item.vector is not None and item.vector.shape == (32,) for item in items)
    assert content.batches and not main.batches
    decisions = list(gate.run_pass(items, 1))
    assert decisions[0].outcome == "stored"
    assert main.batches  # the memory written is deduplicated in the run's space
    assert gate.memories.vectors.shape[1] == 64


@dataclass
class TinyFit:
    cfg: FinetunedConfig
    built: ContentEncoder
    fits: FitCache
    root: Path


@pytest.fixture(scope="module")
def tiny_fit(tmp_path_factory: pytest.TempPathFactory) -> TinyFit:
    """A real fine-tune, as small as one can be: eight pairs, two steps."""
    root = tmp_path_factory.mktemp("tuned")
    rows = [(SUBST.assistant_response, "substantive", "learn"),
            (SUBST2.assistant_response, "substantive", "learn"), (FINDING, "substantive", "learn"),
            (NOISE.assistant_response, "noise", "learn"), (NARRATION, "noise", "learn"),
            ("I'll run the whole suite again and see what is still failing.", "low_value",
             "learn")]
    cfg = finetuned(labelled(root / "l.jsonl", rows), pairs=8, batch_size=4)
    fits = FitCache(root / "fits")
    return TinyFit(cfg, build_finetuned(cfg, gate=config(), fits=fits,
                                        cache_file=root / "emb.sqlite", progress=quiet),
                   fits, root)


@pytest.mark.slow  # loads the real model
def test_a_fine_tuned_encoder_moves_the_vectors_and_is_fitted_once(tiny_fit: TinyFit) -> None:
    texts = [FINDING, NARRATION]
    tuned = tiny_fit.built.embedder.embed(texts)
    stock = SentenceTransformerEmbedder(SentenceTransformerConfig()).embed(texts)
    assert tuned.shape == stock.shape == (2, 384)
    assert np.allclose(np.linalg.norm(tuned, axis=1), 1, atol=1e-3)
    assert not np.allclose(tuned, stock, atol=1e-3)
    assert "tuned" in tiny_fit.built.embedder.identity
    again = build_finetuned(tiny_fit.cfg, gate=config(), fits=tiny_fit.fits,
                            cache_file=tiny_fit.root / "emb.sqlite", progress=quiet)
    assert again.to_fit() == "" and again.embedder.identity == tiny_fit.built.embedder.identity
    assert np.array_equal(again.embedder.embed(texts), tuned)  # from the embedding cache
    again.ready()
    assert tiny_fit.fits.misses == 1 and tiny_fit.fits.hits == 1


def test_a_fine_tuned_encoder_refuses_to_evaluate_a_turn_it_read(tmp_path: Path) -> None:
    read = Entry("t0", "q", SUBST.assistant_response, "substantive", "human")
    unloaded = TunedEmbedder("0" * 64, lambda: {})  # never loaded: nothing is embedded here
    encoder = Finetuned(CachedEmbedder(unloaded, tmp_path / "emb.sqlite"), unloaded,
                        frozenset({fingerprint(read)}), lambda: True, 1)
    elsewhere = replace(read, id="another-session:t0")  # the same words, another turn
    encoder.refuse_seen([elsewhere, SUBST])
    with pytest.raises(ConfigError, match="fitted on 1 of the 2 turns"):
        encoder.refuse_seen([elsewhere, read])


@pytest.mark.slow
def test_a_run_evaluating_turns_the_encoder_read_fails_before_any_replay(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    tiny = ["dataset.limit=70", "experiment.learn_values=[learn,validate]",
            "experiment.eval_values=[test1]", "experiment.passes=1", "content_encoder=finetuned",
            "content_encoder.pairs=8", "content_encoder.batch_size=4"]
    with pytest.raises(ConfigError, match="content_encoder=finetuned was fitted on"):
        run_experiment(fast_config("+experiment=three_pass_sessions", *tiny,
                                   "content_encoder.values=[learn,test1]"), tmp_path / "leak")
    run_experiment(fast_config("+experiment=three_pass_sessions", *tiny,
                               "content_encoder.values=[learn]"), tmp_path / "run")
    decisions = read_decisions(tmp_path / "run")
    assert (decisions["phase"] == "eval").sum() > 0
    encoder = read_metrics(tmp_path / "run")["content_encoder"]
    assert encoder["name"] == "finetuned" and "tuned" in encoder["identity"]
    assert encoder["cache_misses"] > 0  # the run embedded the content stage's texts with it


@pytest.mark.slow
def test_a_fit_still_to_make_is_said_before_the_run_and_made_once_asked_for(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "fits"))  # no fit kept from another session
    fresh = f"The cache key of {tmp_path.name} lives in settings.py beside the seed."
    data = labelled(tmp_path / "l.jsonl", [(FINDING, "substantive", "learn"),
                                           (fresh, "substantive", "learn"),
                                           (NOISE.assistant_response, "noise", "learn")])
    cfg = fast_config("+experiment=three_pass", "dataset.limit=20", "cost_warning_s=1e-9",
                      "content_encoder=finetuned", f"content_encoder.data={data}",
                      "content_encoder.values=[learn]", "content_encoder.pairs=8",
                      "content_encoder.batch_size=4")
    ctx = RunContext(cfg, tmp_path / "run", validate(cfg))
    assert say_cost(ctx, None) is None
    said = " ".join(capsys.readouterr().err.split())
    assert "content_encoder=finetuned is fine-tuned first (2 batches" in said
    assert "then it embeds the 20 of the run's 20 texts not in the embedding cache" in said
    assert ctx.fits.misses == 0  # saying so fitted nothing
    assert "tuned" in ctx.content_encoder.embedder.identity  # known before the fit
    embedder = ctx.content_embedder
    assert ctx.fits.misses == 1 and ctx.content_encoder.to_fit() == ""
    assert embedder.spent.seconds == 0  # the fit is timed as fitting, not as embedding
