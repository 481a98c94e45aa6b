"""Oracle judge: answers from ground truth, with an optional seeded error rate.

Replaying with a perfect judge isolates what the cheap stages cost in recall; the error rate
studies how judge noise propagates into the learned noise prototypes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from memeval.backends.judges.base import JUDGES, JudgeError, Verdict
from memeval.entry import LABELS, Entry
from memeval.registry import SEEDS, ConfigError, bounded


@dataclass
class LabelJudgeConfig:
    keep_labels: list[str] = field(default_factory=lambda: ["substantive"])
    error_rate: float = bounded(0.0, 0, 1)
    seed: int = bounded(0, *SEEDS)

    def validate(self) -> None:
        unknown = set(self.keep_labels) - set(LABELS)
        if unknown:
            raise ValueError(f"keep_labels has unknown labels {sorted(unknown)}")
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError("error_rate must be in [0, 1]")


class LabelJudge:
    def __init__(self, cfg: LabelJudgeConfig) -> None:
        self.cfg = cfg
        self.name = "labels" if cfg.error_rate == 0 else f"labels(err={cfg.error_rate:g})"

    def _flipped(self, entry_id: str) -> bool:
        """Deterministic per (seed, entry): the same entry gets the same wrong answer every pass."""
        if self.cfg.error_rate == 0:
            return False
        digest = hashlib.sha256(f"{self.cfg.seed}:{entry_id}".encode()).digest()
        return int.from_bytes(digest[:8], "little") / 2**64 < self.cfg.error_rate

    def judge(self, entry: Entry, user_prompt: str, assistant_text: str) -> Verdict:
        if entry.label is None:
            raise JudgeError(f"label judge needs labelled entries; '{entry.id}' has no label")
        keep = entry.label in self.cfg.keep_labels
        if self._flipped(entry.id):
            keep = not keep
        return Verdict(skip=not keep, model=self.name, raw="SKIP" if not keep else "")


def refuse_unlabelled(entries: Sequence[Entry]) -> None:
    """Before the run, not per row: every unlabelled row would be a judge error."""
    unlabelled = [e.id for e in entries if e.label is None]
    if unlabelled:
        raise ConfigError(
            f"judge=labels answers from each row's label, but {len(unlabelled)} of "
            f"{len(entries)} rows have none (first: '{unlabelled[0]}'). Replay unlabelled "
            f"traces with +experiment=three_pass_mixed (corpus rows get labeller=heuristic or "
            f"labeller=judge labels), or judge them with an LLM (judge=anthropic or "
            f"judge=openai_chat).")


@JUDGES.register("labels", LabelJudgeConfig)
def build_label_judge(cfg: LabelJudgeConfig, *, entries: Sequence[Entry] = (),
                      **_: object) -> LabelJudge:
    refuse_unlabelled(entries)
    return LabelJudge(cfg)
