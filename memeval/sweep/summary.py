"""A multirun's summary, as `python -m memeval sweep` shows and writes it (memeval/cli/sweep.py):
each run's last pass beside its swept settings, the Pareto front, the default run, the spread
over seeds."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from memeval.reporting.table import aligned, short_key, wrapped
from memeval.results.result import PASS_COLUMNS
from memeval.user_errors import complain

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from memeval.results.run import Run

# pandas, matplotlib and the run reader are imported when a sweep is read: `sweep --help`
# loads none of them.

OUTPUTS = ("sweep_summary.csv", "sweep_summary.md", "pareto.png")
# Metrics a front can be drawn on, and which way is better (+1 higher, -1 lower).
SENSE = {"substantive_recall": 1, "judge_call_saving": 1, "prejudge_filter_rate": 1,
         "low_value_filtered_rate": 1, "noise_stored": -1, "judge_calls": -1}
MARKS = ("pareto", "default")
RATES = {"substantive_recall", "judge_call_saving", "prejudge_filter_rate",
         "low_value_filtered_rate"}


class SweepError(Exception):
    """A sweep directory that cannot be summarised; the message says why and what to do."""


@dataclass
class Sweep:
    table: pd.DataFrame  # one row per run: run, swept keys…, pass, metrics…, pareto, default
    swept: list[str]
    fixed: dict[str, Any]  # overrides every run shares
    x: str
    y: str
    experiments: list[str]
    unfinished: list[str]  # job dirs with overrides.yaml but no metrics.json


def _plain(value: Any) -> Any:
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


def last_pass(run: Run) -> dict[str, Any] | None:
    """The final pass of the main arm (the one a protocol converges to), or None if no passes."""
    passes = run.passes()
    if passes.empty:
        return None
    if "main" in set(passes["arm"]):
        passes = passes[passes["arm"] == "main"]
    row = passes.sort_values("pass").iloc[-1]
    return {"pass": int(row["pass"]), **{c: row[c] for c in PASS_COLUMNS}}


def pareto_mask(points: Sequence[tuple[float, float]], senses: tuple[int, int]) -> list[bool]:
    """True where no other point is at least as good on both metrics and better on one.
    Missing (NaN) metrics are never optimal; exact ties are both optimal."""
    oriented = [(x * senses[0], y * senses[1]) for x, y in points]

    def dominated(i: int) -> bool:
        xi, yi = oriented[i]
        return any(xj >= xi and yj >= yi and (xj > xi or yj > yi)
                   for j, (xj, yj) in enumerate(oriented) if j != i and not _nan(xj, yj))

    return [not _nan(*p) and not dominated(i) for i, p in enumerate(oriented)]


def _nan(*values: float) -> bool:
    return any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)


def default_mask(runs: Sequence[Run], swept: Sequence[str], experiments: Sequence[str],
                 compose: Callable[[list[str]], DictConfig]) -> list[bool]:
    """True for a run whose swept settings equal the experiment's default config (resolved)."""
    from memeval.results.run import same_setting

    defaults: dict[str, DictConfig | None] = {}
    marks = []
    for run, experiment in zip(runs, experiments, strict=True):
        if experiment not in defaults:
            try:
                defaults[experiment] = compose([f"+experiment={experiment}"])
            except Exception as err:  # an experiment this checkout no longer has
                complain(f"memeval sweep: no default config for '{experiment}': {err}")
                defaults[experiment] = None
        default = defaults[experiment]
        marks.append(default is not None and all(
            same_setting(_plain(run.setting(key)), _plain(OmegaConf.select(default, key)))
            for key in swept))
    return marks


def _compose(overrides: list[str]) -> DictConfig:
    from memeval.config import compose  # lazily: `sweep --help` need not load every component

    return compose(overrides)


def summarise(root: str | Path, x: str = "judge_call_saving", y: str = "substantive_recall",
              compose: Callable[[list[str]], DictConfig] | None = None) -> Sweep:
    import pandas as pd

    from memeval.results.run import OVERRIDES, find_runs, natural_order, swept_settings

    for metric in (x, y):
        if metric not in SENSE:
            raise SweepError(f"unknown metric '{metric}' (choose from {', '.join(SENSE)})")
    root = Path(root)
    if not root.is_dir():
        raise SweepError(f"{root} is not a directory")
    found = sorted(find_runs(root), key=lambda r: natural_order(str(r.path.relative_to(root))))
    rows, runs = [], []
    for run in found:
        final = last_pass(run)
        if final is None:
            complain(f"memeval sweep: {run.path} has no per-pass metrics (experiment "
                     f"'{run.experiment}'); skipped")
            continue
        runs.append(run)
        rows.append(final)
    finished = {run.path for run in found}
    unfinished = sorted((str(p.parent.parent.relative_to(root))
                         for p in root.rglob(str(OVERRIDES)) if p.parent.parent not in finished),
                        key=natural_order)
    if not runs:
        hint = (f" ({len(unfinished)} job dirs have no metrics.json: failed or still running; "
                "see their __main__.log)") if unfinished else ""
        raise SweepError(f"no runs with per-pass metrics under {root}{hint}: pass the directory "
                         "a multirun wrote (hydra.sweep.dir, e.g. runs/multirun/DATE/TIME)")
    settings, swept, fixed = swept_settings(runs)
    experiments = [str(s.get("experiment", run.experiment)) for s, run in zip(settings, runs,
                                                                             strict=True)]
    table = pd.DataFrame([
        {"run": str(run.path.relative_to(root)), **{k: s.get(k) for k in swept}, **row}
        for run, s, row in zip(runs, settings, rows, strict=True)])
    for metric in (x, y):
        table[metric] = pd.to_numeric(table[metric], errors="coerce")
    points = list(zip(table[x].astype(float), table[y].astype(float), strict=True))
    table["pareto"] = pareto_mask(points, (SENSE[x], SENSE[y]))
    table["default"] = default_mask(runs, swept, experiments, compose or _compose)
    return Sweep(table, swept, fixed, x, y, sorted(set(experiments)), unfinished)


def _cell(column: str, value: Any) -> str:
    if column in MARKS:
        return "yes" if value else ""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if column in RATES:
        return f"{100 * float(value):.1f}%"
    if column in PASS_COLUMNS:
        return str(int(value))
    return str(value)


# Column headers in the terminal (the CSV and Markdown keep the metric names): 100 columns.
HEADERS = {"substantive_recall": "recall", "judge_call_saving": "saved",
           "noise_stored": "noise", "low_value_filtered_rate": "low filtered",
           "prejudge_filter_rate": "pre-judge", "judge_calls": "judge calls"}
LEGEND = ("recall: substantive recall; saved: judge calls saved; noise: noise stored; pre-judge: "
          "dropped before the judge (last pass of each run; every metric in sweep_summary.md)")


CONSOLE = ("substantive_recall", "judge_call_saving", "noise_stored", "prejudge_filter_rate",
           "judge_calls")  # the terminal's columns; the Markdown and CSV have every metric


def _display(sweep: Sweep, console: bool = False) -> tuple[list[str], list[list[str]]]:
    """The table's header and cells: every metric by name for the Markdown, the headline
    ones under short headers (swept keys by their last part) for the terminal."""
    shown = CONSOLE if console else PASS_COLUMNS
    metrics = [sweep.y, sweep.x, *(c for c in shown if c not in (sweep.x, sweep.y))]
    columns = ["run", *sweep.swept, "pass", *metrics, *MARKS]
    rows = [[_cell(c, record[c]) for c in columns] for record in sweep.table.to_dict("records")]
    if not console:
        return columns, rows
    names = {**{key: short_key(key, sweep.swept) for key in sweep.swept}, **HEADERS}
    return [names.get(c, c) for c in columns], rows


SEED = "seed"
AGGREGATED = ("substantive_recall", "prejudge_filter_rate", "judge_call_saving", "noise_stored")


def _spread(values: pd.Series, metric: str) -> str:
    """Mean ± sample SD over seeds, and the worst seed (what a single run could show)."""
    scale = 100.0 if metric in RATES else 1.0
    worst = values.min() if SENSE[metric] > 0 else values.max()
    sd = values.std() if len(values) > 1 else 0.0
    worst_shown = f"{scale * worst:.1f}" if metric in RATES else f"{worst:g}"
    return f"{scale * values.mean():.1f} ± {scale * sd:.1f} [{worst_shown}]"


def seed_aggregate(sweep: Sweep) -> tuple[list[str], list[list[str]]] | None:
    """Across seeds, for each combination of the other swept settings: the seeds' mean, SD and
    worst value of the headline metrics. None when the sweep did not vary the seed."""
    import pandas as pd

    if SEED not in sweep.swept:
        return None
    others = [key for key in sweep.swept if key != SEED]
    table = sweep.table.assign(**{key: sweep.table[key].astype(str) for key in others})
    groups = table.groupby(others, sort=False) if others else [((), table)]
    rows = []
    for key, group in groups:
        values = [str(v) for v in (key if isinstance(key, tuple) else (key,))]
        rows.append([*values, str(len(group)),
                     *(_spread(pd.to_numeric(group[m], errors="coerce").dropna(), m)
                       for m in AGGREGATED)])
    return [*(short_key(key, others) for key in others), "seeds",
            *(f"{HEADERS[m]} (%)" if m in RATES else HEADERS[m] for m in AGGREGATED)], rows


def markdown(sweep: Sweep, root: Path) -> str:
    columns, rows = _display(sweep)
    marked = sweep.table[sweep.table["default"]]["run"].tolist()
    lines = [
        f"# Sweep summary: {root}", "",
        f"- experiment: {', '.join(sweep.experiments)}; {len(sweep.table)} runs, last pass of "
        "arm main each",
        f"- swept: {', '.join(sweep.swept) or '(nothing varies)'}",
        f"- fixed: {', '.join(f'{k}={v}' for k, v in sweep.fixed.items()) or '—'}",
        f"- Pareto front ({_better(sweep.x)} {sweep.x}, {_better(sweep.y)} {sweep.y}): "
        + ", ".join(sweep.table[sweep.table["pareto"]]["run"]),
        f"- default config: {', '.join(marked) or 'not among the runs'}",
    ]
    if sweep.unfinished:
        lines.append(f"- job dirs without metrics.json: {', '.join(sweep.unfinished)}")
    lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    aggregate = seed_aggregate(sweep)
    if aggregate is not None:
        header, cells = aggregate
        lines += ["", "Across seeds: mean ± SD [worst seed]", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def _better(metric: str) -> str:
    return "max" if SENSE[metric] > 0 else "min"


def _front(points: list[tuple[float, float]], senses: tuple[int, int]) -> list[tuple[float, float]]:
    """The staircase bounding what the Pareto points dominate, in the metrics' own units."""
    oriented = sorted((px * senses[0], py * senses[1]) for px, py in points)
    steps: list[tuple[float, float]] = []
    for i, (px, py) in enumerate(oriented):
        if i:
            steps.append((oriented[i - 1][0], py))
        steps.append((px, py))
    return [(px * senses[0], py * senses[1]) for px, py in steps]


def _settings(sweep: Sweep, record: Mapping[Any, Any]) -> str:
    """A run by the swept settings it has (keys by their last part), or by its directory when
    nothing was swept."""
    return ", ".join(f"{short_key(key, sweep.swept)}={_cell(key, record[key])}"
                     for key in sweep.swept) or str(record["run"])


def pareto_figure(sweep: Sweep) -> Figure:
    """The two metrics of every run, the front, the default; each point named by its settings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import PercentFormatter

    from memeval.results.result import PASS_NAMES

    table = sweep.table.dropna(subset=[sweep.x, sweep.y])
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.scatter(table[sweep.x], table[sweep.y], color="0.6", label="run", zorder=2)
    front = table[table["pareto"]]
    staircase = _front(list(zip(front[sweep.x], front[sweep.y], strict=True)),
                       (SENSE[sweep.x], SENSE[sweep.y]))
    if staircase:
        ax.plot(*zip(*staircase, strict=True), color="tab:blue", linewidth=1.2, zorder=1)
    ax.scatter(front[sweep.x], front[sweep.y], color="tab:blue", label="Pareto-optimal", zorder=3)
    default = table[table["default"]]
    if not default.empty:
        ax.scatter(default[sweep.x], default[sweep.y], marker="*", s=260, color="tab:orange",
                   edgecolor="black", label="default config", zorder=4)
    named = table.assign(settings=[_settings(sweep, record)
                                   for record in table.to_dict("records")])
    middle = (table[sweep.x].min() + table[sweep.x].max()) / 2
    for (px, py), runs in named.groupby([sweep.x, sweep.y])["settings"]:  # one label per point
        right = px <= middle  # toward the middle, so no label runs off the axes
        ax.annotate("\n".join(runs), (px, py), fontsize=7, xytext=(5 if right else -5, 3),
                    textcoords="offset points", ha="left" if right else "right")
    for axis, metric in ((ax.xaxis, sweep.x), (ax.yaxis, sweep.y)):
        axis.set_label_text(f"{PASS_NAMES[metric]}, "
                            f"{'higher' if SENSE[metric] > 0 else 'lower'} is better")
        if metric in RATES:
            axis.set_major_formatter(PercentFormatter(xmax=1))
    ax.set_title(f"{', '.join(sweep.experiments)}: swept {', '.join(sweep.swept) or '—'}",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def write(sweep: Sweep, root: Path, out: Path) -> list[Path]:
    from memeval.reporting.figures import save

    out.mkdir(parents=True, exist_ok=True)
    csv, md, png = (out / name for name in OUTPUTS)
    sweep.table.to_csv(csv, index=False)
    md.write_text(markdown(sweep, root))
    save(pareto_figure(sweep), png)
    return [csv, md, png]


def console_summary(sweep: Sweep, written: Sequence[Path]) -> str:
    """What `sweep` prints: the table, the spread over seeds when the seed was swept, the
    legend, what varied and the files written."""
    lines = [aligned(*_display(sweep, console=True))]
    aggregate = seed_aggregate(sweep)
    if aggregate is not None:
        lines += ["\nacross seeds: mean ± SD [worst seed]", aligned(*aggregate)]
    lines += [wrapped(LEGEND),
              f"\nswept: {', '.join(sweep.swept) or '(nothing varies)'}; "
              f"Pareto: {_better(sweep.x)} {sweep.x}, {_better(sweep.y)} {sweep.y}",
              wrapped("written: " + ", ".join(str(p) for p in written))]
    return "\n".join(lines)


def report_sweep(root: Path, out: Path | None = None, x: str = "judge_call_saving",
                 y: str = "substantive_recall") -> str:
    """Summarise the sweep under `root`, write its files into `out` (default `root`), and return
    what the console shows: `python -m memeval sweep` and the multirun callback alike."""
    sweep = summarise(root, x, y)
    return console_summary(sweep, write(sweep, root, out or root))
