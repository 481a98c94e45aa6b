"""`+experiment=memory_qa`: end-to-end memory QA, as the field compares memory systems.

Every question of a memory corpus with a gold answer (LoCoMo's, LongMemEval's) searches its own
pool through the system under test (`system=`, any with `search`; experiments/system_search.py).
The system's top `k` memories, dated, go to an answerer (`experiment.answerer`: `extractive`
offline, or `llm` through memeval's LLM backends), and the answer is scored against the gold:

- LoCoMo F1, as LoCoMo defines it, per category; and mem0 F1 and BLEU-1, as mem0 computes them
  (metrics/qa_scores.py): mem0's F1 is another measure under the same name, hence the names;
- J, an LLM judge's accuracy with mem0's rubric (`experiment.grader`, an LLM backend; null
  leaves J out). LoCoMo's adversarial questions have no gold answer: their LoCoMo F1 is the
  refusal check (1 when the answer says the memories do not hold it) and, as mem0 does, they
  get no mem0 F1, BLEU-1 or J;
- evidence recall@k: the share of a question's evidence among the memories served.

Each mean has a bootstrap CI, per category, over every category but the adversarial (the figure
mem0 reports) and over all. Costs, as mem0 reports them: search and answer latency (p50, p95),
tokens in and out, and the context the answerer read (words).

Each pool (a LoCoMo conversation, a LongMemEval haystack) is indexed, its questions asked,
answered and graded, then checkpointed: `resume=true` finishes an interrupted run from the first
pool it left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memeval.backends.answerers.base import ANSWERERS, Answer, Recalled, context
from memeval.backends.answerers.grader import GRADERS, Grade
from memeval.data.base import CORPUS, ChosenInput, CorpusQuery, MemoryCorpus
from memeval.experiments.answering import answer_cost, answer_failures, graded
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register
from memeval.experiments.retrieval_workload import pool_of
from memeval.experiments.system_search import Found, search_corpus
from memeval.metrics.describe import mean_ci, percentiles
from memeval.metrics.qa_scores import bleu1, locomo_f1, mem0_f1
from memeval.registry import ConfigError, bounded
from memeval.reporting.outputs import MILLISECONDS, RATE, Outputs, Score, Section
from memeval.reporting.table import Block, Note, Table, printed
from memeval.results.findings import Findings
from memeval.results.result import as_ci

if TYPE_CHECKING:
    import pandas as pd

    from memeval.results.run import Run

EXCEPT_ADVERSARIAL, ALL = "all but adversarial", "all"
SCORES = ("locomo_f1", "mem0_f1", "bleu1", "j", "evidence_recall")
# what runs before the two F1s had their own names wrote LoCoMo F1 under (metrics.json and
# qa_questions.parquet)
OLD_NAMES = {"f1": "locomo_f1"}


@dataclass
class MemoryQAConfig:
    k: int = bounded(10, 1)  # memories handed to the answerer
    answerer: dict[str, Any] = field(default_factory=lambda: {"name": "extractive"})
    # an LLM judge grading answers for J (memeval/conf/grader/); `none`: no J
    grader: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    categories: list[str] | None = None  # only these question categories; null: every one
    limit: int | None = bounded(None, 1)  # the first N questions, in the corpus's order
    # more answers or grades failing than this share fails the run (its results are kept)
    max_error_share: float = bounded(0.05, 0, 1)

    def validate(self) -> None:
        ANSWERERS.validate(self.answerer, "experiment.answerer")
        GRADERS.validate(self.grader, "experiment.grader")

    def check_inputs(self, dataset: ChosenInput) -> None:
        """A corpus whose queries never hold a gold answer leaves nothing to score: refused
        before any work, not once it is loaded and searched."""
        if dataset.kind == CORPUS and not dataset.gold_answers:
            raise ConfigError(f"+experiment=memory_qa scores answers against gold ones, and "
                              f"dataset={dataset.name} holds none: use dataset=locomo or "
                              f"dataset=longmemeval, or +experiment=retrieval_replay to search "
                              f"a corpus of your own")


@dataclass(frozen=True)
class Question:
    """A question as asked: the memories it searches, and what scores its answer."""

    id: str
    text: str
    pool: np.ndarray
    query: CorpusQuery


@dataclass(frozen=True)
class Answered(Findings):
    qa: Mapping[str, Any]  # the system, the answerer, the grader and every score

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answered:
        """The run's section, an older run's scores under their names now (OLD_NAMES)."""
        return cls(_renamed(super().from_dict(data).qa))


def _renamed(qa: Mapping[str, Any]) -> Mapping[str, Any]:
    """`qa` with each category's scores under SCORES' names; a section not shaped as written
    is left as it is, for its reader to name what is wrong."""
    by_category = qa.get("by_category")
    if not isinstance(by_category, Mapping):
        return qa
    return {**qa, "by_category": {
        name: {OLD_NAMES.get(key, key): value for key, value in scores.items()}
        if isinstance(scores, Mapping) else scores for name, scores in by_category.items()}}


class MemoryQA:
    embeds = True  # its input, as `memeval embed` warms it: the cost is said first
    resumable = True  # pool by pool (system_search.py); answers and grades are cached besides
    runs = Runs.ANY

    def __init__(self, cfg: MemoryQAConfig) -> None:
        self.cfg = cfg

    def _questions(self, corpus: MemoryCorpus) -> list[Question]:
        index = {m.id: i for i, m in enumerate(corpus.memories)}
        wanted = self.cfg.categories
        chosen = [q for q in corpus.queries
                  if q.answerable and (wanted is None or q.category in wanted)]
        if not chosen:
            raise ValueError(f"no question of {corpus.name} has a gold answer"
                             + ("" if wanted is None else f" in categories {wanted}"))
        return [Question(q.id, q.text, pool_of(q, corpus.memories, index), q)
                for q in chosen[: self.cfg.limit]]

    def run(self, ctx: RunContext) -> ExperimentResult:
        corpus, system = ctx.corpus, ctx.system
        questions = self._questions(corpus)
        answerer = ANSWERERS.build(self.cfg.answerer, cache_dir=ctx.cache_dir)
        grader = GRADERS.build(self.cfg.grader, cache_dir=ctx.cache_dir)

        def answered(question: Question, found: Found) -> dict[str, Any]:
            recalled = [Recalled(corpus.memories[i].text, corpus.memories[i].timestamp)
                        for i in found.served]
            answer = answerer.answer(question.text, recalled)
            grade = graded(grader, question.text, question.query.answer, answer)
            return _row(question, [corpus.memories[i].id for i in found.served], recalled,
                        answer, grade, found.search_ms)

        try:
            rows = search_corpus(ctx, system, questions, corpus.memories, self.cfg.k,
                                 "memory_qa", answered)
        finally:
            answerer.close()
            grader.close()
        order = {q.id: n for n, q in enumerate(questions)}
        rows.sort(key=lambda row: order[row["question_id"]])  # the corpus's order, as asked
        qa = {"system": system.name, "corpus": corpus.name, "k": self.cfg.k,
              "answerer": answerer.name, "grader": grader.name,
              "questions": len(rows), **_summary(rows, ctx.resamples, ctx.seed)}
        return ExperimentResult([], [], Answered(qa), summary=summarise(qa),
                                tables={"qa_questions": rows},
                                failures=answer_failures(rows, self.cfg.max_error_share))


def _row(question: Question, served: list[str], recalled: Sequence[Recalled], answer: Answer,
         grade: Grade | None, search_ms: float) -> dict[str, Any]:
    query = question.query
    scored = not answer.error
    evidence = set(query.relevant)
    return {
        "question_id": question.id, "question": question.text, "category": query.category,
        "gold": query.answer, "unanswerable": query.unanswerable, "answer": answer.text,
        "served": served, "evidence": sorted(evidence),
        "locomo_f1": locomo_f1(answer.text, query.answer, query.category, query.unanswerable)
        if scored else None,
        "mem0_f1": mem0_f1(answer.text, query.answer) if scored and query.answer else None,
        "bleu1": bleu1(answer.text, query.answer) if scored and query.answer else None,
        "j": None if grade is None or grade.correct is None else float(grade.correct),
        "evidence_recall": len(evidence & set(served)) / len(evidence) if evidence else None,
        "search_ms": search_ms, "answer_ms": answer.latency_ms,
        "context_words": len(context(recalled).split()), **answer_cost(answer, grade)}


def _summary(rows: Sequence[Mapping[str, Any]], resamples: int, seed: int) -> dict[str, Any]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["category"] or "(none)", []).append(row)
    groups = dict(sorted(groups.items()))
    groups[EXCEPT_ADVERSARIAL] = [r for r in rows if not r["unanswerable"]]
    groups[ALL] = list(rows)
    by_category = {
        name: {"questions": len(group),
               **{score: mean_ci([r[score] for r in group if r[score] is not None], resamples,
                               seed) for score in SCORES}}
        for name, group in groups.items() if group}
    answered = [r for r in rows if not r["answer_error"]]
    return {
        "by_category": by_category,
        "cost": {"search_ms": percentiles([r["search_ms"] for r in rows]),
                 "answer_ms": percentiles([r["answer_ms"] for r in answered
                                            if not r["answer_cached"]]),
                 "answers_cached": sum(bool(r["answer_cached"]) for r in rows),
                 "tokens_in": sum(r["tokens_in"] for r in rows),
                 "tokens_out": sum(r["tokens_out"] for r in rows),
                 "cost_usd": float(sum(r["cost_usd"] for r in rows)),
                 "context_words_mean": float(np.mean([r["context_words"] for r in rows]))},
        "answer_errors": sum(bool(r["answer_error"]) for r in rows),
        "grade_errors": sum(bool(r["grade_error"]) for r in rows)}


def _cell(score: Mapping[str, Any] | None, with_ci: bool) -> str:
    """A mean, with its CI if asked; — when not measured (no J without a grader; no mem0 F1 in
    a run written before it was)."""
    if score is None or score["mean"] is None:
        return "—"
    low, high = score["ci95"]
    return f"{score['mean']:.3f} [{low:.3f}–{high:.3f}]" if with_ci else f"{score['mean']:.3f}"


def summarise(qa: Mapping[str, Any]) -> str:
    """The blocks as printed."""
    return printed(qa_blocks(qa))


def qa_blocks(qa: Mapping[str, Any]) -> list[Block]:
    """Per category: questions, LoCoMo F1 with its CI, mem0 F1, BLEU-1, J and evidence recall
    (their CIs are in metrics.json: the table fits 100 columns); then the costs."""
    rows = tuple((name, str(c["questions"]),
                  *(_cell(c.get(score), score == SCORES[0]) for score in SCORES))
                 for name, c in qa["by_category"].items())
    grader = qa["grader"] or "none: J not measured (grader@experiment.grader=llm measures it)"
    table = Table(f"memory QA: system {qa['system']} on {qa['corpus']}, top {qa['k']} memories,"
                  f" answerer {qa['answerer']}",
                  ("category", "questions", "LoCoMo F1 [95% CI]", "mem0 F1", "BLEU-1", "J",
                   f"evidence recall@{qa['k']}"), rows,
                  "LoCoMo F1: LoCoMo's own (stemmed bags of words, articles dropped); mem0 F1 "
                  "and BLEU-1: mem0's (word sets, no stemming); J: LLM-judge accuracy (grader "
                  f"{grader}); adversarial questions: LoCoMo F1 only; every score's 95% CI: "
                  "metrics.json, qa.by_category")
    cost = qa["cost"]
    search, answer = cost["search_ms"], cost["answer_ms"]

    def ms(value: float | None) -> str:
        return "—" if value is None else f"{value:.1f} ms"

    lines = [f"cost: search p50 {ms(search['p50'])}, p95 {ms(search['p95'])}; answer p50 "
             f"{ms(answer['p50'])}, p95 {ms(answer['p95'])} ({cost['answers_cached']} cached); "
             f"tokens in {cost['tokens_in']}, out {cost['tokens_out']}; context "
             f"{cost['context_words_mean']:.0f} words per question"]
    if qa["answer_errors"] or qa["grade_errors"]:
        lines.append(f"errors: {qa['answer_errors']} answers, {qa['grade_errors']} grades "
                     f"(per question in qa_questions.parquet)")
    return [table, Note("Cost", "\n".join(lines))]


EVIDENCE_ROWS = 200  # questions the report shows one by one (qa_questions.parquet holds all)


def report(run: Run) -> list[Section]:
    """The tables the run printed, then question by question: what was asked, the gold answer,
    the system's answer and its scores, and the memories it served against the evidence."""
    import pandas as pd

    blocks = [block.section() for block in qa_blocks(run.result.of(Answered).qa)]
    rows = run.table("qa_questions").rename(columns=OLD_NAMES).head(EVIDENCE_ROWS).to_dict(
        "records")
    if not rows or "evidence" not in rows[0]:  # a run written before the evidence was kept
        return blocks
    table = pd.DataFrame([{
        "question": r["question"], "gold": "(unanswerable)" if r["unanswerable"] else r["gold"],
        "answer": r["answer"] or r["answer_error"], "LoCoMo F1": r["locomo_f1"],
        "mem0 F1": r.get("mem0_f1"), "J": r["j"],
        "served (✓ evidence)": ", ".join(f"{m}{' ✓' if m in set(r['evidence']) else ''}"
                                         for m in r["served"]),
        "evidence missed": ", ".join(m for m in r["evidence"] if m not in set(r["served"]))}
        for r in rows])
    shown = f"the first {EVIDENCE_ROWS}" if len(rows) == EVIDENCE_ROWS else "every question"
    return [*blocks, Section("Question by question", f"{shown.capitalize()}: the memories "
                             f"served, best first, ✓ where they are the question's evidence; all "
                             f"of them are in qa_questions.parquet.", table=table)]


def figures(run: Run) -> list[Path]:
    from memeval.reporting.qa_plots import make_qa_figures

    return make_qa_figures(run.path, run.result.of(Answered).qa)


def scores(run: Run) -> list[Score]:
    """Every question but the adversarial (mem0's table): LoCoMo's F1 and mem0's, J when
    graded, and the search's median latency."""
    qa = run.result.of(Answered).qa
    group = EXCEPT_ADVERSARIAL if EXCEPT_ADVERSARIAL in qa["by_category"] else ALL
    shown = qa["by_category"][group]
    bench = f"QA ({qa['corpus']}, {qa['answerer']})"
    where = f"{shown['questions']} questions ({group})"
    found = [Score(bench, name, shown[key]["mean"], as_ci(shown[key]["ci95"]), population=where)
             for key, name in (("locomo_f1", "LoCoMo F1"), ("mem0_f1", "mem0 F1"))
             if key in shown]
    if qa["grader"]:
        found.append(Score(bench, "J", shown["j"]["mean"], as_ci(shown["j"]["ci95"]), unit=RATE,
                           population=where))
    return [*found, Score(bench, "search p50", qa["cost"]["search_ms"]["p50"],
                          higher_is_better=False, unit=MILLISECONDS,
                          population=f"{qa['questions']} questions")]


def items(run: Run) -> dict[str, pd.Series]:
    """The figures question by question (those `scores` averages: all but the adversarial when
    there are any), by question id."""
    rows = run.table("qa_questions").rename(columns={"f1": "locomo_f1"})  # before the rename
    if EXCEPT_ADVERSARIAL in run.result.of(Answered).qa["by_category"]:
        rows = rows[~rows["unanswerable"]]
    rows = rows.set_index("question_id")
    return {name: rows[key].dropna().astype(float)
            for key, name in (("locomo_f1", "LoCoMo F1"), ("mem0_f1", "mem0 F1"), ("j", "J"))
            if key in rows and rows[key].notna().any()}


def headline(run: Run) -> str:
    """The declared figures in a sentence."""
    found = scores(run)
    return (f"On {found[0].population} system {run.result.of(Answered).qa['system']} "
            f"answered with " + ", ".join(f"{s.measure} {s.shown}" for s in found[:-1])
            + f" (95% CIs); its search took {found[-1].shown} at the median.")


@register("memory_qa", MemoryQAConfig,
          Outputs(Answered, figures, report, scores, headline, items=items))
def build_memory_qa(cfg: MemoryQAConfig) -> MemoryQA:
    return MemoryQA(cfg)
