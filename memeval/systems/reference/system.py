"""`system=reference`: memeval's own engine behind the System seam.

The write gate (engine/gate) is the ingestor, built from the run's embedder, scorer, judge and
gate settings exactly as before the seam existed, so its figures do not move. Trust is MQS with
the experiment's constants, conflicts are the word-boundary rules, search is cosine over the
run's embedder. Everything else a reference-only study needs (stored-memory MQS and models, the
rejection stores' make-up) is on its ingestor, `ReferenceIngestor`, which such a study asks for
by type.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memeval.engine.gate.gate import Decision, Gate, GateConfig
from memeval.engine.scorers.base import SCORERS
from memeval.quality.conflicts import ConflictDetector, ConflictRules
from memeval.quality.mqs import compute_mqs
from memeval.quality.record import MemoryRecord
from memeval.quality.stored import StoredMQSConfig
from memeval.registry import ConfigError
from memeval.systems.base import (
    SYSTEMS,
    Capability,
    Components,
    Hit,
    IndexedMemory,
    System,
    Undeclared,
)
from memeval.systems.reference.stored_models import StoredModels, stored_model_quality
from memeval.systems.reference.stored_quality import stored_memory_quality
from memeval.utils.progress import Progress, quiet
from memeval.utils.redact import redact

REFERENCE = "reference"  # its option name: memeval's own engine, run without the boundary


class ReferenceIngestor(Gate):
    """The write gate, plus what the reference engine can say about a pass beyond decisions."""

    def pass_state(self, labels: Mapping[str, str | None]) -> dict[str, Any]:
        content = self.content_gate
        return {"rejection_store_size": len(self.rejections),
                "rejection_store_by_stage": dict(Counter(r.stage for r in self.rejections.records)),
                "rejection_store_by_label": dict(Counter(
                    str(labels.get(r.source_id)) for r in self.rejections.records)),
                "accept_store_size": len(self.accepts),
                "scorer_rebuilds": content.rebuilds if content else 0,
                "threshold_calibrations": dict(content.calibrations) if content else {}}

    def stored_quality(self, decisions: Sequence[Decision], cfg: StoredMQSConfig, *,
                       resamples: int, seed: int, progress: Progress = quiet
                       ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """MQS of the memories this pass stored (see systems/reference/stored_quality.py)."""
        return stored_memory_quality(self, decisions, cfg, resamples=resamples, seed=seed,
                                     progress=progress)

    def stored_models(self, decisions: Sequence[Decision], cfg: StoredMQSConfig,
                      models: StoredModels, *, resamples: int, seed: int,
                      progress: Progress = quiet
                      ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The learned conflict detector and trust score on the same memories (see
        systems/reference/stored_models.py)."""
        return stored_model_quality(self, decisions, cfg, models, resamples=resamples, seed=seed,
                                    progress=progress)


@dataclass
class ReferenceConfig:
    """Nothing of its own: the engine's settings live in their groups (embedder, scorer,
    threshold, judge, gate); trust and conflicts use memledger's MQS constants and memeval's
    conflict rules as shipped (the quality experiments tune both)."""


class ReferenceSystem(Undeclared):
    name = "reference"
    capabilities = frozenset(Capability) - {Capability.FEEDBACK}

    def __init__(self, ctx: Components) -> None:
        self._ctx = ctx
        self.notes: dict[str, Any] = {}
        self._detector = ConflictDetector(ConflictRules())
        self._ids: list[str] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def ingestor(self, state_dir: Path, gate_cfg: GateConfig | None = None) -> ReferenceIngestor:
        ctx = self._ctx
        return ReferenceIngestor(gate_cfg or ctx.gate_config(), embedder=ctx.embedder,
                                 content_embedder=ctx.content_embedder, judge=ctx.judge,
                                 scorer=SCORERS.make(ctx.scorer), redact=redact,
                                 state_dir=state_dir)

    def score_records(self, records: Sequence[MemoryRecord]) -> list[float]:
        ledger = {r.id: r for r in records}
        return [float(compute_mqs(r, ledger).score) for r in records]

    def detect_conflict(self, first: str, second: str) -> str | None:
        found = self._detector.detect(first, second)
        return found.kind.value if found else None

    def index(self, memories: Sequence[IndexedMemory]) -> None:
        self._ids = [m.id for m in memories]
        self._vectors = self._ctx.embedder.embed([m.text for m in memories])

    def search(self, query: str, k: int) -> list[Hit]:
        if not self._ids:
            return []
        cosines = self._vectors @ self._ctx.embedder.embed([query])[0]
        top = np.argsort(-cosines, kind="stable")[:k]
        return [Hit(self._ids[i], float(cosines[i])) for i in top]

    def close(self) -> None:
        """Nothing held open: the run context owns the embedder and judge."""


def reference_ingestor(system: System, state_dir: Path, experiment: str,
                       gate_cfg: GateConfig | None = None) -> ReferenceIngestor:
    """The reference engine's write gate, for studies of the engine itself (its rejection
    store's feed, its stored memories): any other system is refused by name."""
    if not isinstance(system, ReferenceSystem):
        raise ConfigError(f"experiment {experiment} studies memeval's reference engine: run "
                          f"it with system=reference (not system={system.name})")
    return system.ingestor(state_dir, gate_cfg)


@SYSTEMS.register(REFERENCE, ReferenceConfig)
def build_reference(cfg: ReferenceConfig, *, ctx: Components) -> ReferenceSystem:
    return ReferenceSystem(ctx)
