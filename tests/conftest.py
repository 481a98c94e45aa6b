"""Shared fixtures: offline hub, a private cache, and a composed config on the hashing embedder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


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
