"""The registered kinds of run input, options of the one `dataset` config group: labelled entries
to gate (`DATASETS`, a `Dataset`) or a memory corpus of memories and labelled queries to search
(`CORPORA`, a `MemoryCorpus`, data/memory_corpus.py). Choosing an option says which kind it is,
so no reader narrows a union. The third kind, the labelled quality sets an experiment names
(data/quality_sets.py), is read by the same loader (data/jsonl.py's `load_rows`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass, replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

from omegaconf import DictConfig

from memeval.entry import Entry
from memeval.registry import Chosen, ConfigError, Registration, Registry, did_you_mean
from memeval.utils.problems import Problems
from memeval.utils.redact import redact


class DatasetError(ValueError):
    """A dataset that cannot be used as configured."""


@dataclass
class LoadReport:
    """What a loader skipped and why, so nothing is lost silently: every skipped record counted,
    the first few of each kind of problem kept (`Problems`), however many there are."""

    source: str
    rows_read: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    found: Problems = field(default_factory=Problems)
    mended: Problems = field(default_factory=Problems)  # records kept with a part dropped

    def skip(self, where: str, reason: str) -> None:
        """One record skipped at `where` (`FILE:LINE`, `FILE: sample 3`) for `reason`."""
        self.found.add(where, reason)

    def mend(self, where: str, reason: str) -> None:
        """One record kept at `where` with a part of it dropped: `reason` says which, and that
        the record was kept (a question's unknown evidence id)."""
        self.mended.add(where, reason)

    @property
    def skipped(self) -> int:
        return self.found.count

    @property
    def problems(self) -> list[str]:
        """Redacted (they quote the bad records): the first of each kind, then how many of
        each kind there were where more than those; the skipped records' before the mended."""
        return [*self.found.lines(), *self.mended.lines()]

    def told(self) -> list[str]:
        """The problems as a run warns of them: a skipped record's as skipped, a mended one's
        as its reason says."""
        return [*(f"skipped {line}" for line in self.found.lines()), *self.mended.lines()]


@dataclass
class Dataset:
    name: str
    entries: list[Entry]
    report: LoadReport
    # how `redacted_names` named its entries: a file naming them too (labelled queries) is read
    # with it, so its references still hold
    names: RedactedNames | None = field(default=None, repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.entries)

    def sizes(self) -> dict[str, int]:
        return {"entries": len(self.entries)}


@dataclass(frozen=True)
class CorpusMemory:
    """A memory of a memory corpus (retrieval replay), with what a replay in time order and a
    reader of the results need."""

    id: str
    text: str
    timestamp: datetime | None = None  # when it was written: a replay in time order needs it
    session: str | None = None
    source: str | None = None  # where it came from (an entry, a dialogue turn, a file)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CorpusQuery:
    id: str
    text: str
    relevant: Mapping[str, int]  # memory id -> grade (memory_corpus.GRADES)
    asked_at: datetime | None = None
    category: str = ""  # reported per category (a benchmark's question type)
    scope: tuple[str, ...] | None = None  # the memory ids it searches; None: all of them
    answer: str | None = None  # the gold answer, where the benchmark gives one (memory QA)
    # the right answer is that the memories do not say (LoCoMo's adversarial questions)
    unanswerable: bool = False

    @property
    def answerable(self) -> bool:
        """Memory QA can score it: a gold answer, or none to be given."""
        return self.answer is not None or self.unanswerable


@dataclass
class MemoryCorpus:
    name: str
    memories: list[CorpusMemory]
    queries: list[CorpusQuery]
    report: LoadReport

    @property
    def fingerprint(self) -> str:
        """Content hash over memories and queries: two runs compare only on equal ones."""
        digest = hashlib.sha256()
        for m in self.memories:
            digest.update(json.dumps(["m", m.id, m.text, _iso(m.timestamp)],
                                     ensure_ascii=False).encode())
        for q in self.queries:
            gold = [q.answer, q.unanswerable] if q.answerable else []  # older corpora: as was
            digest.update(json.dumps(["q", q.id, q.text, sorted(q.relevant.items()),
                                      _iso(q.asked_at), q.category, q.scope, *gold],
                                     ensure_ascii=False).encode())
        return digest.hexdigest()[:16]

    def sizes(self) -> dict[str, int]:
        return {"memories": len(self.memories), "queries": len(self.queries)}


class Loaded(Protocol):
    """Either kind of input as a run's header describes it."""

    name: str
    report: LoadReport

    @property
    def fingerprint(self) -> str: ...

    def sizes(self) -> dict[str, int]: ...


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


class RedactedNames:
    """Names from the input (ids, sessions, sources) redacted one to one, as ids must be: a name
    without a secret is kept byte for byte; one with a secret becomes its redaction and `#N`
    (`[REDACTED:github_token]#1`), N counting such names in the order met and skipping any name
    the input holds, so two names that redact alike stay apart and a name maps alike wherever it
    occurs (a memory's id in a query's relevant ids). N is not a hash of the name: a hash would
    let anyone holding the results test guesses of the secret."""

    def __init__(self, names: Iterable[str]) -> None:
        self._taken = set(names)  # every name of the input: a numbered one never equals one
        self._mapped: dict[str, str] = {}
        self._numbered = 0

    def __call__(self, name: str) -> str:
        mapped = self._mapped.get(name)
        if mapped is None:
            mapped = redact(name)
            if mapped != name:
                mapped = self._numbered_name(mapped)
            self._mapped[name] = mapped
        return mapped

    def _numbered_name(self, redacted: str) -> str:
        while True:
            self._numbered += 1
            numbered = f"{redacted}#{self._numbered}"
            if numbered not in self._taken:
                return numbered


def redacted_names(dataset: Dataset) -> Dataset:
    """The dataset with entry ids (one to one, `RedactedNames`, kept as its `names`), label
    sources, its name and its load report redacted like its texts: they reach metrics, stores,
    span attributes, the console and systems under test."""
    names = RedactedNames(e.id for e in dataset.entries)
    entries = []
    for e in dataset.entries:
        entry_id = names(e.id)
        source = None if e.label_source is None else redact(e.label_source)
        changed = (entry_id, source) != (e.id, e.label_source)
        entries.append(replace(e, id=entry_id, label_source=source) if changed else e)
    return Dataset(name=redact(dataset.name), entries=entries,
                   report=redacted_report(dataset.report), names=names)


V = TypeVar("V")
Rule = Callable[[str], str]  # how a string is served: a name's mapping, or `redact` for a text


def redacted_value(value: V, names: Rule, by_field: Mapping[str, Rule] | None = None) -> V:
    """`value` with every string in it, mapping keys included, passed through `names` (a
    `RedactedNames`), except in a dataclass field named in `by_field` (at any depth), whose
    strings pass through the rule given there: `redact` for a text, another input's names for
    ids referring to it. A field not named there is a name, so a new field is redacted, never
    left out. What holds no secret comes back as the same object: clean input is served
    unchanged, and uncopied."""
    walked: Any = value
    if isinstance(value, str):
        mapped = names(value)
        walked = value if mapped == value else mapped
    elif value is None or isinstance(value, int | float | datetime):
        pass  # nothing to redact, and the commonest leaves: no further checks
    elif isinstance(value, list | tuple):
        items = [redacted_value(item, names, by_field) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            walked = tuple(items) if isinstance(value, tuple) else items
    elif (field_names := _field_names(type(value))) is not None:
        rules = by_field or {}
        changed = {}
        for name in field_names:
            old = getattr(value, name)
            new = redacted_value(old, rules.get(name, names), by_field)
            if new is not old:
                changed[name] = new
        if changed:
            walked = replace(walked, **changed)
    elif isinstance(value, Mapping):
        pairs = [(redacted_value(key, names, by_field), redacted_value(item, names, by_field))
                 for key, item in value.items()]
        if any(k is not key or i is not item
               for (k, i), (key, item) in zip(pairs, value.items(), strict=True)):
            walked = dict(pairs)
    return walked


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(kind: type) -> tuple[str, ...] | None:
    """A dataclass's field names (looked up once per class: every item is walked), else None."""
    if kind not in _FIELD_NAMES:
        _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind)) if is_dataclass(kind) else None
    return _FIELD_NAMES[kind]


def names_held(values: Iterable[Any], not_names: Iterable[str] = ()) -> RedactedNames:
    """One `RedactedNames` for `values`, knowing every name they hold: each string
    `redacted_value` maps as a name, outside the fields named in `not_names` (texts, and ids
    of another input)."""
    held: set[str] = set()

    def hold(name: str) -> str:
        held.add(name)
        return name

    skipped = dict.fromkeys(not_names, str)  # str(text) is the text itself: nothing is held
    for value in values:
        redacted_value(value, hold, skipped)
    return RedactedNames(held)


def redacted_report(report: LoadReport) -> LoadReport:
    """The report with its source and its counts' names (`queries:<category>`) redacted (its
    problems, which quote the bad lines, are redacted as they are kept)."""
    stats: dict[str, int] = {}
    for key, n in report.stats.items():
        clean = redact(key)
        stats[clean] = stats.get(clean, 0) + n
    return replace(report, source=redact(report.source), stats=stats)


def fingerprint(entries: Sequence[Entry]) -> str:
    """Content hash over ids, texts and labels: two runs compare only on equal fingerprints."""
    digest = hashlib.sha256()
    for e in entries:
        row = [e.id, e.user_prompt, e.assistant_response, e.label]
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


ENTRIES, CORPUS = "entries", "corpus"

DATASETS: Registry[Dataset] = Registry("dataset")  # labelled entries, for the write gate
CORPORA: Registry[MemoryCorpus] = Registry("dataset")  # memories and queries, for search


@dataclass(frozen=True)
class ChosenInput:
    """The `dataset` option chosen: its kind (ENTRIES or CORPUS) and its validated settings."""

    kind: str
    chosen: Chosen

    @property
    def name(self) -> str:
        return self.chosen.name

    @property
    def gold_answers(self) -> bool:
        """Whether its queries can carry gold answers: a corpus's settings say they cannot with
        `gold_answers: ClassVar[bool] = False` (memory_jsonl)."""
        return self.kind == CORPUS and getattr(self.chosen.params, "gold_answers", True)


class Inputs:
    """The `dataset` config group: every option names a component of one kind's registry."""

    kind = "dataset"

    def __init__(self, kinds: Mapping[str, Registry[Any]]) -> None:
        self.kinds = kinds

    def names(self) -> list[str]:
        return sorted(name for registry in self.kinds.values() for name in registry.names())

    def of(self, name: str) -> tuple[str, Registry[Any]]:
        """The kind registering `name`, and its registry."""
        for kind, registry in self.kinds.items():
            if name in registry.names():
                return kind, registry
        raise ConfigError(f"unknown dataset '{name}'{did_you_mean(name, self.names())} "
                          f"(known: {', '.join(self.names())})")

    def get(self, name: str) -> Registration[Any]:
        return self.of(name)[1].get(name)

    def choose(self, node: Mapping[str, Any] | DictConfig, key: str | None = None
               ) -> ChosenInput:
        if "name" not in node:
            raise ConfigError(f"dataset config needs a 'name' key (known: {self.names()})")
        kind, registry = self.of(str(node["name"]))
        return ChosenInput(kind, registry.choose(node, key))


INPUTS = Inputs({ENTRIES: DATASETS, CORPUS: CORPORA})
