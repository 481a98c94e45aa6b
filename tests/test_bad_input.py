"""Every kind of bad input at once, through the command a user runs: each bad line is reported
with file and line and skipped, the good rows are all replayed (a byte-order mark and a lone
surrogate included, through every store), and config mistakes exit 2 with the fix before any
work. (The loaders' own tests check each case alone.)"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memeval.paths import data_path
from tests.test_cli import unwrapped

pytestmark = [pytest.mark.bad_input, pytest.mark.slow]

GOOD = [json.loads(line) for line in
        Path(data_path("labeled/write_gate_v1.jsonl")).read_text().splitlines()[:60]]
BAD: list[tuple[bytes, str]] = [
    (b'{"user_prompt": "x", "assistant_response": ', "Expecting value"),
    (b'["a", "list"]', "expected a JSON object"),
    (b'{"user_prompt": "x", "assistant_response": 42, "label": "noise"}', "must be strings"),
    (b'{"user_prompt": "x", "label": "noise"}', "missing field 'assistant_response'"),
    (b'{"user_prompt": "x", "assistant_response": "  \\n ", "label": "noise"}',
     "empty assistant_response"),
    (b'{"user_prompt": "x", "assistant_response": "\xff\xfe broken", "label": "noise"}', "utf-8"),
    (b'{"user_prompt": "x", "assistant_response": "fine text", "label": "great"}',
     "unknown label 'great'"),
    (json.dumps({**GOOD[0]}).encode(), "duplicate id"),
    (b'{"user_prompt": "x", "assistant_response": "y", "label": "noise", "extra": '
     + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
]
HUGE = {"id": "huge", "user_prompt": "dump the log",
        "assistant_response": "The log says: " + "0123456789abcdef " * 200_000,  # 3.4 MB
        "label": "low_value"}


def memeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cwd / "cache"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_file_with_every_kind_of_bad_line_runs_and_reports_each(tmp_path: Path) -> None:
    rows = [{**row, "id": row.get("id", f"g{i}")} for i, row in enumerate(GOOD)]
    # a lone surrogate, escaped in valid JSON: kept as U+FFFD, so the stores can be written
    rows[40]["assistant_response"] += " \ud800"
    lines = [json.dumps(row).encode() for row in rows[:30]]
    lines[0] = codecs.BOM_UTF8 + lines[0]  # the first row survives a byte-order mark
    first_bad = len(lines) + 1
    lines += [bad for bad, _ in BAD] + [json.dumps(HUGE).encode()]
    lines += [json.dumps(row).encode() for row in rows[30:]]
    data = tmp_path / "labels.jsonl"
    data.write_bytes(b"\n".join(lines) + b"\n")

    done = memeval("run", "+experiment=three_pass", "embedder=hashing", "dataset=labeled_jsonl",
                   f"dataset.path={data}", "plots=false", "reporting.phoenix.enabled=false",
                   f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    dataset = json.loads((tmp_path / "run" / "metrics.json").read_text())["dataset"]
    assert dataset["entries"] == len(GOOD) + 1  # every good row and the huge one, truncated
    assert dataset["skipped"] == len(BAD)
    assert dataset["stats"]["truncated"] == 1 and dataset["stats"]["lone_surrogates"] == 1
    for offset, ((_, message), problem) in enumerate(zip(BAD, dataset["problems"], strict=True)):
        assert problem.startswith(f"{data}:{first_bad + offset}: "), problem
        assert message in problem
        assert f"{data}:{first_bad + offset}" in done.stdout + done.stderr  # warned as it ran
    passes = json.loads((tmp_path / "run" / "metrics.json").read_text())["passes"]
    assert [p["entries"] for p in passes] == [len(GOOD) + 1] * 3


@pytest.mark.parametrize(("override", "code", "message"), [
    ("judge.eror_rate=0.1", 2, "did you mean 'judge.error_rate'"),
    ("threshold.polcy=fixed", 2, "did you mean 'threshold.policy'"),
    ("embedder=minilmm", 2, "unknown embedder 'minilmm'; did you mean 'minilm'?"),
    ("dataset.on_error=ignore", 2, "on_error must be one of"),
])
def test_config_mistakes_fail_before_any_work_naming_the_fix(
        tmp_path: Path, override: str, code: int, message: str) -> None:
    done = memeval("run", "+experiment=three_pass", override,
                   f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == code and message in unwrapped(done.stderr), done.stderr[-2000:]
    assert not (tmp_path / "run" / "state").exists()  # nothing was replayed
