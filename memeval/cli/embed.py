"""`python -m memeval embed [--ray [--address A]] [KEY=VALUE …]`: warm a run's embedding cache.

Takes the overrides of the run it prepares (`+experiment=…`, `dataset=…`, `embedder=…`, gate
settings) and embeds every text that run's replay would, that the cache does not hold yet: in
this process, or across a Ray cluster (`--ray`, Ray Data, one model per worker). The vectors are
written as content-addressed Parquet shards (`--shards`, default CACHE_DIR/shards) and imported
into this machine's cache; another node imports the same shards with `python -m memeval cache
import`. The replay afterwards reads vectors only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

# The work is imported when it runs: `embed --help` loads nothing heavy.


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memeval embed", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ray", action="store_true",
                        help="embed on a Ray cluster (Ray Data, one model per worker)")
    parser.add_argument("--address", default=os.environ.get("MEMEVAL_RAY_ADDRESS", "auto"),
                        help="the Ray cluster: auto (one started with `ray start` on this "
                             "machine), HOST:PORT or ray://HOST:10001 (default: "
                             "$MEMEVAL_RAY_ADDRESS, else auto)")
    parser.add_argument("--workers", type=int, default=2,
                        help="models embedding at once on Ray, one per actor (default 2)")
    parser.add_argument("--shards", type=Path, default=None,
                        help="where the shards go (default: CACHE_DIR/shards)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="the run's overrides, e.g. +experiment=three_pass_mixed")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    from memeval.backends.embedders.warm_up import Engine
    from memeval.cache_warm_up import summary, warm_up
    from memeval.config import check_overrides, compose, quote_values
    from memeval.systems.reference.content_encoder import SHARED
    from memeval.user_errors import report_user_error, user_error_types

    engine = Engine("ray", args.address, args.workers) if args.ray else Engine("local")
    overrides = quote_values(list(args.overrides))
    try:
        check_overrides(overrides)
        cfg = compose(overrides)
        shards = args.shards or Path(str(cfg.cache_dir)).expanduser() / "shards"
        result = warm_up(cfg, engine, shards, progress=bool(cfg.progress))
    except user_error_types() as err:
        report_user_error(err)
        return 2
    print(summary(result, engine, shards))
    encoder = cfg.content_encoder.name
    if encoder != SHARED:
        print(f"content_encoder={encoder}: the content stage embeds with its own model, whose "
              f"vectors only a run makes; this warmed the run's embedder")
    return 1 if result.imported.damaged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
