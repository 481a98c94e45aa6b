"""`python -m memeval COMMAND [hydra overrides…]`: the subcommand word is stripped before Hydra."""

from __future__ import annotations

import sys
from collections.abc import Callable

USAGE = """usage: python -m memeval COMMAND [options]

commands:
  run     run an experiment: python -m memeval run +experiment=three_pass [key=value …]
  bench   three passes vs one embedding pass, per-stage time: python -m memeval bench --help
  gate    CI regression gate on calibration and recall: python -m memeval gate --help
  phoenix local Phoenix server and pushing runs to it: python -m memeval phoenix --help
  report  one run, or two compared, as HTML and Markdown: python -m memeval report --help
  sweep   a multirun as a table, Pareto front and default marked: python -m memeval sweep --help
"""


def _run(args: list[str]) -> int:
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from memeval.config import check_overrides, register_resolvers
    from memeval.registry import ConfigError
    from memeval.runner import run_experiment

    register_resolvers()
    try:
        check_overrides(args)
    except ConfigError as err:
        print(f"memeval: configuration error: {err}", file=sys.stderr)
        return 2
    status = {"code": 0}

    @hydra.main(version_base="1.3", config_path="pkg://conf", config_name="config")
    def job(cfg: DictConfig) -> None:
        from pathlib import Path

        try:
            run_experiment(cfg, Path(HydraConfig.get().runtime.output_dir))
        except ConfigError as err:
            print(f"memeval: configuration error: {err}", file=sys.stderr)
            status["code"] = 2
            if HydraConfig.get().mode == RunMode.MULTIRUN:
                # A parallel launcher runs jobs in worker processes that cannot set our exit
                # code: failing the job is how the sweep learns of it.
                raise SystemExit(2) from None

    sys.argv = [f"{sys.argv[0]} run", *args]
    job()
    return status["code"]


def _bench(args: list[str]) -> int:
    from memeval.bench import main as bench_main

    return bench_main(args)


def _gate(args: list[str]) -> int:
    from memeval.regression_gate import main as gate_main

    return gate_main(args)


def _report(args: list[str]) -> int:
    from memeval.reporting.report import main as report_main

    return report_main(args)


def _sweep(args: list[str]) -> int:
    from memeval.sweep import main as sweep_main

    return sweep_main(args)


def _phoenix(args: list[str]) -> int:
    from memeval.reporting.phoenix.cli import main as phoenix_main

    return phoenix_main(args)


COMMANDS: dict[str, Callable[[list[str]], int]] = {"run": _run, "bench": _bench, "gate": _gate,
                                                   "phoenix": _phoenix, "report": _report,
                                                   "sweep": _sweep}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command = COMMANDS.get(args[0])
    if command is None:
        print(f"memeval: unknown command '{args[0]}'\n\n{USAGE}", file=sys.stderr)
        return 2
    return command(args[1:])


if __name__ == "__main__":
    sys.exit(main())
