"""Shared fixtures: offline hub, a private cache, and a composed config on the hashing embedder."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.threads import size_pools

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
size_pools()  # before numpy loads: the tests' pools, and those of every process they start


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A run in process lets Hydra point the root logger at this test's captured streams; put
    the handlers back, so a later test's log records do not hit a closed stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def fast_config(tmp_path: Path) -> Callable[..., DictConfig]:
    """compose(+experiment=NAME, …) on the hashing embedder with a per-test cache."""
    from memeval.config import compose

    def build(*overrides: str) -> DictConfig:
        base = ["embedder=hashing", f"cache_dir={tmp_path / 'cache'}", "progress=false",
                "reporting.phoenix.endpoint=null",
                "bootstrap=200"]
        return compose([*base, *overrides])

    return build
