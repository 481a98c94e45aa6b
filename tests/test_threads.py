"""Thread pools sized once: one thread per BLAS and OpenMP pool, the model's from MEMEVAL_THREADS,
a variable the user set kept, and the sizes recorded with the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memeval import threads
from memeval.__main__ import main
from memeval.results.provenance import provenance

# A fresh interpreter: what a pool reports after `size_pools()` ran before numpy loaded.
PROBE = """
import json, os
from memeval.threads import size_pools
sized = size_pools()
import numpy, torch
from threadpoolctl import threadpool_info
print(json.dumps({"settings": sized.as_dict(), "torch": torch.get_num_threads(),
                  "pools": sorted({p["num_threads"] for p in threadpool_info()}),
                  "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}}))
"""


def probe(**env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items()
             if k not in (*threads.POOL_VARIABLES, threads.ENV)}
    done = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env},
                          capture_output=True, text=True, timeout=120, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_every_blas_and_openmp_pool_gets_one_thread_and_a_users_variable_is_kept() -> None:
    sized = probe()
    assert sized["pools"] == [1] and sized["env"] == {"OMP_NUM_THREADS": "1",
                                                      "MKL_NUM_THREADS": "1"}
    assert sized["settings"] == {"cores": threads.available_cores(),
                                 "model": threads.available_cores(), "numeric": 1, "sized": True}
    kept = probe(OMP_NUM_THREADS="2", MEMEVAL_THREADS="1")
    assert kept["env"] == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"}
    assert kept["settings"]["numeric"] == 2 and kept["settings"]["model"] == 1  # type: ignore[index]
    library = probe(MEMEVAL_THREADS="library")
    assert library["env"] == {"OMP_NUM_THREADS": None, "MKL_NUM_THREADS": None}
    assert library["settings"]["sized"] is False  # type: ignore[index]


def test_the_model_pool_follows_memeval_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv(threads.ENV, "1")
    before = torch.get_num_threads()
    try:
        threads.size_model_pool()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.bad_input
@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_thread_count_is_named_before_any_work(
        value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(threads.ENV, value)
    assert main(["list", "experiments"]) == 2
    assert f"MEMEVAL_THREADS={value!r}: give a whole number of threads" in capsys.readouterr().err


def test_the_run_records_its_pool_sizes() -> None:
    import numpy  # noqa: F401  (its BLAS pool is among those recorded)

    threads.size_pools()
    recorded = provenance()["threads"]
    assert recorded["numeric"] == 1 and recorded["model"] >= 1
    assert {pool["api"] for pool in recorded["pools"]} >= {"blas"}
    # torch's own OpenMP runtime is the model's pool; every BLAS pool has one thread
    assert all(pool["threads"] == 1 for pool in recorded["pools"] if pool["api"] == "blas")
