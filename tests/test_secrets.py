"""Planted secrets never reach anything a run writes: stores, decisions, metrics, memories,
and, run through the real CLI, caches, logs, reports and the HTTP servers it talks to."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import sqlite3
import string
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import DictConfig

from memeval.runner import run_experiment
from tests.loopback import LoopbackServer, Received, Reply

ROOT = Path(__file__).resolve().parents[1]

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
EMAIL = "jane.roe@example-corp.io"
DB_PASSWORD = "s3cretPassw0rdZ"


def test_no_planted_secret_is_written_anywhere(tmp_path: Path,
                                               fast_config: Callable[..., DictConfig]) -> None:
    leaky = {
        "noise": f"Running the deploy now with token {GITHUB_TOKEN}, will report back to {EMAIL}.",
        "substantive": ("Root cause: the worker reads DATABASE_URL=postgres://app:"
                        f"{DB_PASSWORD}@db.internal:5432/orders and the pool size is 5 in "
                        "`config/db.py`, so the sixth Celery worker blocks; raised it to 20."),
    }
    rows = [{"user_prompt": f"status? mail {EMAIL}", "assistant_response": text, "label": label}
            for label, text in leaky.items()]
    rows += [{"user_prompt": "ok", "assistant_response": f"Done. Step {i} finished without "
              "problems, moving on to the next part of the checklist now.", "label": "noise"}
             for i in range(12)]
    data = tmp_path / "leaky.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    run_experiment(fast_config("+experiment=three_pass", "dataset=labeled_jsonl",
                               f"dataset.path={data}", "plots=false"), run)

    written = [p for p in run.rglob("*") if p.is_file()]
    assert any(p.name == "rejection_store.jsonl" for p in written)
    stores = "".join((run / "state" / f).read_text() for f in
                     ("rejection_store.jsonl", "accept_store.jsonl"))
    assert "[REDACTED:" in stores  # the stores did receive the planted texts, redacted
    for path in written:
        content = path.read_bytes()
        for secret in (GITHUB_TOKEN, EMAIL, DB_PASSWORD):
            assert secret.encode() not in content, f"{secret[:6]}… leaked into {path}"


# --- the real CLI, end to end, with HTTP embedder and judge on loopback ----------------------

_rng = random.Random(4242)
_ALNUM = string.ascii_letters + string.digits


def _fake(n: int, alphabet: str = _ALNUM) -> str:
    """A random run ending in a digit, as real keys have; built here, so no literal is in git."""
    return "".join(_rng.choice(alphabet) for _ in range(n - 1)) + "7"


def _b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


PEM_LINES = [_fake(64, _ALNUM + "+/") for _ in range(4)]
PLANTED: dict[str, str] = {
    "github_token": "ghp_" + _fake(36),
    "aws_access_key_id": "AKIA" + _fake(16, string.ascii_uppercase + string.digits),
    "anthropic_key": "sk-ant-api03-" + _fake(90, _ALNUM + "-_"),
    "authorization_header": "FAKEbearer" + _fake(30),
    "uri_credentials": "dbPw-" + _fake(14),
    "pem_private_key": PEM_LINES[1],
    "email": f"ops.{_fake(6).lower()}+alerts@mail.example-corp.io",
    "jwt": ".".join((_b64url({"alg": "HS256", "typ": "JWT"}),
                     _b64url({"sub": "fake-" + _fake(8)}), _fake(43, _ALNUM + "-_"))),
}
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES, "-----END RSA PRIVATE KEY-----"])


def _leaky_rows() -> list[dict[str, str]]:
    """Every planted secret in noise (→ rejection store) and substantive (→ judge, memory) rows."""
    p = PLANTED
    substantive = [
        ("why does the orders worker hang?",
         "Root cause: the worker reads DATABASE_URL=postgres://orders:"
         f"{p['uri_credentials']}@db.internal:5432/orders and the pool size is 5 in "
         "`config/db.py`, so the sixth Celery worker blocks on checkout; raised it to 20 and "
         "added pool_pre_ping=True so stale connections are recycled after failover."),
        (f"deploy failed, I used key {p['aws_access_key_id']}",
         "Root cause: the CI role lacks s3:PutObject on the artifacts bucket. The deploy script "
         f"exports AWS_ACCESS_KEY_ID={p['aws_access_key_id']} from `ci/env.sh`; move it to the "
         "OIDC role in `.github/workflows/deploy.yml` and grant PutObject on arn:aws:s3:::art/*."),
        ("the GitHub API calls return 401",
         "Root cause: `scripts/sync.py` sends `Authorization: Bearer "
         f"{p['authorization_header']}` but the token expired; the fine-grained PAT "
         f"{p['github_token']} in `.env` has no `contents:read`. Use the app installation token "
         "from `auth/app.py` instead, which is refreshed every 50 minutes by the scheduler."),
        ("anthropic client fails at import",
         f"Root cause: `ANTHROPIC_API_KEY={p['anthropic_key']}` is set in `docker-compose.yml`, "
         "but `llm/client.py` reads `CLAUDE_KEY`; the SDK then raises AuthenticationError at "
         "construction. Read ANTHROPIC_API_KEY in `llm/client.py` and drop the alias."),
        ("the signer rejects tokens",
         f"Root cause: the test fixture token {p['jwt']} is HS256 but `auth/verify.py` pins RS256 "
         "via `algorithms=['RS256']`; the signing key in `keys/dev.pem` is\n"
         f"{PEM}\nso regenerate the fixture with RS256 and keep the pin (it stops alg confusion)."),
    ]
    noise = [
        (f"ok, mail {p['email']}", f"Done. I sent the summary to {p['email']} and will check back "
         "for replies later in the afternoon today."),
        ("thanks", f"Sure, I'll keep the token {p['github_token']} handy and continue with the "
         "next step of the checklist now."),
        ("ok", f"Let me check the key {p['anthropic_key']} again and get back to you soon with "
         "whatever the result of that check turns out to be."),
    ]
    rows = [{"user_prompt": u, "assistant_response": a, "label": "substantive"}
            for u, a in substantive]
    rows += [{"user_prompt": u, "assistant_response": a, "label": "noise"} for u, a in noise]
    rows += [{"user_prompt": "ok", "assistant_response": f"Done. Step {i} finished without "
              "problems, moving on to the next part of the checklist now.", "label": "noise"}
             for i in range(8)]
    rows.append({"user_prompt": "what's the retry policy?", "assistant_response": "Retries "
                 "happen three times with exponential backoff, which seemed fine for now. "
                 f"Contact {p['email']} about it.", "label": "low_value"})
    return rows


def _decoded(path: Path) -> bytes:
    """Every cell of a parquet file or SQLite database, as text."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [row for t in tables for row in db.execute(f'SELECT * FROM "{t}"')]
    return b"\n".join(c if isinstance(c, bytes) else str(c).encode() for r in rows for c in r)


def _vector(text: str) -> list[float]:
    """Bag of hashed words: similar texts get similar vectors, so the content scorer can learn."""
    vec = [0.0] * 48
    for word in text.lower().split():
        vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 48] += 1.0
    vec[0] += 0.5
    return vec


def _embeddings(req: Received) -> Reply:
    data = [{"object": "embedding", "index": i, "embedding": _vector(t)}
            for i, t in enumerate(req.body["input"])]
    return Reply(200, {"object": "list", "data": data, "model": req.body["model"],
                       "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def _chat(req: Received) -> Reply:
    """SKIP for narration; otherwise a 'memory' that echoes what it was sent, so a secret that
    reached the judge would come back in the memory text and be caught there too."""
    sent = req.body["messages"][-1]["content"]
    text = ("Stored: " + sent[-1500:]) if "Root cause" in sent else "SKIP"
    return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                       "model": "local-test",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                 "total_tokens": 15}})


@pytest.mark.slow
@pytest.mark.integration
def test_no_planted_secret_leaves_the_cli_run_or_its_report(tmp_path: Path) -> None:
    """`python -m memeval run` with HTTP embedder and judge, then `report`: every byte the run,
    its caches, its report, its console and both servers saw is free of the planted secrets."""
    data = tmp_path / "leaky.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _leaky_rows()))
    run, cache, report = tmp_path / "run", tmp_path / "cache", tmp_path / "report"
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PHOENIX_COLLECTOR_ENDPOINT", None)
    with LoopbackServer(_embeddings) as emb, LoopbackServer(_chat) as judge:
        done = subprocess.run(
            [sys.executable, "-m", "memeval", "run", "+experiment=three_pass",
             "dataset=labeled_jsonl", f"dataset.path={data}", "embedder=openai_http",
             f"embedder.base_url={emb.base_url}/v1", "embedder.model=embed-test",
             "judge=openai_chat", f"judge.base_url={judge.base_url}/v1", "judge.model=judge-test",
             f"cache_dir={cache}", f"hydra.run.dir={run}", "plots=true", "progress=false",
             "bootstrap=50", "reporting.phoenix.endpoint=null"],
            cwd=tmp_path, env=env, capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        reported = subprocess.run(
            [sys.executable, "-m", "memeval", "report", str(run), "--out", str(report)],
            cwd=tmp_path, env=env, capture_output=True, timeout=300)
        assert reported.returncode == 0, reported.stderr.decode()[-3000:]
        received = {name: [json.dumps([r.path, r.headers, r.body]).encode() for r in srv.requests]
                    for name, srv in (("embedder", emb), ("judge", judge))}

    files = [p for root in (run, cache, report) for p in root.rglob("*") if p.is_file()]
    names = {p.relative_to(tmp_path).as_posix() for p in files}
    # the sweep covers what it claims to: Hydra's files and log, figures, parquet, stores, caches
    assert {"run/.hydra/config.yaml", "run/decisions.parquet", "run/state/rejection_store.jsonl",
            "run/state/accept_store.jsonl"} <= names, sorted(names)
    assert any(n.startswith("run/") and n.endswith(".log") for n in names), sorted(names)
    assert any(n.endswith(".png") for n in names) and any(n.startswith("run/phoenix/")
                                                          for n in names), sorted(names)
    assert any(n.startswith("cache/") for n in names) and any(n.startswith("report/")
                                                              for n in names), sorted(names)
    blobs = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in files}
    # Raw bytes miss what a format compresses (parquet: snappy) or splits (SQLite: overflow pages),
    # so those are swept decoded as well.
    blobs |= {f"{n} (decoded)": _decoded(tmp_path / n) for n in names
              if n.endswith((".parquet", ".sqlite"))}
    blobs |= {"run stdout": done.stdout, "run stderr": done.stderr,
              "report stdout": reported.stdout, "report stderr": reported.stderr}
    for server, bodies in received.items():
        blobs |= {f"{server} request {i}": body for i, body in enumerate(bodies)}

    # not vacuous: the planted rows reached the stores, the judge and the embedder, redacted
    state = b"".join(v for k, v in blobs.items() if k.startswith("run/state/"))
    judged = b"".join(received["judge"])
    assert b"[REDACTED:" in state and b"[REDACTED:" in judged and b"Root cause" in judged
    seen = state + judged + b"".join(received["embedder"])
    for cls in PLANTED:
        assert f"[REDACTED:{cls}]".encode() in seen, f"{cls} never reached the pipeline"
    # the judge's echoing rewrites were kept (judge cache), so a leak through them would show
    assert b"Stored: " in blobs["cache/judge.sqlite (decoded)"]

    for cls, secret in PLANTED.items():
        needle = secret.encode()
        leaks = [where for where, content in blobs.items() if needle in content]
        assert not leaks, f"planted {cls} leaked into {leaks}"
