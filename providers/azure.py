"""Live Azure prices: the public Retail Prices API (no credentials) plus, when a subscription is configured, the
Compute Resource SKUs API (vCPUs, memory, sizes the subscription cannot use). Follows ``providers/base.py``.

What the APIs return (Microsoft Learn, "Azure Retail Prices overview",
https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices):

* ``GET https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&currencyCode='USD'&$filter=...``;
  no authentication. ``2023-01-01-preview`` is the version that carries ``savingsPlan``; ``meterRegion='primary'``
  limits the answer to primary meters; filter values are case-sensitive since that version.
* A page is ``{"BillingCurrency", "CustomerEntityId", "CustomerEntityType", "Items": [...], "NextPageLink", "Count"}``;
  ``Count`` is the number of items ON THIS PAGE (at most 1,000); ``NextPageLink`` is null on the last page.
* An item has ``armSkuName``, ``armRegionName``, ``serviceName``, ``productName``, ``skuName``, ``meterName``,
  ``type`` (``Consumption`` / ``Reservation`` / ``DevTestConsumption``), ``reservationTerm`` (``1 Year`` /
  ``3 Years``), ``unitPrice``, ``retailPrice``, ``currencyCode``, ``unitOfMeasure``, ``isPrimaryMeterRegion`` and,
  for savings-plan-eligible meters, ``savingsPlan: [{"unitPrice", "retailPrice", "term"}]``.
* The docs name ``eq`` and ``and`` in ``$filter`` examples; we found no documentation that ``startswith`` is supported,
  so the request filters on ``serviceName`` and ``armRegionName`` only and GPU sizes are picked client-side.

How items become offers (PRICE_FAULTS cases in brackets):

* **GPU sizes only.** ``armSkuName`` must be in :data:`providers.skypilot.AZURE_GPU_SIZES` (GPU model, GPUs per VM
  including fractions, interconnect). Other N-series sizes (``Standard_N...``) are reported one by one
  (``unknown_gpu``); the thousands of non-GPU items of a region listing are counted in one note, not listed.
* **Virtual Machines products only** [BUG-06]: ``serviceName`` (when present) must be ``Virtual Machines`` and
  ``productName`` (when present) must start with ``Virtual Machines``; Cloud Services (classic) meters such as
  ``"Basv2 Series Cloud Services"`` carry ``serviceName: "Virtual Machines"`` and the same ``skuName``, so the
  ``productName`` is what tells them apart (``not_a_vm_row``).
* **Operating system** [BUG-06]: Windows is a productName ending in ``" Windows"`` OR ``" Win"``. The full frame of
  :func:`parse_retail_items` keeps Windows rows (``operating_system = "windows"``); offers are Linux only.
* **Price types** [BUG-05]: ``Consumption`` without suffix = on-demand; skuName/meterName ending in ``" Spot"`` =
  spot (one regional price, ``zone`` empty); ``" Low Priority"`` is excluded (``low_priority``: a retired,
  separate meter, never on-demand); ``DevTestConsumption`` is excluded (``devtest``: Dev/Test subscriptions only);
  ``Reservation`` goes through the reservation rule below. Which row lands where never depends on item order:
  rows are grouped by key, identical repeats collapse (``duplicate``), different prices for one key raise
  ``PriceDataError`` (invariant ``groupby(OFFER_KEY + operating_system).size() == 1``), and the frame is sorted.
* **Reservations** [BUG-01]: ``unitPrice`` is the TOTAL for the term although ``unitOfMeasure`` says ``"1 Hour"``.
  ``1 Year`` -> 8,760 h, ``3 Years`` -> 26,280 h (:data:`gpuopt.kernel.records.TERM_HOURS`); any other term raises
  ``PriceDataError`` (never consumption maths). Two offers per reservation: ``all_upfront`` (upfront = total,
  recurring 0) and ``no_upfront`` (Azure's monthly payment option: upfront 0, recurring = total / term_hours).
  Both have ``usd_per_hour = total / term_hours``: "the monthly payment option divides the total cost of the
  reservation evenly over each month of the term. The total cost of up-front and monthly reservations is the same
  and you don't pay any extra fees when you choose to pay monthly" (MicrosoftDocs/azure-docs,
  articles/cost-management-billing/reservations/prepare-buy-reservation.md, "Buy reservations with monthly
  payments"). 21,900 for 1 year -> 2.50 $/h; 52,560 for 3 years -> 2.00 $/h.
* **Savings plans** [BUG-01 note]: a consumption (on-demand, Linux or Windows) item's ``savingsPlan: [{"unitPrice",
  "retailPrice", "term": "1 Year" | "3 Years"}]`` IS hourly, unlike a reservation item's unitPrice (the term total)
  in the same payload: two units in one answer. Each term becomes ``savings_plan_1y`` / ``savings_plan_3y`` rows,
  ``offering_class`` "" (Azure's one savings plan for compute), ``payment`` ``no_upfront`` and ``all_upfront`` at
  the same rate (billed monthly or upfront, same total), ``upfront_usd`` 0, ``recurring_usd_per_hour`` =
  ``usd_per_hour`` = the savingsPlan price, ``term_hours`` 8,760 / 26,280 (records.PRICING_MODELS: the rate one
  instance-hour is charged against the plan; the plan's commitment is an hourly spend). Another term
  (``unknown_term``), a missing/0/conflicting price, a rate not below the item's on-demand price
  (``implausible_commitment``) or a 3-year rate not below the 1-year one (``longer_term_not_cheaper``) is reported.
  Spot, Low Priority and DevTest items carry no savings-plan rows.
* **Missing and $0 prices** [BUG-07]: an empty/unparseable price is unknown (``unknown_price``) and a 0 price is
  not a price (``zero_price``): both are reported and make no offer, unless the caller names the size in
  ``allow_free`` (an explicit free-tier flag). A spot price >= the on-demand price is a placeholder
  (``placeholder_spot``, as in the stored SkyPilot catalog's H100 v5 rows); a spot price without an on-demand price
  cannot be checked (``unverifiable_spot``).
* **Currency** [BUG-12]: every row carries the item's ``currencyCode`` (else the page's ``BillingCurrency``, else the
  API default USD, with a note). :func:`fetch_region` refuses a page whose ``BillingCurrency`` is not the requested
  one, and a region whose whole listing is empty (``Count: 0``): a wrong request must not look like an empty catalog.
* **Resource SKUs** fill ``vcpus`` and ``memory_gib`` (capabilities ``vCPUs``, ``MemoryGB``; Azure's size tables
  give that memory in GiB) and skip sizes restricted for the subscription in the region (``restricted``,
  ``reasonCode NotAvailableForSubscription`` on a ``Location`` restriction; a ``Zone`` restriction only removes some
  zones and is a note). The GPU model and COUNT always come from ``AZURE_GPU_SIZES``: resource SKUs report
  ``GPUs: 1`` for the partitioned NVads A10 v5 sizes (1/6, 1/3, 1/2 of an A10), so their fraction is only in the
  table. Without a subscription (no ``AZURE_SUBSCRIPTION_ID``, no client), vCPUs and memory are NaN and restrictions
  are not checked; a note says so.

Skipped rows use ``line`` = the item's 1-based position in the listing (all pages in order).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import OFFER_COLUMNS, SAVINGS_PLAN_TERM_HOURS, TERM_HOURS, SkippedRow
from providers._common import OFFER_KEY, ParseResult, check_unique, float_or_none, hourly_row, offers_frame, read_text
from providers.base import FetchOptions, MissingCredentials, TruncatedPriceList, http_session, retry_after_note
from providers.gpu_names import GPU_MEMORY_MIB
from providers.skypilot import AZURE_GPU_SIZES, interconnect_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "azure"
RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
SOURCE = "azure-retail-prices-api"

#: Regions refreshed when ``options.regions`` is None: Azure's public regions (armRegionName codes as the Retail
#: Prices API uses them). A region without GPU sizes answers with no GPU offer and is recorded as such.
#: The first eight are the US regions of the stored SkyPilot Azure catalog.
DEFAULT_REGIONS: tuple[str, ...] = (
    "centralus", "eastus", "eastus2", "northcentralus", "southcentralus", "westus", "westus2", "westus3",
    "westcentralus", "canadacentral", "canadaeast", "brazilsouth", "mexicocentral", "northeurope", "westeurope",
    "uksouth", "ukwest", "francecentral", "germanywestcentral", "norwayeast", "swedencentral", "switzerlandnorth",
    "polandcentral", "italynorth", "spaincentral", "uaenorth", "qatarcentral", "israelcentral", "southafricanorth",
    "centralindia", "southindia", "westindia", "japaneast", "japanwest", "koreacentral", "koreasouth", "eastasia",
    "southeastasia", "australiaeast", "australiasoutheast", "australiacentral")

#: ``reservationTerm`` -> (pricing, term hours). Anything else raises PriceDataError.
RESERVATION_TERMS: dict[str, tuple[str, float]] = {
    "1 Year": ("reserved_1y", TERM_HOURS["reserved_1y"]),
    "3 Years": ("reserved_3y", TERM_HOURS["reserved_3y"]),
}

#: ``savingsPlan[].term`` -> (pricing, term hours). Another term is reported (``unknown_term``), never guessed.
SAVINGS_PLAN_TERMS: dict[str, tuple[str, float]] = {
    "1 Year": ("savings_plan_1y", SAVINGS_PLAN_TERM_HOURS["savings_plan_1y"]),
    "3 Years": ("savings_plan_3y", SAVINGS_PLAN_TERM_HOURS["savings_plan_3y"]),
}
#: Payment options of a savings-plan row, at the same hourly rate: "the monthly payment option divides the total cost
#: of the savings plan into 12 or 36 equal payments. The total cost of upfront and monthly savings plans is the same"
#: (MicrosoftDocs/azure-docs, articles/cost-management-billing/savings-plan/buy-savings-plan.md).
SAVINGS_PLAN_PAYMENTS: tuple[str, ...] = ("no_upfront", "all_upfront")

#: Columns of :func:`parse_retail_items` beyond OFFER_COLUMNS.
EXTRA_COLUMNS: tuple[str, ...] = ("operating_system", "meter_name")

_REGION_RE = re.compile(r"^[a-z][a-z0-9]*$")
_WINDOWS_RE = re.compile(r"\s(Windows|Win)$")
_GPU_FAMILY_RE = re.compile(r"^Standard_N", re.IGNORECASE)
_RESTRICTED_REASON = "NotAvailableForSubscription"


# --------------------------------------------------------------------------------------------------------------------
# resource SKUs (pure)


@dataclass(frozen=True)
class SkuFacts:
    """What the Resource SKUs API says about one VM size in one location.

    Attributes:
        gpus: the ``GPUs`` capability (1 for fractional NVads A10 v5 sizes; see the module docstring), or None.
        vcpus: the ``vCPUs`` capability, or None.
        memory_gib: the ``MemoryGB`` capability (GiB), or None.
        restricted: a ``Location`` restriction with reason ``NotAvailableForSubscription`` covers this location.
        restricted_zones: zones removed by ``Zone`` restrictions (the size stays usable in the others).
    """

    gpus: float | None
    vcpus: float | None
    memory_gib: float | None
    restricted: bool
    restricted_zones: tuple[str, ...] = ()


def _get(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field of an ``as_dict()`` ResourceSku in either spelling: azure-mgmt-compute >= 35 models give the wire
    names (``resourceType``, ``reasonCode``), msrest-era models gave attribute names (``resource_type``)."""
    v = d.get(camel)
    return d.get(snake) if v is None else v


def _sku_facts(skus: Iterable[Mapping[str, Any]] | None) -> dict[tuple[str, str], SkuFacts]:
    """(size name, location lower-case) -> SkuFacts, for ``virtualMachines`` entries."""
    out: dict[tuple[str, str], SkuFacts] = {}
    for sku in skus or ():
        if str(_get(sku, "resourceType", "resource_type") or "") != "virtualMachines":
            continue
        name = str(sku.get("name") or "")
        if not name:
            continue
        caps = {str(c.get("name")): c.get("value") for c in (sku.get("capabilities") or [])}
        locations = [str(x).lower() for x in (sku.get("locations") or [])]
        for loc in locations:
            restricted = False
            zones: list[str] = []
            for r in sku.get("restrictions") or []:
                if str(_get(r, "reasonCode", "reason_code") or "") != _RESTRICTED_REASON:
                    continue
                info = _get(r, "restrictionInfo", "restriction_info") or {}
                where = [str(x).lower() for x in (r.get("values") or []) + (info.get("locations") or [])]
                if where and loc not in where:
                    continue
                if str(r.get("type") or "Location") == "Zone":
                    zones.extend(str(z) for z in (info.get("zones") or []))
                else:
                    restricted = True
            out[(name, loc)] = SkuFacts(gpus=float_or_none(caps.get("GPUs")), vcpus=float_or_none(caps.get("vCPUs")),
                                        memory_gib=float_or_none(caps.get("MemoryGB")), restricted=restricted,
                                        restricted_zones=tuple(sorted(set(zones))))
    return out


def parse_resource_skus(skus: Iterable[Mapping[str, Any]]) -> "pd.DataFrame":
    """Per VM size and location: GPU facts, vCPUs, memory and whether the subscription may use it.

    Args:
        skus: ``[sku.as_dict() for sku in ComputeManagementClient(...).resource_skus.list(filter=...)]``; both the
            wire spelling (``resourceType``, ``reasonCode``, ``restrictionInfo``: azure-mgmt-compute >= 35) and the
            attribute spelling (``resource_type``...) are read. Entries that are not ``virtualMachines`` are ignored.

    Returns:
        DataFrame, one row per (instance_type, region), sorted: ``instance_type``, ``region``, ``gpu_model`` and
        ``gpu_count`` (from AZURE_GPU_SIZES; empty/NaN for sizes not in the table), ``gpus_reported`` (the API's
        ``GPUs`` capability: 1 for 1/6 of an A10), ``vcpus``, ``memory_gib``, ``restricted`` (bool),
        ``restricted_zones`` (comma-separated).
    """
    import pandas as pd

    rows = []
    for (name, loc), f in sorted(_sku_facts(skus).items()):
        size = AZURE_GPU_SIZES.get(name)
        rows.append({"instance_type": name, "region": loc, "gpu_model": size.gpu if size else "",
                     "gpu_count": float(size.count) if size else float("nan"),
                     "gpus_reported": _nan(f.gpus), "vcpus": _nan(f.vcpus), "memory_gib": _nan(f.memory_gib),
                     "restricted": f.restricted, "restricted_zones": ",".join(f.restricted_zones)})
    cols = ["instance_type", "region", "gpu_model", "gpu_count", "gpus_reported", "vcpus", "memory_gib", "restricted",
            "restricted_zones"]
    df = pd.DataFrame(rows, columns=cols)
    return df.astype({"instance_type": "string", "region": "string", "gpu_model": "string", "gpu_count": "float64",
                      "gpus_reported": "float64", "vcpus": "float64", "memory_gib": "float64", "restricted": "bool",
                      "restricted_zones": "string"})


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


# --------------------------------------------------------------------------------------------------------------------
# retail items (pure)


@dataclass
class _Row:
    line: int
    key: tuple[str, ...]  # OFFER_KEY + operating_system
    price: float  # hourly, or the term total for reservations
    currency: str
    meter: str
    offer_rows: list[dict[str, Any]]


class _Report:
    def __init__(self, source: str):
        self.source = source
        self.skipped: list[SkippedRow] = []
        self.notes: list[str] = []

    def skip(self, line: int, itype: str, region: str, reason: str) -> None:
        self.skipped.append(SkippedRow(source=self.source, line=line, instance_type=itype, region=region,
                                       reason=reason))


def _text(item: Mapping[str, Any], key: str) -> str:
    v = item.get(key)
    return "" if v is None else str(v).strip()


#: What the importer reads of a Retail Prices item (providers._input.check_shape): texts and numbers, and the
#: savingsPlan list (whose entries are checked per row).
ITEM_SHAPE = {k: str for k in ("armRegionName", "armSkuName", "skuName", "productName", "meterName", "type",
                                "currencyCode", "unitOfMeasure", "retailPrice", "unitPrice", "serviceName",
                                "reservationTerm", "effectiveStartDate", "location", "meterId", "skuId")}


def _items_of(payload: Any, name: str = "the document") -> list[tuple[dict[str, Any], str | None]]:
    """(item, page BillingCurrency) pairs from a Retail Prices response, a list of responses or a list of items;
    an item that is not an object, or a field of the wrong shape, is an InputError naming ``name`` and its path
    (``Items[3]``)."""
    if isinstance(payload, Mapping):
        if "Items" not in payload:
            raise InputError("azure-retail", "a JSON object without 'Items' is not a Retail Prices response",
                             accepted="a Retail Prices response, a list of responses, or a list of items")
        payload = [payload]
    if not isinstance(payload, list):
        raise InputError("azure-retail", f"expected a JSON object or list, got {type(payload).__name__}")
    from providers._input import check_shape, where

    single = len(payload) == 1 and isinstance(payload[0], Mapping) and "Items" in payload[0]
    out: list[tuple[dict[str, Any], str | None]] = []
    for n, entry in enumerate(payload):
        at = [] if single else [n]
        if isinstance(entry, Mapping) and "Items" in entry:
            items = entry.get("Items")
            if not isinstance(items, list):
                raise InputError("azure-retail", f"{name}: {where(at + ['Items'])} is not a list")
            cur = entry.get("BillingCurrency")
            for k, i in enumerate(items):
                check_shape(i, ITEM_SHAPE, name, at + ["Items", k], field="azure-retail")
                if not isinstance(i, Mapping):
                    raise InputError("azure-retail", f"{name}: {where(at + ['Items', k])} is null, not an item object")
            out.extend((dict(i), str(cur) if cur else None) for i in items)
        elif isinstance(entry, Mapping):
            check_shape(entry, ITEM_SHAPE, name, at, field="azure-retail")
            out.append((dict(entry), None))
        else:
            raise InputError("azure-retail", f"list entry of type {type(entry).__name__} is neither an item nor "
                                             "a response")
    return out


def _load_payload(items: Any) -> Any:
    if isinstance(items, (str, Path)):
        from providers._input import loads_json

        text, name = read_text(items)
        return loads_json(text, name)
    return items


def _gpu_base(itype: str, region: str, facts: SkuFacts | None, as_of: str, source: str,
              currency: str) -> dict[str, Any] | None:
    size = AZURE_GPU_SIZES.get(itype)
    if size is None:
        return None
    mem = GPU_MEMORY_MIB.get(size.gpu)
    return {"provider": NAME, "region": region, "zone": "", "instance_type": itype, "gpu_model": size.gpu,
            "gpu_count": float(size.count), "gpu_memory_gib": float("nan") if mem is None else mem / 1024.0,
            "vcpus": _nan(facts.vcpus if facts else None), "memory_gib": _nan(facts.memory_gib if facts else None),
            "interconnect": interconnect_for(NAME, itype), "currency": currency, "source": source, "as_of": as_of}


def _plain_base(itype: str, region: str, facts: SkuFacts | None, as_of: str, source: str,
                currency: str) -> dict[str, Any]:
    """Base of a non-GPU size (``gpu_only=False``): GPU fields empty."""
    return {"provider": NAME, "region": region, "zone": "", "instance_type": itype, "gpu_model": "",
            "gpu_count": float("nan"), "gpu_memory_gib": float("nan"),
            "vcpus": _nan(facts.vcpus if facts else None), "memory_gib": _nan(facts.memory_gib if facts else None),
            "interconnect": "", "currency": currency, "source": source, "as_of": as_of}


def _classify(pairs: list[tuple[dict[str, Any], str | None]], *, region: str | None, as_of: str, source: str,
              default_currency: str, allow_free: Collection[str], gpu_only: bool,
              facts: dict[tuple[str, str], SkuFacts] | None, rep: _Report) -> list[_Row]:
    rows: list[_Row] = []
    non_gpu = 0
    defaulted_currency = 0
    free = set(allow_free)
    for line, (item, page_currency) in enumerate(pairs, start=1):
        itype = _text(item, "armSkuName")
        item_region = _text(item, "armRegionName")
        reg = item_region or (region or "")
        is_gpu_size = itype in AZURE_GPU_SIZES
        if gpu_only and not is_gpu_size and not _GPU_FAMILY_RE.match(itype):
            non_gpu += 1
            continue
        if not itype:
            rep.skip(line, "", reg, "unknown_size: empty armSkuName")
            continue
        if region and item_region and item_region.lower() != region.lower():
            rep.skip(line, itype, item_region, f"other_region: item of {item_region} in the listing of {region}")
            continue
        if not reg:
            rep.skip(line, itype, "", "unknown_region: no armRegionName and no region given")
            continue
        service, product = _text(item, "serviceName"), _text(item, "productName")
        if service and service != "Virtual Machines":
            rep.skip(line, itype, reg, f"not_a_vm_row: serviceName '{service}'")
            continue
        if product and not product.startswith("Virtual Machines"):
            rep.skip(line, itype, reg, f"not_a_vm_row: productName '{product}' is not a Virtual Machines product "
                                       "(Cloud Services meters reuse the size name)")
            continue
        if item.get("isPrimaryMeterRegion") is False:
            rep.skip(line, itype, reg, "non_primary_meter: isPrimaryMeterRegion false")
            continue
        ptype = _text(item, "type")
        sku_name, meter = _text(item, "skuName"), _text(item, "meterName")
        names = (sku_name, meter)
        if ptype == "DevTestConsumption":
            rep.skip(line, itype, reg, "devtest: DevTestConsumption prices apply to Dev/Test subscriptions only")
            continue
        if any(n.endswith(" Low Priority") for n in names):
            rep.skip(line, itype, reg, "low_priority: Low Priority is a separate, retired meter; never on-demand "
                                       "or spot")
            continue
        spot = any(n.endswith(" Spot") for n in names)
        if ptype == "Consumption":
            pricing, hours = ("spot" if spot else "on_demand"), 0.0
        elif ptype == "Reservation":
            term = _text(item, "reservationTerm")
            if term not in RESERVATION_TERMS:
                raise PriceDataError(f"{source}: item {line} ({itype} in {reg}): unrecognized reservationTerm "
                                     f"'{term}' (known: {', '.join(RESERVATION_TERMS)}); a reservation price is a "
                                     "term total and is never read as hourly")
            if spot:
                rep.skip(line, itype, reg, "unknown_price_type: a Spot meter with type Reservation")
                continue
            pricing, hours = RESERVATION_TERMS[term]
        else:
            rep.skip(line, itype, reg, f"unknown_price_type: type '{ptype}'")
            continue
        unit = _text(item, "unitOfMeasure")
        if unit and unit.replace(" ", "").lower() != "1hour":
            rep.skip(line, itype, reg, f"unknown_unit: unitOfMeasure '{unit}' (expected '1 Hour')")
            continue
        unit_price, retail_price = float_or_none(item.get("unitPrice")), float_or_none(item.get("retailPrice"))
        if unit_price is not None and retail_price is not None and abs(unit_price - retail_price) > 1e-12:
            rep.skip(line, itype, reg, f"conflicting_price: unitPrice {unit_price} != retailPrice {retail_price}")
            continue
        price = unit_price if unit_price is not None else retail_price
        if price is None:
            rep.skip(line, itype, reg, "unknown_price: empty unitPrice/retailPrice; a missing price is unknown, "
                                       "never 0")
            continue
        if price < 0:
            rep.skip(line, itype, reg, f"invalid_price: negative price {price}")
            continue
        if price == 0:
            if itype not in free:
                rep.skip(line, itype, reg, "zero_price: price 0 is not a price (free-tier or unpublished meter); "
                                           "pass allow_free to keep it")
                continue
            rep.notes.append(f"item {line}: {itype} in {reg} kept at price 0 (named in allow_free)")
        currency = _text(item, "currencyCode") or (page_currency or "")
        if not currency:
            currency = default_currency
            defaulted_currency += 1
        f = facts.get((itype, reg.lower())) if facts is not None else None
        if f is not None and f.restricted:
            rep.skip(line, itype, reg, f"restricted: {_RESTRICTED_REASON} for this subscription in {reg}")
            continue
        if is_gpu_size:
            base = _gpu_base(itype, reg, f, as_of, source, currency)
        elif gpu_only:
            reported = f"; resource SKUs report {f.gpus:g} GPUs" if f is not None and f.gpus else ""
            rep.skip(line, itype, reg, f"unknown_gpu: N-series size not in the documented size table "
                                       f"(AZURE_GPU_SIZES){reported}; its GPU is not guessed")
            continue
        else:
            base = _plain_base(itype, reg, f, as_of, source, currency)
        assert base is not None
        osys = "windows" if _WINDOWS_RE.search(product) else "linux"
        if pricing in ("on_demand", "spot"):
            offers = [hourly_row(pricing, price, **base)]
            payment = ""
        else:
            offers = [{**base, "pricing": pricing, "payment": "all_upfront", "upfront_usd": price,
                       "recurring_usd_per_hour": 0.0, "usd_per_hour": price / hours, "term_hours": hours},
                      {**base, "pricing": pricing, "payment": "no_upfront", "upfront_usd": 0.0,
                       "recurring_usd_per_hour": price / hours, "usd_per_hour": price / hours, "term_hours": hours}]
            payment = "*"  # one key for the item's two payment rows
        key = (NAME, reg, "", itype, pricing, payment, osys)
        rows.append(_Row(line=line, key=key, price=price, currency=currency, meter=meter or sku_name,
                         offer_rows=offers))
        if pricing == "on_demand" and item.get("savingsPlan"):
            rows.extend(_savings_plan_rows(item, line, price, base, reg, osys, currency, meter or sku_name, rep))
    if non_gpu:
        rep.notes.append(f"{non_gpu} item(s) of non-GPU sizes (armSkuName not Standard_N...) ignored")
    if defaulted_currency:
        rep.notes.append(f"{defaulted_currency} item(s) without currencyCode or BillingCurrency taken as "
                         f"{default_currency} (the Retail Prices API's default currency)")
    return rows


def _savings_plan_rows(item: Mapping[str, Any], line: int, on_demand: float, base: dict[str, Any], reg: str,
                       osys: str, currency: str, meter: str, rep: _Report) -> list[_Row]:
    """The savings-plan rows of one consumption (on-demand) item: ``savingsPlan[].unitPrice`` IS hourly (unlike a
    reservation item's unitPrice, the term total: BUG-01), so each term gives ``usd_per_hour`` = that price, paid
    monthly (``no_upfront``) or all upfront (``all_upfront``) at the same rate, upfront_usd 0 on the row (the plan's
    commitment is an hourly spend whose size the buyer picks), term 8,760 / 26,280 h, offering_class "" (Azure sells
    one savings plan for compute). Terms other than "1 Year" / "3 Years", missing, 0, conflicting or not-below-
    on-demand prices are reported and make no row."""
    itype = base["instance_type"]
    out: list[_Row] = []
    plans = item.get("savingsPlan")
    if not isinstance(plans, list):
        rep.skip(line, itype, reg, "unknown_price: savingsPlan is not a list")
        return out
    rates: dict[str, float] = {}
    for sp in plans:
        if not isinstance(sp, Mapping):
            rep.skip(line, itype, reg, "unknown_price: a savingsPlan entry is not an object")
            continue
        term = _text(sp, "term")
        if term not in SAVINGS_PLAN_TERMS:
            rep.skip(line, itype, reg, f"unknown_term: savingsPlan term '{term}' (known: "
                                       f"{', '.join(SAVINGS_PLAN_TERMS)})")
            continue
        pricing, hours = SAVINGS_PLAN_TERMS[term]
        unit, retail = float_or_none(sp.get("unitPrice")), float_or_none(sp.get("retailPrice"))
        if unit is not None and retail is not None and abs(unit - retail) > 1e-12:
            rep.skip(line, itype, reg, f"conflicting_price: savingsPlan {term} unitPrice {unit} != retailPrice "
                                       f"{retail}")
            continue
        rate = unit if unit is not None else retail
        if rate is None:
            rep.skip(line, itype, reg, f"unknown_price: savingsPlan {term} has no unitPrice/retailPrice; a missing "
                                       "price is unknown, never 0")
            continue
        if rate <= 0:
            rep.skip(line, itype, reg, f"zero_price: savingsPlan {term} price {rate} is not a price")
            continue
        if rate >= on_demand:
            rep.skip(line, itype, reg, f"implausible_commitment: savingsPlan {term} {rate} $/h is not below the "
                                       f"on-demand {on_demand} $/h")
            continue
        if pricing in rates:
            rep.skip(line, itype, reg, f"duplicate: savingsPlan {term} listed twice in one item")
            continue
        rates[pricing] = rate
        offers = [{**base, "pricing": pricing, "payment": pay, "offering_class": "", "upfront_usd": 0.0,
                   "recurring_usd_per_hour": rate, "usd_per_hour": rate, "term_hours": hours}
                  for pay in SAVINGS_PLAN_PAYMENTS]
        out.append(_Row(line=line, key=(NAME, reg, "", itype, pricing, "*", osys), price=rate, currency=currency,
                        meter=meter, offer_rows=offers))
    if "savings_plan_3y" in rates and "savings_plan_1y" in rates and rates["savings_plan_3y"] >= rates[
            "savings_plan_1y"]:
        rep.skip(line, itype, reg, f"longer_term_not_cheaper: savingsPlan 3 Years {rates['savings_plan_3y']} >= "
                                   f"1 Year {rates['savings_plan_1y']}")
        out = [r for r in out if r.key[4] != "savings_plan_3y"]
    return out


def _dedupe(rows: list[_Row], rep: _Report, source: str) -> list[_Row]:
    """One row per key whatever the item order: identical repeats collapse (reported), different prices raise."""
    groups: dict[tuple[str, ...], list[_Row]] = {}
    for r in rows:
        groups.setdefault(r.key, []).append(r)
    kept: list[_Row] = []
    conflicts = []
    for key, grp in groups.items():
        grp.sort(key=lambda r: r.line)
        values = {(r.price, r.currency) for r in grp}
        if len(values) > 1:
            conflicts.append(f"{'/'.join(k for k in key if k)}: items {[r.line for r in grp]} give "
                             f"{sorted(values)}")
            continue
        keep = min(grp, key=lambda r: (r.meter, r.line))
        kept.append(keep)
        for r in grp:
            if r is not keep:
                rep.skip(r.line, key[3], key[1], f"duplicate: same key and price as item {keep.line}; collapsed")
    if conflicts:
        raise PriceDataError(f"{source}: {len(conflicts)} offer key(s) have more than one price after filtering "
                             f"(Spot, Low Priority, DevTest, Windows, Cloud Services): " + "; ".join(conflicts[:5]))
    return kept


def _check_spot(rows: list[_Row], rep: _Report) -> list[_Row]:
    od = {r.key[:4] + r.key[6:]: r.price for r in rows if r.key[4] == "on_demand"}
    out = []
    for r in rows:
        if r.key[4] == "spot":
            ref = od.get(r.key[:4] + r.key[6:])
            if ref is None:
                rep.skip(r.line, r.key[3], r.key[1], f"unverifiable_spot: spot {r.price} but no on-demand price for "
                                                     "this size, so it cannot be checked for placeholders")
                continue
            if r.price >= ref - 1e-12:
                rep.skip(r.line, r.key[3], r.key[1], f"placeholder_spot: spot {r.price} >= on-demand {ref}")
                continue
        out.append(r)
    return out


def _gpu_count_notes(rows: list[_Row], facts: dict[tuple[str, str], SkuFacts] | None, rep: _Report) -> None:
    if not facts:
        return
    seen = set()
    for r in rows:
        itype, reg = r.key[3], r.key[1]
        size, f = AZURE_GPU_SIZES.get(itype), facts.get((itype, reg.lower()))
        if size is None or f is None or f.gpus is None or (itype, reg) in seen:
            continue
        seen.add((itype, reg))
        fractional = size.count < 1
        if abs(f.gpus - size.count) > 1e-9 and not (fractional and f.gpus == 1):
            rep.notes.append(f"{itype} in {reg}: resource SKUs say {f.gpus:g} GPUs; the documented size has "
                             f"{size.count:g} x {size.gpu}; using {size.count:g}")
        if f.restricted_zones:
            rep.notes.append(f"{itype} in {reg}: zones {', '.join(f.restricted_zones)} restricted for this "
                             "subscription (the regional price still applies in the other zones)")


def _frame(rows: list[_Row]) -> "pd.DataFrame":
    import pandas as pd

    offers, extras = [], []
    for r in rows:
        for o in r.offer_rows:
            offers.append(o)
            extras.append((r.key[6], r.meter))
    df = offers_frame(offers)
    for i, col in enumerate(EXTRA_COLUMNS):
        df[col] = pd.Series([e[i] for e in extras], dtype="string")
    return df.sort_values(list(OFFER_KEY) + ["operating_system"], kind="mergesort").reset_index(drop=True)


def _parse(payload: Any, *, region: str | None, as_of: str, source: str, default_currency: str,
           allow_free: Collection[str], gpu_only: bool, resource_skus: Iterable[Mapping[str, Any]] | None,
           rep: _Report) -> "pd.DataFrame":
    name = Path(payload).name if isinstance(payload, Path) else "the document"
    pairs = _items_of(_load_payload(payload), name)
    facts = _sku_facts(resource_skus) if resource_skus is not None else None
    rows = _classify(pairs, region=region, as_of=as_of, source=source, default_currency=default_currency,
                     allow_free=allow_free, gpu_only=gpu_only, facts=facts, rep=rep)
    rows = _check_spot(_dedupe(rows, rep, source), rep)
    _gpu_count_notes(rows, facts, rep)
    df = _frame(rows)
    rep.skipped.sort(key=lambda s: (s.line, s.reason))
    return df


def parse_retail_items(items: Any, *, region: str | None = None, as_of: str = "unknown", source: str = SOURCE,
                       default_currency: str = "USD", allow_free: Collection[str] = (), gpu_only: bool = True,
                       resource_skus: Iterable[Mapping[str, Any]] | None = None) -> "pd.DataFrame":
    """Normalize Azure Retail Prices items into offer rows (Linux and Windows), pure.

    Args:
        items: a list of items, a Retail Prices response (``{"Items": [...], "BillingCurrency": ...}``), a list of
            responses, or a path / JSON text holding any of these (the ``azure-retail`` file format).
        region: region for items without ``armRegionName``; when given, items of other regions are reported.
        as_of, source: written to every row.
        default_currency: currency of items that carry neither ``currencyCode`` nor a page ``BillingCurrency``
            (the API's default is USD).
        allow_free: sizes (armSkuName) whose price 0 is an explicit free-tier price to keep (BUG-07); any other
            0 is reported and dropped.
        gpu_only: True (default): only sizes of AZURE_GPU_SIZES become rows. False: every Virtual Machines size
            does, with empty GPU fields for non-GPU sizes (for inspection, never for the planner).
        resource_skus: ``sku.as_dict()`` entries (:func:`parse_resource_skus`) to fill vCPUs/memory and drop
            restricted sizes.

    Returns:
        DataFrame with OFFER_COLUMNS (OFFER_DTYPES) + ``operating_system`` (``linux``/``windows``) + ``meter_name``,
        sorted by key. ``df.attrs["skipped"]`` (list of SkippedRow) and ``df.attrs["notes"]`` report what was left
        out and why (``zero_price``, ``low_priority``, ``devtest``, ``not_a_vm_row``, ``unknown_gpu``...).

    Raises:
        PriceDataError: an unrecognized ``reservationTerm``; one key with different prices after filtering.
        InputError: the payload is not Retail Prices JSON.
    """
    rep = _Report(source)
    df = _parse(items, region=region, as_of=as_of, source=source, default_currency=default_currency,
                allow_free=allow_free, gpu_only=gpu_only, resource_skus=resource_skus, rep=rep)
    df.attrs["skipped"] = rep.skipped
    df.attrs["notes"] = rep.notes
    return df


# --------------------------------------------------------------------------------------------------------------------
# live adapter


def list_regions(options: FetchOptions) -> list[str]:
    """``options.regions`` (validated armRegionName codes such as ``eastus``), else :data:`DEFAULT_REGIONS`.

    Raises:
        InputError: a region that is not an ARM region code (``East US``, ``us-east-1``).
    """
    if not options.regions:
        return list(DEFAULT_REGIONS)
    out: list[str] = []
    for r in options.regions:
        code = str(r).strip()
        if not _REGION_RE.match(code):
            raise InputError("regions", f"'{r}' is not an Azure region code (armRegionName)",
                             accepted="lower-case ARM names such as " + ", ".join(DEFAULT_REGIONS[:3]))
        if code not in out:
            out.append(code)
    return out


def _canon(url: str) -> tuple[Any, ...]:
    """A URL compared by meaning: host case, default port, percent-encoding and query order ignored."""
    p = urlsplit(url)
    port = p.port
    if (p.scheme == "https" and port == 443) or (p.scheme == "http" and port == 80):
        port = None
    return (p.scheme.lower(), (p.hostname or "").lower(), port, p.path.rstrip("/"),
            tuple(sorted(parse_qsl(p.query, keep_blank_values=True))))


def _first_url(region: str, options: FetchOptions) -> str:
    import requests

    base = options.endpoints.get(NAME) or RETAIL_PRICES_URL
    params = {"api-version": API_VERSION, "currencyCode": f"'{options.currency}'", "meterRegion": "'primary'",
              "$filter": f"serviceName eq 'Virtual Machines' and armRegionName eq '{region}'"}
    url = requests.Request("GET", base, params=params).prepare().url
    assert url is not None
    return url


def _fetch_retail_pages(region: str, options: FetchOptions) -> list[dict[str, Any]]:
    import requests

    session = http_session(options)
    url: str | None = _first_url(region, options)
    visited: set[tuple[Any, ...]] = set()
    pages: list[dict[str, Any]] = []
    total = 0
    try:
        while url:
            n = len(pages) + 1
            if options.max_pages is not None and len(pages) >= options.max_pages:
                raise TruncatedPriceList(f"azure {region}: more than max_pages={options.max_pages} pages", next=url)
            visited.add(_canon(url))
            where = f"azure {region}: page {n} ({url})"

            def fail(msg: str) -> ProviderError:
                # page 1: nothing was read; later pages: what was read is an incomplete list
                return ProviderError(f"{where}: {msg}") if n == 1 else TruncatedPriceList(f"{where}: {msg}", next=url)

            try:
                resp = session.get(url, timeout=options.timeout_s, headers={"Accept": "application/json"})
            except requests.RequestException as e:
                raise fail(f"request failed after {options.max_attempts} attempt(s): {type(e).__name__}: {e}") from e
            if resp.status_code != 200:
                raise fail(f"HTTP {resp.status_code} after {options.max_attempts} attempt(s): {resp.text[:200]!r}"
                           f"{retry_after_note(resp, options)}")
            try:
                page = resp.json()
            except ValueError as e:
                raise fail(f"answer is not JSON: {e}") from e
            if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
                raise fail("answer has no 'Items' list: not a Retail Prices page")
            billing = page.get("BillingCurrency")
            if billing is not None and str(billing) != options.currency:
                raise PriceDataError(f"{where}: BillingCurrency {billing} but {options.currency} was requested; "
                                     "prices in another currency are refused, never mixed")
            other = sorted({str(i.get("currencyCode")) for i in page["Items"]
                            if isinstance(i, dict) and i.get("currencyCode") not in (None, options.currency)})
            if other:
                raise PriceDataError(f"{where}: items priced in {other} but {options.currency} was requested")
            count = float_or_none(page.get("Count"))
            if count is not None and count != len(page["Items"]):
                raise fail(f"Count says {page.get('Count')} but the page holds {len(page['Items'])} items")
            pages.append(page)
            total += len(page["Items"])
            options.say(NAME, region, f"page {n}: {len(page['Items'])} items")
            nxt = page.get("NextPageLink")
            if nxt:
                nxt = str(nxt)
                if _canon(nxt) in visited:
                    raise TruncatedPriceList(f"azure {region}: NextPageLink of page {n} points at a page already "
                                             "read (itself or an earlier one)", next=nxt)
                if urlsplit(nxt).scheme not in ("http", "https"):
                    raise TruncatedPriceList(f"azure {region}: NextPageLink of page {n} is not an http(s) URL",
                                             next=nxt)
            url = nxt or None
    finally:
        session.close()
    if total == 0:
        raise PriceDataError(f"azure {region}: no prices (Count 0 for serviceName 'Virtual Machines' and "
                             f"armRegionName '{region}'): a wrong region code or filter, not an empty catalog")
    return pages


def _fetch_resource_skus(region: str, options: FetchOptions) -> list[dict[str, Any]] | None:
    client = options.clients.get("azure_compute")
    if client is None:
        sub = os.environ.get("AZURE_SUBSCRIPTION_ID", "").strip()
        if not sub:
            return None
        try:  # the Azure SDK is the optional extra gpuopt[azure]
            from azure.identity import DefaultAzureCredential
            from azure.mgmt.compute import ComputeManagementClient
        except ImportError as e:
            raise MissingCredentials(f"azure: AZURE_SUBSCRIPTION_ID is set but the Azure SDK is not installed "
                                     f"({e.name}); run `pip install 'gpuopt[azure]'`, or unset "
                                     "AZURE_SUBSCRIPTION_ID to use the public price list alone") from None

        import logging

        # azure-identity logs each credential it tried as a WARNING block on stderr: MissingCredentials says it
        logging.getLogger("azure.identity").setLevel(logging.ERROR)
        client = ComputeManagementClient(DefaultAzureCredential(), sub)
    try:
        from azure.core.exceptions import ClientAuthenticationError
    except ImportError:  # an injected client without the SDK (tests): nothing raises the SDK's error
        ClientAuthenticationError = type("ClientAuthenticationError", (Exception,), {})

    try:
        skus = client.resource_skus.list(filter=f"location eq '{region}'")
        return [s.as_dict() if hasattr(s, "as_dict") else dict(s) for s in skus]
    except ClientAuthenticationError as e:
        raise MissingCredentials(f"azure: AZURE_SUBSCRIPTION_ID is set but no Azure credential works ({e}); run "
                                 "`az login` or set AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET, or unset "
                                 "AZURE_SUBSCRIPTION_ID to use the public price list alone") from e


def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]:
    """I/O only: the Retail Prices pages of one region (every page, in order) and, when a subscription is
    configured, its resource SKUs.

    Request: ``GET {endpoints['azure'] or RETAIL_PRICES_URL}?api-version=2023-01-01-preview&currencyCode='USD'
    &meterRegion='primary'&$filter=serviceName eq 'Virtual Machines' and armRegionName eq '<region>'``, then each
    ``NextPageLink`` as given, with :func:`providers.base.http_session` (429 honouring Retry-After and 5xx are retried
    up to ``options.max_attempts``; ``options.timeout_s`` per call).

    Resource SKUs: only with ``options.clients["azure_compute"]`` or ``AZURE_SUBSCRIPTION_ID`` set
    (``ComputeManagementClient(DefaultAzureCredential(), subscription_id).resource_skus.list(filter="location eq
    '<region>'")``, entries as ``sku.as_dict()``); otherwise None and the adapter works from the Retail API and
    AZURE_GPU_SIZES alone.

    Returns:
        ``{"retail_pages": [page dicts exactly as returned], "resource_skus": [dicts] | None}``.

    Raises:
        TruncatedPriceList: more than ``options.max_pages`` pages (``next`` = the link not followed); a NextPageLink
            pointing at a page already read (itself included); a page after the first that still fails after the
            retries (``next`` = that page). Never a shorter list.
        ProviderError: the first page fails after the retries (HTTP error, timeout, not JSON).
        PriceDataError: ``BillingCurrency`` (or an item's ``currencyCode``) is not ``options.currency``; the whole
            listing is empty (``Count: 0``): a wrong request must not look like an empty catalog.
        MissingCredentials: ``AZURE_SUBSCRIPTION_ID`` is set but no credential works, or the Azure SDK (the extra
            ``gpuopt[azure]``: azure-identity, azure-mgmt-compute) is not installed.
    """
    pages = _fetch_retail_pages(region, options)
    return {"retail_pages": pages, "resource_skus": _fetch_resource_skus(region, options)}


def parse_region(raw: Mapping[str, Any], region: str, as_of: str) -> ParseResult:
    """PURE: :func:`fetch_region`'s payloads -> Linux GPU offers of one region (OFFER_COLUMNS exactly).

    On-demand and spot (zone empty) per size; reserved_1y / reserved_3y with ``all_upfront`` and ``no_upfront``
    (the reservation's term total / term hours, BUG-01); savings_plan_1y / savings_plan_3y with ``no_upfront`` and
    ``all_upfront`` at the hourly savingsPlan price (see the module docstring); source ``azure-retail-prices-api``;
    prices per instance-hour, currency per row. Windows prices are not offers
    (counted in a note); restricted sizes are skipped when resource SKUs were fetched.

    Raises:
        PriceDataError: items priced in a currency other than their page's BillingCurrency; an unrecognized
            reservationTerm; two prices for one offer key.
    """
    pages = raw.get("retail_pages")
    if not isinstance(pages, list):
        raise ProviderError(f"azure {region}: raw payload has no 'retail_pages' list")
    for n, page in enumerate(pages, start=1):
        billing = page.get("BillingCurrency")
        if billing:
            other = sorted({str(i.get("currencyCode")) for i in page.get("Items") or []
                            if i.get("currencyCode") not in (None, billing)})
            if other:
                raise PriceDataError(f"azure {region}: page {n} has BillingCurrency {billing} but items in {other}")
    skus = raw.get("resource_skus")
    rep = _Report(SOURCE)
    full = _parse(pages, region=region, as_of=as_of, source=SOURCE, default_currency="USD", allow_free=(),
                  gpu_only=True, resource_skus=skus, rep=rep)
    if skus is None:
        rep.notes.append("resource SKUs not fetched (no AZURE_SUBSCRIPTION_ID): GPUs from the documented size table, "
                         "vCPUs and memory unknown, sizes restricted for a subscription not checked")
    return _linux_offers(full, rep, f"{SOURCE} ({region})")


def _linux_offers(full: "pd.DataFrame", rep: _Report, what: str) -> ParseResult:
    """The offers of a full frame: Linux rows, OFFER_COLUMNS exactly (Windows rows counted in a note)."""
    windows = full["operating_system"] == "windows"
    if windows.any():
        rep.notes.append(f"{int(windows.sum())} Windows price row(s) not offered (offers are Linux)")
    offers = full.loc[~windows, list(OFFER_COLUMNS)].reset_index(drop=True)
    check_unique(offers, what)
    return ParseResult(offers=offers, skipped=rep.skipped, notes=rep.notes)


def import_file(path: "str | Path", as_of: str) -> ParseResult:
    """``gpuopt prices import FILE --input-format azure-retail``: a saved Retail Prices response (or a list of responses
    or of items) -> Linux GPU offers, source ``import:<file name>``. Items must carry ``armRegionName``."""
    name = Path(path).name
    rep = _Report(f"import:{name}")
    full = _parse(Path(path), region=None, as_of=as_of, source=f"import:{name}", default_currency="USD",
                  allow_free=(), gpu_only=True, resource_skus=None, rep=rep)
    from providers._input import check_offer_values

    res = _linux_offers(full, rep, f"import:{name}")
    res.offers, bad = check_offer_values(res.offers, f"import:{name}")
    res.skipped = list(res.skipped) + bad
    return res
