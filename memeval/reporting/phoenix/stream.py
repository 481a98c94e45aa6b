"""Stream each pass's spans to Phoenix as the pass ends, so a run shows up while it runs.

Streaming is best effort: the first failure (Phoenix stopped) ends it with a warning, and the
end-of-run push re-sends every span anyway (same ids, stored once) with annotations, the dataset
and the experiments. Nothing depends on a streamed span having arrived.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Protocol

from omegaconf import DictConfig

from memeval.backends.embedders.base import Embedder
from memeval.data.base import Dataset
from memeval.engine.gate.gate import Decision
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import examples, run_info
from memeval.reporting.phoenix.otlp import ExportError, batches, export_batch
from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.reporting.phoenix.spans import RunInfo, decision_spans
from memeval.results.run_dir import decisions_frame
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.redact import redact, redacted

log = logging.getLogger(__name__)


class PassStreamer:
    def __init__(self, settings: PhoenixConfig, run: Callable[[], RunInfo],
                 texts: Callable[[], Mapping[str, Mapping[str, Any]]]) -> None:
        self.settings, self.run, self.texts = settings, run, texts
        self.traces_url = f"{settings.base_url}/v1/traces"
        self.http = BoundedClient(timeout=settings.timeout_s)
        self.sent = 0
        self.stopped: str | None = None

    def __call__(self, decisions: list[Decision]) -> None:
        if self.stopped is not None or not decisions:
            return
        spans = (redacted(span) for span in
                 decision_spans(self.run(), decisions_frame(decisions), self.texts()))
        try:
            for batch in batches(spans, self.settings.batch_spans):
                export_batch(self.http, self.traces_url, batch, self.settings.project,
                             timeout_s=self.settings.timeout_s,
                             max_bytes=self.settings.max_body_bytes)
                self.sent += len(batch)
        except ExportError as err:
            self.stopped = str(err)
            log.warning("Phoenix stopped answering (%s); the run goes on, its spans stay in the "
                        "run directory and the end-of-run push retries", err)

    def close(self) -> None:
        self.http.close()


HEALTH_TIMEOUT_S = 5.0  # a healthy server answers at once: a hung one must not hold up the run


def reachable(settings: PhoenixConfig) -> bool:
    if not settings.base_url:
        return False
    rest = PhoenixREST(settings.base_url, min(settings.timeout_s, HEALTH_TIMEOUT_S),
                       settings.max_body_bytes)
    try:
        return rest.healthy()
    finally:
        rest.close()


class StreamedRun(Protocol):
    """What streaming reads from a run (an experiment's RunContext), so reporting needs no
    import of the experiments above it."""

    pass_listeners: list[Callable[[list[Decision]], None]]

    @property
    def cfg(self) -> DictConfig: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def dataset(self) -> Dataset: ...


def streamer_for(ctx: StreamedRun, settings: PhoenixConfig, run_id: str) -> PassStreamer | None:
    """A streamer listening to the run's passes, or None when no Phoenix answers now."""
    if not settings.enabled or not reachable(settings):
        return None

    def run() -> RunInfo:
        identity = {"run_id": run_id, "experiment": ctx.cfg.experiment.name,
                    "embedder": {"identity": ctx.embedder.identity}}
        return run_info(identity, ctx.cfg, settings.text_chars)

    @cache
    def texts() -> dict[str, dict[str, Any]]:
        return {str(row["id"]): row for row in examples(ctx.dataset.entries, redact,
                                                         settings.text_chars)}

    streamer = PassStreamer(settings, run, texts)
    ctx.pass_listeners.append(streamer)
    return streamer
