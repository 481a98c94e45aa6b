"""A real local Ray cluster on loopback for integration tests, stopped with nothing left behind.

Ray replaces `--node-ip-address=127.0.0.1` by the machine's routable address and binds its GCS
and raylet on every interface, unless Ray clusters are off (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`,
the mode Ray uses on laptops): then every process binds 127.0.0.1. Drivers need the same setting,
or they resolve the address to the routable one and never reach the cluster.

`ray start --head --block` runs in a session of its own and keeps every process it starts (GCS,
raylet, agents, workers) in that session; terminating it stops them all. `ray stop` is not used:
it would stop any other Ray on the machine too. The temp dir is short (Ray's socket paths must fit
108 bytes) and removed afterwards, so no `/tmp/ray` session is left either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.phoenix.conftest import free_ports

# A head stopped with SIGTERM drains first, waiting for the node to go idle; the detached actors
# Ray Data leaves (its stats and autoscaling coordinators) never do, so it waits out the whole
# drain timeout (Ray's default 30 s, for serving traffic) before stopping. Nothing is served here.
DRAIN_S = "2"
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": DRAIN_S,
                "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RayCluster:
    address: str  # 127.0.0.1:PORT, the GCS
    env: dict[str, str]  # for drivers: os.environ plus the loopback settings
    temp_dir: Path
    session: int  # the session id every cluster process shares

    def processes(self) -> list[psutil.Process]:
        """Every live process of the cluster (its session)."""
        found = []
        for process in psutil.process_iter():
            with suppress(psutil.Error, OSError):
                if os.getsid(process.pid) == self.session:
                    found.append(process)
        return found

    def listening(self) -> list[str]:
        """The addresses the cluster's processes listen on (TCP)."""
        pids = {process.pid for process in self.processes()}
        return sorted({conn.laddr.ip for conn in psutil.net_connections("tcp")
                       if conn.status == psutil.CONN_LISTEN and conn.pid in pids})


@contextmanager
def local_ray_cluster(num_cpus: int = 2) -> Iterator[RayCluster]:
    """Start a head node on loopback, yield it, then stop it and check nothing is left."""
    temp_dir = Path(tempfile.mkdtemp(prefix="mray-", dir="/tmp"))
    env = {**os.environ, **LOOPBACK_ENV}
    gcs, client, agent = free_ports(3)
    log = temp_dir / "head.log"
    with log.open("w") as out:  # the head keeps its own copy of the file
        head = subprocess.Popen(
            ["ray", "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={gcs}",
             f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
             f"--temp-dir={temp_dir}", f"--num-cpus={num_cpus}", "--disable-usage-stats",
             "--include-dashboard=false"],
            env=env, start_new_session=True, stdout=out, stderr=subprocess.STDOUT)
    cluster = RayCluster(f"127.0.0.1:{gcs}", env, temp_dir, head.pid)
    try:
        _wait_started(head, log)
        yield cluster
    finally:
        head.terminate()
        try:
            head.wait(60)
        finally:
            left = _stop_stragglers(cluster)
            shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes outlived their cluster: {left}"


def _wait_started(head: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the head's log says Ray started; its whole log if it never does."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and head.poll() is None:
        if "Ray runtime started" in log.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise RuntimeError("ray start --head did not start:\n" + log.read_text(errors="replace"))


def _stop_stragglers(cluster: RayCluster) -> list[str]:
    """Kill any cluster process still alive a few seconds after the head stopped; name them."""
    deadline = time.monotonic() + 10
    while cluster.processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = cluster.processes()
    named = []
    for process in left:
        with suppress(psutil.Error):
            named.append(f"{process.pid} {process.name()}")
            process.kill()
    return named
