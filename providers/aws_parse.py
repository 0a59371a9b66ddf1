"""AWS payloads -> offers, pure (the network is ``providers.aws``'s): EC2 ``describe_instance_types`` -> GPU facts
(:func:`parse_instance_types`), ``describe_spot_price_history`` -> spot prices (:func:`parse_spot_history`),
Savings Plans offering rates (:func:`savings_plans_rates_frame`), and one region's payloads joined into offers
(:func:`parse_region`). The price list rows come from ``providers.aws_prices``.

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

Savings plans (:func:`providers.aws.fetch_savings_plans_rates`, :func:`savings_plans_rates_frame`)
==================================================================================================

Only when the refresh asks for them (``FetchOptions.savings_plans``, read with getattr:
:func:`providers.aws.wants_savings_plans`). ``savingsplans.describe_savings_plans_offering_rates`` (botocore model
savingsplans 2019-06-28; no paginator, so ``providers.aws`` follows ``nextToken`` itself, with the same page cap and
cycle check as its other paging) with savingsPlanTypes Compute and EC2Instance, products EC2, serviceCodes
AmazonEC2, operations RunInstances (Linux/UNIX), the three payment options, the region filter, and the usage types
of the region's GPU types as the price list names them (:func:`providers.aws.usage_types_for`:
"BoxUsage:p5.48xlarge" in us-east-1, "USW2-BoxUsage:..." elsewhere). The request has no duration field: 1- and
3-year rates both come back, told apart by ``durationSeconds`` (31,536,000 / 94,608,000). Each rate is what one
instance-hour of the type is charged against the plan, in USD per hour (``unit`` Hrs, never a term total): rows
``savings_plan_1y`` / ``savings_plan_3y`` with ``offering_class`` ``compute`` or ``ec2_instance``, ``payment``
no/partial/all upfront, ``upfront_usd`` 0 and ``recurring_usd_per_hour`` = ``usd_per_hour`` = the rate (the plan's
commitment is a spend per hour, its size chosen by the buyer: records.PRICING_MODELS), ``term_hours`` 8,760 /
26,280. A rate not below the type's on-demand rate (``implausible_commitment``), a rate without an on-demand rate
(``unverifiable_savings_plan``), a 3-year rate not below the 1-year one (``longer_term_not_cheaper``) are reported;
a GPU type asked for with no rate, or with only some of its 12, is named in the notes.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_FACT_COLUMNS, SAVINGS_PLAN_TERM_HOURS
from providers._common import ParseResult, check_unique, float_or_none, hourly_row, offers_frame
from providers.aws_prices import (LINUX_OPERATION, NAME, PAYMENT_OPTIONS, SOURCE_PRICING, SOURCE_SAVINGS_PLANS,
                                  SOURCE_SPOT, SOURCE_TYPES, Collect, load_json, price_entries,
                                  products_from_entries, products_price_rows)
from providers.gpu_names import canonical_gpu
from providers.skypilot import interconnect_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: ``savingsPlanOffering.planType`` -> ``offering_class`` (records.SAVINGS_PLAN_CLASSES). SageMaker and Database
#: plans do not cover EC2 instances.
SAVINGS_PLAN_TYPES: dict[str, str] = {"Compute": "compute", "EC2Instance": "ec2_instance"}
#: ``savingsPlanOffering.durationSeconds`` -> pricing: 365 d and 3 x 365 d (the 8,760 / 26,280 h of
#: records.SAVINGS_PLAN_TERM_HOURS). Any other duration is reported, never mapped to the nearest term.
SAVINGS_PLAN_DURATIONS: dict[int, str] = {31536000: "savings_plan_1y", 94608000: "savings_plan_3y"}
#: Spot product descriptions that are Linux (moto answers with the EC2-Classic era "(Amazon VPC)" name).
LINUX_SPOT = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")
#: Placeholder spot thresholds (see the module docstring).
SPOT_MIN_SHARE = 0.01
# ----------------------------------------------------------------------------------------------------------------
# describe_instance_types -> GPU facts
# ----------------------------------------------------------------------------------------------------------------


def _type_entries(payload: Any) -> list[dict[str, Any]]:
    data = load_json(payload)
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


def _gpu_facts(t: dict[str, Any], col: Collect) -> dict[str, Any] | None:
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


def instance_facts(payload: Any, col: Collect) -> tuple[dict[str, dict[str, Any]], set[str]]:
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

    col = Collect(SOURCE_TYPES)
    facts, _ = instance_facts(payload, col)
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
    data = load_json(payload)
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


def _spot_newest(payload: Any, col: Collect) -> dict[tuple[str, str], dict[str, Any]]:
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

    col = Collect(SOURCE_SPOT)
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


GPU_FIELDS = ("gpu_model", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "interconnect")


def join_offers(price_rows: list[dict[str, Any]], facts: dict[str, dict[str, Any]], spot: dict[tuple[str, str], dict],
                col: Collect, *, region: str | None, as_of: str | None, no_facts_reason: dict[str, str],
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
        row = {c: r[c] for c in OFFER_COLUMNS if c not in OFFER_FACT_COLUMNS}  # fabric, zone_kind, tier: offers_frame
        row.update({k: f[k] for k in GPU_FIELDS})
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
                **{k: f[k] for k in GPU_FIELDS}, "currency": "USD", "source": SOURCE_SPOT,
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
    data = load_json(pages)
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

    col = Collect(SOURCE_SAVINGS_PLANS)
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
        payment = PAYMENT_OPTIONS.get(str(off.get("paymentOption") or ""))
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


def savings_plan_offers(raw: Any, facts: dict[str, dict[str, Any]], offers: list[dict[str, Any]], col: Collect,
                        *, region: str, as_of: str, source: str = SOURCE_SAVINGS_PLANS) -> list[dict[str, Any]]:
    """Offer dicts (OFFER_COLUMNS) of the savings-plan rates of the GPU types with facts, each checked against the
    type's on-demand rate in ``offers``; what is left out is reported in ``col``. ``raw``: describe_savings_plans_
    offering_rates pages (or ``{"pages", "usage_types"}``); ``source`` written on the rows (the API's, or the public
    price files' for the keyless refresh, providers.aws_bulk)."""
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
                                                   "on-demand price to check it against", source)
            continue
        if r.currency != base["currency"]:
            col.skip(0, r.instance_type, r.region, f"currency_mismatch: {what} rate in {r.currency}, on-demand in "
                                                   f"{base['currency']}", source)
            continue
        if r.usd_per_hour >= float(base["usd_per_hour"]):
            col.skip(0, r.instance_type, r.region, f"implausible_commitment: {what} rate {r.usd_per_hour} is not "
                                                   f"below on-demand {base['usd_per_hour']}", source)
            continue
        y1 = one_year.get((r.instance_type, r.payment, r.offering_class))
        if r.pricing == "savings_plan_3y" and y1 is not None and r.usd_per_hour >= y1:
            col.skip(0, r.instance_type, r.region, f"longer_term_not_cheaper: {what} rate {r.usd_per_hour} >= the "
                                                   f"1-year rate {y1}", source)
            continue
        out.append({"provider": NAME, "region": r.region, "zone": "", "instance_type": r.instance_type,
                    **{k: f[k] for k in GPU_FIELDS}, "pricing": r.pricing, "payment": r.payment,
                    "offering_class": r.offering_class, "upfront_usd": 0.0, "recurring_usd_per_hour": r.usd_per_hour,
                    "usd_per_hour": r.usd_per_hour, "term_hours": r.term_hours, "currency": r.currency,
                    "source": source, "as_of": as_of})
    if counts:
        col.notes.append(f"{counts['no GPU facts']} savings-plan rate(s) of instance types without GPU facts ignored")
    asked = sorted((raw.get("usage_types") or {}) if isinstance(raw, dict) else {})
    full = 2 * len(SAVINGS_PLAN_TYPES) * len(PAYMENT_OPTIONS)  # 1y/3y x plan types x payment options
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


def facts_reasons(col: Collect) -> dict[str, str]:
    """Instance type -> why its GPU facts could not be used (the reasons ``col`` recorded for SOURCE_TYPES), so that
    its price rows are not reported a second time."""
    return {s.instance_type: s.reason for s in col.skipped if s.source == SOURCE_TYPES}


def parse_region(raw: dict[str, Any], region: str, as_of: str) -> ParseResult:
    """PURE: the payloads of :func:`providers.aws.fetch_region` -> normalized offers of ``region`` (see the module
    docstring).

    Args:
        raw: ``{"price_list": [PriceList JSON strings], "instance_types": [pages], "spot": [pages]}`` and, when
            :func:`providers.aws.fetch_region` was asked for savings plans, ``"savings_plans": {"region",
            "usage_types": {type: usage type}, "pages": [describe_savings_plans_offering_rates pages]}``.
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
    col = Collect(SOURCE_PRICING)
    facts, _seen = instance_facts(raw["instance_types"], col)
    reasons = facts_reasons(col)
    rows = products_price_rows(products_from_entries(price_entries(raw["price_list"])), col, as_of=as_of,
                               operating_systems=("Linux",))
    col.filtered_note("product variants")
    spot = _spot_newest(raw["spot"], col)
    out = join_offers(rows, facts, spot, col, region=region, as_of=as_of, no_facts_reason=reasons)
    if raw.get("savings_plans") is not None:
        out += savings_plan_offers(raw["savings_plans"], facts, out, col, region=region, as_of=as_of)
    df = offers_frame(out)
    check_unique(df, f"aws {region}")
    skipped = [s if s.region else replace(s, region=region) for s in col.skipped]
    return ParseResult(offers=df, skipped=skipped, notes=col.notes)
