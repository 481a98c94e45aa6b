"""Logs hold no secrets: every record a handler emits is redacted, and HTTP clients do not log
each request's URL (httpx logs every request at INFO, with the URL as configured: a
`user:password@` in it included). The console shows other libraries' warnings only."""

from __future__ import annotations

import logging

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


def redact_logs() -> None:
    """Every handler of the root logger (as Hydra set them up for the run) redacts what it
    writes; HTTP client loggers stop logging requests below WARNING."""
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
