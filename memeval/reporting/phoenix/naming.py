"""Experiment names that tell a dataset's experiments apart in Phoenix's list, which shows only
the first twenty-odd characters of a name.

Each experiment's metadata keeps what its name is built from: `lead` (the pass, or the detector),
`tokens` (the short settings every name carries: threshold, seed, embedder, scorer, judge) and
`overrides` (the run's command-line settings). A setting whose value is not the same across the
dataset's experiments is named first, so two configurations never share a name; a push renames
the dataset's earlier experiments when a new configuration makes one of their settings differ.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.results.run import PRESENTATION_KEYS, read_overrides, varying_keys

NAME_CHARS = 60  # about what Phoenix's experiment header shows of a name
# Override groups a token already names (`threshold.margin` is not one: it is named as itself).
TOKEN_OF = {"threshold.policy": "threshold", "threshold.value": "threshold",
            "threshold.target_recall": "threshold", "seed": "seed", "embedder": "embedder",
            "scorer": "scorer", "judge": "judge", "judge.model": "judge"}
# Overrides that do not change what an experiment measured on its dataset: how the run was shown
# or cached, which experiment it was (the name's tail), and the dataset's path (its fingerprint
# is in the dataset's name).
UNNAMED = (*PRESENTATION_KEYS, "experiment", "dataset", "hydra")


def fingerprint(examples: list[dict[str, Any]]) -> str:
    """A dataset's examples as a digest, whose first 12 digits name it: the same items, the
    same dataset, whichever run pushes them."""
    return hashlib.sha256(json.dumps(examples, sort_keys=True).encode("utf-8")).hexdigest()


def fitted_name(lead: str, settings: Sequence[str], tail: str, limit: int = NAME_CHARS,
                keep: int = 0) -> str:
    """`lead setting setting | tail` within `limit` characters: the tail is cut first, then the
    longest settings (the first of equals) are shortened with "...", the first `keep` (what
    tells the experiment apart) only when the others cannot give more. ASCII only: Phoenix puts
    the name in a download's Content-Disposition header, which fails on anything else."""
    widths = [len(part) for part in settings]
    room = limit - len(lead) - len(settings)
    while sum(widths) > room and max(widths, default=0) > 6:
        spare = [i for i, w in enumerate(widths) if w > 6 and i >= keep] or range(len(widths))
        widths[max(spare, key=lambda i: (widths[i], -i))] -= 1
    parts = [p if len(p) <= w else p[: w - 3] + "..." for p, w in zip(settings, widths,
                                                                      strict=True)]
    body = " ".join([lead, *parts])
    end = f" | {tail}"
    if len(body) + len(end) > limit:
        end = end[: max(limit - len(body) - 3, 0)] + "..." if limit - len(body) > 6 else ""
    return (body + end)[:limit]


def run_overrides(run_dir: Path) -> dict[str, str]:
    """The run's command-line settings that change what it measured, as short strings ({} for
    a run made without Hydra's record of them)."""
    found = read_overrides(run_dir) or {}
    return {key: value if isinstance(value, str) else json.dumps(value)
            for key, value in sorted(found.items())
            if key.split(".")[0] not in UNNAMED}


def _overrides(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return dict(metadata.get("overrides") or {})


def differing(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Override keys (and tokens) whose value is not the same across these experiments'
    metadata."""
    overrides = varying_keys([_overrides(m) for m in runs])
    tokens = varying_keys([dict(m.get("tokens") or {}) for m in runs])
    return [*overrides, *(t for t in tokens if t not in overrides)]


def name(metadata: Mapping[str, Any], varying: Sequence[str], tail: str) -> str:
    """The experiment's name: its lead, the settings that differ across the dataset, then the
    tokens every name carries."""
    tokens, overrides = dict(metadata.get("tokens") or {}), _overrides(metadata)
    first: list[str] = []
    for key in varying:
        token = TOKEN_OF.get(key, key)
        shown = tokens.get(token) if token in tokens else \
            f"{key.rsplit('.', 1)[-1]}={overrides.get(key, 'default')}"
        if shown is not None and shown not in first:
            first.append(shown)
    rest = [value for value in tokens.values() if value not in first]
    return fitted_name(str(metadata["lead"]), [*first, *rest], tail, keep=len(first))


def memeval_experiments(experiments: Sequence[Mapping[str, Any]]
                        ) -> list[Mapping[str, Any]]:
    """The experiments a memeval push named from their metadata (older ones kept no lead)."""
    return [e for e in experiments if "lead" in (e.get("metadata") or {})]


def upsert_experiment(rest: PhoenixREST, dataset_id: str, found: Mapping[str, Any] | None,
                      name: str, description: str, metadata: Mapping[str, Any]) -> str:
    """Create the experiment, or bring the one an earlier push made (found by its metadata) up
    to date, e.g. renamed by an older memeval."""
    if found is None:
        return rest.create_experiment(dataset_id, name, description, metadata)
    if (found["name"], found.get("description"), found.get("metadata")) != (
            name, description, dict(metadata)):
        rest.update_experiment(found["id"], name, description, metadata)
    return str(found["id"])


def experiments_of_run(experiments: Sequence[Mapping[str, Any]], run_id: str,
                       key: Callable[[Mapping[str, Any]], object]) -> dict[object, dict[str, Any]]:
    """This run's experiments among a dataset's, by `key` of their metadata (names change)."""
    return {key(e["metadata"]): dict(e) for e in experiments
            if (e.get("metadata") or {}).get("memeval_run_id") == run_id}


def settings_apart(rest: PhoenixREST, experiments: Sequence[Mapping[str, Any]], run_id: str,
                   mine: Mapping[str, Any]) -> list[str]:
    """The settings whose value differs across the dataset's experiments and this run's (its
    experiments' metadata `mine`); the other runs' experiments are renamed to name them too."""
    others = [e for e in memeval_experiments(experiments)
              if e["metadata"].get("memeval_run_id") != run_id]
    varying = differing([mine, *(e["metadata"] for e in others)])
    for other in others:
        metadata = other["metadata"]
        renamed = name(metadata, varying, str(metadata.get("experiment")))
        if renamed != other["name"]:
            rest.update_experiment(other["id"], renamed, other.get("description") or "",
                                   metadata)
    return varying
