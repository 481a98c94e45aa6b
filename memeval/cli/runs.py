"""`python -m memeval runs [FOLDER]`: every run under FOLDER (at any depth, sweeps included) as
one row: its directory, when it finished, its experiment, the settings that differ between the
runs listed (those every run shares are named once, above the table) and the experiment's
headline figures. A run whose files cannot be read is listed with a note saying which and why.

--html PATH writes the same table as one self-contained page: click a header to sort by it; the
differing settings fold into one cell per run. --json prints the rows as JSON.

Exit status: 0 with the table; 1 when FOLDER holds no run (or none of --experiment's).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from memeval.paths import CONF_DIR
from memeval.user_errors import complain


def default_folder() -> Path:
    """Where `run` writes its runs: the first part of hydra.run.dir in memeval's config."""
    config = yaml.safe_load((CONF_DIR / "config.yaml").read_text(encoding="utf-8"))
    return Path(Path(config["hydra"]["run"]["dir"]).parts[0])


def main(argv: list[str]) -> int:
    folder = default_folder()
    parser = argparse.ArgumentParser(prog="python -m memeval runs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=folder, metavar="FOLDER",
                        help=f"where to look for runs (default: {folder}/, where runs are written)")
    parser.add_argument("--experiment", metavar="NAME", help="list only this experiment's runs")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="also write the table as a self-contained HTML page")
    parser.add_argument("--json", action="store_true",
                        help="print the rows as JSON instead of the table: each run's system, "
                             "embedder, what it read, settings, notes and headline figures "
                             "(value, 95%% CI, as shown, unit, population)")
    options = parser.parse_args(argv)
    if not options.folder.is_dir():
        complain(f"memeval runs: no runs: {options.folder} is not a directory (runs are written to "
                 f"{folder}/ by `python -m memeval run +experiment=...`)")
        return 1
    from memeval.components import load_components
    from memeval.reporting.runs_table import collect
    from memeval.reporting.runs_text import render

    load_components()  # each run's experiment declares its headline figures
    table = collect(options.folder, options.experiment)
    if not table.rows:
        kind = f" of experiment '{options.experiment}'" if options.experiment else ""
        complain(f"memeval runs: no runs{kind} under {options.folder} (a run is a directory "
                 f"holding metrics.json)")
        return 1
    if options.json:
        import json

        from memeval.reporting.runs_table import as_json

        print(json.dumps(as_json(table), indent=1))
    else:
        print(render(table))
    if options.html:
        from memeval.reporting.runs_html import page
        from memeval.utils.atomic import write_text_atomic

        options.html.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(options.html, page(table, options.html))
        print(f"wrote {options.html}")
    return 0
