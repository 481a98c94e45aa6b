"""Classifier judge: scikit-learn on TF-IDF features, trained on labelled entries, out-of-fold.

A cheap, deterministic judge that makes mistakes the way a learned judge does (unlike the label
oracle). Every entry of the training set is judged by a model that never saw it (K-fold); texts
outside the training set are judged by a model fitted on all of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memeval.backends.judges.base import JUDGES, JudgeError, Verdict
from memeval.entry import LABELS, Entry
from memeval.registry import SEEDS, bounded
from memeval.utils.folds import stratified_splits

if TYPE_CHECKING:  # scikit-learn loads when the judge is built, not when it registers
    from sklearn.pipeline import Pipeline


@dataclass
class ClassifierJudgeConfig:
    keep_labels: list[str] = field(default_factory=lambda: ["substantive"])
    folds: int = bounded(5, 2)
    keep_probability: float = bounded(0.5, 0, 1)
    c: float = bounded(4.0, above=0)
    seed: int = bounded(0, *SEEDS)

    def validate(self) -> None:
        if set(self.keep_labels) - set(LABELS):
            raise ValueError(f"keep_labels must be among {LABELS}")
        if self.folds < 2:
            raise ValueError("folds must be at least 2")


def _model(cfg: ClassifierJudgeConfig) -> Pipeline:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2),
        LogisticRegression(C=cfg.c, max_iter=2000, class_weight="balanced"),
    )


class ClassifierJudge:
    def __init__(self, cfg: ClassifierJudgeConfig, entries: Sequence[Entry]) -> None:
        labelled = [e for e in entries if e.label is not None]
        targets = np.array([e.label in cfg.keep_labels for e in labelled], dtype=int)
        if len(set(targets)) < 2 or min(np.bincount(targets)) < cfg.folds:
            raise JudgeError("classifier judge needs at least `folds` entries of each class")
        self.cfg = cfg
        self.name = f"classifier(tfidf-lr,{cfg.folds}-fold)"
        texts = [e.assistant_response for e in labelled]
        self._fold_of: dict[str, int] = {}
        self._models: list[Pipeline] = []
        for fold, (train, test) in enumerate(stratified_splits(targets, cfg.folds, cfg.seed)):
            model = _model(cfg).fit([texts[i] for i in train], targets[train])
            self._models.append(model)
            self._fold_of.update((labelled[i].id, fold) for i in test)
        self._all = _model(cfg).fit(texts, targets)

    def judge(self, entry: Entry, user_prompt: str, assistant_text: str) -> Verdict:
        fold = self._fold_of.get(entry.id)
        model = self._models[fold] if fold is not None else self._all
        probability = float(model.predict_proba([assistant_text])[0, 1])
        skip = probability < self.cfg.keep_probability
        return Verdict(skip=skip, model=self.name, raw=f"p(keep)={probability:.3f}")


@JUDGES.register("classifier", ClassifierJudgeConfig)
def build_classifier_judge(cfg: ClassifierJudgeConfig, *, entries: Sequence[Entry],
                           **_: object) -> ClassifierJudge:
    return ClassifierJudge(cfg, entries)
