"""The system under test is untrusted: every broken system in the catalogue (tests/systems/
untrusted.py) fails the run in one line naming the system and the call, within its deadline,
never exit 0 and never a traceback; what only follows the work keeps the results written."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from memeval.__main__ import main
from memeval.api import evaluate
from memeval.metrics.gate_metrics import SystemFailure
from memeval.registry import ConfigError
from tests.systems.untrusted import SECRET

pytestmark = pytest.mark.slow  # runs experiments end to end

ROOT = Path(__file__).parents[2]
LOCOMO = ROOT / "tests" / "data" / "corpora" / "locomo_small.json"
TARGET = "system=tests.systems.untrusted:build"
EXPERIMENTS = {
    "ingest": ["+experiment=three_pass", "dataset.limit=24"],
    "search": ["+experiment=memory_qa", "dataset=locomo", f"dataset.path={LOCOMO}"],
    "score": ["+experiment=mqs_calibration"],
    "conflicts": ["+experiment=conflict_detection"],
}


@dataclass
class Done:
    code: int
    out: str
    err: str
    seconds: float


def memeval(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    started = time.perf_counter()
    code = main([*args, "embedder=hashing", f"cache_dir={tmp_path / 'cache'}"])
    out = capsys.readouterr()
    return Done(code, out.out, out.err, time.perf_counter() - started)


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str, kind: str,
        *more: str) -> Done:
    return memeval(tmp_path, capsys, "run", *EXPERIMENTS[kind], TARGET,
                   f"+system.settings.fault={fault}", "system.call_timeout_s=2",
                   "system.item_timeout_s=0", "progress=false", "plots=false", "bootstrap=30",
                   "reporting.phoenix.endpoint=null", f"hydra.run.dir={tmp_path / 'run'}", *more)


def failed_in_one_line(done: Done, *named: str) -> str:
    """The run failed (exit 2) with one line of memeval's naming each of `named`, no traceback,
    and nothing of the secrets the system put in its errors."""
    assert done.code == 2, (done.code, done.out, done.err)
    assert "Traceback" not in done.out + done.err
    assert SECRET not in done.out + done.err
    lines = [line for line in done.err.splitlines() if line.startswith("memeval: ")]
    assert len(lines) == 1, done.err
    message = " ".join(done.err.split())  # wrapped to the terminal: read unwrapped
    for name in named:
        assert name in message, (name, message)
    return message


RUN_FAULTS = [  # (fault, experiment, what the message names)
    ("search_raises", "search", "failed in search: RuntimeError: index corrupt"),
    ("search_exits", "search", "failed in search: SystemExit"),
    ("search_interrupts", "search", "failed in search: KeyboardInterrupt"),
    ("search_os_exit", "search", "it called os._exit(0)"),
    ("search_none", "search", "with None, not a list of Hit(id, score)"),
    ("search_str", "search", "with 'm1', not a list of Hit(id, score)"),
    ("search_dicts", "search", "not a Hit(id, score)"),
    ("search_tuples", "search", "('m1', 1.0), not a Hit(id, score)"),
    ("search_endless", "search", "memory id 'x', which it was not given"),
    ("search_unknown_ids", "search", "memory id 'never-given', which it was not given"),
    ("search_nan", "search", "score nan for memory"),
    ("search_sleeps", "search", "search did not return within 2 s"),
    ("index_sleeps", "search", "index did not return within"),
    ("index_exits", "search", "failed in index: SystemExit"),
    ("scores_nan", "score", "score nan for record"),
    ("scores_short", "score", "79 scores for 80 records"),
    ("scores_out_of_range", "score", "score 150.0 for record"),
    ("scores_str", "score", "score '50' for record"),
    ("scores_endless", "score", "more than 80 scores for 80 records"),
    ("scores_exit", "score", "failed in score_records: SystemExit"),
    ("conflict_unknown", "conflicts", "with conflict type 'clash'"),
    ("conflict_list", "conflicts", "with conflict type ['contradiction']"),
    ("conflict_raises", "conflicts", "failed in detect_conflict: ValueError: no model"),
    ("decisions_missing", "ingest", "no decision for entry"),
    ("decisions_extra", "ingest", "more decisions than the 24 turns given"),
    ("decisions_renamed", "ingest", "a decision for entry 'someone-else' where entry"),
    ("decisions_endless", "ingest", "more decisions than the 24 turns given"),
    ("decision_nan", "ingest", "score nan for entry"),
    ("decision_relabelled", "ingest", "label 'noise' for entry"),
    ("decision_kept_and_dropped", "ingest", "a turn is retained exactly when its outcome is"),
    ("decision_not_a_decision", "ingest", "where the Decision for entry"),
    ("run_pass_exits", "ingest", "failed in run_pass (pass 1): SystemExit"),
    ("run_pass_sleeps", "ingest", "run_pass (pass 1) did not return within 2 s"),
    ("ingestor_raises", "ingest", "failed in ingestor: OSError: cannot open"),
    ("learning_state_set", "ingest", "answered learning_state with a set at ['seen'], which"),
    ("build_exits", "ingest", "tests.systems.untrusted:build' failed in building it: SystemExit"),
    ("build_sleeps", "ingest", "building it did not return within 2 s"),
    ("capabilities_none", "ingest", "declares capabilities None, not a set"),
    ("notes_none", "ingest", "has notes None, not a dict"),
]


@pytest.mark.parametrize(("fault", "kind", "named"), RUN_FAULTS, ids=[f[0] for f in RUN_FAULTS])
def test_a_broken_system_fails_the_run_naming_itself_and_the_call(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str, kind: str,
        named: str) -> None:
    done = run(tmp_path, capsys, fault, kind)
    failed_in_one_line(done, named)
    assert done.seconds < 60  # a hang ends at its 2 s deadline, not at the test's


AFTER_THE_WORK = [  # faults past the work: the results are written, then the run fails
    ("close_raises", "failed in close: RuntimeError: could not flush"),
    ("close_exits", "failed in close: SystemExit"),
    ("notes_set", "answered notes with a set at ['seen'], which JSON cannot hold"),
    ("pass_state_nan", "answered pass_state with nan at ['memories'], a number JSON cannot"),
    ("pass_state_object", "answered pass_state with a object at ['handle'], which JSON"),
    ("pass_state_fakes_recall", "pass_state with substantive_recall, which memeval measures"),
]


@pytest.mark.parametrize(("fault", "named"), AFTER_THE_WORK, ids=[f[0] for f in AFTER_THE_WORK])
def test_a_fault_after_the_work_keeps_the_results_and_fails_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str, named: str) -> None:
    done = run(tmp_path, capsys, fault, "ingest")
    message = failed_in_one_line(done, named)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert any(named in " ".join(f.split()) for f in metrics["failures"]), message
    decisions = pd.read_parquet(tmp_path / "run" / "decisions.parquet")
    last = decisions[(decisions.pass_no == 3) & (decisions.label == "substantive")]
    # the figure is memeval's, from the decisions, whatever the system said beside it
    assert metrics["passes"][-1]["substantive_recall"] == last.retained.mean()


def test_a_factory_its_settings_do_not_fit_is_refused_by_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = memeval(tmp_path, capsys, "run", "+experiment=three_pass",
                   "system=tests.systems.untrusted:needs_a_setting",
                   f"hydra.run.dir={tmp_path / 'run'}")
    failed_in_one_line(done, "cannot be called with system.settings []:",
                       "it needs size")


def test_a_system_module_that_does_not_compile_is_refused_by_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "typo_memory.py").write_text("def build(:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="importing typo_memory failed: SyntaxError"):
        evaluate("three_pass", ["embedder=hashing", "system=typo_memory:build"],
                 run_dir=tmp_path / "run")


def test_evaluate_raises_memeval_s_error_for_a_broken_object(tmp_path: Path) -> None:
    from tests.systems.untrusted import Faulty

    with pytest.raises(SystemFailure, match="failed in search: SystemExit"):
        evaluate("memory_qa", ["embedder=hashing", "dataset=locomo", f"dataset.path={LOCOMO}",
                               "progress=false", "plots=false",
                               f"cache_dir={tmp_path / 'cache'}",
                               "reporting.phoenix.endpoint=null"],
                 run_dir=tmp_path / "run", system=Faulty("search_exits"))


CHECK_FAULTS = [  # `check` names the same faults, exit 1, in about the same words
    ("decision_nan", "score nan for entry"),
    ("search_exits", "failed in search: SystemExit"),
    ("search_sleeps", "search did not return within 2 s"),
    ("scores_endless", "more than 80 scores for 80 records"),
    ("pass_state_object", "answered pass_state with a object at ['handle']"),
    ("close_raises", "after the work: system 'faulty' failed in close: RuntimeError"),
    ("notes_set", "after the work: system 'faulty' answered notes with a set at ['seen']"),
]


@pytest.mark.parametrize(("fault", "named"), CHECK_FAULTS, ids=[f[0] for f in CHECK_FAULTS])
def test_check_names_what_a_run_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        fault: str, named: str) -> None:
    done = memeval(tmp_path, capsys, "check", TARGET, f"+system.settings.fault={fault}",
                   "system.call_timeout_s=2")
    assert done.code == 1, done.out + done.err
    assert "Traceback" not in done.out + done.err
    assert named in " ".join(done.out.split())


@pytest.mark.parametrize("fault", ["search_exits", "search_os_exit"])
def test_a_system_ending_the_process_never_exits_zero(tmp_path: Path, fault: str) -> None:
    """As CI would run it: the command's own exit status, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", *EXPERIMENTS["search"], TARGET,
         f"+system.settings.fault={fault}", "embedder=hashing", "progress=false",
         f"cache_dir={tmp_path / 'cache'}", "reporting.phoenix.endpoint=null",
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "system 'faulty' failed in search" in " ".join(done.stderr.split())


def test_evaluate_refuses_an_object_whose_name_cannot_be_read(tmp_path: Path) -> None:
    from tests.systems.untrusted import Faulty

    class Nameless(Faulty):
        @property  # type: ignore[override]
        def name(self) -> str:
            raise RuntimeError("no name yet")

    with pytest.raises(SystemFailure, match="failed in building it: RuntimeError: no name yet"):
        evaluate("three_pass", ["embedder=hashing", f"cache_dir={tmp_path / 'cache'}"],
                 run_dir=tmp_path / "run", system=Nameless("none"))
