"""The unit every experiment replays: one (user prompt, assistant response) turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LABELS = ("noise", "low_value", "substantive")
LABEL_ALIASES = {"low": "low_value", "low-value": "low_value", "lowvalue": "low_value"}


def normalise_label(raw: str) -> str:
    """Map a label (or a known alias such as the seed's 'low') to its canonical name."""
    label = raw.strip().lower()
    label = LABEL_ALIASES.get(label, label)
    if label not in LABELS:
        raise ValueError(f"unknown label '{raw}' (expected one of {', '.join(LABELS)} or 'low')")
    return label


@dataclass(frozen=True)
class Entry:
    """One agent turn; `label` is None for unlabelled corpus rows."""

    id: str
    user_prompt: str
    assistant_response: str
    label: str | None = None
    label_source: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
