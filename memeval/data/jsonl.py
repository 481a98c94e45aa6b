"""Reading JSONL the same way everywhere: bad lines are named by file and line, never fatal
unless the user asked for `on_error: raise`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memeval.data.base import DatasetError, LoadReport


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
