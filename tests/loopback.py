"""A scripted HTTP server on 127.0.0.1 for wire-format tests: no test ever leaves loopback.

`LoopbackServer(responder)` binds port 0 in a background thread, records every request it
receives (path, headers, JSON body) and answers with whatever the responder returns for it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it was not JSON


@dataclass
class Reply:
    status: int = 200
    json_body: Any = None
    text: str | None = None  # sent verbatim instead of json_body when set
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering, to provoke client timeouts
    trickle_s: float = 0.0  # send the body a byte at a time, this long apart (a stalling server)
    sized: bool = True  # False: no content-length, the body ends when the connection closes


Responder = Callable[[Received], Reply]


def scripted(replies: Iterable[Reply], then: Responder | Reply) -> Responder:
    """Answer with `replies` in order, then with `then` for every later request."""
    queue = list(replies)
    lock = threading.Lock()

    def respond(request: Received) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return then(request) if callable(then) else then

    return respond


class LoopbackServer:
    """Use as a context manager; `requests` lists what arrived, `hits` counts it."""

    def __init__(self, responder: Responder, port: int = 0) -> None:
        self.responder = responder
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = port  # 0: any free port; a stopped server restarts on the one it had

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> LoopbackServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                self._answer("POST")

            def do_GET(self) -> None:
                self._answer("GET")

            def do_DELETE(self) -> None:
                self._answer("DELETE")

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode("utf-8")
                try:
                    body: Any = json.loads(raw)
                except json.JSONDecodeError:
                    body = raw
                request = Received(
                    method=method,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with server._lock:
                    server.requests.append(request)
                reply = server.responder(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (
                    reply.text if reply.text is not None else json.dumps(reply.json_body)
                ).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    content_type = "text/plain" if reply.text is not None else "application/json"
                    self.send_header("content-type", content_type)
                    if reply.sized:
                        self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if not reply.trickle_s:
                        self.wfile.write(payload)
                    for byte in payload if reply.trickle_s else b"":
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(reply.trickle_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test): nothing to answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening: later requests to `base_url` get connection refused."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class HeaderTrickler:
    """A raw socket server on 127.0.0.1 that starts every answer ("HTTP/1.1 200 OK") and then
    sends one header line every `every_s`, never ending the headers: httpx's per-read timeout
    never fires on it, so only a deadline on the whole exchange ends a request. The first
    connections are given the whole `first` answers instead (e.g. a probe a client sends before
    its work), one each, and closed."""

    def __init__(self, every_s: float = 0.5, first: Sequence[Any] = ()) -> None:
        self.every_s = every_s
        self.first = list(first)  # JSON bodies
        self.hits = 0
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:  # the listener closed
                return
            answer = self.first[self.hits] if self.hits < len(self.first) else None
            self.hits += 1
            threading.Thread(target=self._trickle, args=(conn, answer), daemon=True).start()

    def _trickle(self, conn: socket.socket, answer: Any = None) -> None:
        with conn:
            try:
                conn.recv(65536)
                if answer is not None:
                    body = json.dumps(answer).encode()
                    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
                                 % (len(body), body))
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                line = 0
                while not self._stop.wait(self.every_s):
                    conn.sendall(f"x-still-coming-{line}: 1\r\n".encode())
                    line += 1
            except OSError:
                pass  # the client gave up, as it should

    def __enter__(self) -> HeaderTrickler:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting on it
        self._listener.close()


# The start of a script run in a process of its own: every connection it then tries to anything
# but loopback (and every name it looks up) lands in `attempts`, which the script prints.
LOOPBACK_AUDIT = """
import sys
attempts = []
def audit(event, args):
    if event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
    if event == "socket.getaddrinfo" and args[0] not in ("127.0.0.1", "::1", "localhost"):
        attempts.append(args[0])
sys.addaudithook(audit)
"""
