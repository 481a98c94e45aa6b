"""The System seam: experiments ask for capabilities and refuse, by name, a system without them;
any system that can ingest runs the three-pass protocol with the same per-pass metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memeval.data.entry import Entry
from memeval.engine.gate.gate import Decision
from memeval.registry import ConfigError
from memeval.runner import run_experiment
from memeval.systems.base import SYSTEMS, Capability, Ingestor, require


class KeepAll:
    """Stores every turn of 80 characters or more: a gate with one rule and nothing learned."""

    learning = True
    stores: tuple[()] = ()

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.memories: list[str] = []

    def prepare(self, entries: Sequence[Entry]) -> list[Entry]:
        return list(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            self.memories = []

    def run_pass(self, items: Sequence[Entry], pass_no: int, phase: str = "eval"
                 ) -> Iterator[Decision]:
        for entry in items:
            kept = len(entry.assistant_response.strip()) >= 80
            if kept:
                self.memories.append(entry.id)
            yield Decision(pass_no, phase, entry.id, entry.label, entry.label_source,
                           len(entry.assistant_response), "stored" if kept else "length", kept)

    def learning_state(self) -> dict[str, Any]:
        return {}

    def restore_learning_state(self, state: dict[str, Any]) -> None:
        pass

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        return {"memories": len(self.memories)}


@dataclass
class KeepAllConfig:
    pass


class KeepAllSystem:
    name = "keep-all"
    capabilities = frozenset({Capability.INGEST, Capability.RESET})
    def __init__(self) -> None:
        self.notes: dict[str, Any] = {}

    def ingestor(self, state_dir: Path) -> Ingestor:
        return KeepAll(state_dir)

    def close(self) -> None:
        pass


if "keep-all" not in SYSTEMS.names():
    SYSTEMS.register("keep-all", KeepAllConfig)(lambda cfg, **_: KeepAllSystem())


def test_require_names_what_is_missing_and_what_the_system_has() -> None:
    with pytest.raises(ConfigError) as caught:
        require(KeepAllSystem(), [Capability.INGEST, Capability.FREEZE, Capability.SEARCH],
                "three_pass_holdout")
    assert str(caught.value).startswith(
        "system 'keep-all' cannot run experiment three_pass_holdout: it needs freeze_learning, "
        "search (this system has: ingest, reset_memories)")


def test_any_ingesting_system_runs_the_three_pass_protocol(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=three_pass", "system.name=keep-all",
                                         "dataset.limit=60"), tmp_path / "run")
    passes = metrics["passes"]
    assert [p["pass"] for p in passes] == [1, 2, 3]
    assert all(p["memories"] == p["stage_counts"]["stored"] for p in passes)
    assert passes[0]["judge_calls"] == 0 and "stored_mqs" not in passes[0]
    assert passes[0]["substantive_recall"] is not None


@pytest.mark.parametrize(("experiment", "message"), [
    ("three_pass_holdout", "it needs freeze_learning"),
    ("feedback_loop", "studies memeval's reference engine: run it with system=reference"),
    ("retrieval_replay", "studies memeval's reference engine: run it with system=reference"),
])
def test_experiments_refuse_a_system_without_what_they_need(
        tmp_path: Path, fast_config: Callable[..., DictConfig], experiment: str,
        message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_experiment(fast_config(f"+experiment={experiment}", "system.name=keep-all"),
                       tmp_path / "run")
    assert not (tmp_path / "run" / "metrics.json").exists()
