"""Logs hold no secrets: every record a handler emits is redacted, and HTTP clients do not log
each request's URL (httpx logs every request at INFO, with the URL as configured: a
`user:password@` in it included). The console shows other libraries' warnings only, each line
wrapped to the width the results are printed in."""

from __future__ import annotations

import logging

from memeval.reporting.table import wrapped
from memeval.utils.redact import redact

QUIET = ("httpx", "httpcore")
OWN = ("memeval", "__main__")  # loggers whose INFO lines the console shows


class RedactingFilter(logging.Filter):
    """Redacts a record's message, traceback and stack before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class OwnInfoOnly(logging.Filter):
    """Passes memeval's records and any library's warnings: a library's INFO line (a model being
    loaded) would land among the progress bars. Set on the console only; the run's log file keeps
    every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN


class Wrapped(logging.Formatter):
    """A record's line wrapped at WIDTH columns, continuations indented: a warning that names a
    file and line (a skipped input line) reads in a terminal instead of running off its edge. A
    traceback stays as Python wrote it. Set on the console only; the log file keeps one line per
    record, to search."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return wrapped(super().formatMessage(record))


def redact_logs() -> None:
    """Every handler of the root logger (as Hydra set them up for the run) redacts what it
    writes; HTTP client loggers stop logging requests below WARNING."""
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
