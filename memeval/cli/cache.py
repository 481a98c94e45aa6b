"""`python -m memeval cache`: what the shared caches hold, and clearing them.

Embeddings are keyed by embedder identity and text, judge responses by model and prompt, so a
stale entry is never read: clearing reclaims disk or makes the next run cold (e.g. to time one).
The directory is the runs' own `cache_dir` (conf/config.yaml; $MEMEVAL_CACHE_DIR)."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from omegaconf import OmegaConf

import conf
from memeval.backends.embedders.cache import CACHE_FILE as EMBEDDING_FILE
from memeval.backends.embedders.cache import CACHE_TABLE as EMBEDDING_TABLE
from memeval.backends.judges.http_judge import CACHE_FILE as JUDGE_FILE
from memeval.backends.judges.http_judge import CACHE_TABLE as JUDGE_TABLE

CACHES = {"embeddings": (EMBEDDING_FILE, EMBEDDING_TABLE), "judge": (JUDGE_FILE, JUDGE_TABLE)}
# SQLite's journal files and the cache's own damage marker live beside each file.
SIDECARS = ("", "-wal", "-shm", "-journal", ".needs-check")


def default_dir() -> Path:
    """`cache_dir` as a run resolves it, read from the one place it is set."""
    config = OmegaConf.load(Path(conf.__file__).resolve().parent / "config.yaml")
    return Path(str(config.cache_dir)).expanduser()


def entries(path: Path, table: str) -> str:
    """How many entries a cache file holds, read-only (a damaged file is named, not fatal)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            (count,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    except sqlite3.Error as err:
        return f"unreadable ({err})"
    return f"{count:,} entries"


def megabytes(path: Path) -> str:
    size = sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*") if p.is_file())
    return f"{size / 1e6:.1f} MB"


def info(folder: Path) -> int:
    print(f"cache directory: {folder}")
    for name, (file, table) in CACHES.items():
        path = folder / file
        held = f"{entries(path, table)}, {megabytes(path)}" if path.is_file() else "empty"
        print(f"  {name:<11} {file:<18} {held}")
    return 0


def clear(folder: Path, names: list[str]) -> int:
    for name in names:
        file = CACHES[name][0]
        removed = [folder / f"{file}{suffix}" for suffix in SIDECARS
                   if (folder / f"{file}{suffix}").is_file()]
        for path in removed:
            path.unlink()
        print(f"{name}: {'cleared' if removed else 'already empty'} ({folder / file})")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None,
                        help="the cache directory (default: cache_dir, as runs resolve it)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="each cache's file, entries and size")
    wipe = commands.add_parser("clear", help="delete caches (the next run recomputes them)")
    wipe.add_argument("names", nargs="*", metavar="NAME",
                      help=f"which ({', '.join(CACHES)}); none: all of them")
    args = parser.parse_args(argv)
    unknown = [name for name in getattr(args, "names", []) if name not in CACHES]
    if unknown:
        parser.error(f"no cache named {', '.join(unknown)} (caches: {', '.join(CACHES)})")
    folder = (args.dir or default_dir()).expanduser()
    if args.command == "info":
        return info(folder)
    return clear(folder, args.names or list(CACHES))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
