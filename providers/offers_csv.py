"""Reader for a user's own offers CSV (any other cloud, on-prem rates, negotiated prices): ``--catalog FILE``.

The file has a header line with column names from ``gpuopt.kernel.records.OFFER_COLUMNS``. Required columns:
``provider, region, instance_type, gpu_model, gpu_count, gpu_memory_gib, pricing, usd_per_hour``. Optional columns
and their defaults when absent or empty:

=========================  ===========================================================================
zone                       "" (region-level offer)
vcpus, memory_gib          empty (unknown)
interconnect               the known clouds' instance types (aws, azure, gcp, lambda): from the documented facts
                           (``providers.skypilot.interconnect_for``: p4d/p5 NVLink, g5/g6 PCIe ...); any other
                           provider: ``pcie`` (never assume NVLink)
fabric                     from the documented facts (``providers.facts.fabric_of``): the known clouds' instance
                           types get theirs, a provider of your own gets "" (unknown: no multi-node training).
                           Name it (one of ``FABRICS``: efa, infiniband, rdma, tcpxo, tcpx, ethernet) for your
                           own cluster; its bandwidth is then the fabric's documented default
zone_kind                  from the zone (``providers.facts.zone_kind_of``): "", local_zone or wavelength
tier                       from the documented facts (``providers.facts.tier_of``): hyperscaler (aws, azure, gcp),
                           neocloud (lambda, coreweave, nebius, runpod ``...secure-cloud``), marketplace (vast,
                           runpod ``...community-cloud``); a provider of your own gets "" (unknown, shown as
                           ``unknown``; unknown is not marketplace). Name it (one of ``TIERS``) for your own
                           provider; for a provider the facts know, a given tier must be the documented one
                           (``providers.validate`` refuses the row otherwise: ``tier_not_documented``)
payment                    "" for on_demand/spot/capacity_block/flex_start; REQUIRED for reserved_1y/reserved_3y
offering_class             reserved rows: ``standard`` or ``convertible`` (AWS reserved instances); default
                           ``standard`` for AWS, "" for other providers; "" for every other pricing
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
``gpu_count`` and ``gpu_memory_gib`` > 0 (``gpu_count`` may be fractional); every number finite, and ``gpu_count``
at most 64, ``gpu_memory_gib`` at most 16,384 (``providers._input``: sentinels and overflow; an absurd finite price
is refused per row by providers.validate, ``bad_price``); ``pricing`` in PRICING_MODELS;
``payment`` in PAYMENT_OPTIONS for reserved rows and empty otherwise; ``fabric`` in FABRICS, ``zone_kind`` in
ZONE_KINDS and ``tier`` in TIERS when given; a ``gpu_model`` that is neither canonical nor
mappable by ``providers.gpu_names.canonical_gpu``; mixed currencies or any currency other than USD (every price in
gpuopt is compared in USD; convert first, with a dated FX rate); duplicate offer keys (provider, region, zone,
instance_type, pricing, payment).
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.inputs import date_error, parse_decimal
from gpuopt.kernel.records import (CANONICAL_GPUS, FABRICS, INTERCONNECTS, OFFER_COLUMNS, OFFER_DTYPES, PAYMENT_OPTIONS,
                             PRICING_MODELS, SAVINGS_PLAN_CLASSES, SAVINGS_PLAN_TERM_HOURS, TERM_HOURS, TIERS,
                             ZONE_KINDS, default_offering_class)

#: Offering classes of a reservation row (AWS reserved instances; "" for Azure and GCP's one kind).
RESERVATION_CLASSES: tuple[str, ...] = ("", "standard", "convertible")
_DATE = __import__("re").compile(r"\d{4}-\d{2}-\d{2}")
from providers._common import OFFER_KEY, offers_frame
from providers.gpu_names import canonical_gpu

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

FORMATS = ("offers",)
REQUIRED_COLUMNS: tuple[str, ...] = ("provider", "region", "instance_type", "gpu_model", "gpu_count",
                                     "gpu_memory_gib", "pricing", "usd_per_hour")



def _default_interconnect(provider: str, instance_type: str) -> str:
    """The interconnect of a row that names none: the documented facts for the known clouds' instance types
    (providers.skypilot.interconnect_for), ``pcie`` for any other provider (a fresh user's catalog without the
    column sized AWS p4d as PCIe: 601 -> 348 tokens/s a replica, the plan 46 % dearer)."""
    from providers.skypilot import interconnect_for

    p = str(provider or "").strip().lower()
    return interconnect_for(p, str(instance_type or "")) if p in ("aws", "azure", "gcp", "lambda") else "pcie"

def _err(line: int, msg: str, accepted: str | None = None) -> InputError:
    return InputError("catalog", f"line {line}: {msg}", accepted=accepted)


def _upper(col: str) -> float:
    """The upper bound of a numeric column other than the prices (providers._input: wide bounds that catch
    sentinels and the overflow of ``gpu_count x gpu_memory_gib`` to infinity). A finite price out of bounds is a
    row providers.validate refuses (``bad_price``, counted), not a file error."""
    from providers._input import MAX_GPU_COUNT, MAX_GPU_MEMORY_GIB

    return {"gpu_count": MAX_GPU_COUNT, "gpu_memory_gib": MAX_GPU_MEMORY_GIB, "term_hours": 26_280.0,
            "vcpus": 100_000.0, "memory_gib": 1_048_576.0}.get(col, math.inf)


def _num(line: int, col: str, value: str, *, required: bool, positive: bool = False,
         nonneg: bool = False) -> float | None:
    s = (value or "").strip()
    if not s:
        if required:
            extra = " (a missing price is unknown, never 0)" if col == "usd_per_hour" else ""
            raise _err(line, f"{col} is empty{extra}")
        return None
    try:
        f = parse_decimal(s)
    except ValueError:
        raise _err(line, f"{col} '{s}' is not a number", accepted="digits, a point, an exponent: 18.5, 1e3 "
                                                                  "(no _ between digits)") from None
    if math.isnan(f) or math.isinf(f):
        raise _err(line, f"{col} '{s}' is not a finite number")
    if positive and f <= 0:
        raise _err(line, f"{col} must be > 0, got {s}")
    if nonneg and f < 0:
        raise _err(line, f"{col} must be >= 0, got {s}")
    top = _upper(col)
    if f > top:
        raise _err(line, f"{col} {s} is above {top:g}, the most gpuopt believes (a sentinel or a unit fault?)")
    return f


def parse_offers_csv(text: str, name: str = "<text>") -> "pd.DataFrame":
    """Validate and normalize offers CSV text (see the module docstring); returns OFFER_COLUMNS / OFFER_DTYPES."""
    first = text.find("\n")
    # the header alone when its line has no quote (a quoted header may span lines): copying a big file is costly
    from providers._input import CsvReader

    reader = CsvReader(text if first < 0 or '"' in text[:first] else text[:first + 1], name, field="catalog")
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
    fast = None if not COLUMNAR else _columnar_with_system_pool(text, header, name)
    if fast is not None:
        return fast
    reader = CsvReader(text, name, field="catalog")
    next(reader)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple, int] = {}
    currencies: dict[str, int] = {}
    for rec in reader:
        line = reader.line_num
        if not any(x.strip() for x in rec):
            continue
        if len(rec) != len(header):
            raise _err(line, f"{len(rec)} fields, the header has {len(header)}")
        try:
            rows.append(_row(line, header, rec, name, seen, currencies))
        except InputError as exc:  # the file named too, as the reader's own errors do (a breaker's 1_8.5 row)
            if exc.message.startswith(f"{name} "):
                raise
            raise InputError(exc.field, f"{name} {exc.message}", accepted=exc.accepted) from None
    if not rows:
        raise _err(2, "no offer rows after the header")
    _check_reserved_below_on_demand(rows, seen)
    return offers_frame(rows)


#: Read large files column by column (pyarrow + numpy) when they are clean; any row the columnar checks find at
#: fault, and any file they cannot vouch for line by line (blank lines, quoted line breaks, odd whitespace, a
#: number pyarrow does not parse), goes through the row-by-row reader, whose error names the line. Tests compare
#: the two (``tests/test_offers_csv_columnar.py``); set False to force the row-by-row reader.
COLUMNAR = True
#: Below this many data rows the row-by-row reader is as fast (and pyarrow is not imported).
COLUMNAR_MIN_ROWS = 2000

# characters Python's str.strip() removes that pyarrow's trim functions may not (or the reverse)
_ODD_SPACE = re.compile("[\x1c-\x1f\x85\u180e\u200b\ufeff]")


def _columnar_with_system_pool(text: str, header: list[str], name: str) -> "pd.DataFrame | None":
    """:func:`_parse_columnar` with Arrow's allocations from the system allocator (malloc) instead of its default
    pool (mimalloc here), restored after. Measured on the 500,000-row benchmark file in fresh processes (three runs
    each): 1.8-2.7 s instead of 3.6-3.8 s — the default pool's first touch of its fresh memory is most of the
    difference (a second read in the same process takes 1.5-1.7 s either way). Buffers keep the pool that made
    them, so the frame returned is unaffected."""
    if len(text) < 1_000_000:  # small files: no pyarrow (and no pool to switch)
        return _parse_columnar(text, header, name)
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        return _parse_columnar(text, header, name)
    finally:
        pa.set_memory_pool(previous)


def _parse_columnar(text: str, header: list[str], name: str) -> "pd.DataFrame | None":
    """The offers of a clean file, read a column at a time (pyarrow); None when the file has a row at fault or a
    shape the columnar reader does not vouch for (the caller then reads it row by row, which names the line).

    Equal to the row-by-row reader on every file it accepts (same values, dtypes and order): the row-by-row reader
    is the definition, this is its fast path. Line i of the data is row i - 2, which holds when the file has
    exactly one physical line per row (checked by counting them).
    """
    n_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if n_lines - 1 < COLUMNAR_MIN_ROWS or ("\r" in text and text.count("\r") != text.count("\r\n")):
        return None
    if "\x00" in text:  # keys below are joined with NUL: a NUL in a field could join two into one
        return None
    ascii_text = text.isascii()
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (text given in Python): the row-by-row reader says where
        return None
    if ascii_text:
        if any(ch in data for ch in (b"\x1c", b"\x1d", b"\x1e", b"\x1f")):
            return None
    elif _ODD_SPACE.search(text):
        return None
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    names = [f"c{i}" for i in range(len(header))]
    try:
        tbl = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(skip_rows=1, column_names=names),
            parse_options=pacsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in names},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    del data
    n = tbl.num_rows
    if n == 0 or n_lines != n + 1:  # blank lines, or a row over several lines: line numbers would not hold
        return None
    trim = pc.ascii_trim_whitespace if ascii_text else pc.utf8_trim_whitespace
    col = {h: trim(tbl.column(c).combine_chunks()) for h, c in zip(header, names)}
    none = pa.array(np.full(n, "", dtype=object), pa.string()) if len(col) < len(OFFER_COLUMNS) else None

    def s(c: str) -> "pa.Array":  # a trimmed string column, "" when absent
        return col[c] if c in col else none

    def mask(a) -> np.ndarray:
        return np.asarray(a.to_numpy(zero_copy_only=False), dtype=bool)

    def all_in(a, values) -> bool:
        return bool(pc.all(pc.is_in(a, value_set=pa.array(list(values), pa.string()))).as_py())

    def default(a, value: str):
        return pc.if_else(pc.equal(a, ""), pa.scalar(value, pa.string()), a)

    if any(mask(pc.equal(s(c), "")).any() for c in ("provider", "region", "instance_type", "gpu_model", "pricing")):
        return None  # an empty required field (or an all-empty row, which the row-by-row reader skips)

    def num(c: str):
        """(values with NaN where empty, empty mask) or None when a value is not a finite number."""
        if c not in col:
            return np.full(n, np.nan), np.ones(n, dtype=bool)
        a = col[c]
        isempty = pc.equal(a, "")
        try:
            f = pc.cast(pc.if_else(isempty, pa.scalar(None, pa.string()), a), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        v = np.asarray(f.to_numpy(zero_copy_only=False), dtype=float)
        e = mask(isempty)
        if not np.isfinite(v[~e]).all() or (v[~e] > _upper(c)).any():
            return None
        return v, e

    nums = {c: num(c) for c in ("usd_per_hour", "gpu_count", "gpu_memory_gib", "term_hours", "upfront_usd",
                                "recurring_usd_per_hour", "vcpus", "memory_gib")}
    if any(v is None for v in nums.values()):
        return None
    price, price_empty = nums["usd_per_hour"]
    gcount, gcount_empty = nums["gpu_count"]
    gmem, gmem_empty = nums["gpu_memory_gib"]
    if price_empty.any() or gcount_empty.any() or gmem_empty.any():
        return None
    if (price <= 0).any() or (gcount <= 0).any() or (gmem <= 0).any():
        return None
    for c in ("vcpus", "memory_gib"):
        v, e = nums[c]
        if (v[~e] <= 0).any():
            return None
    for c in ("term_hours", "upfront_usd", "recurring_usd_per_hour"):
        v, e = nums[c]
        if (v[~e] < 0).any():
            return None
    pricing = s("pricing")
    if not all_in(pricing, PRICING_MODELS):
        return None
    # the GPU: canonical as given, or mapped once per distinct (name, memory)
    gpu = s("gpu_model")
    odd = ~mask(pc.is_in(gpu, value_set=pa.array(list(CANONICAL_GPUS), pa.string())))
    if odd.any():
        raw = np.asarray(gpu.to_numpy(zero_copy_only=False), dtype=object)
        pairs = pd.DataFrame({"g": raw[odd], "m": gmem[odd]})
        codes, uniq = pd.factorize(pd.MultiIndex.from_frame(pairs))
        mapped = np.array([canonical_gpu(g, memory_mib=m * 1024) for g, m in uniq], dtype=object)
        if any(x is None for x in mapped):
            return None
        raw[odd] = mapped[codes]
        gpu = pa.array(raw, pa.string())
    # pyarrow's Unicode case mapping is not Python's (final sigma, dotted capital I, newer letters): the columns
    # that are lower- or upper-cased must be ASCII here
    if not ascii_text and not all(pc.all(pc.string_is_ascii(s(c))).as_py()
                                  for c in ("provider", "fabric", "zone_kind", "tier", "currency")):
        return None
    if not all_in(pc.utf8_upper(s("currency")), ("USD", "")):
        return None
    payment = s("payment")
    is_p = {p: mask(pc.equal(pricing, p)) for p in PRICING_MODELS}
    pay = {p: mask(pc.equal(payment, p)) for p in ("", ) + PAYMENT_OPTIONS}
    term_given, term_empty = nums["term_hours"]
    up_given, up_empty = nums["upfront_usd"]
    rec_given, rec_empty = nums["recurring_usd_per_hour"]
    reserved = is_p["reserved_1y"] | is_p["reserved_3y"]
    term = np.where(is_p["reserved_1y"], TERM_HOURS["reserved_1y"], np.where(is_p["reserved_3y"],
                                                                             TERM_HOURS["reserved_3y"], 0.0))
    if (reserved & pay[""]).any() or not all_in(payment, ("",) + PAYMENT_OPTIONS):
        return None
    if (reserved & ~term_empty & (np.abs(term_given - term) > 1e-9)).any():
        return None
    no_up, all_up, part = (reserved & pay[p] for p in ("no_upfront", "all_upfront", "partial_upfront"))
    upfront = np.where(no_up & up_empty, 0.0, up_given)
    recurring = np.where(no_up & rec_empty, price, rec_given)
    with np.errstate(over="ignore"):  # 1e308 x a term is inf: the effective-rate check below refuses the row
        upfront = np.where(all_up & up_empty, price * term, upfront)
    recurring = np.where(all_up & rec_empty, 0.0, recurring)
    if (part & up_empty & rec_empty).any():
        return None
    safe_term = np.where(term > 0, term, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        upfront = np.where(part & up_empty, (price - recurring) * term, upfront)
        recurring = np.where(part & rec_empty, price - upfront / safe_term, recurring)
        if (part & ((upfront < -0.01) | (recurring < -1e-6))).any():
            return None
        upfront = np.where(part, np.maximum(upfront, 0.0), upfront)
        recurring = np.where(part, np.maximum(recurring, 0.0), recurring)
        mismatch = np.abs(recurring + upfront / safe_term - price) > np.maximum(1e-6, 1e-6 * price)
    if (reserved & mismatch).any():
        return None
    hourly = ~reserved
    if (hourly & ~pay[""]).any() or (hourly & ~term_empty & (term_given != 0.0)).any():
        return None
    oclass = pc.utf8_lower(s("offering_class"))
    if not all_in(oclass, RESERVATION_CLASSES) or (hourly & ~mask(pc.equal(oclass, ""))).any():
        return None  # (savings-plan rows and bad classes: the row-by-row reader checks them, naming the line)
    if any(is_p[p].any() for p in SAVINGS_PLAN_TERM_HOURS):
        return None
    as_of_given = s("as_of")
    if not mask(pc.or_(pc.equal(as_of_given, ""), pc.or_(pc.equal(as_of_given, "unknown"),
                                                        pc.match_substring_regex(as_of_given,
                                                                                 r"^\d{4}-\d{2}-\d{2}$")))).all():
        return None
    if any(date_error(d) for d in pc.unique(as_of_given).to_pylist() if d not in ("", "unknown")):
        return None  # a date that does not exist or is in the future: the row-by-row reader names the line
    need_class = reserved & mask(pc.equal(oclass, ""))
    if need_class.any():
        raw_class = np.asarray(oclass.to_numpy(zero_copy_only=False), dtype=object)
        low_prov = np.asarray(pc.utf8_lower(s("provider")).to_numpy(zero_copy_only=False), dtype=object)
        raw_class[need_class] = [default_offering_class(p, "reserved_1y") for p in low_prov[need_class]]
        oclass = pa.array(raw_class, pa.string())
    if (hourly & ~up_empty & (up_given != 0.0)).any():
        return None
    if (hourly & ~rec_empty & (np.abs(rec_given - price) > 1e-9)).any():
        return None
    upfront = np.where(hourly, 0.0, upfront)
    recurring = np.where(hourly, price, recurring)
    raw_ic = s("interconnect")
    empty_ic = mask(pc.equal(raw_ic, ""))
    if empty_ic.any():
        vals = np.asarray(raw_ic.to_numpy(zero_copy_only=False), dtype=object)
        provs = np.asarray(s("provider").to_numpy(zero_copy_only=False), dtype=object)
        types = np.asarray(s("instance_type").to_numpy(zero_copy_only=False), dtype=object)
        vals[empty_ic] = [_default_interconnect(p, t) for p, t in zip(provs[empty_ic], types[empty_ic])]
        raw_ic = pa.array(vals, pa.string())
    interconnect = raw_ic
    fabric, zone_kind, tier = pc.utf8_lower(s("fabric")), pc.utf8_lower(s("zone_kind")), pc.utf8_lower(s("tier"))
    if not all_in(interconnect, INTERCONNECTS) or not all_in(fabric, ("",) + FABRICS) or \
            not all_in(zone_kind, ZONE_KINDS) or not all_in(tier, ("",) + TIERS):
        return None
    provider, region, zone, itype = pc.utf8_lower(s("provider")), s("region"), s("zone"), s("instance_type")
    key = pc.binary_join_element_wise(provider, region, zone, itype, pricing, payment, oclass, "\x00")
    if pc.count_distinct(key).as_py() != n:  # a duplicate offer key
        return None
    # reserved and spot rows against the on-demand rate of their instance type and region (the last on-demand row
    # of a key, as the row-by-row check reads them)
    place = np.asarray(pc.dictionary_encode(pc.binary_join_element_wise(provider, region, itype, "\x00"))
                       .indices.to_numpy(zero_copy_only=False))
    od_price = np.full(int(place.max()) + 1, np.nan)
    od_rows = np.flatnonzero(is_p["on_demand"])
    od_price[place[od_rows]] = price[od_rows]  # numpy assigns in order: the last row of a key wins
    base = od_price[place]
    has = ~np.isnan(base)
    with np.errstate(invalid="ignore"):
        if (is_p["spot"] & has & (price >= base)).any() or (reserved & has & (price > base * (1 + 1e-9))).any():
            return None
    # fabric, zone_kind and tier from the documented facts where not given, once per distinct key
    from providers.facts import fabric_of, tier_of, zone_kind_of

    def facts(given, keys, fn):
        need = mask(pc.equal(given, ""))
        if not need.any():
            return given
        enc = pc.dictionary_encode(pc.binary_join_element_wise(*keys, "\x00"))
        uniq = [fn(*k.split("\x00")) for k in enc.dictionary.to_pylist()]
        filled = np.asarray(pa.array(uniq, pa.string()).take(enc.indices).to_numpy(zero_copy_only=False), dtype=object)
        out = np.asarray(given.to_numpy(zero_copy_only=False), dtype=object)
        out[need] = filled[need]
        return pa.array(out, pa.string())

    fabric = facts(fabric, [provider, itype], fabric_of)
    zone_kind = facts(zone_kind, [provider, region, zone], zone_kind_of)
    tier = facts(tier, [provider, itype], tier_of)

    def text_col(a) -> "pd.Series":
        if isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        return pd.Series(pd.arrays.ArrowStringArray(a))

    out = {
        "provider": text_col(provider), "region": text_col(region), "zone": text_col(zone),
        "instance_type": text_col(itype), "gpu_model": text_col(gpu), "gpu_count": gcount, "gpu_memory_gib": gmem,
        "vcpus": nums["vcpus"][0], "memory_gib": nums["memory_gib"][0], "interconnect": text_col(interconnect),
        "fabric": text_col(fabric), "zone_kind": text_col(zone_kind), "tier": text_col(tier),
        "pricing": text_col(pricing),
        "payment": text_col(payment), "offering_class": text_col(oclass), "upfront_usd": upfront,
        "recurring_usd_per_hour": recurring,
        "usd_per_hour": price, "term_hours": np.where(hourly, 0.0, term),
        "currency": text_col(pa.array(np.full(n, "USD", dtype=object), pa.string())),
        "source": text_col(default(s("source"), f"user:{name}")), "as_of": text_col(default(s("as_of"), "unknown"))}
    return pd.DataFrame(out)[list(OFFER_COLUMNS)].astype(OFFER_DTYPES)

def _term(line: int, pricing: str, payment: str, term_given: float | None, term: float) -> float:
    """The term in hours of a reservation or savings-plan row: its payment must be one of PAYMENT_OPTIONS and a
    given ``term_hours`` must be the pricing's own. Raises InputError naming the line."""
    if payment not in PAYMENT_OPTIONS:
        raise _err(line, f"payment '{payment}' for a {pricing} row", accepted=", ".join(PAYMENT_OPTIONS))
    if term_given is not None and abs(term_given - term) > 1e-9:
        raise _err(line, f"term_hours {term_given:g} does not match {pricing} ({term:g})")
    return term


def _row(line: int, header: list[str], rec: list[str], name: str, seen: dict[tuple, int],
         currencies: dict[str, int]) -> dict[str, Any]:
    """One data row validated and normalized (see the module docstring); ``seen`` (offer key -> line) and
    ``currencies`` (currency -> first line) carry what earlier rows said. Raises InputError naming the line."""
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
        term = _term(line, pricing, payment, term_given, TERM_HOURS[pricing])
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
        oclass = g("offering_class").lower() or default_offering_class(g("provider").lower(), pricing)
        if oclass not in RESERVATION_CLASSES:
            raise _err(line, f"offering_class '{g('offering_class')}' is not a reservation's",
                       accepted=", ".join(c for c in RESERVATION_CLASSES if c))
    elif pricing in SAVINGS_PLAN_TERM_HOURS:
        # the rate of an instance-hour under a savings plan: the payment and the class are the plan's, the term its
        # length; no upfront on the row (records.PRICING_MODELS)
        term = _term(line, pricing, payment, term_given, SAVINGS_PLAN_TERM_HOURS[pricing])
        oclass = g("offering_class").lower()
        if oclass not in SAVINGS_PLAN_CLASSES:
            raise _err(line, f"offering_class '{g('offering_class')}' is not a savings plan's",
                       accepted=", ".join(c for c in SAVINGS_PLAN_CLASSES if c) + ' or "" (Azure)')
        if (upfront or 0.0) != 0.0:
            raise _err(line, f"upfront_usd given for a {pricing} row (the row is a rate; the plan's commitment is "
                             "paid as its payment says)")
        if recurring is not None and abs(recurring - price) > 1e-9:
            raise _err(line, "recurring_usd_per_hour differs from usd_per_hour for a savings-plan row")
        upfront, recurring = 0.0, price
    else:
        oclass = g("offering_class").lower()
        if oclass:
            raise _err(line, f"offering_class '{g('offering_class')}' given for a {pricing} row (offering_class is "
                             "for reserved rows only)")
        if payment:
            raise _err(line, f"payment '{payment}' given for a {pricing} row (payment is for reserved rows only)")
        if term_given not in (None, 0.0):
            raise _err(line, f"term_hours {term_given:g} given for a {pricing} row")
        if (upfront or 0.0) != 0.0:
            raise _err(line, f"upfront_usd given for a {pricing} row")
        if recurring is not None and abs(recurring - price) > 1e-9:
            raise _err(line, "recurring_usd_per_hour differs from usd_per_hour for a non-reserved row")
        term, upfront, recurring = 0.0, 0.0, price
    interconnect = g("interconnect") or _default_interconnect(g("provider"), g("instance_type"))
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
    tier = g("tier").lower()
    if tier and tier not in TIERS:
        raise _err(line, f"tier '{g('tier')}' is not known (leave it empty to take it from the documented facts)",
                   accepted=", ".join(TIERS))
    row = {"provider": g("provider").lower(), "region": g("region"), "zone": g("zone"),
           "instance_type": g("instance_type"), "gpu_model": gpu, "gpu_count": gpu_count,
           "gpu_memory_gib": gpu_mem,
           "vcpus": _num(line, "vcpus", g("vcpus"), required=False, positive=True),
           "memory_gib": _num(line, "memory_gib", g("memory_gib"), required=False, positive=True),
           "interconnect": interconnect, "fabric": fabric, "zone_kind": zone_kind, "tier": tier, "pricing": pricing,
           "payment": payment, "offering_class": oclass, "upfront_usd": upfront,
           "recurring_usd_per_hour": recurring, "usd_per_hour": price, "term_hours": term,
           "currency": currency, "source": g("source") or f"user:{name}", "as_of": g("as_of") or "unknown"}
    if row["as_of"] != "unknown" and not _DATE.fullmatch(row["as_of"]):
        raise _err(line, f"as_of '{row['as_of']}' is not a date", accepted="YYYY-MM-DD, or empty / unknown")
    bad_day = None if row["as_of"] == "unknown" else date_error(row["as_of"])
    if bad_day:
        raise _err(line, f"as_of: {bad_day}", accepted="a past date YYYY-MM-DD, or empty / unknown")
    for c in ("vcpus", "memory_gib"):
        if row[c] is None:
            row[c] = float("nan")
    key = tuple(row[c] for c in OFFER_KEY)
    if key in seen:
        raise _err(line, f"duplicate offer {'/'.join(str(k) for k in key if k)} (same key as line {seen[key]})",
                   accepted="one row per " + ", ".join(OFFER_KEY))
    seen[key] = line
    return row


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
    from providers._input import read_text_file

    try:  # not Path.read_text: its universal newlines made a CR inside a field a line break (issue 33)
        text = read_text_file(p)  # gzip decompressed; bounded while read (MAX_WHOLE_BYTES)
    except InputError as e:
        raise InputError("catalog", e.message, e.accepted) from None
    return parse_offers_csv(text, p.name)
