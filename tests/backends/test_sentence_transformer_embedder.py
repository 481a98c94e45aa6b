"""The MiniLM embedder gives a text the same vector whatever else is in the call: padding to a
length fixed by the text alone, not by its longest batch-mate (which moved the last bits)."""

from __future__ import annotations

import numpy as np
import pytest

from memeval.backends.embedders.sentence_transformer import (
    BUNDLED,
    PAD_STEP,
    SentenceTransformerConfig,
    SentenceTransformerEmbedder,
    model_path,
)

pytestmark = pytest.mark.slow

TEXT = "The cache keeps unit vectors keyed by sha256 of identity and text: reruns never re-embed."
NEIGHBOURS = ["ok", "word " * 150, "x y z " * 60, "a finding about the retry policy " * 5]


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(SentenceTransformerConfig())


def test_a_vector_does_not_depend_on_its_batch_mates(embedder: SentenceTransformerEmbedder) -> None:
    alone = embedder.embed([TEXT])[0]
    for neighbours in ([NEIGHBOURS[0]], [NEIGHBOURS[1]], NEIGHBOURS, NEIGHBOURS[::-1]):
        beside = embedder.embed([*neighbours, TEXT])[-1]
        assert np.array_equal(beside, alone)  # bit for bit, not merely close
    # the texts around it, in any order and batch size, come back as they do alone too
    together = embedder.embed(NEIGHBOURS)
    for row, text in zip(together, NEIGHBOURS, strict=True):
        assert np.array_equal(row, embedder.embed([text])[0])


def test_small_batches_and_fillers_give_the_same_vectors(
        embedder: SentenceTransformerEmbedder) -> None:
    small = SentenceTransformerEmbedder(SentenceTransformerConfig(batch_size=1))
    assert np.array_equal(small.embed([TEXT, *NEIGHBOURS]), embedder.embed([TEXT, *NEIGHBOURS]))
    for length in (PAD_STEP, 4 * PAD_STEP, 256):
        filler = embedder._filler(length)
        assert len(embedder._model.tokenizer(filler)["input_ids"]) == length


def test_vectors_are_unit_length_and_the_identity_names_the_padding(
        embedder: SentenceTransformerEmbedder) -> None:
    vectors = embedder.embed([TEXT, *NEIGHBOURS])
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.identity == f"st:all-MiniLM-L6-v2:pad{PAD_STEP}"


def test_a_local_models_width_is_known_before_anything_is_embedded() -> None:
    """A gate sizes its memory store at start; with every text in a warm cache nothing embeds
    first, so another model's width must come from the model itself, not stay 0."""
    local = SentenceTransformerEmbedder(SentenceTransformerConfig(model=model_path(BUNDLED)))
    assert local.dim == 384
