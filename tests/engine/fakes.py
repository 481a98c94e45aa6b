"""Small fakes and config loaders shared by the engine tests (no network, no model)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import OmegaConf

import memeval.engine.gate.content_score
import memeval.engine.gate.judge_stage
import memeval.engine.gate.length
import memeval.engine.gate.prefilter  # noqa: F401  (each stage module registers itself in STAGES)
from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.judges.base import JudgeError, Verdict
from memeval.engine.scorers.base import Prototypes
from memeval.entry import Entry
from memeval.paths import CONF_DIR

CONF = CONF_DIR


def gate_node(seed: int = 0) -> dict[str, Any]:
    """memeval/conf/gate/memoryd.yaml as a plain dict, `${seed}` resolved as the primary config
    would."""
    cfg = OmegaConf.create({"seed": seed, "gate": OmegaConf.load(CONF / "gate" / "memoryd.yaml")})
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    gate = container["gate"]
    assert isinstance(gate, dict)
    return gate


def stage_node(name: str) -> dict[str, Any]:
    return dict(gate_node()["stages"][name])


def unit(*components: float, dim: int | None = None) -> np.ndarray:
    vector = np.zeros(dim or len(components), dtype=np.float32)
    vector[: len(components)] = components
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def basis(i: int, dim: int = 4) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    vector[i] = 1.0
    return vector


class FailingEmbedder:
    """Raises EmbeddingError on every call (a server that is down)."""

    identity = "failing"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        raise EmbeddingError("server down")


class CountingEmbedder:
    """Wraps an embedder and records every batch it is asked for."""

    def __init__(self, inner: Any, identity: str | None = None) -> None:
        self.inner = inner
        self.identity = identity or inner.identity
        self.batches: list[list[str]] = []

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return self.inner.embed(texts)


@dataclass
class FakeScorer:
    """Scores a vector by its first coordinate; fits once `min_noise` rejections are learned."""

    min_noise: int = 1
    name: str = "fake"
    static_quality_texts: list[str] = field(default_factory=list)
    static_noise_texts: list[str] = field(default_factory=list)
    fits: int = 0
    last: Prototypes | None = None

    def fit(self, protos: Prototypes) -> bool:
        self.fits += 1
        self.last = protos
        return len(protos.learned_noise) >= self.min_noise

    def forget(self) -> None:
        self.last = None

    def score(self, vectors: np.ndarray, texts: Sequence[str] = ()) -> np.ndarray:
        return np.asarray(vectors[:, 0], dtype=np.float32)

    def confidence(self, scores: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(scores, dtype=np.float32), 0.0, 1.0)

    def calibration_scores(self) -> np.ndarray:
        return np.zeros(0, dtype=np.float32)


class RaisingJudge:
    name = "raising"

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, entry: Entry, user_prompt: str, assistant_text: str) -> Verdict:
        self.calls += 1
        raise JudgeError("judge unreachable")
