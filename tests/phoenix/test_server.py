"""PhoenixSettings from the environment, and a real Phoenix child kept on loopback."""

from __future__ import annotations

import contextlib
import fcntl
import io
import ipaddress
import os
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from memeval.reporting.phoenix import server as server_module
from memeval.reporting.phoenix.server import (
    LOG_NAME,
    PhoenixServer,
    PhoenixServerError,
    PhoenixSettings,
    port_taken,
    serve,
)
from tests.phoenix.conftest import free_ports

REPO = Path(__file__).resolve().parents[2]


def healthz(url: str) -> int:
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        return client.get(f"{url}/healthz").status_code


# --- settings (no server) ---------------------------------------------------------------------


def test_from_environment_reads_phoenix_variables(tmp_path: Path) -> None:
    settings = PhoenixSettings.from_environment(
        {"PHOENIX_PORT": "7006", "PHOENIX_GRPC_PORT": "5317", "PHOENIX_WORKING_DIR": str(tmp_path)}
    )
    assert (settings.host, settings.port, settings.grpc_port) == ("127.0.0.1", 7006, 5317)
    assert settings.working_dir == tmp_path
    assert settings.url == "http://127.0.0.1:7006"
    assert settings.otlp_http_endpoint == "http://127.0.0.1:7006/v1/traces"
    assert settings.log_path == tmp_path / LOG_NAME


def test_from_environment_defaults() -> None:
    settings = PhoenixSettings.from_environment({"PHOENIX_PORT": ""})
    assert (settings.port, settings.grpc_port) == (6006, 4317)
    assert settings.working_dir == Path.home() / ".cache" / "memeval" / "phoenix"


@pytest.mark.parametrize("variable", ["PHOENIX_PORT", "PHOENIX_GRPC_PORT"])
@pytest.mark.parametrize("value", ["abc", "0", "65536", "-1", "tcp://10.0.0.1:6006"])
def test_bad_port_names_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=rf"{variable} must be an integer port in 1\.\.65535"):
        PhoenixSettings.from_environment({variable: value})


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.com"])
def test_non_loopback_phoenix_host_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match=r"PHOENIX_HOST=.*not a loopback address"):
        PhoenixSettings.from_environment({"PHOENIX_HOST": host})


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_host_is_pinned_to_127_0_0_1(host: str) -> None:
    assert PhoenixSettings.from_environment({"PHOENIX_HOST": host}).host == "127.0.0.1"
    assert PhoenixSettings(host=host).host == "127.0.0.1"


def test_settings_refuse_non_loopback_host_and_bad_ports() -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        PhoenixSettings(host="0.0.0.0")
    with pytest.raises(ValueError, match="port must be an integer port"):
        PhoenixSettings(port=70000)
    with pytest.raises(ValueError, match="must differ"):
        PhoenixSettings(port=5000, grpc_port=5000)


def test_environment_keeps_the_child_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHOENIX_HOST", "0.0.0.0")  # an inherited value must not leak through
    monkeypatch.setenv("PHOENIX_TELEMETRY_ENABLED", "true")
    monkeypatch.setenv("MEMEVAL_SENTINEL", "kept")
    env = PhoenixSettings(port=7006, grpc_port=5317, working_dir=tmp_path).environment()
    assert env["PHOENIX_HOST"] == "127.0.0.1"
    assert env["PHOENIX_PORT"] == "7006"
    assert env["PHOENIX_GRPC_PORT"] == "5317"
    assert env["PHOENIX_WORKING_DIR"] == str(tmp_path)
    assert env["PHOENIX_TELEMETRY_ENABLED"] == "false"
    assert env["PHOENIX_ALLOW_EXTERNAL_RESOURCES"] == "false"
    assert env["PHOENIX_ENABLE_PROMETHEUS"] == "false"
    assert env["MEMEVAL_SENTINEL"] == "kept"


def test_serve_refuses_a_bad_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PHOENIX_HOST", "0.0.0.0")
    assert serve() == 2
    assert "PHOENIX_HOST" in capsys.readouterr().err


@pytest.mark.parametrize("which", ["port", "grpc_port"])
def test_start_refuses_a_taken_port_before_launching(tmp_path: Path, which: str) -> None:
    port, grpc_port = free_ports(2)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port if which == "port" else grpc_port))
        listener.listen()
        settings = PhoenixSettings(port=port, grpc_port=grpc_port, working_dir=tmp_path)
        server = PhoenixServer(settings)
        variable = "PHOENIX_PORT" if which == "port" else "PHOENIX_GRPC_PORT"
        with pytest.raises(PhoenixServerError, match=rf"already in use.*{variable}"):
            server.start()
    assert server.process is None
    server.stop()  # idempotent, also when never started


# --- failure paths, with a small fake in place of Phoenix (no real start-up) ------------------

FAKE_HEALTHZ_THEN_EXIT = """
import http.server, os, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"OK")
    def log_message(self, *args):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", int(os.environ["PHOENIX_PORT"])), Handler)
httpd.handle_request()
print("fake phoenix gives up", flush=True)
sys.exit(5)
"""


def fake_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, code: str) -> PhoenixServer:
    monkeypatch.setattr(server_module, "COMMAND", ("-c", code))
    port, grpc_port = free_ports(2)
    return PhoenixServer(PhoenixSettings(port=port, grpc_port=grpc_port, working_dir=tmp_path))


def test_child_that_dies_before_healthy_raises_with_the_log_tail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = fake_server(monkeypatch, tmp_path, "print('no such luck', flush=True); exit(3)")
    server.start()
    with pytest.raises(PhoenixServerError, match=r"(?s)exited with code 3.*no such luck"):
        server.wait_healthy(timeout_s=30)
    server.stop()


def test_timeout_raises_and_stop_escalates_to_sigkill(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('deaf to SIGTERM', flush=True); time.sleep(120)")
    server = fake_server(monkeypatch, tmp_path, code)
    server.start()
    deadline = time.monotonic() + 30
    while "deaf" not in server.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(PhoenixServerError, match=r"(?s)/healthz within 0\.5 s.*deaf"):
        server.wait_healthy(timeout_s=0.5)
    assert server.stop(timeout_s=0.5) is True  # it had to be killed, and says so
    assert server.process is not None and server.process.returncode == -signal.SIGKILL
    assert server.stop() is False


FAKE_HEALTHY_DEAF_TO_SIGTERM = """
import http.server, os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"OK")
    def log_message(self, *args):
        pass
print("healthy and deaf", flush=True)
http.server.HTTPServer(("127.0.0.1", int(os.environ["PHOENIX_PORT"])), Handler).serve_forever()
"""


@pytest.mark.faults
def test_serve_stops_on_ctrl_c_even_when_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A background job inherits SIGINT ignored, so Python installs no Ctrl-C handler: serve must
    take SIGINT itself, and a child deaf to SIGTERM is killed within the bound and reported."""
    port, grpc_port = free_ports(2)
    env = dict(os.environ, PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc_port),
               PHOENIX_WORKING_DIR=str(tmp_path))
    env.pop("PHOENIX_HOST", None)
    code = ("import sys; import memeval.reporting.phoenix.server as m; "
            f"m.COMMAND = ('-c', {FAKE_HEALTHY_DEAF_TO_SIGTERM!r}); m.STOP_TIMEOUT_S = 0.5; "
            "sys.exit(m.serve())")
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("Phoenix is ready at"):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Phoenix stopped." in out
    assert "did not stop within 0.5 s of SIGTERM; killed it (SIGKILL)" in err
    assert "healthy and deaf" in err  # the report carries the log's last lines
    assert not port_taken(port)


def test_serve_returns_non_zero_with_the_log_tail_when_the_child_dies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_server(monkeypatch, tmp_path, FAKE_HEALTHZ_THEN_EXIT)
    out = io.StringIO()
    assert serve(server.settings, out=out) == 5
    assert f"Phoenix is ready at {server.url}" in out.getvalue()
    err = capsys.readouterr().err
    assert "exited on its own with code 5" in err
    assert "fake phoenix gives up" in err


def test_sigterm_to_serve_stops_the_child_too(tmp_path: Path) -> None:
    """The child has its own session, so only our handler keeps it from outliving `serve()`."""
    port, grpc_port = free_ports(2)
    fake = FAKE_HEALTHZ_THEN_EXIT.replace("httpd.handle_request()", "httpd.serve_forever()")
    code = ("import sys; import memeval.reporting.phoenix.server as s; "
            f"s.COMMAND = ('-c', {fake!r}); sys.exit(s.serve())")
    env = dict(os.environ, PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(grpc_port),
               PHOENIX_WORKING_DIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child_pid = None
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        child_pid = int(first.split("pid ")[1].split(",")[0])
        assert proc.stdout.readline().startswith("Phoenix is ready at")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        with pytest.raises(ProcessLookupError):
            os.kill(child_pid, 0)
        assert not port_taken(port)
    finally:
        reap(proc, child_pid)


def reap(proc: subprocess.Popen[str], child_pid: int | None) -> None:
    """A failed test must not leave `serve()` or its Phoenix child running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if child_pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child_pid, signal.SIGKILL)


# --- a real server (session fixture) ----------------------------------------------------------


def non_loopback_ipv4() -> list[str]:
    """This machine's own interface addresses (Linux ioctl; no DNS, nothing sent)."""
    found = []
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                raw = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))
            except OSError:  # no IPv4 address on this interface
                continue
        address = socket.inet_ntoa(raw[20:24])
        if not ipaddress.ip_address(address).is_loopback:
            found.append(address)
    return found


@pytest.mark.integration
def test_healthz_answers(phoenix_url: str) -> None:
    assert healthz(phoenix_url) == 200


@pytest.mark.integration
@pytest.mark.parametrize("which", ["port", "grpc_port"])
def test_ports_are_bound_on_loopback_only(phoenix_server: PhoenixServer, which: str) -> None:
    """HTTP by PHOENIX_HOST; OTLP/gRPC (hard-coded by Phoenix to every interface) by launch.py."""
    port = getattr(phoenix_server.settings, which)
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    addresses = non_loopback_ipv4()
    if not addresses:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    for address in addresses:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, port), timeout=5).close()


@pytest.mark.integration
def test_second_server_on_the_same_port_fails_clearly(
    phoenix_server: PhoenixServer, tmp_path: Path
) -> None:
    (grpc_port,) = free_ports(1)
    settings = PhoenixSettings(
        port=phoenix_server.settings.port, grpc_port=grpc_port, working_dir=tmp_path
    )
    second = PhoenixServer(settings)
    with pytest.raises(PhoenixServerError, match=rf"port {settings.port} .* already in use"):
        second.start()
    assert second.process is None
    assert phoenix_server.running
    assert healthz(phoenix_server.url) == 200


@pytest.mark.integration
def test_serve_runs_until_ctrl_c_and_leaves_nothing_behind(tmp_path: Path) -> None:
    port, grpc_port = free_ports(2)
    env = dict(
        os.environ,
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        PHOENIX_WORKING_DIR=str(tmp_path),
    )
    env.pop("PHOENIX_HOST", None)
    code = "import sys; from memeval.reporting.phoenix.server import serve; sys.exit(serve())"
    proc = subprocess.Popen(  # started as from a background job: SIGINT inherited ignored
        [sys.executable, "-c", code], cwd=REPO, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None and proc.stderr is not None
    stdout = proc.stdout

    def read() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    phoenix_pid = None
    try:
        deadline = time.monotonic() + 180
        seen: list[str] = []
        while not any(line.startswith("Phoenix is ready at") for line in seen):
            try:
                seen.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                pytest.fail(f"serve() printed no URL in time: {seen}")
            if seen[-1].startswith("Starting Phoenix (pid "):
                phoenix_pid = int(seen[-1].split("pid ")[1].split(",")[0])
        url = f"http://127.0.0.1:{port}"
        assert f"Phoenix is ready at {url}\n" in seen
        assert phoenix_pid is not None
        assert healthz(url) == 200

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        assert not port_taken(port)
        assert not port_taken(grpc_port, "0.0.0.0")
        with pytest.raises(ProcessLookupError):
            os.kill(phoenix_pid, 0)
        assert (tmp_path / LOG_NAME).stat().st_size > 0
    finally:
        reap(proc, phoenix_pid)
