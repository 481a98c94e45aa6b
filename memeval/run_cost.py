"""Say what a run's embedding will cost before it is paid: the texts its replay embeds that the
embedding cache lacks, the time they take at a rate measured now, and how to warm the cache or
cut the run. A cold cache can turn a run of seconds into one of many minutes: a user should
learn that at its start, not at its end."""

from __future__ import annotations

import logging
import os
import shlex
import time
from dataclasses import dataclass
from typing import Any

from memeval.backends.embedders.base import EmbeddingError
from memeval.backends.embedders.cache import CachedEmbedder
from memeval.cache_warm_up import run_texts
from memeval.data.base import CORPUS
from memeval.experiments.base import RunContext
from memeval.experiments.settings import ReplaysPart
from memeval.user_errors import complain
from memeval.utils.kvcache import content_key

SAMPLE = 16  # uncached texts embedded, and timed, to measure the rate (they are cached after)
logger = logging.getLogger(__name__)

LIMIT = "limit"  # the dataset setting that cuts a run, unless its options name another


@dataclass(frozen=True)
class Estimate:
    """What the run will embed that the cache lacks, and how fast this machine embeds now."""

    texts: int  # distinct texts the run embeds
    uncached: int  # of them, not in the embedding cache when the run started
    sampled: int  # of those, embedded to measure the rate
    sample_s: float  # the time they took
    cores: int

    @property
    def rate(self) -> float:
        """Texts per second, as measured on the sample."""
        return self.sampled / max(self.sample_s, 1e-9)

    @property
    def seconds(self) -> float:
        """Every uncached text at the measured rate."""
        return self.uncached / self.rate


def embedder_of(ctx: RunContext) -> CachedEmbedder:
    """What embeds the texts counted: a corpus's memories, the run's embedder; the entries' views,
    the write gate's content stage's (`content_encoder`)."""
    return ctx.embedder if ctx.input_kind == CORPUS else ctx.content_encoder.embedder


def uncached_texts(ctx: RunContext) -> tuple[int, list[str]]:
    """The distinct texts every such run embeds, and those the cache lacks. Not the texts only
    some entries reach (`memeval embed` warms those too): a run that never reaches them would
    count them, and embed a sample of them, at every start."""
    texts = run_texts(ctx, every=False)
    embedder = embedder_of(ctx)
    keyed = {content_key(embedder.identity, text): text for text in texts}
    cached = embedder.store.get_many(sorted(keyed))
    return len(keyed), [text for key, text in keyed.items() if key not in cached]


def estimate(ctx: RunContext) -> Estimate | None:
    """The run's embedding cost, measured on a sample of its uncached texts (taken across their
    lengths, which set the time a text takes); None when the cache holds every one."""
    texts, missing = uncached_texts(ctx)
    if not missing:
        return None
    embedder = embedder_of(ctx)
    by_length = sorted(missing, key=len)
    embedder.embed(by_length[:1])  # loads the model, untimed
    rest = by_length[1:]
    step = max(1, len(rest) // SAMPLE)
    sample = rest[::step][:SAMPLE] or by_length[:1]
    started = time.perf_counter()
    embedder.embed(sample)  # one call: the embedder batches texts of like lengths, as in a run
    return Estimate(texts, len(missing), len(sample), time.perf_counter() - started,
                    os.cpu_count() or 1)


def duration(seconds: float) -> str:
    """A rough time, as a person would say it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def warning(found: Estimate, overrides: list[str] | None, limit: str | None, rows: int,
            budget_s: float, warmable: bool = True) -> str:
    """The line said before the run: its numbers, how to warm the cache (when `memeval embed`
    can: not the vectors of a fine-tuned content encoder, which only the run makes), and which
    setting cuts the run (to about `budget_s` of embedding, when `rows` counts what the setting
    cuts; None: no cut, as cutting the dataset's rows would cut the part the run replays)."""
    command = "python -m memeval embed " + (
        " ".join(shlex.quote(o) for o in overrides) if overrides is not None
        else "with this run's overrides")
    share = max(1, int(rows * budget_s / found.seconds))
    cut = "" if limit is None else \
        f"{'; or' if warmable else ' Or'} cut the run: " \
        f"dataset.{limit}={share if share < rows else 'N'}"
    warm = f" Warm the cache first: {command.strip()}" if warmable else ""
    return (f"memeval: {found.uncached:,} of the run's {found.texts:,} texts are not in the "
            f"embedding cache: about {duration(found.seconds)} to embed at "
            f"{found.rate:.1f} texts/s (measured on {found.sampled}, {found.cores} cores)."
            f"{warm}{cut}")


def limit_setting(params: Any) -> str:
    """The dataset setting that cuts this input: `limit`, unless its options name another."""
    return str(getattr(type(params), "limit_setting", LIMIT))


def run_overrides() -> list[str] | None:
    """The overrides this run was started with, as `memeval embed` takes them; None outside a
    command (the Python API), which has none to repeat."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return [o for o in HydraConfig.get().overrides.task if not o.startswith("hydra.")]


def say_cost(ctx: RunContext, overrides: list[str] | None) -> Estimate | None:
    """Before a run that embeds its input: the estimate, said (on stderr, redacted, wrapped)
    when it exceeds `cost_warning_s`."""
    budget = ctx.settings.cost_warning_s
    if budget is None:
        return None
    fitting = "" if ctx.input_kind == CORPUS else ctx.content_encoder.to_fit()
    if fitting:  # a sample would be embedded by the encoder, so fitted: said without one
        texts, missing = uncached_texts(ctx)
        complain(f"memeval: {fitting}; then it embeds the {len(missing):,} of the run's "
                 f"{texts:,} texts not in the embedding cache")
        return None
    try:
        found = estimate(ctx)
    except EmbeddingError as error:  # the run meets it too, and fails or degrades by its rules
        logger.warning("the run's embedding cost could not be measured: %s", error)
        return None
    if found is None or found.seconds <= budget:
        return found
    loaded = ctx.loaded()
    assert loaded is not None  # estimate() loaded it
    rows = loaded.sizes().get("entries", loaded.report.rows_read)  # what a limit counts
    experiment = ctx.validated.experiment
    part = experiment is not None and isinstance(experiment.params, ReplaysPart)
    limit = None if part else limit_setting(ctx.validated.dataset.chosen.params)
    complain(warning(found, overrides, limit, rows, budget,
                     warmable=ctx.content_apart is None))
    return found
