"""Reading JSONL the same way everywhere: bad lines are named by file and line, never fatal
unless the user asked for `on_error: raise`.

Two common variants are read as they are: a UTF-8 byte-order mark is skipped, and a file whose
lines end in CR alone is split there (JSON text never holds a raw CR, so no
valid line can be cut). A JSON escape for a lone surrogate (`"\\ud800"`) decodes to text that no
UTF-8 file can hold, so every store writing it would fail later: each is replaced with U+FFFD
and the line counted in `stats["lone_surrogates"]`. A line nested too deeply to parse is one bad
line. A file whose first bytes mark it as UTF-16/32, compressed or parquet is one bad line, not
read further (text found inside it would be garbage); when a file's first line is bad and its
first bytes suggest why (NUL bytes, a JSON array, a pretty-printed document), that problem says so.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from memeval.data.base import DatasetError, LoadReport
from memeval.utils.redact import redact

ON_ERROR = ("skip", "raise")
MAX_CHARS = 32768  # the reference benchmark's cut for a response
HEAD_BYTES = 65536  # how much of a file is read to guess why it is not JSONL
SHOWN_PROBLEMS = 3  # problems listed in the error for a file with nothing usable

# A file that starts with these bytes is not UTF-8 JSONL: what it likely is, and the fix.
SIGNATURES = (
    (b"\xff\xfe\x00\x00", "wrong encoding: a UTF-32 byte-order mark; save the file as UTF-8"),
    (b"\x00\x00\xfe\xff", "wrong encoding: a UTF-32 byte-order mark; save the file as UTF-8"),
    (b"\xff\xfe", "wrong encoding: a UTF-16 byte-order mark; save the file as UTF-8"),
    (b"\xfe\xff", "wrong encoding: a UTF-16 byte-order mark; save the file as UTF-8"),
    (b"\x1f\x8b", "compressed: gzip magic bytes; decompress it first (gunzip FILE)"),
    (b"PK\x03\x04", "compressed: zip magic bytes; extract it first (unzip FILE)"),
    (b"BZh", "compressed: bzip2 magic bytes; decompress it first (bunzip2 FILE)"),
    (b"\xfd7zXZ\x00", "compressed: xz magic bytes; decompress it first (unxz FILE)"),
    (b"\x28\xb5\x2f\xfd", "compressed: zstd magic bytes; decompress it first (unzstd FILE)"),
    (b"PAR1", "a parquet file, not JSONL"),
)
SURROGATE = re.compile("[\ud800-\udfff]")
J = TypeVar("J")


def check_read_settings(on_error: str, limit: int | None = None,
                        max_chars: int = MAX_CHARS) -> None:
    """The settings every JSONL loader shares, refused the same way in each."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got '{on_error}'")
    if limit is not None and limit <= 0:
        raise ValueError("limit must be positive")
    if max_chars < 1:
        raise ValueError("max_chars must be positive")


def note_problem(report: LoadReport, file: Path, number: int, reason: str,
                 on_error: str) -> None:
    """A bad line: skipped and counted (`LoadReport.skip`), or the error under `on_error:
    raise` (redacted: a reason quotes the bad line, an id or a label)."""
    note_at(report, f"{file}:{number}", reason, on_error)


def note_at(report: LoadReport, where: str, reason: str, on_error: str,
            mended: bool = False) -> None:
    """A problem named by a place that is not a line (`file: sample 3`), handled as
    note_problem handles a bad line; `mended`: the record is kept without the part `reason`
    names (`LoadReport.mend`)."""
    if on_error == "raise":
        raise DatasetError(redact(f"{where}: {reason}"))
    (report.mend if mended else report.skip)(where, reason)


def nothing_usable(message: str, report: LoadReport) -> DatasetError:
    """The error for a source that yielded nothing: `message`, then its first problems (each
    names its file:line; a file's bad first line also names the likely cause)."""
    shown = [f"  {p[:300]}" for p in report.problems[:SHOWN_PROBLEMS]]
    if report.skipped > SHOWN_PROBLEMS:
        shown.append(f"  … and {report.skipped - SHOWN_PROBLEMS} more")
    return DatasetError("\n".join([message, *shown]))


def signature(head: bytes) -> str | None:
    """What a file starting with `head` is when its first bytes say it is not UTF-8 JSONL."""
    return next((cause for magic, cause in SIGNATURES if head.startswith(magic)), None)


def likely_cause(head: bytes) -> str | None:
    """Why a file starting with `head`, whose first line is bad, is probably not JSONL."""
    if b"\x00" in head:
        return ("wrong encoding or not text: NUL bytes (UTF-16/32 without a byte-order mark, "
                "or a binary file); save it as UTF-8 JSONL")
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return "not JSONL: a JSON array; write one object per line (jq -c '.[]' FILE)"
    if text.split(b"\n", 1)[0].strip() == b"{":
        return "not JSONL: one JSON document over several lines; write one object per line"
    if len(head) == HEAD_BYTES and not re.search(b"[\r\n]", head):
        return f"not JSONL: no line break in the first {HEAD_BYTES // 1024} KiB"
    return None


def replace_surrogates(value: J) -> tuple[J, int]:
    """`value` (text, or parsed JSON) with each lone surrogate in its strings and keys replaced
    by U+FFFD, and how many there were. Walked without recursion: depth costs no stack."""
    count = 0

    def fix(text: str) -> str:
        nonlocal count
        fixed, n = SURROGATE.subn("\ufffd", text)
        count += n
        return fixed

    box = [value]  # the walk replaces items in their container, so the root needs one
    stack: list[Any] = [box]
    while stack:
        node = stack.pop()
        pairs: list[tuple[Any, Any]]
        if isinstance(node, dict):
            pairs = [(fix(key), item) for key, item in node.items()]
            node.clear()
        else:
            pairs = list(enumerate(node))
        for key, item in pairs:
            if isinstance(item, str):
                item = fix(item)
            elif isinstance(item, list | dict):
                stack.append(item)
            node[key] = item
    return box[0], count


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"))  # JSONDecodeError is a ValueError
    except RecursionError:
        raise ValueError("JSON nested too deeply to read (about 1,000 levels of [ or {)") from None
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _lines(handle: BinaryIO, cr_only: bool) -> Iterator[bytes]:
    """The file's lines; a file whose lines end in CR alone is split at each CR."""
    if not cr_only:
        yield from handle
        return
    for line in io.TextIOWrapper(handle, encoding="latin-1", newline=None):
        yield line.encode("latin-1")  # latin-1 maps bytes to characters one to one


def read_objects(file: Path, report: LoadReport,
                 on_error: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line that is a UTF-8 JSON object; other lines
    are counted in `report.rows_read` and reported."""
    with file.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
        if (what := signature(head)) is not None:  # text found inside it would be garbage
            report.rows_read += 1
            note_problem(report, file, 1, f"not read: {what}", on_error)
            return
        handle.seek(0)
        first = True
        for number, raw in enumerate(_lines(handle, b"\r" in head and b"\n" not in head),
                                     start=1):
            raw = raw.removeprefix(codecs.BOM_UTF8)
            if not raw.strip():
                continue
            report.rows_read += 1
            try:
                value = _parse(raw)
            except ValueError as err:  # UnicodeDecodeError and JSONDecodeError are ones
                cause = likely_cause(head) if first else None
                first = False
                reason = f"{err}; likely cause: {cause}" if cause else str(err)
                note_problem(report, file, number, reason, on_error)
                continue
            first = False
            if b"\\ud" in raw or b"\\uD" in raw:  # maybe an escaped lone surrogate
                value, replaced = replace_surrogates(value)
                if replaced:
                    report.stats["lone_surrogates"] = report.stats.get("lone_surrogates", 0) + 1
            yield number, value


@dataclass(frozen=True)
class SetKind:
    """One kind of labelled JSONL file: what it holds, the setting naming it, what a line needs
    and, when it differs from `what`, what its file is called."""

    what: str
    setting: str
    needs: str
    file: str = ""


L = TypeVar("L")


def load_rows(path: Path, kind: SetKind, parse: Callable[[dict[str, Any], int], L],
              key: Callable[[L], str], on_error: str, report: LoadReport | None = None,
              limit: int | None = None,
              accept: Callable[[L], L] | None = None) -> tuple[list[L], LoadReport]:
    """Every usable item of the labelled JSONL file at `path` (the first `limit`), each parsed
    from a line's object and its line number, ids unique, then passed through `accept` (e.g. to
    cut and count an over-long text: only what is kept). A bad line is reported by file and line
    (`note_problem`); nothing usable is an error under either `on_error`, since every figure
    computed on it would be empty or undefined. One loader for every labelled kind."""
    if not path.is_file():
        raise DatasetError(f"{kind.file or kind.what} file not found: {path} "
                           f"(set {kind.setting}=FILE)")
    report = report if report is not None else LoadReport(source=str(path))
    items: list[L] = []
    seen: set[str] = set()
    for number, row in read_objects(path, report, on_error):
        try:
            item = parse(row, number)
        except (KeyError, TypeError, ValueError) as err:
            reason = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            note_problem(report, path, number, reason, on_error)
            continue
        if key(item) in seen:
            note_problem(report, path, number, f"duplicate id '{key(item)}'", on_error)
            continue
        seen.add(key(item))
        items.append(accept(item) if accept is not None else item)
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise nothing_usable(
            f"{path}: no usable {kind.what} ({report.rows_read} lines read, {report.skipped} "
            f"bad); each line needs {kind.needs}: is {kind.setting} the right file?", report)
    return items, report
