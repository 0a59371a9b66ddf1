"""AWS price files: the bulk offer CSV (:func:`parse_bulk_csv`) and ``gpuopt prices import FILE --input-format
aws-price-list|aws-bulk-csv`` (:func:`import_file`), the price rows joined to GPU facts. Pure but for reading the
file (and, without GPU facts given, the current AWS offers).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from gpuopt.kernel.errors import InputError
from providers._common import ParseResult, check_unique, offers_frame
from providers.aws_parse import GPU_FIELDS, facts_reasons, instance_facts, join_offers
from providers.aws_prices import (NAME, SOURCE_BULK, Collect, Product, parse_price_list, price_frame,
                                  products_price_rows, variant_reason)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

BULK_ATTRIBUTES: dict[str, str] = {
    "Instance Type": "instanceType", "Region Code": "regionCode", "Location": "location",
    "Location Type": "locationType", "Operating System": "operatingSystem", "Tenancy": "tenancy",
    "Pre Installed S/W": "preInstalledSw", "License Model": "licenseModel", "CapacityStatus": "capacitystatus",
    "MarketOption": "marketoption", "vCPU": "vcpu", "Memory": "memory", "GPU": "gpu", "GPU Memory": "gpuMemory",
    "Instance Family": "instanceFamily", "usageType": "usagetype", "operation": "operation",
}
BULK_REQUIRED = ("SKU", "OfferTermCode", "RateCode", "TermType", "Unit", "PricePerUnit", "Currency",
                 "LeaseContractLength", "PurchaseOption", "OfferingClass", "Product Family", "Instance Type",
                 "Operating System", "Tenancy")


def _open_text(text_or_path: "str | Path") -> tuple[io.TextIOBase, str]:
    if hasattr(text_or_path, "read"):  # a text stream (a streamed download): read as it comes
        return text_or_path, getattr(text_or_path, "name", "<stream>")  # type: ignore[return-value]
    if isinstance(text_or_path, Path):
        return open(text_or_path, encoding="utf-8-sig", newline=""), text_or_path.name
    s = str(text_or_path)
    if "\n" not in s and len(s) < 4096 and Path(s).is_file():
        return open(s, encoding="utf-8-sig", newline=""), Path(s).name
    return io.StringIO(s.lstrip("\ufeff"), newline=""), "<text>"


def bulk_products(fh, col: Collect, operating_systems: tuple[str, ...], keep=None
                  ) -> tuple[list[Product], dict[str, str]]:
    """The products of a bulk offer CSV read line by line from ``fh`` (text), and its 5 metadata lines as a dict.

    ``keep``: a predicate on a product's attributes (BULK_ATTRIBUTES names); products it refuses are dropped on
    their first line and counted under ``not_kept`` (the keyless refresh keeps GPU types only, so memory holds the
    GPU rows, not the file's). Raises InputError when the file is not a bulk offer CSV, or names the line of a CR
    inside a field or of what csv cannot read (a field over its 128 KiB limit...)."""
    from providers._input import csv_error, stream_lines

    name = Path(str(getattr(fh, "name", "") or "the bulk CSV")).name
    reader = csv.reader(stream_lines(fh, name))
    try:
        return _bulk_products(reader, col, operating_systems, keep)
    except csv.Error as e:
        raise csv_error(e, name, reader.line_num) from None


def _bulk_products(reader, col: Collect, operating_systems: tuple[str, ...], keep
                   ) -> tuple[list[Product], dict[str, str]]:
    meta: dict[str, str] = {}
    for _ in range(5):
        rec = next(reader, None)
        if rec is None:
            raise InputError("file", "not an AWS bulk offer CSV: fewer than 5 metadata lines",
                             accepted="AmazonEC2 index.csv (5 metadata lines, then the header)")
        if rec:
            meta[rec[0].strip()] = rec[1].strip() if len(rec) > 1 else ""
    if "FormatVersion" not in meta:
        raise InputError("file", "not an AWS bulk offer CSV: line 1 is not \"FormatVersion\",...",
                         accepted="AmazonEC2 index.csv (5 metadata lines, then the header)")
    header = [h.strip() for h in (next(reader, None) or [])]
    from providers._input import check_unique_columns

    check_unique_columns(header, "the bulk CSV", line=6)
    missing = [c for c in BULK_REQUIRED if c not in header]
    if missing or not ({"Region Code", "Location"} & set(header)):
        raise InputError("file", f"line 6: the bulk CSV header lacks {missing or ['Region Code or Location']}",
                         accepted="AmazonEC2 index.csv header (SKU, OfferTermCode, RateCode, TermType, ...)")
    idx = {h: i for i, h in enumerate(header)}
    attr_cols = [(idx[c], a) for c, a in BULK_ATTRIBUTES.items() if c in idx]

    def get(rec: list[str], name: str) -> str:
        i = idx.get(name)
        return rec[i].strip() if i is not None and i < len(rec) else ""

    products: dict[str, Product] = {}
    filtered_skus: dict[str, str] = {}
    published = meta.get("Publication Date", "")
    for rec in reader:
        if not any(x.strip() for x in rec):
            continue
        sku = get(rec, "SKU")
        if sku in filtered_skus:
            continue
        p = products.get(sku)
        if p is None:
            attrs = {a: rec[i].strip() for i, a in attr_cols if i < len(rec) and rec[i].strip()}
            family = get(rec, "Product Family")
            why = None
            if not attrs.get("instanceType") or (family and not family.startswith("Compute Instance")):
                why = f"productFamily={family or '?'}"
            elif keep is not None and not keep(attrs):
                why = "not_kept"
            else:
                why = variant_reason(attrs, operating_systems)
            if why:
                filtered_skus[sku] = why
                col.filtered[why] += 1
                continue
            p = products[sku] = Product(sku=sku, family=family, attrs=attrs, terms={}, published=published,
                                        line=reader.line_num)
        kind = get(rec, "TermType")
        code = get(rec, "OfferTermCode")
        term = p.terms.setdefault(kind, {}).setdefault(code, {
            "offerTermCode": code, "priceDimensions": {},
            "termAttributes": {"LeaseContractLength": get(rec, "LeaseContractLength"),
                               "PurchaseOption": get(rec, "PurchaseOption"),
                               "OfferingClass": get(rec, "OfferingClass")} if kind == "Reserved" else {}})
        price, cur = get(rec, "PricePerUnit"), get(rec, "Currency")
        term["priceDimensions"][get(rec, "RateCode") or f"line{reader.line_num}"] = {
            "unit": get(rec, "Unit"), "pricePerUnit": {cur or "USD": price} if price else {}}
    return list(products.values()), meta


def parse_bulk_csv(text_or_path: "str | Path", *, as_of: str | None = None, source: str = SOURCE_BULK,
                   operating_systems: Iterable[str] = ("Linux",)) -> "pd.DataFrame":
    """The AWS bulk offer file for AmazonEC2 (``/offers/v1.0/aws/AmazonEC2/<version>/index.csv`` or a region's
    ``.../<region>/index.csv``) -> the same rows as :func:`parse_price_list`, with the same filters.

    The file: 5 metadata lines (``"FormatVersion","v1.0"``, Disclaimer, ``"Publication Date"``, Version,
    OfferCode), the header on line 6, then one line per price dimension (a Partial Upfront term is two lines of one
    SKU and OfferTermCode: ``Unit`` ``Quantity`` = the upfront fee, ``Hrs`` = the hourly rate). Columns are read by
    name: SKU, OfferTermCode, RateCode, TermType, Unit, PricePerUnit, Currency, LeaseContractLength, PurchaseOption,
    OfferingClass, Product Family, Instance Type, Operating System, Tenancy, and when present Region Code, Location,
    Location Type, Pre Installed S/W, License Model, CapacityStatus, MarketOption, vCPU, Memory, GPU. The file is
    streamed and filtered line by line (the full AmazonEC2 file is several GB). Skipped rows carry the file line
    of their product's first line (header = line 6). ``as_of`` defaults to the file's Publication Date.
    """
    fh, _name = _open_text(text_or_path)
    col = Collect(source)
    oss = tuple(operating_systems)
    with fh:
        products, meta = bulk_products(fh, col, oss)
    day = as_of if as_of is not None else meta.get("Publication Date", "")[:10]
    rows = products_price_rows(products, col, as_of=day, operating_systems=oss)
    col.filtered_note("products (SKUs)")
    return price_frame(rows, col)


def import_file(path: "str | Path", as_of: str, *, gpu_facts: Any = None) -> ParseResult:
    """``gpuopt prices import FILE --input-format aws-price-list|aws-bulk-csv``: a get_products JSON file or a bulk offer
    CSV (told apart by content) -> offers (on-demand and Standard reserved; no spot in these files).

    GPU facts come from ``gpu_facts`` (describe_instance_types output, or a :func:`parse_instance_types` frame),
    else from the current AWS offers (the newest refreshed cache snapshot, else the shipped snapshot): the price
    files carry no GPU model. Types with no GPU facts are reported (``no_gpu``), never guessed.
    """
    from providers._input import decode_utf8, open_text_stream, read_text_file

    p = Path(path)
    with open(p, "rb") as fh:
        raw = fh.read(64)
    content: "str | Path" = p
    if raw[:2] == b"\x1f\x8b":  # gzip: a bulk CSV streamed (bounded while read), a JSON file read whole (bounded)
        with open_text_stream(p) as fh:
            head = fh.buffer.read(64).decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
        if head.startswith("{") or head.startswith("["):
            content = read_text_file(p)
        elif head.startswith('"FormatVersion"') or head.startswith("FormatVersion"):
            content = open_text_stream(p)  # type: ignore[assignment]  # parse_bulk_csv closes it
    else:
        head = raw.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    source = f"import:{p.name}"
    try:
        if head.startswith("{") or head.startswith("["):
            prices = parse_price_list(content, as_of=as_of, source=source)
        elif head.startswith('"FormatVersion"') or head.startswith("FormatVersion"):
            prices = parse_bulk_csv(content, as_of=as_of, source=source)
        else:
            prices = None
    except UnicodeDecodeError as e:  # the bulk CSV is streamed: find the first byte that is not UTF-8, once
        if raw[:2] == b"\x1f\x8b":
            raise InputError("file", f"{p.name}: the gzip content is not UTF-8 text ({e.reason}); save it as "
                                     "UTF-8") from None
        decode_utf8(p.read_bytes(), p.name)
        raise
    if prices is None:
        raise InputError("file", f"{p.name} is neither a Pricing API JSON file nor an AWS bulk offer CSV",
                         accepted="aws-price-list (JSON), aws-bulk-csv (CSV)")
    col = Collect(source, skipped=list(prices.attrs.get("skipped", [])), notes=list(prices.attrs.get("notes", [])))
    facts = facts_for_import(gpu_facts, col)
    rows = prices.astype(object).where(prices.notna(), None).to_dict("records")
    for r in rows:
        for c in ("gpu_count", "gpu_memory_gib", "vcpus", "memory_gib"):
            if r[c] is None:
                r[c] = float("nan")
    out = join_offers(rows, facts, {}, col, region=None, as_of=as_of, no_facts_reason=facts_reasons(col),
                      facts_from="not among the GPU instance types of the GPU facts used")
    df = offers_frame(out)
    check_unique(df, source)
    from providers._input import check_offer_values

    df, bad = check_offer_values(df, source)
    return ParseResult(offers=df, skipped=list(col.skipped) + bad, notes=col.notes)


def facts_for_import(gpu_facts: Any, col: Collect) -> dict[str, dict[str, Any]]:
    """Instance type -> GPU facts (instance_type and GPU_FIELDS): from ``gpu_facts`` (describe_instance_types
    output, or a frame with those columns), else from the current AWS offers (cache or shipped snapshot; a note
    says so)."""
    import pandas as pd

    if gpu_facts is None:
        from pricing_cache.store import load_offers

        cur, _ = load_offers()
        cur = cur[cur["provider"] == NAME]
        col.notes.append("GPU facts taken from the current AWS offers (cache or shipped snapshot)")
        frame = cur.drop_duplicates("instance_type")[["instance_type", *GPU_FIELDS]]
    elif isinstance(gpu_facts, pd.DataFrame):
        frame = gpu_facts
    else:
        facts, _ = instance_facts(gpu_facts, col)
        return facts
    return {str(r["instance_type"]): {k: r[k] for k in ("instance_type", *GPU_FIELDS)}
            for r in frame.to_dict("records")}
