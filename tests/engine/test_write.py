"""Write pipeline: clean, noise check, redact, embed, dedup at the configured scale, store."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.backends.embedders.hashing import HashingEmbedder
from memeval.engine.gate.base import Candidate
from memeval.engine.gate.write import WriteConfig, WritePipeline, alnum_ratio, clean
from memeval.engine.store.memory_store import MemoryStore
from memeval.entry import Entry
from memeval.registry import ConfigError, to_dataclass
from memeval.utils.redact import redact
from tests.engine.fakes import FailingEmbedder, gate_node

FACT = "The orders table needs a composite index on (customer_id, created_at) for the report."
OTHER = "Kafka consumer lag comes from max.poll.records set too high for the slow settlement sink."


def candidate(text: str, entry_id: str = "e1") -> Candidate:
    return Candidate(Entry(entry_id, "q", text), "q", text, None)


def pipeline(cfg: WriteConfig | None = None, embedder: object | None = None,
             redactor: object = redact) -> WritePipeline:
    emb = embedder or HashingEmbedder(64)
    return WritePipeline(cfg or WriteConfig(), emb, redactor, MemoryStore(emb.dim))  # type: ignore[arg-type]


def test_shipped_write_config() -> None:
    cfg = to_dataclass(WriteConfig, gate_node()["write"], "gate.write")
    assert (cfg.min_chars, cfg.min_alnum_ratio, cfg.dedup_threshold, cfg.dedup_scale) == (
        40, 0.40, 0.92, "cosine")


def test_clean_strips_think_blocks_and_truncates() -> None:
    text = "<think>private\nreasoning</think>  Answer: use X.  <THINK>more</THINK>"
    assert clean(text, 1000) == "Answer: use X."
    assert clean("  abcdef  ", 3) == "abc"


def test_alnum_ratio() -> None:
    assert alnum_ratio("") == 0.0
    assert alnum_ratio("ab--") == 0.5


def test_stores_with_an_id_and_source() -> None:
    writer = pipeline()
    result = writer.write(candidate(FACT, "wg-1"), None, pass_no=2)
    assert result.passed and result.stage == "stored"
    assert result.detail == "m2-0"
    assert result.score is None  # nothing to compare against yet
    (memory,) = writer.store.memories
    assert (memory.id, memory.text, memory.source_id, memory.pass_no) == ("m2-0", FACT, "wg-1", 2)
    second = writer.write(candidate(OTHER, "wg-2"), None, pass_no=2)
    assert second.detail == "m2-1"
    assert second.score is not None and second.score < 0.92


def test_judge_memory_text_replaces_the_response() -> None:
    writer = pipeline()
    writer.write(candidate(FACT), "Rewritten: " + OTHER, pass_no=1)
    assert writer.store.memories[0].text == "Rewritten: " + OTHER


def test_think_tags_are_stripped_before_storing() -> None:
    writer = pipeline()
    writer.write(candidate("<think>hmm, let me think this over</think>\n" + FACT), None, 1)
    assert writer.store.memories[0].text == FACT


def test_truncated_to_max_chars() -> None:
    writer = pipeline(WriteConfig(max_chars=50))
    writer.write(candidate(FACT), None, 1)
    assert writer.store.memories[0].text == FACT[:50]


def test_too_short_after_cleaning_is_noise() -> None:
    writer = pipeline()
    result = writer.write(candidate("<think>" + "long hidden reasoning " * 10 + "</think>ok, done"),
                          None, 1)
    assert not result.passed and result.stage == "noise_check"
    assert len(writer.store) == 0


def test_low_alnum_ratio_is_noise() -> None:
    art = "----- ===== ***** +++++ ##### ab cd ef ----- ===== *****"
    assert len(art) >= 40 and alnum_ratio(art) < 0.40
    result = pipeline().write(candidate(art), None, 1)
    assert result.stage == "noise_check"
    assert result.threshold == 0.40
    assert result.score == pytest.approx(alnum_ratio(art))


SECRET_TEXT = ("Connect with postgres://app:hunter2secret@db.internal:5432/orders "
               "for the report.")


def spied_pipeline() -> tuple[WritePipeline, list[str]]:
    seen: list[str] = []

    def spy(text: str) -> str:
        seen.append(text)
        return redact(text)

    return pipeline(redactor=spy), seen


def test_the_judges_memory_text_is_redacted_before_it_is_stored() -> None:
    writer, seen = spied_pipeline()
    writer.write(candidate(redact("A long enough candidate text about the orders report.")),
                 SECRET_TEXT, 1)
    assert seen == [SECRET_TEXT]
    stored = writer.store.memories[0].text
    assert "hunter2secret" not in stored
    assert "[REDACTED:uri_credentials]" in stored


def test_a_cleaned_copy_is_redacted_again() -> None:
    writer, seen = spied_pipeline()
    writer.write(candidate("<think>x</think> " + redact(SECRET_TEXT)), None, 1)
    assert seen == [redact(SECRET_TEXT)]


def test_the_candidates_own_redacted_text_is_stored_without_a_second_pass() -> None:
    writer, seen = spied_pipeline()
    writer.write(candidate(redact(SECRET_TEXT)), None, 1)
    assert seen == []  # candidates carry redacted text; redaction is idempotent
    assert writer.store.memories[0].text == redact(SECRET_TEXT)


def test_identical_text_is_a_duplicate() -> None:
    writer = pipeline()
    writer.write(candidate(FACT, "a"), None, 1)
    result = writer.write(candidate(FACT, "b"), None, 1)
    assert not result.passed and result.stage == "dedup"
    assert result.detail == "duplicate of m1-0"
    assert result.score == pytest.approx(1.0, abs=1e-5)
    assert len(writer.store) == 1


class TableEmbedder:
    """Returns a fixed unit vector per text."""

    identity = "table"
    dim = 2

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


A = "a" * 60
B = "b" * 60


def angle_pair(cosine: float) -> TableEmbedder:
    theta = np.arccos(cosine)
    return TableEmbedder({A: np.array([1.0, 0.0], dtype=np.float32),
                          B: np.array([np.cos(theta), np.sin(theta)], dtype=np.float32)})


@pytest.mark.parametrize(("cosine", "scale", "duplicate"), [
    (0.90, "cosine", False),  # under raw 0.92
    (0.93, "cosine", True),
    (0.86, "atlas", True),    # atlas 0.92 ≡ raw 0.84
    (0.82, "atlas", False),
])
def test_dedup_threshold_scale(cosine: float, scale: str, duplicate: bool) -> None:
    writer = pipeline(WriteConfig(dedup_threshold=0.92, dedup_scale=scale),
                      embedder=angle_pair(cosine), redactor=lambda t: t)
    writer.write(candidate(A, "a"), None, 1)
    result = writer.write(candidate(B, "b"), None, 1)
    assert (result.stage == "dedup") is duplicate
    assert result.score == pytest.approx(cosine, abs=1e-5)


def test_atlas_scale_converts_to_raw_cosine() -> None:
    writer = pipeline(WriteConfig(dedup_threshold=0.92, dedup_scale="atlas"))
    assert writer.dedup_cosine == pytest.approx(0.84)
    assert pipeline().dedup_cosine == pytest.approx(0.92)


def test_unknown_scale_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="dedup_scale"):
        to_dataclass(WriteConfig, {"dedup_scale": "atlass"}, "gate.write")


def test_embedding_failure_still_stores_the_memory() -> None:
    writer = pipeline(embedder=FailingEmbedder())
    result = writer.write(candidate(FACT), None, 1)
    assert result.passed and result.stage == "stored"
    assert result.detail.startswith("m1-0")
    assert "not embedded" in result.detail and "server down" in result.detail
    assert len(writer.store) == 1
    # a zero vector never looks like a duplicate of anything
    again = writer.write(candidate(OTHER), None, 1)
    assert again.stage == "stored"
