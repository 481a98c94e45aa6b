"""Shared fixtures: offline hub, a private cache, and a composed config on the hashing embedder."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig

from memeval.threads import size_pools
from memeval.utils.fit_cache import DIR_ENV

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
size_pools()  # before numpy loads: the tests' pools, and those of every process they start
# Fitted models are keyed by settings, data and code: every test, worker and subprocess of the
# session (and later sessions) shares one place for them, whatever cache_dir each test uses.
os.environ.setdefault(DIR_ENV, f"{tempfile.gettempdir()}/memeval-test-fits-{os.getuid()}")


# Real servers, clusters and faults injected into real runs: all of it `slow` (not the quick tier).
SLOW_PACKAGES = ("phoenix", "ray", "faults")
# Test groups by the worker time they took (`pytest --durations`), longest first.
LONGEST_FIRST = ("phoenix", "ray", "tests/faults/test_resume.py", "tests/test_regression_gate.py",
                 "tests/test_bench.py", "tests/test_acceptance.py", "tests/test_cli.py",
                 "tests/test_doc_commands.py")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups off the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n`), each worker is a session of its own, so a module's or a
    session's fixture would be built once per worker that runs one of its tests: a test file's
    tests run in one worker, and every test that uses the real Phoenix server or Ray cluster
    (tests/phoenix/, tests/ray/) in one worker, so each is started once."""
    groups = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        package = path.split("/")[1] if path.count("/") > 1 else ""
        groups[item.nodeid] = package if package in ("phoenix", "ray") else path
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
        if package in SLOW_PACKAGES:
            item.add_marker(pytest.mark.slow)
    # the longest groups are handed out first, so no worker starts one while the other is
    # about to finish and would sit idle (each group's own order is kept)
    items.sort(key=lambda item: LONGEST_FIRST.index(groups[item.nodeid])
               if groups[item.nodeid] in LONGEST_FIRST else len(LONGEST_FIRST))


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A run in process lets Hydra point the root logger at this test's captured streams; put
    the handlers back, so a later test's log records do not hit a closed stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's embedding and fit cache for tests that run the real model on the bundled
    data: $MEMEVAL_CACHE_DIR when set (CI sets one per clone), else one for this session. The
    vectors do not depend on the cache (a cold and a warm run decide alike), so sharing it only
    spares each such test embedding the same texts again."""
    found = os.environ.get("MEMEVAL_CACHE_DIR")
    return Path(found) if found else tmp_path_factory.mktemp("shared-cache")


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
