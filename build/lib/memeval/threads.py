"""Thread pools sized once, at start, for the cores this process may use.

A run loads four pools that each start one thread per core: numpy's and scipy's OpenBLAS,
scikit-learn's OpenMP and torch's. memeval's numeric work is many small matrices (a few hundred
rows of 384 floats, a bootstrap block, a logistic fit), where a second thread costs more in
wake-ups and spinning than it saves: measured on a quiet 2-core machine, `three_pass` took 12.0 s
of wall time and 16.3 s of CPU with the default pools, 8.7 s and 8.4 s with one thread each, and a
shared machine made the default 10-25x slower. So every BLAS and OpenMP pool gets one thread.
Only the embedding model does work large enough to share out; its pool gets `MEMEVAL_THREADS`
threads (default: the cores this process may use).

`size_pools()` runs before numpy is imported (the command line, the test session) so that the
environment it sets reaches every library and every worker process a launcher starts; a pool
that is already loaded (the Python API in a notebook) is limited in place. A variable the user set
(`OMP_NUM_THREADS=4`) is kept; `MEMEVAL_THREADS=library` sizes nothing, to compare with the
libraries' own pools (`python -m memeval bench --suite --threads`). Vectors and decisions do not
depend on the pool sizes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

ENV = "MEMEVAL_THREADS"
LIBRARY = "library"  # MEMEVAL_THREADS=library: size nothing (the libraries' own pools)
# Every pool's own variable: set for libraries loaded later and inherited by worker processes.
POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
NUMERIC_THREADS = 1  # BLAS and OpenMP: small matrices only (see above)
NUMERIC_MODULES = ("numpy", "scipy", "sklearn", "torch")


@dataclass(frozen=True)
class ThreadSettings:
    cores: int  # the cores this process may use
    model: int  # the embedding model's (torch's) pool
    numeric: int  # each BLAS and OpenMP pool, as the environment has it
    sized: bool = True  # False: MEMEVAL_THREADS=library, every pool its library's default

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def available_cores() -> int:
    """The cores the process may run on (its affinity mask, e.g. a container's or taskset's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def settings() -> ThreadSettings:
    """The sizes in force: `MEMEVAL_THREADS` for the model, else the available cores;
    `MEMEVAL_THREADS=library` leaves every pool as its library sizes it (for comparison)."""
    cores = available_cores()
    raw = os.environ.get(ENV, "").strip()
    model = cores
    if raw == LIBRARY:
        return ThreadSettings(cores, cores, cores, sized=False)
    if raw:
        try:
            model = int(raw)
        except ValueError:
            model = 0
        if model < 1:
            raise ValueError(f"{ENV}={raw!r}: give a whole number of threads, at least 1")
    numeric = os.environ.get("OMP_NUM_THREADS", str(NUMERIC_THREADS))
    return ThreadSettings(cores, model, int(numeric) if numeric.isdigit() else NUMERIC_THREADS)


def size_pools() -> ThreadSettings:
    """Size every pool for this process and the processes it starts; idempotent."""
    asked = settings()
    if not asked.sized:
        return asked
    for variable in POOL_VARIABLES:
        os.environ.setdefault(variable, str(NUMERIC_THREADS))
    sized = settings()
    if any(name in sys.modules for name in NUMERIC_MODULES):
        from threadpoolctl import threadpool_limits

        threadpool_limits(sized.numeric)  # pools loaded before the environment was set
    if "torch" in sys.modules:
        size_model_pool()
    return sized


def size_model_pool() -> None:
    """torch reads OMP_NUM_THREADS when it loads: the model's pool is set after that."""
    import torch

    sized = settings()
    wanted = sized.model
    if sized.sized and torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
