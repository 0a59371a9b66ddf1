"""A binary copy of each user offers CSV (``--catalog FILE``) once it has been read and checked, so that the next
plan over the same file skips parsing and validation.

Why: reading and checking a CSV of 500,000 offers (136 MB) took 3.7-4.4 s of an 8 s plan on this 2-core machine;
the Arrow IPC (Feather v2) copy of the checked table, its text columns dictionary-encoded, is 40 MB and reads back
in ~0.2 s (``benchmarks/bench_recommend.py``). The copy is a cache, never a source: it lives under the price cache
folder (``pricing_cache.paths.cache_dir()/catalogs``), is keyed by the file's absolute path, size, modification
time, inode and inode change time (ns; the change time moves on every write and cannot be set back) and by the code
that reads and fills offers (this module's version, the schema version and the sources of
the reader, the facts and the records), so an edited file or a new gpuopt is read again from the CSV. Writing is
best effort: a folder that cannot be written only costs the next run its parse (nothing is lost, no error). A copy
that cannot be read back, or disagrees with its metadata, is ignored and rewritten.

Layout: ``catalogs/<key>.arrow`` (the offers) and ``catalogs/<key>.json`` (the CSV's sha256, its per-provider
summary, rows, estimated rows), the JSON written last (a copy without it is not used).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES, SCHEMA_VERSION
from pricing_cache.paths import cache_dir

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Bumped when what is stored changes.
CATALOG_CACHE_VERSION = 1
#: Most copies kept (the least recently written go first); a new copy of a file replaces its older ones.
MAX_COPIES = 8
#: The sources whose change makes a cached copy stale (they decide how a CSV row becomes an offer).
_CODE = ("providers/offers_csv.py", "providers/facts.py", "providers/_common.py", "providers/gpu_names.py",
         "gpuopt/kernel/records.py", "pricing_cache/catalog_cache.py")
_ROOT = Path(__file__).resolve().parent.parent


def _code_hash() -> str:
    import pandas
    import pyarrow

    h = hashlib.sha256(f"pandas {pandas.__version__} pyarrow {pyarrow.__version__}".encode())
    for rel in _CODE:
        try:
            h.update((_ROOT / rel).read_bytes())
        except OSError:
            h.update(rel.encode())
    return h.hexdigest()[:16]


def folder() -> Path:
    """Where the copies live: ``<price cache>/catalogs``."""
    return cache_dir() / "catalogs"


def key(path: Path) -> str | None:
    """The cache key of the CSV at ``path`` (None when it cannot be stat'ed). The path as given, made absolute
    (not resolved: a symlink and its target are two files for the offers' default ``source``, ``user:<name>``)."""
    try:
        p = Path(path).absolute()
        st = p.stat()
    except OSError:
        return None
    # the inode and its change time too: a same-size edit whose modification time was put back (cp -p, rsync -t,
    # touch -r; a fresh user kept old prices that way) still moves the change time, which no user can set
    text = (f"{p}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}|{SCHEMA_VERSION}|"
            f"{CATALOG_CACHE_VERSION}|{_code_hash()}")
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(path: Path) -> "tuple[pd.DataFrame, dict[str, Any]] | None":
    """(offers with categorical text columns, metadata) of the CSV at ``path`` from its copy, or None (no copy, a
    stale or unreadable one)."""
    k = key(path)
    if k is None:
        return None
    d = folder()
    meta_path, data_path = d / f"{k}.json", d / f"{k}.arrow"
    if not meta_path.is_file() or not data_path.is_file():
        return None
    try:
        import pyarrow.feather as feather

        meta = json.loads(meta_path.read_text())
        # memory-mapped: 0.04-0.11 s for 500,000 offers where a plain read spent 0.5 s first-touching Arrow's
        # fresh pool (the columns may stay views of the file; pandas copies before any write)
        df = feather.read_table(data_path, memory_map=True).to_pandas()
    except Exception:  # a torn or foreign file: read the CSV again (and rewrite the copy)
        return None
    if tuple(df.columns) != OFFER_COLUMNS or len(df) != meta.get("rows") or meta.get("key") != k:
        return None
    for c, t in OFFER_DTYPES.items():
        if t == "float64" and str(df[c].dtype) != "float64":
            return None
        if t == "string" and str(df[c].dtype) != "category":
            return None
    return df, meta


def store(path: Path, frame: "pd.DataFrame", meta: dict[str, Any], read_key: str | None) -> bool:
    """Write the copy of the CSV at ``path`` (``frame`` with categorical text columns; ``meta`` JSON-able) under
    ``read_key``, the :func:`key` taken before the file was read: nothing is written when the file changed while it
    was read (a save during a long parse left the old prices under the new file's key). Best effort: False when the
    folder cannot be written. The data file first, then the metadata, each atomically."""
    k = key(path)
    if k is None or k != read_key:
        return False
    d = folder()
    try:
        import pyarrow.feather as feather

        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".arrow", dir=d)
        os.close(fd)
        try:
            feather.write_feather(frame.reset_index(drop=True), tmp, compression="uncompressed")
            os.replace(tmp, d / f"{k}.arrow")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
        with os.fdopen(fd, "w") as f:
            json.dump({**meta, "key": k, "rows": int(len(frame)), "source_path": str(Path(path).absolute())}, f)
        os.replace(tmp, d / f"{k}.json")
        _prune(d, k, str(Path(path).absolute()))
    except Exception:  # a read-only or full disk: the next run parses the CSV again
        return False
    return True


#: A data file without its metadata older than this (seconds) is a write that never finished: removed.
ORPHAN_AGE_S = 600.0


def _prune(d: Path, keep: str, source: str) -> None:
    """Remove the older copies of ``source`` (an edited file's), past MAX_COPIES the oldest copies, and data files
    whose metadata never came (a killed run). Other runs' temporary files (``.tmp-*``) are left alone."""
    import time

    for a in d.glob("*.arrow"):
        if a.name.startswith(".") or (d / f"{a.stem}.json").exists():
            continue
        try:
            if time.time() - a.stat().st_mtime > ORPHAN_AGE_S:
                a.unlink()
        except OSError:
            pass
    metas = sorted((m for m in d.glob("*.json") if not m.name.startswith(".")),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    kept = 0
    for m in metas:
        k = m.stem
        if k == keep:
            kept += 1
            continue
        try:
            same = json.loads(m.read_text()).get("source_path") == source
        except (OSError, ValueError):
            same = True  # unreadable: of no use
        if same or kept >= MAX_COPIES - 1:
            for f in (d / f"{k}.arrow", m):
                try:
                    f.unlink()
                except OSError:
                    pass
        else:
            kept += 1
