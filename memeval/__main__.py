"""`python -m memeval COMMAND [options]`: the command word picks a module from the command table
(memeval/cli/commands.py), which gets the rest of the arguments."""

from __future__ import annotations

import sys

from memeval.cli.commands import COMMANDS, run_command, usage
from memeval.threads import size_pools
from memeval.user_errors import complain


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        size_pools()  # before any command imports numpy, so every pool and worker is sized
    except ValueError as err:
        complain(f"memeval: {err}")
        return 2
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        from importlib.metadata import version

        print(f"memeval {version('memeval')}")
        return 0
    if args[0] not in COMMANDS:
        print(f"memeval: unknown command '{args[0]}'\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        return run_command(args[0], args[1:])
    except KeyboardInterrupt:  # Ctrl-C: what was saved and how to go on is already printed
        print("memeval: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it
    except BrokenPipeError:  # `python -m memeval list | head`: the reader had enough
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
