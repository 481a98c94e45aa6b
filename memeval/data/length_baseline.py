"""How well response length alone separates the labels of a labelled set.

`python -m memeval.data.length_baseline FILE [--target-recall 0.97]`: a set where length alone
reaches the gate's targets does not test the gate.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    parser.add_argument("--target-recall", type=float, default=0.97)
    options = parser.parse_args()
    result = length_baseline(options.path, options.target_recall)
    print(f"entries: {result['entries']}")
    print(f"ROC AUC of length, substantive vs rest: {result['auc_substantive_vs_rest']:.3f}")
    print("memoryd 80-char gate filters: " + ", ".join(
        f"{k} {v:.1%}" for k, v in result["memoryd_gate"].items()))
    best = result["best_cut"]
    print(f"best cut keeping ≥{options.target_recall:.0%} substantive: {best['chars']} chars → "
          f"noise filtered {best['noise_filtered']:.1%}, low_value filtered "
          f"{best['low_value_filtered']:.1%}, pre-judge rate {best['prejudge_filter_rate']:.1%}")


if __name__ == "__main__":
    main()
