"""Planted secrets never reach anything a run writes: stores, decisions, metrics, memories,
and, run through the real CLI, caches, logs, Hydra's files, reports, the console and the HTTP
servers it talks to. Secrets are planted in texts, in entry ids, labels and label sources, in the
URLs a run is configured with, in a memory corpus's ids, categories and sessions, in the quality
sets' texts, ids, sessions, creators, citations and references, in an LLM's answers and grades,
and in a crash's message."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import random
import sqlite3
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import DictConfig

from memeval.log_redaction import redact_logs
from memeval.results.provenance import provenance
from memeval.results.run_dir import redact_in_place
from memeval.runner import run_experiment
from memeval.utils.redact import redact
from tests.loopback import LoopbackServer, Received, Reply

ROOT = Path(__file__).resolve().parents[1]

GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
EMAIL = "jane.roe@example-corp.io"
DB_PASSWORD = "s3cretPassw0rdZ"
SLACK_TOKEN = "xoxb-" + "1234567890-" + "AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE_KEY = "sk_live_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
LABEL_SOURCE_KEY = "AIza" + "Sy0FAKEk3yF0rTh3L4b3lS0urc3xYz12345"


def _rows(rows: list[dict[str, str]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_no_planted_secret_is_written_anywhere(tmp_path: Path,
                                               fast_config: Callable[..., DictConfig]) -> None:
    """In texts, an entry id, a label and a label source: none reaches the run directory."""
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
    # an id (kept: unique after redaction), a label (a bad line: its problem quotes it) and a
    # label source (a metrics key and a console column header)
    rows[2]["id"] = SLACK_TOKEN
    rows[3]["label"] = f"noise {STRIPE_KEY}"
    rows[4]["label_source"] = f"vendor {LABEL_SOURCE_KEY}"
    data = _rows(rows, tmp_path / "leaky.jsonl")
    run = tmp_path / "run"
    run_experiment(fast_config("+experiment=three_pass", "dataset=labeled_jsonl",
                               f"dataset.path={data}", "plots=false"), run)

    written = [p for p in run.rglob("*") if p.is_file()]
    assert any(p.name == "rejection_store.jsonl" for p in written)
    stores = "".join((run / "state" / f).read_text() for f in
                     ("rejection_store.jsonl", "accept_store.jsonl"))
    assert "[REDACTED:" in stores  # the stores did receive the planted texts, redacted
    metrics = (run / "metrics.json").read_text()
    assert "[REDACTED:stripe_key]" in metrics  # the bad label's problem, redacted
    decisions = pq.read_table(run / "decisions.parquet").to_pylist()
    ids = {d["entry_id"] for d in decisions}
    assert "[REDACTED:slack_token]#1" in ids and len(ids) == 13
    assert {d["label_source"] for d in decisions} == {"human", "vendor [REDACTED:google_api_key]"}
    for path in written:
        content = path.read_bytes()
        if path.suffix == ".parquet":
            content += json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
        for secret in (GITHUB_TOKEN, EMAIL, DB_PASSWORD, SLACK_TOKEN, STRIPE_KEY,
                       LABEL_SOURCE_KEY):
            assert secret.encode() not in content, f"{secret[:6]}… leaked into {path}"


def test_provenance_records_the_command_line_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"judge.base_url=http://judge:{DB_PASSWORD}@127.0.0.1:8080/v1"
    monkeypatch.setattr(sys, "argv", ["memeval run", "+experiment=three_pass", url])
    argv = provenance()["argv"]
    assert argv[:2] == ["memeval run", "+experiment=three_pass"]
    assert argv[2] == "judge.base_url=http://[REDACTED:uri_credentials]@127.0.0.1:8080/v1"


def test_a_checkpoint_keeps_no_password_from_a_configured_url(
        fast_config: Callable[..., DictConfig]) -> None:
    from memeval.experiments.checkpoint import result_settings

    cfg = fast_config("+experiment=three_pass", "judge=openai_chat",
                      "judge.base_url=http://memeval:Hunter2Hunter2@127.0.0.1:9/v1")
    settings = result_settings(cfg)
    assert "Hunter2Hunter2" not in settings and "127.0.0.1:9/v1" in settings


@pytest.mark.slow
def test_a_sweep_logs_and_saves_no_password_from_a_configured_url(tmp_path: Path) -> None:
    """Hydra lists a sweep's jobs, overrides escaped (`http\\://u\\:pass@`), in its own log
    before any job starts, and writes them into each job's .hydra files."""
    url = f"judge.base_url=http://judge:{DB_PASSWORD}@127.0.0.1:9/v1"
    done = subprocess.run(
        [sys.executable, "-m", "memeval", "run", "-m", "+experiment=conflict_detection",
         "judge=openai_chat", url, "seed=0,1", "plots=false",
         "experiment.dev_pairs=[]",  # the rules' table only: the sweep's logging is the point
         f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "#1 : +experiment=conflict_detection" in done.stdout  # Hydra's job list was logged
    assert DB_PASSWORD not in done.stdout + done.stderr
    written = [p for p in (tmp_path / "sweep").rglob("*") if p.is_file()]
    assert len(written) > 6 and not [p for p in written if DB_PASSWORD.encode() in p.read_bytes()]


def test_hydra_files_are_rewritten_redacted_and_clean_files_kept(tmp_path: Path) -> None:
    leaky = tmp_path / "overrides.yaml"
    leaky.write_text(f"- judge.base_url=http://judge:{DB_PASSWORD}@127.0.0.1:8080/v1\n")
    clean = tmp_path / "hydra.yaml"
    clean.write_text("hydra:\n  run:\n    dir: runs/x\n")
    before = clean.stat().st_mtime_ns
    redact_in_place(leaky, clean, tmp_path / "missing.yaml")
    assert leaky.read_text() == "- judge.base_url=http://[REDACTED:uri_credentials]@127.0.0.1:8080/v1\n"
    assert clean.stat().st_mtime_ns == before  # nothing to redact: not rewritten


def test_a_crash_prints_its_traceback_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A fault that is no user error (memeval's own, or a system's) prints its traceback
    redacted; Hydra would print the message and the overrides as typed."""
    import memeval.runner
    from memeval.__main__ import main

    def crash(cfg: DictConfig, run_dir: Path) -> None:
        raise RuntimeError(f"the system rejected {GITHUB_TOKEN}")

    monkeypatch.setattr(memeval.runner, "run_experiment", crash)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "+experiment=three_pass", "judge=openai_chat",
                 f"judge.base_url=http://judge:{DB_PASSWORD}@127.0.0.1:9/v1",
                 f"hydra.run.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("Traceback (most recent call last):")
    assert "RuntimeError: the system rejected [REDACTED:github_token]" in err
    assert GITHUB_TOKEN not in err and DB_PASSWORD not in err


def test_a_system_failure_is_recorded_redacted() -> None:
    """compare_systems keeps a failed system's message in its results and log."""
    from memeval.experiments.compare_systems import CompareSystems, CompareSystemsConfig
    from memeval.metrics.gate_metrics import SystemFailure

    compare = CompareSystems(CompareSystemsConfig())
    compare._fails("search", "gone", SystemFailure(f"the daemon refused {GITHUB_TOKEN}"))
    assert compare.failed == {"search": {"gone": "failed: the daemon refused "
                                                 "[REDACTED:github_token]"}}


@pytest.fixture
def root_handler() -> Iterator[logging.StreamHandler[io.StringIO]]:
    """A handler on the root logger, as Hydra's job logging installs, removed afterwards."""
    handler = logging.StreamHandler(io.StringIO())
    root = logging.getLogger()
    root.addHandler(handler)
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    yield handler
    root.removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_logs_are_redacted_and_http_clients_quiet(
        root_handler: logging.StreamHandler[io.StringIO]) -> None:
    redact_logs()
    redact_logs()  # once is enough: no second filter
    assert len(root_handler.filters) == 1
    assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING
    log = logging.getLogger("memeval.test_secrets")
    log.warning("judge at %s is down", f"http://judge:{DB_PASSWORD}@127.0.0.1:1/v1")
    try:
        raise RuntimeError(f"token {GITHUB_TOKEN} rejected")
    except RuntimeError:
        log.exception("call failed")
    err = root_handler.stream.getvalue()
    assert "judge at http://[REDACTED:uri_credentials]@127.0.0.1:1/v1 is down" in err
    assert "RuntimeError: token [REDACTED:github_token] rejected" in err
    assert DB_PASSWORD not in err and GITHUB_TOKEN not in err


# --- the real CLI, end to end, with HTTP embedder and judge on loopback ----------------------

_rng = random.Random(4242)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _fake(n: int, alphabet: str = _ALNUM) -> str:
    """A random run ending in a digit, as real keys have; built here, so no literal is in git."""
    return "".join(_rng.choice(alphabet) for _ in range(n - 1)) + "7"


def _b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


PEM_LINES = [_fake(64, _ALNUM + "+/") for _ in range(4)]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES, "-----END RSA PRIVATE KEY-----"])
SPLIT_GITHUB = "ghp_" + _fake(36)
ENCODED_STRIPE = "sk_live_" + _fake(24)
# kind -> the secret; it must appear nowhere a run writes, shows or sends
PLANTED: dict[str, str] = {
    # in texts, each found by a vendor format or a key name
    "github_token": "ghp_" + _fake(36),
    "aws_access_key_id": "AKIA" + _fake(16, string.ascii_uppercase + string.digits),
    "aws_secret_access_key": _fake(40, _ALNUM + "+/"),
    "anthropic_key": "sk-ant-api03-" + _fake(90, _ALNUM + "-_"),
    "openai_key": "sk-proj-" + _fake(48, _ALNUM + "-_"),
    "slack_token": "xoxb-" + _fake(11, string.digits) + "-" + _fake(24),
    "stripe_key": "rk_live_" + _fake(24),
    "google_api_key": "AIza" + _fake(35, _ALNUM + "-_"),
    "gitlab_token": "glpat-" + _fake(20, _ALNUM + "-_"),
    "sendgrid_key": "SG." + _fake(22, _ALNUM + "-_") + "." + _fake(43, _ALNUM + "-_"),
    "twilio_key": "SK" + _fake(32, _HEX),
    "vault_token": "hvs." + _fake(90, _ALNUM + "-_"),
    "azure_key": _fake(86, _ALNUM + "+/") + "==",
    "jwt": ".".join((_b64url({"alg": "HS256", "typ": "JWT"}),
                     _b64url({"sub": "fake-" + _fake(8)}), _fake(43, _ALNUM + "-_"))),
    "pem_private_key": PEM_LINES[1],
    "authorization_header": "FAKEbearer" + _fake(30),
    "basic_auth": "Cu7l-" + _fake(12),
    "uri_credentials": "dbPw-" + _fake(14),
    "password_assignment": "Pw-" + _fake(14),
    "secret_assignment": "FAKEgeneric" + _fake(29),
    "email": f"ops.{_fake(6).lower()}+alerts@mail.example-corp.io",
    # the shapes that leaked before: no key name, split, encoded, tool-specific, prose
    "high_entropy": _fake(40, _ALNUM + "+/"),
    "split_token": SPLIT_GITHUB,
    "base64_secret": base64.b64encode(ENCODED_STRIPE.encode()).decode(),
    "base64_secret (decoded)": ENCODED_STRIPE,
    "netrc_password": "Nrc!" + _fake(12),
    "cli_password": "My!" + _fake(12),
    "keyword_secret": "Tr0ub4dor&" + _fake(6),
    # outside the texts: an entry id, a (bad) label, a label source, configured URLs
    "id": "hf_" + _fake(34),
    "label": "npm_" + _fake(36),
    "label_source": "dop_v1_" + _fake(64, _HEX),
    "judge_url_password": "JudgePw" + _fake(10),
    "embedder_url_password": "EmbedPw" + _fake(10),
}
# kind -> the class its redaction marker names (where it differs from the kind)
MARKER = {"split_token": "github_token", "base64_secret (decoded)": "base64_secret",
          "id": "huggingface_token", "label": "npm_token", "label_source": "digitalocean_token",
          "judge_url_password": "uri_credentials", "embedder_url_password": "uri_credentials"}


def _leaky_rows() -> list[dict[str, str]]:
    """Every planted secret in noise (→ rejection store) and substantive (→ judge, memory) rows,
    plus one in an id, one in a label and one in a label source."""
    p = PLANTED
    substantive = [
        ("why does the orders worker hang?",
         "Root cause: the worker reads DATABASE_URL=postgres://orders:"
         f"{p['uri_credentials']}@db.internal:5432/orders and the pool size is 5 in "
         "`config/db.py`, so the sixth Celery worker blocks on checkout; raised it to 20 and "
         f"added pool_pre_ping=True. The replica is reached with `mysql -uapp -p{p['cli_password']}"
         " -h replica orders` and the db password is " + p["keyword_secret"] + " for now."),
        (f"deploy failed, I used key {p['aws_access_key_id']}",
         "Root cause: the CI role lacks s3:PutObject on the artifacts bucket. The deploy script "
         f"exports AWS_ACCESS_KEY_ID={p['aws_access_key_id']} and AWS_SECRET_ACCESS_KEY="
         f"{p['aws_secret_access_key']} from `ci/env.sh`; I rotated the other one too, the new "
         f"one is {p['high_entropy']} and it is in the vault now. Move them to the OIDC role."),
        ("the GitHub API calls return 401",
         "Root cause: `scripts/sync.py` sends `Authorization: Bearer "
         f"{p['authorization_header']}` but the token expired; the fine-grained PAT "
         f"{p['github_token']} in `.env` has no `contents:read`. The terminal showed the other "
         f"one wrapped: {SPLIT_GITHUB[:22]}\n{SPLIT_GITHUB[22:]} and it is revoked now. Use the "
         "app installation token from `auth/app.py`, refreshed every 50 minutes."),
        ("anthropic client fails at import",
         f"Root cause: `ANTHROPIC_API_KEY={p['anthropic_key']}` is set in `docker-compose.yml`, "
         f"and OPENAI_API_KEY={p['openai_key']} next to it, but `llm/client.py` reads "
         "`CLAUDE_KEY`; the SDK then raises AuthenticationError at construction. Read "
         "ANTHROPIC_API_KEY in `llm/client.py` and drop the alias."),
        ("the signer rejects tokens",
         f"Root cause: the test fixture token {p['jwt']} is HS256 but `auth/verify.py` pins RS256 "
         "via `algorithms=['RS256']`; the signing key in `keys/dev.pem` is\n"
         f"{PEM}\nso regenerate the fixture with RS256 and keep the pin (it stops alg confusion)."),
        ("uploads to blob storage fail",
         "Root cause: the connection string is DefaultEndpointsProtocol=https;AccountName=art;"
         f"AccountKey={p['azure_key']};EndpointSuffix=core.windows.net and the container is "
         f"private; the Twilio key {p['twilio_key']} and the SendGrid key {p['sendgrid_key']} "
         f"are in the same file, with STRIPE_RESTRICTED={p['stripe_key']}. Move all of them."),
        ("the mirror sync fails",
         "Root cause: ~/.netrc has `machine git.example.com login ci password "
         f"{p['netrc_password']}` but the mirror now wants the GitLab token {p['gitlab_token']}; "
         f"the Kubernetes manifest holds it as {p['base64_secret']} and `curl -u admin:"
         f"{p['basic_auth']} https://registry.example.com` still works. Rotate the netrc entry and "
         f"VAULT_TOKEN {p['vault_token']} with it."),
    ]
    noise = [
        (f"ok, mail {p['email']}", f"Done. I sent the summary to {p['email']} and will check back "
         "for replies later in the afternoon today."),
        ("thanks", f"Sure, I'll keep the token {p['github_token']} handy and continue with the "
         f"next step, DB_PASSWORD={p['password_assignment']} is set."),
        ("ok", f"Let me check the key {p['anthropic_key']} again, api_key = "
         f"{p['secret_assignment']} and the Slack bot {p['slack_token']} and Maps key "
         f"{p['google_api_key']}, and get back to you soon."),
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
    rows[-2]["id"] = p["id"]
    rows[-3]["label"] = p["label"]  # a bad line: the problem reported quotes the label
    rows[-4]["label_source"] = f"vendor {p['label_source']}"
    return rows


def _decoded(path: Path) -> bytes:
    """Every cell of a parquet file or SQLite database, as text."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        rows = [row for t in tables for row in db.execute(f'SELECT * FROM "{t}"')]
    return b"\n".join(c if isinstance(c, bytes) else str(c).encode() for r in rows for c in r)


def _written(tmp_path: Path, *roots: Path) -> dict[str, bytes]:
    """Every file under `roots`, by its path under `tmp_path`; parquet and SQLite files also
    decoded (`name (decoded)`): raw bytes miss what a format compresses or splits."""
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    blobs = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in files}
    return blobs | {f"{name} (decoded)": _decoded(tmp_path / name) for name in list(blobs)
                    if name.endswith((".parquet", ".sqlite"))}


def _assert_none_leaked(planted: dict[str, str], blobs: dict[str, bytes]) -> None:
    for what, secret in planted.items():
        leaks = [where for where, content in blobs.items() if secret.encode() in content]
        assert not leaks, f"planted {what} leaked into {leaks}"


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


def _with_password(base_url: str, user: str, password: str) -> str:
    return base_url.replace("http://", f"http://{user}:{password}@", 1)


@pytest.mark.slow
@pytest.mark.integration
def test_no_planted_secret_leaves_the_cli_run_or_its_report(tmp_path: Path) -> None:
    """`python -m memeval run` with HTTP embedder and judge (their URLs carrying passwords), then
    `report`: every byte the run, its caches, Hydra's files, its log, its report, its console and
    both servers saw is free of all the planted secrets."""
    assert len(PLANTED) - 1 == 32  # 32 kinds (the encoded key's decoded text is checked too)
    data = tmp_path / "leaky.jsonl"
    _rows(_leaky_rows(), data)
    run, cache, report = tmp_path / "run", tmp_path / "cache", tmp_path / "report"
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PHOENIX_COLLECTOR_ENDPOINT", None)
    with LoopbackServer(_embeddings) as emb, LoopbackServer(_chat) as judge:
        emb_url = _with_password(emb.base_url, "emb", PLANTED["embedder_url_password"])
        judge_url = _with_password(judge.base_url, "judge", PLANTED["judge_url_password"])
        done = subprocess.run(
            [sys.executable, "-m", "memeval", "run", "+experiment=three_pass",
             "dataset=labeled_jsonl", f"dataset.path={data}", "embedder=openai_http",
             f"embedder.base_url={emb_url}/v1", "embedder.model=embed-test",
             "judge=openai_chat", f"judge.base_url={judge_url}/v1", "judge.model=judge-test",
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

    blobs = _written(tmp_path, run, cache, report)
    names = {name for name in blobs if not name.endswith(" (decoded)")}
    # the sweep covers what it claims to: Hydra's files and log, figures, parquet, stores, caches
    assert {"run/.hydra/config.yaml", "run/.hydra/hydra.yaml", "run/.hydra/overrides.yaml",
            "run/config.yaml", "run/provenance.json", "run/metrics.json", "run/decisions.parquet",
            "run/state/rejection_store.jsonl", "run/state/accept_store.jsonl",
            "cache/judge.sqlite", "cache/embeddings.sqlite"} <= names, sorted(names)
    assert any(n.startswith("run/") and n.endswith(".log") for n in names), sorted(names)
    assert any(n.endswith(".png") for n in names) and any(n.startswith("run/phoenix/")
                                                          for n in names), sorted(names)
    assert any(n.startswith("report/") for n in names), sorted(names)
    blobs |= {"run stdout": done.stdout, "run stderr": done.stderr,
              "report stdout": reported.stdout, "report stderr": reported.stderr}
    for server, bodies in received.items():
        blobs |= {f"{server} request {i}": body for i, body in enumerate(bodies)}

    # not vacuous: the planted rows reached the stores, the judge and the embedder, redacted;
    # the id, label, label source and URLs reached the run's records, redacted
    state = b"".join(v for k, v in blobs.items() if k.startswith("run/state/"))
    judged = b"".join(received["judge"])
    assert b"[REDACTED:" in state and b"[REDACTED:" in judged and b"Root cause" in judged
    seen = state + judged + b"".join(received["embedder"])
    for kind in PLANTED.keys() - {"id", "label", "label_source", "judge_url_password",
                                  "embedder_url_password"}:
        cls = MARKER.get(kind, kind)
        assert f"[REDACTED:{cls}]".encode() in seen, f"{kind} never reached the pipeline"
    assert b"[REDACTED:huggingface_token]#" in blobs["run/decisions.parquet (decoded)"]
    assert b"vendor [REDACTED:digitalocean_token]" in blobs["run/decisions.parquet (decoded)"]
    assert b"[REDACTED:npm_token]" in blobs["run/metrics.json"]
    # the two URLs, redacted: provenance has them twice (command line and the job's overrides)
    for name, times in (("run/.hydra/overrides.yaml", 2), ("run/config.yaml", 2),
                        ("run/provenance.json", 4)):
        assert blobs[name].count(b"http://[REDACTED:uri_credentials]@127.0.0.1:") == times, name
    # the judge's echoing rewrites were kept (judge cache), so a leak through them would show
    assert b"Stored: " in blobs["cache/judge.sqlite (decoded)"]

    _assert_none_leaked(PLANTED, blobs)


# --- names from a memory corpus, and what an LLM writes ----------------------------------------

CORPORA = Path(__file__).resolve().parent / "data" / "corpora"
TWIN = "ghp_" + _fake(36)  # two memory ids that redact alike: `[REDACTED:github_token]`
# Unreserved characters: `.` and `~` cut it into runs too short to look random alone.
JOINED = (_fake(5) + "." + _fake(4) + "~" + _fake(4) + "_" + _fake(5) + "-" + _fake(9) + "."
          + _fake(8))
BASIC = base64.b64encode(f"deploy:Dp!{_fake(14)}".encode()).decode()  # `user:pass`, encoded
# kind -> the secret, planted in a corpus's names and texts, or written by the LLM only
NAMED: dict[str, str] = {
    "locomo sample_id": "ghp_" + _fake(36),
    "locomo category": "rk_live_" + _fake(24),
    "locomo dia_id": JOINED,
    "locomo turn, joined by . and ~": _fake(6) + "~" + _fake(7) + "." + _fake(6) + "." + _fake(12),
    "locomo turn, base64 of user:pass": BASIC,
    "llm answer": "sk-ant-api03-" + _fake(60, _ALNUM + "-_"),
    "llm answer, joined by . and ~": _fake(9) + "." + _fake(9) + "~" + _fake(9) + "-" + _fake(9),
    "llm answer, base64 of user:pass": base64.b64encode(f"admin:Qa#{_fake(13)}".encode()).decode(),
    "grader explanation": "sk-proj-" + _fake(48, _ALNUM + "-_"),
    "longmemeval question_type": "xoxb-" + _fake(11, string.digits) + "-" + _fake(24),
    "longmemeval question_id": "npm_" + _fake(36),
    "longmemeval session id": "hf_" + _fake(34),
    "memory id": TWIN,
    "memory id, redacting alike": "ghp_" + _fake(36),
    "memory session": "dop_v1_" + _fake(64, _HEX),
    "memory source": "glpat-" + _fake(20, _ALNUM + "-_"),
    "query id": "SG." + _fake(22, _ALNUM + "-_") + "." + _fake(43, _ALNUM + "-_"),
    "query category": "AKIA" + _fake(16, string.ascii_uppercase + string.digits),
}


def _planted_corpus(kind: str, folder: Path) -> list[str]:
    """A copy of a small test corpus with secrets planted in its names (and, in LoCoMo, two new
    token shapes in a turn): the `dataset` overrides that load it."""
    p = NAMED
    if kind == "locomo":
        samples = json.loads((CORPORA / "locomo_small.json").read_text())
        sample = samples[0]
        sample["sample_id"] = f"conv-{p['locomo sample_id']}"
        sample["qa"][1]["category"] = f"temporal {p['locomo category']}"  # answered 1 June 2023
        turns = sample["conversation"]["session_1"]
        turns[1]["dia_id"] = f"D1:2 {p['locomo dia_id']}"
        turns[5]["text"] += (f" The upload ref is {p['locomo turn, joined by . and ~']} and the "
                             f"registry auth {p['locomo turn, base64 of user:pass']}.")
        path = folder / "locomo.json"
        path.write_text(json.dumps(samples))
        return ["dataset=locomo", f"dataset.path={path}"]
    if kind == "longmemeval":
        text = (CORPORA / "longmemeval_small.json").read_text()
        text = text.replace('"answer_food_1"',
                            json.dumps(f"answer_food {p['longmemeval session id']}"))
        text = text.replace('"q_food01"', json.dumps(f"q_food01 {p['longmemeval question_id']}"))
        text = text.replace('"single-session-user"',
                            json.dumps(f"single-session-user {p['longmemeval question_type']}"))
        path = folder / "longmemeval.json"
        path.write_text(text)
        return ["dataset=longmemeval", f"dataset.path={path}"]
    memories = (CORPORA / "memories.jsonl").read_text()
    queries = (CORPORA / "queries.jsonl").read_text()
    for old, new in (('"m01"', p["memory id"]), ('"m02"', p["memory id, redacting alike"])):
        memories, queries = (t.replace(old, json.dumps(new)) for t in (memories, queries))
    memories = memories.replace('"s1"', json.dumps(f"s1 {p['memory session']}")).replace(
        '"claude_code:turn-14"', json.dumps(f"claude_code:{p['memory source']}"))
    queries = queries.replace('"q1"', json.dumps(f"q1 {p['query id']}")).replace(
        '"workflow"', json.dumps(f"workflow {p['query category']}"))
    (folder / "memories.jsonl").write_text(memories)
    (folder / "queries.jsonl").write_text(queries)
    return ["dataset=memory_jsonl", f"dataset.memories={folder / 'memories.jsonl'}",
            f"dataset.queries={folder / 'queries.jsonl'}"]


def _planted_in(kind: str) -> dict[str, str]:
    prefix = {"locomo": "locomo", "longmemeval": "longmemeval", "memory_jsonl": ("memory", "query")}
    return {k: v for k, v in NAMED.items() if k.startswith(prefix[kind])}


def test_names_are_redacted_one_to_one() -> None:
    """Kept byte for byte without a secret; two that redact alike kept apart; one name mapped
    alike wherever it occurs; never onto a name the input holds."""
    from memeval.data.base import RedactedNames

    other = "ghp_" + _fake(36)
    taken = "[REDACTED:github_token]#1"  # an input may hold a marker, however unlikely
    names = RedactedNames(["q_7", TWIN, other, taken])
    assert [names("q_7"), names(TWIN), names(other), names(TWIN), names(taken)] == [
        "q_7", "[REDACTED:github_token]#2", "[REDACTED:github_token]#3",
        "[REDACTED:github_token]#2", taken]


@pytest.mark.parametrize("kind", ["locomo", "longmemeval", "memory_jsonl"])
def test_a_corpus_is_served_with_its_names_redacted(kind: str, tmp_path: Path) -> None:
    """Ids, sessions, sources, metadata, categories, counts' names: redacted where the corpus is
    loaded, every reference still holding and every name without a secret unchanged."""
    from memeval.components import load_components
    from memeval.config import compose
    from memeval.data.base import CORPORA as LOADERS
    from memeval.data.memory_corpus import checked_corpus, redacted_corpus

    load_components()
    cfg = compose(_planted_corpus(kind, tmp_path))
    raw = LOADERS.build(cfg.dataset)
    served = redacted_corpus(raw)
    seen = repr(served).encode()
    for what, secret in _planted_in(kind).items():
        assert secret in repr(raw), f"{what} was not planted"
        assert secret.encode() not in seen, f"{what} leaked"
    checked_corpus(served.name, served.memories, served.queries, served.report)  # refs hold
    ids = [(a.id, b.id) for a, b in zip([*raw.memories, *raw.queries],
                                        [*served.memories, *served.queries], strict=True)]
    assert len({b for _, b in ids}) == len(ids)  # still unique
    assert all((a == b) == (redact(a) == a) for a, b in ids)  # changed only if holding a secret
    assert any(a != b for a, b in ids)


def _qa_model(request: Received) -> Reply:
    """An LLM that writes keys it was never sent: into every answer, and into every grade's
    explanation."""
    from memeval.backends.answerers.prompts import ANSWER_SYSTEM, GRADE_SYSTEM

    system = request.body["messages"][0]["content"]
    text = "OK"  # a preflight
    if system == ANSWER_SYSTEM:
        text = (f"1 June 2023. The key was {NAMED['llm answer']}, the session "
                f"{NAMED['llm answer, joined by . and ~']}, the registry auth "
                f"{NAMED['llm answer, base64 of user:pass']}.")
    elif system == GRADE_SYSTEM:
        text = json.dumps({"label": "WRONG",
                           "explanation": f"it quotes {NAMED['grader explanation']}"})
    return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                       "model": "qa-test", "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["locomo", "longmemeval", "memory_jsonl"])
def test_no_planted_name_or_llm_reply_leaves_a_corpus_run(
        kind: str, tmp_path: Path, fast_config: Callable[..., DictConfig],
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """Memory QA with an LLM answerer and grader on loopback (LoCoMo), memory QA (LongMemEval),
    retrieval replay (memory_jsonl): no planted id, category, question type or session, and no
    key the LLM wrote, reaches the run directory, the caches, the console, the log records or
    what the LLM was sent. The log records are read as emitted, before the CLI's redacting
    filter, so the names must already be redacted where the corpus was loaded."""
    caplog.set_level(logging.DEBUG)
    run, cache = tmp_path / "run", tmp_path / "cache"
    settings = [*_planted_corpus(kind, tmp_path), "plots=false", "bootstrap=20"]
    if kind == "memory_jsonl":
        settings += ["+experiment=retrieval_replay", "experiment.passes=1", "experiment.k=3"]
    else:
        settings += ["+experiment=memory_qa", "experiment.k=20"]  # a conversation, whole
    with LoopbackServer(_qa_model) as llm:
        if kind == "locomo":
            settings += [f"{what}@experiment.{what}=llm" for what in ("answerer", "grader")]
            settings += [f"experiment.{what}.backend.{key}={value}"
                         for what in ("answerer", "grader")
                         for key, value in (("model", "qa-test"),
                                            ("base_url", f"{llm.base_url}/v1"))]
        run_experiment(fast_config(*settings), run)
        sent = [json.dumps(r.body).encode() for r in llm.requests]
    out, err = capfd.readouterr()

    blobs = _written(tmp_path, run, cache)
    blobs |= {"stdout": out.encode(), "stderr": err.encode(), "sent to the LLM": b"".join(sent),
              "log records": "\n".join([caplog.text, *(str(r.args) for r in caplog.records)]
                                       ).encode()}
    planted = _planted_in(kind) | (
        {k: v for k, v in NAMED.items() if k.startswith(("llm", "grader"))}
        if kind == "locomo" else {})
    # not vacuous: the names and the LLM's replies reached what the run wrote, redacted
    table = "run/qa_questions.parquet (decoded)" if kind != "memory_jsonl" else next(
        n for n in blobs if n.endswith("retrieval_queries.parquet (decoded)"))
    assert b"[REDACTED:" in blobs[table] and b"[REDACTED:" in blobs["run/metrics.json"]
    if kind == "locomo":
        judged = blobs["cache/judge.sqlite (decoded)"]
        for cls in ("anthropic_key", "openai_key", "high_entropy", "basic_auth"):
            assert f"[REDACTED:{cls}]".encode() in judged, cls
        assert b"[REDACTED:high_entropy]" in blobs["sent to the LLM"]  # the planted turn
        assert b"[REDACTED:basic_auth]" in blobs["sent to the LLM"]
    _assert_none_leaked(planted, blobs)


# --- names and texts of the quality sets -------------------------------------------------------

# where -> the secret planted there, in one of each kind of quality set (and the labelled corpus
# a query's relevant entries are in)
QUALITY: dict[str, str] = {
    "record id": "ghp_" + _fake(36),
    "record id, redacting alike": "ghp_" + _fake(36),
    "record content": "sk-proj-" + _fake(48, _ALNUM + "-_"),
    "record namespace": "glpat-" + _fake(20, _ALNUM + "-_"),
    "record created_by": "xoxb-" + _fake(11, string.digits) + "-" + _fake(24),
    "record session_id": "hf_" + _fake(34),
    "record citation": "npm_" + _fake(36),
    "record label note": "AKIA" + _fake(16, string.ascii_uppercase + string.digits),
    "scenario id": "dop_v1_" + _fake(64, _HEX),
    "scenario decision": "rk_live_" + _fake(24),
    "scenario note": "SG." + _fake(22, _ALNUM + "-_") + "." + _fake(43, _ALNUM + "-_"),
    "memory id": "AIza" + _fake(35, _ALNUM + "-_"),
    "memory created_by": "hvs." + _fake(90, _ALNUM + "-_"),
    "memory session_id": "glpat-" + _fake(20, _ALNUM + "-_"),
    "ancestor id": "sk-ant-api03-" + _fake(90, _ALNUM + "-_"),
    "pair id": "npm_" + _fake(36),
    "pair content": "sk-proj-" + _fake(48, _ALNUM + "-_"),
    "pair path": "ghp_" + _fake(36),
    "pair kind": "rk_live_" + _fake(24),
    "pair note": "xoxb-" + _fake(11, string.digits) + "-" + _fake(24),
    "query id": "dop_v1_" + _fake(64, _HEX),
    "query text": "AKIA" + _fake(16, string.ascii_uppercase + string.digits),
    "query kind": "AIza" + _fake(35, _ALNUM + "-_"),
    "query note": "hvs." + _fake(90, _ALNUM + "-_"),
    "entry id": "hf_" + _fake(34),
    "entry id, numbered first": "hf_" + _fake(34),
    "entry id, numbered second": "hf_" + _fake(34),
}


def _planted_quality_sets(folder: Path) -> dict[str, Path]:
    """A small file of each kind of quality set, secrets planted in its texts, names and
    references, beside clean lines; and the labelled corpus its queries name entries of."""
    q = QUALITY
    first, second = f"rec {q['record id']}", f"rec {q['record id, redacting alike']}"
    records = [
        {"id": first, "content": f"The deploy key is {q['record content']} until Friday.",
         "label": "trusted", "confidence": 0.9, "namespace": f"team {q['record namespace']}",
         "created_by": f"agent {q['record created_by']}",
         "session_id": f"s {q['record session_id']}",
         "citation": {"path": f"docs/{q['record citation']}.md", "line_start": 3, "line_end": 4},
         "label_note": f"checked with {q['record label note']}"},
        {"id": second, "content": "Run the tests with uv run pytest -n 2.", "label": "trusted",
         "confidence": 0.8},
        {"id": "rec-3", "content": "Installs go through uv, never pip.", "label": "untrusted",
         "confidence": 0.3, "derived_from": [first, second], "conflicts": [first]},
    ]
    records += [{"id": f"clean-{i}", "content": f"Step {i} of the release checklist is done.",
                 "label": ("trusted", "questionable", "untrusted")[i % 3],
                 "confidence": 0.2 + 0.07 * i} for i in range(9)]
    memory, ancestor = f"m {q['memory id']}", f"a {q['ancestor id']}"
    scenarios = [
        {"scenario_id": f"sc {q['scenario id']}", "ground_truth": "well_attributed",
         "agent_decision": f"Used {memory}; the token was {q['scenario decision']}.",
         "retrieved_memories": [{"id": memory, "confidence": 0.9, "derived_from": [ancestor],
                                 "created_by": f"sub {q['memory created_by']}",
                                 "session_id": f"s {q['memory session_id']}"}],
         "ancestors": [{"id": ancestor, "confidence": 0.8}],
         "label_note": f"see {q['scenario note']}"},
        *({"scenario_id": f"sc-{i}", "ground_truth": label, "agent_decision": "Went ahead.",
           "retrieved_memories": [{"id": f"m-{i}", "confidence": 0.4}]}
          for i, label in enumerate(("unattributed", "partially_attributed", "well_attributed",
                                     "unattributed")))]
    path = f"memory/{q['pair path']}.md"
    pairs = [
        {"pair_id": f"p {q['pair id']}", "conflict": "temporal", "newer": "b",
         "a": {"content": f"The API key is {q['pair content']}.", "path": path,
               "timestamp": "2025-06-24"},
         "b": {"content": "The API key was rotated; read it from the vault.", "path": path,
               "timestamp": "2025-07-01"},
         "kind": f"config {q['pair kind']}", "note": f"rotated {q['pair note']}"},
        {"pair_id": "p-2", "conflict": "none", "a": {"content": "Use ruff for linting."},
         "b": {"content": "Run mypy before pushing."}},
    ]
    entry = f"wg {q['entry id']}"
    queries = [{"query_id": f"q {q['query id']}", "query": f"where is {q['query text']} used?",
                "relevant": {entry: 2, "wg-2": 1}, "superseded": [entry],
                "kind": f"task {q['query kind']}", "note": f"see {q['query note']}"}]
    # two more such ids ahead of it, so the corpus numbers it unlike the queries' own file would
    corpus = [{"id": f"wg {q[name]}", "user_prompt": "ok", "assistant_response": text,
               "label": "substantive"}
              for name, text in (("entry id, numbered first", "Pin the CI image."),
                                 ("entry id, numbered second", "Cache the uv downloads."),
                                 ("entry id", "The relevant answer."))]
    corpus.insert(2, {"id": "wg-2", "user_prompt": "ok", "assistant_response": "Helps.",
                      "label": "substantive"})
    files = {"records": records, "scenarios": scenarios, "pairs": pairs, "queries": queries,
             "corpus": corpus}
    return {kind: _rows(rows, folder / f"{kind}.jsonl") for kind, rows in files.items()}


def test_every_quality_set_is_served_with_its_names_and_texts_redacted(tmp_path: Path) -> None:
    """Ids, texts, namespaces, creators, sessions, citations, notes, kinds and references of
    each kind of quality set, redacted where the set is loaded; every reference still resolves
    (within the file, and a query's entries in the corpus it names), two ids that redact alike
    stay apart, and what holds no secret is kept."""
    from memeval.data.base import redacted_names
    from memeval.data.labeled_jsonl import load_labeled_jsonl
    from memeval.data.quality_sets import (
        load_conflict_pairs,
        load_memory_records,
        load_queries,
        load_scenarios,
    )

    files = _planted_quality_sets(tmp_path)
    records, _ = load_memory_records(files["records"])
    scenarios, _ = load_scenarios(files["scenarios"])
    pairs, _ = load_conflict_pairs(files["pairs"])
    corpus = redacted_names(load_labeled_jsonl(files["corpus"]))
    queries, report = load_queries(files["queries"], refs=corpus.names)
    planted = "".join(path.read_text() for path in files.values())
    served = repr((records, scenarios, pairs, queries, corpus.entries, report))
    for where, secret in QUALITY.items():
        assert secret in planted, f"{where} was not planted"
        assert secret not in served, f"{where} leaked"

    # records: two ids that redact alike kept apart, and the references to them follow
    first, second, third = (item.record for item in records[:3])
    assert first.id.startswith("rec [REDACTED:github_token]#") and second.id != first.id
    assert (third.derived_from, third.conflicts) == ([first.id, second.id], [first.id])
    assert first.citation is not None and "[REDACTED:npm_token]" in first.citation.path
    assert "[REDACTED:openai_key]" in first.content
    assert "[REDACTED:aws_access_key_id]" in records[0].note
    # what holds no secret is kept as it was
    assert [item.record.id for item in records[2:]] == ["rec-3", *(f"clean-{i}" for i in range(9))]
    assert second.content == "Run the tests with uv run pytest -n 2."
    # scenarios: a memory still names its ancestor
    memory = scenarios[0].memories[0]
    assert memory.derived_from == [scenarios[0].ancestors[0].id]
    assert "[REDACTED:vault_token]" in str(memory.created_by)
    assert [s.id for s in scenarios[1:]] == ["sc-0", "sc-1", "sc-2", "sc-3"]
    # pairs: both sides still come from one file
    assert pairs[0].same_source and "[REDACTED:stripe_key]" in str(pairs[0].kind)
    # a query's entries are named as the corpus names them: the right entry, not another
    # numbered alike
    (query,) = queries
    text = {e.id: e.assistant_response for e in corpus.entries}
    assert {text[e]: grade for e, grade in query.relevant.items()} == {
        "The relevant answer.": 2, "Helps.": 1}
    assert [text[e] for e in query.superseded] == ["The relevant answer."]

def test_no_planted_secret_leaves_a_calibration_run(
        tmp_path: Path, fast_config: Callable[..., DictConfig],
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """mqs_calibration on planted memory records and MAI scenarios: no planted name or text
    reaches the run directory (its tables decoded), its log records or its console."""
    caplog.set_level(logging.DEBUG)
    files = _planted_quality_sets(tmp_path)
    run = tmp_path / "run"
    run_experiment(fast_config("+experiment=mqs_calibration", "plots=false",
                               f"experiment.records={files['records']}",
                               f"experiment.scenarios={files['scenarios']}",
                               "experiment.dev_records=[]", "experiment.test_records=null"), run)
    out, err = capfd.readouterr()
    blobs = _written(tmp_path, run, tmp_path / "cache")
    blobs |= {"stdout": out.encode(), "stderr": err.encode(),
              "log records": "\n".join([caplog.text, *(str(r.args) for r in caplog.records)]
                                       ).encode()}
    tables = b"".join(v for k, v in blobs.items() if k.endswith(".parquet (decoded)"))
    # not vacuous: the planted records and scenarios reached the tables, redacted
    # (a record's id, content, namespace, creator, session, citation and note; a scenario's
    # id and note)
    for cls in ("github_token", "openai_key", "gitlab_token", "slack_token", "huggingface_token",
                "npm_token", "aws_access_key_id", "digitalocean_token", "sendgrid_key"):
        assert f"[REDACTED:{cls}]".encode() in tables, cls
    _assert_none_leaked({k: v for k, v in QUALITY.items() if k.startswith(("record", "scenario",
                                                                            "memory", "ancestor"))},
                        blobs)
