"""`python -m memeval phoenix serve | push RUN_DIR`: a local Phoenix, and pushing any run to one."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from memeval.registry import to_dataclass
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.user_errors import complain


def settings_for(run_dir: Path, endpoint: str | None, project: str | None) -> PhoenixConfig:
    """The run's own Phoenix settings, with the endpoint from the flag, else
    PHOENIX_COLLECTOR_ENDPOINT, else what the run was configured with."""
    from memeval.results.run import CONFIG, read_config  # pandas: after --help

    config = read_config(run_dir) if (run_dir / CONFIG).is_file() else OmegaConf.create({})
    node = OmegaConf.select(config, "reporting.phoenix", default={})
    params = cast(dict[str, Any], OmegaConf.to_container(OmegaConf.create(node)) or {})
    params["endpoint"] = (endpoint or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT")
                          or params.get("endpoint") or PhoenixConfig.endpoint)
    if project:
        params["project"] = project
    params["enabled"] = True
    return to_dataclass(PhoenixConfig, params, "reporting.phoenix")


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval phoenix")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="start Phoenix on loopback (PHOENIX_PORT, "
                        "PHOENIX_GRPC_PORT, PHOENIX_WORKING_DIR are honoured); Ctrl-C stops it")
    push = commands.add_parser("push", help="push a run directory (idempotent: re-pushing "
                               "resumes, never duplicates)")
    push.add_argument("run_dir", type=Path)
    push.add_argument("--endpoint", help="Phoenix base URL (default: $PHOENIX_COLLECTOR_ENDPOINT,"
                      " then the run's reporting.phoenix.endpoint)")
    push.add_argument("--project", help="Phoenix project for the spans (default: the run's)")
    push.add_argument("--no-progress", action="store_true")
    options = parser.parse_args(args)
    if options.command == "serve":
        from memeval.reporting.phoenix.server import serve

        return serve()
    from memeval.components import load_components
    from memeval.reporting.phoenix.pushers import push_run

    load_components()  # each run's experiment declares the headline figures pushed with it
    if not (options.run_dir / "metrics.json").is_file():
        complain(f"memeval phoenix push: {options.run_dir} is not a run directory "
                 f"(no metrics.json)")
        return 2
    try:
        settings = settings_for(options.run_dir, options.endpoint, options.project)
        report = push_run(options.run_dir, settings, progress=not options.no_progress)
    except Exception as err:
        complain(f"memeval phoenix push: {err}")
        return 1
    print(report.summary())
    return 0
