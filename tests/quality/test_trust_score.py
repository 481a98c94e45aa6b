"""The content-aware trust score: each signal, each term, the decomposition, and the fits."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from memeval.data.quality_sets import Citation
from memeval.metrics import trust_fit
from memeval.metrics.trust_fit import TrustScoreConfig, fit_trust_model, out_of_fold_trust
from memeval.quality.content_signals import ContentSignals, ContentSignalsConfig
from memeval.quality.hedging import HedgingConfig
from memeval.quality.mqs import MQSConstants
from memeval.quality.record import MemoryRecord
from memeval.quality.trust_terms import TERMS, conflict_sides, trust_terms

CONTENT = ContentSignalsConfig(
    vague_words=["somewhere", "something"], fast_moving_words=["latest", "currently"],
    command_words=["npm"], hedging=HedgingConfig(markers=["maybe", "might"], min_markers=1,
                                                 min_per_100_words=0.0),
    as_of="2026-11-21")


def _at(year: int, month: int, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _record(content: str = "Plain words here.", **fields: object) -> MemoryRecord:
    return MemoryRecord(id=str(fields.pop("id", "a")), content=content, **fields)  # type: ignore[arg-type]


def _terms(record: MemoryRecord, *others: MemoryRecord) -> dict[str, float]:
    ledger = {r.id: r for r in (record, *others)}
    return trust_terms(record, ledger, MQSConstants(), ContentSignals(CONTENT))


def test_specificity_counts_paths_versions_backticks_identifiers_and_commands() -> None:
    signals = ContentSignals(CONTENT)
    assert signals.specific_spans("The build is fine.") == 0
    specific = "Run `npm ci` after bumping src/app/main.py to node 20.1 in build_config."
    # backticked, path, version, identifier, command word
    assert signals.specific_spans(specific) >= 5
    assert _terms(_record(specific))["specificity"] > _terms(_record("It works."))["specificity"]


def test_hedging_counts_the_detectors_markers() -> None:
    assert _terms(_record("Maybe the cache might be stale."))["hedge_markers"] == 2.0
    assert _terms(_record("The cache is stale."))["hedge_markers"] == 0.0


def test_vagueness_counts_the_configured_words() -> None:
    assert _terms(_record("Something is off somewhere in the config."))["vague"] == 2.0
    assert _terms(_record("The config sets retries to 3."))["vague"] == 0.0


def test_staleness_is_age_for_fast_moving_facts_only() -> None:
    old, half = _at(2024, 11, 21), _at(2026, 5, 24)
    assert _terms(_record("CI runs node 18.2.", updated_at=old))["stale"] == 1.0  # capped
    assert _terms(_record("CI currently uses the small runner.", updated_at=half))["stale"] \
        == pytest.approx(181 / 365)
    assert _terms(_record("The service owns the orders table.", updated_at=old))["stale"] == 0.0
    assert _terms(_record("CI runs node 18.2."))["stale"] == 0.0  # undated


def test_conflict_sides_tell_a_supersession_from_an_unresolved_contradiction() -> None:
    new = _record(id="new", conflicts=["old", "twin", "gone"], updated_at=_at(2026, 9))
    old = _record(id="old", conflicts=["new"], updated_at=_at(2026, 1))
    twin = _record(id="twin", conflicts=["new"], updated_at=_at(2026, 9))
    ledger = {r.id: r for r in (new, old, twin)}
    assert conflict_sides(new, ledger) == (1, 0, 2)  # newer than old; same moment; missing
    assert conflict_sides(old, ledger) == (0, 1, 0)
    terms = _terms(old, new)
    assert (terms["newer_side"], terms["older_side"], terms["unresolved"]) == (0.0, 1.0, 0.0)


def test_chain_terms_read_the_ancestors_own_scores_and_the_missing_ones() -> None:
    weak = _record(id="weak", confidence=0.0, failure_count=5)
    strong = _record(id="strong", confidence=1.0, success_count=20, access_count=10)
    on_weak = _terms(_record(id="c", derived_from=["weak", "deleted"]), weak)
    on_strong = _terms(_record(id="c", derived_from=["strong"]), strong)
    assert on_weak["derived"] == on_strong["derived"] == 1.0
    assert on_weak["ancestor_shortfall"] > on_strong["ancestor_shortfall"]
    assert on_weak["missing_ancestors"] == 1.0 and on_strong["missing_ancestors"] == 0.0
    assert _terms(_record())["ancestor_shortfall"] == 0.0


def test_citation_and_usage_terms() -> None:
    cited = _terms(_record(citation=Citation("a.py", 1, 2), success_count=3, failure_count=1))
    assert cited["cited"] == 1.0 and _terms(_record())["cited"] == 0.0
    assert cited["successes"] == pytest.approx(math.log1p(3))
    assert cited["failures"] == pytest.approx(math.log1p(1))
    assert cited["usage_rate"] == pytest.approx(4 / 6)
    assert set(cited) == set(TERMS)


def _synthetic(n: int = 60, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(TERMS)))
    trusted = (x[:, 0] - x[:, 5] + rng.normal(scale=0.5, size=n) > 0).astype(float)
    return x, trusted


def test_contributions_and_intercept_sum_to_the_log_odds_of_the_score() -> None:
    x, trusted = _synthetic()
    x[:, 3] = 2.0  # a constant term: weight 0, no division by a zero scale
    model = fit_trust_model(x, trusted, TERMS, TrustScoreConfig())
    assert model.weights[3] == 0.0
    for row, score in zip(x, model.score(x), strict=True):
        total = model.intercept + sum(model.contributions(row).values())
        assert total == pytest.approx(float(model.log_odds(row)))
        assert score == pytest.approx(100.0 / (1.0 + math.exp(-total)))


def test_out_of_fold_never_trains_on_the_scored_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    x, trusted = _synthetic()
    x[:, -1] = np.arange(len(x))  # each row's index, to see which rows a fit saw
    scored: list[tuple[set[int], set[int]]] = []  # (rows fitted on, rows scored) per fold
    real = trust_fit.fit_trust_model

    class Spy:
        def __init__(self, xs: np.ndarray, *args: object) -> None:
            self.fitted = {int(i) for i in xs[:, -1]}
            self.model = real(xs, *args)  # type: ignore[arg-type]

        def score(self, xs: np.ndarray) -> np.ndarray:
            scored.append((self.fitted, {int(i) for i in xs[:, -1]}))
            return self.model.score(xs)

    monkeypatch.setattr(trust_fit, "fit_trust_model", Spy)
    out_of_fold_trust(x, trusted, TERMS, TrustScoreConfig(), 5, seed=0)
    assert len(scored) == 5
    assert all(not fitted & rows for fitted, rows in scored)
    assert set().union(*(rows for _, rows in scored)) == set(range(len(x)))
