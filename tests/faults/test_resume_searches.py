"""Memory QA and retrieval replay resume too: pool by pool (each indexed into the system, its
questions asked), a store's gate passes, and from the start when stopped in the embedding. The
resumed run ends as an uninterrupted one, and a finished pool is never indexed or asked again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.backends.answerers.extractive import ExtractiveAnswerer
from memeval.backends.judges.labels import LabelJudge
from memeval.cli.report import main as report
from memeval.experiments import retrieval_workload, system_search
from memeval.registry import ConfigError
from memeval.reporting.runs_table import collect
from memeval.results.run_dir import partial_run, read_metrics, read_table
from memeval.runner import run_experiment
from memeval.systems.reference.system import ReferenceSystem
from tests.faults.common import without_clock
from tests.faults.test_resume import Interrupt
from tests.systems.fakes import WordOverlapSystem  # registers system=word-overlap
from tests.test_cli import unwrapped

pytestmark = pytest.mark.faults

LOCOMO = Path(__file__).parents[1] / "data" / "corpora" / "locomo_small.json"
FIRST_POOL = 6  # locomo_small's first conversation: 6 questions, then 5 in the second
QA = ("+experiment=memory_qa", "dataset=locomo", f"dataset.path={LOCOMO}", "bootstrap=50",
      "plots=false")
RETRIEVAL = ("+experiment=retrieval_replay", "dataset=locomo", f"dataset.path={LOCOMO}",
             "experiment.passes=2", "experiment.usage_fraction=0.3", "bootstrap=50",
             "plots=false", "system.name=word-overlap")
SEARCH_CLOCK = ("search_ms", "answer_ms", "searched_at")  # a row's own clock readings


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
            stop_at: int | None = None) -> dict[str, int]:
    """Calls of `owner.name` counted; the `stop_at`-th raises Interrupt instead."""
    real, seen = getattr(owner, name), {"n": 0}

    def call(*args: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        if seen["n"] == stop_at:
            raise Interrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, call)
    return seen


def stopped(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, stop_at: int,
            cfg: DictConfig, run_dir: Path) -> dict[str, int]:
    """The run interrupted at the `stop_at`-th call of `owner.name`; the calls counted."""
    with monkeypatch.context() as patch:
        seen = counted(patch, owner, name, stop_at)
        with pytest.raises(Interrupt):
            run_experiment(cfg, run_dir)
    return seen


def same_passes(run_dir: Path, other: Path) -> bool:
    return without_clock(read_metrics(run_dir)["passes"]) == without_clock(
        read_metrics(other)["passes"])


def rows_without_clock(run_dir: Path, table: str) -> pd.DataFrame:
    frame = read_table(run_dir, table)
    return frame.drop(columns=[c for c in SEARCH_CLOCK if c in frame])


def qa_without_clock(run_dir: Path) -> dict[str, Any]:
    qa = read_metrics(run_dir)["qa"]
    return {**qa, "cost": {k: v for k, v in qa["cost"].items() if k not in SEARCH_CLOCK}}


@pytest.fixture
def interrupted_qa(tmp_path: Path, fast_config: Callable[..., DictConfig],
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Memory QA stopped in its second conversation, its first finished."""
    run_dir = tmp_path / "broken"
    answers = stopped(monkeypatch, ExtractiveAnswerer, "answer", FIRST_POOL + 3,
                      fast_config(*QA), run_dir)
    assert answers["n"] == FIRST_POOL + 3
    yield run_dir


def test_memory_qa_resumes_at_its_unfinished_conversation(
        tmp_path: Path, fast_config: Callable[..., DictConfig], monkeypatch: pytest.MonkeyPatch,
        interrupted_qa: Path) -> None:
    whole = tmp_path / "whole"
    run_experiment(fast_config(*QA), whole)
    assert sorted(p.name for p in (interrupted_qa / "checkpoints").glob("*.json")) == [
        "pool-1.json"]
    note = partial_run(interrupted_qa)
    assert note is not None and "1 finished checkpoint(s)" in note
    assert f"resume=true hydra.run.dir={interrupted_qa}" in note
    with pytest.raises(ConfigError, match="interrupted run: finish it by adding resume=true"):
        run_experiment(fast_config(*QA), interrupted_qa)

    with monkeypatch.context() as patch:
        answers = counted(patch, ExtractiveAnswerer, "answer")
        indexed = counted(patch, ReferenceSystem, "index")
        searched = counted(patch, ReferenceSystem, "search")
        run_experiment(fast_config(*QA, "resume=true"), interrupted_qa)
    # the second conversation only
    assert (indexed["n"], searched["n"], answers["n"]) == (1, 11 - FIRST_POOL, 11 - FIRST_POOL)
    assert qa_without_clock(interrupted_qa) == qa_without_clock(whole)
    pd.testing.assert_frame_equal(rows_without_clock(interrupted_qa, "qa_questions"),
                                  rows_without_clock(whole, "qa_questions"))
    assert not (interrupted_qa / "checkpoints").exists() and partial_run(interrupted_qa) is None


def test_a_partial_run_is_listed_as_partial(interrupted_qa: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (row,) = collect(interrupted_qa.parent).rows
    assert row.experiment == "memory_qa"  # read from its checkpointed settings
    assert row.notes[0].startswith("partial: interrupted (or still running) with 1 finished")
    capsys.readouterr()
    assert report([str(interrupted_qa)]) == 2
    assert f"{interrupted_qa} is partial: interrupted" in unwrapped(capsys.readouterr().err)


def test_memory_qa_refuses_a_resume_with_changed_settings_naming_them(
        fast_config: Callable[..., DictConfig], interrupted_qa: Path) -> None:
    with pytest.raises(ConfigError, match=r"settings differ from the interrupted run's: "
                                          r"experiment\.k;"):
        run_experiment(fast_config(*QA, "experiment.k=3", "resume=true"), interrupted_qa)
    assert (interrupted_qa / "checkpoints" / "pool-1.json").is_file()  # refused, kept


def test_a_systems_retrieval_resumes_at_its_unfinished_pool(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    whole = tmp_path / "whole"
    run_experiment(fast_config(*RETRIEVAL), whole)
    broken = tmp_path / "broken"
    stopped(monkeypatch, system_search, "_searched", 2, fast_config(*RETRIEVAL), broken)
    with monkeypatch.context() as patch:
        indexed = counted(patch, WordOverlapSystem, "index")
        run_experiment(fast_config(*RETRIEVAL, "resume=true"), broken)
    assert indexed["n"] == 1  # the second conversation only
    assert same_passes(broken, whole)
    assert read_metrics(broken)["retrieval"] == read_metrics(whole)["retrieval"]
    pd.testing.assert_frame_equal(rows_without_clock(broken, "retrieval_queries"),
                                  rows_without_clock(whole, "retrieval_queries"))


def test_a_retrieval_stopped_in_its_embedding_resumes(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = RETRIEVAL[:-1]  # the reference engine's arms alone
    whole = tmp_path / "whole"
    run_experiment(fast_config(*settings), whole)
    broken = tmp_path / "broken"
    stopped(monkeypatch, retrieval_workload, "embedded", 1, fast_config(*settings), broken)
    note = partial_run(broken)
    assert note is not None and "with 0 finished checkpoint(s)" in note
    run_experiment(fast_config(*settings, "resume=true"), broken)
    assert same_passes(broken, whole)


def test_a_retrieval_replay_resumes_its_store_from_the_finished_gate_passes(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A store's gate passes are checkpointed but the last, whose memories live in memory: a
    resume judges that pass again, and only that pass."""
    settings = ("+experiment=retrieval_replay", "experiment.passes=1", "dataset.limit=120",
                "bootstrap=50", "plots=false")
    with monkeypatch.context() as patch:
        first = counted(patch, LabelJudge, "judge")
        run_experiment(fast_config(*settings, "experiment.store_passes=1"), tmp_path / "one")
    settings += ("experiment.store_passes=2",)
    with monkeypatch.context() as patch:
        both = counted(patch, LabelJudge, "judge")
        run_experiment(fast_config(*settings), tmp_path / "whole")
    broken = tmp_path / "broken"
    stopped(monkeypatch, LabelJudge, "judge", first["n"] + 10,  # in the second pass
            fast_config(*settings), broken)
    assert sorted(p.name for p in (broken / "checkpoints").glob("*.json")) == [
        "store-pass-1.json"]
    with monkeypatch.context() as patch:
        again = counted(patch, LabelJudge, "judge")
        run_experiment(fast_config(*settings, "resume=true"), broken)
    assert again["n"] == both["n"] - first["n"] > 0
    assert same_passes(broken, tmp_path / "whole")
    assert read_metrics(broken)["retrieval"] == read_metrics(tmp_path / "whole")["retrieval"]
