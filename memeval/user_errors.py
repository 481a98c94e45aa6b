"""How every command tells a user's mistake from memeval's own fault, and prints it."""

from __future__ import annotations

import sys


def user_error_types() -> tuple[type[Exception], ...]:
    """Mistakes in a user's settings, data or environment, and a failing service or system: a
    one-line message, never a traceback (a traceback is for memeval's own faults)."""
    from memeval.systems.deadline import named_errors

    return named_errors()


def complain(message: str) -> None:
    """A message to the user on stderr: redacted (it may quote a configured URL or a data line)
    and wrapped to the terminal width the results are printed in."""
    from memeval.reporting.table import wrapped
    from memeval.utils.redact import redact

    print(wrapped(redact(message)), file=sys.stderr)


def report_user_error(err: Exception) -> None:
    """The message, no traceback: a user's mistake is not memeval's fault."""
    from memeval.registry import ConfigError

    kind = "configuration error: " if isinstance(err, ConfigError) else ""
    complain(f"memeval: {kind}{err}")
