"""A local Arize Phoenix server, a child process on loopback, for `memeval phoenix serve` and tests.

Phoenix is never imported here: importing anything under `phoenix` costs ~10 s and ~400 MB, so
it always runs as a child, `python -m memeval.reporting.phoenix.launch serve` (Phoenix's own
`phoenix.server.main`, its gRPC listener moved to loopback), in its own session so that a Ctrl-C
in the terminal reaches only us and we decide how the child stops. Its output goes to
`<working_dir>/phoenix-server.log`, rewritten at every start; its data (`phoenix.db`) stays there.

What Phoenix (20.x) binds:
    HTTP  127.0.0.1:<port>        UI, REST, GraphQL, /healthz and OTLP over HTTP at /v1/traces;
                                  PHOENIX_HOST decides the address and we pin it to 127.0.0.1.
    gRPC  127.0.0.1:<grpc_port>   OTLP over gRPC. Phoenix hard-codes every interface ([::])
                                  here, whatever PHOENIX_HOST says; launch.py rewrites it to
                                  loopback. memeval itself exports over HTTP only.
Prometheus would bind [::]:9090 as well, so the child always runs with it off.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import httpx

from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import MAX_BODY_BYTES, ReadRefused, read_whole
from memeval.utils.serving import is_loopback, terminate_as_interrupt

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 6006
DEFAULT_GRPC_PORT = 4317
LOG_NAME = "phoenix-server.log"
COMMAND = ("-m", "memeval.reporting.phoenix.launch", "serve")
STOP_TIMEOUT_S = 10.0  # SIGTERM → SIGKILL: Phoenix shuts down in well under a second when idle
KILL_WAIT_S = 5.0  # how long a SIGKILLed child may take to be reaped before we give up on it


def default_working_dir() -> Path:
    return Path.home() / ".cache" / "memeval" / "phoenix"


class PhoenixServerError(RuntimeError):
    """Phoenix could not be started, did not become healthy, or exited on its own."""


def _check_port(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValueError(f"{name} must be an integer port in 1..65535, got {value!r}")
    return value


def _port_from(environ: Mapping[str, str], variable: str, default: int) -> int:
    raw = environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise ValueError(f"{variable} must be an integer port in 1..65535, got {raw!r}")
    return port


@dataclass
class PhoenixSettings:
    """Where the child listens and keeps its data. Any loopback spelling of `host` is pinned to
    127.0.0.1, the one address the health check and the printed URLs use; others are refused."""

    host: str = LOOPBACK
    port: int = DEFAULT_PORT
    grpc_port: int = DEFAULT_GRPC_PORT
    working_dir: Path = field(default_factory=default_working_dir)

    def __post_init__(self) -> None:
        if not is_loopback(self.host):
            raise ValueError(
                f"Phoenix host {self.host!r} is not a loopback address: memeval only starts "
                f"Phoenix on {LOOPBACK}, so traces and its unauthenticated UI stay on this machine"
            )
        self.host = LOOPBACK
        _check_port("port", self.port)
        _check_port("grpc_port", self.grpc_port)
        if self.port == self.grpc_port:
            raise ValueError(f"port and grpc_port must differ, both are {self.port}")
        self.working_dir = Path(self.working_dir).expanduser()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> PhoenixSettings:
        """Phoenix's own variables, so `PHOENIX_PORT=… memeval phoenix serve` does what it says.
        Empty values count as unset."""
        host = environ.get("PHOENIX_HOST", "").strip()
        if host and not is_loopback(host):
            raise ValueError(
                f"PHOENIX_HOST={host!r} is not a loopback address: memeval only starts Phoenix "
                f"on {LOOPBACK}. Unset PHOENIX_HOST or set it to {LOOPBACK}."
            )
        working_dir = environ.get("PHOENIX_WORKING_DIR", "").strip()
        return cls(
            port=_port_from(environ, "PHOENIX_PORT", DEFAULT_PORT),
            grpc_port=_port_from(environ, "PHOENIX_GRPC_PORT", DEFAULT_GRPC_PORT),
            working_dir=Path(working_dir) if working_dir else default_working_dir(),
        )

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def otlp_http_endpoint(self) -> str:
        return f"{self.url}/v1/traces"

    @property
    def log_path(self) -> Path:
        return self.working_dir / LOG_NAME

    def environment(self) -> dict[str, str]:
        """The child's environment: ours, with the PHOENIX_* settings that keep it local forced."""
        env = dict(os.environ)
        env.update(
            PHOENIX_HOST=LOOPBACK,
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_WORKING_DIR=str(self.working_dir),
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            PHOENIX_ENABLE_PROMETHEUS="false",  # it would bind [::]:9090
            # Phoenix's agent assistant can run shell commands on the server; memeval needs
            # neither, and nothing should ever execute on the strength of trace data.
            PHOENIX_AGENTS_DISABLE_BASH="true",
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
            PYTHONUNBUFFERED="1",  # the log tail we show on failure is then current
        )
        # Migrations echo every SQL statement (thousands of lines) and bury the tail we show.
        env.setdefault("PHOENIX_LOG_MIGRATIONS", "false")
        return env


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1 right now (the OS may hand it out again later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def port_taken(port: int, host: str = LOOPBACK) -> bool:
    """Binding is the check: nothing is sent. SO_REUSEADDR, as uvicorn sets it, so the TIME_WAIT
    leftovers of a server just stopped do not count, while any listener still does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            log.seek(max(0, log.tell() - 64_000))
            text = log.read().decode("utf-8", errors="replace")
    except OSError as err:
        return f"(no log: {err})"
    return "\n".join(text.splitlines()[-lines:]) or "(the log is empty)"


class PhoenixServer:
    """One Phoenix child process. As a context manager: started and healthy inside, stopped after.
    POSIX only (process groups)."""

    def __init__(self, settings: PhoenixSettings | None = None) -> None:
        self.settings = settings if settings is not None else PhoenixSettings.from_environment()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def log_path(self) -> Path:
        return self.settings.log_path

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        if self.running:
            raise PhoenixServerError(f"this Phoenix server is already running at {self.url}")
        if importlib.util.find_spec("phoenix") is None:  # locates the package, does not import it
            raise PhoenixServerError(
                f"arize-phoenix is not installed for {sys.executable}: pip install arize-phoenix"
            )
        settings = self.settings
        if port_taken(settings.port):
            raise PhoenixServerError(
                f"port {settings.port} on {LOOPBACK} is already in use (another Phoenix?): stop "
                "whatever listens there or choose another port with PHOENIX_PORT"
            )
        if port_taken(settings.grpc_port):
            raise PhoenixServerError(
                f"gRPC port {settings.grpc_port} is already in use (another Phoenix?): stop "
                "whatever listens there or choose another port with PHOENIX_GRPC_PORT"
            )
        settings.working_dir.mkdir(parents=True, exist_ok=True)
        with settings.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, *COMMAND],
                env=settings.environment(),
                cwd=settings.working_dir,  # `-m` puts the cwd on sys.path: keep it ours
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        atexit.register(self.stop)  # a caller that forgets stop() leaves no orphan behind

    def wait_healthy(self, timeout_s: float = 90.0, interval_s: float = 0.25) -> None:
        """Poll /healthz until 200. The process is checked first on every round, so an answer
        from some other server on the port never passes for ours once ours has died."""
        process = self.process
        if process is None:
            raise PhoenixServerError("Phoenix was not started")
        deadline = time.monotonic() + timeout_s
        # trust_env=False: no HTTP(S)_PROXY may route this anywhere but loopback.
        with BoundedClient(timeout=2.0, trust_env=False) as client:
            while True:
                code = process.poll()
                if code is not None:
                    raise PhoenixServerError(
                        f"Phoenix exited with code {code} before it became healthy; "
                        f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                    )
                try:  # the whole answer within 2 s: a server that stalls it is not healthy yet
                    if read_whole(client, "GET", f"{self.url}/healthz", timeout_s=2.0,
                                  max_bytes=MAX_BODY_BYTES).status_code == 200:
                        return
                except (httpx.TransportError, ReadRefused):
                    pass
                if time.monotonic() >= deadline:
                    raise PhoenixServerError(
                        f"Phoenix did not answer {self.url}/healthz within {timeout_s:g} s; "
                        f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                    )
                time.sleep(interval_s)

    def wait(self) -> int:
        """Block until the child exits; its return code."""
        if self.process is None:
            raise PhoenixServerError("Phoenix was not started")
        return self.process.wait()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """SIGTERM to the child's process group (Phoenix shuts down in well under a second),
        SIGKILL if it is still there after `timeout_s`; True when it had to be killed. Bounded:
        a child that outlives SIGKILL too is an error naming its pid, never an endless wait.
        Safe to call any number of times."""
        atexit.unregister(self.stop)
        process = self.process
        if process is None or process.poll() is not None:
            return False
        self._signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout_s)
            return False
        except subprocess.TimeoutExpired:
            self._signal_group(process, signal.SIGKILL)
        try:
            process.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            raise PhoenixServerError(f"Phoenix (pid {process.pid}) did not exit even "
                                     f"{KILL_WAIT_S:g} s after SIGKILL") from None
        return True

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
        # Only while the leader is unreaped, so its pid (the group id) cannot have been reused.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)

    def __enter__(self) -> PhoenixServer:
        self.start()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop(server: PhoenixServer) -> bool:
    """Stop within STOP_TIMEOUT_S + KILL_WAIT_S, saying so when Phoenix had to be killed; False
    when even SIGKILL left it running."""
    try:
        try:
            killed = server.stop(timeout_s=STOP_TIMEOUT_S)
        except KeyboardInterrupt:  # a second Ctrl-C while it shuts down: do not wait longer
            killed = server.stop(timeout_s=0)
    except PhoenixServerError as err:
        print(f"memeval phoenix: {err}", file=sys.stderr)
        return False
    if killed:
        print(f"memeval phoenix: Phoenix did not stop within {STOP_TIMEOUT_S:g} s of SIGTERM; "
              f"killed it (SIGKILL). Its last log lines, {server.log_path}:\n"
              f"{log_tail(server.log_path)}", file=sys.stderr)
    return True


def serve(settings: PhoenixSettings | None = None, out: TextIO | None = None) -> int:
    """Run Phoenix in the foreground until Ctrl-C (exit 0) or until it dies (non-zero, with the
    log tail on stderr). `out` gets the URLs and defaults to sys.stdout; errors go to stderr."""
    out = sys.stdout if out is None else out
    try:
        settings = settings if settings is not None else PhoenixSettings.from_environment()
    except ValueError as err:
        print(f"memeval phoenix: {err}", file=sys.stderr)
        return 2
    server = PhoenixServer(settings)
    with terminate_as_interrupt():
        try:
            server.start()
            pid = server.process.pid if server.process is not None else None
            print(f"Starting Phoenix (pid {pid}, log {server.log_path}) …", file=out, flush=True)
            server.wait_healthy()
            print(
                f"Phoenix is ready at {settings.url}\n"
                f"OTLP over HTTP: {settings.otlp_http_endpoint}\n"
                f"  export PHOENIX_COLLECTOR_ENDPOINT={settings.url}\n"
                f"OTLP over gRPC: {LOOPBACK}:{settings.grpc_port}\n"
                "Press Ctrl-C to stop.",
                file=out,
                flush=True,
            )
            code = server.wait()
            print(
                f"memeval phoenix: Phoenix exited on its own with code {code}; "
                f"last lines of {server.log_path}:\n{log_tail(server.log_path)}",
                file=sys.stderr,
            )
            return code if code > 0 else 1
        except KeyboardInterrupt:
            print("Stopping Phoenix …", file=out, flush=True)
            if not _stop(server):
                return 1
            print("Phoenix stopped.", file=out, flush=True)
            return 0
        except (PhoenixServerError, OSError) as err:  # OSError: working dir or log not writable
            print(f"memeval phoenix: {err}", file=sys.stderr)
            return 1
        finally:
            _stop(server)
