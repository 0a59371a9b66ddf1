"""`gpuopt prices refresh`: run the live adapters and write new cache snapshots, never losing good data.

For each provider (providers.base.LIVE_ADAPTERS): list its regions, then fetch + parse every region in a bounded
thread pool. A region that fails (after the adapters' own retries) keeps its previous rows — from the newest good
cache snapshot of that provider, else from the shipped snapshot — and the summary says so; a region the account
cannot use is skipped with a note; regions not asked for (``--region``) keep their previous rows too. A provider
whose every region failed, or whose credentials are missing, is not written at all (its previous data stays the
current data); the other providers still refresh. The whole refresh runs within one deadline
(``FetchOptions.deadline_s``, ``--deadline``, counted from its start): no API call starts after it, every call's
timeouts and retry waits are capped at the time left (providers.base), and the regions and providers not done by
then are reported as failed "deadline reached after N s (--deadline D s)" and keep their previous prices, while
what was fetched in time is written (a partial refresh, exit code 3), never a hang. The whole refresh holds the
cache's file lock, so two refreshes cannot interleave (the second waits for the first).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Any, Callable

from gpuopt.kernel.errors import GpuoptError, InputError, PriceDataError, SnapshotError
from gpuopt.kernel.redact import scrub
from providers.base import (LIVE_ADAPTERS, DeadlineReached, FetchOptions, MissingCredentials, RegionSkipped,
                            check_deadline, deadline_note, deadline_passed)

#: Regions fetched at once per provider (each region is a handful of paginated API calls).
DEFAULT_WORKERS = 4


@dataclass
class ProviderOutcome:
    """What happened to one provider in a refresh.

    status: "refreshed" (every region asked for was fetched), "partial" (some regions failed or were skipped and
    kept their previous rows), "failed" (nothing written: the previous data stays current).
    rows_skipped / skipped_by_reason: price rows of the regions done that were not turned into offers — by the
    adapter's parser or refused by the validation every offer passes (providers.validate: bad_price,
    gpu_memory_mismatch, spot_not_below_on_demand, ...) — counted by reason code; they are listed in the
    snapshot's skipped list (cache.write_snapshot).
    offers_added / offers_changed / offers_removed: how the snapshot differs from the previous prices of the
    regions done (refresh.MergeCounts).
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
    rows_skipped: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    offers_added: int = 0
    offers_changed: int = 0
    offers_removed: int = 0


@dataclass
class RefreshSummary:
    """The refresh's summary: one ProviderOutcome per provider and the total time in seconds."""

    providers: list[ProviderOutcome]
    seconds: float

    @property
    def ok(self) -> bool:
        """True when every provider refreshed every region asked for (a partial refresh is not ok: exit code 3)."""
        return all(p.status == "refreshed" for p in self.providers)

    def to_dict(self) -> dict[str, Any]:
        """The ``prices-refresh`` document (gpuopt.schemas.PricesRefreshDoc)."""
        from gpuopt.kernel.documents import envelope

        return envelope("prices-refresh", {"ok": self.ok, "seconds": round(self.seconds, 2),
                                           "providers": [asdict(p) for p in self.providers]})

    def to_dataframe(self):
        """One row per provider (status, rows, regions, time)."""
        from gpuopt.kernel.documents import frame

        from dataclasses import fields

        return frame([asdict(p) for p in self.providers], [f.name for f in fields(ProviderOutcome)])


Event = Callable[..., None]


def _adapter(name: str, adapters: dict[str, Any] | None):
    if adapters and name in adapters:
        return adapters[name]
    if name not in LIVE_ADAPTERS:
        raise InputError("provider", f"no live adapter for '{name}'", accepted=", ".join(LIVE_ADAPTERS))
    return import_module(LIVE_ADAPTERS[name])


def shipped_day(provider: str | None = None) -> str:
    """The date (YYYY-MM-DD) the price store gives the shipped prices of ``provider``: the newest source date of its
    rows (snapshot.json ``providers.<p>.as_of``; issue 9: never the copy date), else ``built_at``. A cached snapshot
    whose ``as_of`` is before it is not used as the current prices while the shipped ones exist
    (store.load_offers, :func:`pricing_cache.store.shipped_days`); the refresh and the import decide "current or
    history" by the same rule, here. "" when the snapshot has none."""
    from pricing_cache.store import read_snapshot_meta

    meta = read_snapshot_meta()
    day = str(((meta.get("providers") or {}).get(provider) or {}).get("as_of") or "")[:10] if provider else ""
    return day if day[:4].isdigit() else str(meta.get("built_at") or "")[:10]


def current_as_of(provider: str) -> str | None:
    """The date (YYYY-MM-DD) of the prices of ``provider`` that are current now, by the store's rule
    (store.load_offers): the newest good cache snapshot's ``as_of`` unless it is older than the shipped snapshot
    (:func:`shipped_day`), which then stands for the provider. None when neither has the provider.

    A new snapshot with ``as_of`` >= this date becomes the current prices; an older one only enters the history
    (``--prices-on``)."""
    from pricing_cache import cache
    from pricing_cache.store import read_snapshot_meta

    dates = [s.as_of[:10] for s in cache.list_snapshots(provider) if s.ok and s.as_of[:4].isdigit()]
    if provider in (read_snapshot_meta().get("providers") or {}):
        dates.append(shipped_day(provider))
    dates = [d for d in dates if d]
    return max(dates) if dates else None


def previous_rows(provider: str, as_of: str | None = None):
    """The provider's rows in effect on ``as_of`` (default today), the base a new snapshot of that date is merged
    with, by the store's rule: the newest good cache snapshot valid on or before that date — unless the shipped
    snapshot is newer than it and the date is not before the shipped snapshot (then the shipped rows). For a date
    before the shipped prices with no cached prices, the shipped rows whose own ``as_of`` is on or before the date
    (none with an unknown date): rows valid later never leak into an earlier date's history.

    Args: provider name; as_of a date YYYY-MM-DD (or an ISO date-time; only its first 10 characters count).
    Returns: a DataFrame of the offer columns (OFFER_COLUMNS / OFFER_DTYPES), empty when the provider has none.
    Raises: SnapshotError when the shipped snapshot is missing or corrupted; ValueError for an ``as_of`` that is not
    a date. A cached snapshot that cannot be read is skipped (the one before it is used)."""
    import datetime as dt

    from pricing_cache import cache
    from pricing_cache.store import load_offers

    day = (dt.date.fromisoformat(as_of[:10]) if as_of else dt.datetime.now(dt.timezone.utc).date()).isoformat()
    df, info = load_offers(use_cache=False)
    rows = df[df["provider"] == provider]
    ship = shipped_day(provider)
    for snap in cache.good_snapshots(provider, dt.date.fromisoformat(day)):
        if not snap.ok:
            continue
        if len(rows) and ship and snap.as_of[:10] < ship <= day:
            return rows  # the shipped prices are newer than any cached ones valid on that date
        try:
            return cache.read_snapshot(snap)
        except GpuoptError:
            continue
    if ship and day < ship:
        # the shipped rows valid on that date: those dated on or before it (a row of unknown date may be from
        # after it: never leaked into an earlier date's history)
        dates = rows["as_of"].astype(str).str[:10]
        return rows[(dates.str[:4].str.isdigit() & (dates <= day)).to_numpy()]
    return rows


#: Price columns compared to tell a changed offer from an unchanged one (USD; a difference above 1e-9 counts).
PRICE_COLUMNS = ("usd_per_hour", "upfront_usd", "recurring_usd_per_hour")


@dataclass
class MergeCounts:
    """What a new snapshot did to a provider's previous offers, counted by offer key (providers._common.OFFER_KEY).

    Attributes:
        added: offers of the new rows the previous data did not have.
        changed: offers in both whose price differs (PRICE_COLUMNS, by more than 1e-9 USD).
        unchanged: offers in both at the same price (their date and source are the new rows').
        kept: previous offers the new rows do not carry, kept as they were.
        removed: previous offers of a replaced region that the new rows do not carry (0 when only offers are
            replaced).
        kept_regions: regions with kept offers.
        kept_quoted: offers of the new rows estimated by rule (``source`` ``rule:...``) not written because the
            previous data has a quote for the same key (a quote is never replaced by an estimate).
        kept_estimated: estimated offers of the new rows not written because the previous row of the key is an
            estimate derived from the same on-demand price (the previous ratio, refreshed from quotes by the
            snapshot build, stays).
        estimated: offers written from the new rows that are estimated by rule (among added/changed/unchanged).
    """

    added: int = 0
    changed: int = 0
    unchanged: int = 0
    kept: int = 0
    removed: int = 0
    kept_regions: list[str] = field(default_factory=list)
    kept_quoted: int = 0
    kept_estimated: int = 0
    estimated: int = 0


def offer_keys(df) -> list[tuple[str, ...]]:
    """The offer key (providers._common.OFFER_KEY: provider, region, zone, instance_type, pricing, payment,
    offering_class) of every row of an offers frame, as tuples of text (missing values as "")."""
    from providers._common import OFFER_KEY

    return list(map(tuple, df[list(OFFER_KEY)].astype(object).where(df[list(OFFER_KEY)].notna(), "")
                    .astype(str).values.tolist()))


def merge_offers(previous, new, *, replace_regions=None):
    """Merge ``new`` rows of one provider into its ``previous`` rows (both OFFER_COLUMNS frames).

    Args:
        previous: the provider's rows in effect before (:func:`previous_rows`).
        new: the rows fetched or imported (validated).
        replace_regions: None to replace only the offers ``new`` carries, by offer key (an import); or the
            regions replaced whole (a live refresh of a region, ``prices import --replace-region``): every previous
            row of those regions goes, the rest is kept.
    Returns:
        (merged frame, MergeCounts). Rows of ``new`` estimated by rule (``source`` ``rule:``) whose key has a
        quoted previous row are left out (counted in ``kept_quoted``) when only offers are replaced, and so are
        those whose previous row is an estimate from the same on-demand price (``kept_estimated``).
    Raises:
        PriceDataError if an offer key would appear twice.
    """
    import numpy as np
    import pandas as pd

    from providers._common import check_unique

    counts = MergeCounts()
    prev_keys = offer_keys(previous)
    prev_index = dict(zip(prev_keys, range(len(prev_keys))))
    if replace_regions is None:
        prev_src = previous["source"].astype(str).to_numpy(dtype=object)
        new_keys = offer_keys(new)
        estimated = new["source"].astype(str).str.startswith("rule:").to_numpy()

        def on_demand(df) -> dict[tuple, float]:
            od = df[(df["pricing"].astype(str) == "on_demand").to_numpy()]
            return {(str(r), str(t)): float(v) for r, t, v in
                    zip(od["region"].astype(str), od["instance_type"].astype(str), od["usd_per_hour"])}

        od_new, od_prev = on_demand(new), on_demand(previous)
        quoted, same_base = [], []
        for k, e, reg, it in zip(new_keys, estimated, new["region"].astype(str), new["instance_type"].astype(str)):
            j = prev_index.get(k) if e else None
            if j is None:
                quoted.append(False)
                same_base.append(False)
                continue
            prev_is_rule = str(prev_src[j]).startswith("rule:")
            quoted.append(not prev_is_rule)
            a, b = od_new.get((reg, it)), od_prev.get((reg, it))
            same_base.append(prev_is_rule and (a is None or (b is not None and abs(a - b) <= 1e-9)))
        quoted_a, same_a = np.array(quoted, dtype=bool), np.array(same_base, dtype=bool)
        counts.kept_quoted, counts.kept_estimated = int(quoted_a.sum()), int(same_a.sum())
        drop = quoted_a | same_a
        new = new[~drop].reset_index(drop=True) if drop.any() else new
        new_set = set(offer_keys(new))
        keep = previous[np.array([k not in new_set for k in prev_keys], dtype=bool)] if len(previous) else previous
    else:
        regions = set(map(str, replace_regions))
        new_set = set(offer_keys(new))
        in_replaced = previous["region"].astype(str).isin(regions).to_numpy()
        keep = previous[~in_replaced]
        counts.removed = sum(1 for k, r in zip(prev_keys, in_replaced) if r and k not in new_set)
    new_keys = offer_keys(new)
    prev_prices = previous[list(PRICE_COLUMNS)].to_numpy(dtype=float, na_value=np.nan)
    new_prices = new[list(PRICE_COLUMNS)].to_numpy(dtype=float, na_value=np.nan)
    for i, k in enumerate(new_keys):
        j = prev_index.get(k)
        if j is None:
            counts.added += 1
            continue
        a, b = prev_prices[j], new_prices[i]
        same = (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 1e-9)
        if same.all():
            counts.unchanged += 1
        else:
            counts.changed += 1
    counts.kept = int(len(keep))
    counts.estimated = int(new["source"].astype(str).str.startswith("rule:").sum())
    counts.kept_regions = sorted(set(keep["region"].astype(str)))
    merged = pd.concat([new, keep], ignore_index=True) if len(keep) else new.reset_index(drop=True)
    check_unique(merged, f"{merged['provider'].iloc[0] if len(merged) else ''} snapshot".strip())
    return merged, counts


def skipped_rows(skipped, provider: str) -> list[dict[str, Any]]:
    """SkippedRow objects (or dicts) as the rows of a snapshot's skipped list (cache.SKIPPED_COLUMNS: provider,
    source, line, instance_type, region, reason — the columns of pricing_cache/data/skipped.csv); ``provider``
    where a row names none."""
    from pricing_cache.cache import SKIPPED_COLUMNS

    out = []
    for s in skipped:
        d = dict(s) if isinstance(s, dict) else dict(s.__dict__)
        if not d.get("provider"):
            d["provider"] = provider
        out.append({k: ("" if d.get(k) is None else d.get(k)) for k in SKIPPED_COLUMNS})
    return out


def merge_and_write(provider: str, new, regions_done: list[str], *, as_of: str, regions_meta: dict[str, Any],
                    source: str, replace_regions: bool = True, skipped: list | None = None,
                    previous=None, extra: dict[str, Any] | None = None):
    """Write a new snapshot of ``provider`` (the caller holds the cache lock): the ``new`` rows merged into the
    rows in effect on ``as_of`` (:func:`previous_rows`, or ``previous`` when given) by :func:`merge_offers` —
    the regions ``regions_done`` replaced whole when ``replace_regions`` (a live refresh), else only the offers
    ``new`` carries (an import). ``skipped``: the rows refused (dicts of :func:`skipped_rows`), written to the
    snapshot's skipped list (cache.write_snapshot).

    Returns (CachedSnapshot, merged frame, MergeCounts). Raises PriceDataError if an offer key would appear twice."""
    from pricing_cache import cache

    if previous is None:
        previous = previous_rows(provider, as_of)
    merged, counts = merge_offers(previous, new, replace_regions=regions_done if replace_regions else None)
    snap = cache.write_snapshot(
        provider, merged, as_of=as_of,
        regions={"done": sorted(regions_done), **regions_meta, "kept_previous": counts.kept_regions},
        skipped=skipped,
        extra={"source": source, "mode": "region" if replace_regions else "offers",
               "offers_added": counts.added, "offers_changed": counts.changed,
               "offers_unchanged": counts.unchanged, "offers_kept": counts.kept, "offers_removed": counts.removed,
               **(extra or {})})
    return snap, merged, counts


def _one_region(mod, region: str, options: FetchOptions, as_of: str):
    """fetch_region + parse_region + validate_offers of one region: (ParseResult of the offers that pass, with
    the parser's skipped rows and the refused ones; seconds)."""
    from providers._common import ParseResult
    from providers.validate import validate_offers

    t0 = time.perf_counter()
    check_deadline(options, f"{getattr(mod, 'NAME', '')} {region}".strip())  # a region still queued: not started
    raw = mod.fetch_region(region, options)
    result = mod.parse_region(raw, region, as_of)
    checked = validate_offers(result.offers, f"{getattr(mod, 'NAME', '')} {region}".strip())
    result = ParseResult(offers=checked.offers, skipped=list(getattr(result, "skipped", [])) + checked.skipped,
                         notes=list(getattr(result, "notes", [])) + checked.notes)
    return result, time.perf_counter() - t0


def _deadline_first(message: str, exc: BaseException, options: FetchOptions) -> str:
    """A failure's message, led by "deadline reached after N s (--deadline D s):" (or
    "deadline too near ..." for a retry given up because its wait would pass it) when the refresh's deadline
    caused it (DeadlineReached, or any failure once the deadline has passed: its timeouts were capped at the time
    left)."""
    if options.deadline_s is not None and (isinstance(exc, DeadlineReached) or deadline_passed(options)):
        return f"{deadline_note(options)}: {message}"
    return message


def refresh_provider(name: str, options: FetchOptions, *, as_of: str, max_workers: int = DEFAULT_WORKERS,
                     adapters: dict[str, Any] | None = None, on_event: Event | None = None) -> ProviderOutcome:
    """Refresh one provider (the caller holds the cache lock). Never raises for provider or region failures:
    they are recorded in the returned ProviderOutcome."""
    import pandas as pd

    out = ProviderOutcome(provider=name)
    t0 = time.perf_counter()
    emit = on_event or (lambda *a, **k: None)
    if on_event is not None and options.progress is None:  # the adapters' own progress (e.g. MB read) as events
        import dataclasses

        options = dataclasses.replace(options, progress=lambda prov, region, message: emit(
            "message", prov, region=region, message=message))
    try:
        mod = _adapter(name, adapters)
        check_deadline(options, f"{name} list_regions")
        regions = list(mod.list_regions(options))
    except Exception as exc:  # missing credentials, listing failed, SDK missing: the provider keeps its data
        out.error = scrub(_deadline_first(f"{type(exc).__name__}: {exc}", exc, options), options.gcp_api_key)
        out.seconds = time.perf_counter() - t0
        emit("provider_failed", name, error=out.error)
        return out
    emit("start", name, total=len(regions))
    frames = []
    skipped: list = []
    creds_error: str | None = None  # the first region refused for its credentials: the provider's error
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(regions) or 1))) as pool:
        futures = {pool.submit(_one_region, mod, r, options, as_of): r for r in regions}
        for fut in as_completed(futures):
            region = futures[fut]
            try:
                result, secs = fut.result()
            except RegionSkipped as exc:
                out.regions_skipped[region] = scrub(exc, options.gcp_api_key)
                emit("region", name, region=region, status="skipped", message=out.regions_skipped[region])
                continue
            except Exception as exc:  # one region failed after the adapter's retries: keep its previous rows
                out.regions_failed[region] = scrub(_deadline_first(f"{type(exc).__name__}: {exc}", exc, options),
                                                   options.gcp_api_key)
                if isinstance(exc, MissingCredentials) and creds_error is None:
                    creds_error = out.regions_failed[region]
                emit("region", name, region=region, status="failed", message=out.regions_failed[region])
                continue
            if result.offers.empty:
                # an answer with no usable GPU offer for a region that had some is suspicious: keep the old rows
                prev = previous_rows(name)
                if (prev["region"] == region).any():
                    out.regions_failed[region] = (f"the API returned no usable GPU offer for {region} "
                                                  f"({len(getattr(result, 'skipped', []))} rows skipped)")
                    emit("region", name, region=region, status="failed", message=out.regions_failed[region])
                    continue
            frames.append(result.offers)
            skipped.extend(result.skipped)
            out.notes.extend(f"{region}: {n}" for n in getattr(result, "notes", [])[:5])
            out.regions_done.append(region)
            out.rows_by_region[region] = int(len(result.offers))
            emit("region", name, region=region, status="done", rows=len(result.offers))
    out.regions_done.sort()
    if not out.regions_done:
        out.error = ((creds_error + "; ") if creds_error else "") + \
            ((deadline_note(options) + "; ") if deadline_passed(options) else "") + \
            "no region could be refreshed; the previous prices stay in use"
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
    from pricing_cache.cache import skipped_counts

    rows_skipped = skipped_rows(skipped, name)
    out.rows_skipped = len(rows_skipped)
    out.skipped_by_reason = skipped_counts(rows_skipped)
    if rows_skipped:
        out.notes.append(f"{len(rows_skipped)} price rows not used, by reason: "
                         + ", ".join(f"{k} {v}" for k, v in out.skipped_by_reason.items())
                         + " (listed in the snapshot's skipped list)")
    try:
        snap, merged, counts = merge_and_write(
            name, new, out.regions_done, as_of=as_of,
            regions_meta={"failed": out.regions_failed, "skipped": out.regions_skipped},
            source=f"gpuopt prices refresh ({name})", skipped=rows_skipped)
        out.kept_previous = counts.kept_regions
        out.offers_added, out.offers_changed, out.offers_removed = counts.added, counts.changed, counts.removed
    except (PriceDataError, SnapshotError) as exc:  # a snapshot not written (disk full): kept previous, exit 3
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
        options: FetchOptions (regions, profile, API keys, timeouts, retries, page caps, ``deadline_s``: the whole
            refresh's deadline in seconds, counted from this call; a copy with ``started_at`` set is what the
            adapters get).
        max_workers: regions fetched concurrently per provider.
        adapters: name -> adapter module (tests inject fakes).
        on_event: progress callback: on_event(kind, provider, **details) with kind in start, region, end,
            provider_failed.
    Returns: RefreshSummary. Raises: InputError for an unknown provider; SnapshotError if the lock cannot be
        taken (another refresh is still running after ``lock_timeout_s``).
    """
    import datetime as dt

    from filelock import Timeout

    from gpuopt.kernel.errors import SnapshotError
    from pricing_cache import cache

    import dataclasses

    options = options or FetchOptions()
    if options.deadline_s is not None and options.started_at is None:
        options = dataclasses.replace(options, started_at=time.monotonic())
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
