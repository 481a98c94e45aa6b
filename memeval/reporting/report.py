"""`python -m memeval report RUN_DIR [OTHER_RUN_DIR]`: a run (or two, compared) as one page.

The HTML is self-contained (figures embedded), so it can be mailed or attached to CI; the Markdown
twin links the run's figure files. Both come from the same sections, read through the results API.
"""

from __future__ import annotations

import argparse
import base64
import html
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memeval.reporting.compare import IncomparableRuns, check_comparable, compare_runs
from memeval.results.result import UnreadableResult
from memeval.results.run import Run

STYLE = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:1em 0;font-size:14px}"
         "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}"
         "th{background:#f3f3f3}img{max-width:100%;margin:1em 0}")


@dataclass
class Section:
    title: str
    text: str = ""
    table: pd.DataFrame | None = None
    image: Path | None = None


def overview(run: Run) -> Section:
    result, origin = run.result, run.provenance
    dataset = result.dataset
    facts = {"experiment": run.experiment, "seed": result.seed,
             "dataset": f"{dataset.name} ({dataset.entries} entries, fingerprint "
                        f"{dataset.fingerprint})" if dataset else "none (no replay)",
             "embedder": result.embedder or "none",
             "judge": result.judge or "none",
             "scorer": result.scorer.threshold_rule if result.scorer else "none",
             "commit": f"{origin.get('git_commit', '?')}"
                       f"{' (dirty)' if origin.get('git_dirty') else ''}",
             "wall time": f"{result.wall_seconds} s"}
    return Section(f"Run {run.name}", table=pd.DataFrame(
        [{"": key, "value": str(value)} for key, value in facts.items()]))


def run_sections(run: Run) -> list[Section]:
    sections = [overview(run)]
    passes = run.passes()
    if not passes.empty and passes["substantive_recall"].notna().any():
        sections.append(Section("Passes", "Recall counts human-labelled substantive entries "
                                "kept (stored or deduplicated).", passes.drop(columns="run")))
    mqs = run.result.mqs
    if mqs and mqs.configured:
        fitted = mqs.fitted_out_of_fold.scores() if mqs.fitted_out_of_fold else {}
        rows = [{"metric": m, "configured": value, "fitted out of fold": fitted.get(m, "—")}
                for m, value in mqs.configured.scores().items()]
        sections.append(Section("MQS calibration", table=pd.DataFrame(rows)))
    if mqs and mqs.trust_grade:
        grade = mqs.trust_grade
        sections.append(Section(
            "MQS against the numeric trust grade", f"{grade.n} graded records.",
            pd.DataFrame([{"metric": m, "value": value, "95% CI": list(ci)} for m, value, ci in
                          (("spearman", grade.spearman, grade.spearman_ci95),
                           ("kendall", grade.kendall, grade.kendall_ci95))])))
    sections += [Section(f"Figure: {path.stem.replace('_', ' ')}", image=path)
                 for path in sorted((run.path / "figures").glob("*.png"))]
    return sections


def _ci(bounds: list[float]) -> str:
    return f"[{bounds[0]:+.3f}, {bounds[1]:+.3f}]"


def comparison_sections(a: Run, b: Run) -> list[Section]:
    table = compare_runs(a, b, resamples=int(a.setting("bootstrap") or 2000), seed=0)
    each = [*[Section(s.title + " (a)", s.text, s.table, s.image) for s in run_sections(a)],
            *[Section(s.title + " (b)", s.text, s.table, s.image) for s in run_sections(b)]]
    if table.empty:
        return [Section(f"Comparison: {a.name} vs {b.name}", "The runs share no evaluated "
                        "entries (different data): there is nothing to pair by entry."), *each]
    shown = pd.DataFrame({
        "arm": table["arm"], "pass": table["pass"],
        "recall a": table["recall_a"].round(3), "recall b": table["recall_b"].round(3),
        "recall b − a [95% CI]": [f"{d:+.3f} {_ci(c)}" for d, c in
                                  zip(table["recall_delta"], table["recall_delta_ci95"],
                                      strict=True)],
        "judge calls a": table["judge_call_rate_a"].round(3),
        "judge calls b": table["judge_call_rate_b"].round(3),
        "judge calls b − a [95% CI]": [f"{d:+.3f} {_ci(c)}" for d, c in
                                       zip(table["judge_call_rate_delta"],
                                           table["judge_call_rate_delta_ci95"], strict=True)],
        "kept only by a": table["mcnemar_kept_only_by_first"],
        "kept only by b": table["mcnemar_kept_only_by_second"],
        "McNemar p": table["mcnemar_p_value"].map(lambda p: f"{p:.4g}")})
    note = (f"a = {a.name}, b = {b.name}. Deltas are b − a, paired by entry, with 95% bootstrap "
            f"CIs over entries; recall over human-labelled substantive entries, judge calls over "
            f"all. McNemar's exact test asks whether the entries the runs decided differently "
            f"(kept by one, dropped by the other) lean to one side more than chance.")
    return [Section(f"Comparison: {a.name} vs {b.name}", note, shown), *each]


def _markdown_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join([header, rule, *rows])


def render_markdown(title: str, sections: list[Section], out: Path) -> str:
    parts = [f"# {title}"]
    for section in sections:
        parts.append(f"## {section.title}")
        if section.text:
            parts.append(section.text)
        if section.table is not None:
            parts.append(_markdown_table(section.table))
        if section.image is not None:
            link = os.path.relpath(Path(section.image).resolve(), out.resolve())
            parts.append(f"![{section.title}]({link})")
    return "\n\n".join(parts) + "\n"


def render_html(title: str, sections: list[Section]) -> str:
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.text:
            parts.append(f"<p>{html.escape(section.text)}</p>")
        if section.table is not None:
            parts.append(section.table.to_html(index=False, border=0, na_rep="—"))
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


def write_report(run_dirs: list[Path], out: Path | None = None,
                 force: bool = False) -> tuple[Path, Path]:
    runs = [Run.load(path) for path in run_dirs]
    if len(runs) == 2:
        check_comparable(runs[0], runs[1], force)
        title, stem = f"memeval: {runs[0].name} vs {runs[1].name}", f"compare_{runs[1].name}"
        sections = comparison_sections(runs[0], runs[1])
    else:
        title, stem, sections = f"memeval run {runs[0].name}", "report", run_sections(runs[0])
    target = out or runs[0].path
    target.mkdir(parents=True, exist_ok=True)
    sections = [_local_figure(section, target) for section in sections]
    html_path, md_path = target / f"{stem}.html", target / f"{stem}.md"
    html_path.write_text(render_html(title, sections), encoding="utf-8")
    md_path.write_text(render_markdown(title, sections, target), encoding="utf-8")
    return html_path, md_path


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval report", description=__doc__)
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                        help="one run, or two to compare (the second against the first)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write (default: the first run directory)")
    parser.add_argument("--force", action="store_true",
                        help="compare runs on different dataset fingerprints anyway")
    options = parser.parse_args(args)
    if len(options.run_dirs) > 2:
        parser.error("give one run directory, or two to compare")
    for path in options.run_dirs:
        if not (path / "metrics.json").is_file():
            print(f"memeval report: {path} is not a run directory (no metrics.json)",
                  file=sys.stderr)
            return 2
    try:
        html_path, md_path = write_report(options.run_dirs, options.out, options.force)
    except (IncomparableRuns, UnreadableResult) as err:
        print(f"memeval report: {err}", file=sys.stderr)
        return 2
    print(f"wrote {html_path} and {md_path}")
    return 0
