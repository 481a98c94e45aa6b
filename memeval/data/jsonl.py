"""Reading JSONL the same way everywhere: bad lines are named by file and line, never fatal
unless the user asked for `on_error: raise`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memeval.data.base import DatasetError, LoadReport

ON_ERROR = ("skip", "raise")
MAX_CHARS = 32768  # the reference benchmark's cut for a response


def check_read_settings(on_error: str, limit: int | None = None,
                        max_chars: int = MAX_CHARS) -> None:
    """The settings every JSONL loader shares, refused the same way in each."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got '{on_error}'")
    if limit is not None and limit <= 0:
        raise ValueError("limit must be positive")
    if max_chars < 1:
        raise ValueError("max_chars must be positive")


def note_problem(report: LoadReport, file: Path, number: int, reason: str,
                 on_error: str) -> None:
    message = f"{file}:{number}: {reason}"
    if on_error == "raise":
        raise DatasetError(message)
    report.problems.append(message)


def read_objects(file: Path, report: LoadReport,
                 on_error: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line that is a UTF-8 JSON object; other lines
    are counted in `report.rows_read` and reported."""
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            report.rows_read += 1
            try:
                value = json.loads(raw.decode("utf-8"))  # JSONDecodeError is a ValueError
                if not isinstance(value, dict):
                    raise ValueError(f"expected a JSON object, got {type(value).__name__}")
            except (ValueError, UnicodeDecodeError) as err:
                note_problem(report, file, number, str(err), on_error)
                continue
            yield number, value
