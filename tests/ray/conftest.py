"""One real local Ray cluster on loopback for this package's tests (it takes ~8 s to start),
stopped when they are done rather than idling through the rest of the session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ray_cluster import RayCluster, local_ray_cluster


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[RayCluster]:
    with local_ray_cluster() as cluster:
        yield cluster
