"""`python -m memeval conformance [--json]`: memeval's MQS and MAI beside memledger's own, each
disagreement listed with its cause (the comparison is memeval/systems/conformance.py)."""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Sequence
from typing import Any

from memeval.paths import data_path
from memeval.reporting.table import WIDTH, wrapped

DESCRIPTION = "Does memeval score memories as memledger does? (MQS and MAI)"


def render(report: dict[str, Any]) -> str:
    lines = []
    for section, rows in report.items():
        lines += [f"{section.upper()}", f"{'comparison':<72} {'agree':>7} {'share':>6}"]
        for row in rows:
            share = row["agree"] / row["total"] if row["total"] else 0.0
            lines.append(f"{row['what']:<72} {row['agree']:>3}/{row['total']:<3} {share:>6.3f}")
        for row in rows:
            if row["disagreements"]:
                lines.append("\n" + wrapped(f"{row['what']}: disagreements (a, b = as named "
                                            f"above)", "  "))
            for d in row["disagreements"]:  # the cause wrapped in its own column
                lead = f"    {d['id']:<9} {d['a']!s:<21} {d['b']!s:<21} "
                lines.append(textwrap.fill(d["why"], WIDTH, initial_indent=lead,
                                           subsequent_indent=" " * len(lead),
                                           break_long_words=False))
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval conformance",
                                     description=DESCRIPTION)
    parser.add_argument("--records", default=None,
                        help="memory records (default: the bundled mqs/memory_records_v1.jsonl)")
    parser.add_argument("--scenarios", default=None, help="MAI scenarios (default: the bundled "
                                                          "mai/attribution_scenarios_v1.jsonl)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    options = parser.parse_args(argv)
    from memeval.systems.conformance import RECORDS, SCENARIOS, conformance  # loads memledger

    report = conformance(options.records or data_path(RECORDS),
                         options.scenarios or data_path(SCENARIOS))
    print(json.dumps(report, indent=1) if options.json else render(report))
    return 0
