"""Where a run came from: code version, package versions, command line and the job's overrides
(redacted: an override such as `judge.base_url=http://user:PASS@host` carries a password). A sweep
job run by a launcher's worker (joblib, Ray, Slurm) has the worker's command line, so its own
overrides are what tell the job apart."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from memeval.threads import settings
from memeval.utils.redact import redact

PACKAGES = ("memeval", "numpy", "pandas", "scikit-learn", "torch", "sentence-transformers",
            "hydra-core", "omegaconf", "datasets", "httpx", "matplotlib")


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _job_overrides() -> list[str] | None:
    """The Hydra job's own overrides; None outside a Hydra job (the Python API, tests)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return [redact(override) for override in HydraConfig.get().overrides.task]


def provenance() -> dict[str, Any]:
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "argv": [redact(arg) for arg in sys.argv],
        "overrides": _job_overrides(),
        "packages": package_versions(),
        "threads": thread_pools(),
    }


def thread_pools() -> dict[str, Any]:
    """The pool sizes the run had: memeval's settings and each loaded pool as it stood."""
    from threadpoolctl import threadpool_info

    pools = [{"api": p["user_api"], "library": Path(p["filepath"]).name,
              "threads": p["num_threads"]} for p in threadpool_info()]
    if "torch" in sys.modules:
        pools.append({"api": "torch", "library": "torch",
                      "threads": sys.modules["torch"].get_num_threads()})
    return {**settings().as_dict(), "pools": pools}
