"""Every `python -m memeval …` command in the code blocks of the README and of every docs page,
taken verbatim, works as written: `run` commands pass the CLI's own checks and compose and
validate under Hydra (each point of a sweep), the other commands parse. Running them all would
take minutes and most need the MiniLM model, a server (`phoenix`, `embedder=openai_http`), a key
(`judge=anthropic`) or a user's file (`my_labels.jsonl`, `~/.claude/projects/…`, run
directories), so those are checked for composition or parsing only; the ones that are quick and
offline also run for real (`slow`)."""

from __future__ import annotations

import argparse
import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from memeval.__main__ import COMMANDS, main
from memeval.config import check_overrides, compose, expand_targets, quote_values, validate
from tests.test_contributing import GUIDE_OPTION, GUIDE_RUN, TOGETHER_OPTIONS
from tests.test_plugins import EXAMPLE_OPTIONS

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDER = "…"  # "the same command as before", in the resume example: dropped
RUN_FOR_REAL = ["list", "list experiments --json", "--version",
                "run +experiment=mqs_calibration"]
# a fenced block: its language, then its text (after any attributes such as a title)
FENCE = re.compile(r"^[ \t]*```(\w*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
# a command quoted in prose: with arguments (a bare `python -m memeval run` names the command)
# and without alternatives (`serve memoryd|embeddings` is a synopsis)
INLINE = re.compile(r"`(python -m memeval [^`| ]+ [^`|]+)`")


def command(line: str) -> str | None:
    """The words after `python -m memeval` in one shell line, up to `&&` or `&`."""
    _, found, rest = line.partition("python -m memeval ")
    if not found:
        return None
    words = shlex.split(rest, comments=True)
    return shlex.join(itertools.takewhile(lambda w: w not in ("&&", "&"), words))


def commands_in(text: str) -> list[str]:
    """Each command in the shell code blocks, then each one quoted inline in the prose."""
    lines = [line for language, block in FENCE.findall(text) if language == "bash"
             for line in block.replace("\\\n", " ").splitlines()]
    lines += INLINE.findall(FENCE.sub("", text))
    return [found for line in lines if (found := command(line)) is not None]


COMMANDS_BY_FILE = {path.relative_to(ROOT).as_posix(): commands_in(path.read_text())
                    for path in DOCS}
COMMAND_LINES = list(dict.fromkeys(itertools.chain.from_iterable(COMMANDS_BY_FILE.values())))


def test_the_doc_commands_are_found() -> None:
    for name in ("README.md", "docs/index.md", "docs/results.md", "docs/datasets.md",
                 "docs/quality.md", "docs/retrieval.md", "docs/systems.md", "docs/phoenix.md",
                 "docs/operations.md", "docs/contributing.md", "docs/scaling.md"):
        assert COMMANDS_BY_FILE[name], name
    assert len(COMMAND_LINES) > 20
    assert {line.split()[0] for line in COMMAND_LINES} <= {*COMMANDS, "--version"}
    assert any("~/" in line for line in COMMAND_LINES)  # a home-relative path, quoted for Hydra


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_memeval_command_block_is_a_checked_bash_block(path: Path) -> None:
    """A command in a block of another language would escape the checks below."""
    for language, block in FENCE.findall(path.read_text()):
        shell = [line for line in block.splitlines()
                 if line.lstrip("$ ").startswith("python -m memeval ")]
        assert language == "bash" or not shell, (path.name, shell)


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """A multirun as single runs: the first value of every sweep, then each other swept value
    in turn (every value composes once, without the whole grid)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for override in OverridesParser.create().parse_overrides(overrides):
        key = override.get_key_element()
        choices.append([f"{key}={value}" for value in override.sweep_string_iterator()]
                       if override.is_sweep_override() else [override.input_line])
    first = [values[0] for values in choices]
    return [first] + [[*first[:i], value, *first[i + 1:]]
                      for i, values in enumerate(choices) for value in values[1:]]


def check_run(args: list[str]) -> None:
    args = quote_values(expand_targets([a for a in args if a != PLACEHOLDER]))
    check_overrides(args)  # raises ConfigError naming the fix
    overrides = [a for a in args if not a.startswith("-")]
    for point in sweep_points(overrides):
        validate(compose([o for o in point if not o.startswith("hydra")]))
        if any(o.startswith("hydra") for o in point):
            compose(point, with_hydra=True)  # the launcher and run directory settings too


class Parsed(Exception):
    """Raised instead of running a command once its arguments parsed."""


def check_parses(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    original = argparse.ArgumentParser.parse_args

    def parse_only(parser: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        raise Parsed(original(parser, *a, **k))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    with pytest.raises(Parsed):
        main(args)


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_doc_command_parses_and_composes(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    command, *args = shlex.split(line)
    if command == "run" and TOGETHER_OPTIONS & set(args):
        # the guide's dataset, experiment and system exist once its files are written: this is
        # the line tests/test_contributing.py runs with them
        assert [command, *args] == GUIDE_RUN
    elif command == "run":
        # an option of the example plugin exists once it is installed, the contributing guide's
        # once its files are written: tests/test_plugins.py and tests/test_contributing.py do
        # that and run them; the rest of the command composes here
        example = {override for override, _, _ in EXAMPLE_OPTIONS} | {GUIDE_OPTION}
        check_run([a for a in args if a not in example])
    elif command.startswith("-"):  # --version, --help
        assert main([command, *args]) == 0
    else:
        check_parses([command, *args], monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("line", RUN_FOR_REAL)
def test_quick_offline_doc_commands_run(line: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert line in COMMAND_LINES
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    assert main(shlex.split(line)) == 0
    assert capsys.readouterr().out
