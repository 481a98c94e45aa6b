"""One real local Ray cluster on loopback for the session's Ray tests (it takes ~8 s to start)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ray_cluster import RayCluster, local_ray_cluster


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    with local_ray_cluster() as cluster:
        yield cluster
