"""The user price cache: dated per-provider snapshots written by `gpuopt prices refresh`, with history.

Layout (``cache_dir()``, the platformdirs user cache folder, or ``$GPUOPT_CACHE_DIR``)::

    snapshots/<provider>/<stamp>.csv    offers (gpuopt.kernel.records.OFFER_COLUMNS), stamp = UTC YYYYmmddTHHMMSSffffffZ
    snapshots/<provider>/<stamp>.json   its metadata: schema_version, provider, created_at, as_of, rows,
                                        regions (done / failed / skipped / kept_previous), sha256 of the .csv,
                                        skipped (rows refused, counted by reason), skipped_total, skipped_file
    snapshots/<provider>/<stamp>.skipped.csv  the rows refused by the importer or the validation
                                        (providers.validate), one per line: SKIPPED_COLUMNS, like the shipped
                                        pricing_cache/data/skipped.csv (written when there are any)
    .lock                               the write lock (filelock)

Rules (DESIGN.md "pricing_cache"):
- A write is atomic: each file is written to a temporary name in the same folder, flushed and fsync'ed, then
  renamed over its final name (os.replace), and the folder is fsync'ed. The .json is renamed last: a snapshot
  without its .json, or whose sha256 does not match, is not a snapshot (an interrupted write leaves the previous
  one as the newest good one). "Newest" orders by the date the prices were valid (``as_of``), then by write time,
  so importing an old file never replaces newer prices as the current ones.
- Writers hold a file lock, so two refreshes cannot interleave; readers need no lock.
- Reading verifies the schema version, the sha256 and ``as_of`` (a real date, not after today + AS_OF_SKEW_DAYS:
  a snapshot dated in the future would otherwise stay "newest" forever and hide every later refresh or import);
  reading the offers also checks the columns, types and values (:func:`offer_values_error`: no negative or
  non-finite price, count or size, no row without a price), so a hand-edited snapshot whose checksum was
  recomputed is not served either. A corrupted or hand-edited snapshot is reported (``prices status``, and a
  warning on every command that loads prices) and skipped, and the previous good one of that provider is used.
- History: snapshots older than the retention are deleted after a successful write, but the newest snapshot of
  each provider is always kept. ``offers_at(date)`` gives the prices in effect on a date (the newest snapshot
  created on or before it), so a past month is priced with that month's prices.

Settings (environment, documented in the README): GPUOPT_CACHE_DIR, GPUOPT_MAX_PRICE_AGE_DAYS (warning limit,
default 7), GPUOPT_RETENTION_DAYS (history kept, default 400 — a year of monthly reviews plus a month).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError, SnapshotError
from gpuopt.kernel.records import OFFER_COLUMNS, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION
from pricing_cache.offers_file import read_offers_file
from pricing_cache.paths import cache_dir

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

DEFAULT_MAX_AGE_DAYS = 7.0
DEFAULT_RETENTION_DAYS = 400.0
LOCK_TIMEOUT_S = 600.0
#: Columns of a snapshot's skipped list (and of the shipped pricing_cache/data/skipped.csv).
SKIPPED_COLUMNS: tuple[str, ...] = ("provider", "source", "line", "instance_type", "region", "reason")


def _float_env(name: str, default: float, most: float = 36_500.0) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = float(raw)
    except ValueError:
        raise InputError(name, f"must be a number of days, got {raw!r}") from None
    if not (0 < v <= most):
        raise InputError(name, f"must be a number of days between 0 and {most:g}, got {raw!r}")
    return v


def check_settings() -> None:
    """Validate every cache setting (before a refresh fetches anything). Raises InputError naming the setting."""
    max_age_days()
    retention_days()


def check_writable() -> Path:
    """The cache folder, created if needed, after checking it can be written (before a refresh fetches anything).

    Raises SnapshotError with a one-line fix when it is a file, or not writable."""
    d = cache_dir()
    try:
        (d / "snapshots").mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=d / "snapshots")  # unique per process and thread
        os.close(fd)
        os.unlink(probe)
        lockfile = d / ".lock"
        with open(lockfile, "a"):
            pass
    except OSError as e:
        raise SnapshotError(f"cannot write the price cache at {d}: {e.strerror or e}; set GPUOPT_CACHE_DIR to a "
                            "writable folder") from None
    return d


def max_age_days() -> float:
    """Prices older than this many days get a warning (GPUOPT_MAX_PRICE_AGE_DAYS, default 7)."""
    return _float_env("GPUOPT_MAX_PRICE_AGE_DAYS", DEFAULT_MAX_AGE_DAYS)


def retention_days() -> float:
    """Snapshots older than this many days are deleted after a refresh (GPUOPT_RETENTION_DAYS, default 400)."""
    return _float_env("GPUOPT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


@dataclass(frozen=True)
class CachedSnapshot:
    """One snapshot in the cache (valid or not).

    Attributes: provider; created_at (UTC ISO time of the refresh); as_of (date the prices were valid);
        csv_path, meta_path; meta (the .json content, {} when unreadable); error (why it is not usable, or None).
    """

    provider: str
    created_at: str
    as_of: str
    csv_path: Path
    meta_path: Path
    meta: dict
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def cannot_write(path: Path, exc: OSError, what: str = "the price snapshot") -> SnapshotError:
    """The one-line error for a failed write of ``what`` at ``path`` (issue 33: a disk full, a folder that is a
    file): "cannot write the price snapshot to PATH: no space left on device (ENOSPC); the previous snapshot is
    kept". Nothing is renamed over a previous file before its write succeeded, so the previous one is kept."""
    import errno

    code = errno.errorcode.get(exc.errno or 0)
    reason = (exc.strerror or str(exc)).lower() + (f" ({code})" if code else "")
    for folder in (path.parent, *path.parent.parents):
        if folder.exists():
            if not folder.is_dir():
                reason = f"{folder} is a file, not a folder (move it away)"
            break
    return SnapshotError(f"cannot write {what} to {path}: {reason}; the previous {what.split()[-1]} is kept")


def atomic_write_bytes(path: Path, data: bytes, what: str = "the price snapshot") -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename, fsync the folder.

    Raises SnapshotError (:func:`cannot_write`) when it cannot be written (no space left, a folder on the way is a
    file, no permission); ``path`` is then as it was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise cannot_write(path, e, what) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise cannot_write(path, e, what) from None
        raise
    _fsync_dir(path.parent)


def lock(timeout_s: float = LOCK_TIMEOUT_S):
    """The cache's write lock (a filelock.FileLock on <cache>/.lock); use as a context manager.

    Raises filelock.Timeout after ``timeout_s`` seconds if another refresh holds it."""
    from filelock import FileLock

    d = check_writable()
    return FileLock(str(d / ".lock"), timeout=timeout_s)


def offers_csv_bytes(df: "pd.DataFrame") -> bytes:
    """The offers as CSV bytes, formatted like the shipped snapshot (stable floats, sorted rows)."""
    key = ["provider", "region", "zone", "instance_type", "pricing", "payment", "offering_class"]
    df = df[list(OFFER_COLUMNS)].sort_values(key, kind="mergesort").reset_index(drop=True)
    return df.to_csv(index=False, float_format="%.10g", na_rep="", lineterminator="\n").encode("utf-8")


def skipped_csv_bytes(skipped: list[dict[str, Any]]) -> bytes:
    """A skipped list as CSV bytes (SKIPPED_COLUMNS, sorted like the shipped skipped.csv)."""
    import csv
    import io

    rows = sorted(({k: ("" if r.get(k) is None else r.get(k)) for k in SKIPPED_COLUMNS} for r in skipped),
                  key=lambda r: tuple(str(r[k]) for k in SKIPPED_COLUMNS))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(SKIPPED_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def skipped_counts(skipped: list[dict[str, Any]]) -> dict[str, int]:
    """Rows of a skipped list counted by reason code (the part of ``reason`` before the first ':'), sorted."""
    out: dict[str, int] = {}
    for r in skipped:
        code = str(r.get("reason", "")).split(":", 1)[0].strip()
        out[code] = out.get(code, 0) + 1
    return dict(sorted(out.items()))


def write_snapshot(provider: str, offers: "pd.DataFrame", *, regions: dict[str, Any], as_of: str | None = None,
                   created_at: dt.datetime | None = None, extra: dict[str, Any] | None = None,
                   skipped: list[dict[str, Any]] | None = None) -> CachedSnapshot:
    """Write one provider's snapshot atomically (caller holds :func:`lock`) and apply the retention.

    Args:
        provider: provider name; every row of ``offers`` must carry it.
        offers: normalized offers (OFFER_COLUMNS).
        regions: {"done": [...], "failed": {region: error}, "skipped": {region: note}, "kept_previous": [...]}.
        as_of: date the prices were valid (default: the UTC date of created_at).
        extra: more metadata keys (source, counts of the merge).
        skipped: the rows refused while making this snapshot (dicts with SKIPPED_COLUMNS); when given, the
            metadata gets ``skipped`` ({reason code: rows}) and ``skipped_total`` — the keys the shipped
            snapshot.json has per provider — and, when there are any, ``<stamp>.skipped.csv`` is written
            (``skipped_file``, ``skipped_sha256``; read back with :func:`read_skipped`).
    Returns: the written CachedSnapshot. Raises SnapshotError if rows of another provider are present.
    """
    other = set(offers["provider"].astype(str)) - {provider}
    if other:
        raise SnapshotError(f"snapshot of {provider} holds rows of {sorted(other)}")
    t = created_at or _now()
    stamp = _stamp(t)
    d = cache_dir() / "snapshots" / provider
    data = offers_csv_bytes(offers)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "provider": provider,
        "created_at": t.astimezone(dt.timezone.utc).isoformat(),
        "as_of": as_of or t.astimezone(dt.timezone.utc).date().isoformat(),
        "rows": int(len(offers)),
        "rows_by_pricing": {str(k): int(v) for k, v in sorted(offers["pricing"].value_counts().items())},
        "regions": regions,
        "sha256": hashlib.sha256(data).hexdigest(),
        **(extra or {}),
    }
    csv_path, meta_path = d / f"{stamp}.csv", d / f"{stamp}.json"
    try:
        _write_files(meta, skipped, data, csv_path, meta_path)
    except SnapshotError:  # no half snapshot is left: a .csv without its .json is never read, but takes room
        for p in (csv_path, d / f"{stamp}.skipped.csv"):
            try:
                p.unlink(missing_ok=True)
            except OSError:
                pass
        raise
    apply_retention(provider)
    return CachedSnapshot(provider, meta["created_at"], meta["as_of"], csv_path, meta_path, meta)


def _write_files(meta: dict[str, Any], skipped: "list[dict[str, Any]] | None", data: bytes, csv_path: Path,
                 meta_path: Path) -> None:
    """The files of one snapshot: its skipped list, its offers, then its metadata (last: it makes it valid)."""
    d = csv_path.parent
    stamp = csv_path.stem
    if skipped is not None:
        meta["skipped"] = skipped_counts(skipped)
        meta["skipped_total"] = int(len(skipped))
        if skipped:
            sk = skipped_csv_bytes(skipped)
            sk_path = d / f"{stamp}.skipped.csv"
            atomic_write_bytes(sk_path, sk)
            meta["skipped_file"] = sk_path.name
            meta["skipped_sha256"] = hashlib.sha256(sk).hexdigest()
    atomic_write_bytes(csv_path, data)
    atomic_write_bytes(meta_path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"))


#: Clock skew allowed between the machine that wrote a snapshot and this one: an ``as_of`` up to this many days
#: after today (UTC) is accepted; a later one is refused (it would stay "newest" and hide every later refresh).
AS_OF_SKEW_DAYS = 1
#: Numeric offer columns that must be finite and >= 0 where given (an empty cell is "unknown", never 0).
NON_NEGATIVE_COLUMNS: tuple[str, ...] = ("gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "upfront_usd",
                                         "recurring_usd_per_hour", "usd_per_hour", "term_hours")
#: Columns every row must fill (a row without them cannot be priced or planned).
REQUIRED_TEXT_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "pricing", "currency")


def _as_of_error(value: Any, today: dt.date | None = None) -> str | None:
    """Why a snapshot's metadata ``as_of`` is unusable (None when it is a real date not after today + skew).

    Accepts YYYY-MM-DD, or an ISO date-time whose first 10 characters are one."""
    text = str(value if value is not None else "")
    try:
        day = dt.date.fromisoformat(text[:10])
        if len(text) > 10:
            dt.datetime.fromisoformat(text)
    except ValueError:
        return f"as_of {text!r} is not a date (YYYY-MM-DD)"
    today = today or _now().date()
    if day > today + dt.timedelta(days=AS_OF_SKEW_DAYS):
        return (f"as_of {day.isoformat()} is in the future (today is {today.isoformat()} UTC, "
                f"{AS_OF_SKEW_DAYS} day of clock skew allowed)")
    return None


def offer_values_error(df: "pd.DataFrame", provider: str | None = None) -> str | None:
    """Why the offers of a snapshot cannot be served (None when they can): the value checks beyond the checksum
    (issue 13: a hand-edited snapshot with a recomputed checksum is otherwise served as is).

    Checks: every NON_NEGATIVE_COLUMNS value finite and >= 0 where given (empty = unknown is allowed), ``usd_per_hour``
    given on every row, REQUIRED_TEXT_COLUMNS filled, ``provider`` equal to ``provider`` when given. The message
    names the column, the first bad CSV line (header = line 1) and the count."""
    import numpy as np

    def first(mask: "np.ndarray", what: str) -> str:
        idx = np.flatnonzero(mask)
        return f"{what} on {len(idx)} row(s), first at line {int(idx[0]) + 2}"

    for c in NON_NEGATIVE_COLUMNS:
        v = df[c].to_numpy(dtype=float, na_value=np.nan)
        bad = np.isinf(v) | (v < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return first(bad, f"{c} negative or not finite ({v[i]:g})")
    miss = np.isnan(df["usd_per_hour"].to_numpy(dtype=float, na_value=np.nan))
    if miss.any():
        return first(miss, "usd_per_hour empty")
    for c in REQUIRED_TEXT_COLUMNS:
        col = df[c].astype(object)
        empty = (col.isna() | (col.astype(str).str.strip() == "")).to_numpy()
        if empty.any():
            return first(empty, f"{c} empty")
    if provider is not None:
        other = (df["provider"].astype(str) != provider).to_numpy()
        if other.any():
            return first(other, f"provider not {provider!r}")
    return None


def _read_meta(meta_path: Path) -> CachedSnapshot:
    provider = meta_path.parent.name
    csv_path = meta_path.with_suffix(".csv")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return CachedSnapshot(provider, "", "", csv_path, meta_path, {}, f"unreadable metadata: {e}")
    if not isinstance(meta, dict):
        return CachedSnapshot(provider, "", "", csv_path, meta_path, {}, "unreadable metadata: not a JSON object")
    created, as_of = str(meta.get("created_at", "")), str(meta.get("as_of", ""))
    err = None
    if meta.get("schema_version") not in READABLE_SCHEMA_VERSIONS:  # version 1: fabric/zone_kind filled on reading
        err = (f"schema version {meta.get('schema_version')}, this gpuopt reads "
               f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}")
    elif meta.get("provider") != provider:
        err = f"metadata says provider {meta.get('provider')!r}"
    elif not csv_path.is_file():
        err = "offers file missing"
    else:
        actual = hashlib.sha256(csv_path.read_bytes()).hexdigest()
        if actual != meta.get("sha256"):
            err = "checksum mismatch (the file was edited or truncated)"
    if err is None:
        err = _as_of_error(meta.get("as_of"))
    return CachedSnapshot(provider, created, as_of, csv_path, meta_path, meta, err)


def read_skipped(snap: CachedSnapshot) -> list[dict[str, str]]:
    """The skipped list of a snapshot (dicts with SKIPPED_COLUMNS, as text), [] when it has none.

    Raises SnapshotError when the metadata names a skipped file that is missing or fails its sha256."""
    import csv
    import io

    name = snap.meta.get("skipped_file")
    if not name:
        return []
    path = snap.meta_path.parent / str(name)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SnapshotError(f"skipped list {path} of cached snapshot {snap.meta_path.name} unreadable: "
                            f"{e.strerror or e}") from None
    if hashlib.sha256(data).hexdigest() != snap.meta.get("skipped_sha256"):
        raise SnapshotError(f"skipped list {path} fails its checksum (edited or truncated)")
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


def list_snapshots(provider: str | None = None) -> list[CachedSnapshot]:
    """Every snapshot in the cache (valid or not), oldest first, for one provider or all."""
    root = cache_dir() / "snapshots"
    if not root.is_dir():
        return []
    dirs = [root / provider] if provider else sorted(p for p in root.iterdir() if p.is_dir())
    out = []
    for d in dirs:
        if d.is_dir():
            out.extend(_read_meta(m) for m in sorted(d.glob("*.json")))
    return sorted(out, key=lambda s: (s.provider, s.as_of, s.meta_path.name))


def read_snapshot(snap: CachedSnapshot) -> "pd.DataFrame":
    """The offers of a valid snapshot. Raises SnapshotError for an invalid one or an unparseable file."""
    if not snap.ok:
        raise SnapshotError(f"cached {snap.provider} snapshot {snap.meta_path.name} is not usable: {snap.error}")
    try:
        df = read_offers_file(snap.csv_path)
    except SnapshotError as e:
        raise SnapshotError(f"cached snapshot {snap.csv_path.name} cannot be read: {str(e).split('; rebuild')[0]}") from None
    if len(df) != snap.meta.get("rows"):
        raise SnapshotError(f"cached snapshot {snap.csv_path} has {len(df)} rows, its metadata says {snap.meta.get('rows')}")
    bad = offer_values_error(df, snap.provider)
    if bad is not None:
        raise SnapshotError(f"cached {snap.provider} snapshot {snap.csv_path.name} is not usable: {bad}")
    return df


def verified(snap: CachedSnapshot) -> CachedSnapshot:
    """``snap`` after reading its offers (:func:`read_snapshot`: columns, types, row count, values): the same
    snapshot when usable, else a copy whose ``error`` says why. Reads the whole file: for ``prices status`` and
    the retention, not for every listing."""
    if not snap.ok:
        return snap
    try:
        read_snapshot(snap)
    except SnapshotError as e:
        import dataclasses

        why = str(e).split(" is not usable: ", 1)[-1]
        return dataclasses.replace(snap, error=why)
    return snap


def good_snapshots(provider: str, on_or_before: dt.date | None = None):
    """Valid snapshots of ``provider`` valid on or before the date, newest first (see :func:`newest_good`)."""
    for snap in reversed(list_snapshots(provider)):
        if on_or_before is not None:
            try:
                valid = dt.date.fromisoformat(snap.as_of[:10])
            except ValueError:
                continue
            if valid > on_or_before:
                continue
        yield snap


def newest_good(provider: str, on_or_before: dt.date | None = None) -> tuple[CachedSnapshot | None, list[str]]:
    """The newest valid snapshot of ``provider`` — newest by the date its prices were valid (``as_of``), then by
    when it was written — whose prices were valid on or before the date when given; and warnings about newer
    snapshots skipped because they are corrupted."""
    warnings = []
    for snap in reversed(list_snapshots(provider)):
        if on_or_before is not None:
            try:
                valid = dt.date.fromisoformat(snap.as_of[:10])
            except ValueError:
                valid = None
            if valid is None or valid > on_or_before:
                continue
        snap = verified(snap)
        if snap.ok:
            return snap, warnings
        warnings.append(f"{provider}: cached snapshot {snap.meta_path.name} skipped: {snap.error}; "
                        "using the previous good one")
    return None, warnings


def apply_retention(provider: str, now: dt.datetime | None = None) -> list[Path]:
    """Delete snapshots of ``provider`` older than retention_days(), always keeping the newest valid one.
    Returns the deleted files."""
    keep_from = (now or _now()) - dt.timedelta(days=retention_days())
    snaps = list_snapshots(provider)
    newest, _ = newest_good(provider)
    deleted = []
    for s in snaps:
        if newest is not None and s.meta_path == newest.meta_path:
            continue
        try:
            created = dt.datetime.fromisoformat(s.created_at)
        except ValueError:
            continue
        if created < keep_from:
            skipped_file = s.meta_path.parent / str(s.meta.get("skipped_file") or f"{s.csv_path.stem}.skipped.csv")
            for p in (s.meta_path, s.csv_path, skipped_file):  # metadata first: a half-deleted one is not a snapshot
                try:
                    p.unlink()
                    deleted.append(p)
                except FileNotFoundError:
                    pass
    return deleted
