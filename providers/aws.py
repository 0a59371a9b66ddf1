"""AWS live price adapter: the Pricing API (on-demand + reserved), EC2 ``describe_instance_types`` (GPU facts) and
EC2 ``describe_spot_price_history`` (spot), following the contract of :mod:`providers.base`.

Functions
=========

* :func:`list_regions`, :func:`fetch_region` (I/O only) and :func:`parse_region` (pure) — the live adapter.
* :func:`parse_price_list` — Pricing API ``PriceList`` entries -> one row per (instance type, region, term).
* :func:`parse_bulk_csv` — the AWS bulk offer file ``AmazonEC2/.../index.csv`` -> the same rows.
* :func:`parse_instance_types` — ``describe_instance_types`` pages -> GPU facts per instance type.
* :func:`parse_spot_history` — ``describe_spot_price_history`` pages -> newest Linux price per (type, zone).
* :func:`import_file` — ``gpuopt prices import FILE --format aws-price-list|aws-bulk-csv`` (offers + skipped).

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

GPU facts (PRICE_FAULTS BUG-10)
===============================

``GpuInfo.Gpus[i]``: ``Name`` -> :func:`providers.gpu_names.canonical_gpu` with the per-GPU memory (A100 40/80 GB,
V100 16/32 GB); ``gpu_count`` is a float: ``Count``, or for a GPU partition (``GpuPartitionSize`` < 1, AWS g6f)
``LogicalGpuCount x GpuPartitionSize`` (g6f.large: 1 x 0.125 — never 0, never rounded up to 1). ``gpu_memory_gib``
is the memory of ONE WHOLE GPU (the offer schema's meaning). For g6f, AWS reports the PARTITION's memory in
``MemoryInfo.SizeInMiB`` (g6f.large: 2,861 MiB = 22,888 / 8, with ``TotalGpuMemoryInMiB`` 2,861), so the whole
GPU is ``SizeInMiB / GpuPartitionSize`` = 22,888 MiB (22.35 GiB, the L4 that g6/g6e report). Checked on every
type: ``gpu_count x whole-GPU memory`` must equal ``TotalGpuMemoryInMiB`` (the instance total); when instead
``SizeInMiB`` itself is the whole GPU (total = fraction x SizeInMiB), it is used as is; a type matching neither is
kept with a note. ``vcpus`` = ``VCpuInfo.DefaultVCpus``, ``memory_gib`` = ``MemoryInfo.SizeInMiB / 1024``,
``interconnect`` from :func:`providers.skypilot.interconnect_for`. Types without ``GpuInfo`` are not GPU
instances; a GPU name :func:`canonical_gpu` does not know (``T4g``, ``K520``, ``RTX PRO 4500``...) is reported.

Spot
====

Newest price per (instance type, zone) among ``Linux/UNIX`` entries (moto labels them ``Linux/UNIX (Amazon VPC)``,
the EC2-Classic era name; both are Linux). ``zone`` is the AZ id (``use1-az1``, the same in every account and the
id SkyPilot's catalog uses) when the answer carries ``AvailabilityZoneId``, else the AZ name. Placeholders are
excluded and reported in :func:`parse_region`, where the on-demand price is known (``placeholder_spot``): spot
below 1 % of on-demand (moto serves 0.00001 for everything), spot >= on-demand, or spot 10 % of on-demand to within
rounding (max(0.005, 1e-4 x on-demand), the rule of :mod:`providers.skypilot`). Spot without a known on-demand
price cannot be checked: reported (``unverifiable_spot``).

Offers (:func:`parse_region`)
=============================

Exactly ``OFFER_COLUMNS``: on-demand and reserved rows per region (``zone`` ""; Standard and Convertible told apart
by ``offering_class``, schema 3), spot rows per zone and, when fetched, savings-plan rows (below). ``source`` is
``aws-pricing-api``, ``aws-ec2-spot-history`` or ``aws-savings-plans-api``. A priced type without GPU facts, a GPU
type without a Linux on-demand price, a price row of another region: skipped with a reason. ``check_unique`` at the
end.

Savings plans (:func:`fetch_savings_plans_rates`, :func:`savings_plans_rates_frame`)
====================================================================================

Only when the refresh asks for them (``FetchOptions.savings_plans``, read with getattr: :func:`wants_savings_plans`).
``savingsplans.describe_savings_plans_offering_rates`` (botocore model savingsplans 2019-06-28; no paginator, so
``nextToken`` is followed here, with the same page cap and cycle check as :func:`_all_pages`) with savingsPlanTypes
Compute and EC2Instance, products EC2, serviceCodes AmazonEC2, operations RunInstances (Linux/UNIX), the three payment
options, the region filter, and the usage types of the region's GPU types as the price list names them
(:func:`usage_types_for`: "BoxUsage:p5.48xlarge" in us-east-1, "USW2-BoxUsage:..." elsewhere). The request has no
duration field: 1- and 3-year rates both come back, told apart by ``durationSeconds`` (31,536,000 / 94,608,000).
Each rate is what one instance-hour of the type is charged against the plan, in USD per hour (``unit`` Hrs, never a
term total): rows ``savings_plan_1y`` / ``savings_plan_3y`` with ``offering_class`` ``compute`` or ``ec2_instance``,
``payment`` no/partial/all upfront, ``upfront_usd`` 0 and ``recurring_usd_per_hour`` = ``usd_per_hour`` = the rate
(the plan's commitment is a spend per hour, its size chosen by the buyer: records.PRICING_MODELS), ``term_hours``
8,760 / 26,280. A rate not below the type's on-demand rate (``implausible_commitment``), a rate without an on-demand
rate (``unverifiable_savings_plan``), a 3-year rate not below the 1-year one (``longer_term_not_cheaper``) are
reported; a GPU type asked for with no rate, or with only some of its 12, is named in the notes.

Fetching (:func:`fetch_region`)
===============================

Clients: ``options.clients`` may hold pre-built clients (tests inject botocore ``Stubber``-wrapped or moto
clients); missing ones are built from ``boto3.Session(profile_name=options.profile)`` (the standard credential
chain) with :func:`client_config`. Keys (see :data:`CLIENT_KEYS`):

* ``"pricing"`` — the Pricing API client (region us-east-1). One is built on first use and stored back under this
  key, so every region's worker thread shares it (one connection pool and one retry quota for the Pricing API).
* ``"ec2:<region>"`` — the EC2 client of that region (``describe_instance_types``, ``describe_spot_price_history``).
* ``"ec2"`` — the EC2 client :func:`list_regions` calls ``describe_regions`` on (else ``"ec2:us-east-1"``, else one
  built for us-east-1).
* ``"savingsplans"`` — the Savings Plans client (global service, built for us-east-1 and shared like "pricing").

Retries are botocore's own (:func:`client_config`): ``retries={"mode": "standard", "total_max_attempts":
options.max_attempts}`` (the Pricing client's mode is PRICING_RETRY_MODE; ``total_max_attempts`` counts the first
attempt, as ``FetchOptions.max_attempts`` does, while botocore's ``max_attempts`` key counts retries only),
``connect_timeout``/``read_timeout`` = ``options.timeout_s``. Throttling (ThrottlingException,
RequestLimitExceeded...) and 5xx are retried with botocore's exponential backoff and jitter, within the call's
budget of timeout x attempts seconds (:func:`bound_retries`, the REST adapters' rule). Paging uses botocore's
paginators; :func:`_all_pages` stops with ``TruncatedPriceList(next=NextToken)`` when ``options.max_pages`` pages
were read and a NextToken is still pending, or when a NextToken comes back a second time (a cycle; botocore alone
only catches the same token twice in a row) — never a shorter list (PRICE_FAULTS BUG-08).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import (FILLED_FROM_FACTS, OFFER_COLUMNS, OFFER_DTYPES, SAVINGS_PLAN_TERM_HOURS, TERM_HOURS,
                             SkippedRow)
from providers._common import ParseResult, check_unique, fill_facts, float_or_none, hourly_row, offers_frame
from providers.base import FetchOptions, InvalidCredentials, MissingCredentials, RegionSkipped, TruncatedPriceList
from providers.gpu_names import canonical_gpu
from providers.skypilot import interconnect_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "aws"

SOURCE_PRICING = "aws-pricing-api"
SOURCE_SPOT = "aws-ec2-spot-history"
SOURCE_TYPES = "aws-ec2-describe-instance-types"
SOURCE_BULK = "aws-bulk-csv"
SOURCE_SAVINGS_PLANS = "aws-savings-plans-api"

#: The Pricing API's endpoint region (it also answers in eu-central-1 and ap-south-1).
PRICING_REGION = "us-east-1"

#: botocore retry mode of the Pricing client. "standard": backoff with jitter on throttling and 5xx. ("adaptive"
#: would add a client-side rate limiter, which after one throttle drops the shared client to ~0.5 requests/s.)
PRICING_RETRY_MODE = "standard"

#: The keys of FetchOptions.clients this adapter reads (see the module docstring).
CLIENT_KEYS = ("pricing", "ec2:<region>", "ec2", "savingsplans")

#: The Savings Plans API is global (botocore's model: ``globalEndpoint`` savingsplans.amazonaws.com); its client is
#: built for this region.
SAVINGS_PLANS_REGION = "us-east-1"
#: ``savingsPlanOffering.planType`` -> ``offering_class`` (records.SAVINGS_PLAN_CLASSES). SageMaker and Database
#: plans do not cover EC2 instances.
SAVINGS_PLAN_TYPES: dict[str, str] = {"Compute": "compute", "EC2Instance": "ec2_instance"}
#: ``savingsPlanOffering.durationSeconds`` -> pricing: 365 d and 3 x 365 d (the 8,760 / 26,280 h of
#: records.SAVINGS_PLAN_TERM_HOURS). Any other duration is reported, never mapped to the nearest term.
SAVINGS_PLAN_DURATIONS: dict[int, str] = {31536000: "savings_plan_1y", 94608000: "savings_plan_3y"}
#: Rates per request page (the model's ``PageSize`` maximum) and usage types per request (a chunk is paged to its end).
SAVINGS_PLANS_PAGE_SIZE = 1000
SAVINGS_PLANS_USAGE_TYPES_PER_CALL = 100
#: ``operation`` of a Linux/UNIX instance-hour (Windows is RunInstances:0002, RHEL :0010 ...).
LINUX_OPERATION = "RunInstances"

#: The product variant that is priced: attribute -> required value (operatingSystem: see ``operating_systems``).
VARIANT: dict[str, str] = {
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "licenseModel": "No License required",
    "capacitystatus": "Used",
}

#: Pricing API filters of :func:`fetch_region` (regionCode and the instance family/type are added per call).
PRICING_FILTERS: tuple[tuple[str, str], ...] = (
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
    ("licenseModel", "No License required"),
)
GPU_INSTANCE_FAMILY = "GPU instance"

#: Spot product descriptions that are Linux (moto answers with the EC2-Classic era "(Amazon VPC)" name).
LINUX_SPOT = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")

#: EC2 error code meaning "this region is not enabled for the account" and nothing else.
REGION_NOT_ENABLED = ("OptInRequired",)
#: Error codes EC2 answers both for a region the account has not enabled and for credentials it does not accept:
#: :func:`_region_or_credentials` asks ``describe_regions`` in PRICING_REGION (always enabled) which one it is.
REGION_OR_CREDENTIALS = ("AuthFailure", "UnrecognizedClientException")
#: Error codes meaning the credentials themselves were refused, in any region and service (STS/IAM-style
#: InvalidClientTokenId, a wrong secret key: SignatureDoesNotMatch, an expired session token: ExpiredToken...).
CREDENTIALS_REFUSED = ("InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken", "ExpiredTokenException",
                       "InvalidAccessKeyId", "InvalidToken", "UnrecognizedClientException", "AuthFailure")

CREDENTIALS_HOWTO = ("AWS credentials not found: run `aws configure` (or `aws sso login --profile NAME` and pass "
                     "--profile NAME), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; the Pricing API and EC2 "
                     "need pricing:GetProducts, ec2:DescribeRegions, ec2:DescribeInstanceTypes, "
                     "ec2:DescribeSpotPriceHistory (and savingsplans:DescribeSavingsPlansOfferingRates for savings "
                     "plans)")

_PAYMENT = {"No Upfront": "no_upfront", "Partial Upfront": "partial_upfront", "All Upfront": "all_upfront"}
_LEASE = {"1yr": "reserved_1y", "3yr": "reserved_3y", "1 yr": "reserved_1y", "3 yr": "reserved_3y"}
_REGION_RE = re.compile(r"^[a-z]{2,4}(-[a-z]+)+-\d+$")
_PRICE_EXTRA = ("operating_system",)

#: Placeholder spot thresholds (see the module docstring).
SPOT_MIN_SHARE = 0.01


# ----------------------------------------------------------------------------------------------------------------
# price list: Pricing API entries and the bulk CSV
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class _Product:
    """One EC2 product (a SKU) with its terms, whatever file or API it came from."""

    sku: str
    family: str
    attrs: dict[str, str]
    terms: dict[str, dict[str, Any]]  # {"OnDemand": {code: term}, "Reserved": {code: term}}
    published: str = ""
    line: int = 0  # first line in a line-oriented file, else 0


@dataclass
class _Collect:
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


def _variant_reason(attrs: dict[str, str], operating_systems: tuple[str, ...]) -> str | None:
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


def _price_rows(products: Iterable[_Product], col: _Collect, *, as_of: str | None,
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
        why = _variant_reason(a, operating_systems)
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


def _term_row(p: _Product, kind: str, term: dict[str, Any], base: dict[str, Any], col: _Collect
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
    payment = _PAYMENT.get(str(ta.get("PurchaseOption", "")).strip())
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


def _price_frame(rows: list[dict[str, Any]], col: _Collect) -> "pd.DataFrame":
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


def _load_json(value: Any) -> Any:
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


def _price_entries(items: Any) -> list[Any]:
    """Flatten what parse_price_list accepts into a list of PriceList entries (strings or dicts)."""
    data = _load_json(items)
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


def _products_from_entries(entries: list[Any]) -> Iterator[_Product]:
    from providers._input import check_shape, loads_json

    for i, e in enumerate(entries, 1):
        d = loads_json(e, f"PriceList entry {i}") if isinstance(e, (str, bytes)) else e
        if not isinstance(d, dict) or "product" not in d:
            raise InputError("price_list", f"entry {i} is not a Pricing API product (no 'product' key)")
        check_shape(d, PRODUCT_SHAPE, f"PriceList entry {i}", field="price_list")
        prod = d["product"]
        attrs = {str(k): str(v) for k, v in (prod.get("attributes") or {}).items()}
        yield _Product(sku=str(prod.get("sku", "")), family=str(prod.get("productFamily", "")), attrs=attrs,
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
    col = _Collect(source)
    rows = _price_rows(_products_from_entries(_price_entries(items)), col, as_of=as_of,
                       operating_systems=tuple(operating_systems))
    col.filtered_note("product variants")
    return _price_frame(rows, col)


#: Bulk CSV column -> Pricing API attribute name.
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
    if isinstance(text_or_path, Path):
        return open(text_or_path, encoding="utf-8-sig", newline=""), text_or_path.name
    s = str(text_or_path)
    if "\n" not in s and len(s) < 4096 and Path(s).is_file():
        return open(s, encoding="utf-8-sig", newline=""), Path(s).name
    return io.StringIO(s.lstrip("\ufeff"), newline=""), "<text>"


def _bulk_products(fh, col: _Collect, operating_systems: tuple[str, ...]) -> tuple[list[_Product], dict[str, str]]:
    reader = csv.reader(fh)
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

    products: dict[str, _Product] = {}
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
            else:
                why = _variant_reason(attrs, operating_systems)
            if why:
                filtered_skus[sku] = why
                col.filtered[why] += 1
                continue
            p = products[sku] = _Product(sku=sku, family=family, attrs=attrs, terms={}, published=published,
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
    col = _Collect(source)
    oss = tuple(operating_systems)
    with fh:
        products, meta = _bulk_products(fh, col, oss)
    day = as_of if as_of is not None else meta.get("Publication Date", "")[:10]
    rows = _price_rows(products, col, as_of=day, operating_systems=oss)
    col.filtered_note("products (SKUs)")
    return _price_frame(rows, col)


# ----------------------------------------------------------------------------------------------------------------
# describe_instance_types -> GPU facts
# ----------------------------------------------------------------------------------------------------------------


def _type_entries(payload: Any) -> list[dict[str, Any]]:
    data = _load_json(payload)
    if isinstance(data, dict):
        if "InstanceTypes" in data:
            return list(data["InstanceTypes"] or [])
        if "InstanceType" in data:
            return [data]
        # moto-style {type: entry}
        if all(isinstance(v, dict) and "InstanceType" in v for v in data.values()):
            return list(data.values())
    if isinstance(data, list):
        out: list[dict[str, Any]] = []
        for x in data:
            if isinstance(x, dict) and "InstanceTypes" in x:
                out.extend(x["InstanceTypes"] or [])
            elif isinstance(x, dict) and "InstanceType" in x:
                out.append(x)
            else:
                raise InputError("instance_types", "a list element is neither a describe_instance_types page nor "
                                 "an instance type")
        return out
    raise InputError("instance_types", "not describe_instance_types output",
                     accepted="pages ({'InstanceTypes': [...]}), one page, or a list of instance types")


def _gpu_facts(t: dict[str, Any], col: _Collect) -> dict[str, Any] | None:
    itype = str(t.get("InstanceType", ""))
    info = t.get("GpuInfo") or {}
    gpus = info.get("Gpus") or []
    if not gpus:
        return None
    names = {str(g.get("Name", "")) for g in gpus}
    if len(names) != 1:
        col.skip(0, itype, "", f"unknown_gpu: mixed GPUs {sorted(names)} in one instance type", SOURCE_TYPES)
        return None
    count = 0.0
    size_mib = None
    partition = 1.0
    for g in gpus:
        part = float_or_none(g.get("GpuPartitionSize"))
        logical = float_or_none(g.get("LogicalGpuCount"))
        c = float_or_none(g.get("Count")) or 0.0
        if part is not None and 0 < part < 1 and logical:
            count += logical * part  # BUG-10: g6f.large = 1 x 0.125, never Count (0), never rounded up
            partition = part
        else:
            count += c
        size_mib = float_or_none((g.get("MemoryInfo") or {}).get("SizeInMiB"))
    name = names.pop()
    if count <= 0:
        col.skip(0, itype, "", f"no_gpu: GpuInfo lists {name} with Count 0 and no GPU partition", SOURCE_TYPES)
        return None
    total = float_or_none(info.get("TotalGpuMemoryInMiB"))
    whole = None
    if size_mib:
        # the whole GPU: SizeInMiB is the partition's memory on AWS g6f (total = count x SizeInMiB / partition)
        candidates = [size_mib / partition, size_mib] if partition < 1 else [size_mib]
        whole = candidates[0]
        if total:
            fits = [w for w in candidates if abs(count * w - total) <= max(2.0, 0.005 * total)]
            if fits:
                whole = fits[0]
            else:
                col.notes.append(f"{itype}: gpu_count {count:g} x per-GPU memory {whole:g} MiB != "
                                 f"TotalGpuMemoryInMiB {total:g}; per-GPU memory kept from GpuInfo")
    gpu = canonical_gpu(name, memory_mib=whole, provider=NAME, instance_type=itype)
    if gpu is None:
        col.skip(0, itype, "", f"unknown_gpu: GpuInfo name '{name}' is not a canonical GPU name", SOURCE_TYPES)
        return None
    if not whole:
        col.skip(0, itype, "", f"unknown_gpu_memory: GpuInfo gives no memory for {name}", SOURCE_TYPES)
        return None
    vcpus = float_or_none((t.get("VCpuInfo") or {}).get("DefaultVCpus"))
    mem = float_or_none((t.get("MemoryInfo") or {}).get("SizeInMiB"))
    return {"instance_type": itype, "gpu_name": name, "gpu_model": gpu, "gpu_count": float(count),
            "gpu_memory_gib": whole / 1024.0, "total_gpu_memory_gib": (total / 1024.0) if total else float("nan"),
            "vcpus": vcpus if vcpus is not None else float("nan"),
            "memory_gib": mem / 1024.0 if mem is not None else float("nan"),
            "interconnect": interconnect_for(NAME, itype)}


def _instance_facts(payload: Any, col: _Collect) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """(facts by GPU instance type, every instance type seen)."""
    facts: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    no_gpu = 0
    for t in _type_entries(payload):
        itype = str(t.get("InstanceType", ""))
        if not itype or itype in seen:
            continue
        seen.add(itype)
        if not (t.get("GpuInfo") or {}).get("Gpus"):
            no_gpu += 1
            continue
        f = _gpu_facts(t, col)
        if f is not None:
            facts[itype] = f
    if no_gpu:
        col.notes.append(f"{no_gpu} instance type(s) without GpuInfo (not GPU instances)")
    return facts, seen


FACT_COLUMNS = ("instance_type", "gpu_name", "gpu_model", "gpu_count", "gpu_memory_gib", "total_gpu_memory_gib",
                "vcpus", "memory_gib", "interconnect")


def parse_instance_types(payload: Any) -> "pd.DataFrame":
    """``describe_instance_types`` output -> GPU facts, one row per GPU instance type (see the module docstring).

    Args:
        payload: a list of pages (``{"InstanceTypes": [...]}``), one page, a list of instance type dicts, moto's
            ``{type: entry}`` table, or the text / path of a JSON file holding one of these.

    Returns:
        DataFrame with FACT_COLUMNS: instance_type, gpu_name (AWS's name), gpu_model (canonical), gpu_count (float;
        fractional GPUs: LogicalGpuCount x GpuPartitionSize), gpu_memory_gib (ONE WHOLE GPU), total_gpu_memory_gib
        (TotalGpuMemoryInMiB / 1024: the instance's, for a partition the share's), vcpus, memory_gib, interconnect.
        ``df.attrs["skipped"]``: GPU types that could not be used (``unknown_gpu``...); ``df.attrs["notes"]``.
    """
    import pandas as pd

    col = _Collect(SOURCE_TYPES)
    facts, _ = _instance_facts(payload, col)
    if facts:
        df = pd.DataFrame.from_records(sorted(facts.values(), key=lambda f: f["instance_type"]))[list(FACT_COLUMNS)]
    else:
        df = pd.DataFrame({c: pd.Series([], dtype="object") for c in FACT_COLUMNS})
    df.attrs["skipped"] = list(col.skipped)
    df.attrs["notes"] = list(col.notes)
    return df


# ----------------------------------------------------------------------------------------------------------------
# describe_spot_price_history -> newest price per (type, zone)
# ----------------------------------------------------------------------------------------------------------------


def _timestamp(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        ts = value
    elif value is None:
        return None
    else:
        try:
            ts = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return ts.astimezone(dt.timezone.utc)


def _spot_entries(payload: Any) -> list[dict[str, Any]]:
    data = _load_json(payload)
    if isinstance(data, dict):
        return list(data.get("SpotPriceHistory") or [])
    if isinstance(data, list):
        out: list[dict[str, Any]] = []
        for x in data:
            if isinstance(x, dict) and "SpotPriceHistory" in x:
                out.extend(x["SpotPriceHistory"] or [])
            elif isinstance(x, dict) and "SpotPrice" in x:
                out.append(x)
            else:
                raise InputError("spot", "a list element is neither a describe_spot_price_history page nor an entry")
        return out
    raise InputError("spot", "not describe_spot_price_history output",
                     accepted="pages ({'SpotPriceHistory': [...]}), one page, or a list of entries")


def _spot_newest(payload: Any, col: _Collect) -> dict[tuple[str, str], dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    other = Counter()
    for e in _spot_entries(payload):
        desc = str(e.get("ProductDescription", ""))
        if desc not in LINUX_SPOT:
            other[desc] += 1
            continue
        itype = str(e.get("InstanceType", ""))
        zone = str(e.get("AvailabilityZoneId") or e.get("AvailabilityZone") or "")
        ts = _timestamp(e.get("Timestamp"))
        if not itype or not zone or ts is None:
            col.skip(0, itype, "", f"unknown_spot: entry without instance type, zone or timestamp: {e}", SOURCE_SPOT)
            continue
        groups.setdefault((itype, zone), []).append({**e, "_ts": ts, "_zone": zone,
                                                     "_price": float_or_none(e.get("SpotPrice"))})
    if other:
        col.notes.append("spot entries of other products not used: " +
                         ", ".join(f"{k} ({n})" for k, n in sorted(other.items())))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (itype, zone), grp in sorted(groups.items()):
        newest_ts = max(g["_ts"] for g in grp)
        newest = [g for g in grp if g["_ts"] == newest_ts]
        if len(newest) > 1:  # the same instant twice: prefer the exact "Linux/UNIX" label, prices must agree
            exact = [g for g in newest if g.get("ProductDescription") == "Linux/UNIX"]
            newest = exact or newest
        prices = {g["_price"] for g in newest}
        if len(prices) > 1:
            col.skip(0, itype, "", f"conflicting_price: zone {zone} has spot prices {sorted(map(str, prices))} at "
                                   f"the same time {newest_ts.isoformat()}; none kept", SOURCE_SPOT)
            continue
        g = newest[0]
        price = g["_price"]
        if price is None or price <= 0:
            code = "unknown_price" if price is None else "zero_price"
            col.skip(0, itype, "", f"{code}: newest spot price in {zone} is {g.get('SpotPrice')!r} (older prices are "
                                   "not current)", SOURCE_SPOT)
            continue
        out[(itype, zone)] = {"instance_type": itype, "zone": zone,
                              "availability_zone": str(g.get("AvailabilityZone") or ""),
                              "availability_zone_id": str(g.get("AvailabilityZoneId") or ""),
                              "spot_usd_per_hour": price, "timestamp": newest_ts.isoformat(),
                              "product_description": str(g.get("ProductDescription", "")), "entries": len(grp)}
    return out


SPOT_COLUMNS = ("instance_type", "zone", "availability_zone", "availability_zone_id", "spot_usd_per_hour",
                "timestamp", "product_description", "entries")


def parse_spot_history(payload: Any) -> "pd.DataFrame":
    """``describe_spot_price_history`` output -> the newest Linux/UNIX price per (instance type, zone).

    Args:
        payload: pages (``{"SpotPriceHistory": [...]}``), one page, a list of entries, or a JSON file's text / path.
            ``Timestamp`` may be a datetime (boto3) or an ISO string (saved JSON).

    Returns:
        DataFrame with SPOT_COLUMNS (``zone`` = AZ id when given, else AZ name; ``entries`` = how many history
        entries the zone had). Placeholders are NOT judged here (that needs the on-demand price: parse_region).
        ``df.attrs["skipped"]``: zero/unknown newest prices, conflicting prices at one instant.
    """
    import pandas as pd

    col = _Collect(SOURCE_SPOT)
    newest = _spot_newest(payload, col)
    if newest:
        df = pd.DataFrame.from_records(list(newest.values()))[list(SPOT_COLUMNS)]
    else:
        df = pd.DataFrame({c: pd.Series([], dtype="object") for c in SPOT_COLUMNS})
    df.attrs["skipped"] = list(col.skipped)
    df.attrs["notes"] = list(col.notes)
    return df


# ----------------------------------------------------------------------------------------------------------------
# joining: offers
# ----------------------------------------------------------------------------------------------------------------


def _spot_placeholder(spot: float, od: float) -> str | None:
    if spot >= od - 1e-12:
        return f"spot {spot} >= on-demand {od}"
    if spot < SPOT_MIN_SHARE * od:
        return f"spot {spot} is below {SPOT_MIN_SHARE:.0%} of on-demand {od}"
    if abs(spot - 0.1 * od) <= max(0.005, 1e-4 * od):
        return f"spot {spot} is 10% of on-demand {od} (within rounding)"
    return None


_GPU_FIELDS = ("gpu_model", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "interconnect")


def _offers(price_rows: list[dict[str, Any]], facts: dict[str, dict[str, Any]], spot: dict[tuple[str, str], dict],
            col: _Collect, *, region: str | None, as_of: str | None, no_facts_reason: dict[str, str],
            facts_from: str = "no GpuInfo in describe_instance_types") -> list[dict[str, Any]]:
    """Join price rows, GPU facts and spot prices into offer dicts (OFFER_COLUMNS)."""
    out: list[dict[str, Any]] = []
    reported: set[str] = set()
    od: dict[tuple[str, str], float] = {}
    for r in price_rows:
        itype = r["instance_type"]
        if region is not None and r["region"] != region:
            col.skip(0, itype, r["region"], f"other_region: a price row of {r['region']} in the answer for {region}")
            continue
        f = facts.get(itype)
        if f is None:
            if itype not in reported and itype not in no_facts_reason:  # (those are reported already)
                reported.add(itype)
                col.skip(0, itype, r["region"], f"no_gpu: no GPU facts for {itype} ({facts_from}); its price rows "
                                                "are not GPU offers")
            continue
        row = {c: r[c] for c in OFFER_COLUMNS if c not in FILLED_FROM_FACTS}  # fabric, zone_kind: by offers_frame
        row.update({k: f[k] for k in _GPU_FIELDS})
        if as_of is not None:
            row["as_of"] = as_of
        out.append(row)
        if r["pricing"] == "on_demand":
            od[(itype, r["region"])] = float(r["usd_per_hour"])
    priced_types = {(r["instance_type"], r["region"]) for r in price_rows}
    if region is not None:
        for itype in sorted(facts):
            if (itype, region) not in priced_types:
                col.skip(0, itype, region, "unknown_price: no Linux on-demand price for this GPU instance type in the "
                                           "Pricing API answer; a missing price is unknown, never 0")
    for (itype, zone), s in sorted(spot.items()):
        f = facts.get(itype)
        reg = region if region is not None else ""
        if f is None:
            col.skip(0, itype, reg, f"no_gpu: spot price in {zone} for an instance type without GPU facts",
                     SOURCE_SPOT)
            continue
        price = float(s["spot_usd_per_hour"])
        o = od.get((itype, reg))
        if o is None:
            col.skip(0, itype, reg, f"unverifiable_spot: spot {price} in {zone} but the on-demand price is unknown, "
                                    "so it cannot be checked for placeholders", SOURCE_SPOT)
            continue
        why = _spot_placeholder(price, o)
        if why:
            col.skip(0, itype, reg, f"placeholder_spot: {why} in {zone}", SOURCE_SPOT)
            continue
        base = {"provider": NAME, "region": reg, "zone": zone, "instance_type": itype,
                **{k: f[k] for k in _GPU_FIELDS}, "currency": "USD", "source": SOURCE_SPOT,
                "as_of": as_of if as_of is not None else s["timestamp"][:10]}
        out.append(hourly_row("spot", price, **base))
    return out


# ----------------------------------------------------------------------------------------------------------------
# savings plans: describe_savings_plans_offering_rates -> savings_plan_1y / savings_plan_3y rows
# ----------------------------------------------------------------------------------------------------------------

SAVINGS_PLAN_COLUMNS = ("instance_type", "region", "pricing", "payment", "offering_class", "usd_per_hour",
                        "term_hours", "currency", "usage_type", "offering_id")


def _sp_results(pages: Any) -> list[dict[str, Any]]:
    """The ``searchResults`` of describe_savings_plans_offering_rates pages (a response, a list of responses, or
    fetch_region's ``{"pages": [...]}``)."""
    data = _load_json(pages)
    if isinstance(data, dict) and "pages" in data:
        data = data["pages"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError("savings_plans", f"expected a response or a list of responses, got {type(data).__name__}",
                         accepted="describe_savings_plans_offering_rates responses")
    out: list[dict[str, Any]] = []
    for i, page in enumerate(data, 1):
        results = page.get("searchResults") if isinstance(page, dict) else None
        if not isinstance(results, list):
            raise InputError("savings_plans", f"page {i} has no 'searchResults' list",
                             accepted="describe_savings_plans_offering_rates responses")
        out.extend(r for r in results if isinstance(r, dict))
    return out


def savings_plans_rates_frame(pages: Any, *, region: str | None = None) -> "pd.DataFrame":
    """Savings-plan rates of EC2 Linux instance-hours from ``describe_savings_plans_offering_rates`` pages (pure).

    Each search result is the rate one instance-hour of a type is charged against one savings-plan offering
    (botocore model savingsplans 2019-06-28, ``SavingsPlanOfferingRate``: ``rate`` a string in ``unit`` "Hrs",
    ``savingsPlanOffering {planType, paymentOption, durationSeconds, currency, offeringId}``, ``usageType``,
    ``operation``, ``properties [{name, value}]``). Kept: productType EC2, serviceCode AmazonEC2, operation
    ``RunInstances`` (Linux/UNIX), a ``BoxUsage`` usage type (shared tenancy), planType Compute or EC2Instance,
    durationSeconds 31,536,000 or 94,608,000, a payment option of the three, unit Hrs, a currency, a rate > 0.

    Args:
        pages: one response, a list of responses (every page), fetch_region's ``{"pages": [...]}``, JSON text or a
            path to a JSON file of any of these.
        region: when given, results whose ``region`` property names another region are reported (``other_region``).

    Returns:
        DataFrame with :data:`SAVINGS_PLAN_COLUMNS`, one row per (instance_type, region, pricing, payment,
        offering_class): ``usd_per_hour`` the rate in ``currency`` per instance-hour (hourly, never a term total),
        ``pricing`` savings_plan_1y / savings_plan_3y, ``offering_class`` compute / ec2_instance, ``term_hours``
        8,760 / 26,280. ``df.attrs["skipped"]`` (SkippedRow, reasons ``not_linux``, ``not_shared``, ``not_ec2``,
        ``unknown_plan_type``, ``unknown_term``, ``unknown_payment``, ``unexpected_unit``, ``unknown_currency``,
        ``zero_price``, ``unknown_price``, ``other_region``, ``unknown_instance_type``, ``duplicate``,
        ``conflicting_price``) and ``df.attrs["notes"]``.

    Raises:
        InputError: not describe_savings_plans_offering_rates output.
    """
    import pandas as pd

    col = _Collect(SOURCE_SAVINGS_PLANS)
    rows: list[dict[str, Any]] = []
    for r in _sp_results(pages):
        off = r.get("savingsPlanOffering") or {}
        props = {str(p.get("name")): str(p.get("value")) for p in (r.get("properties") or []) if isinstance(p, dict)}
        usage = str(r.get("usageType") or "")
        itype = props.get("instanceType") or (usage.split("BoxUsage:", 1)[1] if "BoxUsage:" in usage else "")
        reg = props.get("region") or (region or "")

        def skip(reason: str) -> None:
            col.skip(0, itype, reg, reason)

        if r.get("productType") not in (None, "EC2") or r.get("serviceCode") not in (None, "AmazonEC2"):
            skip(f"not_ec2: productType {r.get('productType')} / serviceCode {r.get('serviceCode')}")
            continue
        if str(r.get("operation") or "") != LINUX_OPERATION or props.get("productDescription", LINUX_SPOT[0]) \
                not in LINUX_SPOT:
            skip(f"not_linux: operation '{r.get('operation')}' / productDescription "
                 f"'{props.get('productDescription', '')}' (Linux/UNIX is operation RunInstances)")
            continue
        if "BoxUsage:" not in usage or props.get("tenancy", "shared").lower() != "shared":
            skip(f"not_shared: usageType '{usage}' / tenancy '{props.get('tenancy', '')}' (shared-tenancy "
                 "instance-hours are BoxUsage)")
            continue
        if not itype:
            skip("unknown_instance_type: no instanceType property and no BoxUsage:<type> usage type")
            continue
        if region and props.get("region") and props["region"] != region:
            skip(f"other_region: a rate of {props['region']} in the answer for {region}")
            continue
        if not reg:
            skip("unknown_region: no region property and no region given")
            continue
        klass = SAVINGS_PLAN_TYPES.get(str(off.get("planType") or ""))
        if klass is None:
            skip(f"unknown_plan_type: planType '{off.get('planType')}' (EC2 instances: "
                 f"{', '.join(SAVINGS_PLAN_TYPES)})")
            continue
        try:
            pricing = SAVINGS_PLAN_DURATIONS.get(int(off.get("durationSeconds")))
        except (TypeError, ValueError):
            pricing = None
        if pricing is None:
            skip(f"unknown_term: durationSeconds {off.get('durationSeconds')!r} is not 1 or 3 years "
                 "(31536000 / 94608000)")
            continue
        payment = _PAYMENT.get(str(off.get("paymentOption") or ""))
        if payment is None:
            skip(f"unknown_payment: paymentOption {off.get('paymentOption')!r}")
            continue
        if str(r.get("unit") or "") != "Hrs":
            skip(f"unexpected_unit: unit '{r.get('unit')}' (an instance-hour rate is in Hrs)")
            continue
        currency = str(off.get("currency") or "")
        if not currency:
            skip("unknown_currency: savingsPlanOffering has no currency; a rate's currency is never assumed")
            continue
        rate = float_or_none(r.get("rate"))
        if rate is None:
            skip(f"unknown_price: rate {r.get('rate')!r}; a missing price is unknown, never 0")
            continue
        if rate <= 0:
            skip(f"zero_price: rate {r.get('rate')} is not a price" if rate == 0 else
                 f"invalid_price: negative rate {rate}")
            continue
        rows.append({"instance_type": itype, "region": reg, "pricing": pricing, "payment": payment,
                     "offering_class": klass, "usd_per_hour": rate, "term_hours": SAVINGS_PLAN_TERM_HOURS[pricing],
                     "currency": currency, "usage_type": usage, "offering_id": str(off.get("offeringId") or "")})
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["instance_type"], row["region"], row["pricing"], row["payment"],
                           row["offering_class"]), []).append(row)
    kept: list[dict[str, Any]] = []
    for key, grp in sorted(groups.items()):
        values = sorted({(g["usd_per_hour"], g["currency"]) for g in grp})
        if len(values) > 1:
            for g in grp:
                col.skip(0, key[0], key[1], f"conflicting_price: {key[2]} {key[3]} {key[4]} has rates {values} in "
                                            "one answer; none kept")
            continue
        kept.append(grp[0])
        for g in grp[1:]:
            col.skip(0, key[0], key[1], f"duplicate: the same {key[2]} {key[3]} {key[4]} rate again "
                                        f"(offering {g['offering_id'] or '?'}); collapsed")
    df = pd.DataFrame.from_records(kept, columns=list(SAVINGS_PLAN_COLUMNS))
    df = df.astype({"usd_per_hour": "float64", "term_hours": "float64"})
    df.attrs["skipped"] = list(col.skipped)
    df.attrs["notes"] = list(col.notes)
    return df


def _savings_plan_offers(raw: Any, facts: dict[str, dict[str, Any]], offers: list[dict[str, Any]], col: _Collect,
                         *, region: str, as_of: str) -> list[dict[str, Any]]:
    """Offer dicts (OFFER_COLUMNS) of the savings-plan rates of the GPU types with facts, each checked against the
    type's on-demand rate in ``offers``; what is left out is reported in ``col``."""
    sp = savings_plans_rates_frame(raw, region=region)
    col.skipped.extend(sp.attrs["skipped"])
    col.notes.extend(sp.attrs["notes"])
    od = {(o["instance_type"], o["region"]): o for o in offers if o["pricing"] == "on_demand"}
    one_year = {(r.instance_type, r.payment, r.offering_class): r.usd_per_hour for r in sp.itertuples()
                if r.pricing == "savings_plan_1y"}
    out: list[dict[str, Any]] = []
    counts: Counter = Counter()
    for r in sp.itertuples(index=False):
        what = f"{r.pricing} {r.payment} {r.offering_class}"
        f = facts.get(r.instance_type)
        if f is None:
            counts["no GPU facts"] += 1
            continue
        base = od.get((r.instance_type, r.region))
        if base is None:
            col.skip(0, r.instance_type, r.region, f"unverifiable_savings_plan: {what} rate {r.usd_per_hour} but no "
                                                   "on-demand price to check it against", SOURCE_SAVINGS_PLANS)
            continue
        if r.currency != base["currency"]:
            col.skip(0, r.instance_type, r.region, f"currency_mismatch: {what} rate in {r.currency}, on-demand in "
                                                   f"{base['currency']}", SOURCE_SAVINGS_PLANS)
            continue
        if r.usd_per_hour >= float(base["usd_per_hour"]):
            col.skip(0, r.instance_type, r.region, f"implausible_commitment: {what} rate {r.usd_per_hour} is not "
                                                   f"below on-demand {base['usd_per_hour']}", SOURCE_SAVINGS_PLANS)
            continue
        y1 = one_year.get((r.instance_type, r.payment, r.offering_class))
        if r.pricing == "savings_plan_3y" and y1 is not None and r.usd_per_hour >= y1:
            col.skip(0, r.instance_type, r.region, f"longer_term_not_cheaper: {what} rate {r.usd_per_hour} >= the "
                                                   f"1-year rate {y1}", SOURCE_SAVINGS_PLANS)
            continue
        out.append({"provider": NAME, "region": r.region, "zone": "", "instance_type": r.instance_type,
                    **{k: f[k] for k in _GPU_FIELDS}, "pricing": r.pricing, "payment": r.payment,
                    "offering_class": r.offering_class, "upfront_usd": 0.0, "recurring_usd_per_hour": r.usd_per_hour,
                    "usd_per_hour": r.usd_per_hour, "term_hours": r.term_hours, "currency": r.currency,
                    "source": SOURCE_SAVINGS_PLANS, "as_of": as_of})
    if counts:
        col.notes.append(f"{counts['no GPU facts']} savings-plan rate(s) of instance types without GPU facts ignored")
    asked = sorted((raw.get("usage_types") or {}) if isinstance(raw, dict) else {})
    full = 2 * len(SAVINGS_PLAN_TYPES) * len(_PAYMENT)  # 1y/3y x plan types x payment options
    got = Counter(o["instance_type"] for o in out)
    none = [t for t in asked if t in facts and not got.get(t)]
    part = [f"{t} ({got[t]} of {full})" for t in asked if t in facts and 0 < got.get(t, 0) < full]
    if none:
        col.notes.append(f"savings plans: no usable rate for {len(none)} GPU instance type(s) asked for: "
                         f"{', '.join(none)}")
    if part:
        col.notes.append(f"savings plans: only some of the {full} rates (1y/3y x Compute/EC2 Instance x 3 payment "
                         f"options) for: {', '.join(part)}")
    return out


def _facts_reasons(col: _Collect) -> dict[str, str]:
    return {s.instance_type: s.reason for s in col.skipped if s.source == SOURCE_TYPES}


def parse_region(raw: dict[str, Any], region: str, as_of: str) -> ParseResult:
    """PURE: the payloads of :func:`fetch_region` -> normalized offers of ``region`` (see the module docstring).

    Args:
        raw: ``{"price_list": [PriceList JSON strings], "instance_types": [pages], "spot": [pages]}`` and, when
            :func:`fetch_region` was asked for savings plans, ``"savings_plans": {"region", "usage_types":
            {type: usage type}, "pages": [describe_savings_plans_offering_rates pages]}``.
        region: the region fetched (rows of other regions are reported, not kept).
        as_of: ISO date written to every row.

    Returns:
        ParseResult: offers with exactly OFFER_COLUMNS (on-demand; reserved 1y/3y x payments x offering class
        standard/convertible; spot per zone; with savings plans: savings_plan_1y/3y x payments x offering class
        compute/ec2_instance, USD per instance-hour, upfront 0, source ``aws-savings-plans-api``, each below the
        type's on-demand rate), skipped rows with reasons, notes (filtered variants, savings-plan rates missing
        for a type asked for...).

    Raises:
        PriceDataError: duplicate products after filtering (BUG-03) or duplicate offer keys.
        InputError: ``raw`` lacks one of the three keys.
    """
    missing = [k for k in ("price_list", "instance_types", "spot") if k not in raw]
    if missing:
        raise InputError("raw", f"AWS payloads lack {missing}", accepted="price_list, instance_types, spot")
    col = _Collect(SOURCE_PRICING)
    facts, _seen = _instance_facts(raw["instance_types"], col)
    reasons = _facts_reasons(col)
    rows = _price_rows(_products_from_entries(_price_entries(raw["price_list"])), col, as_of=as_of,
                       operating_systems=("Linux",))
    col.filtered_note("product variants")
    spot = _spot_newest(raw["spot"], col)
    out = _offers(rows, facts, spot, col, region=region, as_of=as_of, no_facts_reason=reasons)
    if raw.get("savings_plans") is not None:
        out += _savings_plan_offers(raw["savings_plans"], facts, out, col, region=region, as_of=as_of)
    df = offers_frame(out)
    check_unique(df, f"aws {region}")
    skipped = [s if s.region else replace(s, region=region) for s in col.skipped]
    return ParseResult(offers=df, skipped=skipped, notes=col.notes)


def import_file(path: "str | Path", as_of: str, *, gpu_facts: Any = None) -> ParseResult:
    """``gpuopt prices import FILE --format aws-price-list|aws-bulk-csv``: a get_products JSON file or a bulk offer
    CSV (told apart by content) -> offers (on-demand and Standard reserved; no spot in these files).

    GPU facts come from ``gpu_facts`` (describe_instance_types output, or a :func:`parse_instance_types` frame),
    else from the current AWS offers (the newest refreshed cache snapshot, else the shipped snapshot): the price
    files carry no GPU model. Types with no GPU facts are reported (``no_gpu``), never guessed.
    """
    from providers._input import decode_utf8, read_text_file

    p = Path(path)
    with open(p, "rb") as fh:
        raw = fh.read(64)
    content: "str | Path" = p
    if raw[:2] == b"\x1f\x8b":  # gzip: decompressed whole (bounded by providers._input)
        content = read_text_file(p)
        head = content[:64].lstrip()
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
    except UnicodeDecodeError:  # the bulk CSV is streamed: find the first byte that is not UTF-8, once
        decode_utf8(p.read_bytes(), p.name)
        raise
    if prices is None:
        raise InputError("file", f"{p.name} is neither a Pricing API JSON file nor an AWS bulk offer CSV",
                         accepted="aws-price-list (JSON), aws-bulk-csv (CSV)")
    col = _Collect(source, skipped=list(prices.attrs.get("skipped", [])), notes=list(prices.attrs.get("notes", [])))
    facts = _facts_for_import(gpu_facts, col)
    rows = prices.astype(object).where(prices.notna(), None).to_dict("records")
    for r in rows:
        for c in ("gpu_count", "gpu_memory_gib", "vcpus", "memory_gib"):
            if r[c] is None:
                r[c] = float("nan")
    out = _offers(rows, facts, {}, col, region=None, as_of=as_of, no_facts_reason=_facts_reasons(col),
                  facts_from="not among the GPU instance types of the GPU facts used")
    df = offers_frame(out)
    check_unique(df, source)
    from providers._input import check_offer_values

    df, bad = check_offer_values(df, source)
    return ParseResult(offers=df, skipped=list(col.skipped) + bad, notes=col.notes)


def _facts_for_import(gpu_facts: Any, col: _Collect) -> dict[str, dict[str, Any]]:
    import pandas as pd

    if gpu_facts is None:
        from pricing_cache.store import load_offers

        cur, _ = load_offers()
        cur = cur[cur["provider"] == NAME]
        col.notes.append("GPU facts taken from the current AWS offers (cache or shipped snapshot)")
        frame = cur.drop_duplicates("instance_type")[["instance_type", *_GPU_FIELDS]]
    elif isinstance(gpu_facts, pd.DataFrame):
        frame = gpu_facts
    else:
        facts, _ = _instance_facts(gpu_facts, col)
        return facts
    return {str(r["instance_type"]): {k: r[k] for k in ("instance_type", *_GPU_FIELDS)}
            for r in frame.to_dict("records")}


# ----------------------------------------------------------------------------------------------------------------
# I/O: clients, regions, fetch
# ----------------------------------------------------------------------------------------------------------------

_CLIENT_LOCK = threading.Lock()


def client_config(options: FetchOptions, mode: str = "standard"):
    """botocore Config: retry ``mode`` ("standard" | "adaptive") with ``total_max_attempts`` =
    options.max_attempts (first attempt included), connect/read timeouts = options.timeout_s."""
    from botocore.config import Config

    return Config(retries={"mode": mode, "total_max_attempts": max(1, int(options.max_attempts))},
                  connect_timeout=options.timeout_s, read_timeout=options.timeout_s)


def _session(options: FetchOptions):
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(profile_name=options.profile)
    except ProfileNotFound as e:
        raise MissingCredentials(f"AWS profile '{options.profile}' not found ({e}). {CREDENTIALS_HOWTO}") from None


def bound_retries(client, options: FetchOptions):
    """Keep every call of ``client`` — retries and botocore's backoff waits included — within
    ``providers.base.call_budget_s(options)`` (timeout x attempts, as the REST adapters; issue 13). Returns the
    client.

    botocore's standard mode waits up to 20 s between attempts (random x 2^attempt), so 5 attempts could wait a
    minute on their own. A ``needs-retry`` handler registered first checks, when botocore is about to retry (a
    retryable error and attempts left: botocore's own StandardRetryConditions), whether the longest wait it may pick
    (min(20, 2^(attempts-1)) s) would end after the budget; if so the call ends with ProviderError naming the error
    code, the attempts made and the budget, instead of sleeping past it. Non-retryable errors are left as they are.

    Under the refresh's deadline (``options.deadline_s``): no call starts after it (DeadlineReached, from a
    ``before-call`` handler), a retry whose longest wait would pass it is not made (DeadlineReached), and the
    connect/read timeouts of every attempt are capped at the time left (:func:`providers.base.deadline_timeout` in
    the client's connection pools).
    """
    from botocore.retries import standard

    from providers.base import DeadlineReached, call_budget_s, check_deadline, deadline_timeout, remaining_s

    budget = call_budget_s(options)
    attempts_max = max(1, int(options.max_attempts))
    svc = client.meta.service_model.service_id.hyphenize()
    adapter = standard.RetryEventAdapter()
    conditions = standard.StandardRetryConditions(max_attempts=attempts_max)

    def started(context=None, model=None, **_kw) -> None:
        check_deadline(options, f"aws {getattr(model, 'name', 'call')}")
        if context is not None:
            context["gpuopt_call_started"] = time.monotonic()

    def guard(attempts=1, request_dict=None, response=None, caught_exception=None, operation=None, **kw) -> None:
        t0 = ((request_dict or {}).get("context") or {}).get("gpuopt_call_started")
        if t0 is None:
            return None
        ctx = adapter.create_retry_context(attempts=attempts, request_dict=request_dict, response=response,
                                           caught_exception=caught_exception, operation=operation, **kw)
        if not conditions.is_retryable(ctx):
            return None
        longest = min(20.0, 2.0 ** (attempts - 1))
        elapsed = time.monotonic() - t0
        rem = remaining_s(options)
        if elapsed + longest <= budget and (rem is None or longest < rem):
            return None
        code = (((response or (None, {}))[1] or {}).get("Error") or {}).get("Code") if response else None
        what = code or (type(caught_exception).__name__ if caught_exception is not None else "an error")
        name = getattr(operation, "name", "call")
        if rem is not None and longest >= rem:
            raise DeadlineReached(f"aws {name}: {what} after {attempts} attempt(s); another retry could wait "
                                  f"{longest:g} s, more than the {max(rem, 0):.1f} s left before the refresh's "
                                  f"deadline (--deadline {float(options.deadline_s or 0):g} s)")
        raise ProviderError(f"aws {name}: {what} after {attempts} attempt(s) in {elapsed:.1f} s; another retry "
                            f"could wait {longest:g} s, past the call's budget of {budget:g} s (--timeout "
                            f"{options.timeout_s:g} s x --attempts {attempts_max}): try again later")

    client.meta.events.register(f"before-call.{svc}", started, unique_id=f"gpuopt-call-start-{svc}")
    client.meta.events.register_first(f"needs-retry.{svc}", guard, unique_id=f"gpuopt-retry-budget-{svc}")
    try:  # botocore internals: the pools are made lazily from these settings (without them the calls still end
        # within --timeout of the deadline)
        http = client._endpoint.http_session
        http._timeout = http._manager.connection_pool_kw["timeout"] = deadline_timeout(options)
    except (AttributeError, KeyError, TypeError):
        pass
    return client


def make_client(service: str, region: str, options: FetchOptions, session: Any = None):
    """A boto3 client with :func:`client_config` (retry mode PRICING_RETRY_MODE for ``pricing``, standard for the
    others), its calls bounded by :func:`bound_retries`."""
    session = session if session is not None else _session(options)
    mode = PRICING_RETRY_MODE if service == "pricing" else "standard"
    return bound_retries(session.client(service, region_name=region, config=client_config(options, mode)), options)


def _client(options: FetchOptions, key: str, service: str, region: str, *, share: bool = False):
    c = options.clients.get(key)
    if c is not None:
        return c
    c = make_client(service, region, options)
    if share:
        with _CLIENT_LOCK:
            c = options.clients.setdefault(key, c)
    return c


def _all_pages(client, operation: str, options: FetchOptions, what: str, **kwargs) -> list[dict[str, Any]]:
    """Every page of ``operation`` through botocore's paginator (ResponseMetadata dropped). Raises
    TruncatedPriceList(next=token) at the page cap with a token pending, or when a token comes back (BUG-08)."""
    from botocore.exceptions import PaginationError

    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    cap = options.max_pages
    try:
        for page in client.get_paginator(operation).paginate(**kwargs):
            page = {k: v for k, v in page.items() if k != "ResponseMetadata"}
            pages.append(page)
            token = page.get("NextToken")
            if not token:
                continue
            if token in seen:
                raise TruncatedPriceList(f"aws {what}: NextToken repeated after {len(pages)} pages (a page cycle)",
                                         next=token)
            seen.add(token)
            if cap is not None and len(pages) >= cap:
                raise TruncatedPriceList(f"aws {what}: page cap max_pages={cap} reached with more pages left",
                                         next=token)
    except PaginationError as e:  # botocore's own guard (the same token twice in a row)
        raise TruncatedPriceList(f"aws {what}: {e}") from None
    return pages


def list_regions(options: FetchOptions) -> list[str]:
    """``options.regions`` (validated: AWS region code syntax; codes botocore does not know are kept with a
    progress note), else the account's enabled regions: EC2 ``describe_regions(AllRegions=True)`` keeping
    OptInStatus ``opt-in-not-required`` / ``opted-in``; each ``not-opted-in`` region gets a progress note. An
    explicitly asked region that is not enabled raises RegionSkipped in :func:`fetch_region`."""
    if options.regions:
        out: list[str] = []
        bad = [r for r in options.regions if not _REGION_RE.match(str(r))]
        if bad:
            raise InputError("regions", f"not AWS region codes: {bad}", accepted="codes like us-east-1, eu-west-2")
        known = set()
        try:
            import boto3

            s = boto3.Session()
            for part in ("aws", "aws-cn", "aws-us-gov"):
                known.update(s.get_available_regions("ec2", partition_name=part))
        except Exception:  # pragma: no cover - botocore data missing
            known = set()
        for r in options.regions:
            if r in out:
                continue
            if known and r not in known:
                options.say(NAME, r, f"{r} is not in botocore's region list (new region or typo?); trying it")
            out.append(r)
        return out
    from botocore.exceptions import ClientError, NoCredentialsError

    ec2 = options.clients.get("ec2") or options.clients.get("ec2:us-east-1")
    try:
        if ec2 is None:
            ec2 = make_client("ec2", "us-east-1", options)
        resp = ec2.describe_regions(AllRegions=True)
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:
        code = _error_code(e)
        if code in CREDENTIALS_REFUSED:
            raise _refused(code, e, f"describe_regions in {PRICING_REGION}") from None
        raise
    out = []
    for r in sorted(resp.get("Regions", []), key=lambda r: r["RegionName"]):
        name, status = r["RegionName"], r.get("OptInStatus", "opt-in-not-required")
        if status in ("opt-in-not-required", "opted-in"):
            out.append(name)
        else:
            options.say(NAME, name, f"skipped: region not enabled for this account (OptInStatus {status})")
    return out


def _error_code(exc) -> str:
    return str((getattr(exc, "response", None) or {}).get("Error", {}).get("Code", "") or "")


def _refused(code: str, exc, where: str) -> InvalidCredentials:
    """The one-line error for credentials AWS refused (``code`` in CREDENTIALS_REFUSED)."""
    from gpuopt.kernel.redact import scrub

    detail = str((getattr(exc, "response", None) or {}).get("Error", {}).get("Message", "") or "")
    return InvalidCredentials(scrub(
        f"aws: the AWS credentials were refused ({code}{': ' + ' '.join(detail.split())[:160] if detail else ''}) "
        f"on {where}: they are invalid, expired or for another partition; check them with `aws sts "
        "get-caller-identity` (and --profile), renew a session with `aws sso login`, or set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY"))


def _region_or_credentials(region: str, code: str, exc, options: FetchOptions) -> ProviderError:
    """What an AuthFailure / UnrecognizedClientException from ``region``'s EC2 means (EC2 answers both for a region
    the account has not enabled and for credentials it refuses): ``describe_regions(RegionNames=[region],
    AllRegions=True)`` in PRICING_REGION, which every account has, tells. Returns the error to raise:
    InvalidCredentials when that call refuses the credentials too; RegionSkipped when the region's OptInStatus is
    ``not-opted-in``; else ProviderError saying the credentials are refused in this region although it is enabled
    (an IAM or SCP region condition)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    ec2 = options.clients.get("ec2") or options.clients.get(f"ec2:{PRICING_REGION}")
    try:
        if ec2 is None:
            ec2 = make_client("ec2", PRICING_REGION, options)
        resp = ec2.describe_regions(RegionNames=[region], AllRegions=True)
    except NoCredentialsError:
        return MissingCredentials(CREDENTIALS_HOWTO)
    except ClientError as e:
        other = _error_code(e)
        if other in CREDENTIALS_REFUSED:
            return _refused(other, e, f"describe_regions in {PRICING_REGION} (after {code} in {region})")
        return ProviderError(f"aws {region}: {code} from EC2, and describe_regions in {PRICING_REGION} failed too "
                             f"({other or type(e).__name__}): the region may not be enabled or the credentials may "
                             "be refused")
    except (BotoCoreError, ProviderError) as e:
        return ProviderError(f"aws {region}: {code} from EC2; checking the region with describe_regions failed: "
                             f"{type(e).__name__}: {e}")
    status = next((r.get("OptInStatus", "") for r in resp.get("Regions", []) if r.get("RegionName") == region), None)
    if status is None or status == "not-opted-in":
        return RegionSkipped(f"aws {region}: region not enabled for this account ({code}; OptInStatus "
                             f"{status or 'unknown: not listed'})")
    return ProviderError(f"aws {region}: the credentials are refused in this region ({code}) although it is enabled "
                         f"for the account (OptInStatus {status}): an IAM or SCP condition on aws:RequestedRegion?")


def _spot_window() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def wants_savings_plans(options: FetchOptions) -> bool:
    """True when the refresh asks for savings-plan rates: ``options.savings_plans`` (read with getattr, so the
    adapter works with a FetchOptions that has no such field yet: then False)."""
    return bool(getattr(options, "savings_plans", False))


def usage_types_for(price_list: Iterable[Any], instance_types: Iterable[str] | None = None) -> dict[str, str]:
    """Instance type -> its Linux shared-tenancy usage type, from Pricing API ``get_products`` entries (pure).

    The usage type is the product's ``usagetype`` attribute, region prefix included ("BoxUsage:p5.48xlarge" in
    us-east-1, "USW2-BoxUsage:p5.48xlarge" in us-west-2): the same string the Savings Plans API files rates under, so
    it is read from AWS's own price list, never built from a prefix table. Only products of the priced variant
    (Linux, Shared, NA, No License required, capacitystatus Used: :data:`VARIANT`) with operation RunInstances and a
    BoxUsage usage type count.

    Args:
        price_list: PriceList entries (JSON strings or dicts), as in fetch_region's ``price_list``.
        instance_types: keep only these types (default: every type in the entries).
    """
    keep = None if instance_types is None else set(instance_types)
    out: dict[str, str] = {}
    for prod in _products_from_entries(list(price_list)):
        a = prod.attrs
        itype, usage = a.get("instanceType", ""), a.get("usagetype", "")
        if not itype or (keep is not None and itype not in keep) or "BoxUsage:" not in usage:
            continue
        if _variant_reason(a, ("Linux",)) is not None or a.get("operation", LINUX_OPERATION) != LINUX_OPERATION:
            continue
        out.setdefault(itype, usage)
    return dict(sorted(out.items()))


def savings_plans_request(region: str, usage_types: Iterable[str]) -> dict[str, Any]:
    """The describe_savings_plans_offering_rates parameters :func:`fetch_savings_plans_rates` sends (first page).

    savingsPlanTypes Compute and EC2Instance, products EC2, serviceCodes AmazonEC2, the given usageTypes, operations
    RunInstances (Linux/UNIX), the three payment options, filter region = ``region``, maxResults 1000. The request
    has no duration field (botocore's model): both terms come back and are told apart by ``durationSeconds``."""
    return {"savingsPlanTypes": list(SAVINGS_PLAN_TYPES), "products": ["EC2"], "serviceCodes": ["AmazonEC2"],
            "usageTypes": list(usage_types), "operations": [LINUX_OPERATION],
            "savingsPlanPaymentOptions": list(_PAYMENT), "filters": [{"name": "region", "values": [region]}],
            "maxResults": SAVINGS_PLANS_PAGE_SIZE}


def fetch_savings_plans_rates(region: str, usage_types: Iterable[str], options: FetchOptions,
                              client: Any = None) -> list[dict[str, Any]]:
    """I/O: every page of Savings Plans offering rates of ``usage_types`` in ``region`` (usable on its own).

    Calls ``savingsplans.describe_savings_plans_offering_rates`` (:func:`savings_plans_request`) for each chunk of
    :data:`SAVINGS_PLANS_USAGE_TYPES_PER_CALL` usage types and follows ``nextToken`` to the end (botocore has no
    paginator for this operation); retries are botocore's (:func:`client_config`).

    Args:
        region: the AWS region whose rates are asked for (the ``region`` filter).
        usage_types: usage types as the price list names them (:func:`usage_types_for`); none: no call, [].
        options: max_pages (per chunk), retries, timeouts; ``options.clients["savingsplans"]`` when set.
        client: a savingsplans client to use (else options.clients["savingsplans"], else one built in
            SAVINGS_PLANS_REGION and shared through options.clients).

    Returns:
        The response pages, ResponseMetadata dropped: ``[{"searchResults": [...], "nextToken": ...}, ...]``.

    Raises:
        TruncatedPriceList: ``options.max_pages`` pages read with a nextToken pending, or a nextToken that comes back
            (a cycle): never a shorter list (PRICE_FAULTS BUG-08).
        MissingCredentials: no credentials in the standard chain.
        ProviderError: the API refused the call (e.g. AccessDenied: the credentials need
            savingsplans:DescribeSavingsPlansOfferingRates), after botocore's retries.
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    usage = list(dict.fromkeys(usage_types))
    if not usage:
        return []
    if client is None:
        client = _client(options, "savingsplans", "savingsplans", SAVINGS_PLANS_REGION, share=True)
    pages: list[dict[str, Any]] = []
    cap = options.max_pages
    try:
        for i in range(0, len(usage), SAVINGS_PLANS_USAGE_TYPES_PER_CALL):
            params = savings_plans_request(region, usage[i:i + SAVINGS_PLANS_USAGE_TYPES_PER_CALL])
            seen: set[str] = set()
            n = 0
            while True:
                page = client.describe_savings_plans_offering_rates(**params)
                page = {k: v for k, v in page.items() if k != "ResponseMetadata"}
                pages.append(page)
                n += 1
                token = page.get("nextToken")
                if not token:
                    break
                if token in seen or token == params.get("nextToken"):
                    raise TruncatedPriceList(f"aws {region} savings-plan rates: nextToken repeated after {n} pages "
                                             "(a page cycle)", next=token)
                seen.add(token)
                if cap is not None and n >= cap:
                    raise TruncatedPriceList(f"aws {region} savings-plan rates: page cap max_pages={cap} reached "
                                             "with more pages left", next=token)
                params = {**params, "nextToken": token}
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "?")
        if code in CREDENTIALS_REFUSED:
            raise _refused(code, e, f"describe_savings_plans_offering_rates for {region}") from None
        raise ProviderError(f"aws {region}: savings-plan rates refused ({code}); the credentials need "
                            "savingsplans:DescribeSavingsPlansOfferingRates, or refresh without savings plans") \
            from None
    return pages


def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]:
    """I/O ONLY: the raw AWS payloads of one region.

    1. EC2 ``describe_instance_types`` (paginated, all types of the region; there is no server-side GPU filter):
       the GPU types are those with ``GpuInfo``.
    2. Pricing ``get_products`` (paginated, client in us-east-1): ServiceCode AmazonEC2, TERM_MATCH on regionCode,
       PRICING_FILTERS and instanceFamily "GPU instance"; then one query per GPU type (TERM_MATCH instanceType) that
       the family answer lacks (types AWS files under another family).
    3. EC2 ``describe_spot_price_history`` (paginated): ProductDescriptions ["Linux/UNIX"], the GPU types,
       StartTime = EndTime = now (AWS then answers the price in effect at that instant per type and zone).
    4. Only when ``options.savings_plans`` is true (:func:`wants_savings_plans`): Savings Plans
       ``describe_savings_plans_offering_rates`` for the Linux usage types of the GPU types in the price list
       (:func:`usage_types_for`, :func:`fetch_savings_plans_rates`).

    Returns: ``{"price_list": [PriceList JSON strings], "instance_types": [pages], "spot": [pages]}``, plus
    ``"savings_plans": {"region", "usage_types": {type: usage type}, "pages": [...]}`` in step 4.

    Raises:
        RegionSkipped: OptInRequired from this region's EC2; or AuthFailure / UnrecognizedClientException when
            describe_regions in PRICING_REGION says the region is not opted in (:func:`_region_or_credentials`).
        InvalidCredentials: the credentials were refused (CREDENTIALS_REFUSED; AuthFailure when describe_regions
            refuses them too): the message says "credentials", never "region not enabled".
        MissingCredentials: no credentials in the standard chain (or an unknown profile).
        TruncatedPriceList: page cap reached or a NextToken cycle (never a shorter list).
        ProviderError: savings-plan rates asked for and refused (step 4).
        botocore ClientError etc.: anything else, after botocore's retries.
    """
    from botocore.exceptions import ClientError, NoCredentialsError

    try:
        ec2 = _client(options, f"ec2:{region}", "ec2", region)
        options.say(NAME, region, "describe_instance_types")
        try:
            types = _all_pages(ec2, "describe_instance_types", options, f"{region} describe_instance_types",
                               PaginationConfig={"PageSize": 100})
        except ClientError as e:
            code = _error_code(e)
            if code in REGION_NOT_ENABLED:
                raise RegionSkipped(f"aws {region}: region not enabled for this account ({code})") from None
            if code in REGION_OR_CREDENTIALS:
                raise _region_or_credentials(region, code, e, options) from None
            if code in CREDENTIALS_REFUSED:
                raise _refused(code, e, f"describe_instance_types in {region}") from None
            raise
        gpu_types = sorted({t["InstanceType"] for p in types for t in p.get("InstanceTypes", [])
                            if (t.get("GpuInfo") or {}).get("Gpus")})
        pricing = _client(options, "pricing", "pricing", PRICING_REGION, share=True)
        filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}] + [
            {"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in PRICING_FILTERS]
        options.say(NAME, region, "get_products (GPU instance family)")
        price_list: list[str] = []
        for page in _all_pages(pricing, "get_products", options, f"{region} get_products", ServiceCode="AmazonEC2",
                               FormatVersion="aws_v1", PaginationConfig={"PageSize": 100},
                               Filters=filters + [{"Type": "TERM_MATCH", "Field": "instanceFamily",
                                                   "Value": GPU_INSTANCE_FAMILY}]):
            price_list.extend(page.get("PriceList") or [])
        listed = set()
        for e in price_list:
            d = json.loads(e) if isinstance(e, (str, bytes)) else e
            listed.add(((d.get("product") or {}).get("attributes") or {}).get("instanceType"))
        for itype in (t for t in gpu_types if t not in listed):
            for page in _all_pages(pricing, "get_products", options, f"{region} get_products {itype}",
                                   ServiceCode="AmazonEC2", FormatVersion="aws_v1",
                                   PaginationConfig={"PageSize": 100},
                                   Filters=filters + [{"Type": "TERM_MATCH", "Field": "instanceType",
                                                       "Value": itype}]):
                price_list.extend(page.get("PriceList") or [])
        spot: list[dict[str, Any]] = []
        if gpu_types:
            options.say(NAME, region, "describe_spot_price_history")
            now = _spot_window()
            spot = _all_pages(ec2, "describe_spot_price_history", options, f"{region} describe_spot_price_history",
                              ProductDescriptions=["Linux/UNIX"], InstanceTypes=gpu_types, StartTime=now,
                              EndTime=now, PaginationConfig={"PageSize": 1000})
        raw: dict[str, Any] = {"price_list": price_list, "instance_types": types, "spot": spot}
        if wants_savings_plans(options):
            usage = usage_types_for(price_list, gpu_types)
            options.say(NAME, region, f"describe_savings_plans_offering_rates ({len(usage)} usage types)")
            raw["savings_plans"] = {"region": region, "usage_types": usage,
                                    "pages": fetch_savings_plans_rates(region, usage.values(), options)}
    except NoCredentialsError:
        raise MissingCredentials(CREDENTIALS_HOWTO) from None
    except ClientError as e:  # the Pricing API or spot history refusing the credentials: say so, not a region fault
        code = _error_code(e)
        if code in CREDENTIALS_REFUSED:
            op = (getattr(e, "operation_name", "") or "a call")
            raise _refused(code, e, f"{op} for {region}") from None
        raise
    return raw


__all__ = ["NAME", "CLIENT_KEYS", "client_config", "make_client", "list_regions", "fetch_region", "parse_region",
           "parse_price_list", "parse_bulk_csv", "parse_instance_types", "parse_spot_history", "import_file",
           "region_for_location", "savings_plans_rates_frame", "fetch_savings_plans_rates", "savings_plans_request",
           "usage_types_for", "wants_savings_plans"]
