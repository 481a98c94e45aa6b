"""`dataset=coding_memory`: the coding-agent memory benchmark (data/coding_memory/, its card in
README.md there): real Claude Code sessions of whole projects as one stream of turns in time order,
and questions a later session of the same project needs answered from an earlier one.

The benchmark is a Hugging Face `datasets` folder, loadable without the hub
(`datasets.load_dataset(FOLDER, "questions")`): `turns/<project>.parquet` holds each project's
assistant turns with their split, session, time and write-gate label; `questions/<split>.parquet`
the questions of the `dev` and `blind` splits. A split is a set of whole sessions: a question's
evidence lies in its own split's sessions. memeval reads the parquet files itself.

A row that breaks the schema is reported as `file:row N: reason` and skipped (or aborts the load
with `on_error: raise`); a question whose evidence is not a turn of its project, or was written at
or after the point it is asked at, is such a row. A folder that yields nothing fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from memeval.data.base import DATASETS, Dataset, DatasetError, LoadReport
from memeval.data.jsonl import check_read_settings, note_problem, nothing_usable
from memeval.entry import Entry, normalise_label

TURNS, QUESTIONS = "turns", "questions"
SPLITS = ("dev", "blind")
ANSWERABLE = ("decision", "failure_cause", "command_config", "code_location", "convention",
              "what_changed")
UNANSWERABLE = "unanswerable"
CATEGORIES = (*ANSWERABLE, UNANSWERABLE)
T = TypeVar("T")


@dataclass
class CodingMemoryConfig:
    path: str = "???"  # the benchmark's folder
    projects: list[str] | None = None  # only these projects' turns; null: every project
    on_error: str = "skip"

    def validate(self) -> None:
        check_read_settings(self.on_error, None, 1)


@dataclass(frozen=True)
class BenchQuestion:
    """A question, asked at `asked_at` (the start of session `asked_session`) of `project`."""

    id: str
    project: str
    split: str
    category: str
    text: str
    answer: str | None  # None: never established before it is asked (the system should abstain)
    evidence: tuple[str, ...]  # the turns (entry ids as the run names them) that establish it
    asked_session: str
    asked_at: datetime
    labeller: str

    @property
    def unanswerable(self) -> bool:
        return self.category == UNANSWERABLE


def parse_time(value: Any) -> datetime:
    """An ISO 8601 time (a trailing Z is UTC); a naive one is taken as UTC."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        raise ValueError(f"not a time: {value!r}")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{key}' must be a non-empty string")
    return value


def _rows(files: Sequence[Path], report: LoadReport, on_error: str,
          parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """Each row of the parquet `files` parsed; a bad one reported as `file:row N`."""
    import pyarrow.parquet as pq

    parsed: list[T] = []
    for file in files:
        try:
            rows = pq.read_table(file).to_pylist()
        except (OSError, ValueError) as err:
            raise DatasetError(f"{file}: not a readable parquet file ({err})") from None
        for number, row in enumerate(rows, 1):
            report.rows_read += 1
            try:
                parsed.append(parse(row))
            except (ValueError, TypeError) as err:
                note_problem(report, file, number, str(err), on_error)
    return parsed


def _files(folder: Path, part: str, names: Sequence[str] | None) -> list[Path]:
    """The parquet files of `part` (turns, questions), only `names` when given."""
    found = sorted((folder / part).glob("*.parquet"))
    if not found:
        raise DatasetError(f"{folder / part}: no parquet files; point dataset.path= at a coding "
                           f"memory benchmark folder (data/coding_memory/, its README.md says "
                           f"what it holds)")
    if names is None:
        return found
    wanted = [f for f in found if f.stem in names]
    missing = sorted(set(names) - {f.stem for f in wanted})
    if missing:
        raise DatasetError(f"{folder / part}: no {', '.join(missing)} (it holds "
                           f"{', '.join(f.stem for f in found)})")
    return wanted


def _split(row: Mapping[str, Any]) -> str:
    split = _text(row, "split")
    if split not in SPLITS:
        raise ValueError(f"split '{split}' is not one of {', '.join(SPLITS)}")
    return split


def _turn(row: dict[str, Any]) -> Entry:
    return Entry(id=_text(row, "id"), user_prompt=str(row.get("user_prompt") or ""),
                 assistant_response=_text(row, "assistant_response"),
                 label=normalise_label(_text(row, "label")), label_source="human",
                 meta={"project": _text(row, "project"), "split": _split(row),
                       "session": _text(row, "session"),
                       "timestamp": parse_time(row.get("timestamp")).isoformat()})


def load_turns(path: str | Path, projects: Sequence[str] | None = None,
               on_error: str = "skip") -> Dataset:
    """Every project's turns as one stream in time order (a session's own order kept where two
    turns share a time)."""
    folder = Path(path).expanduser()
    report = LoadReport(source=str(folder))
    entries = _rows(_files(folder, TURNS, projects), report, on_error, _turn)
    if not entries:
        raise nothing_usable(f"{folder}: no usable turn", report)
    entries.sort(key=lambda e: e.meta["timestamp"])  # stable: file order within a time
    return Dataset(name=folder.name, entries=entries, report=report)


def load_questions(path: str | Path, turns: Sequence[Entry], splits: Sequence[str],
                   named: Callable[[str], str] = str, on_error: str = "skip"
                   ) -> tuple[list[BenchQuestion], LoadReport]:
    """The questions of `splits` whose project is among `turns`' ones, checked against them;
    `named` maps a turn id as the folder writes it to the id the run serves (redacted names)."""
    folder = Path(path).expanduser()
    report = LoadReport(source=str(folder / QUESTIONS))
    written = {e.id: (e.meta["project"], e.meta["split"], parse_time(e.meta["timestamp"]))
               for e in turns}
    projects = {project for project, _, _ in written.values()}

    def parse(row: dict[str, Any]) -> BenchQuestion:
        category = _text(row, "category")
        if category not in CATEGORIES:
            raise ValueError(f"category '{category}' is not one of {', '.join(CATEGORIES)}")
        answer, evidence = row.get("answer"), tuple(named(str(i)) for i in row.get("evidence")
                                                     or ())
        if (category == UNANSWERABLE) != (answer is None) or bool(evidence) == (answer is None):
            raise ValueError("an unanswerable question has no answer and no evidence; any other "
                             "has both")
        asked = parse_time(row.get("asked_at"))
        project, split = _text(row, "project"), _split(row)
        for turn in evidence:
            where = written.get(turn)
            if where is None or where[:2] != (project, split):
                raise ValueError(f"evidence '{turn}' is not a turn of project '{project}', "
                                 f"split '{split}'")
            if where[2] >= asked:
                raise ValueError(f"evidence '{turn}' was written at or after the question is "
                                 f"asked ({asked.isoformat()})")
        return BenchQuestion(_text(row, "id"), project, split, category,
                             _text(row, "question"), answer, evidence,
                             _text(row, "asked_session"), asked, str(row.get("labeller") or ""))

    unknown = sorted(set(splits) - set(SPLITS))
    if unknown:
        raise DatasetError(f"no split {', '.join(unknown)}: the benchmark's splits are "
                           f"{', '.join(SPLITS)}")
    questions = [q for q in _rows(_files(folder, QUESTIONS, splits), report, on_error, parse)
                 if q.project in projects]
    if not questions:
        raise nothing_usable(f"{folder / QUESTIONS}: no usable question of split(s) "
                             f"{', '.join(splits)} for project(s) {', '.join(sorted(projects))}",
                             report)
    return questions, report


@DATASETS.register("coding_memory", CodingMemoryConfig)
def build_coding_memory(cfg: CodingMemoryConfig, **_: object) -> Dataset:
    return load_turns(cfg.path, cfg.projects, cfg.on_error)

