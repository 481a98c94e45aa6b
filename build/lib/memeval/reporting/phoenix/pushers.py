"""Which pusher a run directory needs, from what it holds: a replay's spans, or a quality
experiment's per-item tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memeval.reporting.phoenix import push, quality_push
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.push import PushReport


@dataclass(frozen=True)
class RunKind:
    holds: Callable[[Path], bool]
    push: push.Push


PUSHERS: dict[str, RunKind] = {
    "replay": RunKind(push.holds_spans, push.push_run),
    "quality": RunKind(quality_push.holds, quality_push.push_quality),
}


def pushable(run_dir: Path) -> bool:
    return any(kind.holds(run_dir) for kind in PUSHERS.values())


def push_run(run_dir: str | Path, settings: PhoenixConfig, progress: bool = True) -> PushReport:
    """Push whatever the run directory holds for Phoenix."""
    folder = Path(run_dir)
    for kind in PUSHERS.values():
        if kind.holds(folder):
            return kind.push(folder, settings, progress)
    raise FileNotFoundError(
        f"{folder} holds nothing to push: no {push.PHOENIX_DIR}/{push.SPANS} (the run replayed "
        f"no traces or was made with reporting.phoenix.enabled=false) and no per-item table of "
        f"conflict_detection or mqs_calibration")
