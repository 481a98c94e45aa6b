"""`python -m memeval serve memoryd|embeddings [--host H] [--port P] [-- overrides…]`."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memeval.serve.http import MAX_INPUTS, check_host, make_server, serve_until_stopped, url_of
from memeval.user_errors import complain, report_user_error, user_error_types

if TYPE_CHECKING:
    from memeval.experiments.base import RunContext

DEFAULT_PORTS = {"memoryd": 8765, "embeddings": 8766}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m memeval serve",
        description="Serve memeval on loopback until Ctrl-C. Settings after -- are the config "
                    "overrides a run takes (e.g. -- embedder=hashing).")
    commands = parser.add_subparsers(dest="command", required=True)
    memoryd = commands.add_parser(
        "memoryd", help="the reference engine behind memoryd's API (/api/ingest, /api/search, "
                        "/api/memories, /api/rejections, /api/restart), for system=http")
    memoryd.add_argument("--state-dir", type=Path, default=None,
                         help="where the engine keeps its stores (default: a new temporary "
                              "directory); reuse it to keep the rejection store across restarts")
    embeddings = commands.add_parser("embeddings", help="the configured embedder as an "
                                                        "OpenAI-compatible POST /v1/embeddings")
    embeddings.add_argument("--max-inputs", type=_positive, default=MAX_INPUTS, metavar="N",
                            help=f"texts one request may carry; more is answered 413 (default "
                                 f"{MAX_INPUTS}, the OpenAI API's own cap)")
    for sub in (memoryd, embeddings):
        sub.add_argument("--host", default="127.0.0.1", help="a loopback address (default "
                                                             "127.0.0.1); others are refused")
        sub.add_argument("--port", type=int, default=None,
                         help="0 picks a free port (default: memoryd 8765, embeddings 8766)")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(args: list[str]) -> int:
    own, overrides = (args[: args.index("--")], args[args.index("--") + 1:]) \
        if "--" in args else (args, [])
    options = _parser().parse_args(own)
    from hydra.errors import HydraException, MissingConfigException

    from memeval.components import load_builtin_components
    from memeval.config import compose, quote_values

    try:
        check_host(options.host)
        try:
            cfg = compose(quote_values(overrides))
        except (HydraException, MissingConfigException) as err:
            complain(f"memeval serve: {str(err).splitlines()[0]}")
            return 2
        load_builtin_components()
        state_dir = (options.state_dir if options.command == "memoryd" and options.state_dir
                     else Path(tempfile.mkdtemp(prefix=f"memeval-{options.command}-")))
        state_dir.mkdir(parents=True, exist_ok=True)
        from memeval.config import validate
        from memeval.experiments.base import RunContext

        ctx = RunContext(cfg, state_dir, validate(cfg, experiment=False))
        port = DEFAULT_PORTS[options.command] if options.port is None else options.port
        if options.command == "memoryd":
            return _memoryd(ctx, state_dir, options.host, port)
        return _embeddings(ctx, options.host, port, options.max_inputs)
    except user_error_types() as err:
        report_user_error(err)
        return 2
    except (ValueError, OSError) as err:  # a refused host, a port in use
        complain(f"memeval serve: {err}")
        return 2


def _memoryd(ctx: RunContext, state_dir: Path, host: str, port: int) -> int:
    from memeval.serve.memoryd import MemorydEngine
    from memeval.systems.reference.system import ReferenceSystem

    gate = ReferenceSystem(ctx).ingestor(state_dir)
    engine = MemorydEngine(gate, ctx.dataset.entries)
    server = make_server(engine.routes, host, port)
    url = url_of(server)
    try:
        return serve_until_stopped(server, (
            f"memeval's reference engine speaks memoryd's API at {url} (state: {state_dir})\n"
            f"  python -m memeval run +experiment=three_pass system=http system.base_url={url} "
            f"system.restart.path=/api/restart\n"
            "Press Ctrl-C to stop."))
    finally:
        engine.close()


def _embeddings(ctx: RunContext, host: str, port: int, max_inputs: int) -> int:
    from memeval.serve.embeddings import EmbeddingsServer

    embedder = ctx.embedder
    server = make_server(EmbeddingsServer(embedder, embedder.identity, max_inputs).routes, host,
                         port)
    url = url_of(server)
    return serve_until_stopped(server, (
        f"memeval's embedder ({embedder.identity}, {embedder.dim} dimensions) answers "
        f"POST {url}/v1/embeddings\n"
        f"  e.g. embedder=openai_http embedder.base_url={url}/v1\n"
        "Press Ctrl-C to stop."))
