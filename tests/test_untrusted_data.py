"""Trace data is untrusted: nothing from it is ever executed, evaluated or interpolated, and the
only server memeval starts listens on loopback.

(a) a static scan of memeval/ for the calls that turn data into code (eval, pickle, yaml.load, a
    shell, …); (b) a run over rows full of interpolation, template and code payloads, which must
    come out as the literal text they went in as; (c) the Phoenix server refuses any non-loopback
    host before anything is started.
"""

from __future__ import annotations

import ast
import json
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import DictConfig

from memeval.reporting.phoenix import server as server_module
from memeval.reporting.phoenix.server import LOOPBACK, PhoenixSettings, serve
from memeval.runner import run_experiment
from tests.loopback import LoopbackServer, Received, Reply

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memeval"

# --- (a) static scan --------------------------------------------------------------------------

# Calls that run or deserialise arbitrary code, by fully qualified name (after import aliases).
BANNED = {
    "eval": "evaluates a string as Python",
    "exec": "executes a string as Python",
    "compile": "compiles a string to code (the builtin; re.compile is fine)",
    "__import__": "imports a module named by a string",
    "pickle.load": "unpickling runs arbitrary code",
    "pickle.loads": "unpickling runs arbitrary code",
    "pickle.Unpickler": "unpickling runs arbitrary code",
    "marshal.load": "loads code objects",
    "marshal.loads": "loads code objects",
    "shelve.open": "a pickle store",
    "dill.load": "unpickling runs arbitrary code",
    "dill.loads": "unpickling runs arbitrary code",
    "cloudpickle.load": "unpickling runs arbitrary code",
    "cloudpickle.loads": "unpickling runs arbitrary code",
    "joblib.load": "unpickles",
    "pandas.read_pickle": "unpickles",
    "yaml.load": "can construct arbitrary Python objects (use yaml.safe_load)",
    "yaml.load_all": "can construct arbitrary Python objects (use yaml.safe_load_all)",
    "yaml.unsafe_load": "constructs arbitrary Python objects",
    "yaml.unsafe_load_all": "constructs arbitrary Python objects",
    "yaml.full_load": "constructs Python objects (use yaml.safe_load)",
    "yaml.full_load_all": "constructs Python objects (use yaml.safe_load_all)",
    "os.system": "runs a shell",
    "os.popen": "runs a shell",
    "subprocess.getoutput": "always runs a shell",
    "subprocess.getstatusoutput": "always runs a shell",
}
SUBPROCESS = {"subprocess.run", "subprocess.Popen", "subprocess.call", "subprocess.check_call",
              "subprocess.check_output"}

# (path relative to the repo, qualified call name) -> why that call is safe. An entry needs a
# reason a reviewer can check, e.g. "loads a file memeval itself wrote in the same process, never
# one that came with a dataset".
ALLOWED: dict[tuple[str, str], str] = {
    ("memeval/utils/fit_cache.py", "pickle.loads"):
        "unpickles only a fitted-model entry whose HMAC verifies with this user's own key, kept "
        "outside the cache directory; any other bytes are refitted "
        "(tests/utils/test_fit_cache.py plants one)",
}


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from every import in the module (at any depth)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:  # `import os.path` binds `os`
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(func: ast.expr, aliases: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None  # a call on a call's result, a subscript, …: no static name
    parts.append(aliases.get(func.id, func.id))
    name = ".".join(reversed(parts))
    return name.removeprefix("builtins.")  # `builtins.eval(...)` is `eval(...)`


def _keyword_is(call: ast.Call, name: str, value: object) -> bool:
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is value
               for k in call.keywords)


def dangerous_calls(source: str, filename: str = "<snippet>") -> Iterator[tuple[int, str, str]]:
    """(line, qualified name, why) for every call in `source` that could run data as code."""
    tree = ast.parse(source, filename=filename)
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _qualified(node.func, aliases)
        if name is None:
            continue
        if name in BANNED:
            yield node.lineno, name, BANNED[name]
        elif name in SUBPROCESS and not (
            _keyword_is(node, "shell", False) or all(k.arg != "shell" for k in node.keywords)
        ):
            yield node.lineno, name, "shell=True (or a shell flag not literally False)"
        elif name == "torch.load" and not _keyword_is(node, "weights_only", True):
            yield node.lineno, name, "unpickles unless weights_only=True"
        elif name == "numpy.load" and not all(
            k.arg != "allow_pickle" or _keyword_is(node, "allow_pickle", False)
            for k in node.keywords
        ):
            yield node.lineno, name, "allow_pickle unpickles"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_turns_data_into_code() -> None:
    """Every module parses (a syntax error would hide calls) and none calls a banned function."""
    modules = _modules()
    assert len(modules) > 50, f"only {len(modules)} modules found under {PACKAGE}"
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in modules:
        relative = path.relative_to(ROOT).as_posix()
        for line, name, why in dangerous_calls(path.read_text(encoding="utf-8"), relative):
            if (relative, name) in ALLOWED:
                used.add((relative, name))
            else:
                found.append(f"{relative}:{line}: {name}: {why}")
    assert not found, "\n".join(found)
    assert used == set(ALLOWED), f"stale allow-list entries: {set(ALLOWED) - used}"


BAD_SNIPPETS = [
    "eval(text)",
    "exec(row['assistant_response'])",
    "code = compile(src, 'x', 'exec')",
    "__import__(name)",
    "import builtins\nbuiltins.eval(text)",
    "import pickle\npickle.loads(blob)",
    "import pickle as pk\npk.load(f)",
    "from pickle import loads as unpack\nunpack(blob)",
    "import marshal\nmarshal.loads(b)",
    "import yaml\nyaml.load(text, Loader=yaml.Loader)",
    "import yaml\nyaml.unsafe_load(text)",
    "from yaml import full_load\nfull_load(text)",
    "import subprocess\nsubprocess.run(cmd, shell=True)",
    "import subprocess as sp\nsp.Popen(cmd, shell=flag)",
    "from subprocess import check_output\ncheck_output(cmd, shell=True)",
    "import subprocess\nsubprocess.getoutput(cmd)",
    "import os\nos.system('ls ' + path)",
    "from os import popen\npopen(cmd)",
    "import torch\ntorch.load(path)",
    "import torch\ntorch.load(path, weights_only=False)",
    "import pandas as pd\npd.read_pickle(path)",
    "import numpy as np\nnp.load(path, allow_pickle=True)",
    "def f():\n    import shelve\n    return shelve.open(path)",
]


@pytest.mark.parametrize("snippet", BAD_SNIPPETS)
def test_the_scan_flags_a_planted_call(snippet: str) -> None:
    """The detector is not vacuous: each planted call is found, once."""
    assert len(list(dangerous_calls(snippet))) == 1, snippet


SAFE_SNIPPETS = [
    "import re\nre.compile(r'x')",
    "import yaml\nyaml.safe_load(text)",
    "import subprocess\nsubprocess.run(['git', 'status'], check=True)",
    "import subprocess\nsubprocess.run(['ls'], shell=False)",
    "import torch\ntorch.load(path, weights_only=True)",
    "import numpy as np\nnp.load(path)",
    "import ast\nast.literal_eval(text)",
    "model.eval()",
    "self.exec(x)",
    "json.loads(text)",
]


@pytest.mark.parametrize("snippet", SAFE_SNIPPETS)
def test_the_scan_passes_safe_lookalikes(snippet: str) -> None:
    assert list(dangerous_calls(snippet)) == [], snippet


# --- (b) payloads in the data come out literally ---------------------------------------------

CANARY_ENV = "MEMEVAL_TEST_CANARY"


def _payloads(canary_file: Path) -> list[str]:
    """Each would change shape if anything interpolated, formatted, rendered or ran it."""
    return [
        "${oc.env:HOME}",
        "${oc.env:" + CANARY_ENV + "}",
        "${now:%Y}",
        "${hydra:runtime.cwd}",
        "{0.__class__}",
        "{user_prompt} {assistant_text}",  # the judge template's own field names
        "{{7*7}}",
        "{% for x in range(3) %}loop{% endfor %}",
        "%(asctime)s %s %d",
        f"__import__('os').system('touch {canary_file}')",
        f"exec(\"open('{canary_file}', 'w')\")",
        f"!!python/object/apply:os.system ['touch {canary_file}']",
    ]


def _chat(req: Received) -> Reply:
    """A memory for the substantive payload row (it is stored), SKIP for the rest."""
    sent = req.body["messages"][-1]["content"]
    text = ("The config loader in src/config.py keeps template syntax verbatim."
            if "loader" in sent else "SKIP")
    return Reply(200, {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                 "total_tokens": 2}})


@pytest.mark.slow
def test_payloads_in_the_data_are_kept_literally_and_never_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fast_config: Callable[..., DictConfig]) -> None:
    """Interpolation, format, template and code payloads reach the judge, the stores and Phoenix's
    files character for character; no environment value shows up and nothing was executed."""
    canary = "canary-" + secrets.token_hex(8)
    monkeypatch.setenv(CANARY_ENV, canary)
    canary_file = tmp_path / "PAYLOAD_RAN"
    payloads = _payloads(canary_file)
    blob = " | ".join(payloads)
    rows = [
        {"user_prompt": "${oc.env:HOME} {0.__class__}", "label": "substantive",
         "assistant_response": "The config loader in `src/config.py` keeps these strings "
                               f"verbatim and never resolves them: {blob}"},
        {"user_prompt": "status?", "label": "noise",  # past the pre-filter: judged, SKIPped
         "assistant_response": f"Still working on it, here is the paste again: {blob}"},
    ]
    rows += [{"user_prompt": "ok", "assistant_response": f"Done. Step {i} finished without "
              "problems, moving on to the next part of the checklist now.", "label": "noise"}
             for i in range(12)]
    data = tmp_path / "payloads.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = tmp_path / "run"
    with LoopbackServer(_chat) as judge:
        run_experiment(fast_config("+experiment=three_pass", "dataset=labeled_jsonl",
                                   f"dataset.path={data}", "plots=false", "judge=openai_chat",
                                   f"judge.base_url={judge.base_url}/v1"), run)
        sent = [r.body["messages"][-1]["content"] for r in judge.requests]

    assert not canary_file.exists(), "a payload was executed"
    assert any(blob in text for text in sent), "the judge did not get the payloads verbatim"
    records = [json.loads(line) for name in ("rejection_store.jsonl", "accept_store.jsonl")
               for line in (run / "state" / name).read_text().splitlines()]
    stored = [r["asst_text"] for r in records] + [r["user_prefix"] for r in records]
    examples = [json.loads(line) for line in
                (run / "phoenix" / "examples.jsonl").read_text().splitlines()]
    shown = [e["assistant_response"] for e in examples] + [e["user_prompt"] for e in examples]
    for payload in payloads:
        assert any(payload in text for text in stored), f"{payload!r} not kept in the stores"
        assert any(payload in text for text in shown), f"{payload!r} not kept for Phoenix"
    assert "${oc.env:HOME} {0.__class__}" in stored  # the user prompt, too
    decisions = pq.read_table(run / "decisions.parquet").to_pylist()
    assert {d["entry_id"] for d in decisions} >= {"payloads:1", "payloads:2"}
    for path in (p for p in run.rglob("*") if p.is_file()):
        assert canary.encode() not in path.read_bytes(), f"an env value was interpolated: {path}"


# --- (c) servers bind loopback only ------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "10.0.0.1", "phoenix.example.com",
                                  "localhost.example.com", "127.0.0.1.nip.io"])
def test_phoenix_serve_refuses_a_non_loopback_host_before_starting_anything(
        host: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`memeval phoenix serve` takes its host only from PHOENIX_HOST; a non-loopback one exits 2
    with the fix, and no process is started (so nothing ever listened)."""
    def no_popen(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(server_module.subprocess, "Popen", no_popen)
    monkeypatch.setenv("PHOENIX_HOST", host)
    monkeypatch.setenv("PHOENIX_WORKING_DIR", str(tmp_path))
    assert serve() == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and f"set it to {LOOPBACK}" in err
    with pytest.raises(ValueError, match="not a loopback address"):
        PhoenixSettings(host=host, working_dir=tmp_path)


def test_phoenix_child_environment_is_pinned_to_loopback(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """Whatever our own environment says, the child Phoenix is told 127.0.0.1 and runs with the
    features that would open more listeners or run commands switched off."""
    monkeypatch.setenv("PHOENIX_HOST", "0.0.0.0")
    monkeypatch.setenv("PHOENIX_ENABLE_PROMETHEUS", "true")
    env = PhoenixSettings(host="localhost", working_dir=tmp_path).environment()
    assert env["PHOENIX_HOST"] == LOOPBACK
    assert env["PHOENIX_ENABLE_PROMETHEUS"] == "false"
    assert env["PHOENIX_AGENTS_DISABLE_BASH"] == "true"


def test_the_cli_has_no_way_to_choose_a_host(tmp_path: Path) -> None:
    """`phoenix serve` offers no --host flag; a user who tries one gets a usage error."""
    done = subprocess.run([sys.executable, "-m", "memeval", "phoenix", "serve", "--host",
                           "0.0.0.0"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "unrecognized arguments: --host" in done.stderr


LISTENING_CALLS = {"bind", "listen", "create_server", "HTTPServer", "ThreadingHTTPServer",
                   "TCPServer", "serve_forever", "run_simple", "add_insecure_port"}
# Modules that may open a listening socket, each with the test that keeps it on loopback.
LISTENERS = {
    # port_taken()/free_port() bind a probe socket and close it at once; the server itself is a
    # Phoenix child, pinned to 127.0.0.1 (tests above and tests/phoenix/test_server.py).
    "memeval/reporting/phoenix/server.py",
    # `python -m memeval serve`: make_server() refuses any host but loopback before binding
    # (tests/systems/test_serve.py::test_serve_refuses_any_host_but_loopback and the one below).
    "memeval/serve/http.py",
}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5"])
def test_the_serve_module_binds_nothing_but_loopback(host: str) -> None:
    from memeval.serve.http import make_server

    with pytest.raises(ValueError, match="not a loopback address"):
        make_server({}, host, 0)


def test_only_the_phoenix_module_opens_sockets() -> None:
    """A new server anywhere else in memeval must be reviewed for its bind address first."""
    found: set[str] = set()
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in LISTENING_CALLS:
                    found.add(path.relative_to(ROOT).as_posix())
    assert found == LISTENERS
