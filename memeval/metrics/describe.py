"""A sample described as the result tables show it: a mean with its bootstrap CI, or latency
percentiles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memeval.metrics.bootstrap import bootstrap_ci


def mean_ci(values: Sequence[float], resamples: int, seed: int) -> dict[str, Any]:
    """{mean, n, ci95}: the mean None and the CI NaN when there are no values."""
    array = np.array(values, dtype=float)
    return {"mean": float(array.mean()) if array.size else None, "n": int(array.size),
            "ci95": list(bootstrap_ci(array, resamples, seed))}


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    """The median and 95th percentile, None when there are no values."""
    return {"p50": float(np.percentile(values, 50)) if values else None,
            "p95": float(np.percentile(values, 95)) if values else None}
