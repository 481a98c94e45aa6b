"""Where redaction fires on the bundled corpora, so that every hit can be checked by hand.

`python -m memeval redaction-scan` prints, per corpus, the distinct texts scanned (prompts and
responses as the loaders give them to the gate), how many of them redaction changed, and the
classes that fired; `--show` adds each hit in context. The false-positive rates in
docs/operations.md come from reading every hit this lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memeval.data.base import Dataset
from memeval.data.claude_code import load_claude_code
from memeval.data.hf_traces import HfTracesConfig, load_hf_traces
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.paths import data_path
from memeval.utils.redact import DEFAULT_REDACTOR

CORPORA: dict[str, Callable[[], list[Dataset]]] = {
    "labelled": lambda: [load_labeled_jsonl(data_path(f"labeled/{name}.jsonl"))
                         for name in ("write_gate_v1", "write_gate_heldout_v1")],
    "trace sample": lambda: [load_hf_traces(HfTracesConfig(
        path=data_path("traces/trace_sample_v1.jsonl")))],
    "claude code": lambda: [load_claude_code(data_path("claude_code/vsla"))],
}
FIELDS = ("user_prompt", "assistant_response")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


@dataclass(frozen=True)
class Hit:
    """A text redaction changed: where it first occurs, the classes found, the redacted text."""

    entry_id: str
    field: str
    counts: dict[str, int]
    redacted: str

    def contexts(self, chars: int = 80) -> list[str]:
        return [self.redacted[max(0, m.start() - chars) : m.end() + chars]
                for m in _MARKER.finditer(self.redacted)]


def distinct_texts(datasets: Sequence[Dataset]) -> dict[str, tuple[str, str]]:
    """Each distinct non-blank text → (entry id, field) where it first occurs: a Claude Code
    prompt is repeated on every text block answering it, and is scanned once."""
    texts: dict[str, tuple[str, str]] = {}
    for dataset in datasets:
        for entry in dataset.entries:
            for field in FIELDS:
                text = getattr(entry, field)
                if text.strip():
                    texts.setdefault(text, (entry.id, field))
    return texts


def scan(datasets: Sequence[Dataset]) -> tuple[int, list[Hit]]:
    """Texts scanned, and the hits among them."""
    texts = distinct_texts(datasets)
    hits = []
    for text, (entry_id, field) in texts.items():
        redacted, counts = DEFAULT_REDACTOR.redact_with_counts(text)
        if counts:
            hits.append(Hit(entry_id, field, counts, redacted))
    return len(texts), hits
