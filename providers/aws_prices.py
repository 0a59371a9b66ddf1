"""AWS price lists -> price rows: the Pricing API's ``get_products`` entries (:func:`parse_price_list`), and the
product/term reading the bulk offer CSV (``providers.aws_import``) shares. Pure: no network (``providers.aws``
fetches).

Price list rows (PRICE_FAULTS BUG-03, BUG-04, BUG-07)
=====================================================

An EC2 product is one (instance type, location, operating system, tenancy, pre-installed software, license model,
capacity status [, market option]) combination. Only the product variant gpuopt prices is kept:
``operatingSystem`` Linux (other systems on request, see ``operating_systems``), ``tenancy`` Shared,
``preInstalledSw`` NA, ``licenseModel`` "No License required", ``capacitystatus`` Used and, when the attribute
is present, ``marketoption`` OnDemand. Capacity-reservation products (``AllocatedCapacityReservation`` priced 0,
``UnusedCapacityReservation``), SQL Server / BYOL / Dedicated / Host variants are counted in the notes, never
priced. An attribute missing from an (old) entry does not exclude it. After filtering, every
(instance type, region, pricing, payment, offering class, operating system) appears exactly once, else
``PriceDataError`` (the same SKU and term repeated verbatim collapses to one row, with a note).

Terms: ``terms.OnDemand`` -> ``on_demand``; ``terms.Reserved`` -> every term: ``LeaseContractLength`` 1yr/3yr ->
``reserved_1y``/``reserved_3y`` (8,760 / 26,280 h), ``PurchaseOption`` No/Partial/All Upfront -> ``payment``,
``OfferingClass`` standard/convertible -> ``offering_class``. A term's ``priceDimensions`` are ``unit: "Hrs"``
(the recurring hourly rate) and, for Partial/All Upfront, ``unit: "Quantity"`` (the upfront fee, a TOTAL for the
whole term). They are kept apart: ``upfront_usd`` = fee, ``recurring_usd_per_hour`` = Hrs rate, ``usd_per_hour`` =
recurring + upfront / term_hours. A zero or missing price is never a price: the row is excluded and reported
(``zero_price``/``unknown_price``; an All Upfront term's recurring 0 is its real shape, its fee must be > 0).
The currency is the ``pricePerUnit`` key (USD; the China regions' lists say CNY) and is carried, never assumed.

Region: ``regionCode`` when the entry has it, else ``location`` mapped through botocore's region descriptions
(entries published before regionCode existed, like the real m5.large payload of 2021, and PRICE_FAULTS BUG-03).
Only ``locationType`` "AWS Region" rows are kept (Local Zone / Wavelength products are counted in the notes).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from gpuopt.kernel.errors import InputError, PriceDataError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES, TERM_HOURS, SkippedRow
from providers._common import fill_facts, float_or_none, hourly_row
from providers.skypilot import interconnect_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "aws"

SOURCE_PRICING = "aws-pricing-api"
SOURCE_SPOT = "aws-ec2-spot-history"
SOURCE_TYPES = "aws-ec2-describe-instance-types"
SOURCE_BULK = "aws-bulk-csv"
SOURCE_SAVINGS_PLANS = "aws-savings-plans-api"
#: ``operation`` of a Linux/UNIX instance-hour (Windows is RunInstances:0002, RHEL :0010 ...).
LINUX_OPERATION = "RunInstances"

#: The product variant that is priced: attribute -> required value (operatingSystem: see ``operating_systems``).
VARIANT: dict[str, str] = {
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "licenseModel": "No License required",
    "capacitystatus": "Used",
}
PAYMENT_OPTIONS = {"No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront"}
_LEASE = {"1yr": "reserved_1y", "3yr": "reserved_3y", "1 yr": "reserved_1y", "3 yr": "reserved_3y"}
_PRICE_EXTRA = ("operating_system",)
# ----------------------------------------------------------------------------------------------------------------
# price list: Pricing API entries and the bulk CSV
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Product:
    """One EC2 product (a SKU) with its terms, whatever file or API it came from."""

    sku: str
    family: str
    attrs: dict[str, str]
    terms: dict[str, dict[str, Any]]  # {"OnDemand": {code: term}, "Reserved": {code: term}}
    published: str = ""
    line: int = 0  # first line in a line-oriented file, else 0


@dataclass
class Collect:
    """What one parse collects besides its rows: the ``source`` written on them, the rows skipped (SkippedRow, each
    with a reason code), notes, and the product variants filtered out (counted by reason)."""

    source: str
    skipped: list[SkippedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    filtered: Counter = field(default_factory=Counter)

    def skip(self, line: int, itype: str, region: str, reason: str, source: str | None = None) -> None:
        self.skipped.append(SkippedRow(source=source or self.source, line=line, instance_type=itype, region=region,
                                       reason=reason))

    def filtered_note(self, what: str) -> None:
        if self.filtered:
            shown = ", ".join(f"{k} ({n})" for k, n in sorted(self.filtered.items()))
            self.notes.append(f"{what} not priced: {shown}")


_LOCATIONS: dict[str, str] | None = None


def region_for_location(location: str | None) -> str | None:
    """Region code for a Pricing API ``location`` ("US East (N. Virginia)" -> us-east-1), from botocore's own region
    descriptions; the price list writes "EU (Ireland)" where botocore writes "Europe (Ireland)". None if unknown."""
    global _LOCATIONS
    if not location:
        return None
    if _LOCATIONS is None:
        import botocore.session

        table: dict[str, str] = {}
        for part in botocore.session.get_session().get_data("endpoints")["partitions"]:
            for code, info in part.get("regions", {}).items():
                desc = str(info.get("description", "")).strip()
                if desc:
                    table[desc] = code
                    if desc.startswith("Europe ("):
                        table["EU (" + desc[len("Europe ("):]] = code
        table.setdefault("Asia Pacific (Osaka-Local)", "ap-northeast-3")
        _LOCATIONS = table
    return _LOCATIONS.get(str(location).strip())


def variant_reason(attrs: dict[str, str], operating_systems: tuple[str, ...]) -> str | None:
    """Why a product is not the priced variant ("capacitystatus=AllocatedCapacityReservation"), or None."""
    os_ = attrs.get("operatingSystem")
    if os_ is not None and os_ not in operating_systems:
        return f"operatingSystem={os_}"
    for key, want in VARIANT.items():
        val = attrs.get(key)
        if val is not None and val != want:
            return f"{key}={val}"
    mo = attrs.get("marketoption")
    if mo is not None and mo != "OnDemand":
        return f"marketoption={mo}"
    lt = attrs.get("locationType")
    if lt is not None and lt != "AWS Region":
        return f"locationType={lt}"
    return None


def _memory_gib(text: str | None) -> float:
    """'8 GiB' / '1,152 GiB' -> 8.0 / 1152.0; NaN when absent."""
    if not text:
        return float("nan")
    m = re.match(r"^\s*([\d,.]+)\s*GiB\s*$", str(text))
    return float(m.group(1).replace(",", "")) if m else float("nan")


def _dims(term: dict[str, Any]) -> tuple[dict[str, list[tuple[float | None, str]]], list[str]]:
    """{unit: [(price, currency), ...]} of a term's priceDimensions, and the currencies seen."""
    out: dict[str, list[tuple[float | None, str]]] = {}
    currencies = []
    for dim in (term.get("priceDimensions") or {}).values():
        ppu = dim.get("pricePerUnit") or {}
        if not ppu:
            out.setdefault(str(dim.get("unit", "")), []).append((None, ""))
            continue
        cur = "USD" if "USD" in ppu else sorted(ppu)[0]
        currencies.append(cur)
        out.setdefault(str(dim.get("unit", "")), []).append((float_or_none(ppu[cur]), cur))
    return out, currencies


def products_price_rows(products: Iterable[Product], col: Collect, *, as_of: str | None,
                        operating_systems: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows (OFFER_COLUMNS + offering_class + operating_system) of the priced variant of every product."""
    rows: list[dict[str, Any]] = []
    seen_terms: set[tuple[str, str]] = set()
    repeated = 0
    for p in products:
        a = p.attrs
        itype = a.get("instanceType") or ""
        if not itype or (p.family and not p.family.startswith("Compute Instance")):
            col.filtered[f"productFamily={p.family or '?'}"] += 1
            continue
        why = variant_reason(a, operating_systems)
        if why:
            col.filtered[why] += 1
            continue
        region = a.get("regionCode") or region_for_location(a.get("location"))
        if not region:
            col.skip(p.line, itype, "", f"unknown_region: no regionCode and location '{a.get('location')}' is not a "
                                        "known AWS region")
            continue
        gpus = float_or_none(a.get("gpu"))
        base = {"provider": NAME, "region": region, "zone": "", "instance_type": itype, "gpu_model": "",
                "gpu_count": gpus if gpus is not None else float("nan"), "gpu_memory_gib": float("nan"),
                "vcpus": float_or_none(a.get("vcpu")) or float("nan"), "memory_gib": _memory_gib(a.get("memory")),
                "interconnect": interconnect_for(NAME, itype), "source": col.source,
                "as_of": as_of if as_of is not None else (p.published or "")[:10],
                "operating_system": a.get("operatingSystem") or ""}
        for kind in ("OnDemand", "Reserved"):
            for code, term in sorted((p.terms.get(kind) or {}).items()):
                key = (p.sku, str(term.get("offerTermCode") or code))
                if key in seen_terms:
                    repeated += 1
                    continue
                seen_terms.add(key)
                row = _term_row(p, kind, term, base, col)
                if row is not None:
                    rows.append(row)
    if repeated:
        col.notes.append(f"{repeated} term(s) repeated verbatim (same SKU and offer term code) collapsed to one row")
    _check_price_keys(rows, col.source)
    return rows


def _term_row(p: Product, kind: str, term: dict[str, Any], base: dict[str, Any], col: Collect
              ) -> dict[str, Any] | None:
    itype, region = base["instance_type"], base["region"]
    dims, currencies = _dims(term)
    where = f"SKU {p.sku} term {term.get('offerTermCode', '?')}"
    if len(set(currencies)) > 1:
        raise PriceDataError(f"{col.source}: {where} mixes currencies {sorted(set(currencies))}")
    currency = currencies[0] if currencies else "USD"
    unknown_units = sorted(set(dims) - {"Hrs", "Quantity"})
    if unknown_units or any(len(v) > 1 for v in dims.values()):
        col.skip(p.line, itype, region, f"unknown_term: {where} has price dimensions {sorted(dims)} "
                                        "(expected one 'Hrs' and at most one 'Quantity')")
        return None
    hourly = dims.get("Hrs", [(None, "")])[0][0]
    fee = dims.get("Quantity", [(None, "")])[0][0]
    if kind == "OnDemand":
        if fee is not None:
            col.skip(p.line, itype, region, f"unknown_term: on-demand {where} has an upfront fee")
            return None
        if hourly is None:
            col.skip(p.line, itype, region, f"unknown_price: on-demand {where} has no hourly price; a missing price "
                                            "is unknown, never 0")
            return None
        if hourly <= 0:
            col.skip(p.line, itype, region, f"zero_price: on-demand {where} is {hourly} per hour (not a real price)")
            return None
        return {**hourly_row("on_demand", hourly, **base), "currency": currency, "offering_class": ""}
    ta = term.get("termAttributes") or {}
    pricing = _LEASE.get(str(ta.get("LeaseContractLength", "")).strip())
    payment = PAYMENT_OPTIONS.get(str(ta.get("PurchaseOption", "")).strip())
    klass = str(ta.get("OfferingClass", "")).strip().lower()
    if pricing is None or payment is None or klass not in ("standard", "convertible"):
        col.skip(p.line, itype, region, f"unknown_term: reserved {where} with LeaseContractLength "
                                        f"'{ta.get('LeaseContractLength')}', PurchaseOption "
                                        f"'{ta.get('PurchaseOption')}', OfferingClass '{ta.get('OfferingClass')}'")
        return None
    hours = TERM_HOURS[pricing]
    label = f"{klass} {ta.get('LeaseContractLength')} {ta.get('PurchaseOption')} {where}"
    if payment == "no_upfront":
        if fee not in (None, 0.0):
            col.skip(p.line, itype, region, f"unknown_term: {label} has an upfront fee {fee}")
            return None
        if hourly is None or hourly <= 0:
            col.skip(p.line, itype, region, f"{'unknown_price' if hourly is None else 'zero_price'}: {label} hourly "
                                            f"rate is {hourly}")
            return None
        upfront, recurring = 0.0, hourly
    else:
        if fee is None or fee <= 0:
            col.skip(p.line, itype, region, f"{'unknown_price' if fee is None else 'zero_price'}: {label} upfront "
                                            f"fee is {fee}")
            return None
        recurring = 0.0 if hourly is None else hourly
        if recurring < 0 or (payment == "partial_upfront" and recurring <= 0):
            col.skip(p.line, itype, region, f"zero_price: {label} hourly rate is {hourly}")
            return None
        if payment == "all_upfront" and recurring > 0:
            col.skip(p.line, itype, region, f"unknown_term: {label} has a recurring rate {recurring}")
            return None
        upfront = fee
    return {**base, "pricing": pricing, "payment": payment, "upfront_usd": float(upfront),
            "recurring_usd_per_hour": float(recurring), "usd_per_hour": float(recurring) + float(upfront) / hours,
            "term_hours": hours, "currency": currency, "offering_class": klass}


def _check_price_keys(rows: list[dict[str, Any]], source: str) -> None:
    """BUG-03: after filtering, each (type, region, pricing, payment, class, OS) must have exactly one row."""
    seen: dict[tuple, int] = Counter()
    for r in rows:
        seen[(r["instance_type"], r["region"], r["pricing"], r["payment"], r["offering_class"],
              r["operating_system"])] += 1
    dup = [k for k, n in seen.items() if n > 1]
    if dup:
        shown = "; ".join("/".join(x for x in k if x) for k in dup[:5])
        raise PriceDataError(f"{source}: {len(dup)} price key(s) have more than one product after filtering "
                             f"(operatingSystem, tenancy, preInstalledSw, licenseModel, capacitystatus), e.g. {shown}")


def price_frame(rows: list[dict[str, Any]], col: Collect) -> "pd.DataFrame":
    """Price rows (dicts of :func:`products_price_rows`) as a DataFrame of OFFER_COLUMNS + ``operating_system``
    (OFFER_DTYPES; ``fabric``/``zone_kind``/``tier`` filled from the facts), with ``attrs["skipped"]`` and
    ``attrs["notes"]`` from ``col``; an empty frame of those columns when there are no rows."""
    import pandas as pd

    cols = list(OFFER_COLUMNS) + list(_PRICE_EXTRA)
    dtypes = {**OFFER_DTYPES, "offering_class": "string", "operating_system": "string"}
    if rows:
        df = fill_facts(pd.DataFrame.from_records(rows))[cols].astype(dtypes)
    else:
        df = pd.DataFrame({c: pd.Series([], dtype=dtypes[c]) for c in cols})
    df.attrs["skipped"] = list(col.skipped)
    df.attrs["notes"] = list(col.notes)
    return df


def load_json(value: Any) -> Any:
    """A payload as Python data: ``value`` itself when it is not text; JSON text parsed; a path (Path, or a short
    string naming an existing file) read as a JSON file (``providers._input``: UTF-8, depth and number checks).

    Raises InputError for a string that is neither JSON nor a file (field ``file``), or for invalid JSON."""
    from providers._input import loads_json, read_json_file

    if isinstance(value, Path):
        return read_json_file(value)
    if isinstance(value, str):
        s = value.lstrip().lstrip("\ufeff")
        if s.startswith("{") or s.startswith("["):
            return loads_json(value)
        p = Path(value)
        if "\x00" not in value and len(value) < 4096 and p.is_file():
            return read_json_file(p)
        raise InputError("file", f"not JSON and not a file: {value[:60]!r}")
    return value


def price_entries(items: Any) -> list[Any]:
    """Flatten what parse_price_list accepts into a list of PriceList entries (strings or dicts)."""
    data = load_json(items)
    if isinstance(data, dict):
        if "PriceList" in data:
            return list(data["PriceList"])
        if "product" in data:
            return [data]
        raise InputError("price_list", "a JSON object without 'PriceList' or 'product'",
                         accepted="a get_products response, a list of its pages, or a list of PriceList entries")
    if isinstance(data, list):
        out: list[Any] = []
        for x in data:
            if isinstance(x, dict) and "PriceList" in x:
                out.extend(x["PriceList"])
            else:
                out.append(x)
        return out
    raise InputError("price_list", f"unexpected {type(data).__name__}",
                     accepted="a get_products response, a list of its pages, or a list of PriceList entries")


#: What the importer reads of a PriceList entry (providers._input.check_shape).
PRODUCT_SHAPE = {"product": {"attributes": {"*": str}, "sku": str, "productFamily": str}, "publicationDate": str,
                 "terms": {"*": {"*": {"termAttributes": {"*": str}, "priceDimensions": {"*": {
                     "unit": str, "pricePerUnit": {"*": str}}}}}}}


def products_from_entries(entries: list[Any]) -> Iterator[Product]:
    """One :class:`Product` per PriceList entry (a JSON string or a dict), in order.

    Raises InputError (field ``price_list``) for an entry that is not a Pricing API product or breaks
    :data:`PRODUCT_SHAPE`."""
    from providers._input import check_shape, loads_json

    for i, e in enumerate(entries, 1):
        d = loads_json(e, f"PriceList entry {i}") if isinstance(e, (str, bytes)) else e
        if not isinstance(d, dict) or "product" not in d:
            raise InputError("price_list", f"entry {i} is not a Pricing API product (no 'product' key)")
        check_shape(d, PRODUCT_SHAPE, f"PriceList entry {i}", field="price_list")
        prod = d["product"]
        attrs = {str(k): str(v) for k, v in (prod.get("attributes") or {}).items()}
        yield Product(sku=str(prod.get("sku", "")), family=str(prod.get("productFamily", "")), attrs=attrs,
                      terms=d.get("terms") or {}, published=str(d.get("publicationDate", "")))


def parse_price_list(items: Any, *, as_of: str | None = None, source: str = SOURCE_PRICING,
                     operating_systems: Iterable[str] = ("Linux",)) -> "pd.DataFrame":
    """Pricing API ``PriceList`` entries -> one row per (instance type, region, term); see the module docstring.

    Args:
        items: PriceList entries (JSON strings or dicts); or a get_products response (``{"PriceList": [...]}``), a
            list of such pages, one entry dict; or the text / path of a JSON file holding any of these.
        as_of: date written to every row (default: each entry's ``publicationDate``, YYYY-MM-DD).
        source: ``source`` of every row.
        operating_systems: ``operatingSystem`` values to keep (default Linux only; ``("Linux", "Windows")`` gives
            both, told apart by the ``operating_system`` column).

    Returns:
        DataFrame with OFFER_COLUMNS (GPU model unknown here: ``gpu_model`` "", ``gpu_memory_gib`` NaN;
        ``gpu_count`` from the ``gpu`` attribute when present) plus ``offering_class`` (standard / convertible / ""
        for on-demand) and ``operating_system``. ``df.attrs["skipped"]`` lists the excluded rows (SkippedRow, e.g.
        ``zero_price``), ``df.attrs["notes"]`` the product variants filtered out, counted.

    Raises:
        PriceDataError: two products for one key after filtering (PRICE_FAULTS BUG-03), mixed currencies in a term.
        InputError: not Pricing API entries.
    """
    col = Collect(source)
    rows = products_price_rows(products_from_entries(price_entries(items)), col, as_of=as_of,
                               operating_systems=tuple(operating_systems))
    col.filtered_note("product variants")
    return price_frame(rows, col)


#: Bulk CSV column -> Pricing API attribute name.
