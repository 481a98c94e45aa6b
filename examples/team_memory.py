"""team_memory: a small, self-contained memory system for memeval, written from memeval's docs
alone (docs/protocol.md, systems.md, memory_qa.md and the README) by a developer who read none
of memeval's source; kept as written. Its content cut (0.25) was chosen on the bundled
write_gate_v1 set that three_pass replays, so its three_pass figures are in-sample.

Write gate: ack/greeting prefilter -> length gate -> near-duplicate check (word Jaccard against
what is stored) -> store. A rejection store of normalised acks is learned across passes (kept on
restart, frozen when ``learning`` is False). Search: TF-IDF cosine over indexed memories, lightly
boosted by confidence/importance. Trust: declared confidence adjusted by outcome counts
(Beta-style smoothing) and penalised by conflicts and hedging. Conflicts: typed by rules
(negation/antonym -> contradiction, dates or "now/previously" -> temporal, same topic and
different values -> semantic).
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from memeval.engine.gate.gate import Decision
from memeval.systems.base import Capability, Hit, IndexedMemory, KeepsItsOwnState

# --------------------------------------------------------------------------------------------
# text helpers

_WORD = re.compile(r"[a-z0-9_][a-z0-9_.\-/]*")
_STOP = frozenset(
    "a an the and or but if then so of to in on at for with by from as is are was were be been "
    "being it its this that these those i you we they he she me my our your their them us do does "
    "did done have has had will would can could should may might must not no yes ok okay".split()
)
_ACKS = frozenset(
    """ok okay k sure thanks thank thx ty yes yep yeah no nope cool great nice done got it
    understood sounds good perfect alright right hi hello hey bye lgtm np noted will do
    on it awesome""".split()
)
_ACK_PHRASES = (
    "thank you", "thanks", "sounds good", "got it", "will do", "looks good", "makes sense",
    "no problem", "you're welcome", "on it", "let me know", "good morning", "hello", "hi there",
)


_SPECIFIC = re.compile(
    r"`[^`]+`"                                  # a code span
    r"|\b[\w.-]+/[\w./-]+"                     # a path
    r"|\b\w+[._:]\w+[\w._:]*"                   # dotted / snake / namespaced identifiers
    r"|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*"   # camelCase, CamelCase
    r"|\b\d+(?:\.\d+)*\w*"                       # numbers, versions, ports, sizes
)
_NARRATION = re.compile(
    r"^(sure|ok(ay)?|great|done|alright|got it|sounds good|running|continuing|searching|"
    r"looking|checking|let me|i'll|i will|i'm going to|moving on|working on|starting)\b",
    re.IGNORECASE,
)


def _content_score(text: str) -> float:
    """Specificity in [0, 1]: concrete tokens (code, paths, identifiers, numbers) per sentence,
    lowered for progress narration ("Running the tests now.")."""
    specific = len(_SPECIFIC.findall(text))
    sentences = max(1, len(re.findall(r"[.!?](\s|$)", text)))
    score = min(1.0, specific / (2.0 * sentences) + (0.25 if "\n" in text.strip() else 0.0))
    if _NARRATION.match(text.strip()):
        score *= 0.5
    return round(score, 4)


def _words(text: str) -> list[str]:
    return [w.strip(".-/") for w in _WORD.findall(text.lower()) if w.strip(".-/")]


def _content_words(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _STOP and len(w) > 1}


def _normalise(text: str) -> str:
    return " ".join(_words(text))


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _text_of(obj: Any) -> str:
    """The text to gate or compare: a str as is; a turn's (memeval Entry's) assistant_response."""
    if isinstance(obj, str):
        return obj
    for name in ("assistant_response", "content", "text"):
        value = getattr(obj, name, None)
        if isinstance(value, str):
            return value
    return str(obj)


# --------------------------------------------------------------------------------------------
# ingest


class TeamIngestor(KeepsItsOwnState):
    """One agent turn in -> a Decision; memories are wiped on restart, the rejection store kept.

    KeepsItsOwnState: memeval does not checkpoint this ingestor; it saves its rejection store to
    its state_dir after each pass and reloads it when built on the same state_dir.
    """

    def __init__(self, state_dir: str | os.PathLike | None, *, min_words: int, dedup_jaccard: float,
                 min_content: float):
        self.system_name = "team-memory"
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.min_words = min_words
        self.min_content = min_content
        self.dedup_jaccard = dedup_jaccard
        self._learning = True
        self.memories: list[tuple[str, set[str]]] = []  # (entry id, content words)
        self.rejections: set[str] = set()  # normalised texts dropped as acks, learned
        self._load()

    # KeepsItsOwnState refuses learning=False (it is meant for systems that cannot freeze); this
    # gate can, so it overrides the property: frozen, the rejection store stops growing.
    @property
    def learning(self) -> bool:
        return self._learning

    @learning.setter
    def learning(self, value: bool) -> None:
        self._learning = bool(value)

    # persistence of what was learned (the rejection store)
    def _path(self) -> Path | None:
        return self.state_dir / "team_memory_rejections.json" if self.state_dir else None

    def _load(self) -> None:
        path = self._path()
        if path and path.exists():
            self.rejections = set(json.loads(path.read_text()))

    def _save(self) -> None:
        path = self._path()
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(sorted(self.rejections)))

    def prepare(self, entries: Iterable[Any]) -> list[Any]:
        """Nothing to fit up front (the gate is rule-based): the entries are the items replayed.

        memeval passes what prepare returns to run_pass (not documented; found by a traceback).
        """
        return list(entries)

    def restart(self, wipe_memories: bool = True) -> None:
        if wipe_memories:
            self.memories.clear()

    def _is_ack(self, text: str) -> bool:
        norm = _normalise(text)
        if not norm:
            return True
        if norm in self.rejections:
            return True
        words = norm.split()
        if len(words) <= 6 and all(w in _ACKS or w in _STOP for w in words):
            return True
        if len(words) <= 8 and any(norm.startswith(p) for p in _ACK_PHRASES):
            return True
        return False

    def _decide(self, text: str) -> tuple[str, bool, float | None]:
        if self._is_ack(text):
            if self.learning:
                self.rejections.add(_normalise(text))
            return "prefilter", False, None
        if len(_words(text)) < self.min_words:
            return "length", False, None
        score = _content_score(text)
        if score < self.min_content:
            return "content_score", False, score
        words = _content_words(text)
        if any(_jaccard(words, m) >= self.dedup_jaccard for _, m in self.memories):
            return "dedup", True, score
        return "stored", True, score

    def run_pass(self, items: Iterable[Any], pass_no: int, phase: Any = None) -> Iterator[Decision]:
        for entry in items:
            start = time.perf_counter()
            text = _text_of(entry)
            try:
                outcome, retained, score = self._decide(text)
                if outcome == "stored":
                    self.memories.append((str(entry.id), _content_words(text)))
                error = None
            except Exception as exc:  # a decision we could not make is reported, not hidden
                outcome, retained, score, error = "error", False, None, f"{type(exc).__name__}: {exc}"
            extra: dict[str, Any] = {
                "latency_ms": {"gate": (time.perf_counter() - start) * 1000.0},
            }
            if score is not None:
                extra["score"] = score
                extra["threshold"] = self.min_content
            if error:
                extra["system_error"] = error
            yield Decision(
                pass_no, phase, entry.id, entry.label, entry.label_source, len(text),
                outcome=outcome, retained=retained, **extra,
            )
        self._save()

    def pass_state(self, labels: dict[str, Any]) -> dict[str, Any]:
        stored_labels = Counter(labels.get(mid, "unknown") for mid, _ in self.memories)
        return {
            "memories": len(self.memories),
            "rejection_store_size": len(self.rejections),  # the key the table's "rej. store" reads
            "stored_by_label": dict(stored_labels),
        }


# --------------------------------------------------------------------------------------------
# the system


_NEGATIONS = frozenset("not no never don't doesn't isn't aren't won't can't cannot without avoid".split())
_ANTONYMS = [
    ("enable", "disable"), ("enabled", "disabled"), ("true", "false"), ("on", "off"),
    ("allow", "deny"), ("use", "avoid"), ("add", "remove"), ("increase", "decrease"),
    ("always", "never"), ("sync", "async"), ("required", "optional"), ("works", "fails"),
]
_TEMPORAL = re.compile(
    r"\b(now|currently|no longer|anymore|previously|used to|as of|since|deprecated|"
    r"renamed|migrated|moved to|switched|replaced|upgraded|\d{4}-\d{2}-\d{2}|v?\d+\.\d+(\.\d+)?)\b"
)
_VALUE = re.compile(r"\b\d+(?:\.\d+)?\b")


class TeamMemory:
    name = "team-memory"

    def __init__(self, *, min_words: int = 6, dedup_jaccard: float = 0.8, topic_overlap: float = 0.35,
                 min_content: float = 0.25):
        self.min_words = int(min_words)
        self.min_content = float(min_content)
        self.dedup_jaccard = float(dedup_jaccard)
        self.topic_overlap = float(topic_overlap)
        self.capabilities = frozenset(
            Capability(c)
            for c in ("ingest", "reset_memories", "freeze_learning", "score_records",
                      "detect_conflicts", "search", "feedback")
        )
        self.notes = {
            "gate": f"rules only, no judge: ack prefilter, length < {self.min_words} words, "
                    f"specificity score < {self.min_content}, dedup at word Jaccard >= "
                    f"{self.dedup_jaccard}",
            "search": "TF-IDF cosine over content words, x(0.9 + 0.1*confidence)",
            "trust": "declared confidence, Beta-smoothed by outcome counts, minus conflicts/hedging",
            "conflicts": "typed rules: negation/antonym, temporal markers, differing numbers",
        }
        self._docs: list[tuple[str, Counter, float]] = []
        self._idf: dict[str, float] = {}
        self._feedback: dict[str, list[int]] = {}

    # ingest / reset / freeze
    def ingestor(self, state_dir: Any) -> TeamIngestor:
        return TeamIngestor(state_dir, min_words=self.min_words, dedup_jaccard=self.dedup_jaccard,
                            min_content=self.min_content)

    # score_records
    def score_records(self, records: list[Any]) -> list[float]:
        return [self._trust(r) for r in records]

    def _trust(self, record: Any) -> float:
        conf = getattr(record, "confidence", None)
        if conf is None:
            conf = getattr(record, "declared_confidence", None)
        try:
            conf = float(conf)
        except (TypeError, ValueError):
            conf = 0.5
        if not math.isfinite(conf):
            conf = 0.5
        conf = min(max(conf, 0.0), 1.0)
        # field names found by inspecting a record at runtime: the docs say "outcomes" and "hedging"
        good = int(getattr(record, "success_count", 0) or 0)
        bad = int(getattr(record, "failure_count", 0) or 0)
        # prior worth 4 observations centred on the declared confidence
        p = (4 * conf + good) / (4 + good + bad)
        conflicts = getattr(record, "conflicts", None) or ()
        n_conflicts = conflicts if isinstance(conflicts, int) else len(conflicts)
        p -= 0.08 * min(n_conflicts, 3)
        if getattr(record, "hedged", False):
            p -= 0.1
        if getattr(record, "derived_from", None):
            p -= 0.05
        return float(min(max(p, 0.0), 1.0) * 100.0)

    # detect_conflicts
    def detect_conflict(self, first: Any, second: Any) -> str | None:
        a, b = _text_of(first), _text_of(second)
        wa, wb = _content_words(a), _content_words(b)
        overlap = _jaccard(wa, wb)
        if overlap < self.topic_overlap:
            return None
        la, lb = set(_words(a)), set(_words(b))
        if bool(la & _NEGATIONS) != bool(lb & _NEGATIONS):
            return "contradiction"
        for x, y in _ANTONYMS:
            if (x in la and y in lb) or (y in la and x in lb):
                return "contradiction"
        ta, tb = bool(_TEMPORAL.search(a.lower())), bool(_TEMPORAL.search(b.lower()))
        if ta or tb:
            if set(_VALUE.findall(a)) != set(_VALUE.findall(b)) or ta != tb:
                return "temporal"
        if set(_VALUE.findall(a)) != set(_VALUE.findall(b)) and overlap >= 0.5:
            return "semantic"
        return None

    # search
    def index(self, memories: Iterable[Any]) -> None:
        docs = []
        df: Counter = Counter()
        for m in memories:
            tf = Counter(w for w in _words(m.text) if w not in _STOP)
            docs.append((str(m.id), tf, float(getattr(m, "confidence", 0.5) or 0.5)))
            df.update(tf.keys())
        n = len(docs)
        self._idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}
        self._docs = []
        for mid, tf, conf in docs:
            vec = Counter({w: (1 + math.log(c)) * self._idf[w] for w, c in tf.items()})
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            self._docs.append((mid, Counter({w: v / norm for w, v in vec.items()}), conf))

    def search(self, query: str, k: int) -> list[Hit]:
        tf = Counter(w for w in _words(query) if w not in _STOP and w in self._idf)
        if not tf or k <= 0:
            return []
        q = {w: (1 + math.log(c)) * self._idf[w] for w, c in tf.items()}
        qn = math.sqrt(sum(v * v for v in q.values())) or 1.0
        scored = []
        for mid, vec, conf in self._docs:
            s = sum(v * vec.get(w, 0.0) for w, v in q.items()) / qn
            if s > 0:
                s *= 0.9 + 0.1 * min(max(conf, 0.0), 1.0)
                s *= self._feedback_boost(mid)
                scored.append((s, mid))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [Hit(mid, float(s)) for s, mid in scored[:k]]

    # feedback
    def record_outcome(self, memory_id: str, success: bool) -> None:
        counts = self._feedback.setdefault(str(memory_id), [0, 0])
        counts[0 if success else 1] += 1

    def _feedback_boost(self, memory_id: str) -> float:
        good, bad = self._feedback.get(memory_id, (0, 0))
        return 1.0 + 0.2 * (good - bad) / (good + bad + 1)

    def close(self) -> None:
        self._docs.clear()


def build(min_words: int = 6, dedup_jaccard: float = 0.8, topic_overlap: float = 0.35,
          min_content: float = 0.25) -> TeamMemory:
    """memeval's entry point: system=team_memory:build (settings via +system.settings.NAME=...)."""
    return TeamMemory(min_words=min_words, dedup_jaccard=dedup_jaccard, topic_overlap=topic_overlap,
                      min_content=min_content)
