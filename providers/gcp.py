"""GCP live prices: the Cloud Billing Catalog API (Compute Engine SKUs) -> GPU machine offers.

**The API.** ``GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?key=API_KEY&currencyCode=USD
&pageSize=5000&pageToken=...`` answers ``{"skus": [...], "nextPageToken": "..."}``; the last page has no (or an
empty) token (Google, "Get Google Cloud pricing information", docs.cloud.google.com/billing/v1/how-tos/catalog-api:
"results are paginated and limited to 5000 SKUs per page ... the token is not returned when all items have been
listed"). 6F81-5844-456A is Compute Engine (skypilot-org/skypilot ``sky/catalog/data_fetchers/fetch_gcp.py``
``GCE_SERVICE_ID``; dstackai/gpuhunt ``providers/gcp.py`` ``compute_service``). A SKU carries ``description``,
``category {resourceFamily, resourceGroup, usageType}``, ``serviceRegions`` and ``pricingInfo[0].pricingExpression
{usageUnit, tieredRates[{startUsageAmount, unitPrice {currencyCode, units, nanos}}]}``; price = units + nanos / 1e9.

**GCP does not sell a GPU machine as one SKU.** A machine type's hourly price is composed from per-resource SKUs of
its series in its region::

    price = vCPUs x core price + RAM GiB x ram price + GPUs x GPU price

the composition SkyPilot (fetch_gcp.py ``get_vm_price``), gpuhunt (``Prices.get_instance_price``) and opencost
(``pkg/cloud/gcp``) use. With the recorded SKUs of opencost's test data (``pkg/cloud/gcp/test/skus.json``:
"A2 Instance Core running in Americas" 0.031611/h, "A2 Instance Ram running in Americas" 0.004237/GiB-h, "Nvidia
Tesla A100 GPU running in Americas" 2.933908/h) it reproduces every a2 host row of SkyPilot's GCP catalog
(``pricing_cache/data/inputs/gcp_vms_v8_gpu_more.csv``: a2-highgpu-1g host 0.73948, A100 2.93391 in us-central1),
A2 Ultra included (it bills the same A2 cores and RAM). Description patterns (each seen in public code that reads
the live catalog):

* cores / RAM: ``A2 Instance Core running in Americas``, ``Spot Preemptible A3 Instance Ram running in Americas``
  (opencost skus.json; sc-crawler tests), ``A3Plus Instance Core`` = A3 Mega (gpuhunt: ``"A3Plus Instance":
  "a3-megagpu"``), ``A3Ultra Instance Core`` = A3 Ultra (a Go family matcher of a public cost tool);
* GPUs: ``Nvidia Tesla A100 GPU``, ``Nvidia Tesla A100 80GB GPU``, ``Nvidia H100 80GB GPU``, ``Nvidia H100 80GB Mega
  GPU``, ``H200 141GB GPU``, ``Nvidia L4 GPU`` + `` running in <geo>``; spot: `` attached to Spot Preemptible VMs
  running in <geo>`` (Cyclenerd/google-cloud-pricing-cost-calculator ``build/mapping.csv``; sc-crawler tests);
* committed use: ``Commitment v1: A2 Cpu in APAC for 1 Year`` (usageType ``Commit1Yr``; a recorded SKU
  38FA-6071-3D88), ``Commitment v1: A3 Cpu in ... for 3 Years``, ``Commitment v1: H200 141GB GPU running in Americas
  for 3 Years`` (Cyclenerd mapping.csv, sc-crawler tests);
* A4 (B200): ``A4 Nvidia B200 (1 gpu slice) running in Americas``. A4 has **no** core/RAM SKUs: the slice is one
  eighth of the whole machine, vCPUs and RAM included (two public cost tools say so; SkyPilot's fetch_gcp.py: "GCP
  does not have A4 instance in SKUs API yet", which is why its a4 host rows are 0.0). a4-highgpu-8g = 8 slices.

**What is reported, never guessed** (``SkippedRow`` reasons): a description not in the tables above
(``unknown_description`` / ``unknown_gpu``); ``Nvidia H100 80GB Plus GPU`` (``ambiguous_gpu``: public code maps it
to A3 High, to A3 Mega, or leaves it out; its price equals SkyPilot's H100-MEGA row, but one price match is not
enough to bill a machine with it); GPUs that attach to N1 machines (T4, V100, P100, P4, K80: ``no_host_series``,
N1 is not priced here); Calendar-mode SKUs (``calendar_mode``), "Reserved ..." meters (``reserved_capacity``), DWS
wording of no documented form (``unknown_dws``); Sole Tenancy, Custom, Virtual Workstation and similar SKUs
(``variant``: other products that would otherwise collide with the plain on-demand price, the GCP form of
PRICE_FAULTS BUG-03/04/05); a zero price (``zero_price``, BUG-07), a negative or missing one
(``invalid_price`` / ``unknown_price``); several tiers or a first tier above 0 (``tiered_price``); an unexpected
usage unit (``unexpected_unit``); a description whose resource disagrees with ``resourceGroup`` or whose commitment
term disagrees with ``usageType`` (``inconsistent_category``); two SKUs for one (component, region, pricing):
equal prices collapse (``duplicate``), different prices keep none (``conflicting_price``). A "Spot Preemptible ..."
description whose usageType says OnDemand (seen on the live A4 spot slice SKU) is spot: the description wins, as in
the public tools that met it, and a note says so. A machine type missing any of its parts in a region is reported
(``missing_part``), never priced from partial parts; a composed spot price at or above on-demand, or a spot part
above its on-demand part, is reported (``placeholder_spot``); a spot price without an on-demand price to check it
against (``unverifiable_spot``); a committed rate (or one committed part) not below on-demand
(``implausible_commitment``).

**Which consumption model a SKU prices** is decided by :func:`classify_sku`, from the description FIRST and the
usageType second (:data:`CONSUMPTION_MARKERS`): a Flex-start ("... attached to DWS Defined Duration VMs ...", "DWS
Defined Duration A3 Core ..."), Calendar-mode, "Reserved ..." or Commitment SKU is never the on-demand or spot price
of a GPU, whatever its usageType says; the plain description is on-demand only under usageType OnDemand. The live
catalog files the DWS SKUs under OnDemand, and their descriptions CONTAIN the on-demand GPU name ("Nvidia H100 80GB
GPU attached to DWS Defined Duration VMs running in Americas", 4.200761 $/h, next to the on-demand "Nvidia H100 80GB
GPU running in Americas", 9.796551 $/h, in the catalog of 2025-06-16): SkyPilot's fetcher took the first OnDemand
SKU containing "H100 80GB GPU", the DWS one, and priced a3-highgpu-8g us-central1 at 43.07 $/h (on-demand host +
8 DWS GPUs) instead of the list 88.49 (pricing_cache/data/inputs/PRICES_README.md (a)).

**Flex-start** (Dynamic Workload Scheduler, up to 7 days, queued): composed like the other pricings, from the
"DWS Defined Duration" SKUs of ALL the machine's parts (GPU + the series' cores and RAM; the A4 slice alone), so a
``flex_start`` row is a whole-instance price: ``payment`` "", ``upfront_usd`` 0, ``recurring_usd_per_hour`` =
``usd_per_hour``, ``term_hours`` 0 (a window, records.WINDOW_PRICING). A machine type with a DWS GPU SKU but no DWS
core/RAM SKU is reported ``missing_part`` (never priced from the GPU alone or with on-demand host parts); a
Flex-start part above its on-demand part (``implausible_flex_start``) or a total not below on-demand
(``flex_start_not_below_on_demand``) is reported. The A3 host SKUs exist ("DWS Defined Duration A3 Core running in
Americas" 9A32-36B2-7FBC, 0.010934 $/vCPU-h; "... A3 Ram ..." ED19-A584-4A84, 0.000952 $/GiB-h: Google Cloud Japan,
zenn.dev/google_cloud_jp/articles/dws-flex-new-skus): a3-highgpu-8g us-central1 Flex-start = 8 x 4.200761 + 208 x
0.010934 + 1872 x 0.000952 = 37.66 $/h.

**Committed use** (Commit1Yr / Commit3Yr SKUs for the series' cores and RAM and the GPUs): term-based, billed
monthly with no upfront payment (reserved_rules.py: "Committed use discounts ... require no upfront costs"), so the
rows are ``payment = no_upfront``, ``upfront_usd = 0``, ``recurring_usd_per_hour = usd_per_hour``, ``term_hours``
8760 / 26280. These are quoted prices, not ``rule:`` estimates.

**Not included**: Local SSD bundled with a2-ultragpu, a3 and a3-ultra machine types (a GiB-month Storage SKU;
SkyPilot's host rows exclude it too), so those rows understate the bill by that disk; ``-nolssd`` variants get the
same price as their parents. a3-edgegpu-8g is billed as A3 cores/RAM + H100 (gpuhunt's family rule; no separate
A3 Edge SKU was found).

**One listing per refresh.** The catalog is global, not regional: one listing holds every region. The refresh
calls ``list_regions`` once and ``fetch_region`` per region from a thread pool, all with the SAME ``FetchOptions``
object. The listing is fetched once per (that FetchOptions object, endpoint, API key, currency, page cap) and kept
in a module-level cache guarded by a lock: the first caller fetches while the others wait on the entry's lock; a
failure is cached too, so the other regions of that refresh fail fast with the same error instead of re-listing.
An entry lives as long as its FetchOptions object (a weak reference; dead entries are pruned on the next call), so
the next refresh, with new options, lists again. ``clear_listing_cache()`` empties it.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import TERM_HOURS, SkippedRow
from providers._common import ParseResult, check_unique, hourly_row, offers_frame
from providers.base import (FetchOptions, MissingCredentials, RegionSkipped, TruncatedPriceList, http_session,
                            retry_after_note)
from providers.gpu_names import GPU_MEMORY_MIB, canonical_gpu
from providers.skypilot import GCP_MACHINE_GPUS, interconnect_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "gcp"
SOURCE = "gcp-cloud-billing-catalog"
#: Compute Engine's service id in the Cloud Billing Catalog.
SERVICE_ID = "6F81-5844-456A"
DEFAULT_ENDPOINT = "https://cloudbilling.googleapis.com/v1"
PAGE_SIZE = 5000
API_KEY_ENV = "GPUOPT_GCP_API_KEY"
KEY_HOWTO = ("GCP: no API key for the Cloud Billing Catalog API; create an API key in a Google Cloud project with "
             "the Cloud Billing API enabled (console: APIs & Services > Credentials) and pass it as "
             f"`gpuopt prices refresh --gcp-api-key KEY` (FetchOptions.gcp_api_key) or set {API_KEY_ENV}")

#: usageType -> gpuopt pricing, for a SKU whose description names no other consumption model (see
#: :func:`classify_sku`: the description decides the model first, the usageType must then agree with it).
USAGE_TYPES = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}
#: Pricing options composed per machine type. ``flex_start``: Dynamic Workload Scheduler Flex-start, priced only
#: from whole sets of "DWS Defined Duration" SKUs (GPU + the series' cores and RAM, or the A4 slice).
PRICINGS = ("on_demand", "spot", "reserved_1y", "reserved_3y", "flex_start")
#: usageTypes a Flex-start ("DWS Defined Duration") SKU may carry. The live catalog files them under OnDemand
#: (the reason SkyPilot's fetcher, which takes the first OnDemand SKU whose description CONTAINS the GPU name, priced
#: a3-highgpu-8g us-central1 with the DWS H100 SKU: pricing_cache/data/inputs/PRICES_README.md (a); a public test of
#: a GCP cost tool records the DWS and Calendar-mode SKUs with usageType OnDemand too); Flex-start uses preemptible
#: quota, so Preemptible is accepted as well. The description decides: such a SKU is never on-demand or spot.
FLEX_START_USAGE_TYPES = frozenset({"OnDemand", "Preemptible"})
#: The usage unit each component kind must be priced in.
UNITS = {"core": "h", "ram": "GiBy.h", "gpu": "h"}

_REGION_RE = re.compile(r"^[a-z]+-[a-z]+\d+$")

# --------------------------------------------------------------------------------------------------------------------
# Tables


def _shapes() -> dict[str, tuple[float, float]]:
    t: dict[str, tuple[float, float]] = {}
    for n, (cpu, mem) in {1: (12, 85), 2: (24, 170), 4: (48, 340), 8: (96, 680)}.items():
        t[f"a2-highgpu-{n}g"] = (cpu, mem)
    t["a2-megagpu-16g"] = (96, 1360)
    for n, (cpu, mem) in {1: (12, 170), 2: (24, 340), 4: (48, 680), 8: (96, 1360)}.items():
        t[f"a2-ultragpu-{n}g"] = (cpu, mem)
    for n, (cpu, mem) in {1: (26, 234), 2: (52, 468), 4: (104, 936), 8: (208, 1872)}.items():
        t[f"a3-highgpu-{n}g"] = (cpu, mem)
    t["a3-megagpu-8g"] = (208, 1872)
    t["a3-edgegpu-8g"] = (208, 1872)
    t["a3-edgegpu-8g-nolssd"] = (208, 1872)
    t["a3-ultragpu-8g"] = (224, 2952)
    t["a3-ultragpu-8g-nolssd"] = (224, 2952)
    t["a4-highgpu-8g"] = (224, 3968)
    for size in (4, 8, 12, 16, 24, 32, 48, 96):
        t[f"g2-standard-{size}"] = (size, 4 * size)
    return {k: (float(cpu), float(mem)) for k, (cpu, mem) in t.items()}


#: Machine type -> (vCPUs, memory GiB), the ``vCPUs`` and ``MemoryGiB`` columns of every a2/a3/a4/g2 host row of
#: SkyPilot's GCP catalog (pricing_cache/data/inputs/gcp_vms_v8_gpu_more.csv, skypilot-catalog catalogs/v8/gcp/
#: vms.csv @006059e0; each type has one shape in every region of the file). tests/test_providers_gcp.py checks the
#: table against that file.
MACHINE_SHAPES: dict[str, tuple[float, float]] = _shapes()

#: Machine family prefix -> the series whose core/RAM SKUs bill it ("a4": the A4 slice bundles cores and RAM).
MACHINE_SERIES: dict[str, str] = {
    "a2-highgpu-": "a2", "a2-megagpu-": "a2", "a2-ultragpu-": "a2",
    "a3-highgpu-": "a3", "a3-edgegpu-": "a3", "a3-megagpu-": "a3plus", "a3-ultragpu-": "a3ultra",
    "a4-highgpu-": "a4", "g2-standard-": "g2",
}
#: Series whose GPU SKU is a machine slice (vCPUs and RAM included): no core/RAM parts.
SLICE_SERIES = frozenset({"a4"})
SERIES_NAMES = ("a2", "a3", "a3plus", "a3ultra", "a4", "g2")

#: GPU SKU phrase (lower-case, location and spot/commitment wording removed) -> accelerator name as in
#: providers.skypilot.GCP_MACHINE_GPUS. Sources in the module docstring.
GPU_PHRASES: dict[str, str] = {
    "nvidia tesla a100 gpu": "A100",
    "nvidia tesla a100 80gb gpu": "A100-80GB",
    "nvidia h100 80gb gpu": "H100",
    "nvidia h100 80gb mega gpu": "H100-MEGA",
    "nvidia h100 mega 80gb gpu": "H100-MEGA",
    "h200 141gb gpu": "H200",
    "nvidia h200 141gb gpu": "H200",
    "a4 nvidia b200 (1 gpu slice)": "B200",
    "nvidia l4 gpu": "L4",
}
#: Accelerators whose SKU covers a machine slice (vCPUs + RAM + one GPU).
SLICE_ACCELERATORS = frozenset({"B200"})
#: GPU phrases public code disagrees on: reported, never used.
AMBIGUOUS_GPU_PHRASES: dict[str, str] = {
    "nvidia h100 80gb plus gpu": "public code maps it to A3 High, to A3 Mega, or leaves it out",
}
#: GPUs sold only attached to N1 machines (whose prices this adapter does not compose).
N1_GPU_PHRASES: dict[str, str] = {
    "nvidia tesla t4 gpu": "T4", "nvidia tesla v100 gpu": "V100", "nvidia tesla p100 gpu": "P100",
    "nvidia tesla p4 gpu": "P4", "nvidia tesla k80 gpu": "K80",
}
#: Other products that share resource groups with the plain SKUs (excluded and reported). Flex-start (DWS),
#: Calendar mode and "Reserved ..." SKUs are told apart before this by :data:`CONSUMPTION_MARKERS`.
_VARIANT_RE = re.compile(r"sole tenancy|\bcustom\b|\bpremium\b|virtual workstation|\bflex\b|suspended|"
                         r"extended memory|\bmanaged\b", re.IGNORECASE)
#: Consumption models a SKU description names, each with the wording that names it (lower-case, whitespace
#: normalized). Checked on every Compute SKU before anything else, in this order of precedence:
#:
#: * ``calendar_mode``: "Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode", "... DWS Calendar Mode ..."
#:   (DWS Calendar mode, a future reservation: no pricing model of gpuopt; reported, never used);
#: * ``reserved``: "Reserved Nvidia Tesla A100 GPU in Americas" (a reservation's own meter, seen at $0 with usageType
#:   OnDemand; reported, never used);
#: * ``flex_start``: "Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas", "DWS Defined
#:   Duration A3 Core running in Americas" (real SKUs 341A-49A5-0C07 and 9A32-36B2-7FBC: Google Cloud Japan,
#:   zenn.dev/google_cloud_jp/articles/dws-flex-new-skus), "DWS Flex Start ..." (the prefix of H4D's Flex-start SKUs);
#: * ``other_dws``: any other DWS / "Defined Duration" / "Flex-start" wording (reported: not a documented form);
#: * ``commitment``: "Commitment v1: ... for 1 Year" / "for 3 Years";
#: * ``spot``: "Spot Preemptible ...", "Preemptible ...", "... attached to Spot Preemptible VMs ...".
#:
#: A description with none of them is the plain on-demand SKU, and only when its usageType is OnDemand.
CONSUMPTION_MARKERS: tuple[tuple[str, "re.Pattern[str]"], ...] = (
    ("calendar_mode", re.compile(r"\bcalendar mode\b|\bdws calendar\b", re.IGNORECASE)),
    ("reserved", re.compile(r"^reserved\b", re.IGNORECASE)),
    ("flex_start", re.compile(r"\battached to dws defined duration vms\b|^dws defined duration\b|^dws flex start\b",
                              re.IGNORECASE)),
    ("other_dws", re.compile(r"\bdws\b|\bdefined duration\b|\bflex[- ]start\b", re.IGNORECASE)),
    ("commitment", re.compile(r"^commitment(?: v\d+)?:", re.IGNORECASE)),
    ("spot", re.compile(r"^(?:commitment(?: v\d+)?:\s*)?(?:spot )?preemptible\b|\battached to spot preemptible vms\b",
                        re.IGNORECASE)),
)
_HOST_RE = re.compile(r"^(?P<series>a2|a3|a3plus|a3ultra|a4|g2)\s+(?:instance\s+)?(?P<res>core|cpu|ram)$")
_SERIES_WORD_RE = re.compile(r"\b(?:a2|a3|a3plus|a3ultra|a4|g2)\b", re.IGNORECASE)


def machine_spec(instance_type: str) -> tuple[str, str, int] | None:
    """(series, accelerator, GPUs per VM) of a machine type, or None when it is not an a2/a3/a4/g2 GPU type.

    The accelerator and count come from providers.skypilot.GCP_MACHINE_GPUS (``-nolssd`` looked up without it)."""
    base = instance_type[:-len("-nolssd")] if instance_type.endswith("-nolssd") else instance_type
    gpus = GCP_MACHINE_GPUS.get(base)
    if gpus is None:
        return None
    for prefix, series in MACHINE_SERIES.items():
        if instance_type.startswith(prefix):
            return series, gpus[0], int(gpus[1])
    return None


# --------------------------------------------------------------------------------------------------------------------
# parse_skus: SKUs -> component prices


@dataclass
class _Report:
    skipped: list[SkippedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def skip(self, what: str, region: str, reason: str) -> None:
        self.skipped.append(SkippedRow(source=SOURCE, line=0, instance_type=what, region=region, reason=reason))


@dataclass(frozen=True)
class SkuClass:
    """How :func:`classify_sku` reads one Cloud Billing Catalog SKU.

    Attributes:
        status: ``ok`` (a component price of a GPU machine series), ``skip`` (a SKU of a GPU machine series that is
            not used; ``reason`` says why, as ``code: detail``) or ``ignore`` (outside the GPU machine series).
        pricing: for ``ok``: ``on_demand``, ``spot``, ``reserved_1y``, ``reserved_3y`` or ``flex_start``.
        kind: ``core``, ``ram`` or ``gpu``. series: the core/RAM series (a2, a3, a3plus, a3ultra, a4, g2).
        accelerator: the GPU (providers.skypilot.GCP_MACHINE_GPUS name) of a GPU SKU.
        model: the consumption model the description names (a key of :data:`CONSUMPTION_MARKERS`, or ``plain``).
        reason: why a SKU is skipped or ignored. note: something the caller should report about a SKU that is used.
    """

    status: str
    pricing: str = ""
    kind: str = ""
    series: str = ""
    accelerator: str = ""
    model: str = ""
    reason: str = ""
    note: str = ""


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def _models(text: str) -> list[str]:
    """The consumption models the description names (:data:`CONSUMPTION_MARKERS` order)."""
    return [name for name, rx in CONSUMPTION_MARKERS if rx.search(text)]


def _strip_markers(text: str) -> tuple[str, int | None]:
    """The description without its consumption-model wording and location: (resource phrase, years of a term)."""
    for rx in (r"^commitment(?: v\d+)?:\s*", r"^dws defined duration\s+", r"^dws flex start\s+",
               r"^(?:spot )?preemptible\s+"):
        text = re.sub(rx, "", text, flags=re.IGNORECASE)
    years = None
    m = re.search(r"\s+for\s+(\d+)\s+years?$", text, re.IGNORECASE)
    if m:
        years, text = int(m.group(1)), text[:m.start()]
    text = re.sub(r"\s+attached to (?:spot preemptible|dws defined duration) vms", "", text, flags=re.IGNORECASE)
    m = re.match(r"^(?P<phrase>.*)\s+in\s+(?P<loc>[^()]+)$", text, re.IGNORECASE)
    if m:
        text = re.sub(r"\s+running$", "", m.group("phrase"), flags=re.IGNORECASE)
    return text.lower().strip(), years


def classify_sku(description: str, resource_group: str, usage_type: str) -> SkuClass:
    """Classify one Compute-family Cloud Billing Catalog SKU by its description AND its usageType (pure).

    The description decides the consumption model first (:data:`CONSUMPTION_MARKERS`); the usageType must then agree
    with it, or the SKU is not used. So a Flex-start ("DWS Defined Duration"), Calendar-mode, "Reserved ..." or
    Commitment SKU is never the on-demand or spot price of a GPU whatever its usageType says (the SkyPilot fault:
    the DWS H100 SKU, usageType OnDemand, priced as on-demand; pricing_cache/data/inputs/PRICES_README.md (a)):

    ==============  =========================  ==================================================================
    model           usageType accepted          result
    ==============  =========================  ==================================================================
    calendar_mode   any                         skip ``calendar_mode`` (DWS Calendar mode: no gpuopt pricing)
    reserved        any                         skip ``reserved_capacity`` (a reservation's meter, often $0)
    flex_start      OnDemand, Preemptible       ``flex_start`` (FLEX_START_USAGE_TYPES); else skip
    other_dws       any                         skip ``unknown_dws`` (DWS wording of no documented form)
    commitment      Commit1Yr / Commit3Yr       ``reserved_1y`` / ``reserved_3y`` (the term must match); else skip
    spot            Preemptible (OnDemand)      ``spot``; OnDemand is taken as spot with a note (the live A4 spot
                                                slice SKU carries it: the description wins)
    plain           OnDemand only               ``on_demand``; Preemptible without Spot wording and Commit* are
                                                skipped ``inconsistent_category``; others ``unknown_usage_type``
    ==============  =========================  ==================================================================

    Two models in one description (Flex-start with a commitment or Spot wording, a commitment with Spot wording)
    are skipped ``inconsistent_category``. Then the resource phrase (location and model wording removed) must be a
    GPU of :data:`GPU_PHRASES` or a core/RAM of a GPU machine series, matching ``resource_group`` (GPU/CPU/RAM).

    Args:
        description: the SKU's ``description``.
        resource_group: ``category.resourceGroup`` (only GPU, CPU and RAM are read; anything else is ignored, and
            CPU/RAM SKUs are ignored unless they name A2, A3, A3Plus, A3Ultra, A4 or G2).
        usage_type: ``category.usageType``.

    Returns:
        :class:`SkuClass`. Never raises.
    """
    group, usage = str(resource_group or ""), str(usage_type or "")
    if group not in ("GPU", "CPU", "RAM"):
        return SkuClass("ignore", reason="resource group")
    text = _norm(description)
    if group != "GPU" and not _SERIES_WORD_RE.search(text):
        return SkuClass("ignore", reason="not a GPU machine series")
    models = _models(text)
    if "calendar_mode" in models:
        return SkuClass("skip", model="calendar_mode", reason=(
            "calendar_mode: a DWS Calendar-mode SKU (capacity reserved for future dates); never an on-demand, spot "
            "or committed-use price, and gpuopt has no pricing model for it"))
    if "reserved" in models:
        return SkuClass("skip", model="reserved", reason=(
            "reserved_capacity: a 'Reserved ...' SKU (a reservation's own meter); never an on-demand or spot price"))
    if "flex_start" in models:
        model = "flex_start"
        clash = [m for m in ("commitment", "spot") if m in models]
        if clash:
            return SkuClass("skip", model=model, reason=(
                f"inconsistent_category: the description names Flex-start (DWS Defined Duration) and {clash[0]}"))
    elif "other_dws" in models:
        return SkuClass("skip", model="other_dws", reason=(
            "unknown_dws: DWS / Defined Duration / Flex-start wording not in a documented form (CONSUMPTION_MARKERS); "
            "not used"))
    elif "commitment" in models and "spot" in models:
        return SkuClass("skip", model="commitment", reason=(
            "inconsistent_category: the description names a commitment and Spot"))
    elif "commitment" in models:
        model = "commitment"
    elif "spot" in models:
        model = "spot"
    else:
        model = "plain"
    phrase, years = _strip_markers(text)
    if _VARIANT_RE.search(phrase):
        return SkuClass("skip", model=model, reason=(
            "variant: not the plain SKU of a machine (Sole Tenancy, Custom, Virtual Workstation ...)"))
    if years is not None and model != "commitment":
        return SkuClass("skip", model=model, reason=(
            f"unknown_description: a term ('for {years} Years') without 'Commitment'"))
    kind = series = acc = ""
    if phrase in GPU_PHRASES:
        kind, acc = "gpu", GPU_PHRASES[phrase]
    elif phrase in AMBIGUOUS_GPU_PHRASES:
        return SkuClass("skip", model=model, reason=(
            f"ambiguous_gpu: '{phrase}' ({AMBIGUOUS_GPU_PHRASES[phrase]}); not used"))
    elif phrase in N1_GPU_PHRASES:
        return SkuClass("skip", model=model, reason=(
            f"no_host_series: {N1_GPU_PHRASES[phrase]} attaches to N1 machines, whose prices this adapter does not "
            "compose"))
    else:
        h = _HOST_RE.match(phrase)
        if h is None:
            if group == "GPU":
                return SkuClass("skip", model=model, reason=(
                    f"unknown_gpu: GPU SKU '{phrase}' is not in the documented table (GPU_PHRASES)"))
            return SkuClass("skip", model=model, reason=(
                f"unknown_description: '{phrase}' names a GPU machine series but no known resource"))
        kind, series = ("core" if h.group("res") in ("core", "cpu") else "ram"), h.group("series")
    expected_group = {"core": "CPU", "ram": "RAM", "gpu": "GPU"}[kind]
    if group != expected_group:
        return SkuClass("skip", model=model, reason=(
            f"inconsistent_category: the description is a {kind} SKU but resourceGroup is '{group}' (expected "
            f"{expected_group})"))
    note = ""
    if model == "flex_start":
        if usage not in FLEX_START_USAGE_TYPES:
            return SkuClass("skip", model=model, reason=(
                f"inconsistent_category: a Flex-start (DWS Defined Duration) SKU with usageType '{usage}' (expected "
                f"{' or '.join(sorted(FLEX_START_USAGE_TYPES))})"))
        pricing = "flex_start"
    elif model == "commitment":
        want = {1: "Commit1Yr", 3: "Commit3Yr"}.get(years or 0)
        if usage not in ("Commit1Yr", "Commit3Yr") or (years and usage != want):
            return SkuClass("skip", model=model, reason=(
                f"inconsistent_category: a commitment for {years or '?'} year(s) with usageType '{usage}'"))
        pricing = USAGE_TYPES[usage]
    elif model == "spot":
        if usage not in ("Preemptible", "OnDemand"):
            return SkuClass("skip", model=model, reason=(
                f"inconsistent_category: a Spot/Preemptible description with usageType '{usage}'"))
        if usage != "Preemptible":
            note = f"usageType '{usage}' but the description says Spot; taken as spot (the description wins)"
        pricing = "spot"
    else:
        if usage in ("Commit1Yr", "Commit3Yr"):
            return SkuClass("skip", model=model, reason=(
                f"inconsistent_category: usageType '{usage}' but no 'Commitment' description"))
        if usage == "Preemptible":
            return SkuClass("skip", model=model, reason=(
                "inconsistent_category: usageType 'Preemptible' but no Spot/Preemptible wording in the description; "
                "taken as neither spot nor on-demand"))
        if usage != "OnDemand":
            return SkuClass("skip", model=model, reason=f"unknown_usage_type: '{usage}'")
        pricing = "on_demand"
    return SkuClass("ok", pricing=pricing, kind=kind, series=series, accelerator=acc, model=model, note=note)


def _decimal(value: Any) -> float | None:
    if value is None or value == "":
        return 0.0  # proto3 JSON leaves zero fields out
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _unit_price(sku: dict[str, Any]) -> tuple[float | None, str, str, str, str | None]:
    """(price per usage unit, usage unit, currency, effective time, problem) of a SKU's single flat rate."""
    infos = sku.get("pricingInfo") or []
    if not isinstance(infos, list) or not infos:
        return None, "", "", "", "unknown_price: no pricingInfo; a missing price is unknown, never 0"
    if len(infos) > 1:
        return None, "", "", "", f"ambiguous_pricing: {len(infos)} pricingInfo entries (one expected)"
    info = infos[0] or {}
    expr = info.get("pricingExpression") or {}
    unit = str(expr.get("usageUnit", ""))
    when = str(info.get("effectiveTime", ""))
    tiers = expr.get("tieredRates") or []
    if not tiers:
        return None, unit, "", when, "unknown_price: no tieredRates; a missing price is unknown, never 0"
    if len(tiers) > 1:
        return None, unit, "", when, f"tiered_price: {len(tiers)} tiers; an hourly machine price needs one flat rate"
    tier = tiers[0] or {}
    start = _decimal(tier.get("startUsageAmount"))
    up = tier.get("unitPrice") or {}
    currency = str(up.get("currencyCode", ""))
    if start is None or start != 0:
        first = tier.get("startUsageAmount")
        return None, unit, currency, when, f"tiered_price: the first tier starts at {first}, not 0"
    units, nanos = _decimal(up.get("units")), _decimal(up.get("nanos"))
    if units is None or nanos is None:
        return None, unit, currency, when, "unknown_price: unreadable units/nanos"
    price = units + nanos / 1e9
    if price == 0:
        return None, unit, currency, when, "zero_price: unit price is 0 (not a real price)"
    if price < 0:
        return None, unit, currency, when, f"invalid_price: negative unit price {price}"
    return price, unit, currency, when, None


def _iter_skus(data: Any) -> list[dict[str, Any]]:
    """SKU dicts from a listing response, a list of responses/pages, fetch_region's raw dict, or a list of SKUs."""
    if isinstance(data, dict):
        if "pages" in data and isinstance(data["pages"], list):
            return _iter_skus(data["pages"])
        skus = data.get("skus", [])
        if not isinstance(skus, list):
            raise InputError("skus", "'skus' is not a list", accepted="a services.skus.list response")
        return [s for s in skus if isinstance(s, dict)]
    if isinstance(data, list):
        out: list[dict[str, Any]] = []
        for item in data:
            if isinstance(item, dict) and "skus" in item:
                out.extend(_iter_skus(item))
            elif isinstance(item, dict):
                out.append(item)
            else:
                raise InputError("skus", f"a list item is a {type(item).__name__}, not a SKU object")
        return out
    raise InputError("skus", f"expected a SKU listing (JSON object or list), got {type(data).__name__}",
                     accepted="a services.skus.list response, a list of them, or a list of SKUs")


def _load(data: Any) -> Any:
    if isinstance(data, Path) or (isinstance(data, str) and not data.lstrip().startswith(("{", "["))):
        path = Path(data)
        if not path.is_file():
            raise InputError("file", f"not found: {path}")
        from providers._input import read_json_file

        return read_json_file(path)
    if isinstance(data, (str, bytes)):
        from providers._input import loads_json

        return loads_json(data)
    return data


COMPONENT_COLUMNS = ("component", "kind", "series", "accelerator", "gpu_model", "bundles_host", "region", "pricing",
                     "usage_type", "unit_price", "usage_unit", "currency", "sku_id", "description", "effective_time")


#: What :func:`_components` reads of a SKU (providers._input.check_shape).
SKU_SHAPE = {"category": {"resourceFamily": str, "resourceGroup": str, "usageType": str}, "description": str,
             "skuId": str, "serviceRegions": [str],
             "pricingInfo": [{"effectiveTime": str, "pricingExpression": {
                 "usageUnit": str, "tieredRates": [{"startUsageAmount": str, "unitPrice": {
                     "currencyCode": str, "units": str, "nanos": str}}]}}]}


def _components(skus: Iterable[dict[str, Any]], report: _Report, regions: set[str] | None = None) -> list[dict]:
    rows: list[dict[str, Any]] = []
    ignored = 0
    for sku in skus:
        cat = sku.get("category") or {}
        desc = _norm(sku.get("description", ""))
        sku_id = str(sku.get("skuId", ""))
        if cat.get("resourceFamily") != "Compute":
            ignored += 1
            continue
        group = str(cat.get("resourceGroup", ""))
        sku_regions = [str(r) for r in (sku.get("serviceRegions") or [])]
        wanted = [r for r in sku_regions if regions is None or r in regions]
        if regions is not None and not wanted:
            continue
        where = ",".join(wanted) if len(wanted) <= 3 else f"{','.join(wanted[:3])},+{len(wanted) - 3}"
        what = f"{desc} [sku {sku_id}]"
        usage = str(cat.get("usageType", ""))
        parsed = classify_sku(desc, group, usage)
        if parsed.status == "ignore":
            ignored += 1
            continue
        if parsed.status == "skip":
            report.skip(what, where, parsed.reason)
            continue
        if parsed.note:
            report.notes.append(f"sku {sku_id} '{desc}': {parsed.note}")
        pricing = parsed.pricing
        price, unit, currency, when, problem = _unit_price(sku)
        if problem:
            report.skip(what, where, problem)
            continue
        if unit != UNITS[parsed.kind]:
            report.skip(what, where, f"unexpected_unit: usageUnit '{unit}' for a {parsed.kind} SKU (expected "
                                     f"'{UNITS[parsed.kind]}')")
            continue
        if not currency:
            report.skip(what, where, "unknown_currency: unitPrice has no currencyCode")
            continue
        good = [r for r in wanted if _REGION_RE.match(r)]
        if not good:
            report.skip(what, where or "-", "no_region: serviceRegions lists no region")
            continue
        if parsed.kind == "gpu":
            acc = parsed.accelerator
            comp, series = f"gpu:{acc}", ""
            model = canonical_gpu(acc, provider="gcp") or ""
        else:
            acc, series, model = "", parsed.series, ""
            comp = f"{parsed.kind}:{series}"
        for region in good:
            rows.append({"component": comp, "kind": parsed.kind, "series": series, "accelerator": acc,
                         "gpu_model": model, "bundles_host": acc in SLICE_ACCELERATORS, "region": region,
                         "pricing": pricing, "usage_type": usage, "unit_price": price, "usage_unit": unit,
                         "currency": currency, "sku_id": sku_id, "description": desc, "effective_time": when})
    if ignored:
        report.notes.append(f"{ignored} SKU(s) outside the GPU machine series (other families, N1/E2/C3... cores and "
                            "RAM, storage, network) ignored")
    return _dedupe(rows, report)


def _dedupe(rows: list[dict], report: _Report) -> list[dict]:
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["component"], r["region"], r["pricing"]), []).append(r)
    out = []
    for (comp, region, pricing), grp in groups.items():
        if len(grp) == 1:
            out.append(grp[0])
            continue
        prices = sorted({round(g["unit_price"], 12) for g in grp})
        currencies = {g["currency"] for g in grp}
        ids = [g["sku_id"] for g in grp]
        if len(prices) == 1 and len(currencies) == 1:
            out.append(grp[0])
            for g in grp[1:]:
                report.skip(f"{g['description']} [sku {g['sku_id']}]", region,
                            f"duplicate: same {comp} {pricing} price as sku {grp[0]['sku_id']}; collapsed to one")
        else:
            for g in grp:
                report.skip(f"{g['description']} [sku {g['sku_id']}]", region,
                            f"conflicting_price: SKUs {ids} give {comp} {pricing} different prices {prices} "
                            f"{sorted(currencies)}; none kept")
    return out


def parse_skus(skus: Any, *, regions: Iterable[str] | None = None) -> "pd.DataFrame":
    """Component prices of the GPU machine series from Cloud Billing Catalog SKUs (pure).

    Args:
        skus: a ``services.skus.list`` response ``{"skus": [...], "nextPageToken": ...}``, a list of such pages,
            ``fetch_region``'s raw dict, a list of SKU dicts, JSON text of any of these, or a path to a JSON file.
        regions: keep only these regions (default: every region in ``serviceRegions``).

    Returns:
        DataFrame with :data:`COMPONENT_COLUMNS`, one row per (component, region, pricing): ``component`` is
        ``gpu:<accelerator>`` (A100, A100-80GB, H100, H100-MEGA, H200, B200, L4 as in
        providers.skypilot.GCP_MACHINE_GPUS; ``gpu_model`` holds the canonical GPU name; H100 and H100-MEGA are one
        canonical model at two prices, hence the accelerator key), ``core:<series>`` or ``ram:<series>`` (series a2,
        a3, a3plus, a3ultra, g2); ``unit_price`` per ``usage_unit`` (h or GiBy.h) in ``currency``; ``pricing``
        on_demand | spot | reserved_1y | reserved_3y | flex_start (:func:`classify_sku`); ``bundles_host`` True for
        the A4 B200 slice (vCPUs + RAM included). ``df.attrs["skipped"]`` lists the SKUs not used (SkippedRow,
        line 0, reason codes as in the module docstring) and ``df.attrs["notes"]`` what was ignored or overridden.

    Raises:
        InputError: not a SKU listing (or an unreadable file).
    """
    import pandas as pd

    report = _Report()
    rows = _components(_iter_skus(_load(skus)), report, set(regions) if regions is not None else None)
    df = pd.DataFrame.from_records(rows, columns=list(COMPONENT_COLUMNS))
    df = df.astype({"unit_price": "float64", "bundles_host": "bool"})
    df = df.sort_values(["region", "component", "pricing"], kind="stable").reset_index(drop=True)
    df.attrs["skipped"] = report.skipped
    df.attrs["notes"] = report.notes
    return df


# --------------------------------------------------------------------------------------------------------------------
# Composition: component prices -> machine type offers


def _fmt(x: float) -> str:
    return f"{x:.9g}"


def _compose(rows: list[dict], as_of: str, report: _Report, regions: Iterable[str] | None = None) -> list[dict]:
    idx = {(r["component"], r["region"], r["pricing"]): r for r in rows}
    present_regions = sorted({r["region"] for r in rows})
    todo = present_regions if regions is None else [r for r in regions if r in set(present_regions)]
    offers: list[dict] = []
    for region in todo:
        for itype, (vcpus, mem) in MACHINE_SHAPES.items():
            spec = machine_spec(itype)
            if spec is None:  # pragma: no cover - every table type has a spec (tested)
                continue
            series, acc, n = spec
            slice_ = series in SLICE_SERIES
            parts = {"gpu": f"gpu:{acc}"} if slice_ else {"core": f"core:{series}", "ram": f"ram:{series}",
                                                          "gpu": f"gpu:{acc}"}
            qty = {"gpu": float(n), "core": vcpus, "ram": mem}
            composed: dict[str, tuple[float, dict[str, dict]]] = {}
            for pricing in PRICINGS:
                got = {k: idx.get((c, region, pricing)) for k, c in parts.items()}
                if all(v is None for v in got.values()):
                    continue
                missing = [parts[k] for k, v in got.items() if v is None]
                if missing:
                    have = [parts[k] for k, v in got.items() if v is not None]
                    report.skip(itype, region, f"missing_part: {pricing} needs {', '.join(parts.values())}; has "
                                               f"{', '.join(have)} but no {', '.join(missing)}; never priced from "
                                               "partial parts")
                    continue
                if slice_:
                    extra = [c for c in (f"core:{series}", f"ram:{series}") if (c, region, pricing) in idx]
                    if extra:
                        report.skip(itype, region, f"ambiguous_slice: {pricing} has a machine-slice GPU SKU and also "
                                                   f"{', '.join(extra)}; cannot tell whether the slice includes them")
                        continue
                currencies = {v["currency"] for v in got.values()}
                if currencies != {"USD"}:
                    raise PriceDataError(f"gcp {region} {itype} {pricing}: parts priced in {sorted(currencies)}; "
                                         "gpuopt's usd_per_hour columns need USD (request currencyCode=USD)")
                total = sum(qty[k] * v["unit_price"] for k, v in got.items())
                composed[pricing] = (round(total, 9), got)
            if not composed:
                continue
            od = composed.get("on_demand")
            gpu = canonical_gpu(acc, provider="gcp", instance_type=itype)
            mem_mib = GPU_MEMORY_MIB.get(gpu or "")
            if gpu is None or mem_mib is None:  # pragma: no cover - table GPUs are all canonical (tested)
                report.skip(itype, region, f"unknown_gpu: no canonical name / memory for '{acc}'")
                continue
            base = {"provider": NAME, "region": region, "zone": "", "instance_type": itype, "gpu_model": gpu,
                    "gpu_count": float(n), "gpu_memory_gib": mem_mib / 1024.0, "vcpus": vcpus, "memory_gib": mem,
                    "interconnect": interconnect_for("gcp", itype), "currency": "USD", "source": SOURCE,
                    "as_of": as_of}
            for pricing, (price, got) in composed.items():
                if pricing == "on_demand":
                    offers.append(hourly_row("on_demand", price, **base))
                elif pricing == "spot":
                    if od is None:
                        report.skip(itype, region, f"unverifiable_spot: spot {_fmt(price)} but no on-demand price to "
                                                   "check it against")
                        continue
                    above = [parts[k] for k, v in got.items() if v["unit_price"] >= od[1][k]["unit_price"]]
                    if above:
                        report.skip(itype, region, f"placeholder_spot: spot price of {', '.join(above)} is not below "
                                                   "its on-demand price")
                        continue
                    if price >= od[0]:
                        report.skip(itype, region, f"placeholder_spot: composed spot {_fmt(price)} >= on-demand "
                                                   f"{_fmt(od[0])}")
                        continue
                    offers.append(hourly_row("spot", price, **base))
                elif pricing == "flex_start":
                    # a whole-instance Flex-start rate (every part a DWS Defined Duration SKU): billed per hour run,
                    # nothing upfront, no term (records.WINDOW_PRICING: a window of up to 7 days)
                    above = [] if od is None else [parts[k] for k, v in got.items()
                                                   if v["unit_price"] > od[1][k]["unit_price"]]
                    if above:
                        report.skip(itype, region, f"implausible_flex_start: Flex-start price of {', '.join(above)} "
                                                   "is above its on-demand price")
                        continue
                    if od is not None and price >= od[0]:
                        report.skip(itype, region, f"flex_start_not_below_on_demand: Flex-start {_fmt(price)} >= "
                                                   f"on-demand {_fmt(od[0])} (no saving; the offer validation refuses "
                                                   "it too)")
                        continue
                    offers.append(hourly_row("flex_start", price, **base))
                else:
                    above = [] if od is None else [parts[k] for k, v in got.items()
                                                   if v["unit_price"] >= od[1][k]["unit_price"]]
                    if above:
                        report.skip(itype, region, f"implausible_commitment: {pricing} price of {', '.join(above)} "
                                                   "is not below its on-demand price")
                        continue
                    if od is not None and price >= od[0]:
                        report.skip(itype, region, f"implausible_commitment: {pricing} {_fmt(price)} is not below "
                                                   f"on-demand {_fmt(od[0])}")
                        continue
                    offers.append({**base, "pricing": pricing, "payment": "no_upfront", "upfront_usd": 0.0,
                                   "recurring_usd_per_hour": price, "usd_per_hour": price,
                                   "term_hours": TERM_HOURS[pricing]})
    return offers


def _result(skus: list[dict], as_of: str, regions: list[str] | None, what: str) -> ParseResult:
    report = _Report()
    rows = _components(skus, report, set(regions) if regions is not None else None)
    offers = _compose(rows, as_of, report, regions)
    df = offers_frame(offers)
    if not df.empty:
        df = df.sort_values(["region", "instance_type", "pricing"], kind="stable").reset_index(drop=True)
    check_unique(df, what)
    return ParseResult(offers=df, skipped=report.skipped, notes=report.notes)


def parse_region(raw: dict[str, Any], region: str, as_of: str) -> ParseResult:
    """Offers of one region from ``fetch_region``'s raw payload (pure).

    Returns a ParseResult: ``offers`` with exactly OFFER_COLUMNS (zone empty: catalog prices are regional; source
    ``gcp-cloud-billing-catalog``; on_demand, spot, reserved_1y / reserved_3y no_upfront, flex_start from whole sets
    of DWS Defined Duration SKUs; all in USD per instance-hour), ``skipped`` (SKUs and machine types not priced, with
    reasons: a Flex-start GPU SKU without its DWS cores/RAM is a ``missing_part`` of every machine type using it),
    ``notes``.

    Raises:
        PriceDataError: parts priced in a currency other than USD, or an offer key twice (check_unique).
        InputError: ``raw`` is not a SKU listing.
    """
    return _result(_iter_skus(raw), as_of, [region], f"{SOURCE} {region}")


def import_file(path: "str | Path", as_of: str) -> ParseResult:
    """Offers of every region in a saved SKU listing (``gpuopt prices import FILE --input-format gcp-skus``)."""
    from providers._input import check_offer_values

    from providers._input import check_shape

    data = _load(Path(path))
    skus = _iter_skus(data)
    for i, sku in enumerate(skus):
        check_shape(sku, SKU_SHAPE, Path(path).name, [f"skus[{i}]"])
    res = _result(skus, as_of, None, f"{SOURCE} {Path(path).name}")
    res.offers, bad = check_offer_values(res.offers, f"{SOURCE} {Path(path).name}")
    res.skipped = list(res.skipped) + bad
    return res


# --------------------------------------------------------------------------------------------------------------------
# I/O: list_regions, fetch_region


def _api_key(options: FetchOptions) -> str:
    key = options.gcp_api_key or os.environ.get(API_KEY_ENV, "")
    if not key or not key.strip():
        raise MissingCredentials(KEY_HOWTO)
    return key.strip()


def _endpoint(options: FetchOptions) -> str:
    return (options.endpoints.get(NAME) or DEFAULT_ENDPOINT).rstrip("/")


def _check_region(region: str) -> str:
    if not isinstance(region, str) or not _REGION_RE.match(region):
        raise InputError("region", f"'{region}' is not a GCP region code", accepted="e.g. us-central1, europe-west4")
    return region


@dataclass
class _Listing:
    owner: "weakref.ref[FetchOptions]"
    lock: threading.Lock = field(default_factory=threading.Lock)
    pages: list[dict[str, Any]] | None = None
    error: BaseException | None = None


_CACHE_LOCK = threading.Lock()
_LISTINGS: dict[tuple, _Listing] = {}


def clear_listing_cache() -> None:
    """Forget every cached SKU listing (the next call lists again)."""
    with _CACHE_LOCK:
        _LISTINGS.clear()


def _scrub(text: str, key: str) -> str:
    """``text`` without ``key`` in any encoding (raw, percent-encoded as in a request URL, JSON, base64) and without
    any credential-like URL parameter (gpuopt.kernel.redact.scrub)."""
    from gpuopt.kernel.redact import scrub

    return scrub(text, key)


def _error_detail(resp, key: str) -> str:
    try:
        msg = resp.json().get("error", {}).get("message", "")
    except (ValueError, AttributeError):
        msg = ""
    msg = msg or (resp.text or "")[:200]
    return _scrub(" ".join(str(msg).split()), key)


def _check_currency(page: dict[str, Any], wanted: str, page_no: int) -> None:
    for sku in page.get("skus") or []:
        for info in (sku.get("pricingInfo") or []) if isinstance(sku, dict) else []:
            for tier in ((info or {}).get("pricingExpression") or {}).get("tieredRates") or []:
                got = ((tier or {}).get("unitPrice") or {}).get("currencyCode")
                if got and got != wanted:
                    raise PriceDataError(f"GCP SKU listing page {page_no}: asked for {wanted}, the API answered {got} "
                                         f"(sku {sku.get('skuId', '?')}); prices are never mixed or relabelled")


def _list_all(options: FetchOptions, key: str) -> list[dict[str, Any]]:
    """Every page of the Compute Engine SKU listing, or an error (never a shorter list)."""
    import requests

    url = f"{_endpoint(options)}/services/{SERVICE_ID}/skus"
    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    token = ""
    session = http_session(options)
    try:
        while True:
            page_no = len(pages) + 1
            params = {"key": key, "currencyCode": options.currency, "pageSize": PAGE_SIZE}
            if token:
                params["pageToken"] = token
            options.say(NAME, "*", f"SKU listing page {page_no}")
            where = f"GCP SKU listing page {page_no}"
            try:
                resp = session.get(url, params=params, timeout=options.timeout_s)
            except requests.RequestException as exc:
                msg = f"{where} failed after {options.max_attempts} attempt(s): {_scrub(str(exc), key)}"
                raise (TruncatedPriceList(msg, next=token) if token else ProviderError(msg)) from None
            if resp.status_code != 200:
                msg = (f"{where}: HTTP {resp.status_code} after {options.max_attempts} attempt(s): "
                       f"{_error_detail(resp, key)}{retry_after_note(resp, options)}")
                if resp.status_code in (400, 401, 403) and not token:
                    msg += " (is the API key valid and the Cloud Billing API enabled in its project?)"
                raise TruncatedPriceList(msg, next=token) if token else ProviderError(msg)
            try:
                data = resp.json()
            except ValueError:
                msg = f"{where}: the answer is not JSON"
                raise TruncatedPriceList(msg, next=token) if token else ProviderError(msg)
            if not isinstance(data, dict) or not isinstance(data.get("skus", []), list):
                msg = f"{where}: not a services.skus.list answer (no 'skus' list)"
                raise TruncatedPriceList(msg, next=token) if token else ProviderError(msg)
            _check_currency(data, options.currency, page_no)
            pages.append(data)
            nxt = data.get("nextPageToken") or ""
            if not nxt:
                return pages
            if nxt == token or nxt in seen:
                raise TruncatedPriceList(f"GCP SKU listing: page {page_no} repeats an earlier nextPageToken; the "
                                         "listing would never end", next=nxt)
            if options.max_pages is not None and len(pages) >= options.max_pages:
                raise TruncatedPriceList(f"GCP SKU listing: stopped at the page cap ({options.max_pages} pages) "
                                         "before the end", next=nxt)
            seen.add(nxt)
            token = nxt
    finally:
        session.close()


def _listing(options: FetchOptions) -> list[dict[str, Any]]:
    """The SKU listing of this refresh (fetched once per FetchOptions object; see the module docstring)."""
    key = _api_key(options)
    ident = (id(options), _endpoint(options), hashlib.sha256(key.encode()).hexdigest(), options.currency,
             options.max_pages)
    with _CACHE_LOCK:
        for k in [k for k, e in _LISTINGS.items() if e.owner() is None]:
            del _LISTINGS[k]
        entry = _LISTINGS.get(ident)
        if entry is None or entry.owner() is not options:
            entry = _LISTINGS[ident] = _Listing(owner=weakref.ref(options))
    with entry.lock:
        if entry.pages is None and entry.error is None:
            try:
                entry.pages = _list_all(options, key)
            except ProviderError as exc:
                entry.error = exc
        if entry.error is not None:
            raise entry.error
        return entry.pages  # type: ignore[return-value]


def list_regions(options: FetchOptions) -> list[str]:
    """``options.regions`` (validated: GCP region codes), else every region named in the SKUs' serviceRegions.

    Raises MissingCredentials (no API key), InputError (a malformed region), ProviderError / TruncatedPriceList
    (listing failed: only when the regions come from the listing)."""
    _api_key(options)
    if options.regions:
        return list(dict.fromkeys(_check_region(r) for r in options.regions))
    regions: set[str] = set()
    for page in _listing(options):
        for sku in page.get("skus") or []:
            regions.update(r for r in (sku.get("serviceRegions") or []) if _REGION_RE.match(str(r)))
    return sorted(regions)


def fetch_region(region: str, options: FetchOptions) -> dict[str, Any]:
    """The SKU listing pages of ``region`` (I/O only; every page followed to the end, fetched once per refresh).

    Returns ``{"service", "currency", "region", "pages_listed", "pages"}`` where ``pages`` are the listing's pages,
    each ``{"skus": [the page's SKU objects, unchanged, whose serviceRegions include region], "nextPageToken"}``.

    Raises:
        MissingCredentials: no API key (options.gcp_api_key or env GPUOPT_GCP_API_KEY).
        TruncatedPriceList: page cap reached, a repeated nextPageToken, or a later page still failing after retries.
        PriceDataError: the API answered in another currency than ``options.currency``.
        ProviderError: the first page failed after retries (HTTP error, not JSON).
        RegionSkipped: no Compute Engine SKU lists the region.
    """
    _check_region(region)
    pages = _listing(options)
    out = []
    for page in pages:
        skus = [s for s in page.get("skus") or [] if region in (s.get("serviceRegions") or [])]
        out.append({"skus": skus, "nextPageToken": page.get("nextPageToken", "")})
    if not any(p["skus"] for p in out):
        raise RegionSkipped(f"gcp: no Compute Engine SKU in the catalog lists region {region}")
    return {"service": SERVICE_ID, "currency": options.currency, "region": region, "pages_listed": len(pages),
            "pages": out}
