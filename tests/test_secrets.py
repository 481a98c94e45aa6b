"""Planted secrets never reach anything a run writes: stores, decisions, metrics, memories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from memeval.runner import run_experiment

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
EMAIL = "jane.roe@example-corp.io"
DB_PASSWORD = "s3cretPassw0rdZ"


def test_no_planted_secret_is_written_anywhere(tmp_path: Path,
                                               fast_config: Callable[..., DictConfig]) -> None:
    leaky = {
        "noise": f"Running the deploy now with token {GITHUB_TOKEN}, will report back to {EMAIL}.",
        "substantive": ("Root cause: the worker reads DATABASE_URL=postgres://app:"
                        f"{DB_PASSWORD}@db.internal:5432/orders and the pool size is 5 in "
                        "`config/db.py`, so the sixth Celery worker blocks; raised it to 20."),
    }
    rows = [{"user_prompt": f"status? mail {EMAIL}", "assistant_response": text, "label": label}
            for label, text in leaky.items()]
    rows += [{"user_prompt": "ok", "assistant_response": f"Done. Step {i} finished without "
              "problems, moving on to the next part of the checklist now.", "label": "noise"}
             for i in range(12)]
    data = tmp_path / "leaky.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    run_experiment(fast_config("+experiment=three_pass", "dataset=labeled_jsonl",
                               f"dataset.path={data}", "plots=false"), run)

    written = [p for p in run.rglob("*") if p.is_file()]
    assert any(p.name == "rejection_store.jsonl" for p in written)
    stores = "".join((run / "state" / f).read_text() for f in
                     ("rejection_store.jsonl", "accept_store.jsonl"))
    assert "[REDACTED:" in stores  # the stores did receive the planted texts, redacted
    for path in written:
        content = path.read_bytes()
        for secret in (GITHUB_TOKEN, EMAIL, DB_PASSWORD):
            assert secret.encode() not in content, f"{secret[:6]}… leaked into {path}"
