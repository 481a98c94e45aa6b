"""`python -m memeval length-baseline FILE [--target-recall 0.97]`: how far response length alone
separates a labelled set's labels; a set where length alone reaches the gate's targets does not
test the gate (memeval/data/length_baseline.py)."""

from __future__ import annotations

import argparse


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval length-baseline",
                                     description="How far response length alone separates "
                                                 "a labelled set's labels.")
    parser.add_argument("path", help="a labelled JSONL file")
    parser.add_argument("--target-recall", type=float, default=0.97,
                        help="substantive share the best cut keeps (default 0.97)")
    options = parser.parse_args(args)
    from memeval.data.length_baseline import length_baseline

    result = length_baseline(options.path, options.target_recall)
    print(f"entries: {result['entries']}")
    print(f"ROC AUC of length, substantive vs rest: {result['auc_substantive_vs_rest']:.3f}")
    print("memoryd 80-char gate filters: " + ", ".join(
        f"{k} {v:.1%}" for k, v in result["memoryd_gate"].items()))
    best = result["best_cut"]
    print(f"best cut keeping ≥{options.target_recall:.0%} substantive: {best['chars']} chars → "
          f"noise filtered {best['noise_filtered']:.1%}, low_value filtered "
          f"{best['low_value_filtered']:.1%}, pre-judge rate {best['prejudge_filter_rate']:.1%}")
    return 0
