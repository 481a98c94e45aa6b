"""Every experiment composes and runs on a tiny input; each protocol keeps its promises."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.paths import CONF_DIR, data_path
from memeval.registry import ConfigError
from memeval.results.run_dir import read_decisions, read_metrics
from memeval.runner import run_experiment
from tests.headline_views import check_views_agree

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

CONF = CONF_DIR
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
# score hand-labelled quality sets; replay no traces
QUALITY = {"mqs_calibration", "conflict_detection", "retrieval_replay", "mai_calibration",
           "memory_qa", "coding_memory"}
REPLAYS = [name for name in EXPERIMENTS if name not in QUALITY]
TINY = {"three_pass_mixed": ["dataset.labeled_rows=40", "dataset.corpus_rows=40"],
        # the corpus's first 70 turns hold no test4 or test5 session: evaluate on test1's instead
        "three_pass_sessions": ["dataset.limit=70", "experiment.learn_values=[learn,validate]",
                                "experiment.eval_values=[test1]"],
        # its write gate replays the blind test4 and test5 sessions: test1's here, as above
        "compare_systems": ["dataset.limit=70", "experiment.splits=[test1]"],
        "mqs_calibration": ["bootstrap=30"], "conflict_detection": ["bootstrap=30"],
        "mai_calibration": ["bootstrap=30", "experiment.test_scenarios=null"],
        "retrieval_replay": ["experiment.store_passes=1", "experiment.passes=1", "bootstrap=30"],
        # the first questions asked: the stream up to them is the first days' sessions
        "coding_memory": ["experiment.limit=15", "experiment.splits=[dev,blind]",
                          "bootstrap=30"],
        "memory_qa": ["dataset=locomo", "bootstrap=30", "dataset.path="
                      f"{Path(__file__).parent / 'data' / 'corpora' / 'locomo_small.json'}"]}
REQUIRED_PASS_KEYS = {"pass", "substantive_recall", "noise_stored", "prejudge_filter_rate",
                      "judge_calls", "stage_counts"}


def _stores(run_dir: Path, name: str = "state") -> dict[str, list[dict]]:
    return {kind: [json.loads(line) for line in
                   (run_dir / name / f"{kind}_store.jsonl").read_text().splitlines()]
            for kind in ("rejection", "accept")}


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_writes_a_self_describing_run(
        experiment: str, tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = fast_config(f"+experiment={experiment}", *TINY.get(experiment, ["dataset.limit=70"]),
                      "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    # its headline figures, as the run printed them, in its report, runs, leaderboard, Phoenix
    check_views_agree(tmp_path / "run", capsys.readouterr().out, capsys)
    on_disk = read_metrics(tmp_path / "run")
    assert on_disk["schema_version"] == 2 and on_disk["experiment"] == experiment
    assert on_disk["timing"] == metrics["timing"]
    provenance = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert provenance["packages"]["numpy"]
    assert "seed: 0" in (tmp_path / "run" / "config.yaml").read_text()
    assert list((tmp_path / "run" / "figures").glob("*.png"))


@pytest.mark.parametrize("experiment", REPLAYS)
def test_every_replay_measures_every_pass(experiment: str, tmp_path: Path,
                                          fast_config: Callable[..., DictConfig]) -> None:
    cfg = fast_config(f"+experiment={experiment}", *TINY.get(experiment, ["dataset.limit=70"]),
                      "plots=true")
    metrics = run_experiment(cfg, tmp_path / "run")
    on_disk = read_metrics(tmp_path / "run")
    assert on_disk["dataset"]["fingerprint"] == metrics["dataset"]["fingerprint"]
    assert len(on_disk["passes"]) == cfg.experiment.passes
    for p in on_disk["passes"]:
        assert set(p) >= REQUIRED_PASS_KEYS
        assert sum(p["stage_counts"].values()) == p["entries"]
    decisions = read_decisions(tmp_path / "run")
    assert len(decisions) >= metrics["dataset"]["entries"] * cfg.experiment.passes
    figures = {p.name for p in (tmp_path / "run" / "figures").glob("*.png")}
    assert {"funnel.png", "learning_curve.png", "score_distributions.png"} <= figures


def test_three_pass_keeps_rejection_store_and_wipes_memories(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    metrics = run_experiment(fast_config("+experiment=three_pass", "dataset.limit=90"),
                             tmp_path / "run")
    passes = metrics["passes"]
    sizes = [p["rejection_store_size"] for p in passes]
    assert sizes[0] > 0 and sizes == sorted(sizes)
    # memories wiped before each pass: nothing is a duplicate of a previous pass's memory
    assert all(p["stage_counts"]["dedup"] == passes[0]["stage_counts"]["dedup"] for p in passes)
    assert passes[0]["stage_counts"]["stored"] > 0
    assert passes[0]["judge_calls"] >= passes[-1]["judge_calls"]


def test_holdout_never_learns_from_evaluated_texts(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run = tmp_path / "run"
    metrics = run_experiment(fast_config("+experiment=three_pass_holdout", "dataset.limit=120"),
                             run)
    decisions = read_decisions(run)
    learn_ids = set(decisions[decisions["phase"] == "learn"]["entry_id"])
    eval_ids = set(decisions[decisions["phase"] == "eval"]["entry_id"])
    assert learn_ids and eval_ids and not learn_ids & eval_ids
    assert metrics["split"]["learn"] + metrics["split"]["eval"] == 120
    stored_sources = {r["source_id"] for records in _stores(run).values() for r in records}
    assert stored_sources and stored_sources <= learn_ids
    assert all(p["audits"] == 0 for p in metrics["passes"])  # no audits while evaluating


def test_sessions_split_learns_and_evaluates_on_different_sessions(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run = tmp_path / "run"
    metrics = run_experiment(fast_config("+experiment=three_pass_sessions",
                                         "experiment.passes=1"), run)
    assert metrics["split"] == {"learn": 4358, "eval": 1861, "left_out": 0, "by": "split",
                                "learn_values": ["learn", "validate", "test1", "test2", "test3"],
                                "eval_values": ["test4", "test5"]}
    session = {e.id: e.meta["session"] for e in load_labeled_jsonl(
        data_path("labeled/claude_code_entire_v1.jsonl")).entries}
    decisions = read_decisions(run)
    learned = {session[i] for i in decisions[decisions["phase"] == "learn"]["entry_id"]}
    evaluated = {session[i] for i in decisions[decisions["phase"] == "eval"]["entry_id"]}
    assert len(learned) == 130 and len(evaluated) == 65 and not learned & evaluated
    (evaluation,) = metrics["passes"]
    assert evaluation["entries"] == 1861
    low, high = evaluation["prejudge_filter_rate_ci95"]
    assert low < evaluation["prejudge_filter_rate"] < high


@pytest.mark.parametrize(("overrides", "match"), [
    (["experiment.split_field=session", "experiment.learn_values=[nobody]"],
     "leaves the learn split empty"),
    (["experiment.split_field=session", "experiment.learn_values=[]"], "needs learn_values"),
    (["experiment.split_field=team", "experiment.learn_values=[a]"], "has no field 'team'"),
])
def test_a_field_split_that_cannot_work_is_a_config_error(
        tmp_path: Path, fast_config: Callable[..., DictConfig], overrides: list[str],
        match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        run_experiment(fast_config("+experiment=three_pass_sessions", *overrides),
                       tmp_path / "run")


def test_feedback_loop_only_self_feeding_arm_learns_from_content_score(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    metrics = run_experiment(fast_config("+experiment=feedback_loop", "dataset.limit=150",
                                         "experiment.passes=3"), run)
    clean = _stores(run, "state_clean")["rejection"]
    looping = _stores(run, "state_self_feeding")["rejection"]
    assert {r["stage"] for r in clean} == {"judge"}
    assert "content_score" in {r["stage"] for r in looping}
    assert set(metrics["arms"]) == {"clean", "self_feeding"}
    printed = capsys.readouterr().out  # both arms, each pass, and what each store holds
    rows = [line.split()[0] for line in printed.split("write gate: where")[0].splitlines()[2:8]]
    assert rows == ["clean1", "clean2", "clean3", "self_feeding1", "self_feeding2",
                    "self_feeding3"]
    last = metrics["arms"]["self_feeding"][-1]
    assert (f"self_feeding {last['rejection_store_size']} (" in printed.replace("\n  ", " "))
    from memeval.experiments.feedback_loop import report
    from memeval.results.run import Run

    [stores] = report(Run.load(run))  # the report carries the stores the terminal printed
    assert stores.text in printed.replace("\n  ", " ")


def test_any_labelled_file_runs_by_override(tmp_path: Path,
                                            fast_config: Callable[..., DictConfig]) -> None:
    rows = [{"user_prompt": "why does CI fail?", "label": "substantive" if i % 3 == 0 else "low",
             "assistant_response": f"Case {i}: the `ci.yml` job pins node 18.{i} but the lockfile "
                                   f"needs >= 20, so `npm ci` exits 1 in step {i}." * (1 + i % 2)}
            for i in range(30)]
    rows.append({"user_prompt": "ok", "assistant_response": "Done.", "label": "noise"})
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    metrics = run_experiment(fast_config("+experiment=three_pass", "dataset=labeled_jsonl",
                                         f"dataset.path={path}"), tmp_path / "run")
    assert metrics["dataset"]["entries"] == 31
    assert metrics["dataset"]["skipped"] == 1
    assert "mine.jsonl:32" in metrics["dataset"]["problems"][0]
    assert metrics["passes"][0]["per_label"]["low_value"]["n"] == 20


def test_decisions_carry_one_row_per_entry_per_pass(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    run_experiment(fast_config("+experiment=three_pass", "dataset.limit=40"), tmp_path / "run")
    decisions: pd.DataFrame = read_decisions(tmp_path / "run")
    assert len(decisions) == 120
    assert decisions.groupby("pass_no")["entry_id"].nunique().tolist() == [40, 40, 40]


@pytest.mark.parametrize(("override", "message"), [
    ("embedder.name=hashng", "did you mean 'hashing'"),
    ("threshold.policy=judge_quantil", "did you mean 'judge_quantile'"),
    ("gate.stages.length.min_chars=-1", "gate.stages.length.min_chars must be an integer ≥ 0"),
])
def test_config_mistakes_fail_before_any_work(override: str, message: str, tmp_path: Path,
                                              fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(ConfigError, match=message):
        run_experiment(fast_config("+experiment=three_pass", override), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_unlabelled_traces_under_the_label_judge_are_refused_before_the_replay(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    traces = data_path("traces/trace_sample_v1.jsonl")
    cfg = fast_config("+experiment=three_pass", "dataset=hf_traces", f"dataset.path={traces}")
    with pytest.raises(ConfigError, match=r"rows have none .*three_pass_mixed"):
        run_experiment(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_missing_experiment_names_the_choices(tmp_path: Path,
                                              fast_config: Callable[..., DictConfig]) -> None:
    with pytest.raises(ConfigError, match=r"\+experiment=NAME .*three_pass"):
        run_experiment(fast_config(), tmp_path / "run")


@pytest.mark.parametrize("left_over", ["metrics.json", "state"])
def test_a_directory_holding_a_run_is_refused(
        tmp_path: Path, fast_config: Callable[..., DictConfig], left_over: str) -> None:
    """Reusing it would reload the earlier run's stores: pass 1 would start pre-trained."""
    run_dir = tmp_path / "run"
    (run_dir / left_over).mkdir(parents=True)
    with pytest.raises(ConfigError, match=f"already holds a run \\({left_over}\\)"):
        run_experiment(fast_config("+experiment=three_pass", "dataset.limit=20"), run_dir)
