"""Reader for a user's own offers CSV (any other cloud, on-prem rates, negotiated prices): ``--catalog FILE``.

The file has a header line with column names from ``gpuopt.records.OFFER_COLUMNS``. Required columns:
``provider, region, instance_type, gpu_model, gpu_count, gpu_memory_gib, pricing, usd_per_hour``. Optional columns
and their defaults when absent or empty:

=========================  ===========================================================================
zone                       "" (region-level offer)
vcpus, memory_gib          empty (unknown)
interconnect               ``pcie`` (never assume NVLink)
fabric                     from the documented facts (``providers.facts.fabric_of``): the known clouds' instance
                           types get theirs, a provider of your own gets "" (unknown: no multi-node training).
                           Name it (one of ``FABRICS``: efa, infiniband, rdma, tcpxo, tcpx, ethernet) for your
                           own cluster; its bandwidth is then the fabric's documented default
zone_kind                  from the zone (``providers.facts.zone_kind_of``): "", local_zone or wavelength
payment                    "" for on_demand/spot; REQUIRED for reserved_1y/reserved_3y
term_hours                 0, or 8,760 / 26,280 for reserved_1y / reserved_3y (a given value must match)
upfront_usd,               on_demand/spot: 0 and usd_per_hour. Reserved: no_upfront -> 0 and usd_per_hour;
recurring_usd_per_hour     all_upfront -> usd_per_hour x term_hours and 0; partial_upfront -> give one of the
                           two, the other is derived from usd_per_hour = recurring + upfront / term_hours
currency                   ``USD``
source                     ``user:<file name>``
as_of                      ``unknown``
=========================  ===========================================================================

Validation (each error is ``InputError("catalog", "line N: ...", accepted=...)``, line 1 = header): unknown
columns; an empty or non-numeric or non-positive ``usd_per_hour`` (a missing price is unknown, never 0);
``gpu_count`` and ``gpu_memory_gib`` > 0 (``gpu_count`` may be fractional); ``pricing`` in PRICING_MODELS;
``payment`` in PAYMENT_OPTIONS for reserved rows and empty otherwise; ``fabric`` in FABRICS and ``zone_kind`` in
ZONE_KINDS when given; a ``gpu_model`` that is neither canonical nor
mappable by ``providers.gpu_names.canonical_gpu``; mixed currencies or any currency other than USD (every price in
gpuopt is compared in USD; convert first, with a dated FX rate); duplicate offer keys (provider, region, zone,
instance_type, pricing, payment).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.errors import InputError
from gpuopt.records import (CANONICAL_GPUS, FABRICS, INTERCONNECTS, OFFER_COLUMNS, PAYMENT_OPTIONS, PRICING_MODELS,
                             TERM_HOURS, ZONE_KINDS)
from providers._common import OFFER_KEY, offers_frame
from providers.gpu_names import canonical_gpu

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

FORMATS = ("offers",)
REQUIRED_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "gpu_model", "gpu_count",
                                     "gpu_memory_gib", "pricing", "usd_per_hour")


def _err(line: int, msg: str, accepted: str | None = None) -> InputError:
    return InputError("catalog", f"line {line}: {msg}", accepted=accepted)


def _num(line: int, col: str, value: str, *, required: bool, positive: bool = False,
         nonneg: bool = False) -> float | None:
    s = (value or "").strip()
    if not s:
        if required:
            extra = " (a missing price is unknown, never 0)" if col == "usd_per_hour" else ""
            raise _err(line, f"{col} is empty{extra}")
        return None
    try:
        f = float(s)
    except ValueError:
        raise _err(line, f"{col} '{s}' is not a number") from None
    if math.isnan(f) or math.isinf(f):
        raise _err(line, f"{col} '{s}' is not a finite number")
    if positive and f <= 0:
        raise _err(line, f"{col} must be > 0, got {s}")
    if nonneg and f < 0:
        raise _err(line, f"{col} must be >= 0, got {s}")
    return f


def parse_offers_csv(text: str, name: str = "<text>") -> "pd.DataFrame":
    """Validate and normalize offers CSV text (see the module docstring); returns OFFER_COLUMNS / OFFER_DTYPES."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise _err(1, "the file is empty (expected a header line)", accepted=", ".join(OFFER_COLUMNS)) from None
    unknown = [h for h in header if h not in OFFER_COLUMNS]
    if unknown:
        raise _err(1, f"unknown column(s) {', '.join(unknown)}", accepted=", ".join(OFFER_COLUMNS))
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise _err(1, f"missing required column(s) {', '.join(missing)}", accepted=", ".join(OFFER_COLUMNS))
    dup_cols = sorted({h for h in header if header.count(h) > 1})
    if dup_cols:
        raise _err(1, f"column(s) given twice: {', '.join(dup_cols)}")
    rows: list[dict[str, Any]] = []
    seen: dict[tuple, int] = {}
    currencies: dict[str, int] = {}
    for rec in reader:
        line = reader.line_num
        if not any(x.strip() for x in rec):
            continue
        if len(rec) != len(header):
            raise _err(line, f"{len(rec)} fields, the header has {len(header)}")
        f = {h: v.strip() for h, v in zip(header, rec)}
        g = lambda c: f.get(c, "")  # noqa: E731
        for c in ("provider", "region", "instance_type", "gpu_model", "pricing"):
            if not g(c):
                raise _err(line, f"{c} is empty")
        pricing = g("pricing")
        if pricing not in PRICING_MODELS:
            raise _err(line, f"pricing '{pricing}' is not known", accepted=", ".join(PRICING_MODELS))
        price = _num(line, "usd_per_hour", g("usd_per_hour"), required=True, positive=True)
        gpu_count = _num(line, "gpu_count", g("gpu_count"), required=True, positive=True)
        gpu_mem = _num(line, "gpu_memory_gib", g("gpu_memory_gib"), required=True, positive=True)
        raw_gpu = g("gpu_model")
        gpu = raw_gpu if raw_gpu in CANONICAL_GPUS else canonical_gpu(raw_gpu, memory_mib=gpu_mem * 1024)
        if gpu is None:
            raise _err(line, f"gpu_model '{raw_gpu}' is not a known GPU", accepted=", ".join(CANONICAL_GPUS))
        currency = (g("currency") or "USD").upper()
        currencies.setdefault(currency, line)
        if len(currencies) > 1:
            shown = ", ".join(f"{c} (first on line {n})" for c, n in currencies.items())
            raise _err(line, f"mixed currencies in one file: {shown}; gpuopt never adds prices of different "
                             "currencies. Convert to USD with a dated FX rate first", accepted="USD")
        if currency != "USD":
            raise _err(line, f"currency {currency}: prices must be in USD (convert with a dated FX rate and say so "
                             "in source)", accepted="USD")
        payment = g("payment")
        term_given = _num(line, "term_hours", g("term_hours"), required=False, nonneg=True)
        upfront = _num(line, "upfront_usd", g("upfront_usd"), required=False, nonneg=True)
        recurring = _num(line, "recurring_usd_per_hour", g("recurring_usd_per_hour"), required=False, nonneg=True)
        if pricing in TERM_HOURS:
            if payment not in PAYMENT_OPTIONS:
                raise _err(line, f"payment '{payment}' for a {pricing} row", accepted=", ".join(PAYMENT_OPTIONS))
            term = TERM_HOURS[pricing]
            if term_given is not None and abs(term_given - term) > 1e-9:
                raise _err(line, f"term_hours {term_given:g} does not match {pricing} ({term:g})")
            if payment == "no_upfront":
                upfront = 0.0 if upfront is None else upfront
                recurring = price if recurring is None else recurring
            elif payment == "all_upfront":
                upfront = price * term if upfront is None else upfront
                recurring = 0.0 if recurring is None else recurring
            else:
                if upfront is None and recurring is None:
                    raise _err(line, "partial_upfront needs upfront_usd or recurring_usd_per_hour")
                if upfront is None:
                    upfront = (price - recurring) * term
                if recurring is None:
                    recurring = price - upfront / term
                if upfront < -0.01 or recurring < -1e-6:
                    raise _err(line, "upfront_usd and recurring_usd_per_hour do not fit usd_per_hour")
                upfront, recurring = max(upfront, 0.0), max(recurring, 0.0)  # cents rounding of the fee
            if abs(recurring + upfront / term - price) > max(1e-6, 1e-6 * price):
                raise _err(line, f"usd_per_hour {price:g} != recurring_usd_per_hour {recurring:g} + upfront_usd "
                                 f"{upfront:g} / term_hours {term:g}")
        else:
            if payment:
                raise _err(line, f"payment '{payment}' given for a {pricing} row (payment is for reserved rows only)")
            if term_given not in (None, 0.0):
                raise _err(line, f"term_hours {term_given:g} given for a {pricing} row")
            if (upfront or 0.0) != 0.0:
                raise _err(line, f"upfront_usd given for a {pricing} row")
            if recurring is not None and abs(recurring - price) > 1e-9:
                raise _err(line, "recurring_usd_per_hour differs from usd_per_hour for a non-reserved row")
            term, upfront, recurring = 0.0, 0.0, price
        interconnect = g("interconnect") or "pcie"
        if interconnect not in INTERCONNECTS:
            raise _err(line, f"interconnect '{interconnect}'", accepted=", ".join(INTERCONNECTS))
        fabric = g("fabric").lower()
        if fabric and fabric not in FABRICS:
            raise _err(line, f"fabric '{g('fabric')}' is not known (leave it empty to take it from the documented "
                             "facts)", accepted=", ".join(FABRICS))
        zone_kind = g("zone_kind").lower()
        if zone_kind and zone_kind not in ZONE_KINDS:
            raise _err(line, f"zone_kind '{g('zone_kind')}' is not known (leave it empty for a normal zone)",
                       accepted=", ".join(k for k in ZONE_KINDS if k))
        row = {"provider": g("provider").lower(), "region": g("region"), "zone": g("zone"),
               "instance_type": g("instance_type"), "gpu_model": gpu, "gpu_count": gpu_count,
               "gpu_memory_gib": gpu_mem,
               "vcpus": _num(line, "vcpus", g("vcpus"), required=False, positive=True),
               "memory_gib": _num(line, "memory_gib", g("memory_gib"), required=False, positive=True),
               "interconnect": interconnect, "fabric": fabric, "zone_kind": zone_kind, "pricing": pricing,
               "payment": payment, "upfront_usd": upfront,
               "recurring_usd_per_hour": recurring, "usd_per_hour": price, "term_hours": term,
               "currency": currency, "source": g("source") or f"user:{name}", "as_of": g("as_of") or "unknown"}
        for c in ("vcpus", "memory_gib"):
            if row[c] is None:
                row[c] = float("nan")
        key = tuple(row[c] for c in OFFER_KEY)
        if key in seen:
            raise _err(line, f"duplicate offer {'/'.join(str(k) for k in key if k)} (same key as line {seen[key]})",
                       accepted="one row per " + ", ".join(OFFER_KEY))
        seen[key] = line
        rows.append(row)
    if not rows:
        raise _err(2, "no offer rows after the header")
    _check_reserved_below_on_demand(rows, seen)
    return offers_frame(rows)


def _check_reserved_below_on_demand(rows: list[dict[str, Any]], lines: dict) -> None:
    """A reserved effective rate above the on-demand rate of the same instance type and region is a price read
    in the wrong unit (PRICE_FAULTS BUG-01: a reservation quoted as a total for the term, read as hourly), never a
    real offer; a spot rate not below on-demand is a placeholder (as in the SkyPilot catalogs): refuse both,
    naming the line."""
    od = {(r["provider"], r["region"], r["instance_type"]): r["usd_per_hour"] for r in rows if r["pricing"] == "on_demand"}
    for r in rows:
        if r["pricing"] == "spot":
            base = od.get((r["provider"], r["region"], r["instance_type"]))
            if base is not None and r["usd_per_hour"] >= base:
                line = lines[tuple(r[c] for c in OFFER_KEY)]
                raise _err(line, f"spot usd_per_hour {r['usd_per_hour']:g} is not below the on-demand rate {base:g} of "
                                 f"{r['instance_type']} in {r['region']} (a placeholder, not a spot price)")
            continue
        if r["pricing"] not in TERM_HOURS:
            continue
        base = od.get((r["provider"], r["region"], r["instance_type"]))
        if base is not None and r["usd_per_hour"] > base * (1 + 1e-9):
            line = lines[tuple(r[c] for c in OFFER_KEY)]
            raise _err(line, f"{r['pricing']} usd_per_hour {r['usd_per_hour']:g} is above the on-demand rate {base:g} of "
                             f"{r['instance_type']} in {r['region']}: is it the total for the term? usd_per_hour is the "
                             "effective hourly rate (term total / term_hours)")


def read_offers_csv(path: "str | Path") -> "pd.DataFrame":
    """Read and validate a user offers CSV file (see the module docstring).

    Raises:
        InputError: field ``catalog``; the message names the line and the problem.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("catalog", f"no such file: {p}")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError("catalog", f"{p.name} is not UTF-8 text ({e.reason})") from None
    return parse_offers_csv(text, p.name)
