"""A small JSON-over-HTTP server on loopback (stdlib), shared by the `serve` commands.

Routes are `path -> method -> handler`; a path may end in `/{id}`. A handler gets the request and
returns (status, JSON body), or raises ApiError for a 4xx with `{"error": "..."}`: memoryd's
error shape. A wrong method is 405, an unknown path 404, a body that is not JSON (or nests
over 64 deep, holds NaN, or a lone surrogate in a string, named by its field) 400, one over the
size cap 413.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

from memeval.utils.bounded_json import JsonRefused, parse_json
from memeval.utils.serving import is_loopback, terminate_as_interrupt

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024
# Texts one embeddings request may carry (the OpenAI API's own cap): each costs a vector in the
# answer, so the body cap alone would let 200,000 one-word texts take gigabytes
MAX_INPUTS = 2048
ID_SUFFIX = "/{id}"


class ApiError(Exception):
    """A request the server refuses: answered `{"error": message}` with `status`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any  # parsed JSON; None when the request had no body
    path_id: str = ""  # the `{id}` of a route ending in /{id}


Handler = Callable[[Request], tuple[int, Any]]
Routes = Mapping[str, Mapping[str, Handler]]


def _route(routes: Routes, path: str) -> tuple[Mapping[str, Handler] | None, str]:
    if path in routes:
        return routes[path], ""
    head, _, tail = path.rstrip("/").rpartition("/")
    methods = routes.get(head + ID_SUFFIX)
    return (methods, unquote(tail)) if methods is not None and tail else (None, "")


def _handler_class(routes: Routes) -> type[BaseHTTPRequestHandler]:
    class JsonHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def do_PUT(self) -> None:
            self._answer("PUT")

        def do_DELETE(self) -> None:
            self._answer("DELETE")

        def _answer(self, method: str) -> None:
            try:
                status, body = self._dispatch(method)
            except ApiError as err:
                status, body = err.status, {"error": err.message}
            except Exception:  # a fault of the server's own: logged, answered without details
                log.exception("%s %s failed", method, self.path)
                status, body = 500, {"error": "internal error (see the server's log)"}
            payload = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting

        def _dispatch(self, method: str) -> tuple[int, Any]:
            path = urlsplit(self.path).path
            methods, path_id = _route(routes, path)
            if methods is None:
                raise ApiError(404, f"no route {path}")
            handler = methods.get(method)
            if handler is None:
                raise ApiError(405, f"method not allowed: {path} takes "
                                    f"{', '.join(sorted(methods))}")
            return handler(Request(method, path, self._body(), path_id))

        def _body(self) -> Any:
            try:
                length = int(self.headers.get("content-length") or 0)
            except ValueError:
                raise ApiError(400, "invalid content-length") from None
            if length > MAX_BODY_BYTES:
                raise ApiError(413, f"body over {MAX_BODY_BYTES} bytes")
            raw = self.rfile.read(length) if length > 0 else b""
            if not raw.strip():
                return None
            try:  # nesting and NaN refused as the clients refuse them in answers
                body = parse_json(raw)
            except JsonRefused as err:
                raise ApiError(400, f"refused JSON: {err}") from None
            except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
                raise ApiError(400, f"invalid JSON: {err}") from None
            field = lone_surrogate(body)
            if field is not None:
                raise ApiError(400, f"refused JSON: {field} holds a lone surrogate (an escape "
                                    f"in \\ud800-\\udfff), which is no text: send UTF-8 text")
            return body

    return JsonHandler


def lone_surrogate(body: Any) -> str | None:
    """The field of a parsed body whose string holds a lone surrogate (JSON's `"\\ud800"`, or
    its UTF-8 bytes, which Python's parser lets through): no UTF-8 text can hold one, so every
    handler would fail on it. As `input[3]` or `user_prompt`; None when there is none. Walked
    without recursion."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(body, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if not _utf8(key):
                    return f"a key of {_field(path) or 'the body'}"
                stack.append((item, (*path, key)))
        elif isinstance(node, list):
            stack += [(item, (*path, index)) for index, item in enumerate(node)]
        elif isinstance(node, str) and not _utf8(node):
            return _field(path) or "the body"
    return None


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _field(path: tuple[str | int, ...]) -> str:
    """`("input", 3)` as `input[3]`, `("a", "b")` as `a.b`."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path
                   ).lstrip(".")


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def check_host(host: str) -> None:
    """Loopback only, so nothing memeval serves is reachable from another machine."""
    if not is_loopback(host):
        raise ValueError(f"--host {host} is not a loopback address: memeval serves on loopback "
                         f"only (127.0.0.1, ::1 or localhost)")


def make_server(routes: Routes, host: str, port: int) -> ThreadingHTTPServer:
    """Bound and ready to serve."""
    check_host(host)
    server_class = _Server6 if ":" in host else ThreadingHTTPServer
    server = server_class((host.strip("[]"), port), _handler_class(routes))
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = str(server.server_address[0]), server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve_until_stopped(server: ThreadingHTTPServer, banner: str, out: TextIO | None = None
                        ) -> int:
    """Print `banner` (it names the URL) once listening; Ctrl-C, SIGTERM or SIGHUP stop the
    server cleanly (exit 0)."""
    out = sys.stdout if out is None else out
    with terminate_as_interrupt():
        try:
            print(banner, file=out, flush=True)
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            print("stopped", file=out, flush=True)
        finally:
            server.server_close()
    return 0
