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
from memeval.data.jsonl import (
    MAX_CHARS,
    check_read_settings,
    note_problem,
    nothing_usable,
    read_objects,
)
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


def load_labeled_jsonl(path: str | Path, on_error: str = "skip", limit: int | None = None,
                       max_chars: int = MAX_CHARS) -> Dataset:
    file = Path(path).expanduser()
    if not file.is_file():
        raise DatasetError(f"labelled dataset file not found: {file} (set dataset.path=FILE)")
    report = LoadReport(source=str(file))
    entries: list[Entry] = []
    seen: set[str] = set()
    for number, row in read_objects(file, report, on_error):
        try:
            entry = _parse_row(row, f"{file.stem}:{number}")
            if entry.id in seen:
                raise ValueError(f"duplicate id '{entry.id}'")
        except ValueError as err:
            note_problem(report, file, number, str(err), on_error)
            continue
        seen.add(entry.id)
        if len(entry.assistant_response) > max_chars:
            entry = replace(entry, assistant_response=entry.assistant_response[:max_chars])
            report.stats["truncated"] = report.stats.get("truncated", 0) + 1
        entries.append(entry)
        if limit is not None and len(entries) >= limit:
            break
    if not entries:
        raise nothing_usable(f"{file}: no usable entries ({report.skipped} bad lines)", report)
    return Dataset(name=file.stem, entries=entries, report=report)


@DATASETS.register("labeled_jsonl", LabeledJsonlConfig)
def build_labeled_jsonl(cfg: LabeledJsonlConfig, **_: object) -> Dataset:
    return load_labeled_jsonl(cfg.path, cfg.on_error, cfg.limit, cfg.max_chars)
