"""Reads any JSONL file in the labelled schema: user_prompt, assistant_response, label.

Bad lines are reported with file and line, then skipped (`on_error: skip`) or abort the load before
any work starts (`on_error: raise`): a run never dies halfway over one malformed line. An empty or
whitespace-only response is such a line (there is nothing to gate); a response longer than
`max_chars` is cut to it and counted in the report's `truncated`, as the Claude Code loader does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memeval.data.base import DATASETS, Dataset, DatasetError, LoadReport
from memeval.data.jsonl import MAX_CHARS, SetKind, check_read_settings, load_rows
from memeval.entry import Entry, normalise_label
from memeval.registry import bounded

__all__ = ["DatasetError", "LabeledJsonlConfig", "load_labeled_jsonl"]


@dataclass
class LabeledJsonlConfig:
    path: str = "???"
    on_error: str = "skip"
    limit: int | None = bounded(None, 1)
    max_chars: int = bounded(MAX_CHARS, 1)

    def validate(self) -> None:
        check_read_settings(self.on_error, self.limit, self.max_chars)


def _parse_row(row: dict[str, Any], default_id: str) -> Entry:
    for key in ("user_prompt", "assistant_response", "label"):
        if key not in row:
            raise ValueError(f"missing field '{key}'")
    prompt, response = row["user_prompt"], row["assistant_response"]
    if not isinstance(prompt, str) or not isinstance(response, str):
        raise ValueError("user_prompt and assistant_response must be strings")
    if not isinstance(row["label"], str):
        raise ValueError("label must be a string")
    if not response.strip():
        raise ValueError("empty assistant_response: nothing to gate")
    meta = {k: v for k, v in row.items() if k not in {"id", "user_prompt", "assistant_response",
                                                      "label", "label_source"}}
    given_id = row.get("id")  # an explicit 0 is an id too: only a missing or empty id defaults
    return Entry(
        id=default_id if given_id is None or given_id == "" else str(given_id),
        user_prompt=prompt,
        assistant_response=response,
        label=normalise_label(row["label"]),
        label_source=str(row.get("label_source") or "human"),
        meta=meta,
    )


ENTRIES = SetKind("entries", "dataset.path", "user_prompt, assistant_response and label",
                  file="labelled dataset")


def load_labeled_jsonl(path: str | Path, on_error: str = "skip", limit: int | None = None,
                       max_chars: int = MAX_CHARS) -> Dataset:
    file = Path(path).expanduser()
    report = LoadReport(source=str(file))

    def cut(entry: Entry) -> Entry:
        if len(entry.assistant_response) <= max_chars:
            return entry
        report.stats["truncated"] = report.stats.get("truncated", 0) + 1
        return replace(entry, assistant_response=entry.assistant_response[:max_chars])

    def parse(row: dict[str, Any], number: int) -> Entry:
        return _parse_row(row, f"{file.stem}:{number}")  # a line without an id is named by it

    entries, _ = load_rows(file, ENTRIES, parse, lambda e: e.id, on_error, report, limit,
                           accept=cut)
    return Dataset(name=file.stem, entries=entries, report=report)


@DATASETS.register("labeled_jsonl", LabeledJsonlConfig)
def build_labeled_jsonl(cfg: LabeledJsonlConfig, **_: object) -> Dataset:
    return load_labeled_jsonl(cfg.path, cfg.on_error, cfg.limit, cfg.max_chars)
