"""How well response length alone separates the labels of a labelled set.

`python -m memeval length-baseline FILE [--target-recall 0.97]`: a set where length alone
reaches the gate's targets does not test the gate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.entry import LABELS


def length_baseline(path: str, target_recall: float = 0.97,
                    memoryd_min_chars: int = 80) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score  # loaded when used, not when the module registers

    entries = load_labeled_jsonl(path).entries
    lengths = np.array([len(e.assistant_response.strip()) for e in entries])
    labels = np.array([e.label for e in entries])
    substantive = labels == "substantive"
    ordered = np.sort(lengths[substantive])
    cut = int(ordered[int(np.floor((1 - target_recall) * len(ordered)))])

    def filtered(label: str, below: int) -> float:
        return float((lengths[labels == label] < below).mean())

    return {
        "entries": len(entries),
        "auc_substantive_vs_rest": float(roc_auc_score(substantive, lengths)),
        "memoryd_gate": {label: filtered(label, memoryd_min_chars) for label in LABELS},
        "best_cut": {"chars": cut, "substantive_kept": float((lengths[substantive] >= cut).mean()),
                     **{f"{label}_filtered": filtered(label, cut)
                        for label in LABELS if label != "substantive"},
                     "prejudge_filter_rate": float((lengths < cut).mean())},
    }
