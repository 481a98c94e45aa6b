"""`python -m memeval cache`: what the shared caches hold, clearing them, and sharing them.

Embeddings are keyed by embedder identity and text, judge responses by model and prompt, so a
stale entry is never read: clearing reclaims disk or makes the next run cold (e.g. to time one).
The directory is the runs' own `cache_dir` (memeval/conf/config.yaml; $MEMEVAL_CACHE_DIR).

`export DIR` writes each cache as content-addressed Parquet shards in DIR/<name>/ and `import DIR`
adds the rows this cache lacks, so cluster nodes and CI jobs share warm caches by copying files
(the SQLite files themselves must stay node-local). Import skips a damaged shard whole, refuses
values a run could not use, and keeps every value already cached. Exit status: 0, 1 if a shard
was damaged (the others are imported), 2 for a usage error or no shards for a named cache."""

from __future__ import annotations

import argparse
import importlib
import shutil
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from memeval.paths import CONF_DIR
from memeval.registry import ConfigError
from memeval.user_errors import complain
from memeval.utils.fit_cache import FITS_DIR, fits_dir
from memeval.utils.kvcache import SqliteKV


@dataclass(frozen=True)
class Cache:
    """A cache, named by the backend module that owns it (its CACHE_FILE and CACHE_TABLE) and
    that module's check of an imported value. The module loads on first use, so `cache --help`
    loads no backend."""

    module: str
    check: str  # the module's function: given the cache importing, per value, could a run use it?

    def _owner(self) -> Any:
        return importlib.import_module(self.module)

    @property
    def file(self) -> str:  # under the cache directory
        return str(self._owner().CACHE_FILE)

    @property
    def table(self) -> str:
        return str(self._owner().CACHE_TABLE)

    def valid(self, store: SqliteKV) -> Callable[[list[bytes]], list[bool]]:
        check = getattr(self._owner(), self.check)
        return cast(Callable[[list[bytes]], list[bool]], check(store))


CACHES = {"embeddings": Cache("memeval.backends.embedders.cache", "vectors_for"),
          "judge": Cache("memeval.backends.judges.http_judge", "records_for")}
# SQLite's journal files and the cache's own damage marker live beside each file.
SIDECARS = ("", "-wal", "-shm", "-journal", ".needs-check")
# Fitted quality models (utils/fit_cache.py): listed and cleared, never shared (each entry is
# signed with its user's own key).
FITS = "fits"


def default_dir() -> Path:
    """`cache_dir` as a run resolves it, read from the one place it is set."""
    config = OmegaConf.load(CONF_DIR / "config.yaml")
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
    for name, cache in CACHES.items():
        path = folder / cache.file
        held = f"{entries(path, cache.table)}, {megabytes(path)}" if path.is_file() else "empty"
        print(f"  {name:<11} {cache.file:<18} {held}")
    fits = fits_dir(folder)
    fitted = [p for p in fits.rglob("*.fit") if p.is_file()]
    held = f"{len(fitted):,} models, {sum(p.stat().st_size for p in fitted) / 1e6:.1f} MB" \
        if fitted else "empty"
    shown = f"{FITS_DIR}/" if fits == folder / FITS_DIR else str(fits)
    print(f"  {FITS:<11} {shown:<18} {held}")
    return 0


def clear(folder: Path, names: list[str]) -> int:
    for name in names:
        if name == FITS:
            fits = fits_dir(folder)
            held = fits.is_dir()
            shutil.rmtree(fits, ignore_errors=True)
            print(f"{name}: {'cleared' if held else 'already empty'} ({fits})")
            continue
        file = CACHES[name].file
        removed = [folder / f"{file}{suffix}" for suffix in SIDECARS
                   if (folder / f"{file}{suffix}").is_file()]
        for path in removed:
            path.unlink()
        print(f"{name}: {'cleared' if removed else 'already empty'} ({folder / file})")
    return 0


def export(folder: Path, shards: Path, names: list[str], named: bool) -> int:
    """A cache with no file is skipped, unless it was named: then nothing is written."""
    from memeval.utils.cache_shards import export_store
    missing = [str(folder / CACHES[name].file) for name in names
               if not (folder / CACHES[name].file).is_file()]
    if named and missing:
        complain(f"memeval cache export: no cache at {', '.join(missing)}: nothing exported")
        return 2
    for name in names:
        cache = CACHES[name]
        if not (folder / cache.file).is_file():
            print(f"{name}: no cache at {folder / cache.file}, nothing exported")
            continue
        store = SqliteKV(folder / cache.file, cache.table)
        try:
            written = export_store(store, shards, name)
            rows = len(store)
        finally:
            store.close()
        print(f"{name}: {rows:,} rows in {len(written)} shard(s) in {shards / name}")
    return 0


def import_(folder: Path, shards: Path, names: list[str], named: bool) -> int:
    """Checks that every named cache has shards before writing anything."""
    from memeval.utils.cache_shards import import_shards
    found = [name for name in names if any((shards / name).glob("*.parquet"))]
    missing = [str(shards / name) for name in names if name not in found]
    if named and missing:
        complain(f"memeval cache import: no shards in {', '.join(missing)}: nothing imported")
        return 2
    if not found:
        complain(f"memeval cache import: no shards in {shards} (expected "
                 f"{' or '.join(f'{name}/*.parquet' for name in names)}): nothing imported")
        return 2
    status = 0
    for name in names:
        if name not in found:
            print(f"{name}: no shards in {shards / name}, nothing imported")
            continue
        cache = CACHES[name]
        store = SqliteKV(folder / cache.file, cache.table)
        try:
            report = import_shards(shards, name, store, cache.valid(store))
        finally:
            store.close()
        print(f"{name}: {report.shards} shard(s), {report.imported:,} rows imported, "
              f"{report.present:,} already cached, {report.invalid:,} refused")
        for line in report.damaged:
            print(f"  skipped damaged shard {line}")
        status = 1 if report.damaged else status
    return status


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m memeval cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None,
                        help="the cache directory (default: cache_dir, as runs resolve it)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="each cache's file, entries and size")
    which = f"which ({', '.join(CACHES)}); none: all of them"
    wipe = commands.add_parser("clear", help="delete caches (the next run recomputes them)")
    wipe.add_argument("names", nargs="*", metavar="NAME",
                      help=f"which ({', '.join([*CACHES, FITS])}); none: all of them")
    out = commands.add_parser("export", help="write caches as Parquet shards in DIR/<name>/")
    into = commands.add_parser("import", help="add the rows of the shards in DIR/<name>/ that "
                                              "the caches lack")
    for sub in (out, into):
        sub.add_argument("shards", type=Path, metavar="DIR", help="the shard folder")
        sub.add_argument("names", nargs="*", metavar="NAME", help=which)
    args = parser.parse_args(argv)
    known = [*CACHES, FITS] if args.command == "clear" else list(CACHES)
    unknown = [name for name in getattr(args, "names", []) if name not in known]
    if unknown:
        parser.error(f"no cache named {', '.join(unknown)} (caches: {', '.join(known)})")
    folder = (args.dir or default_dir()).expanduser()
    if args.command == "info":
        return info(folder)
    if args.command == "clear":
        return clear(folder, args.names or known)
    names = args.names or list(CACHES)
    share = export if args.command == "export" else import_
    from memeval.utils.cache_shards import ShardError  # Parquet: loaded only to share

    try:
        return share(folder, args.shards.expanduser(), names, bool(args.names))
    except BrokenPipeError:  # `python -m memeval` ends quietly when the reader has had enough
        raise
    except (ConfigError, ShardError, OSError) as error:  # an unusable cache or shard folder
        complain(f"memeval cache {args.command}: {error}")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
