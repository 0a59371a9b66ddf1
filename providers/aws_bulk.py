"""AWS prices without credentials: the public Price List bulk files (issue 29).

AWS publishes every EC2 price and every Savings Plans rate as files anyone can read, no account needed
(docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-the-aws-price-list-bulk-api.html):

* ``/offers/v1.0/aws/AmazonEC2/current/region_index.json`` -> per region ``currentVersionUrl``
  (``/offers/v1.0/aws/AmazonEC2/<version>/<region>/index.json``); the same path ending ``index.csv`` is the CSV
  (5 metadata lines -- FormatVersion, Disclaimer, Publication Date, Version, OfferCode --, the header, then one line
  per price dimension: on-demand and every Reserved Instance term, payment option and offering class);
* ``/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json`` -> per region ``versionUrl`` of a JSON
  file (``publicationDate``, ``products`` [{sku, productFamily ComputeSavingsPlans | EC2InstanceSavingsPlans,
  attributes {purchaseOption, purchaseTerm, ...}}], ``terms.savingsPlan`` [{sku, leaseContractLength {duration,
  unit}, rates [{discountedUsageType, discountedOperation, discountedServiceCode, unit, discountedRate {price,
  currency}}]}]) -- docs "Reading the service price list file for a Savings Plan".

This adapter has the live adapters' interface (``NAME``, :func:`list_regions`, :func:`fetch_region`,
:func:`parse_region`), so ``pricing_cache.refresh`` runs it with the same threads, deadline and keep-the-previous-
prices rules (``gpuopt prices refresh --provider aws --source bulk``, and the default when no AWS credentials are
found). The region files are hundreds of MB: they are read as streams, line by line (CSV) and item by item (JSON,
``ijson``), and only GPU instance types are kept (a positive ``GPU`` column, or a type of the current GPU offers), so
memory stays bounded by the GPU rows, not the file. Rows are dated by each file's publication date. The files have
no spot prices (``describe_spot_price_history`` needs credentials): a region's previous spot rows are kept as they
were, with their own dates, and the notes say so. GPU facts (model, memory) come from the current AWS offers, as for
``prices import`` (the price files name no GPU model); a GPU type without them is reported, never guessed.
"""

from __future__ import annotations

import io
from typing import Any, Iterator

from gpuopt.kernel.errors import InputError
from providers.aws_prices import NAME
from providers.base import (DeadlineReached, FetchOptions, ProviderError, TruncatedPriceList, deadline_passed,
                            http_session)

#: The public Price List endpoint (no credentials; ``FetchOptions.endpoints["aws_bulk"]`` overrides it, e.g. a
#: mirror or the tests' 127.0.0.1 server).
BULK_URL = "https://pricing.us-east-1.amazonaws.com"
EC2_REGION_INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SAVINGS_PLANS_REGION_INDEX = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
SOURCE_EC2 = "aws-price-list-bulk"
SOURCE_SAVINGS_PLANS = "aws-savings-plans-bulk"
#: Progress every this many bytes of a streamed file.
PROGRESS_BYTES = 16 * 2**20
#: Savings Plans product families -> the planType names of the Savings Plans API (providers.aws_parse).
PLAN_TYPES = {"ComputeSavingsPlans": "Compute", "EC2InstanceSavingsPlans": "EC2Instance"}
YEAR_SECONDS = 31_536_000
#: What the price list files price; a region's previous rows of any other kind (spot, capacity blocks) are kept.
FILE_PRICINGS = ("on_demand", "reserved_1y", "reserved_3y", "savings_plan_1y", "savings_plan_3y")


def base_url(options: FetchOptions) -> str:
    """The bulk endpoint: ``options.endpoints["aws_bulk"]`` or :data:`BULK_URL`, without a trailing slash."""
    return str(options.endpoints.get("aws_bulk") or BULK_URL).rstrip("/")


def _reason(e: BaseException) -> str:
    """A network failure in a few words: its kind and the innermost cause's first line (no urllib3 pool dump)."""
    inner = e
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    text = str(inner).splitlines()[0] if str(inner) else type(inner).__name__
    for key in ("Name or service not known", "Temporary failure in name resolution", "Connection refused",
                "timed out", "Network is unreachable", "No route to host"):
        if key in str(e) or key in text:
            return f"{type(e).__name__} ({key})"
    return f"{type(e).__name__} ({text[:120]})"


def _get_json(url: str, options: FetchOptions, what: str) -> Any:
    import requests
    from urllib.parse import urlsplit

    session = http_session(options)
    try:
        resp = session.get(url, timeout=options.timeout_s, headers={"Accept": "application/json"})
    except requests.RequestException as e:
        raise ProviderError(f"aws {what}: cannot reach {urlsplit(url).netloc}: {_reason(e)}") from None
    finally:
        session.close()
    if resp.status_code != 200:
        raise ProviderError(f"aws {what}: HTTP {resp.status_code} from {url}")
    try:
        return resp.json()
    except ValueError as e:
        raise ProviderError(f"aws {what}: {url} is not JSON: {e}") from e


def region_index(options: FetchOptions, path: str, what: str) -> dict[str, str]:
    """Region code -> the path of its current file, from an EC2 (``regions`` {code: {currentVersionUrl}}) or a
    Savings Plans (``regions`` [{regionCode, versionUrl}]) region index.

    Raises: ProviderError when the index cannot be read or lists no region."""
    data = _get_json(base_url(options) + path, options, what)
    regions = data.get("regions") if isinstance(data, dict) else None
    out: dict[str, str] = {}
    if isinstance(regions, dict):
        for code, item in regions.items():
            url = (item or {}).get("currentVersionUrl") if isinstance(item, dict) else None
            if url:
                out[str((item or {}).get("regionCode") or code)] = str(url)
    elif isinstance(regions, list):
        for item in regions:
            if isinstance(item, dict) and item.get("regionCode") and item.get("versionUrl"):
                out[str(item["regionCode"])] = str(item["versionUrl"])
    if not out:
        raise ProviderError(f"aws {what}: the region index at {path} lists no region")
    return out


def list_regions(options: FetchOptions) -> list[str]:
    """Every region of the EC2 price list's region index (or ``options.regions`` among them)."""
    regions = sorted(region_index(options, EC2_REGION_INDEX, "price list region index"))
    if options.regions:
        return [r for r in regions if r in set(options.regions)] + sorted(set(options.regions) - set(regions))
    return regions


class _Counted(io.RawIOBase):
    """A raw byte stream that counts what it read, says so every :data:`PROGRESS_BYTES`, stops at the refresh's
    deadline and raises TruncatedPriceList when the body ends before its Content-Length."""

    def __init__(self, raw, options: FetchOptions, region: str, what: str, length: int | None):
        super().__init__()
        self.raw, self.options, self.region, self.what, self.length = raw, options, region, what, length
        self.n = 0
        self.next_say = PROGRESS_BYTES

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if len(b) == 0:  # a probe (ijson reads 0 bytes to tell bytes from text)
            return 0
        if deadline_passed(self.options):
            raise DeadlineReached(f"aws {self.region}: {self.what}: deadline reached after {self.n:,} bytes")
        try:
            data = self.raw.read(len(b))
        except (ProviderError, DeadlineReached):
            raise
        except Exception as e:  # urllib3 ProtocolError / IncompleteRead, a reset socket: the body was cut
            raise TruncatedPriceList(f"aws {self.region}: {self.what}: the body broke off after {self.n:,} bytes "
                                     f"({type(e).__name__}: {e})", next=None) from None
        k = len(data)
        b[:k] = data
        self.n += k
        if self.n >= self.next_say:
            size = f" of {self.length / 2**20:,.0f}" if self.length else ""
            self.options.say(NAME, self.region, f"{self.what}: {self.n / 2**20:,.0f}{size} MB read")
            self.next_say += PROGRESS_BYTES
        if k == 0 and self.length is not None and self.n < self.length:
            raise TruncatedPriceList(f"aws {self.region}: {self.what}: the body ended after {self.n:,} of "
                                     f"{self.length:,} bytes", next=None)
        return k


def _open_stream(path: str, options: FetchOptions, region: str, what: str):
    """GET ``path`` as a stream (redirects followed; 429/5xx retried by the session's bounded retries): (response,
    counted byte stream). Raises ProviderError for an answer other than 200 (a region file missing: 404)."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util import Retry

    url = path if path.startswith(("http://", "https://")) else base_url(options) + path
    session = requests.Session()
    retry = Retry(total=max(0, options.max_attempts - 1), backoff_factor=0.5,
                  status_forcelist=(429, 500, 502, 503, 504), allowed_methods=frozenset({"GET"}),
                  respect_retry_after_header=True, raise_on_status=False)
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.mount("https://", HTTPAdapter(max_retries=retry))
    try:
        resp = session.get(url, stream=True, timeout=options.timeout_s)
    except requests.RequestException as e:
        session.close()
        raise ProviderError(f"aws {region}: {what}: cannot reach {url.split('/')[2]}: {_reason(e)}") from None
    if resp.status_code != 200:
        resp.close()
        session.close()
        raise ProviderError(f"aws {region}: {what}: HTTP {resp.status_code} from {url}")
    resp.raw.decode_content = True
    length = resp.headers.get("Content-Length")
    encoded = resp.headers.get("Content-Encoding") not in (None, "", "identity")
    counted = _Counted(resp.raw, options, region, what, None if encoded or not length else int(length))
    return resp, session, counted


def gpu_kept(attrs: dict[str, str], known: set[str]) -> bool:
    """A price-list product is a GPU instance: a positive ``GPU`` count, or a type of the current GPU offers."""
    try:
        if float(attrs.get("gpu") or 0) > 0:
            return True
    except ValueError:
        pass
    return attrs.get("instanceType", "") in known


def _ec2_rows(region: str, path: str, options: FetchOptions, known: set[str]) -> tuple[list[dict], dict[str, str],
                                                                                        list, list]:
    """The GPU price rows of one region's EC2 CSV (streamed), the file's metadata, skipped rows and notes."""
    from providers.aws_import import bulk_products
    from providers.aws_prices import Collect, products_price_rows

    csv_path = path[:-len(".json")] + ".csv" if path.endswith(".json") else path
    resp, session, counted = _open_stream(csv_path, options, region, "EC2 price list")
    col = Collect(SOURCE_EC2)
    try:
        text = io.TextIOWrapper(io.BufferedReader(counted, buffer_size=1 << 20), encoding="utf-8-sig", newline="")
        products, meta = bulk_products(text, col, ("Linux",), keep=lambda a: gpu_kept(a, known))
    except UnicodeDecodeError as e:
        raise ProviderError(f"aws {region}: EC2 price list is not UTF-8 text: {e}") from None
    except InputError as e:  # a CR inside a field, a line csv cannot read: the download is refused, as a bad one
        raise ProviderError(f"aws {region}: EC2 price list: {e}") from None
    finally:
        resp.close()
        session.close()
    day = (meta.get("Publication Date") or "")[:10]
    if not day:
        raise ProviderError(f"aws {region}: the EC2 price list has no Publication Date line")
    rows = products_price_rows(products, col, as_of=day, operating_systems=("Linux",))
    options.say(NAME, region, f"EC2 price list: {len(rows)} GPU price rows of {counted.n / 2**20:,.0f} MB "
                              f"(published {day})")
    return rows, meta, list(col.skipped), list(col.notes)


def _json_items(stream) -> Iterator[tuple[str, Any]]:
    """(kind, object) of a Savings Plans file, streamed: ("publicationDate", text), ("product", {...}) and
    ("term", {...}) as they come (ijson's events built into objects one item at a time)."""
    import ijson

    builder, kind = None, None
    for prefix, event, value in ijson.parse(stream, use_float=False):
        if builder is not None:
            builder.event(event, value)
            if prefix == kind[1] and event == "end_map":
                yield kind[0], builder.value
                builder, kind = None, None
            continue
        if prefix == "publicationDate" and event == "string":
            yield "publicationDate", value
        elif event == "start_map" and prefix in ("products.item", "terms.savingsPlan.item"):
            builder = ijson.ObjectBuilder()
            builder.event(event, value)
            kind = ("product" if prefix == "products.item" else "term", prefix)


def _sp_results(region: str, path: str, options: FetchOptions, usage_types: set[str]) -> tuple[list[dict], str]:
    """The Savings Plans rates of one region's file (streamed) for the given usage types, as the search results of
    ``describe_savings_plans_offering_rates`` (so :func:`providers.aws_parse.savings_plans_rates_frame` checks them
    as it checks the API's), and the file's publication date."""
    import ijson

    resp, session, counted = _open_stream(path, options, region, "Savings Plans rates")
    products: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    published = ""
    try:
        for kind, obj in _json_items(counted):
            if kind == "publicationDate":
                published = str(obj)
            elif kind == "product" and isinstance(obj, dict):
                products[str(obj.get("sku"))] = obj
            elif kind == "term" and isinstance(obj, dict):
                prod = products.get(str(obj.get("sku"))) or {}
                attrs = prod.get("attributes") or {}
                lease = obj.get("leaseContractLength") or {}
                try:
                    years = float(lease.get("duration"))
                    seconds = int(round(years * YEAR_SECONDS)) if str(lease.get("unit", "")).lower().startswith(
                        "year") else None
                except (TypeError, ValueError):
                    seconds = None
                offering = {"planType": PLAN_TYPES.get(str(prod.get("productFamily")), str(prod.get("productFamily"))),
                            "paymentOption": attrs.get("purchaseOption"), "durationSeconds": seconds,
                            "offeringId": str(obj.get("sku") or "")}
                for rate in obj.get("rates") or []:
                    usage = str(rate.get("discountedUsageType") or "")
                    if usage.split("-", 1)[-1] not in usage_types and usage not in usage_types:
                        continue
                    price = rate.get("discountedRate") or {}
                    out.append({"productType": "EC2", "serviceCode": rate.get("discountedServiceCode"),
                                "usageType": usage, "operation": rate.get("discountedOperation"),
                                "unit": rate.get("unit"), "rate": str(price.get("price")),
                                "properties": [{"name": "region", "value": region}],
                                "savingsPlanOffering": {**offering, "currency": price.get("currency")}})
    except ijson.JSONError as e:
        raise TruncatedPriceList(f"aws {region}: Savings Plans rates: the JSON ends or breaks after "
                                 f"{counted.n:,} bytes: {e}", next=None) from None
    finally:
        resp.close()
        session.close()
    if not published:
        raise ProviderError(f"aws {region}: the Savings Plans file has no publicationDate")
    options.say(NAME, region, f"Savings Plans rates: {len(out)} GPU rates of {counted.n / 2**20:,.0f} MB "
                              f"(published {published[:10]})")
    return out, published[:10]


def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]:
    """I/O: one region's GPU prices from the bulk files (no credentials).

    1. The region's EC2 CSV, streamed: GPU products only (:func:`gpu_kept`), on-demand and every RI term.
    2. The region's Savings Plans JSON, streamed: the rates of the GPU types' Linux shared-tenancy usage types
       (``BoxUsage:<type>``), Compute and EC2 Instance, 1y and 3y, every payment option.
    3. The GPU facts of the current AWS offers, and the region's previous spot rows (the files have no spot price).

    Returns ``{"prices", "published", "skipped", "notes", "savings_plans": {"results", "published",
    "usage_types"}, "facts", "previous_spot"}``.

    Raises: ProviderError (a file missing or refused, not JSON/CSV), TruncatedPriceList (a body shorter than its
    Content-Length, or JSON that ends early), DeadlineReached.
    """
    from pricing_cache.refresh import previous_rows
    from providers.aws_import import facts_for_import
    from providers.aws_prices import Collect

    col = Collect(SOURCE_EC2)
    facts = facts_for_import(None, col)
    ec2 = region_index(options, EC2_REGION_INDEX, "price list region index")
    if region not in ec2:
        raise ProviderError(f"aws {region}: not in the EC2 price list's region index")
    prices, meta, skipped, notes = _ec2_rows(region, ec2[region], options, set(facts))
    usage = {str(r.get("instance_type")): f"BoxUsage:{r.get('instance_type')}" for r in prices
             if r.get("pricing") == "on_demand"}
    sp_index = region_index(options, SAVINGS_PLANS_REGION_INDEX, "Savings Plans region index")
    sp: dict[str, Any] = {"results": [], "published": None, "usage_types": usage}
    if region in sp_index and usage:
        results, published = _sp_results(region, sp_index[region], options, set(usage.values()))
        sp.update(results=results, published=published)
    elif usage:
        notes.append(f"aws {region}: no Savings Plans file in the region index")
    prev = previous_rows(NAME)
    spot = prev[(prev["region"].astype(str) == region).to_numpy()
                & ~prev["pricing"].astype(str).isin(FILE_PRICINGS).to_numpy()]
    return {"prices": prices, "published": (meta.get("Publication Date") or "")[:10], "skipped": skipped,
            "notes": notes + list(col.notes), "savings_plans": sp, "facts": facts, "previous_spot": spot}


def parse_region(raw: dict[str, Any], region: str, as_of: str):
    """PURE: :func:`fetch_region`'s payloads -> the region's offers (on-demand and reserved dated by the EC2 file's
    publication date, savings plans by theirs, the previous spot rows as they were).

    Returns providers._common.ParseResult. Raises PriceDataError on duplicate offer keys."""
    import pandas as pd

    from providers._common import ParseResult, check_unique, offers_frame
    from providers.aws_parse import facts_reasons, join_offers, savings_plan_offers
    from providers.aws_prices import Collect

    col = Collect(SOURCE_EC2, skipped=list(raw.get("skipped") or []), notes=list(raw.get("notes") or []))
    day = raw.get("published") or as_of
    rows = [dict(r, source=SOURCE_EC2) for r in raw["prices"]]
    out = join_offers(rows, raw["facts"], {}, col, region=region, as_of=day, no_facts_reason=facts_reasons(col),
                      facts_from="not among the GPU instance types of the current AWS offers (the price files name "
                                 "no GPU model)")
    sp = raw.get("savings_plans") or {}
    if sp.get("results"):
        out += savings_plan_offers({"pages": [{"searchResults": sp["results"]}], "usage_types": sp["usage_types"]},
                                   raw["facts"], out, col, region=region, as_of=sp.get("published") or day,
                                   source=SOURCE_SAVINGS_PLANS)
    df = offers_frame(out)
    spot = raw.get("previous_spot")
    if spot is not None and len(spot):
        df = pd.concat([df, spot[list(df.columns)].astype(df.dtypes.to_dict())], ignore_index=True)
        kinds = ", ".join(sorted(set(spot["pricing"].astype(str))))
        col.notes.append(f"aws {region}: {len(spot)} rows the price list files do not price ({kinds}) kept from "
                         "before with their own dates (`gpuopt prices refresh --source api` with credentials fetches "
                         "spot prices)")
    check_unique(df, f"aws {region} (price list files)")
    return ParseResult(offers=df, skipped=list(col.skipped), notes=list(col.notes))


#: ``prices refresh --source``: where AWS prices come from.
SOURCES = ("auto", "api", "bulk")


def has_credentials(profile: str | None = None) -> bool:
    """True when boto3's standard chain (or ``profile``) finds AWS credentials; an unknown profile counts as
    credentials asked for (the API path then says what is wrong with it)."""
    try:
        import boto3
        from botocore.exceptions import ProfileNotFound
    except ImportError:  # pragma: no cover - boto3 is a dependency
        return False
    try:
        return boto3.Session(profile_name=profile).get_credentials() is not None
    except ProfileNotFound:
        return True


def choose_adapters(source: str, profile: str | None, providers: list[str], adapters: dict[str, Any] | None
                    ) -> tuple[dict[str, Any] | None, str | None]:
    """The refresh's adapters for ``--source`` (``auto``, ``api``, ``bulk``) and the note to print: ``bulk`` -- and
    ``auto`` when AWS is refreshed and no credentials are found -- reads the public price list files (this module).

    Raises: InputError("source") for another value."""
    import sys

    from gpuopt.kernel.errors import InputError

    src = str(source or "auto").strip().lower()
    if src not in SOURCES:
        raise InputError("source", f"unknown AWS price source {source!r}", accepted=", ".join(SOURCES))
    if src != "auto" and providers and "aws" not in providers:
        raise InputError("source", f"--source {src} chooses where AWS prices come from, and --provider "
                                   f"{', '.join(providers)} does not refresh AWS", accepted="--provider aws, or no --source")
    if adapters and "aws" in adapters or src == "api" or (providers and "aws" not in providers):
        return adapters, None
    if src == "auto" and has_credentials(profile):
        return adapters, None
    why = ("aws: prices from the public AWS Price List files (--source bulk): on-demand, Reserved Instances and "
           "Savings Plans rates, dated by each file's publication date; no spot prices in them (the previous spot "
           "rows stay)")
    if src == "auto":
        why = "aws: no AWS credentials found, so " + why[len("aws: "):]
    return {**(adapters or {}), "aws": sys.modules[__name__]}, why
