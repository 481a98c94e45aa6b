"""The ONNX MiniLM embedders export offline from the bundled weights, give vectors close to the
default embedder's (fp32 equal to rounding, int8 within the measured quantisation error), keep a
text's vector whatever else is in the call, and key the cache apart from the default's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memeval.backends.embedders.onnx import OnnxConfig, OnnxEmbedder
from memeval.backends.embedders.sentence_transformer import (
    SentenceTransformerConfig,
    SentenceTransformerEmbedder,
)
from memeval.utils.kvcache import content_key

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow

TEXTS = ["The cache keeps unit vectors keyed by sha256 of identity and text: reruns never "
         "re-embed.", "ok", "word " * 150, "x y z " * 60, "a finding about the retry policy " * 5,
         "Let me check the failing test first.",
         "Fixed: the daemon now flushes the ring store before a restart, so no rejection is lost."]
# Least and mean cosine to the default embedder's vector. Measured on 300 corpus texts
# (docs/results.md, "Embedding backends"): fp32 1.000000 / 1.000000, int8 0.9704 / 0.9920.
CLOSE = {"fp32": 0.9999, "int8": 0.95}
CLOSE_ON_AVERAGE = {"fp32": 0.99999, "int8": 0.98}


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return SentenceTransformerEmbedder(SentenceTransformerConfig()).embed(TEXTS)


@pytest.fixture(scope="module", params=sorted(CLOSE))
def embedder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             ) -> OnnxEmbedder:
    folder = tmp_path_factory.mktemp(f"onnx-{request.param}")
    return OnnxEmbedder(OnnxConfig(precision=request.param, export_dir=str(folder)))


def test_vectors_are_close_to_the_default_embedders(embedder: OnnxEmbedder,
                                                    reference: np.ndarray) -> None:
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= CLOSE[embedder.cfg.precision]
    assert cosines.mean() >= CLOSE_ON_AVERAGE[embedder.cfg.precision]


def test_a_vector_does_not_depend_on_its_batch_mates(embedder: OnnxEmbedder) -> None:
    together = embedder.embed(TEXTS)
    for row, text in zip(together, TEXTS, strict=True):
        assert np.array_equal(row, embedder.embed([text])[0])
    small = OnnxEmbedder(OnnxConfig(precision=embedder.cfg.precision, batch_size=1,
                                    export_dir=embedder.cfg.export_dir))
    assert np.array_equal(small.embed(TEXTS[::-1]), together[::-1])


def test_the_graph_is_exported_once_and_whole(embedder: OnnxEmbedder) -> None:
    embedder.embed(["exported"])
    graphs = sorted(path.name for path in Path(embedder.cfg.export_dir).iterdir())
    assert graphs == sorted({"all-MiniLM-L6-v2-fp32.onnx",
                             f"all-MiniLM-L6-v2-{embedder.cfg.precision}.onnx"})


def test_each_precision_has_its_own_cache_key() -> None:
    identities = {OnnxEmbedder(OnnxConfig(precision=p)).identity for p in CLOSE}
    identities.add(SentenceTransformerEmbedder(SentenceTransformerConfig()).identity)
    assert len(identities) == 3
    assert len({content_key(identity, TEXTS[0]) for identity in identities}) == 3
