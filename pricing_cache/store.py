"""Load offers: the shipped snapshot (verified) or a user's offers CSV.

The shipped snapshot is ``pricing_cache/data/offers.csv`` described by ``snapshot.json`` (schema version, built_at,
per-provider sources / as_of / row counts / skipped counts, sha256 of offers.csv), built by
``python -m pricing_cache.build_snapshot``. Loading it checks the schema version and the sha256 and raises
``SnapshotError`` with a clear message on any mismatch (a hand-edited or truncated file is never used silently).
Files of an older readable schema (``READABLE_SCHEMA_VERSIONS``: version 1 lacks ``fabric`` and ``zone_kind``,
versions 1-3 lack ``tier``) are read, never refused: the missing columns are filled from the documented facts
(``providers._common.fill_facts``).

pandas is imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import GpuoptError, SnapshotError
from gpuopt.kernel.records import OFFER_DTYPES, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION
from pricing_cache.offers_file import REBUILD_HINT, read_offers_file

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

SNAPSHOT_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class ProviderInfo:
    """Per-provider facts of a loaded catalog."""

    as_of: str | None
    as_of_dates: tuple[str, ...]
    rows: int
    rows_by_pricing: dict[str, int]
    estimated_rows: int
    skipped: dict[str, int] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class SnapshotInfo:
    """What was loaded.

    Attributes:
        path: offers.csv of the snapshot, or the user's CSV.
        kind: ``snapshot`` or ``offers_csv``.
        schema_version, built_at: from snapshot.json (built_at None for a user CSV).
        providers: per provider: as_of, row counts by pricing, skipped counts by reason, sources.
        rows: total offers; estimated_rows: rows whose source starts with ``rule:`` (derived, not quoted).
        sha256: of offers.csv (verified for the snapshot).
        origins: per provider, where its rows came from: "shipped snapshot" or "cache <created_at> (<file>)".
        warnings: corrupted cache snapshots skipped, dates with no cached prices, ...
    """

    path: Path
    kind: str
    schema_version: int
    built_at: str | None
    providers: dict[str, ProviderInfo]
    rows: int
    estimated_rows: int
    sha256: str | None = None
    origins: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_snapshot_meta(snapshot_dir: Path | None = None) -> dict[str, Any]:
    """snapshot.json of ``snapshot_dir`` after checking schema version and the sha256 of offers.csv.

    Raises:
        SnapshotError: missing file, unreadable JSON, unknown schema version, or offers.csv changed.
    """
    d = Path(snapshot_dir) if snapshot_dir is not None else SNAPSHOT_DIR
    meta_path = d / "snapshot.json"
    if not meta_path.is_file():
        raise SnapshotError(f"price snapshot missing: {meta_path} not found; {REBUILD_HINT}")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SnapshotError(f"price snapshot unreadable: {meta_path}: {e}; {REBUILD_HINT}") from None
    version = meta.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS:
        raise SnapshotError(f"price snapshot {meta_path} has schema version {version}, this gpuopt reads version "
                            f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}; {REBUILD_HINT}")
    offers_path = d / str(meta.get("offers_file", "offers.csv"))
    if not offers_path.is_file():
        raise SnapshotError(f"price snapshot incomplete: {offers_path} not found; {REBUILD_HINT}")
    actual = _sha256(offers_path)
    if actual != meta.get("offers_sha256"):
        raise SnapshotError(f"price snapshot corrupted: sha256 of {offers_path} is {actual}, snapshot.json says "
                            f"{meta.get('offers_sha256')} (the file was edited or truncated); {REBUILD_HINT}")
    return meta


def shipped_days(df: "pd.DataFrame", built_at: str | None = None) -> dict[str, str]:
    """provider -> the newest source date (YYYY-MM-DD) of its rows in the shipped snapshot ``df`` (rows dated
    ``unknown`` do not count; ``built_at`` for a provider with no dated row). A cached snapshot older than this does
    not replace the shipped prices; the import and refresh decide "current or history" by the same dates."""
    out: dict[str, str] = {}
    pairs = df[["provider", "as_of"]].astype(str).drop_duplicates()
    for prov, day in zip(pairs["provider"], pairs["as_of"]):
        day = day[:10]
        if day[:4].isdigit() and day > out.get(prov, ""):
            out[prov] = day
    for prov in set(pairs["provider"]) - set(out):
        out[prov] = str(built_at or "")[:10]
    return out


def _providers_from_frame(df: "pd.DataFrame") -> dict[str, ProviderInfo]:
    out = {}
    for prov, grp in df.groupby("provider", sort=True):
        dates = tuple(sorted({str(x) for x in grp["as_of"].unique()}))  # distinct values first: big catalogs
        counts = grp["source"].value_counts()
        sources = [str(k) for k in counts.index]
        out[str(prov)] = ProviderInfo(
            as_of=dates[-1] if dates else None, as_of_dates=dates, rows=int(len(grp)),
            rows_by_pricing={str(k): int(v) for k, v in sorted(grp["pricing"].value_counts().items())},
            estimated_rows=int(sum(int(v) for k, v in counts.items() if str(k).startswith("rule:"))),
            sources=tuple(sorted({s for s in sources if not s.startswith("rule:")})))
    return out


def load_offers(catalog: "str | Path | None" = None, snapshot_dir: Path | None = None, *,
                on_date: "dt.date | None" = None, use_cache: bool = True,
                categories: bool = False) -> "tuple[pd.DataFrame, SnapshotInfo]":
    """The offers to plan over: per provider, the newest good snapshot of the user cache (``gpuopt prices
    refresh``; created on or before ``on_date`` when given, so a past month is priced with that month's prices),
    else the shipped snapshot's rows; or a user offers CSV (``catalog``; its checked copy from
    ``pricing_cache.catalog_cache`` when the file has not changed since it was last read).

    ``categories``: the text columns as pandas categoricals (``gpuopt.kernel.records.as_categories``: selecting rows of a
    big catalog 30x faster), else OFFER_DTYPES' strings.

    Raises: SnapshotError (shipped snapshot missing/corrupted), InputError (bad user CSV).
    """
    from gpuopt.kernel.records import as_categories

    df, info = _load_offers(catalog, snapshot_dir, on_date=on_date, use_cache=use_cache, categories=categories)
    return (as_categories(df) if categories else df), info


def _load_offers(catalog, snapshot_dir, *, on_date, use_cache, categories) -> "tuple[pd.DataFrame, SnapshotInfo]":
    df, info = _load_base(catalog, snapshot_dir, categories=categories)
    if catalog is not None or not use_cache:
        return df, info
    import pandas as pd

    from pricing_cache import cache

    cached_providers = {s.provider for s in cache.list_snapshots()}
    shipped_providers = set(df["provider"].astype(str))
    # the date of each provider's shipped prices: its newest source date (issue 9: never the copy date, built_at)
    ship = shipped_days(df, info.built_at)
    frames, origins, warnings = [], {}, []
    for prov in sorted(shipped_providers | cached_providers):
        shipped_day = ship.get(prov, str(info.built_at or "")[:10])
        found = False
        for snap in cache.good_snapshots(prov, on_date):  # newest first; a bad one falls back to the one before
            if not snap.ok:
                warnings.append(f"{prov}: cached snapshot {snap.meta_path.name} skipped: {snap.error}; "
                                "using the previous good one")
                continue
            if prov in shipped_providers and snap.as_of[:10] < shipped_day and \
                    (on_date is None or on_date.isoformat() >= shipped_day):
                break  # the shipped prices are newer than any cached ones (e.g. an old file was imported)
            try:
                frames.append(cache.read_snapshot(snap))
            except SnapshotError as e:
                warnings.append(f"{prov}: cached snapshot {snap.meta_path.name} skipped: {e}; using the previous good one")
                continue
            origins[prov] = f"cache {snap.created_at} ({snap.csv_path.name})"
            found = True
            break
        if found:
            continue
        if prov not in shipped_providers:
            if on_date is not None:
                warnings.append(f"{prov}: no cached prices valid on or before {on_date}; left out")
            continue
        if on_date is not None and (prov in cached_providers or on_date.isoformat() < shipped_day):
            warnings.append(f"{prov}: no cached prices valid on or before {on_date}; using the shipped snapshot "
                            f"(its newest prices of {shipped_day})")
        frames.append(df[df["provider"] == prov])
        origins[prov] = "shipped snapshot"
    merged = pd.concat(frames, ignore_index=True) if frames else df
    if not any(o.startswith("cache") for o in origins.values()) and not warnings:
        return df, SnapshotInfo(**{**info.__dict__, "origins": origins})
    per = _providers_from_frame(merged)
    providers = {p: (info.providers[p] if origins.get(p) == "shipped snapshot" and p in info.providers else per[p])
                 for p in per}
    return merged, SnapshotInfo(path=info.path, kind="snapshot+cache", schema_version=info.schema_version,
                                built_at=info.built_at, providers=providers, rows=int(len(merged)),
                                estimated_rows=int(merged["source"].astype(str).str.startswith("rule:").sum()),
                                sha256=info.sha256, origins=origins, warnings=tuple(warnings))


def _load_catalog(path: Path, categories: bool) -> "tuple[pd.DataFrame, SnapshotInfo]":
    """A user offers CSV: its checked copy (``pricing_cache.catalog_cache``) when the file is unchanged, else read
    and checked (``providers.offers_csv``), then copied for the next run. ``categories`` as in load_offers."""
    import dataclasses

    from gpuopt.kernel.records import as_categories
    from pricing_cache import catalog_cache

    if not Path(path).is_file():  # (before anything reads it: the checksum, the copy)
        from gpuopt.kernel.errors import InputError

        raise InputError("catalog", f"no such file: {path}")
    hit = catalog_cache.load(path)
    if hit is not None:
        df, meta = hit
        per = {p: ProviderInfo(as_of=v["as_of"], as_of_dates=tuple(v["as_of_dates"]), rows=int(v["rows"]),
                               rows_by_pricing={k: int(n) for k, n in v["rows_by_pricing"].items()},
                               estimated_rows=int(v["estimated_rows"]), skipped=dict(v.get("skipped", {})),
                               sources=tuple(v.get("sources", ())))
               for p, v in meta["providers"].items()}
        sha = str(meta["sha256"])
        if not categories:
            df = df.astype({c: OFFER_DTYPES[c] for c in df.columns if str(df[c].dtype) == "category"})
    else:
        from providers.offers_csv import read_offers_csv

        from providers.validate import validate_offers

        read_key = catalog_cache.key(path)  # before reading: a file saved meanwhile is not copied
        sha = _sha256(path)
        df = read_offers_csv(path)
        # the same checks as the snapshot build, imports and refreshes (issue 9): a planted price (1e-300 USD/h,
        # a capacity block at 1e308) never reaches a plan; refused rows are counted per provider and warned about
        checked = validate_offers(df, f"user:{path.name}")
        df = checked.offers
        per = _providers_from_frame(df)
        for prov, srow in zip(checked.providers, checked.skipped):
            if prov not in per:
                per[prov] = ProviderInfo(as_of=None, as_of_dates=(), rows=0, rows_by_pricing={}, estimated_rows=0,
                                         skipped={}, sources=())
            code = srow.reason.split(":", 1)[0]
            per[prov].skipped[code] = per[prov].skipped.get(code, 0) + 1
        cat = as_categories(df)
        catalog_cache.store(path, cat, {"sha256": sha,
                                        "providers": {p: dataclasses.asdict(v) for p, v in per.items()}}, read_key)
        if categories:
            df = cat
    refused = {}
    for p in per.values():
        for code, n in (p.skipped or {}).items():
            refused[code] = refused.get(code, 0) + n
    warnings = [f"{path.name}: {sum(refused.values())} rows refused by the price checks ("
                + ", ".join(f"{k} {v}" for k, v in sorted(refused.items())) + "); see `gpuopt prices list --catalog` "
                "for what is left"] if refused else []
    return df, SnapshotInfo(path=path, kind="offers_csv", schema_version=SCHEMA_VERSION, built_at=None,
                            providers=per, rows=int(len(df)),
                            estimated_rows=sum(p.estimated_rows for p in per.values()), sha256=sha,
                            warnings=tuple(warnings))


def _load_base(catalog: "str | Path | None" = None, snapshot_dir: Path | None = None,
               categories: bool = False) -> "tuple[pd.DataFrame, SnapshotInfo]":
    """The offers to plan over and what they are.

    Args:
        catalog: None for the shipped snapshot, else the path of a user offers CSV (``providers.offers_csv``).
        snapshot_dir: another snapshot folder (tests); default ``pricing_cache/data``.

    Returns:
        (offers DataFrame with OFFER_COLUMNS / OFFER_DTYPES, SnapshotInfo).

    Raises:
        SnapshotError: the snapshot is missing, of another schema version, or fails its sha256 check.
        InputError: the user CSV is invalid (field ``catalog``, with the line number).
    """
    if catalog is not None:
        return _load_catalog(Path(catalog), categories)
    d = Path(snapshot_dir) if snapshot_dir is not None else SNAPSHOT_DIR
    meta = read_snapshot_meta(d)
    path = d / str(meta.get("offers_file", "offers.csv"))
    df = read_offers_file(path)
    if len(df) != meta.get("rows"):
        raise SnapshotError(f"price snapshot {path} has {len(df)} rows, snapshot.json says {meta.get('rows')}; "
                            f"{REBUILD_HINT}")
    from pricing_cache.cache import offer_values_error

    bad = offer_values_error(df)  # beyond the checksum: a hand-edit with a recomputed sha256 (issue 13)
    if bad is not None:
        raise SnapshotError(f"price snapshot {path} is not usable: {bad}; {REBUILD_HINT}")
    per = _providers_from_frame(df)
    providers = {}
    for prov, info in per.items():
        m = meta.get("providers", {}).get(prov, {})
        srcs = tuple(f"{s.get('file')} ({s.get('upstream')}" + (f"@{s['commit']}" if s.get("commit") else "") + ")"
                     for s in m.get("sources", []))
        providers[prov] = ProviderInfo(as_of=info.as_of, as_of_dates=info.as_of_dates, rows=info.rows,
                                       rows_by_pricing=info.rows_by_pricing, estimated_rows=info.estimated_rows,
                                       skipped=dict(m.get("skipped", {})), sources=srcs or info.sources)
    return df, SnapshotInfo(path=path, kind="snapshot", schema_version=int(meta["schema_version"]),
                            built_at=meta.get("built_at"), providers=providers, rows=int(len(df)),
                            estimated_rows=int(df["source"].str.startswith("rule:").sum()),
                            sha256=meta.get("offers_sha256"))


def snapshot_status(snapshot_dir: Path | None = None) -> dict[str, Any]:
    """For ``gpuopt prices status``: the shipped snapshot's facts, verified (never raises for a bad snapshot).

    Returns a JSON-able dict: ``ok`` (bool), ``error`` (message when not ok), ``path``, ``schema_version``,
    ``built_at``, ``rows``, ``estimated_rows``, ``offers_sha256``, ``reserved_rules`` and ``providers`` (per provider:
    ``as_of``, ``as_of_dates``, ``rows_by_pricing``, ``estimated_rows``, ``skipped`` by reason, ``skipped_total``,
    ``sources``).
    """
    d = Path(snapshot_dir) if snapshot_dir is not None else SNAPSHOT_DIR
    try:
        meta = read_snapshot_meta(d)
    except GpuoptError as e:
        return {"ok": False, "error": str(e), "path": str(d / "offers.csv")}
    providers = {}
    for prov, m in sorted(meta.get("providers", {}).items()):
        providers[prov] = {
            "as_of": m.get("as_of"), "as_of_dates": m.get("as_of_dates", []), "rows": m.get("rows"),
            "rows_by_pricing": m.get("rows_by_pricing", {}), "estimated_rows": m.get("estimated_rows"),
            "skipped": m.get("skipped", {}), "skipped_total": m.get("skipped_total"),
            "sources": [f"{s.get('file')} ({s.get('upstream')}" + (f"@{s['commit']}" if s.get("commit") else "")
                        + ")" for s in m.get("sources", [])],
        }
    return {"ok": True, "path": str(d / str(meta.get("offers_file", "offers.csv"))),
            "schema_version": meta.get("schema_version"), "built_at": meta.get("built_at"),
            "rows": meta.get("rows"), "estimated_rows": meta.get("estimated_rows"),
            "offers_sha256": meta.get("offers_sha256"), "reserved_rules": meta.get("reserved_rules", {}),
            "as_of_note": meta.get("skypilot_as_of_note"),
            "providers": providers}
