"""LoCoMo (Maharana et al., ACL 2024; `locomo10.json`, CC BY-NC 4.0, not bundled) as a memory
corpus: each sample is one long conversation between two speakers, over numbered sessions, with
questions whose `evidence` names the dialogue turns (`D3:7`: session 3, turn 7) that answer them.

`unit: turn` makes one memory per turn; `unit: session_summary` one per session summary, an
evidence turn counting for its session's summary. A question searches its own conversation only
(its `scope`), since each sample's questions are about that conversation.

The released file's evidence is messy, so it is cleaned rather than trusted: several ids in one
entry (`D8:6; D9:17`) are split, zero-padded ones (`D30:05`) read as `D30:5`, and ids that name
no turn are dropped, counted and reported by question. A question left with no evidence (most
adversarial ones have none usable) cannot be scored as retrieval: skipped and counted, not an
error.

Memory QA reads every question with a gold answer, evidence or not: `answer` as written (a
number read as text); an adversarial question (category 5) has none to give, so it is
`unanswerable`, scored as LoCoMo scores it (experiments/memory_qa.py). Any other question whose
`answer` is not text or a number is left out of memory QA and counted (data/gold.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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

UNITS = ("turn", "session_summary")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
SESSION = re.compile(r"session_(\d+)")
SUMMARY = re.compile(r"session_(\d+)_summary")
DIA_ID = re.compile(r"D(\d+):(\d+)")
EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")  # "1:56 pm on 8 May, 2023"


@dataclass
class LocomoConfig:
    path: str = "???"
    unit: str = "turn"
    categories: list[int] | None = None
    on_error: str = "skip"
    limit: int | None = bounded(None, 1)  # the first N conversations (samples) of the file

    def validate(self) -> None:
        check_read_settings(self.on_error, self.limit)
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got '{self.unit}'")
        if self.categories is not None and (not self.categories
                                            or min(self.categories) < 1):
            raise ValueError(f"categories must be null or a non-empty list of category numbers "
                             f"(LoCoMo's are 1-5), got {self.categories}")


def category_name(value: Any) -> str:
    return CATEGORIES.get(value, str(value)) if isinstance(value, int) else str(value)


def dia_id(value: str) -> str:
    """`D30:05` -> `D30:5`: the file writes some evidence ids zero-padded."""
    match = DIA_ID.fullmatch(value.strip())
    return f"D{int(match[1])}:{int(match[2])}" if match else value.strip()


def evidence_ids(evidence: Any) -> list[str]:
    """Every dialogue id an item's `evidence` names, split and normalised, in order."""
    entries = evidence if isinstance(evidence, list) else [evidence] if evidence else []
    found = [dia_id(part) for entry in entries if isinstance(entry, str)
             for part in EVIDENCE_SPLIT.split(entry) if part]
    return list(dict.fromkeys(found))


def session_date(text: Any) -> datetime | None:
    if isinstance(text, str):
        for form in DATE_FORMATS:
            try:
                return as_utc(datetime.strptime(text.strip(), form))
            except ValueError:
                continue
    return None


def numbered(mapping: Mapping[str, Any], pattern: re.Pattern[str]) -> list[tuple[int, Any]]:
    """(N, value) of each key matching `pattern`, by N: sessions are numbered, with gaps."""
    found = [(int(m[1]), value) for key, value in mapping.items()
             if (m := pattern.fullmatch(key)) is not None]
    return sorted(found, key=lambda pair: pair[0])


class _Sample:
    """One conversation's memories, and which memory each of its dialogue ids counts for."""

    def __init__(self, sample_id: str, where: str, report: LoadReport, on_error: str) -> None:
        self.sample_id, self.where, self.report, self.on_error = sample_id, where, report, on_error
        self.memories: list[CorpusMemory] = []
        self.turn_memory: dict[str, str] = {}  # dialogue id -> memory id
        self.turn_session: dict[str, int] = {}  # dialogue id -> session number

    def read_turns(self, conversation: Mapping[str, Any], unit: str) -> None:
        for number, turns in numbered(conversation, SESSION):
            stamp = session_date(conversation.get(f"session_{number}_date_time"))
            if stamp is None:
                count(self.report, "undated_sessions")
            if not isinstance(turns, list):
                note_at(self.report, self.where, f"session_{number} is not a list of turns",
                        self.on_error)
                continue
            for position, turn in enumerate(turns):
                try:
                    memory = self.turn(turn, number, stamp)
                except ValueError as err:
                    note_at(self.report, f"{self.where} session_{number} turn {position}",
                            str(err), self.on_error)
                    continue
                key = dia_id(str(turn["dia_id"]))
                self.turn_session[key] = number
                if unit == "turn":
                    self.memories.append(memory)
                    self.turn_memory[key] = memory.id

    def turn(self, turn: Any, number: int, stamp: datetime | None) -> CorpusMemory:
        if not isinstance(turn, dict):
            raise ValueError("not an object")
        speaker, raw_id, text = turn.get("speaker"), turn.get("dia_id"), turn.get("text")
        if not isinstance(speaker, str) or not isinstance(raw_id, str) or not raw_id.strip():
            raise ValueError("needs 'speaker' and 'dia_id' as text")
        caption = turn.get("blip_caption")
        said = text.strip() if isinstance(text, str) else ""
        if isinstance(caption, str) and caption.strip():
            said = f"{said} [shares a photo: {caption.strip()}]".strip()
        if not said:
            raise ValueError("no 'text' (and no photo caption)")
        key = dia_id(raw_id)
        if key in self.turn_session:
            raise ValueError(f"duplicate dia_id '{raw_id}'")
        ref = f"{self.sample_id}:{key}"
        return CorpusMemory(id=ref, text=f"{speaker}: {said}", timestamp=stamp,
                      session=f"{self.sample_id}:session_{number}", source=ref,
                      metadata={"sample_id": self.sample_id, "speaker": speaker,
                                "dia_id": raw_id})

    def read_summaries(self, conversation: Mapping[str, Any], summaries: Any) -> None:
        if not isinstance(summaries, dict):
            note_at(self.report, self.where, "no 'session_summary' object", self.on_error)
            return
        by_session: dict[int, str] = {}
        for number, text in numbered(summaries, SUMMARY):
            if not isinstance(text, str) or not text.strip():
                note_at(self.report, self.where, f"session_{number}_summary is not text",
                        self.on_error)
                continue
            memory = CorpusMemory(id=f"{self.sample_id}:S{number}", text=text.strip(),
                            timestamp=session_date(
                                conversation.get(f"session_{number}_date_time")),
                            session=f"{self.sample_id}:session_{number}",
                            source=f"{self.sample_id}:session_{number}_summary",
                            metadata={"sample_id": self.sample_id, "session": number})
            self.memories.append(memory)
            by_session[number] = memory.id
        self.turn_memory = {key: by_session[number] for key, number in self.turn_session.items()
                            if number in by_session}


def _query(sample: _Sample, index: int, item: Any, scope: tuple[str, ...],
           keep: set[int] | None, golds: UnscoredGold) -> CorpusQuery | None:
    """The qa item as a query, or None when it is filtered out or has no usable evidence."""
    report, ref = sample.report, f"{sample.sample_id}:q{index}"
    if not isinstance(item, dict) or not isinstance(item.get("question"), str) \
            or not item["question"].strip():
        note_at(report, f"{sample.where} qa {index}", "not an object with a 'question'",
                sample.on_error)
        return None
    category = item.get("category")
    if category is not None and (isinstance(category, bool)
                                 or not isinstance(category, int | str)):
        note_at(report, f"{sample.where} qa {index} ({ref})",
                f"'category' must be a number, got {type(category).__name__}", sample.on_error)
        return None
    if keep is not None and category not in keep:
        count(report, "category_filtered")
        return None
    relevant: dict[str, int] = {}
    for evidence in evidence_ids(item.get("evidence")):
        memory = sample.turn_memory.get(evidence)
        if memory is None:
            count(report, "evidence_unknown")
            reason = ("names a session without a summary" if evidence in sample.turn_session
                      else "names no turn")
            note_at(report, f"{sample.where} qa {index} ({ref})",
                    f"evidence '{evidence}' {reason}: the id is dropped, the question kept",
                    sample.on_error, mended=True)
            continue
        relevant[memory] = 2
    unanswerable = category == ADVERSARIAL
    gold = None if unanswerable else golds.text(item.get("answer"), ref)
    if not relevant:
        count(report, "no_evidence")
        if gold is None and not unanswerable:
            return None
    name = category_name(category)
    count(report, f"queries:{name}")
    return CorpusQuery(id=ref, text=item["question"].strip(), relevant=relevant,
                       category=name, scope=scope, answer=gold, unanswerable=unanswerable)


def load_locomo(path: str | Path, unit: str = "turn", categories: list[int] | None = None,
                on_error: str = "skip", limit: int | None = None) -> MemoryCorpus:
    file = input_path(str(path), "LoCoMo", "dataset.path")
    samples = read_json_array(file, "LoCoMo (locomo10.json)")[:limit]
    report = LoadReport(source=str(file), rows_read=len(samples))
    keep = None if categories is None else set(categories)
    memories: list[CorpusMemory] = []
    queries: list[CorpusQuery] = []
    seen: set[str] = set()
    golds = UnscoredGold(report, str(file), on_error)
    for position, raw in enumerate(samples):
        where = f"{file}: sample {position}"
        if not isinstance(raw, dict) or not isinstance(raw.get("conversation"), dict):
            note_at(report, where, "not an object with a 'conversation'", on_error)
            continue
        sample_id = str(raw.get("sample_id") or f"sample_{position}")
        if sample_id in seen:
            note_at(report, where, f"duplicate sample_id '{sample_id}'", on_error)
            continue
        seen.add(sample_id)
        sample = _Sample(sample_id, f"{where} ({sample_id})", report, on_error)
        sample.read_turns(raw["conversation"], unit)
        if unit == "session_summary":
            sample.read_summaries(raw["conversation"], raw.get("session_summary"))
        if not sample.memories:
            note_at(report, sample.where, f"no usable {unit.replace('_', ' ')}s", on_error)
            continue
        memories += sample.memories
        scope = tuple(m.id for m in sample.memories)
        qa = raw.get("qa")
        for index, item in enumerate(qa if isinstance(qa, list) else []):
            query = _query(sample, index, item, scope, keep, golds)
            if query is not None:
                queries.append(query)
    golds.close()
    if not memories or not queries:
        raise nothing_usable(f"{file}: no usable LoCoMo {'queries' if memories else 'samples'} "
                             f"({report.skipped} problems, stats {report.stats})", report)
    return checked_corpus(file.stem, memories, queries, report)


@CORPORA.register("locomo", LocomoConfig)
def build_locomo(cfg: LocomoConfig, **_: object) -> MemoryCorpus:
    return load_locomo(cfg.path, cfg.unit, cfg.categories, cfg.on_error, cfg.limit)
