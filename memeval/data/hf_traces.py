"""The Hugging Face Claude Code trace corpus (`nlile/misc-merged-claude-code-traces-v1`), or any
local export of it (parquet or JSONL, a file or a folder), read with `datasets`.

Rows become unlabelled entries. Empty responses are filtered and counted; `user_prompt` values
that are JSON arrays of content blocks become their text; responses longer than `max_chars`
(default 32 KiB, as the reference benchmark) are truncated and counted. With `use_messages`, the
pair comes from `messages_json` (last real user text, last assistant text) instead of the flat
columns. Lone surrogates decoded from JSON escapes become U+FFFD, counted in
`lone_surrogates`, as the JSONL loaders do. An unreachable hub fails within seconds, saying how
to use a local copy.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memeval.data.base import DATASETS, Dataset, DatasetError, LoadReport
from memeval.data.jsonl import nothing_usable, read_objects, replace_surrogates
from memeval.entry import Entry
from memeval.registry import bounded

DEFAULT_REPO = "nlile/misc-merged-claude-code-traces-v1"
DEFAULT_COLUMNS = {"id": "id", "user_prompt": "user_prompt",
                   "assistant_response": "assistant_response", "model": "model",
                   "timestamp": "timestamp", "messages": "messages_json"}
LOCAL_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}
TRUTHY = {"1", "true", "yes", "on"}


@dataclass
class HfTracesConfig:
    repo: str = DEFAULT_REPO
    revision: str | None = None
    split: str = "train"
    path: str | None = None
    streaming: bool = False
    columns: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_COLUMNS))
    use_messages: bool = False
    max_chars: int = bounded(32768, 1)
    keep_empty: bool = False
    limit: int | None = bounded(None, 1)
    hub_timeout_s: float = bounded(5.0, above=0)

    def validate(self) -> None:
        missing = set(DEFAULT_COLUMNS) - set(self.columns)
        if missing:
            raise ValueError(f"columns must map {sorted(missing)} too")
        if self.max_chars < 1:
            raise ValueError("max_chars must be positive")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be positive")


def _offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in TRUTHY
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _hub_help(repo: str, err: BaseException) -> DatasetError:
    return DatasetError(
        f"cannot load '{repo}' from the Hugging Face hub ({type(err).__name__}: {err}). "
        "Use a local copy instead: dataset.path=/path/to/export.parquet (or .jsonl, or a folder "
        "of parquet/JSONL shards; in a mixed dataset, dataset.corpus_path=…), or download it "
        "once where the hub is reachable and run with HF_DATASETS_OFFLINE=1 to read the "
        "existing datasets cache."
    )


def _local_files(path: Path) -> tuple[str, list[str]]:
    files = sorted(p for p in path.rglob("*") if p.suffix in LOCAL_BUILDERS) if path.is_dir() \
        else [path]
    if not files or not path.exists():
        raise DatasetError(f"no parquet or JSONL trace files at {path} (dataset.path=…)")
    builders = {LOCAL_BUILDERS.get(p.suffix) for p in files}
    if len(builders) != 1 or None in builders:
        raise DatasetError(f"{path}: expected only .parquet or only .jsonl files, "
                           f"found {sorted(p.suffix for p in files)}")
    return str(builders.pop()), [str(p) for p in files]


def _jsonl_rows(files: list[str], report: LoadReport) -> Iterator[Mapping[str, Any]]:
    """JSONL exports line by line: a broken line is reported as file:line and skipped, where
    the datasets JSON builder would abort the whole load."""
    for file in files:
        for _, row in read_objects(Path(file), report, on_error="skip"):
            yield row


def _counted(rows: Iterable[Mapping[str, Any]],
             report: LoadReport) -> Iterator[Mapping[str, Any]]:
    for row in rows:
        report.rows_read += 1
        yield row


def _rows(cfg: HfTracesConfig, report: LoadReport) -> Iterable[Mapping[str, Any]]:
    """Rows of the configured source; `report.rows_read` counts them as they are read."""
    from datasets import load_dataset

    if cfg.path:
        builder, files = _local_files(Path(cfg.path).expanduser())
        if all(f.endswith(".jsonl") for f in files):
            return _jsonl_rows(files, report)
        try:
            return _counted(load_dataset(builder, data_files=files, split="train",
                                         streaming=cfg.streaming), report)
        except Exception as err:  # any reader failure: name the file
            raise DatasetError(f"cannot read {cfg.path} as {builder}: {err}") from err
    if not _offline():
        from huggingface_hub import HfApi

        try:
            HfApi().dataset_info(cfg.repo, revision=cfg.revision, timeout=cfg.hub_timeout_s)
        except Exception as err:  # unreachable, unknown or private: the same advice
            raise _hub_help(cfg.repo, err) from err
    try:
        return _counted(load_dataset(cfg.repo, revision=cfg.revision, split=cfg.split,
                                     streaming=cfg.streaming), report)
    except Exception as err:  # e.g. OfflineModeIsEnabled with no cached copy
        raise _hub_help(cfg.repo, err) from err


def block_text(content: Any) -> str:
    """Text of a message content: a string, or the `text` blocks of an Anthropic block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def prompt_text(raw: Any, stats: Counter[str]) -> str:
    """Some corpus prompts are JSON arrays of content blocks serialised as a string."""
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            blocks = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        if isinstance(blocks, list):
            stats["json_array_prompts"] += 1
            return block_text(blocks)
    return raw if isinstance(raw, str) else ""


def from_messages(raw: Any) -> tuple[str, str]:
    """(last real user text, the reply's text) of a `messages_json` conversation. The reply is
    the FINAL message when it is the assistant's; a conversation that ends on the user's turn
    has an empty response (an earlier reply is history, not this row's answer)."""
    messages = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(messages, list):
        raise ValueError("messages_json is not a list")
    turns = [m for m in messages if isinstance(m, dict)]
    reply = ""
    if turns and turns[-1].get("role") == "assistant":
        reply = block_text(turns.pop().get("content"))
    user = next((text for m in reversed(turns) if m.get("role") == "user"
                 and (text := block_text(m.get("content"))).strip()), "")
    return user, reply


def load_hf_traces(cfg: HfTracesConfig) -> Dataset:
    source = cfg.path or f"hf://{cfg.repo}@{cfg.revision or 'main'}:{cfg.split}"
    report = LoadReport(source=source)
    stats: Counter[str] = Counter()
    entries: list[Entry] = []
    col = cfg.columns
    for number, row in enumerate(_rows(cfg, report), start=1):
        try:
            if cfg.use_messages:
                prompt, response = from_messages(row.get(col["messages"]))
            else:
                prompt = prompt_text(row.get(col["user_prompt"]), stats)
                response = row.get(col["assistant_response"]) or ""
            if not isinstance(response, str):
                raise ValueError(f"{col['assistant_response']} is {type(response).__name__}")
        except (ValueError, TypeError) as err:
            report.skip(f"{source}: row {number}", str(err))
            continue
        except RecursionError:
            report.skip(f"{source}: row {number}", "JSON nested too deeply to read")
            continue
        texts, replaced = replace_surrogates([prompt, response])
        prompt, response = texts
        if replaced:  # decoded from JSON escapes: no UTF-8 store could write them
            report.stats["lone_surrogates"] = report.stats.get("lone_surrogates", 0) + 1
        if not response.strip() and not cfg.keep_empty:
            stats["empty_responses"] += 1
            continue
        if len(response) > cfg.max_chars:
            stats["truncated"] += 1
            response = response[: cfg.max_chars]
        entries.append(Entry(
            id=f"hf:{row.get(col['id'], number)}", user_prompt=prompt,
            assistant_response=response,
            meta={"model": row.get(col["model"]), "timestamp": str(row.get(col["timestamp"])),
                  "source": source, "row": number},
        ))
        if cfg.limit is not None and len(entries) >= cfg.limit:
            break
    report.stats.update(stats)
    if not entries:
        raise nothing_usable(f"{source}: no usable rows ({report.rows_read} read, "
                             f"{stats['empty_responses']} empty, {report.skipped} bad)", report)
    return Dataset(name=Path(cfg.path).stem if cfg.path else cfg.repo, entries=entries,
                   report=report)


@DATASETS.register("hf_traces", HfTracesConfig)
def build_hf_traces(cfg: HfTracesConfig, **_: object) -> Dataset:
    return load_hf_traces(cfg)
