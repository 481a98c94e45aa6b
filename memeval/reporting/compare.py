"""Two runs of the gate on the same data, entry by entry: per-pass deltas with paired bootstrap CIs
and McNemar's exact test on the keep/drop decisions.

Pairing by entry is what makes a small difference detectable: both runs saw the same entries, so
the question is how often they decided differently, not how two independent rates differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.paired import mcnemar
from memeval.results.run import Run


class IncomparableRuns(ValueError):
    """The runs replayed different data, so entry-by-entry comparison would mislead."""


def check_comparable(a: Run, b: Run, force: bool) -> None:
    if a.fingerprint is None or b.fingerprint is None:
        raise IncomparableRuns(f"{a.name} or {b.name} replayed no traces: nothing to pair by entry")
    if a.fingerprint != b.fingerprint and not force:
        raise IncomparableRuns(
            f"{a.name} replayed dataset {a.fingerprint}, {b.name} replayed {b.fingerprint}: "
            f"their entries differ, so deltas and McNemar's test would mislead (--force to "
            f"compare anyway)")


def _paired(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    keys = ["arm", "pass_no", "phase", "entry_id"]
    return a.merge(b, on=keys, suffixes=("_a", "_b"))


def compare_runs(a: Run, b: Run, resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per evaluated pass (and arm): each run's substantive recall and judge-call rate,
    the b − a difference with a paired bootstrap CI, and McNemar's p on keep/drop."""
    paired = _paired(a.decisions, b.decisions)
    paired = paired[paired["phase"] == "eval"]
    rows = []
    for key, group in paired.groupby(["arm", "pass_no"], sort=True):
        arm, pass_no = str(key[0]), int(key[1])  # type: ignore[call-overload]
        human = group[(group["label_a"] == "substantive") & (group["label_source_a"] == "human")]
        row: dict[str, Any] = {"arm": arm, "pass": pass_no, "entries": len(group)}
        for name, frame, column in (("recall", human, "retained"),
                                    ("judge_call_rate", group, "judge_called")):
            first = frame[f"{column}_a"].to_numpy(dtype=float)
            second = frame[f"{column}_b"].to_numpy(dtype=float)
            low, high = bootstrap_ci(second - first, resamples, seed + pass_no)
            row.update({f"{name}_a": _mean(first), f"{name}_b": _mean(second),
                        f"{name}_delta": _mean(second - first),
                        f"{name}_delta_ci95": [low, high]})
        test = mcnemar(group["retained_a"].to_numpy(dtype=bool),
                       group["retained_b"].to_numpy(dtype=bool))
        rows.append({**row, **{f"mcnemar_{k}": v for k, v in test.items()}})
    return pd.DataFrame(rows)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None
