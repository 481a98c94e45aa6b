"""A run (or two, compared) as one page: report.html and report.md, or compare_<A>_vs_<B>.html
and .md, from the same sections read through the results API (`python -m memeval report`)."""

from __future__ import annotations

import base64
import contextlib
import html
import math
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memeval.reporting.compare import (
    check_comparable,
    compare_runs,
    run_labels,
    settings_diff,
)
from memeval.reporting.outputs import Section, UnknownExperiment, outputs_of
from memeval.reporting.table import pass_blocks, threshold_state
from memeval.results.result import reading
from memeval.results.run import Run
from memeval.utils.redact import redact

STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:1em 0;font-size:14px}"
         "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}"
         "th{background:#f3f3f3}img{max-width:100%;margin:1em 0}")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def percent(value: float | None) -> str:
    """A rate as a percentage with one decimal (0.99107 → 99.1%): the precision the CIs allow."""
    return "—" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _signed_points(value: float | None) -> str:
    return "?" if value is None or math.isnan(value) else f"{100 * value:+.1f}"


def points(delta: float | None, ci: Sequence[float | None]) -> str:
    """A difference of two rates in percentage points, with its 95% CI: +6.2 [+2.1, +10.1]."""
    if delta is None or math.isnan(delta):
        return "—"
    return f"{_signed_points(delta)} [{_signed_points(ci[0])}, {_signed_points(ci[1])}]"


def p_value(p: float) -> str:
    """Three decimals, as in the other columns; below that only the bound is meaningful."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def cell(value: Any) -> str:
    """Any table value as text: a score to 3 decimals, an interval as its bounds, none as —."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(cell, value)) + "]"
    if _missing(value):
        return "—"
    if isinstance(value, float | np.floating):
        return f"{value:.3f}"
    return str(value)


def components(run: Run) -> dict[str, str]:
    """What the run used, each component by name: those every run may have (only the ones it
    built), then what its experiment read besides; redacted, as a URL may carry a password."""
    result, origin = run.result, run.provenance
    dataset, scorer, system = result.dataset, result.scorer, result.system
    used: dict[str, str | None] = {
        "run name": result.run_name, "tags": ", ".join(result.tags) or None,
        "experiment": run.experiment, "started": run.started,
        "seed": None if result.seed is None else str(result.seed),
        "system": system.name if system else None,
        **({f"{system.name}, {key}": str(value) for key, value in system.notes.items()}
           if system else {}),
        "dataset": f"{dataset.name} ({dataset.size}, fingerprint {dataset.fingerprint})"
                   if dataset else None,
        "embedder": result.embedder, "judge": result.judge,
        "scorer": scorer.name if scorer else None,
        "content-score threshold":
            ": ".join(filter(None, (scorer.threshold_policy,
                                    threshold_state(result.passes, scorer.threshold_rule))))
            if scorer else None}
    with contextlib.suppress(UnknownExperiment):  # the experiment's own sections say why
        used |= outputs_of(run.experiment).inputs(run)
    used |= {"commit": f"{origin.get('git_commit') or 'unknown'}"
                       f"{' (dirty)' if origin.get('git_dirty') else ''}",
             "wall time": None if result.wall_seconds is None
             else f"{result.wall_seconds:.1f} s"}
    return {key: redact(value) for key, value in used.items() if value is not None}


def overview(run: Run) -> Section:
    return Section("What ran", table=pd.DataFrame(
        [{"": key, "value": value} for key, value in components(run).items()]))


def headline(run: Run) -> str:
    """The run's main finding in one sentence, as its experiment states it."""
    with reading(run.result.source):
        try:
            return outputs_of(run.experiment).headline(run)
        except UnknownExperiment:
            return ""


def _experiment_sections(run: Run) -> list[Section]:
    """The sections the run's experiment declared; an experiment not loaded is named instead."""
    try:
        return outputs_of(run.experiment).report(run)
    except UnknownExperiment as err:
        return [Section("Experiment", f"{err}.")]


def figures_section(run: Run) -> Section | None:
    """The headline figures the run's experiment declares, as every view shows them."""
    with reading(run.result.source):
        try:
            scores = outputs_of(run.experiment).scores(run)
        except UnknownExperiment:
            return None
    if not scores:
        return None
    rows = [{"benchmark": s.benchmark, **({"system": s.system} if s.system else {}),
             "figure": s.measure, "value [95% CI]": s.shown, "on": s.population,
             "better": s.better} for s in scores]
    return Section("Headline figures", "The figures `runs`, the leaderboard and Phoenix show "
                   "for this run, as the run printed them.", table=pd.DataFrame(rows))


def run_sections(run: Run) -> list[Section]:
    """The run's components, the per-pass tables as the terminal prints them (every arm's
    passes, labelled by arm), its experiment's sections and its figures. A section its
    metrics.json cannot give is UnreadableResult naming the file."""
    passes = [p for arm in run.result.by_arm().values() for p in arm]
    with reading(run.result.source):
        sections = [overview(run)]
        figures = figures_section(run)
        sections += [figures] if figures is not None else []
        if any(p.gated for p in passes):
            sections += [block.section() for block in pass_blocks(passes)]
        sections += _experiment_sections(run)
    sections += [Section(f"Figure: {path.stem.replace('_', ' ')}", image=path)
                 for path in sorted((run.path / "figures").glob("*.png"))]
    return sections


def run_title(run: Run) -> str:
    """The run's name when it was given one, the experiment and when it started (else the run
    directory's name)."""
    named = f"'{run.result.run_name}': " if run.result.run_name else ""
    return f"{named}memeval {run.experiment} run, " + (run.started or run.name)


def differences(a: Run, b: Run, diff: Mapping[str, tuple[str, str]]) -> Section:
    """What was changed between the runs, so a delta can be read as that change's effect."""
    if not diff:
        return Section("What differs", "No setting: the runs' config.yaml files resolve to the "
                       "same values, so any difference below comes from the code (see each "
                       "run's commit) or from chance in a nondeterministic component.")
    return Section(
        "What differs", "The settings whose resolved values differ between the runs' "
        "config.yaml (nested keys flattened).",
        pd.DataFrame([{"setting": key, f"a ({a.name})": first, f"b ({b.name})": second}
                      for key, (first, second) in diff.items()]))


def comparison_sections(a: Run, b: Run) -> tuple[str, list[Section]]:
    """The comparison's title and sections: what differs, the paired per-pass table, then each
    run's own sections."""
    diff = settings_diff(a, b)
    names = run_labels(a, b, diff)
    title = f"{names[0]} vs {names[1]}"
    each = [Section(f"{s.title} (a: {names[0]})", s.text, s.table, s.image)
            for s in run_sections(a)]
    each += [Section(f"{s.title} (b: {names[1]})", s.text, s.table, s.image)
             for s in run_sections(b)]
    table = compare_runs(a, b, resamples=int(a.setting("bootstrap") or 2000), seed=0)
    if table.empty:
        return title, [differences(a, b, diff), Section(
            "Comparison", "The runs share no evaluated entries (different data): there is "
            "nothing to pair by entry."), *each]
    shown = pd.DataFrame({
        "arm": table["arm"], "pass": table["pass"], "entries (paired)": table["entries"],
        "recall a (%)": table["recall_a"].map(percent),
        "recall b (%)": table["recall_b"].map(percent),
        "recall b − a (pp) [95% CI]": list(map(points, table["recall_delta"],
                                               table["recall_delta_ci95"])),
        "judge calls a (count)": table["judge_calls_a"],
        "judge calls b (count)": table["judge_calls_b"],
        "judge call rate a (%)": table["judge_call_rate_a"].map(percent),
        "judge call rate b (%)": table["judge_call_rate_b"].map(percent),
        "judge call rate b − a (pp) [95% CI]": list(map(points, table["judge_call_rate_delta"],
                                                        table["judge_call_rate_delta_ci95"])),
        "kept only by a (entries)": table["mcnemar_kept_only_by_first"],
        "kept only by b (entries)": table["mcnemar_kept_only_by_second"],
        "McNemar p": table["mcnemar_p_value"].map(p_value)})
    note = (f"a = {names[0]} (run {a.name}), b = {names[1]} (run {b.name}). Recall is the "
            f"percentage of human-labelled substantive entries kept; judge calls are counted per "
            f"pass, and the judge call rate is their percentage of the pass's entries. Deltas are "
            f"b − a in percentage points (pp), paired by entry, with 95% bootstrap CIs over "
            f"entries. McNemar's exact test asks whether the entries the runs decided "
            f"differently (kept by one, dropped by the other) lean to one side more than chance.")
    return title, [differences(a, b, diff), Section("Comparison", note, shown), *each]


def _markdown_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(map(cell, row)) + " |" for row in frame.itertuples(False)]
    return "\n".join([header, rule, *rows])


def render_markdown(title: str, sections: list[Section], out: Path, lead: str = "") -> str:
    """`lead`: the sentence the page opens with, before its first section."""
    parts = [f"# {title}", *filter(None, [lead])]
    for section in sections:
        parts.append(f"## {section.title}")
        if section.text:
            parts.append(section.text.replace("\n", "  \n"))  # each printed line kept a line
        if section.table is not None:
            parts.append(_markdown_table(section.table))
        if section.image is not None:
            link = os.path.relpath(Path(section.image).resolve(), out.resolve())
            parts.append(f"![{section.title}]({link})")
    return "\n\n".join(parts) + "\n"


def _paragraph(text: str) -> str:
    """Text as one HTML paragraph, each printed line kept a line."""
    return "<p>" + "<br>".join(map(html.escape, text.splitlines())) + "</p>"


def render_html(title: str, sections: list[Section], lead: str = "") -> str:
    """`lead`: the sentence the page opens with, before its first section."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             *([f"<p><strong>{html.escape(lead)}</strong></p>"] if lead else [])]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.text:
            parts.append(_paragraph(section.text))
        if section.table is not None:
            parts.append(section.table.map(cell).to_html(index=False, border=0,
                                                         escape=not section.html_cells))
        if section.image is not None:
            data = base64.b64encode(Path(section.image).read_bytes()).decode()
            parts.append(f"<img alt='{html.escape(section.title)}' "
                         f"src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _local_figure(section: Section, target: Path) -> Section:
    """A figure from outside the report's folder is copied next to it, so the Markdown's links
    keep working when the folder is moved or committed."""
    if section.image is None or section.image.resolve().is_relative_to(target.resolve()):
        return section
    copy = target / "figures" / f"{section.image.parents[1].name}-{section.image.name}"
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(section.image, copy)
    return Section(section.title, section.text, section.table, copy)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "run"


def comparison_stem(a: Run, b: Run) -> str:
    """`compare_<a>_vs_<b>` from the run directories' names, with their parents' when the names
    alone are equal (Hydra names a run by its time of day, under a folder per date)."""
    names = [a.name, b.name]
    if names[0] == names[1]:
        names = [f"{run.path.resolve().parent.name}-{run.name}" for run in (a, b)]
    return f"compare_{_slug(names[0])}_vs_{_slug(names[1])}"


def write_report(run_dirs: list[Path], out: Path | None = None,
                 force: bool = False) -> tuple[Path, Path]:
    """The report of one run (`report.html`, `report.md`) or the comparison of two
    (`compare_<a>_vs_<b>.html`, `.md`), written into `out` (default: the first run directory)."""
    runs = [Run.load(path) for path in run_dirs]
    if len(runs) == 2:
        check_comparable(runs[0], runs[1], force)
        compared, sections = comparison_sections(runs[0], runs[1])
        title, stem, lead = f"memeval: {compared}", comparison_stem(runs[0], runs[1]), ""
    else:
        title, stem, lead = run_title(runs[0]), "report", headline(runs[0])
        sections = run_sections(runs[0])
    target = out or runs[0].path
    target.mkdir(parents=True, exist_ok=True)
    sections = [_local_figure(section, target) for section in sections]
    html_path, md_path = target / f"{stem}.html", target / f"{stem}.md"
    html_path.write_text(render_html(title, sections, lead), encoding="utf-8")
    md_path.write_text(render_markdown(title, sections, target, lead), encoding="utf-8")
    return html_path, md_path
