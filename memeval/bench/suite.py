"""`python -m memeval bench --suite`: what each job costs as a user runs it, against budgets.

Each job (the main job, every other experiment, the regression gate;
memeval/conf/bench_suite.yaml) runs as a fresh `python -m memeval …` process, twice: cold, on an
empty cache (the embedding model runs and every quality model is fitted), then warm, on the cache
the cold run left. Wall time and
the CPU the process and its children used (os.wait4) are measured per run. A job past its budget
fails the command.

`--contended N` runs each job warm once more beside N CPU-bound processes (a shared CI runner's
neighbours, on this machine only; they are stopped after the job). `--threads` runs each job
warm once more with one thread per pool and once with the libraries' own pools
(`MEMEVAL_THREADS=library`), right after memeval's sizing, for the CPU each uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memeval.bench.scale import markdown_table
from memeval.paths import CONF_DIR
from memeval.threads import ENV as THREADS_ENV
from memeval.threads import LIBRARY, POOL_VARIABLES
from memeval.utils.fit_cache import DIR_ENV as FIT_DIR_ENV

BUDGETS = CONF_DIR / "bench_suite.yaml"
ONE_THREAD = {THREADS_ENV: "1", **dict.fromkeys(POOL_VARIABLES, "1")}
LIBRARY_POOLS = {THREADS_ENV: LIBRARY}


@dataclass
class Job:
    name: str
    command: list[str]
    warm: float  # budget, seconds
    cold: float | None = None


@dataclass
class Timed:
    wall_s: float
    cpu_s: float
    code: int

    def as_dict(self) -> dict[str, Any]:
        return {"wall_s": round(self.wall_s, 2), "cpu_s": round(self.cpu_s, 2),
                "exit": self.code}


@dataclass
class Measured:
    job: Job
    runs: dict[str, Timed] = field(default_factory=dict)  # cold, warm, contended, …
    failures: list[str] = field(default_factory=list)


@dataclass
class Budgets:
    jobs: list[Job]
    contended_factor: float
    cpu_factor: float


def load_budgets(path: Path = BUDGETS, only: Sequence[str] = ()) -> Budgets:
    raw = yaml.safe_load(path.read_text())
    jobs = [Job(**job) for job in raw["jobs"]]
    unknown = set(only) - {job.name for job in jobs}
    if unknown:
        raise ValueError(f"--only {', '.join(sorted(unknown))}: not a job in {path} "
                         f"(jobs: {', '.join(job.name for job in jobs)})")
    return Budgets([job for job in jobs if not only or job.name in only],
                   float(raw["contended_factor"]), float(raw["cpu_factor"]))


# Per command: the arguments that keep its outputs under a folder (a `--help` writes nothing).
OUTPUTS = {"gate": lambda out: ["--out", str(out / "gate.json")],
           "run": lambda out: [f"hydra.run.dir={out}"]}


def _arguments(job: Job, out: Path) -> list[str]:
    """The job's command with its outputs kept under `out`."""
    keep = OUTPUTS.get(job.command[0])
    return [*job.command, *(keep(out) if keep and "--help" not in job.command else [])]


def timed(args: list[str], env: dict[str, str], cwd: Path) -> Timed:
    """Wall time and the CPU of the process and every child it waited for."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "memeval", *args], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    stderr = process.stderr.read()  # drained as it comes, so a chatty job never blocks
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        print(stderr.decode(errors="replace")[-2000:], file=sys.stderr)
    return Timed(wall, usage.ru_utime + usage.ru_stime, process.returncode)


@contextmanager
def contended(processes: int) -> Iterator[None]:
    """`processes` CPU-bound neighbours for the length of the block, stopped after it."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(processes)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def measure(job: Job, work: Path, contention: int, threads: bool) -> Measured:
    measured = Measured(job)
    cache = work / job.name / "cache"
    env = {**os.environ, "MEMEVAL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    env.pop(FIT_DIR_ENV, None)  # cold means every model fitted: fits go under the job's cache
    variants: list[tuple[str, dict[str, str]]] = [("cold", env), ("warm", env)]
    if threads:  # the pool variables this process set (size_pools) are not the libraries'
        library = {k: v for k, v in env.items() if k not in POOL_VARIABLES}
        variants += [("one thread", {**env, **ONE_THREAD}),
                     ("library pools", {**library, **LIBRARY_POOLS})]
    for kind, variant in variants:
        print(f"bench --suite: {job.name}, {kind} …", file=sys.stderr, flush=True)
        measured.runs[kind] = timed(_arguments(job, work / job.name / kind), variant, work)
    if contention:
        print(f"bench --suite: {job.name}, warm beside {contention} busy processes …",
              file=sys.stderr, flush=True)
        with contended(contention):
            measured.runs["contended"] = timed(_arguments(job, work / job.name / "contended"),
                                               env, work)
    return measured


def judge(measured: Measured, budgets: Budgets) -> None:
    """Each budget the job's runs exceed, and each run that failed, as a failure line."""
    job, runs = measured.job, measured.runs
    for kind, run in runs.items():
        if run.code != 0:
            measured.failures.append(f"{job.name}: the {kind} run exited {run.code}")
    limits = {"warm": job.warm, "cold": job.cold}
    if "contended" in runs:
        limits["contended"] = budgets.contended_factor * runs["warm"].wall_s
    for kind, limit in limits.items():
        if limit is not None and kind in runs and runs[kind].wall_s > limit:
            measured.failures.append(f"{job.name}: {kind} took {runs[kind].wall_s:.1f} s, "
                                     f"over its budget of {limit:.1f} s")
    if "one thread" in runs:
        ratio = runs["warm"].cpu_s / max(runs["one thread"].cpu_s, 1e-9)
        if ratio > budgets.cpu_factor:
            measured.failures.append(f"{job.name}: memeval's pools used {ratio:.2f}x the CPU of "
                                     f"one thread each (at most {budgets.cpu_factor}x)")


def _cell(run: Timed | None, cpu: bool = False) -> str:
    if run is None:
        return "—"
    digits = 2 if run.wall_s < 1 else 1  # a --help's tenths of a second
    return (f"{run.wall_s:.{digits}f} s ({run.cpu_s:.{digits}f} s CPU)" if cpu
            else f"{run.wall_s:.{digits}f} s")


def table(results: Sequence[Measured], budgets: Budgets) -> str:
    """One Markdown row per job, in docs/results.md's columns."""
    contention = any("contended" in m.runs for m in results)
    threads = any("one thread" in m.runs for m in results)
    header = ["job", "cold", "warm (CPU)", "budget (warm / cold)"]
    header += ["contended (× warm)"] if contention else []
    header += ["one thread (CPU)", "library pools (CPU)"] if threads else []
    header += ["verdict"]
    rows = []
    for m in results:
        budget = f"{m.job.warm:g} s" + (f" / {m.job.cold:g} s" if m.job.cold else "")
        row = [m.job.name, _cell(m.runs.get("cold")), _cell(m.runs.get("warm"), cpu=True),
               budget]
        if contention:
            run = m.runs.get("contended")
            row.append("—" if run is None else
                       f"{run.wall_s:.1f} s ({run.wall_s / m.runs['warm'].wall_s:.1f}×)")
        if threads:
            row += [_cell(m.runs.get("one thread"), cpu=True),
                    _cell(m.runs.get("library pools"), cpu=True)]
        row.append("over budget" if m.failures else "ok")
        rows.append(row)
    return markdown_table(header, rows)


def bench_suite(budgets: Budgets, contention: int, threads: bool,
                work: Path | None = None) -> list[Measured]:
    with tempfile.TemporaryDirectory(prefix="memeval-suite-") as tmp:
        results = []
        for job in budgets.jobs:
            measured = measure(job, work or Path(tmp), contention, threads)
            judge(measured, budgets)
            results.append(measured)
        return results


def as_json(results: Sequence[Measured], budgets: Budgets, contention: int) -> dict[str, Any]:
    return {"cpu_count": os.cpu_count(), "contended_processes": contention,
            "load_average_1m": os.getloadavg()[0],
            "budgets": {"contended_factor": budgets.contended_factor,
                        "cpu_factor": budgets.cpu_factor},
            "jobs": [{"name": m.job.name, "command": m.job.command,
                      "budget": {"warm": m.job.warm, "cold": m.job.cold},
                      "runs": {kind: run.as_dict() for kind, run in m.runs.items()},
                      "failures": m.failures} for m in results]}
