"""LongMemEval (Wu et al., ICLR 2025; `longmemeval_s.json`, `_m`, `_oracle`; MIT, not bundled:
the `_s` file is about 270 MB) as a memory corpus, at session level as its retrieval baselines
score it: each question comes with a haystack of chat sessions, and `answer_session_ids` names
the ones that answer it.

One memory per distinct haystack session (its user turns, or all turns as `role: content`),
written at its haystack date; a question searches its own haystack only (its `scope`), or with
`search: all` every session of the file written by its `question_date` (what makes the small
`_oracle` file, whose haystacks hold only the evidence sessions, a retrieval task). The files
repeat filler sessions across many questions' haystacks: an id whose text is the same is one
memory. Should an id carry different text, the later one is kept apart as
`{session_id}#{question_id}` and counted, so no question searches another's text.

Abstention questions (`_abs`) have no answer session to retrieve, and a question whose answer
sessions are missing from its haystack cannot be scored: both are skipped and counted. A question
whose gold `answer` is not text or a number is kept for retrieval, left out of memory QA and
counted (data/gold.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memeval.data.base import CORPORA, CorpusMemory, CorpusQuery, LoadReport, MemoryCorpus
from memeval.data.corpus_jsonl import as_utc, count, input_path, read_json_array
from memeval.data.gold import UnscoredGold
from memeval.data.jsonl import check_read_settings, note_at, nothing_usable
from memeval.data.memory_corpus import checked_corpus
from memeval.registry import bounded

TEXTS = ("user", "all")
SEARCHES = ("haystack", "all")  # what a question searches: its own haystack, or every session
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # "2023/05/30 (Tue) 23:40"


@dataclass
class LongMemEvalConfig:
    path: str = "???"
    text: str = "user"
    search: str = "haystack"
    on_error: str = "skip"
    limit: int | None = bounded(None, 1)

    def validate(self) -> None:
        check_read_settings(self.on_error, self.limit)
        if self.text not in TEXTS:
            raise ValueError(f"text must be one of {TEXTS}, got '{self.text}'")
        if self.search not in SEARCHES:
            raise ValueError(f"search must be one of {SEARCHES}, got '{self.search}'")


def lme_date(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return as_utc(datetime.strptime(value.strip(), DATE_FORMAT))
    except ValueError:
        return None


def session_text(turns: Any, which: str) -> str:
    """The session's memory text: its user turns' contents, or every turn as `role: content`."""
    if not isinstance(turns, list):
        raise ValueError("a haystack session is not a list of turns")
    lines = []
    for turn in turns:
        if not isinstance(turn, dict) or not isinstance(turn.get("role"), str) \
                or not isinstance(turn.get("content"), str):
            raise ValueError("a turn is not an object with 'role' and 'content' as text")
        if which == "all":
            lines.append(f"{turn['role']}: {turn['content'].strip()}")
        elif turn["role"] == "user":
            lines.append(turn["content"].strip())
    return "\n".join(line for line in lines if line.strip())


@dataclass(frozen=True)
class _Question:
    id: str
    text: str
    category: str
    date: str | None
    haystack: dict[str, tuple[str, Any]]  # session id -> (text, date as written); first kept
    answers: list[str]
    gold: Any  # the gold answer as written, for memory QA (data/gold.py reads it)


def _question(raw: Any, which: str) -> _Question:
    if not isinstance(raw, dict):
        raise ValueError("not an object")
    qid, text = raw.get("question_id"), raw.get("question")
    if not isinstance(qid, str) or not qid or not isinstance(text, str) or not text.strip():
        raise ValueError("needs 'question_id' and 'question' as non-empty text")
    ids, dates, sessions = (raw.get(key) for key in ("haystack_session_ids", "haystack_dates",
                                                     "haystack_sessions"))
    if not (isinstance(ids, list) and isinstance(dates, list) and isinstance(sessions, list)
            and len(ids) == len(dates) == len(sessions)):
        raise ValueError("haystack_session_ids, haystack_dates and haystack_sessions must be "
                         "lists of one length")
    answers = raw.get("answer_session_ids")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise ValueError("'answer_session_ids' must be a list of session ids")
    haystack: dict[str, tuple[str, Any]] = {}
    for sid, date, turns in zip(ids, dates, sessions, strict=True):
        if not isinstance(sid, str) or not sid:
            raise ValueError("a haystack session id is not text")
        haystack.setdefault(sid, (session_text(turns, which), date))
    date = raw.get("question_date")
    return _Question(id=qid, text=text.strip(), category=str(raw.get("question_type") or ""),
                     date=date if isinstance(date, str) else None, haystack=haystack,
                     answers=list(dict.fromkeys(answers)), gold=raw.get("answer"))


class _Sessions:
    """The distinct haystack sessions as memories: one per (session id, text)."""

    def __init__(self, report: LoadReport) -> None:
        self.report = report
        self.ids: dict[str, dict[str, str]] = {}  # session id -> text -> memory id
        self.memories: dict[str, CorpusMemory] = {}

    def add(self, sid: str, text: str, date: Any, qid: str) -> str:
        known = self.ids.setdefault(sid, {})
        mid = known.get(text)
        if mid is None:
            mid = sid if not known else f"{sid}#{qid}"
            if known:
                count(self.report, "session_id_reused")
            known[text] = mid
            self.memories[mid] = CorpusMemory(id=mid, text=text, session=sid, source=sid)
        stamp = lme_date(date)
        if stamp is None:
            count(self.report, "undated_sessions")
        memory = self.memories[mid]
        if stamp is not None and (memory.timestamp is None or stamp < memory.timestamp):
            self.memories[mid] = CorpusMemory(id=mid, text=text, timestamp=stamp, session=sid,
                                        source=sid)  # the earliest date it appears at
        return mid


def load_longmemeval(path: str | Path, text: str = "user", on_error: str = "skip",
                     limit: int | None = None, search: str = "haystack") -> MemoryCorpus:
    file = input_path(str(path), "LongMemEval", "dataset.path")
    instances = read_json_array(file, "LongMemEval (longmemeval_s.json)")[:limit]
    report = LoadReport(source=str(file), rows_read=len(instances))
    sessions = _Sessions(report)
    golds = UnscoredGold(report, str(file), on_error)
    queries: dict[str, CorpusQuery] = {}
    for position, raw in enumerate(instances):
        where = f"{file}: question {position}"
        try:
            question = _question(raw, text)
        except ValueError as err:
            note_at(report, where, str(err), on_error)
            continue
        if question.id in queries:
            note_at(report, where, f"duplicate question_id '{question.id}'", on_error)
            continue
        if question.id.endswith("_abs"):
            count(report, "abstention")
            continue
        if not question.answers or not all(question.haystack.get(a, ("",))[0]
                                           for a in question.answers):
            count(report, "answer_not_in_haystack")
            continue
        scope = {}
        for sid, (session, date) in question.haystack.items():
            if not session:
                count(report, "empty_sessions")
                continue
            scope[sid] = sessions.add(sid, session, date, question.id)
        asked = lme_date(question.date)
        if asked is None:
            count(report, "undated_questions")
        count(report, f"queries:{question.category}")
        queries[question.id] = CorpusQuery(
            id=question.id, text=question.text, relevant={scope[a]: 2 for a in question.answers},
            asked_at=asked, category=question.category,
            scope=tuple(scope.values()) if search == "haystack" else None,
            answer=golds.text(question.gold, question.id))
    golds.close()
    if not queries:
        raise nothing_usable(f"{file}: no usable LongMemEval questions ({report.skipped} "
                             f"problems, stats {report.stats})", report)
    return checked_corpus(file.stem, list(sessions.memories.values()), list(queries.values()),
                          report)


@CORPORA.register("longmemeval", LongMemEvalConfig)
def build_longmemeval(cfg: LongMemEvalConfig, **_: object) -> MemoryCorpus:
    return load_longmemeval(cfg.path, cfg.text, cfg.on_error, cfg.limit, cfg.search)
