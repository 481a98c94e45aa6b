"""End-to-end memory QA on LoCoMo's format: the system's memories go to an answerer, and the
answers are scored with LoCoMo's F1, mem0's BLEU-1 and an LLM judge's J. The LLM path runs
against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import DictConfig

from memeval.backends.answerers.prompts import ANSWER_SYSTEM, GRADE_SYSTEM
from memeval.backends.judges.base import JudgeError
from memeval.experiments.memory_qa import summarise
from memeval.reporting.report import write_report
from memeval.runner import run_experiment
from tests.backends.test_http_judges import openai_reply
from tests.loopback import LoopbackServer, Received, Reply

pytestmark = pytest.mark.slow  # runs whole experiments: not the quick tier

LOCOMO = Path(__file__).parents[1] / "data" / "corpora" / "locomo_small.json"
ANSWER = "1 June 2023"


def qa_config(fast_config: Callable[..., DictConfig], *overrides: str) -> DictConfig:
    return fast_config("+experiment=memory_qa", "dataset=locomo", f"dataset.path={LOCOMO}",
                       "bootstrap=50", *overrides)


def test_the_offline_answerer_scores_every_question_with_locomos_f1(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    qa = run_experiment(qa_config(fast_config, "plots=true"), tmp_path / "run")["qa"]
    assert qa["system"] == "reference" and qa["answerer"] == "extractive" and qa["grader"] is None
    assert qa["questions"] == 11 and qa["answer_errors"] == 0
    cats = qa["by_category"]
    assert cats["all"]["questions"] == 11 and cats["all but adversarial"]["questions"] == 9
    for score in ("j", "bleu1", "mem0_f1"):  # nothing to answer: LoCoMo F1's refusal check only
        assert cats["adversarial"][score]["n"] == 0
    rows = pd.read_parquet(tmp_path / "run" / "qa_questions.parquet")
    assert rows["locomo_f1"].notna().all() and rows["j"].isna().all()
    assert rows["mem0_f1"].notna().sum() == 9 and "f1" not in rows
    for score in ("locomo_f1", "mem0_f1"):
        assert cats["all"][score]["mean"] == pytest.approx(rows[score].mean())
    temporal = rows[rows["category"] == "temporal"]  # answered with a date, as LoCoMo writes it
    assert temporal["answer"].str.fullmatch(r"\d{1,2} [A-Z][a-z]+ \d{4}").all()
    assert (tmp_path / "run" / "figures" / "memory_qa.png").is_file()
    markdown = write_report([tmp_path / "run"])[1].read_text()  # the printed table, CIs included
    assert "| category | questions | LoCoMo F1 [95% CI] | mem0 F1 | BLEU-1 |" in markdown
    low, high = cats["all"]["locomo_f1"]["ci95"]
    assert f"| all | 11 | {cats['all']['locomo_f1']['mean']:.3f} [{low:.3f}–{high:.3f}] |" \
        in markdown
    assert "\n\ncost: search p50 " in markdown
    assert "| question | gold | answer | LoCoMo F1 | mem0 F1 | J |" in markdown
    assert max(map(len, summarise(qa).splitlines())) <= 100  # the table as printed

    # a run written before the two F1s were named apart held LoCoMo's as `f1`, and no mem0 F1
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    for scores in metrics["qa"]["by_category"].values():
        scores["f1"] = scores.pop("locomo_f1")
        del scores["mem0_f1"]
    (tmp_path / "run" / "metrics.json").write_text(json.dumps(metrics))
    rows.rename(columns={"locomo_f1": "f1"}).drop(columns="mem0_f1").to_parquet(
        tmp_path / "run" / "qa_questions.parquet")
    old = write_report([tmp_path / "run"])[1].read_text()
    assert f"| all | 11 | {cats['all']['locomo_f1']['mean']:.3f} [{low:.3f}–{high:.3f}] | — |" \
        in old
    header, _, *questions = [line for line in old.partition("Question by question")[2]
                             .splitlines() if line.startswith("|")]
    assert header.startswith("| question | gold | answer | LoCoMo F1 | mem0 F1 | J |")
    assert len(questions) == 11  # each with its LoCoMo F1, read from the old column
    assert all(re.fullmatch(r"\d(?:\.\d+)?", row.split(" | ")[3]) for row in questions)


class Model:
    """An OpenAI-compatible server: answers every question with ANSWER, and grades an answer
    CORRECT when it is the gold answer."""

    def __call__(self, request: Received) -> Reply:
        system, user = (m["content"] for m in request.body["messages"])
        if system == ANSWER_SYSTEM:
            return openai_reply(ANSWER, tin=100, tout=4)
        if system == GRADE_SYSTEM:
            gold = re.search(r"Gold answer: (.*)", user)
            said = re.search(r"Generated answer: (.*)", user)
            assert gold and said
            right = gold.group(1).strip() == said.group(1).strip()
            return openai_reply(f'{{"label": "{"CORRECT" if right else "WRONG"}"}}', 50, 6)
        return openai_reply("OK", 1, 1)  # a preflight


def llm(server: LoopbackServer, what: str, **extra: Any) -> list[str]:
    """The overrides giving `what` (answerer, grader) the loopback server as its LLM."""
    settings = {"model": "qa-test", "base_url": f"{server.base_url}/v1", **extra}
    return [f"{what}@experiment.{what}=llm",
            *(f"experiment.{what}.backend.{k}={v}" for k, v in settings.items())]


def test_the_llm_answerer_and_grader_run_against_a_loopback_server(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    with LoopbackServer(Model()) as server:
        config = qa_config(fast_config, *llm(server, "answerer"), *llm(server, "grader"))
        qa = run_experiment(config, tmp_path / "run")["qa"]
        sent = list(server.requests)
        again = run_experiment(config, tmp_path / "again")["qa"]  # every reply from the cache
        assert server.hits == len(sent) + 2  # the two preflights only
    answers = [r for r in sent if r.body["messages"][0]["content"] == ANSWER_SYSTEM]
    grades = [r for r in sent if r.body["messages"][0]["content"] == GRADE_SYSTEM]
    assert len(answers) == 11 and len(grades) == 9  # adversarial questions get no J
    prompt = answers[0].body["messages"][1]["content"]
    assert "- [8 May 2023] Maya:" in prompt and "Question: " in prompt  # dated memories
    all_but = qa["by_category"]["all but adversarial"]
    assert all_but["j"]["mean"] == pytest.approx(1 / 9)  # only the one whose gold is ANSWER
    assert qa["by_category"]["temporal"]["j"]["mean"] == pytest.approx(0.5)
    assert qa["cost"]["tokens_in"] == 11 * 100 + 9 * 50 and qa["cost"]["tokens_out"] == 98
    assert qa["answerer"] == "llm:openai_chat:qa-test" and qa["grader"] == "openai_chat:qa-test"
    assert json.dumps(again["by_category"]) == json.dumps(qa["by_category"])  # NaN: no CI
    assert again["cost"]["answers_cached"] == 11


def test_an_answerer_failing_past_its_preflight_fails_the_run_and_keeps_its_results(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    calls = iter([openai_reply("OK")])  # the preflight's, then server errors

    def respond(request: Received) -> Reply:
        return next(calls, Reply(500, {"error": "down"}))

    with LoopbackServer(respond) as server, \
            pytest.raises(JudgeError, match="answerer: 11 of 11 answers failed"):
        run_experiment(qa_config(fast_config, *llm(server, "answerer", max_retries=0)),
                       tmp_path / "run")
    rows = pd.read_parquet(tmp_path / "run" / "qa_questions.parquet")
    assert (rows["answer_error"].str.len() > 0).all() and rows["locomo_f1"].isna().all()


def test_memory_qa_refuses_a_trace_dataset_by_name(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.registry import ConfigError

    with pytest.raises(ConfigError, match="holds labelled entries, not a memory corpus"):
        run_experiment(fast_config("+experiment=memory_qa"), tmp_path / "run")


def test_memory_qa_refuses_a_corpus_that_holds_no_gold_answers_before_any_work(
        tmp_path: Path, fast_config: Callable[..., DictConfig]) -> None:
    from memeval.registry import ConfigError

    corpora = LOCOMO.parent
    cfg = fast_config("+experiment=memory_qa", "dataset=memory_jsonl",
                      f"dataset.memories={corpora / 'memories.jsonl'}",
                      f"dataset.queries={corpora / 'queries.jsonl'}")
    with pytest.raises(ConfigError, match=r"dataset=memory_jsonl holds none: use dataset=locomo "
                                          r"or dataset=longmemeval"):
        run_experiment(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before the run directory, let alone a load
