"""Two runs of the gate on the same data, entry by entry: per-pass deltas with paired bootstrap CIs
and McNemar's exact test on the keep/drop decisions; and the settings that differ between them.

Pairing by entry is what makes a small difference detectable: both runs saw the same entries, so
the question is how often they decided differently, not how two independent rates differ.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from memeval.metrics.bootstrap import bootstrap_ci
from memeval.metrics.paired import mcnemar
from memeval.results.run import Run, flat_settings, group_keys


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
    """One row per evaluated pass (and arm): each run's substantive recall, judge calls and
    judge-call rate, the b − a differences with paired bootstrap CIs, and McNemar's p on
    keep/drop."""
    paired = _paired(a.decisions, b.decisions)
    paired = paired[paired["phase"] == "eval"]
    rows = []
    for key, group in paired.groupby(["arm", "pass_no"], sort=True):
        arm, pass_no = str(key[0]), int(key[1])  # type: ignore[call-overload]
        human = group[(group["label_a"] == "substantive") & (group["label_source_a"] == "human")]
        row: dict[str, Any] = {"arm": arm, "pass": pass_no, "entries": len(group),
                               **{f"judge_calls_{side}": int(group[f"judge_called_{side}"].sum())
                                  for side in ("a", "b")}}
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


NOT_SET = "(not set)"
VALUE_CHARS = 60  # a longer setting (a word list, a path) is cut: the key already says what differs
LABEL_SETTINGS = 3  # settings named in a run's label; the "what differs" table has them all


def shown_setting(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS - 1] + "…"


def settings_diff(a: Run, b: Run) -> dict[str, tuple[str, str]]:
    """Each setting of the runs' resolved `config.yaml` (nested keys flattened, e.g.
    `judge.name`; a list is one value) whose value differs, as shown for a and for b."""
    first, second = (flat_settings(OmegaConf.to_container(run.config, resolve=True))
                     for run in (a, b))
    return {key: (shown_setting(first[key]) if key in first else NOT_SET,
                  shown_setting(second[key]) if key in second else NOT_SET)
            for key in sorted(first.keys() | second.keys())
            if key not in first or key not in second or first[key] != second[key]}


def run_labels(a: Run, b: Run, diff: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    """Each run named by its experiment and the settings that set it apart, e.g.
    `three_pass · judge=classifier`: a config group whose `name` differs stands for all its
    keys. Runs that no setting tells apart are told apart by their directories."""
    shown = [key for key in group_keys(list(diff)) if key != "experiment.name"]
    labels = []
    for run, side in ((a, 0), (b, 1)):
        settings = [f"{key.removesuffix('.name')}={diff[key][side]}" for key in shown]
        if len(settings) > LABEL_SETTINGS:
            settings[LABEL_SETTINGS:] = [f"+{len(settings) - LABEL_SETTINGS} more settings"]
        labels.append(" · ".join([run.experiment, *settings]))
    if labels[0] == labels[1]:
        return f"{labels[0]} ({a.name})", f"{labels[1]} ({b.name})"
    return labels[0], labels[1]
