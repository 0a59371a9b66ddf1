"""Spot interruption per provider, region and instance type (issue 26, point 3): the shipped extract of the AWS
Spot Instance Advisor, a refresh of it into the user cache, and the look-up the planner uses.

Data, newest first:

1. the newest good refresh in the user cache (``<cache>/spot/aws/<stamp>.json``, the Advisor's JSON as served,
   with its ``<stamp>.meta.json``: url, fetched_at, as_of, sha256), written by :func:`refresh_spot_advisor`;
2. the shipped extract ``pricing_cache/data/spot_interruption.csv`` (:data:`EXTRACT_COLUMNS`; GPU types, Linux;
   its source and date in ``pricing_cache/data/SPOT_INTERRUPTION.md`` and in every row).

No Azure data is shipped: no public copy of Azure's Spot eviction rates (Resource Graph ``SpotResources``, type
``microsoft.compute/skuspotevictionrate/location``; it needs an Azure login) was found. Azure, GCP and every type
or region without an entry get the default (:data:`DEFAULT_MONTHLY_INTERRUPTION_FRACTION`), said so in the source.

**The rule from bucket to number** (:func:`bucket_fraction`): the Advisor gives a range of the share of Spot
capacity reclaimed in the trailing month. A closed bucket counts as its midpoint (<5 % -> 0.025, 5-10 % -> 0.075,
10-15 % -> 0.125, 15-20 % -> 0.175): the middle of the range is the estimate with the smallest worst-case error
when nothing else is known of the distribution. The open bucket ">20 %" counts as its lower bound, 0.20, the only
value the data supports; the source says "at least", as the true rate can be far higher. Per instance-hour:
``-ln(1 - f) / 730 h``, the conversion of ``optimizer.sizing.goodput`` (constant hazard; the monthly fraction read
as the chance that an instance running the whole month is reclaimed).

The refresh follows the price refresh (pricing_cache.refresh): it holds the cache's lock, writes atomically (temp
file, fsync, rename) and never replaces good data with bad: a failed download, an answer that is not the
Advisor's JSON or whose buckets changed keeps the previous data, and the outcome says why.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import logging
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuopt.kernel.errors import GpuoptError, PriceDataError
from pricing_cache.paths import cache_dir
from providers.spot_advisor import ADVISOR_URL, BUCKETS, SpotRisk, fetch_advisor, parse_advisor

log = logging.getLogger(__name__)

#: The shipped extract (GPU instance types, Linux), built by :func:`build_extract` from a dated copy of the Advisor's
#: JSON (pricing_cache/data/SPOT_INTERRUPTION.md).
SHIPPED_EXTRACT = Path(__file__).parent / "data" / "spot_interruption.csv"
#: Columns of the extract, in order. low_pct/high_pct: % of Spot capacity reclaimed in the trailing month; high_pct
#: empty for the open ">20%" bucket.
EXTRACT_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "os", "bucket", "low_pct", "high_pct",
                                    "as_of", "source")
#: Monthly fraction used when no entry is known: 0.20, the same value as
#: ``optimizer.sizing.goodput.SPOT_MONTHLY_INTERRUPTION_FRACTION`` (the upper edge of the worst closed bucket,
#: 15-20 %; that module is a layer above this one, tests/test_spot_risk.py checks they agree).
DEFAULT_MONTHLY_INTERRUPTION_FRACTION = 0.20
#: Hours in an average month (8760 / 12), as optimizer.sizing.goodput.HOURS_PER_MONTH.
HOURS_PER_MONTH = 8760 / 12
#: Refreshes kept in the cache per provider (the newest good one is used; older ones are the fallback when the
#: newest is damaged).
KEEP_REFRESHES = 3
#: A refreshed Advisor file must hold at least this many Linux entries (the 2025-06-28 copy has 14,962 in 33
#: regions): a truncated or emptied answer is refused, not written.
MIN_ENTRIES = 1000


def bucket_fraction(bucket: int) -> float:
    """The monthly interruption fraction a bucket counts as: the midpoint of a closed bucket, the lower bound (0.20)
    of the open ">20%" one (module docstring). Raises KeyError for an index other than 0..4."""
    _, low, high = BUCKETS[bucket]
    return (low if high is None else (low + high) / 2.0) / 100.0


def per_instance_hour(monthly_fraction: float) -> float:
    """Reclaims per instance-hour from a monthly fraction: ``-ln(1 - f) / 730`` (optimizer.sizing.goodput's
    conversion); 0 <= f < 1."""
    if not 0.0 <= monthly_fraction < 1.0:
        raise ValueError(f"monthly fraction must be in [0, 1), got {monthly_fraction!r}")
    return -math.log(1.0 - monthly_fraction) / HOURS_PER_MONTH


# ------------------------------------------------------------------------------------------------- the extract


def extract_csv_bytes(rows: list[SpotRisk]) -> bytes:
    """Rows as the extract's CSV (EXTRACT_COLUMNS, sorted by provider, region, type, OS; ``\\n`` line ends)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EXTRACT_COLUMNS)
    for r in sorted(rows, key=lambda x: (x.provider, x.region, x.instance_type, x.os)):
        w.writerow([r.provider, r.region, r.instance_type, r.os, r.bucket, f"{r.low_pct:g}",
                    "" if r.high_pct is None else f"{r.high_pct:g}", r.as_of, r.source])
    return buf.getvalue().encode("utf-8")


def build_extract(payload: bytes, *, as_of: str, source: str) -> bytes:
    """The shipped extract from an Advisor JSON: its GPU types (providers.spot_advisor.GPU_FAMILY), Linux."""
    return extract_csv_bytes(parse_advisor(payload, as_of=as_of, source=source, gpu_only=True))


def read_extract(path: Path = SHIPPED_EXTRACT) -> list[SpotRisk]:
    """The rows of an extract CSV. A malformed row (unknown bucket, bounds that disagree with its bucket, missing
    field) is skipped and logged with its line number, never guessed.

    Raises:
        PriceDataError: the file is missing or its header is not EXTRACT_COLUMNS.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise PriceDataError(f"spot interruption extract {path}: {e.strerror or e}") from None
    reader = csv.reader(io.StringIO(text))
    header = tuple(next(reader, ()))
    if header != EXTRACT_COLUMNS:
        raise PriceDataError(f"spot interruption extract {path}: header {header} is not {EXTRACT_COLUMNS}")
    rows = []
    for line, rec in enumerate(reader, start=2):
        row = dict(zip(EXTRACT_COLUMNS, rec))
        try:
            bucket = int(row["bucket"])
            _, low, high = BUCKETS[bucket]
            ok = (len(rec) == len(EXTRACT_COLUMNS) and float(row["low_pct"]) == low
                  and (row["high_pct"] == "" if high is None else float(row["high_pct"]) == high)
                  and all(row[k] for k in ("provider", "region", "instance_type", "os", "as_of", "source")))
        except (KeyError, ValueError):
            ok = False
        if not ok:
            log.warning("spot interruption extract %s line %d skipped: %r", path, line, rec)
            continue
        rows.append(SpotRisk(row["provider"], row["region"], row["instance_type"], row["os"], bucket, low, high,
                             row["as_of"], row["source"]))
    return rows


# ---------------------------------------------------------------------------------------------------- the cache


def _spot_dir(provider: str = "aws") -> Path:
    return cache_dir() / "spot" / provider


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CachedAdvisor:
    """One refresh in the cache: the payload's path, its metadata (url, fetched_at, as_of, sha256, entries)."""

    path: Path
    meta: dict


def cached_refreshes(provider: str = "aws") -> list[CachedAdvisor]:
    """The good refreshes in the cache, newest first: a payload whose ``.meta.json`` exists, reads and whose sha256
    matches (an interrupted or damaged write is not a refresh)."""
    d = _spot_dir(provider)
    out = []
    for meta_path in sorted(d.glob("*.meta.json"), reverse=True):
        path = meta_path.with_name(meta_path.name[: -len(".meta.json")] + ".json")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            good = isinstance(meta, dict) and meta.get("sha256") == _sha256(path.read_bytes())
        except (OSError, ValueError):
            good = False
        if good:
            out.append(CachedAdvisor(path, meta))
        else:
            log.warning("spot advisor refresh %s is damaged or incomplete: skipped", path)
    return out


def _last_modified_day(value: str | None, fallback: dt.date) -> str:
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(value).date().isoformat() if value else fallback.isoformat()
    except (TypeError, ValueError):
        return fallback.isoformat()


@dataclass
class SpotRefreshOutcome:
    """What a refresh of the Advisor did.

    status: "refreshed" (a new file is current) or "failed" (nothing written: the previous data stays current).
    path: the file written; as_of: the date its data held (HTTP Last-Modified, else the day fetched); entries: its
    Linux entries (all types); error: why it failed; kept: what stays current after a failure.
    """

    status: str = "failed"
    path: str | None = None
    as_of: str | None = None
    entries: int = 0
    error: str | None = None
    kept: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "refreshed"


def refresh_spot_advisor(options: Any = None, *, now: dt.datetime | None = None,
                         min_entries: int = MIN_ENTRIES) -> SpotRefreshOutcome:
    """Download the Advisor's JSON (providers.spot_advisor.ADVISOR_URL) into the user cache, atomically, under the
    cache's write lock. The answer is parsed before anything is written: a network or HTTP error, a body that is
    not the Advisor's JSON, changed bucket labels or fewer than :data:`MIN_ENTRIES` entries fail the refresh and
    keep the previous data (the newest good refresh, else the shipped extract). Keeps the newest
    :data:`KEEP_REFRESHES` refreshes.

    Args:
        options: providers.base.FetchOptions (timeouts, retries, ``endpoints["aws_spot_advisor"]``).
        now: the time of the refresh (UTC; tests).
        min_entries: fewest Linux entries an answer must hold to be written (tests lower it for an excerpt).
    Returns:
        A :class:`SpotRefreshOutcome` (it does not raise for a failed download).
    Raises:
        SnapshotError: the cache folder cannot be written (before anything is fetched).
    """
    import requests

    from pricing_cache import cache

    t0 = time.monotonic()
    now = now or dt.datetime.now(dt.timezone.utc)
    out = SpotRefreshOutcome()
    with cache.lock():
        try:
            body, last_modified = fetch_advisor(options)
            as_of = _last_modified_day(last_modified, now.date())
            rows = parse_advisor(body, as_of=as_of, source=ADVISOR_URL)
            if len(rows) < min_entries:
                raise PriceDataError(f"spot advisor: {len(rows)} Linux entries, fewer than {min_entries}: "
                                     "a truncated answer is not written")
        except (requests.RequestException, GpuoptError) as e:
            prev = cached_refreshes()
            out.error = f"{type(e).__name__}: {e}"
            out.kept = (f"previous refresh {prev[0].path.name} (as_of {prev[0].meta.get('as_of')})" if prev
                        else f"shipped extract {SHIPPED_EXTRACT.name}")
            out.seconds = time.monotonic() - t0
            return out
        d = _spot_dir()
        stamp = now.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        path = d / f"{stamp}.json"
        meta = {"provider": "aws", "url": (getattr(options, "endpoints", None) or {}).get("aws_spot_advisor",
                                                                                            ADVISOR_URL),
                "fetched_at": now.isoformat(), "last_modified": last_modified, "as_of": as_of,
                "sha256": _sha256(body), "entries": len(rows)}
        cache.atomic_write_bytes(path, body, "the spot interruption data")
        cache.atomic_write_bytes(d / f"{stamp}.meta.json", json.dumps(meta, indent=1).encode("utf-8"),
                                 "the spot interruption data")  # last
        for old in cached_refreshes()[KEEP_REFRESHES:]:
            for p in (old.path, old.path.with_name(old.path.stem + ".meta.json")):
                p.unlink(missing_ok=True)
        out.status, out.path, out.as_of, out.entries = "refreshed", str(path), as_of, len(rows)
        out.seconds = time.monotonic() - t0
        return out


def refresh_azure_eviction(subscription_id: str, regions: list[str], credential: Any, *, options: Any = None,
                           sizes: list[str] | None = None, now: dt.datetime | None = None) -> SpotRefreshOutcome:
    """Read Azure's Spot eviction rates of ``regions`` (Resource Graph, providers.azure_spot) with ``credential``
    into the user cache (``spot/azure``), atomically, under the cache's write lock; training plans then use each
    VM size's rate. A failed read, or an answer that holds no rate, writes nothing and keeps the previous one.

    Args:
        subscription_id: the subscription the query runs in (any: the rates are Azure's, not the subscription's).
        regions: programmatic region names (eastus).
        credential: an azure-identity credential or a bearer token.
        options: providers.base.FetchOptions (``endpoints["azure_management"]`` for tests).
        sizes: the VM size names of the price data, to spell the rows as it does.
        now: the time of the refresh (UTC; tests).
    Returns: a :class:`SpotRefreshOutcome` (it does not raise for a failed read).
    Raises: SnapshotError: the cache folder cannot be written."""
    from pricing_cache import cache
    from providers.azure_spot import fetch_eviction_rows, parse_eviction_rows

    t0 = time.monotonic()
    now = now or dt.datetime.now(dt.timezone.utc)
    out = SpotRefreshOutcome()
    with cache.lock():
        try:
            rows = fetch_eviction_rows(subscription_id, regions, credential, options=options)
            parsed = parse_eviction_rows(rows, as_of=now.date().isoformat(), source="Azure Resource Graph",
                                         sizes=sizes or ())
            if not parsed:
                raise PriceDataError(f"azure eviction rates: no GPU size's rate in {', '.join(regions)}")
        except GpuoptError as e:
            prev = cached_refreshes("azure")
            out.error = f"{type(e).__name__}: {e}"
            out.kept = (f"previous refresh {prev[0].path.name} (as_of {prev[0].meta.get('as_of')})" if prev
                        else "none: Azure spot keeps the default rate")
            out.seconds = time.monotonic() - t0
            return out
        body = json.dumps(rows, sort_keys=True).encode("utf-8")
        d = _spot_dir("azure")
        stamp = now.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        path = d / f"{stamp}.json"
        meta = {"provider": "azure", "regions": sorted(regions), "fetched_at": now.isoformat(),
                "as_of": now.date().isoformat(), "sha256": _sha256(body), "entries": len(parsed)}
        cache.atomic_write_bytes(path, body, "the spot interruption data")
        cache.atomic_write_bytes(d / f"{stamp}.meta.json", json.dumps(meta, indent=1).encode("utf-8"),
                                 "the spot interruption data")  # last
        for old in cached_refreshes("azure")[KEEP_REFRESHES:]:
            for p in (old.path, old.path.with_name(old.path.stem + ".meta.json")):
                p.unlink(missing_ok=True)
        out.status, out.path, out.as_of, out.entries = "refreshed", str(path), meta["as_of"], len(parsed)
        out.seconds = time.monotonic() - t0
        return out


# ---------------------------------------------------------------------------------------------------- the look-up


@dataclass(frozen=True)
class SpotRiskTable:
    """Interruption buckets by (provider, region, instance_type, os), and where they came from."""

    entries: dict[tuple[str, str, str, str], SpotRisk]
    origin: str

    def get(self, provider: str, region: str, instance_type: str, os: str = "Linux") -> SpotRisk | None:
        p = provider.lower()
        if p == "azure":  # Azure writes sizes in any case (Resource Graph: lower case; the price data: Standard_...)
            return self.entries.get((p, region.lower(), instance_type.lower(), os))
        return self.entries.get((p, region, instance_type, os))


@lru_cache(maxsize=8)
def _table_from(path: str, mtime_ns: int, size: int, kind: str, as_of: str) -> SpotRiskTable:
    if kind == "azure":
        from providers.azure_spot import parse_eviction_rows

        rows = parse_eviction_rows(json.loads(Path(path).read_bytes()), as_of=as_of,
                                   source=f"Azure Resource Graph SpotResources eviction rates fetched into {path}")
        return SpotRiskTable({(r.provider, r.region.lower(), r.instance_type.lower(), r.os): r for r in rows},
                             f"refresh {Path(path).name} (as_of {as_of})")
    if kind == "refresh":
        src = f"{ADVISOR_URL} fetched into {path}"
        rows = parse_advisor(Path(path).read_bytes(), as_of=as_of, source=src)
        origin = f"refresh {Path(path).name} (as_of {as_of})"
    else:
        rows = read_extract(Path(path))
        origin = f"shipped extract {Path(path).name}"
    return SpotRiskTable({(r.provider, r.region, r.instance_type, r.os): r for r in rows}, origin)


def load_table(*, use_cache: bool = True) -> SpotRiskTable:
    """The current table: AWS from the newest good refresh in the cache (``use_cache``), else the shipped extract;
    Azure from the newest good eviction-rate refresh (:func:`refresh_azure_eviction`), if any. Read once per file
    version (memoized on path, mtime and size)."""
    aws = _aws_table(use_cache=use_cache)
    if not use_cache:
        return aws
    for ref in cached_refreshes("azure"):
        st = ref.path.stat()
        try:
            az = _table_from(str(ref.path), st.st_mtime_ns, st.st_size, "azure", str(ref.meta.get("as_of")))
        except GpuoptError as e:
            log.warning("azure eviction refresh %s unreadable (%s): skipped", ref.path, e)
            continue
        return SpotRiskTable({**aws.entries, **az.entries}, f"{aws.origin}; azure {az.origin}")
    return aws


def _aws_table(*, use_cache: bool = True) -> SpotRiskTable:
    if use_cache:
        for ref in cached_refreshes():
            st = ref.path.stat()
            try:
                return _table_from(str(ref.path), st.st_mtime_ns, st.st_size, "refresh", str(ref.meta.get("as_of")))
            except GpuoptError as e:
                log.warning("spot advisor refresh %s unreadable (%s): skipped", ref.path, e)
    st = SHIPPED_EXTRACT.stat()
    return _table_from(str(SHIPPED_EXTRACT), st.st_mtime_ns, st.st_size, "shipped", "")


def monthly_interruption(provider: str, region: str, instance_type: str, *, os: str = "Linux",
                         table: SpotRiskTable | None = None) -> tuple[float, str]:
    """The share of Spot capacity of ``instance_type`` in ``region`` reclaimed per month, and its source.

    Args:
        provider: "aws" (the only provider with data); any other gets the default.
        region: the provider's region code ("us-east-1").
        instance_type: "p5.48xlarge".
        os: the Advisor's OS key ("Linux", "Windows"; the shipped extract has Linux only).
        table: the table to read (default :func:`load_table`).
    Returns:
        (fraction 0..1, source). With an entry: the bucket's midpoint, or 0.20 for ">20%" ("at least"; module
        docstring), the source naming bucket, date and origin. Without: (0.20, "default: ...").
    """
    table = table or load_table()
    e = table.get(provider, region, instance_type, os)
    if e is None:
        why = ("no Azure eviction rate in hand (`gpuopt prices refresh-spot --provider azure` reads them with "
               "your credentials)" if provider.lower() == "azure"
               else f"no {provider} interruption data" if provider.lower() != "aws"
               else f"no Spot Instance Advisor entry in {table.origin}")
        return DEFAULT_MONTHLY_INTERRUPTION_FRACTION, (
            f"default: {DEFAULT_MONTHLY_INTERRUPTION_FRACTION:.2f} per month for {provider} {region} {instance_type} "
            f"({os}): {why}; upper edge of the Advisor's 15-20 % bucket (optimizer.sizing.goodput)")
    label = BUCKETS[e.bucket][0]
    f = bucket_fraction(e.bucket)
    rule = "lower bound of the open bucket: at least" if e.high_pct is None else "midpoint of the bucket"
    if e.provider == "azure":
        return f, (f"Azure Spot eviction rate {e.region} {e.instance_type}: {label} over the trailing 28 days "
                   f"-> {f:.3f} a month ({rule}); as_of {e.as_of}, {e.source}")
    return f, (f"AWS Spot Instance Advisor {e.region} {e.instance_type} {e.os}: {label} of capacity reclaimed in "
               f"the trailing month -> {f:.3f} ({rule}); as_of {e.as_of}, {e.source}")


def interruptions_per_instance_hour(provider: str, region: str, instance_type: str, *, os: str = "Linux",
                                    table: SpotRiskTable | None = None) -> tuple[float, str]:
    """Reclaims per instance-hour for ``training_goodput(spot_interruptions_per_instance_hour=...)``:
    ``-ln(1 - f) / 730`` of :func:`monthly_interruption` (its source, with the conversion appended)."""
    f, src = monthly_interruption(provider, region, instance_type, os=os, table=table)
    return per_instance_hour(f), f"{src}; per instance-hour -ln(1 - {f:.3f}) / 730 h (constant hazard)"


def main(argv: list[str] | None = None) -> int:
    """``python -m pricing_cache.spot_risk build PAYLOAD --as-of DATE --source TEXT [--out CSV]``: write the extract
    of an Advisor JSON (the shipped one: pricing_cache/data/SPOT_INTERRUPTION.md)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m pricing_cache.spot_risk")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the GPU/Linux extract of a spot-advisor-data.json")
    b.add_argument("payload", type=Path)
    b.add_argument("--as-of", required=True)
    b.add_argument("--source", required=True)
    b.add_argument("--out", type=Path, default=SHIPPED_EXTRACT)
    a = ap.parse_args(argv)
    dt.date.fromisoformat(a.as_of)
    a.out.write_bytes(build_extract(a.payload.read_bytes(), as_of=a.as_of, source=a.source))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
