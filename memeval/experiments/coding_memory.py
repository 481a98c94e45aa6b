"""`+experiment=coding_memory`: a memory benchmark for coding agents, write path and read path
scored together on real sessions (data/coding_memory/, `dataset=coding_memory`).

Each split's sessions of each project (`dev`; `blind`, scored once at the end: whole sessions, a
question's evidence in its own split's) go through the system's own write path (`ingest`) once, in
time order, as they happened. What it kept is then searchable (`search`); each question is asked at
the point it was written for (the start of a later session), over the memories the system kept
before that point only: the memories it stored later are dropped from the system's ranking, which
is asked deep enough that its top `k` of the earlier ones are exact (`_served`). Those `k` go to an
answerer (`extractive` offline, or `llm`), and a grader may give J. Scored per question:

- write recall: the share of its evidence turns the write path kept; lost at write: none kept,
  so no search could find the answer;
- recall@k and nDCG@k of the evidence among the memories served; for a fact that changed,
  whether the newest evidence is served above the older;
- the answer's token F1 against the gold (LoCoMo's, metrics/qa_scores.py), J when graded, and
  abstention: an unanswerable question (never established before it is asked) is right when
  the answer says the memories do not hold it; an answerable one abstained on is counted too.

Each with a bootstrap CI, per split (`dev`, and `blind`, scored once at the end), per category and
per project (source); the costs: stored items, judge calls, ingest and search latency. Each
stream's write pass and its questions are checkpointed: `resume=true` goes on from the first
unfinished one.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memeval.backends.answerers.base import ANSWERERS, Answerer, Recalled
from memeval.backends.answerers.grader import GRADERS, Grader
from memeval.data.base import ChosenInput
from memeval.data.coding_memory import (
    ANSWERABLE,
    SPLITS,
    UNANSWERABLE,
    BenchQuestion,
    load_questions,
    parse_time,
)
from memeval.engine.gate.gate import Decision
from memeval.entry import Entry
from memeval.experiments.answering import answer_cost, answer_failures, graded
from memeval.experiments.base import ExperimentResult, RunContext, Runs, register, replay
from memeval.experiments.checkpoint import PassRecord
from memeval.metrics.describe import mean_ci, percentiles
from memeval.metrics.gate_metrics import SystemFailure, share_failed
from memeval.metrics.qa_scores import says_no_answer, token_f1
from memeval.metrics.ranking import ndcg_at_k, recall_at_k
from memeval.registry import ConfigError, bounded
from memeval.reporting.outputs import COUNT, NUMBER, RATE, Outputs, Score, Section, item_key
from memeval.reporting.table import Block, Note, Table, printed
from memeval.results.findings import Findings
from memeval.results.result import as_ci
from memeval.systems.base import Capability, IndexedMemory, System
from memeval.utils.redact import redact

if TYPE_CHECKING:
    import pandas as pd

    from memeval.results.run import Run

log = logging.getLogger(__name__)
NAME = "coding_memory"
DATASET = "coding_memory"
ANSWERED, ALL = "answerable", "all"
SCORES = ("write_recall", "lost_at_write", "recall", "ndcg", "newer_first", "f1", "j",
          "abstained")
WHAT_CHANGED = "what_changed"


@dataclass
class CodingMemoryConfig:
    k: int = bounded(5, 1)  # memories served per question
    splits: list[str] = field(default_factory=lambda: ["dev"])  # dev, blind (scored once)
    answerer: dict[str, Any] = field(default_factory=lambda: {"name": "extractive"})
    grader: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    categories: list[str] | None = None  # only these question categories; null: every one
    # the first N questions in the order they are asked, each stream cut after its last one:
    # a smoke run
    limit: int | None = bounded(None, 1)
    # more turns the system fails to ingest, or answers or grades failing, than this share
    # fails the run (its results are kept)
    max_error_share: float = bounded(0.05, 0, 1)

    def validate(self) -> None:
        ANSWERERS.validate(self.answerer, "experiment.answerer")
        GRADERS.validate(self.grader, "experiment.grader")
        if not self.splits or set(self.splits) - set(SPLITS):
            raise ValueError(f"splits must be some of {list(SPLITS)}, got {self.splits}")
        known = (*ANSWERABLE, UNANSWERABLE)
        if self.categories is not None and set(self.categories) - set(known):
            raise ValueError(f"categories must be some of {list(known)}, got {self.categories}")

    def check_inputs(self, dataset: ChosenInput) -> None:
        """Its questions point at the benchmark's own turns: any other input is refused before
        any work."""
        if dataset.name != DATASET:
            raise ConfigError(f"+experiment={NAME} asks its questions over the coding memory "
                              f"benchmark's sessions: use dataset={DATASET} (the default), not "
                              f"dataset={dataset.name}")


@dataclass(frozen=True)
class Benchmarked(Findings):
    coding: Mapping[str, Any]  # the system, its write path's costs and every score


class CodingMemory:
    embeds = True  # its turns, as `memeval embed` warms them: the cost is said first
    resumable = True  # each stream's write pass, then its questions
    runs = Runs.ANY

    def __init__(self, cfg: CodingMemoryConfig) -> None:
        self.cfg = cfg

    def _questions(self, ctx: RunContext) -> list[BenchQuestion]:
        dataset = ctx.dataset
        path = ctx.validated.dataset.chosen.params.path
        questions, report = load_questions(path, dataset.entries, self.cfg.splits,
                                           dataset.names or str)
        for problem in report.told():
            log.warning("%s", problem)
        wanted = self.cfg.categories
        chosen = sorted((q for q in questions if wanted is None or q.category in wanted),
                        key=lambda q: (q.asked_at, q.id))
        if not chosen:
            raise ValueError(f"no question of split(s) {self.cfg.splits} in categories {wanted}")
        return chosen[: self.cfg.limit]

    def run(self, ctx: RunContext) -> ExperimentResult:
        questions = self._questions(ctx)
        system = ctx.system
        answerer = ANSWERERS.build(self.cfg.answerer, cache_dir=ctx.cache_dir)
        grader = GRADERS.build(self.cfg.grader, cache_dir=ctx.cache_dir)
        rows: list[dict[str, Any]] = []
        written: dict[str, dict[str, Any]] = {}
        decisions: list[Decision] = []
        try:
            for split, project in sorted({(q.split, q.project) for q in questions}):
                asked = [q for q in questions if (q.split, q.project) == (split, project)]
                # a smoke run's stream ends at its last question; a whole run's never depends
                # on which questions it asks
                last = max(q.asked_at for q in asked) if self.cfg.limit else None
                stream = [e for e in ctx.dataset.entries
                          if (e.meta["split"], e.meta["project"]) == (split, project)
                          and (last is None or parse_time(e.meta["timestamp"]) < last)]
                name = f"{split}-{project}"
                record = self._write(ctx, name, stream)
                decisions += record.decisions
                written[name] = record.metrics
                rows += ctx.checkpoints.run_step(f"ask-{name}", partial(
                    self._ask, ctx, system, stream, record.decisions, asked, answerer, grader))
        finally:
            answerer.close()
            grader.close()
        coding = {"system": system.name, "k": self.cfg.k, "answerer": answerer.name,
                  "grader": grader.name, "splits": list(self.cfg.splits),
                  "questions": len(rows), "write": written,
                  "by_split": _by_split(rows, ctx.resamples, ctx.seed),
                  "cost": _cost(rows, written)}
        return ExperimentResult([], decisions, Benchmarked(coding), summary=summarise(coding),
                                tables={"coding_questions": rows},
                                failures=self._failures(decisions, rows))

    def _write(self, ctx: RunContext, name: str, stream: list[Entry]) -> PassRecord:
        """A split's sessions of one project through the system's write path, once, in time
        order."""
        ingestor = ctx.ingestor([Capability.SEARCH], NAME, state_name=f"state_{name}")
        items = ctx.prepare(ingestor, stream)

        def run() -> PassRecord:
            ingestor.restart(wipe_memories=True)
            rows = replay(ctx, ingestor, items, 1, "eval", arm=name)
            return PassRecord(_written(name, rows), rows)

        return ctx.checkpoints.run_pass(ingestor, f"write-{name}", run)

    def _ask(self, ctx: RunContext, system: System, stream: Sequence[Entry],
             decisions: Sequence[Decision], questions: Sequence[BenchQuestion],
             answerer: Answerer, grader: Grader) -> list[dict[str, Any]]:
        """What the write path kept made searchable, then each question asked over what was
        kept before it."""
        kept = {d.entry_id for d in decisions if d.retained}
        stored = [e for e in stream if e.id in kept]  # in time order, as the stream is
        written = {e.id: parse_time(e.meta["timestamp"]) for e in stream}
        times = [written[e.id] for e in stored]
        texts = {e.id: redact(e.assistant_response) for e in stored}
        if stored:
            system.index([IndexedMemory(e.id, texts[e.id]) for e in stored])
        rows = []
        for question in ctx.progress(questions, len(questions), f"{system.name} questions",
                                     "question"):
            before = bisect_left(times, question.asked_at)
            served, search_ms = self._served(system, question, before, len(stored), written)
            answer = answerer.answer(question.text,
                                     [Recalled(texts[i], written[i]) for i in served])
            grade = graded(grader, question.text, question.answer, answer)
            rows.append(_row(question, kept, served, self.cfg.k, written) | {
                "search_ms": search_ms,
                "answer": answer.text, "answer_ms": answer.latency_ms,
                **_answer_scores(question, answer.text, answer.error, grade),
                **answer_cost(answer, grade)})
        return rows

    def _served(self, system: System, question: BenchQuestion, before: int, total: int,
                written: Mapping[str, datetime]) -> tuple[list[str], float]:
        """The system's top `k` of the `before` memories it kept before the question is asked,
        and the time its searches took. The memories kept later are dropped from its ranking,
        which leaves the earlier ones in their order: once a search's top `want` holds `k` of
        them, they are the top `k`. `want` starts where a ranking blind to time would hold
        `k` of them twice over and grows fourfold."""
        k, spent = self.cfg.k, 0.0
        if not before:
            return [], spent
        want = min(total, 2 * k * -(-total // before))
        while True:
            started = time.perf_counter()
            hits = system.search(question.text, want)
            spent += (time.perf_counter() - started) * 1000.0
            served = [h.id for h in hits if written[h.id] < question.asked_at]
            if len(served) >= min(k, before) or want >= total or len(hits) < want:
                return served[:k], spent
            want = min(total, 4 * want)

    def _failures(self, decisions: Sequence[Decision], rows: Sequence[Mapping[str, Any]]
                  ) -> list[Exception]:
        found = answer_failures(rows, self.cfg.max_error_share)
        errors = [d.system_error for d in decisions if d.outcome == "error"]
        if message := share_failed(errors, len(decisions), self.cfg.max_error_share,
                                   "experiment.max_error_share", "system", "turns ingested"):
            found.append(SystemFailure(message))
        return found


def _written(stream: str, decisions: Sequence[Decision]) -> dict[str, Any]:
    """A stream's write pass: what was kept, the judge calls spent and the time per turn."""
    latency = [sum(d.latency_ms.values()) for d in decisions]
    return {"stream": stream, "turns": len(decisions),
            "stored": sum(d.retained for d in decisions),
            "judge_calls": sum(d.judge_called for d in decisions),
            "errors": sum(d.outcome == "error" for d in decisions),
            "ingest_ms": percentiles(latency)}


def _row(question: BenchQuestion, kept: set[str], served: list[str], k: int,
         written: Mapping[str, datetime]) -> dict[str, Any]:
    """Where the question's evidence went: kept by the write path, served by the search."""
    evidence = set(question.evidence)
    held = evidence & kept
    grades = dict.fromkeys(evidence, 1)
    return {"question_id": question.id, "project": question.project, "split": question.split,
            "category": question.category, "question": question.text, "gold": question.answer,
            "unanswerable": question.unanswerable, "asked_at": question.asked_at.isoformat(),
            "evidence": sorted(evidence), "kept": sorted(held), "served": served,
            "write_recall": len(held) / len(evidence) if evidence else None,
            "lost_at_write": float(not held) if evidence else None,
            "recall": recall_at_k(served, evidence, k) if evidence else None,
            "ndcg": ndcg_at_k(served, grades, k) if evidence else None,
            "newer_first": _newer_first(question, served, written)}


def _newer_first(question: BenchQuestion, served: list[str],
                 written: Mapping[str, datetime]) -> float | None:
    """For a fact that changed: 1 when its newest evidence turn is served above every older
    one served (the newer fact wins), else 0; None for any other question."""
    if question.category != WHAT_CHANGED or len(question.evidence) < 2:
        return None
    newest = max(question.evidence, key=lambda i: written[i])
    place = {memory: n for n, memory in enumerate(served)}
    return float(newest in place and all(place.get(i, len(served)) > place[newest]
                                         for i in question.evidence if i != newest))


def _answer_scores(question: BenchQuestion, answer: str, error: str,
                   grade: Any) -> dict[str, float | None]:
    """F1 against the gold (answerable questions), J when graded, and whether it abstained."""
    if error:
        return {"f1": None, "j": None, "abstained": None}
    return {"f1": None if question.answer is None else token_f1(answer, question.answer),
            "j": None if grade is None or grade.correct is None else float(grade.correct),
            "abstained": float(says_no_answer(answer))}


def _group_scores(rows: Sequence[Mapping[str, Any]], resamples: int, seed: int
                  ) -> dict[str, Any]:
    return {"questions": len(rows),
            **{score: mean_ci([r[score] for r in rows if r[score] is not None], resamples, seed)
               for score in SCORES}}


def _by_split(rows: Sequence[Mapping[str, Any]], resamples: int, seed: int
              ) -> dict[str, Any]:
    """Per split: every answerable question, each category, all; and each project's
    answerable questions (by source)."""
    found: dict[str, Any] = {}
    for split in SPLITS:
        mine = [r for r in rows if r["split"] == split]
        if not mine:
            continue
        groups = {ANSWERED: [r for r in mine if not r["unanswerable"]]}
        for category in (*ANSWERABLE, UNANSWERABLE):
            groups[category] = [r for r in mine if r["category"] == category]
        groups[ALL] = mine
        projects = sorted({r["project"] for r in mine})
        found[split] = {
            "by_category": {name: _group_scores(group, resamples, seed)
                            for name, group in groups.items() if group},
            "by_project": {p: _group_scores([r for r in groups[ANSWERED] if r["project"] == p],
                                            resamples, seed) for p in projects}}
    return found


def _cost(rows: Sequence[Mapping[str, Any]], written: Mapping[str, Mapping[str, Any]]
          ) -> dict[str, Any]:
    return {"turns": sum(w["turns"] for w in written.values()),
            "stored": sum(w["stored"] for w in written.values()),
            "judge_calls": sum(w["judge_calls"] for w in written.values()),
            "search_ms": percentiles([r["search_ms"] for r in rows]),
            "tokens_in": sum(r["tokens_in"] for r in rows),
            "tokens_out": sum(r["tokens_out"] for r in rows),
            "cost_usd": float(sum(r["cost_usd"] for r in rows)),
            "answer_errors": sum(bool(r["answer_error"]) for r in rows),
            "grade_errors": sum(bool(r["grade_error"]) for r in rows)}


def _cell(score: Mapping[str, Any] | None, with_ci: bool = False, rate: bool = True) -> str:
    if score is None or score["mean"] is None:
        return "—"
    low, high = score["ci95"]
    if rate:
        return (f"{score['mean']:.0%} [{low:.0%}–{high:.0%}]" if with_ci
                else f"{score['mean']:.0%}")
    return f"{score['mean']:.3f} [{low:.3f}–{high:.3f}]" if with_ci else f"{score['mean']:.3f}"


def summarise(coding: Mapping[str, Any]) -> str:
    return printed(coding_blocks(coding))


def coding_blocks(coding: Mapping[str, Any]) -> list[Block]:
    """Per split a table by category (then by project), then the write path's costs."""
    k = coding["k"]
    blocks: list[Block] = []
    for split, found in coding["by_split"].items():
        rows = [(name, str(c["questions"]), _cell(c["write_recall"]), _cell(c["lost_at_write"]),
                 _cell(c["recall"]), _cell(c["ndcg"], rate=False),
                 _cell(c["f1"], with_ci=True, rate=False), _cell(c["j"]),
                 _cell(c["abstained"]))
                for name, c in [*found["by_category"].items(),
                                *((f"{ANSWERED}: {p}", c)
                                  for p, c in found["by_project"].items()
                                  if len(found["by_project"]) > 1)]]
        blocks.append(Table(
            f"coding memory, {split} split: system {coding['system']}, top {k}, answerer "
            f"{coding['answerer']}",
            ("category", "n", "write rec", "lost", f"recall@{k}", f"nDCG@{k}", "F1 [95% CI]",
             "J", "abstained"), tuple(rows),
            "write rec: evidence turns the write path kept; lost: questions none of whose "
            "evidence was kept; F1: token F1 against the gold; abstained: answers saying the "
            "memories do not hold it (right for unanswerable questions); every CI: metrics.json"))
    cost = coding["cost"]
    lines = [f"{split}, {WHAT_CHANGED}: the newest evidence served above the older in "
             f"{_cell(changed['newer_first'], with_ci=True)} of {changed['newer_first']['n']}"
             for split, found in coding["by_split"].items()
             if (changed := found["by_category"].get(WHAT_CHANGED))
             and changed["newer_first"]["n"]]
    lines += [f"{w['stream']}: {w['stored']} of {w['turns']} turns stored, {w['judge_calls']} "
             f"judge calls, {w['errors']} ingest errors, ingest p50 "
             f"{_ms(w['ingest_ms']['p50'])} per turn" for w in coding["write"].values()]
    lines.append(f"search p50 {_ms(cost['search_ms']['p50'])}, p95 "
                 f"{_ms(cost['search_ms']['p95'])}; tokens in {cost['tokens_in']}, out "
                 f"{cost['tokens_out']}")
    if cost["answer_errors"] or cost["grade_errors"]:
        lines.append(f"errors: {cost['answer_errors']} answers, {cost['grade_errors']} grades "
                     f"(per question in coding_questions.parquet)")
    return [*blocks, Note("Write path and cost", "\n".join(lines))]


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"


def report(run: Run) -> list[Section]:
    """The tables the run printed, then the questions whose answer the write path lost."""
    import pandas as pd

    blocks = [block.section() for block in coding_blocks(run.result.of(Benchmarked).coding)]
    rows = run.table("coding_questions")
    lost = rows[rows["lost_at_write"] == 1.0]
    if lost.empty:
        return blocks
    table = pd.DataFrame({"split": lost["split"], "category": lost["category"],
                          "question": lost["question"], "gold": lost["gold"],
                          "evidence": lost["evidence"].map(", ".join)})
    return [*blocks, Section("Lost at write", f"The {len(lost)} answerable questions none of "
                             f"whose evidence turns the write path kept: no search could find "
                             f"their answer.", table=table)]


def figures(run: Run) -> list[Path]:
    from memeval.reporting.qa_plots import category_bars

    coding = run.result.of(Benchmarked).coding
    shown = (("write_recall", "write recall"), ("recall", f"recall@{coding['k']}"),
             ("f1", "F1"), ("j", "J (LLM judge)"), ("abstained", "abstained"))
    return [category_bars(run.path, found["by_category"], shown,
                          f"Coding memory ({split}): {coding['system']}, top {coding['k']}, "
                          f"answerer {coding['answerer']}", f"coding_memory_{split}.png")
            for split, found in coding["by_split"].items()]


def _figures(k: int) -> tuple[tuple[bool, str, str], ...]:
    """(on unanswerable questions?, column, measure) of each split's headline figures."""
    return ((False, "f1", "F1"), (False, "recall", f"recall@{k}"),
            (False, "write_recall", "write recall"), (True, "abstained", "abstention"))


def _benchmark(split: str, coding: Mapping[str, Any]) -> str:
    return f"coding memory ({split}, {coding['answerer']})"


def scores(run: Run) -> list[Score]:
    """Per split: the answerable questions' F1, evidence recall@k and write recall, the
    unanswerable ones' abstention; then the judge calls and memories the write path spent."""
    coding = run.result.of(Benchmarked).coding
    found: list[Score] = []
    for split, measured in coding["by_split"].items():
        groups = measured["by_category"]
        for unanswerable, key, measure in _figures(coding["k"]):
            group = UNANSWERABLE if unanswerable else ANSWERED
            if group in groups:
                score = groups[group][key]
                found.append(Score(_benchmark(split, coding), measure, score["mean"],
                                   as_ci(score["ci95"]), unit=NUMBER if key == "f1" else RATE,
                                   population=f"{groups[group]['questions']} {split} questions "
                                              f"({group})"))
    cost = coding["cost"]
    where = f"{cost['turns']} turns ingested"
    return [*found,
            Score("coding memory (write path)", "stored", cost["stored"], unit=COUNT,
                  higher_is_better=False, population=where),
            Score("coding memory (write path)", "judge calls", cost["judge_calls"], unit=COUNT,
                  higher_is_better=False, population=where)]


def items(run: Run) -> dict[str, pd.Series]:
    """Each split's figures question by question, by id: what `scores` averages."""
    rows = run.table("coding_questions").set_index("question_id")
    coding = run.result.of(Benchmarked).coding
    found = {}
    for split in coding["by_split"]:
        mine = rows[rows["split"] == split]
        bench = _benchmark(split, coding)
        for unanswerable, key, measure in _figures(coding["k"]):
            group = mine[mine["unanswerable"] == unanswerable]
            found[item_key(bench, measure)] = group[key].dropna().astype(float)
    return found


def headline(run: Run) -> str:
    coding = run.result.of(Benchmarked).coding
    first = [s for s in scores(run) if s.measure in ("F1", "write recall")][:2]
    return (f"System {coding['system']} answered coding-session questions with "
            + " and ".join(f"{s.measure} {s.shown}" for s in first)
            + f" ({first[0].population if first else ''}; 95% CIs).")


@register(NAME, CodingMemoryConfig,
          Outputs(Benchmarked, figures, report, scores, headline, items=items))
def build_coding_memory(cfg: CodingMemoryConfig) -> CodingMemory:
    return CodingMemory(cfg)

