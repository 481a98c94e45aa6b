"""`content_encoder`: what the write gate's content stage embeds with.

`shared` (default): the run's embedder, the one deduplication and search use too.
`finetuned`: the bundled MiniLM fine-tuned SetFit-style on labelled turns (pairs of the text the
content stage scores, same class or not, cosine loss), so that findings and narration lie
apart in the space the content scorer learns its line in. Only the content stage reads it:
fine-tuning pulls findings towards each other, and the write stage's cosine deduplication,
given the same space, merged distinct findings as duplicates (16 against 4 on the blind
Entire splits). The gate still learns its cut online from the judge; the fine-tuned body is
the representation it learns on.

A fit is deterministic (seeded pairs, order and dropout) and kept in the fit cache by its
settings and training texts, as half-precision weights (about 45 MB). The turns it read are
remembered, so a replay that would evaluate one of them is refused (`refuse_seen`).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from memeval.backends.embedders.cache import CachedEmbedder
from memeval.backends.embedders.sentence_transformer import (
    BUNDLED,
    SentenceTransformerConfig,
    SentenceTransformerEmbedder,
    load_model,
)
from memeval.backends.fine_tuning import half_weights, update
from memeval.data.labeled_jsonl import load_labeled_jsonl
from memeval.engine.gate.gate import GateConfig, content_view
from memeval.engine.gate.narration import Narration
from memeval.entry import Entry
from memeval.registry import SEEDS, ConfigError, Registry, bounded
from memeval.utils.fit_cache import FitCache
from memeval.utils.progress import Progress, step
from memeval.utils.redact import redact

KIND = "content_encoder"  # its fits' kind in the fit cache
SHARED = "shared"  # the option that embeds with the run's embedder
SUBSTANTIVE = "substantive"  # the class the gate's recall counts; noise and low_value the other


class ContentEncoder(Protocol):
    """The content stage's embedder and the turns it was fitted on (none for `shared`)."""

    embedder: CachedEmbedder

    def refuse_seen(self, entries: Sequence[Entry]) -> None:
        """Raise ConfigError if any of `entries` was read to fit the encoder."""

    def to_fit(self) -> str:
        """What must be fitted before the encoder embeds, said to the user ("" if nothing)."""

    def ready(self) -> CachedEmbedder:
        """The embedder, fitted now if need be (a fit is timed as fitting, not embedding)."""


CONTENT_ENCODERS: Registry[ContentEncoder] = Registry("content encoder")


def fingerprint(entry: Entry) -> str:
    """A turn: its id and its response (the same words in another session are another turn)."""
    return hashlib.sha256(f"{entry.id}\0{entry.assistant_response}".encode()).hexdigest()


@dataclass
class SharedConfig:
    """Nothing to set: the run's embedder."""


@dataclass
class Shared:
    embedder: CachedEmbedder

    def refuse_seen(self, entries: Sequence[Entry]) -> None:
        """The run's embedder read no labels."""

    def to_fit(self) -> str:
        return ""

    def ready(self) -> CachedEmbedder:
        return self.embedder


@dataclass
class FinetunedConfig:
    data: str = ""  # a labelled JSONL (id, assistant_response, label, and the split field)
    split_field: str = "split"
    values: list[str] = field(default_factory=list)  # the turns read: these values of the field
    pairs: int = bounded(1500, 2)
    learning_rate: float = bounded(2e-5, above=0, high=1)
    batch_size: int = bounded(16, 1)
    warmup: float = bounded(0.1, 0, 1)  # share of the steps the learning rate rises over
    train_tokens: int = bounded(128, 16, 512)  # each text cut to this while training only
    min_chars: int = bounded(30, 0)  # turns whose claims are shorter never reach the stage
    seed: int = bounded(0, *SEEDS)

    def validate(self) -> None:
        if not self.data:
            raise ValueError("data must name a labelled JSONL file")
        if not self.values:
            raise ValueError(f"values must list the {self.split_field} values to fine-tune on")


def training_turns(cfg: FinetunedConfig, gate: GateConfig) -> tuple[list[str], list[bool],
                                                                    list[Entry]]:
    """The content stage's view of each chosen turn whose claims reach `min_chars`, whether it
    is substantive, and every chosen turn (kept or not)."""
    if not Path(cfg.data).expanduser().is_file():
        raise ConfigError(f"content_encoder.data: labelled file not found: {cfg.data} (set "
                          f"content_encoder.data=FILE)")
    loaded = load_labeled_jsonl(cfg.data, on_error="raise")
    chosen = [e for e in loaded.entries if str(e.meta.get(cfg.split_field)) in cfg.values]
    if not chosen:
        raise ConfigError(f"content_encoder.data {cfg.data}: no turn has {cfg.split_field} in "
                          f"{cfg.values}")
    view, narration = content_view(gate), Narration(gate.narration)
    texts, positive = [], []
    for entry in chosen:
        text = redact(entry.assistant_response)
        if len(narration.claims(text).strip()) >= cfg.min_chars:
            texts.append(view(text))
            positive.append(entry.label == SUBSTANTIVE)
    if len(set(positive)) < 2:
        raise ConfigError(f"content_encoder.data {cfg.data}: fine-tuning needs turns of both "
                          f"classes ({SUBSTANTIVE} and the others) among {cfg.values}")
    return texts, positive, chosen


def setfit_pairs(texts: Sequence[str], positive: Sequence[bool], n: int,
                 seed: int) -> list[tuple[str, str, float]]:
    """SetFit's pairs: every other pair of one class (1.0), the rest across classes (0.0), each
    anchored in a uniformly drawn class."""
    rng = random.Random(seed)
    by_class = {side: [t for t, p in zip(texts, positive, strict=True) if p is side]
                for side in (True, False)}
    out = []
    for i in range(n):
        anchor_class = rng.random() < 0.5
        anchor = rng.choice(by_class[anchor_class])
        same = i % 2 == 0
        other = rng.choice(by_class[anchor_class if same else not anchor_class])
        out.append((anchor, other, 1.0 if same else 0.0))
    rng.shuffle(out)
    return out


def fine_tune(cfg: FinetunedConfig, pairs: Sequence[tuple[str, str, float]],
              progress: Progress) -> dict[str, Any]:
    """One epoch over `pairs` with cosine loss (AdamW, linear warm-up then decay, gradients
    clipped at 1); the weights in half precision."""
    import torch
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    torch.manual_seed(cfg.seed)
    model = step(progress, "content encoder: load", lambda: load_model(BUNDLED, "cpu"))
    full_length = model.max_seq_length
    model.max_seq_length = cfg.train_tokens
    loss_of = CosineSimilarityLoss(model)
    batch = cfg.batch_size
    steps = -(-len(pairs) // batch)
    decayed = [p for n, p in model.named_parameters() if not _undecayed(n)]
    plain = [p for n, p in model.named_parameters() if _undecayed(n)]
    optimiser = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01},
                                   {"params": plain, "weight_decay": 0.0}], lr=cfg.learning_rate)
    rise = max(1, int(cfg.warmup * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda done: done / rise if done < rise
        else max(0.0, (steps - done) / max(1, steps - rise)))
    order = list(range(len(pairs)))
    random.Random(cfg.seed).shuffle(order)

    def batches() -> Iterator[list[int]]:
        yield from (order[i:i + batch] for i in range(0, len(order), batch))

    model.train()
    for rows in progress(batches(), steps, "content encoder: fine-tune", "batch"):
        first = model.preprocess([pairs[i][0] for i in rows])
        second = model.preprocess([pairs[i][1] for i in rows])
        labels = torch.tensor([pairs[i][2] for i in rows], dtype=torch.float32)
        update(model, loss_of([first, second], labels), optimiser, schedule)
    model.max_seq_length = full_length
    return half_weights(model)


def _undecayed(name: str) -> bool:
    """Biases and layer norms are not decayed (as sentence-transformers' own loop does)."""
    return any(part in name for part in ("bias", "LayerNorm.weight", "LayerNorm.bias"))


class TunedEmbedder(SentenceTransformerEmbedder):
    """The bundled MiniLM with fitted weights, taken from `weights` (the fit, or the fit cache)
    when the model loads; a run asks for them before its gate embeds (`Finetuned.ready`), so
    the fit is timed as fitting. Its identity names the fit (its settings, training texts and
    code), so its vectors are cached apart from the bundled model's and from any other fit's,
    and known before fitting (what a run's cost counts)."""

    def __init__(self, fit: str, weights: Callable[[], dict[str, Any]]) -> None:
        super().__init__(SentenceTransformerConfig())
        # ":" apart, so no piece reads as a random token to the redactor (a report keeps it)
        self.identity = self.identity.replace("all-MiniLM-L6-v2",
                                              f"all-MiniLM-L6-v2:tuned:{fit[:16]}")
        self.weights = weights

    def _load(self) -> Any:
        if self._model is None:
            weights = self.weights()  # the fit's bars first, then the model loads
            model = super()._load()
            model.load_state_dict({n: t.float() for n, t in weights.items()})
            model.eval()
        return self._model


@dataclass
class Finetuned:
    embedder: CachedEmbedder
    tuned: TunedEmbedder  # the embedder's model
    seen: frozenset[str]  # fingerprints of the turns read
    fitted: Callable[[], bool]
    batches: int  # of the fit

    def refuse_seen(self, entries: Sequence[Entry]) -> None:
        read = sum(fingerprint(e) in self.seen for e in entries)
        if read:
            raise ConfigError(
                f"content_encoder=finetuned was fitted on {read} of the {len(entries)} turns "
                f"this replay evaluates: evaluate other turns, or fit it on others "
                f"(content_encoder.values / content_encoder.data)")

    def to_fit(self) -> str:
        return "" if self.fitted() else (
            f"content_encoder=finetuned is fine-tuned first ({self.batches} batches; minutes on "
            f"a laptop's cores, once: the fit is kept in the fit cache)")

    def ready(self) -> CachedEmbedder:
        self.tuned.weights()
        return self.embedder


@CONTENT_ENCODERS.register(SHARED, SharedConfig)
def build_shared(cfg: SharedConfig, *, embedder: CachedEmbedder, **_: object) -> Shared:
    return Shared(embedder)


@CONTENT_ENCODERS.register("finetuned", FinetunedConfig)
def build_finetuned(cfg: FinetunedConfig, *, gate: GateConfig, fits: FitCache,
                    cache_file: Path, progress: Progress, **_: object) -> Finetuned:
    texts, positive, read = training_turns(cfg, gate)
    pairs = setfit_pairs(texts, positive, cfg.pairs, cfg.seed)
    # keyed by what is read, not where it lies: a clone elsewhere reuses the fit
    key = (repr(replace(cfg, data="")), texts, positive)
    tuned = TunedEmbedder(fits.digest(KIND, key),
                          lambda: fits.fit(KIND, key, lambda: fine_tune(cfg, pairs, progress)))
    return Finetuned(CachedEmbedder(tuned, cache_file), tuned,
                     frozenset(fingerprint(e) for e in read), lambda: fits.has(KIND, key),
                     -(-len(pairs) // cfg.batch_size))
