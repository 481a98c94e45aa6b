"""The bundled default runs the docs quote, as a committed summary: reports/default_runs.json.

A fresh default run (the bundled MiniLM, the bundled data, every setting at its default) takes
seconds, not the milliseconds a docs check may, so the docs' figures are checked against this
summary (tests/test_docs_figures.py, quick) and the summary against fresh runs
(tests/test_acceptance.py, slow). When the code changes a figure, the slow test fails; then

    python -m tests.default_runs

writes the summary again from fresh runs, and the quick test names each doc figure that no
longer agrees with it.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "reports" / "default_runs.json"
# each run by the overrides after `python -m memeval run`: the command the docs give
RUNS = ("+experiment=three_pass", "+experiment=three_pass_holdout",
        *(f"+experiment=three_pass_holdout seed={seed}" for seed in range(1, 5)),
        "+experiment=three_pass_holdout scorer=memoryd",
        "+experiment=three_pass_holdout scorer=memoryd threshold=judge_quantile")
DIGITS = 6  # a rate or bound kept to this many decimals: the docs quote at most three


def _rounded(value: float | list[float] | None) -> Any:
    if isinstance(value, list):
        return [round(bound, DIGITS) for bound in value]
    return None if value is None else round(value, DIGITS)


def _trust(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The trust score of what a pass stored, where the run scores it (`three_pass`)."""
    trust = (stored or {}).get("trust")
    if not trust:
        return {}
    return {"trust": {key: _rounded(trust[key])
                      for key in ("mean", "mean_ci95", "p10", "p50", "p90")}}


def summary(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """What the docs quote of a write-gate run: per pass recall, noise stored, pre-judge rate
    (with their CIs), judge calls, content-score rejections, audits and the stored memories'
    trust score; the holdout's split."""
    passes = [{"entries": p["entries"],
               "recall": _rounded(p["substantive_recall"]),
               "recall_ci95": _rounded(p["substantive_recall_ci95"]),
               "noise_stored": p["noise_stored"],
               "prejudge": _rounded(p["prejudge_filter_rate"]),
               "prejudge_ci95": _rounded(p["prejudge_filter_rate_ci95"]),
               "judge_calls": p["judge_calls"],
               "content_score": p["stage_counts"]["content_score"],
               "audits": p["audits"], **_trust(p.get("stored_models"))}
              for p in metrics["passes"]]
    split = metrics.get("split")
    return {"embedder": metrics["embedder"]["identity"], "passes": passes,
            **({"learn": split["learn"], "eval": split["eval"]} if split else {})}


@cache
def committed() -> dict[str, Any]:
    runs: dict[str, Any] = json.loads(SUMMARY.read_text())["runs"]
    return runs


def in_summary(run: str, key: str, index: int = -1, scale: float = 1.0) -> Any:
    """A figure of the committed summary, for a docs claim: `key` of pass `index` (-1: the
    last), or a top-level `key` (`learn`, `eval`) when the passes do not hold it."""
    found = committed()[run]
    return lambda: scale * (found[key] if key in found else found["passes"][index][key])


def summary_bound(run: str, key: str, side: int, index: int = -1, scale: float = 1.0) -> Any:
    """One side (0 low, 1 high) of a CI of the committed summary, for a docs claim."""
    return lambda: scale * committed()[run]["passes"][index][key][side]


def regenerate() -> dict[str, Any]:
    """Every run afresh, on this process's cache ($MEMEVAL_CACHE_DIR)."""
    from memeval.config import compose
    from memeval.runner import run_experiment

    runs = {}
    with tempfile.TemporaryDirectory() as work:
        for number, run in enumerate(RUNS):
            config = compose([*run.split(), "progress=false", "plots=false",
                              "reporting.phoenix.endpoint=null"])
            runs[run] = summary(run_experiment(config, Path(work) / str(number)))
    return runs


def main() -> int:
    runs = regenerate()
    SUMMARY.write_text(json.dumps(
        {"about": "python -m memeval run OVERRIDES for each run below, every other setting at "
                  "its default; written by `python -m tests.default_runs`, checked against "
                  "fresh runs by tests/test_acceptance.py",
         "runs": runs}, indent=1) + "\n")
    print(f"wrote {SUMMARY.relative_to(ROOT)}: {len(runs)} runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
