"""The local cluster the Ray tests use listens on loopback only and leaves nothing behind."""

from __future__ import annotations

import pytest

from tests.ray_cluster import local_ray_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_local_cluster_binds_loopback_only_and_leaves_nothing_behind() -> None:
    with local_ray_cluster(num_cpus=1) as cluster:
        running = cluster.processes()
        assert {"gcs_server", "raylet"} <= {process.name() for process in running}
        # every socket the cluster listens on is a loopback one (IPv4, or IPv4 mapped in IPv6)
        assert cluster.listening(), "the cluster listens on nothing"
        assert all(ip in ("127.0.0.1", "::ffff:127.0.0.1") for ip in cluster.listening()), \
            cluster.listening()
        temp_dir = cluster.temp_dir
    # the context manager asserted no process outlived the head; its files are gone too
    assert not cluster.processes()
    assert not temp_dir.exists()
