"""What a run keeps for Phoenix in RUN_DIR/phoenix/: its spans and its labelled entries, redacted.

Written at the end of every run that replays traces, before any export is tried, so a run's
Phoenix view can always be rebuilt from its directory (`python -m memeval phoenix push`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from omegaconf import DictConfig

from memeval.entry import Entry
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.spans import RunInfo, run_spans, search_spans
from memeval.results.run_dir import read_decisions, read_table
from memeval.utils.atomic import write_atomic

PHOENIX_DIR = "phoenix"
SPANS = "spans.jsonl"
EXAMPLES = "examples.jsonl"
SEARCHES = "retrieval_queries"  # a retrieval replay's per-search table


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def passes_by_arm(metrics: Mapping[str, Any]) -> dict[str, Sequence[Mapping[str, Any]]]:
    return dict(metrics.get("arms") or {"main": metrics.get("passes", [])})


def judge_provider(judge: Mapping[str, Any]) -> str | None:
    """OpenInference's `llm.provider` of an HTTP judge, which Phoenix uses to pick the model
    prices it computes a call's cost from; None for a local judge or an unknown host."""
    if judge.get("name") == "anthropic":
        return "anthropic"
    host = urlparse(str(judge.get("base_url") or "")).hostname or ""
    return "openai" if host == "api.openai.com" else None


def run_info(metrics: Mapping[str, Any], cfg: DictConfig, text_chars: int) -> RunInfo:
    judge = cfg.judge
    return RunInfo(run_id=str(metrics["run_id"]), experiment=str(metrics["experiment"]),
                   stage_order=tuple(cfg.gate.order),
                   embedder=str(metrics.get("embedder", {}).get("identity", cfg.embedder.name)),
                   judge_model=str(judge.get("model") or judge.name), text_chars=text_chars,
                   judge_provider=judge_provider(judge))


def examples(entries: Sequence[Entry], redact: Callable[[str], str],
             chars: int) -> list[dict[str, Any]]:
    """Entries as Phoenix sees them: texts redacted, then cut to `chars`."""
    return [{"id": e.id, "user_prompt": redact(e.user_prompt)[:chars],
             "assistant_response": redact(e.assistant_response)[:chars],
             "label": e.label, "label_source": e.label_source} for e in entries]


def write_phoenix_files(run_dir: Path, entries: Sequence[Entry], metrics: Mapping[str, Any],
                        cfg: DictConfig, settings: PhoenixConfig,
                        redact: Callable[[str], str]) -> Path | None:
    """Redacted examples and every span of the run, each file written atomically; None (and
    nothing written) when the run has no spans: it replayed nothing and searched nothing."""
    out = run_dir / PHOENIX_DIR
    rows = examples(entries, redact, settings.text_chars)
    texts = {str(row["id"]): row for row in rows}
    info = run_info(metrics, cfg, settings.text_chars)
    spans = _jsonl(chain(_decision_spans(run_dir, info, texts, metrics),
                         _search_spans(run_dir, info, texts)))
    if not spans:
        return None
    out.mkdir(exist_ok=True)
    write_atomic(out / EXAMPLES, _jsonl(rows))
    write_atomic(out / SPANS, spans)
    return out


def _decision_spans(run_dir: Path, info: RunInfo, texts: Mapping[str, Mapping[str, Any]],
                    metrics: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    decisions = read_decisions(run_dir)
    if not decisions.empty:
        yield from run_spans(info, decisions, texts, passes_by_arm(metrics))


def _search_spans(run_dir: Path, info: RunInfo,
                  texts: Mapping[str, Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    if (run_dir / f"{SEARCHES}.parquet").is_file():
        yield from search_spans(info, read_table(run_dir, SEARCHES), texts)
