"""`python -m memeval redaction-scan [--show]`: per bundled corpus, the distinct texts scanned,
how many redaction changed and the classes that fired (memeval/data/redaction_scan.py)."""

from __future__ import annotations

import argparse
from collections import Counter


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval redaction-scan",
                                     description="Where redaction fires on the bundled "
                                                 "corpora, so every hit can be checked by "
                                                 "hand.")
    parser.add_argument("--show", action="store_true", help="print every hit in context")
    args = parser.parse_args(argv)
    from memeval.data.redaction_scan import CORPORA, scan

    for corpus, load in CORPORA.items():
        scanned, hits = scan(load())
        classes = Counter(cls for hit in hits for cls in hit.counts)
        listed = ", ".join(f"{cls} {n}" for cls, n in sorted(classes.items()))
        print(f"{corpus}: {scanned} texts, redaction fired in {len(hits)}"
              + (f" ({listed})" if listed else ""))
        for hit in hits if args.show else []:
            print(f"  {hit.entry_id} {hit.field} {hit.counts}")
            for context in hit.contexts():
                print(f"    …{context!r}…")
    return 0

