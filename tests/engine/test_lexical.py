"""Lexical anchor densities: per 1,000 characters, log1p-compressed, plus a length column."""

from __future__ import annotations

import math

import numpy as np
import pytest
from omegaconf import OmegaConf

from memeval.engine.scorers.lexical import LexicalFeatures
from tests.engine.fakes import CONF


@pytest.fixture(scope="module")
def shipped() -> LexicalFeatures:
    node = OmegaConf.to_container(OmegaConf.load(CONF / "scorer" / "logistic.yaml"))
    assert isinstance(node, dict)
    return LexicalFeatures(node["lexical_features"])


def test_density_per_kchar_log1p() -> None:
    features = LexicalFeatures({"inline_code": r"`[^`\n]+`"})
    text = "use `a` and `b` here"
    row = features([text])[0]
    assert features.names == ["inline_code", "log_length"]
    assert row[0] == pytest.approx(math.log1p(2 / (len(text) / 1000)), rel=1e-6)


def test_rows_follow_texts_and_empty_text_is_zero() -> None:
    features = LexicalFeatures({"digit": r"\d"})
    rows = features(["", "1", "no digits here"])
    assert rows.shape == (3, 2) and rows.dtype == np.float32
    np.testing.assert_array_equal(rows[0], [0.0, 0.0])
    assert rows[1, 0] > 0 and rows[2, 0] == 0


def test_length_column_grows_with_length() -> None:
    rows = LexicalFeatures({})(["a" * n for n in (1, 10, 100, 1000)])
    assert rows.shape == (4, 1)
    assert np.all(np.diff(rows[:, 0]) > 0)


def test_density_not_count(shipped: LexicalFeatures) -> None:
    short = "See src/app.py."
    long = short + " " + "filler words only " * 20
    i = shipped.names.index("path")
    rows = shipped([short, long])
    assert rows[0, i] > rows[1, i] > 0


def test_shipped_patterns_tell_anchors_from_narration(shipped: LexicalFeatures) -> None:
    technical = ("The root cause is `pool_size = 5` in src/db/engine.py: raise it to 20 "
                 "because workers must never block on checkout.")
    narration = "I'll check that now.\nLet me look at the logs.\nOkay, running the tests."
    rows = shipped([technical, narration])
    col = {name: j for j, name in enumerate(shipped.names)}
    for anchor in ("inline_code", "path", "number", "snake_case", "causal"):
        assert rows[0, col[anchor]] > 0, anchor
        assert rows[1, col[anchor]] == 0, anchor
    for cue in ("procedural_line", "procedural_phrase"):
        assert rows[1, col[cue]] > 0, cue
        assert rows[0, col[cue]] == 0, cue
