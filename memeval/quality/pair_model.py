"""`pair`: a conflict detector that reads both memories together. A cosine of two texts embedded
apart says "same topic" for a value swapped inside an unchanged entry and for a harmless
rewording alike; a cross-encoder sees both texts at once, token against token, and can tell them
apart. It is the bundled MiniLM's body with a new head, fine-tuned on the labelled pairs.

Each side is read with its date when known (`2025-08-19 | text`), so the model can use when a
memory was written as well as its wording. The head has five classes: none, contradiction,
semantic, and temporal with the first side newer or with the second side newer, so one model
says both that a pair is temporal and which memory supersedes. Training shows each pair in a
seeded random order of its sides; prediction averages both orders, so a pair's label does not
depend on which memory came first.

A fit is deterministic (seeded order, flips and dropout) and kept in the fit cache by its
settings and training pairs, as the half-precision weights (about 45 MB).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memeval.backends.embedders.sentence_transformer import BUNDLED, model_path, quiet_loading
from memeval.backends.fine_tuning import half_weights, update
from memeval.quality.conflict_features import ConflictSide, day_of
from memeval.registry import bounded
from memeval.threads import size_model_pool
from memeval.utils.fit_cache import FitCache
from memeval.utils.progress import Progress, quiet, step

Pair = tuple[ConflictSide, ConflictSide]
NONE, TEMPORAL = "none", "temporal"
# The head's classes, in order: a temporal pair's class also says which side supersedes.
CLASSES = ("none", "contradiction", "semantic", "temporal_first", "temporal_second")
FLIPPED = (0, 1, 2, 4, 3)  # each class's index once the sides are swapped
PREDICT_BATCH = 32


@dataclass
class PairModelConfig:
    model: str = BUNDLED  # the encoder fine-tuned: the bundled MiniLM, or a local folder
    epochs: int = bounded(2, 1)
    learning_rate: float = bounded(1e-4, above=0, high=1)
    batch_size: int = bounded(16, 1)
    warmup: float = bounded(0.1, 0, 1)  # share of the steps the learning rate rises over
    max_length: int = bounded(160, 16, 512)  # tokens of both sides together
    seed: int = 0
    # A pair is none when the model gives none at least this probability, else its most
    # probable conflict type (temporal: both temporal classes together).
    none_probability: float = bounded(0.5, 0, 1)
    dates: bool = True  # read each side with its date when known

    def validate(self) -> None:
        """Ranges are checked by `bounded`; nothing else to check."""


def side_text(side: ConflictSide, dates: bool) -> str:
    """A memory as the model reads it: `YYYY-MM-DD | text` when its date is known."""
    day = day_of(side.timestamp) if dates else None
    return f"{day.isoformat()} | {side.content}" if day else side.content


def texts_of(pairs: Sequence[Pair], dates: bool) -> list[tuple[str, str]]:
    """Both memories of each pair as the model reads them."""
    return [(side_text(a, dates), side_text(b, dates)) for a, b in pairs]


def target(label: str, newer: str | None, a: ConflictSide, b: ConflictSide) -> int:
    """A training pair's class: a temporal pair's by its labelled newer side, else by the later
    date, else the second (as the rubric reads a pair with no cue and no date)."""
    if label != TEMPORAL:
        return CLASSES.index(label)
    if newer not in ("a", "b"):
        day_a, day_b = day_of(a.timestamp), day_of(b.timestamp)
        newer = "a" if day_a and day_b and day_a > day_b else "b"
    return CLASSES.index("temporal_first" if newer == "a" else "temporal_second")


class PairConflictDetector:
    """`fits`: where fitted weights are kept (utils/fit_cache.py), so the same folds and the same
    development pairs are fine-tuned once, whichever run asks."""

    def __init__(self, cfg: PairModelConfig, fits: FitCache | None = None) -> None:
        self.cfg = cfg
        self.fits = fits
        self.weights: dict[str, Any] | None = None
        self._model: Any = None
        self._last: tuple[list[tuple[str, str]], np.ndarray] | None = None  # predict, then newer

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (in a cached fit of the stored models) as its weights, without the loaded
        model, which is rebuilt from them."""
        return {**self.__dict__, "_model": None, "_last": None}

    def fit(self, pairs: Sequence[Pair], labels: Sequence[str],
            cosines: Sequence[float] | None = None, progress: Progress = quiet,
            newer: Sequence[str | None] | None = None) -> None:
        """`cosines` are not read: the model compares the texts itself."""
        sides = newer if newer is not None else [None] * len(pairs)
        classes = [target(label, side, a, b)
                   for (a, b), label, side in zip(pairs, labels, sides, strict=True)]
        texts = texts_of(pairs, self.cfg.dates)
        # the cut is applied to the fitted model's probabilities: it does not refit
        key = (repr(replace(self.cfg, none_probability=0.0)), repr(texts), classes)
        if self.fits is None:
            self.weights = self._fitted(texts, classes, progress)
        else:
            self.weights = self.fits.fit("pair_detector", key,
                                         lambda: self._fitted(texts, classes, progress))
        self._model = self._last = None

    def _fitted(self, texts: Sequence[tuple[str, str]], classes: Sequence[int],
                progress: Progress) -> dict[str, Any]:
        """Fine-tune a fresh head and body; the weights in half precision."""
        import torch

        torch.manual_seed(self.cfg.seed)
        encoder = step(progress, "pair model: load", self._fresh)
        model, tokenizer = encoder.model, encoder.tokenizer
        order = random.Random(self.cfg.seed)
        batch = self.cfg.batch_size
        per_epoch = -(-len(texts) // batch)
        steps = self.cfg.epochs * per_epoch
        optimiser = torch.optim.AdamW(model.parameters(), lr=self.cfg.learning_rate,
                                      weight_decay=0.01)
        rise = max(1, int(self.cfg.warmup * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda done: min(1.0, (done + 1) / rise) * max(0.0, 1 - done / steps))
        loss_of = torch.nn.CrossEntropyLoss()
        model.train()

        def batches() -> Iterator[list[int]]:
            for _ in range(self.cfg.epochs):
                shuffled = list(range(len(texts)))
                order.shuffle(shuffled)
                yield from (shuffled[i:i + batch] for i in range(0, len(shuffled), batch))

        for rows in progress(batches(), steps, "pair model: fine-tune", "batch"):
            shown = [(i, int(order.random() < 0.5)) for i in rows]  # 1: sides swapped
            first = [texts[i][flip] for i, flip in shown]
            second = [texts[i][1 - flip] for i, flip in shown]
            wanted = torch.tensor([FLIPPED[classes[i]] if flip else classes[i]
                                   for i, flip in shown])
            update(model, loss_of(model(**self._encoded(tokenizer, first, second)).logits,
                                  wanted), optimiser, schedule)
        return half_weights(model)

    def _encoded(self, tokenizer: Any, first: list[str], second: list[str]) -> Any:
        """Each pair's two texts as one input, cut to `max_length` tokens from the longer side,
        the same in training and prediction."""
        return tokenizer(first, second, padding=True, truncation="longest_first",
                         max_length=self.cfg.max_length, return_tensors="pt")

    def _fresh(self) -> Any:
        """The encoder with a new head (its libraries' notes on loading a sentence-transformers
        folder as a cross-encoder, the head's weights "missing", describe what is meant)."""
        from sentence_transformers import CrossEncoder

        with quiet_loading():
            encoder = CrossEncoder(model_path(self.cfg.model), num_labels=len(CLASSES),
                                   max_length=self.cfg.max_length, device="cpu")
        size_model_pool()
        return encoder

    def _loaded(self) -> Any:
        if self.weights is None:
            raise RuntimeError("the pair conflict detector predicts only after fit()")
        if self._model is None:
            encoder = self._fresh()
            encoder.model.load_state_dict({name: tensor.float()
                                           for name, tensor in self.weights.items()})
            encoder.model.eval()
            self._model = encoder
        return self._model

    def probabilities(self, pairs: Sequence[Pair], progress: Progress = quiet) -> np.ndarray:
        """One row of class probabilities per pair, averaged over both orders of its sides."""
        import torch

        texts = texts_of(pairs, self.cfg.dates)
        if self._last is not None and self._last[0] == texts:
            return self._last[1]
        encoder = self._loaded()
        out = np.zeros((len(texts), len(CLASSES)))
        starts = range(0, len(texts), PREDICT_BATCH)
        with torch.inference_mode():
            for start in progress(starts, len(starts), "pair model", "batch"):
                chunk = texts[start:start + PREDICT_BATCH]
                for flip in (False, True):
                    first = [b if flip else a for a, b in chunk]
                    second = [a if flip else b for a, b in chunk]
                    encoded = self._encoded(encoder.tokenizer, first, second)
                    p = torch.softmax(encoder.model(**encoded).logits, dim=-1).numpy()
                    out[start:start + len(chunk)] += p[:, FLIPPED] if flip else p
        self._last = (texts, out / 2)
        return self._last[1]

    def predict(self, pairs: Sequence[Pair], cosines: Sequence[float] | None = None,
                progress: Progress = quiet) -> list[str]:
        p = self.probabilities(pairs, progress)
        types = np.column_stack([p[:, 1], p[:, 2], p[:, 3] + p[:, 4]])
        names = ("contradiction", "semantic", TEMPORAL)
        return [NONE if row[0] >= self.cfg.none_probability else names[int(best)]
                for row, best in zip(p, types.argmax(axis=1), strict=True)]

    def newer(self, pairs: Sequence[Pair]) -> list[str]:
        """Per pair, the side ("a" or "b") the model reads as superseding the other (the
        probabilities of the pairs last predicted are reused)."""
        p = self.probabilities(pairs)
        return ["a" if row[3] >= row[4] else "b" for row in p]
