"""What the fault tests share: comparing two runs apart from the clock, and a judge server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from memeval.results.run_dir import read_decisions
from tests.backends.test_http_judges import openai_reply
from tests.loopback import Received, Reply

# Wall-clock fields: the only ones allowed to differ between two runs of the same settings.
CLOCK = ("latency", "wall_seconds", "timing", "run_id", "started_at")


def without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if k not in CLOCK}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def decisions_without_clock(run_dir: Path) -> pd.DataFrame:
    frame = read_decisions(run_dir)
    return frame.drop(columns=[c for c in frame.columns
                               if c.startswith("latency_") or c == "started_at"])


def chat_verdict(request: Received) -> Reply:
    """A deterministic chat-completions judge: keeps texts with code or some length."""
    user = request.body["messages"][-1]["content"]
    return openai_reply("SKIP" if "`" not in user and len(user) < 1400 else
                        "The memory, rewritten: " + user[-200:])
