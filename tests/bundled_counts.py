"""Counts over memeval's bundled data sets and the settings that name them: what the data cards
and docs say of them, recomputed from the files."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from statistics import median
from typing import Any

from omegaconf import OmegaConf

from memeval.config import register_resolvers
from memeval.paths import CONF_DIR, DATA_DIR

Row = dict[str, Any]
Test = Callable[[Row], bool]


@cache
def rows(name: str) -> tuple[Row, ...]:
    return tuple(json.loads(line) for line in (DATA_DIR / name).read_text().splitlines()
                 if line.strip())


def has(**fields: object) -> Test:
    return lambda row: all(row.get(key) == wanted for key, wanted in fields.items())


def starts(prefix: str) -> Test:
    return lambda row: str(row.get("pair_id", "")).startswith(prefix)


def both(*tests: Test) -> Test:
    return lambda row: all(test(row) for test in tests)


def count(name: str, test: Test = lambda row: True) -> Callable[[], float]:
    return lambda: sum(map(test, rows(name)))


def share(name: str, test: Test) -> Callable[[], float]:
    return lambda: 100 * count(name, test)() / len(rows(name))


def sessions(name: str, test: Test = lambda row: True) -> Callable[[], float]:
    return lambda: len({row["session"] for row in rows(name) if test(row)})


def total(*counts: Callable[[], float]) -> Callable[[], float]:
    return lambda: sum(each() for each in counts)


def times(factor: int, figure: Callable[[], float]) -> Callable[[], float]:
    return lambda: factor * figure()


@cache
def dev_sets() -> dict[str, Any]:
    register_resolvers()
    loaded = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "dev_sets" / "bundled.yaml"),
                                    resolve=True)
    assert isinstance(loaded, dict)
    return {str(key): sets for key, sets in loaded.items()}


def dev_lines(key: str) -> Callable[[], float]:
    """The pooled development set memeval/conf/dev_sets/bundled.yaml names under `key`."""
    return lambda: sum(len(rows(str(Path(path).relative_to(DATA_DIR))))
                       for path in dev_sets()[key])


def experiment_set(experiment: str, key: str) -> str:
    """The bundled file an experiment's YAML names under `experiment.key`."""
    register_resolvers()
    path = OmegaConf.select(OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml"),
                            f"experiment.{key}")
    return str(Path(path).relative_to(DATA_DIR))


def not_in(*splits: str) -> Test:
    return lambda row: row["split"] not in splits


def in_splits(*splits: str) -> Test:
    return lambda row: row["split"] in splits


def labelled_twice(row: Row) -> bool:
    return row.get("second_label") is not None


def retrieved(memories: int) -> Test:
    return lambda row: len(row["retrieved_memories"]) == memories


@cache
def tally(name: str) -> Counter[tuple[str, str, str]]:
    """A labelled-turns file's turns by (split, session, label): its card's table is 40 counts
    of 6,219 turns, so they are counted once."""
    return Counter((row["split"], row["session"], row["label"]) for row in rows(name))


def split_figure(name: str, split: str | None, unit: str,
                 label: str | None = None) -> Callable[[], float]:
    """The `unit` ("sessions" or "turns") of a split (None: all), of one label if given."""
    def figure() -> float:
        picked = {key: turns for key, turns in tally(name).items()
                  if split in (None, key[0]) and label in (None, key[2])}
        return len({key[1] for key in picked}) if unit == "sessions" else sum(picked.values())
    return figure


def memories(row: Row) -> list[dict[str, Any]]:
    return list(row["retrieved_memories"])


def creators(row: Row, known: bool) -> int:
    """Distinct creators of a scenario's retrieved memories (unknown, `null`, counted unless
    `known`)."""
    return len({memory["created_by"] for memory in memories(row)
                if not known or memory["created_by"] is not None})


def clean(memory: dict[str, Any]) -> bool:
    """Known creator and session, declared confidence ≥ 0.8, unhedged."""
    return (memory["created_by"] is not None and memory["session_id"] is not None
            and (memory["confidence"] or 0) >= 0.8 and not memory["hedged"])


def ancestors(name: str) -> Callable[[], float]:
    return lambda: sum(len(row["ancestors"]) for row in rows(name))


def retrieved_total(name: str) -> Callable[[], float]:
    return lambda: sum(len(memories(row)) for row in rows(name))


def created_by(name: str, creator: str | None) -> Callable[[], float]:
    return lambda: sum(memory["created_by"] == creator for row in rows(name)
                       for memory in memories(row))


def filled(column: str) -> Test:
    return lambda row: row[column] != ""


def lengths(name: str, label: str, pick: Callable[[list[int]], float]) -> Callable[[], float]:
    """`pick` (min, median, max) of the response lengths of one label's turns."""
    return lambda: pick([len(row["assistant_response"]) for row in rows(name)
                         if row["label"] == label])


STATISTICS: tuple[Callable[[list[int]], float], ...] = (min, median, max)


def short(row: Row) -> bool:
    """Under memoryd's 80-character gate."""
    return len(row["assistant_response"]) < 80


def tags(row: Row) -> set[str]:
    """A pair's tags: the `[a; b]` its note starts with."""
    found = re.match(r"\[([^\]]*)\]", str(row.get("note", "")))
    return {tag.strip() for tag in found[1].split(";")} if found else set()


def with_tag(tag: str) -> Test:
    return lambda row: tag in tags(row)


def adversarial(*plain: str) -> Test:
    """A pair with a tag other than `value:*` and the `plain` (descriptive) ones."""
    return lambda row: any(not tag.startswith("value:") and tag not in plain
                           for tag in tags(row))


def same_path(row: Row) -> bool:
    return bool(row["a"]["path"] == row["b"]["path"])


def response_length(low: int, high: float) -> Test:
    """A non-empty response of `low` to `high` characters."""
    return lambda row: not row["has_empty_response"] and low <= len(
        row["assistant_response"]) <= high


def messages(test: Callable[[list[dict[str, Any]]], bool]) -> Test:
    return lambda row: test(json.loads(row["messages_json"]))


def json_array(row: Row) -> bool:
    """The user prompt is a JSON array (of content blocks) serialised as a string."""
    try:
        return isinstance(json.loads(row["user_prompt"]), list)
    except ValueError:
        return False


def memory_paths(name: str, prefix: str) -> Callable[[], float]:
    """The memories (both sides of every pair) whose path starts with `prefix`."""
    return lambda: sum(side["path"].startswith(prefix) for row in rows(name)
                       for side in (row["a"], row["b"]))


def session_logs() -> float:
    """The Claude Code session logs bundled in data/claude_code/vsla/."""
    return len(list((DATA_DIR / "claude_code" / "vsla").glob("*.jsonl")))
