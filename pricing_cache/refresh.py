"""`gpuopt prices refresh`: run the live adapters and write new cache snapshots, never losing good data.

For each provider (providers.base.LIVE_ADAPTERS): list its regions, then fetch + parse every region in a bounded
thread pool. A region that fails (after the adapters' own retries) keeps its previous rows — from the newest good
cache snapshot of that provider, else from the shipped snapshot — and the summary says so; a region the account
cannot use is skipped with a note; regions not asked for (``--region``) keep their previous rows too. A provider
whose every region failed, or whose credentials are missing, is not written at all (its previous data stays the
current data); the other providers still refresh. The whole refresh holds the cache's file lock, so two
refreshes cannot interleave (the second waits for the first).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Any, Callable

from gpuopt.errors import GpuoptError, InputError, PriceDataError
from providers.base import LIVE_ADAPTERS, FetchOptions, RegionSkipped

#: Regions fetched at once per provider (each region is a handful of paginated API calls).
DEFAULT_WORKERS = 4


@dataclass
class ProviderOutcome:
    """What happened to one provider in a refresh.

    status: "refreshed" (every region asked for was fetched), "partial" (some regions failed or were skipped and
    kept their previous rows), "failed" (nothing written: the previous data stays current).
    """

    provider: str
    status: str = "failed"
    rows: int = 0
    regions_done: list[str] = field(default_factory=list)
    regions_failed: dict[str, str] = field(default_factory=dict)
    regions_skipped: dict[str, str] = field(default_factory=dict)
    kept_previous: list[str] = field(default_factory=list)
    snapshot: str | None = None
    seconds: float = 0.0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    rows_by_region: dict[str, int] = field(default_factory=dict)


@dataclass
class RefreshSummary:
    """The refresh's summary: one ProviderOutcome per provider and the total time in seconds."""

    providers: list[ProviderOutcome]
    seconds: float

    @property
    def ok(self) -> bool:
        """True when every provider refreshed every region asked for (a partial refresh is not ok: exit code 1)."""
        return all(p.status == "refreshed" for p in self.providers)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "seconds": round(self.seconds, 2), "providers": [asdict(p) for p in self.providers]}


Event = Callable[..., None]


def _adapter(name: str, adapters: dict[str, Any] | None):
    if adapters and name in adapters:
        return adapters[name]
    if name not in LIVE_ADAPTERS:
        raise InputError("provider", f"no live adapter for '{name}'", accepted=", ".join(LIVE_ADAPTERS))
    return import_module(LIVE_ADAPTERS[name])


def _previous_rows(provider: str, as_of: str | None = None):
    """The provider's rows in effect on ``as_of`` (default today): the newest good cache snapshot valid on or before
    that date, else the shipped snapshot's rows — but for a date before the shipped catalog (a back-dated import)
    nothing: rows valid later must never leak into an earlier date's history."""
    import datetime as dt

    from pricing_cache import cache
    from pricing_cache.store import load_offers

    day = dt.date.fromisoformat(as_of) if as_of else None
    for snap in cache.good_snapshots(provider, day):
        if not snap.ok:
            continue
        try:
            return cache.read_snapshot(snap)
        except GpuoptError:
            continue
    df, info = load_offers(use_cache=False)
    rows = df[df["provider"] == provider]
    if day is not None and info.built_at and day < dt.date.fromisoformat(str(info.built_at)[:10]):
        return rows.iloc[0:0]
    return rows


def merge_and_write(provider: str, new, regions_done: list[str], *, as_of: str, regions_meta: dict[str, Any],
                    source: str):
    """Write a new snapshot of ``provider``: the ``new`` rows for ``regions_done`` plus the previous rows of every
    other region (kept, and listed). The caller holds the cache lock.

    Returns (CachedSnapshot, merged frame, regions kept from the previous data).
    Raises PriceDataError if an offer key would appear twice."""
    import pandas as pd

    from pricing_cache import cache
    from providers._common import check_unique

    previous = _previous_rows(provider, as_of)
    keep = previous[~previous["region"].isin(regions_done)]
    kept = sorted(set(keep["region"].astype(str)))
    merged = pd.concat([new, keep], ignore_index=True) if len(keep) else new
    check_unique(merged, f"{provider} snapshot")
    replaced = previous[previous["region"].isin(regions_done)]
    key = ["region", "zone", "instance_type", "pricing", "payment"]
    old_keys = set(map(tuple, replaced[key].fillna("").astype(str).values.tolist()))
    new_keys = set(map(tuple, new[key].fillna("").astype(str).values.tolist()))
    removed = len(old_keys - new_keys)
    snap = cache.write_snapshot(provider, merged, as_of=as_of,
                                regions={"done": sorted(regions_done), **regions_meta, "kept_previous": kept},
                                extra={"source": source, "offers_removed": removed, "offers_added": len(new_keys - old_keys)})
    return snap, merged, kept


def _one_region(mod, region: str, options: FetchOptions, as_of: str):
    t0 = time.perf_counter()
    raw = mod.fetch_region(region, options)
    result = mod.parse_region(raw, region, as_of)
    return result, time.perf_counter() - t0


def refresh_provider(name: str, options: FetchOptions, *, as_of: str, max_workers: int = DEFAULT_WORKERS,
                     adapters: dict[str, Any] | None = None, on_event: Event | None = None) -> ProviderOutcome:
    """Refresh one provider (the caller holds the cache lock). Never raises for provider or region failures:
    they are recorded in the returned ProviderOutcome."""
    import pandas as pd

    out = ProviderOutcome(provider=name)
    t0 = time.perf_counter()
    emit = on_event or (lambda *a, **k: None)
    try:
        mod = _adapter(name, adapters)
        regions = list(mod.list_regions(options))
    except Exception as exc:  # missing credentials, listing failed, SDK missing: the provider keeps its data
        out.error = f"{type(exc).__name__}: {exc}"
        out.seconds = time.perf_counter() - t0
        emit("provider_failed", name, error=out.error)
        return out
    emit("start", name, total=len(regions))
    frames = []
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(regions) or 1))) as pool:
        futures = {pool.submit(_one_region, mod, r, options, as_of): r for r in regions}
        for fut in as_completed(futures):
            region = futures[fut]
            try:
                result, secs = fut.result()
            except RegionSkipped as exc:
                out.regions_skipped[region] = str(exc)
                emit("region", name, region=region, status="skipped", message=str(exc))
                continue
            except Exception as exc:  # one region failed after the adapter's retries: keep its previous rows
                out.regions_failed[region] = f"{type(exc).__name__}: {exc}"
                emit("region", name, region=region, status="failed", message=out.regions_failed[region])
                continue
            if result.offers.empty:
                # an answer with no usable GPU offer for a region that had some is suspicious: keep the old rows
                prev = _previous_rows(name)
                if (prev["region"] == region).any():
                    out.regions_failed[region] = (f"the API returned no usable GPU offer for {region} "
                                                  f"({len(getattr(result, 'skipped', []))} rows skipped)")
                    emit("region", name, region=region, status="failed", message=out.regions_failed[region])
                    continue
            frames.append(result.offers)
            out.notes.extend(f"{region}: {n}" for n in getattr(result, "notes", [])[:5])
            out.regions_done.append(region)
            out.rows_by_region[region] = int(len(result.offers))
            emit("region", name, region=region, status="done", rows=len(result.offers))
    out.regions_done.sort()
    if not out.regions_done:
        out.error = "no region could be refreshed; the previous prices stay in use"
        out.seconds = time.perf_counter() - t0
        emit("end", name, status=out.status)
        return out
    new = pd.concat(frames, ignore_index=True)
    bad_currency = sorted(set(new["currency"].astype(str)) - {"USD"})
    if bad_currency:
        out.error = f"prices in {bad_currency} (gpuopt compares prices in USD only); nothing written"
        out.seconds = time.perf_counter() - t0
        emit("end", name, status=out.status)
        return out
    try:
        snap, merged, out.kept_previous = merge_and_write(
            name, new, out.regions_done, as_of=as_of,
            regions_meta={"failed": out.regions_failed, "skipped": out.regions_skipped},
            source=f"gpuopt prices refresh ({name})")
    except PriceDataError as exc:
        out.error = str(exc)
        out.seconds = time.perf_counter() - t0
        emit("end", name, status=out.status)
        return out
    out.snapshot = str(snap.csv_path)
    out.rows = int(len(merged))
    out.status = "refreshed" if not out.regions_failed and not out.regions_skipped else "partial"
    out.seconds = time.perf_counter() - t0
    emit("end", name, status=out.status)
    return out


def refresh(providers: list[str] | None = None, options: FetchOptions | None = None, *,
            max_workers: int = DEFAULT_WORKERS, adapters: dict[str, Any] | None = None,
            on_event: Event | None = None, lock_timeout_s: float | None = None) -> RefreshSummary:
    """Refresh the given providers (default: every live adapter) under the cache lock.

    Args:
        providers: provider names (validated against LIVE_ADAPTERS, or ``adapters`` in tests).
        options: FetchOptions (regions, profile, API keys, timeouts, retries, page caps).
        max_workers: regions fetched concurrently per provider.
        adapters: name -> adapter module (tests inject fakes).
        on_event: progress callback: on_event(kind, provider, **details) with kind in start, region, end,
            provider_failed.
    Returns: RefreshSummary. Raises: InputError for an unknown provider; SnapshotError if the lock cannot be
        taken (another refresh is still running after ``lock_timeout_s``).
    """
    import datetime as dt

    from filelock import Timeout

    from gpuopt.errors import SnapshotError
    from pricing_cache import cache

    options = options or FetchOptions()
    known = set(adapters or {}) | set(LIVE_ADAPTERS)
    names = list(dict.fromkeys(providers)) if providers else list(LIVE_ADAPTERS)
    for n in names:
        if n not in known:
            raise InputError("provider", f"no live adapter for '{n}'", accepted=", ".join(sorted(known)))
    if max_workers < 1:
        raise InputError("workers", f"must be at least 1, got {max_workers}")
    cache.check_settings()  # before anything is fetched: a bad setting must not fail after the work is done
    t0 = time.perf_counter()
    as_of = dt.datetime.now(dt.timezone.utc).date().isoformat()
    lk = cache.lock(cache.LOCK_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s)
    try:
        try:
            lk.acquire(timeout=0)
        except Timeout:
            if on_event:
                on_event("waiting", "", message=f"waiting for another refresh or import to finish ({lk.lock_file})")
            lk.acquire()
    except Timeout:
        raise SnapshotError(f"another `gpuopt prices refresh` holds the cache lock ({cache.cache_dir() / '.lock'}); "
                            "try again when it has finished") from None
    try:
        outcomes = [refresh_provider(n, options, as_of=as_of, max_workers=max_workers, adapters=adapters,
                                     on_event=on_event) for n in names]
    finally:
        lk.release()
    return RefreshSummary(providers=outcomes, seconds=time.perf_counter() - t0)
