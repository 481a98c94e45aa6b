"""The command table: each command is one module of memeval/cli with `main(args) -> int`,
imported only when that command runs, so the usage and each `--help` load no work."""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    module: str
    summary: str  # its line in the usage


COMMANDS: dict[str, Command] = {
    "run": Command("memeval.cli.run",
                   "run an experiment: run +experiment=three_pass [key=value …]"),
    "list": Command("memeval.cli.listing", "experiments, component options, input files"),
    "bench": Command("memeval.cli.bench", "three passes vs one embedding pass, per-stage time"),
    "gate": Command("memeval.cli.regression_gate", "CI regression gate on calibration and recall"),
    "phoenix": Command("memeval.cli.phoenix", "local Phoenix server and pushing runs to it"),
    "leaderboard": Command("memeval.cli.leaderboard",
                           "memory systems × benchmarks from runs (Markdown, HTML, JSON)"),
    "runs": Command("memeval.cli.runs",
                    "every run under a folder as a table: settings that differ, headline figures"),
    "report": Command("memeval.cli.report", "one run, or two compared, as HTML and Markdown"),
    "sweep": Command("memeval.cli.sweep", "a multirun as a table, Pareto front and default marked"),
    "embed": Command("memeval.cli.embed",
                     "warm the embedding cache for a run, here or on a Ray cluster"),
    "cache": Command("memeval.cli.cache",
                     "the embedding and judge caches, clearing or sharing them"),
    "serve": Command("memeval.cli.serve", "the engine as a memoryd daemon, its embedder as an "
                                          "OpenAI-compatible server"),
    "check": Command("memeval.cli.check_system",
                     "put a memory system through each capability it declares: check system=X"),
    "conformance": Command("memeval.cli.conformance",
                           "does memeval score memories as memledger does (MQS, MAI)"),
    "length-baseline": Command("memeval.cli.length_baseline",
                               "how far response length alone separates a labelled set's labels"),
    "redaction-scan": Command("memeval.cli.redaction_scan",
                              "where redaction fires on the bundled corpora"),
}

OPTIONS = """options:
  -h, --help     this message
  -V, --version  memeval's version

python -m memeval COMMAND --help: the command's own options"""


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    return "\n".join(["usage: python -m memeval COMMAND [options]", "", "commands:", *lines, "",
                      OPTIONS, ""])


def run_command(name: str, args: list[str]) -> int:
    """The command's module, loaded now, run with the arguments after its name."""
    main = importlib.import_module(COMMANDS[name].module).main
    code: int = main(args)
    return code
