"""Quotas (issue 26, point 5): which quota an offer draws on, the limits a user's file or the live quota APIs give,
and how much of each is left, so that a plan never exceeds a known quota and names the quota it needs.

This module only knows quotas; the planner groups offers by :meth:`QuotaTable.keys_for` and adds one constraint per
key: ``sum(count(offer) * units_per_instance) <= QuotaTable.headroom(key)``. It imports nothing from planning.

What draws on what
==================

**AWS EC2** (Service Quotas service code ``ec2``). Instances count against a per-Region vCPU quota of their instance
class, chosen by the letters of the instance family (``p5.48xlarge`` -> ``p5`` -> P):

* P (p2 ... p6): Running On-Demand P instances, ``L-417A185B``; spot P4, P3, P2: All P4, P3 and P2 Spot Instance
  Requests, ``L-7212CCBC``; spot P5 (p5, p5e, p5en): All P5 Spot Instance Requests, ``L-C4BD4855``.
* G and VT (g4dn, g5, g6, g6e, g6f, gr6, vt1): Running On-Demand G and VT instances, ``L-DB2E81BA``; spot: All G and
  VT Spot Instance Requests, ``L-3819A6DF``.
* DL: ``L-6E869C2A``, spot ``L-85EED4F7``; Inf: ``L-1945791B``, spot ``L-B5D1601B``; Trn: ``L-2C3B7624``, spot
  ``L-6B0D517C`` (Running On-Demand DL / Inf / Trn instances; All DL / Inf / Trn Spot Instance Requests).
* Standard (A, C, D, H, I, M, R, T, Z): Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances,
  ``L-1216C47A``; spot: All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests, ``L-34B43A08``.
* F: ``L-74FC7D96``, spot ``L-88CF9481``; X: ``L-7295265B``, spot ``L-E3A00192``; High Memory (u-):
  Running On-Demand High Memory instances, ``L-43DA4232`` (no spot quota).

Sources: the quota names and classes are the EC2 User Guide's ("On-Demand Instance quotas", awsdocs/amazon-ec2-user-
guide doc_source/ec2-on-demand-instances.md: "On-Demand Instance limits are managed in terms of the number of
virtual central processing units (vCPUs)", one limit per class; "Spot Instance quotas",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-limits.html, whose current table lists "All P4, P3
and P2 Spot Instance Requests" and "All P5 Spot Instance Requests" apart). The codes beside the names were read from
a recorded Service Quotas listing of ``ec2`` (a stored public table "Adjustable AWS Service Quotas": service name,
service code, quota name, quota code, default; every code above appears there with the name above). Unit: vCPUs,
``units_per_instance`` = the offer's ``vcpus``.

Which purchase option draws on which quota:

* ``on_demand``, ``reserved_1y/3y``, ``savings_plan_1y/3y``: the On-Demand quota. A Reserved Instance is a billing
  discount on a running On-Demand Instance: "You cannot exceed your running On-Demand Instance limit by purchasing
  regional Reserved Instances" (EC2 User Guide, "Reserved Instance quotas", ri-limits.html); a Savings Plan is a
  discount on the same On-Demand usage.
* ``spot``: the Spot quota of the class. P6 (``p6-b200``...) spot has no Spot quota in the sources we could read:
  such offers get no key (they are not limited, not guessed).
* ``capacity_block``: **no vCPU quota**. We found no AWS page saying whether instances running in a Capacity Block
  count against the On-Demand quotas (Capacity Blocks have their own instance caps: "Each Capacity Block can have up
  to 64 instances, and you can have up to 256 instances across Capacity Blocks", capacity-blocks-purchase); until a
  source says otherwise they need no quota here.
* HPC (``hpc7g``...) and Mac instances: no key (their codes are not in the sources).

**Azure** (the usages API, ``GET /subscriptions/{sub}/providers/Microsoft.Compute/locations/{loc}/usages``). "The
vCPU quotas for virtual machines ... are arranged in two tiers for each subscription, in each region. The first tier
is the Total Regional vCPUs, and the second tier is the various VM size family cores ... Any time a new VM is
deployed the vCPUs for the VM must not exceed the vCPU quota for the VM size family or the total regional vCPU
quota" (MicrosoftDocs azure-docs, virtual-machines "Check vCPU quotas"). So a pay-as-you-go or reserved VM draws on
two keys: its family (``name.value`` such as ``standardNDSH100v5Family``) and ``cores`` (Total Regional vCPUs).
Spot VMs draw on ``lowPriorityCores`` (Total Regional Low-priority vCPUs), one regional quota for every size.
Family names (:data:`AZURE_SIZE_FAMILIES`) are the ``Family Name`` column of Red Hat's tested Azure instance types
(OpenShift "Installing on Azure", the table generated from openshift/installer
docs/user/azure/tested_instance_types_x86_64.md): NC_A100_v4 -> ``StandardNCADSA100v4Family``, NCads_H100_v5 ->
``StandardNCadsH100v5Family``, NCCads_H100_v5 -> ``StandardNCCads2023Family``, NCasT4_v3 -> ``Standard NCASv3_T4
Family``, NCv3 -> ``standardNCSv3Family``, NDasrA100_v4 -> ``Standard NDASv4_A100 Family``, ND-H100-v5 ->
``standardNDSH100v5Family``, ND-H200-v5 -> ``standardNDISRH200V5Family``, NDv2 -> ``standardNDSv2Family``,
NVadsA10_v5 -> ``StandardNVADSA10v5Family``, NVv3 -> ``standardNVSv3Family``. Family names are compared without
case and spaces (Azure writes them both ways). Sizes whose family the sources do not give (NDm A100 v4
``Standard_ND96amsr_A100_v4``, NC A10 v4, the retired K80 NC and M60 NV) get the regional key only (``cores`` or
``lowPriorityCores``). Unit: vCPUs, ``units_per_instance`` = the offer's ``vcpus``.

**GCP** (``regions.get``: ``quotas: [{metric, limit, usage}]`` per region). GPUs count against a regional quota per
GPU model, in GPUs (``units_per_instance`` = ``gpu_count``): A100 40GB ``NVIDIA_A100_GPUS``, A100 80GB
``NVIDIA_A100_80GB_GPUS``, H100 80GB (A3 High / Edge) ``NVIDIA_H100_GPUS``, L4 ``NVIDIA_L4_GPUS``, T4
``NVIDIA_T4_GPUS``, V100 ``NVIDIA_V100_GPUS``, P100 ``NVIDIA_P100_GPUS``, P4 ``NVIDIA_P4_GPUS`` (the
``google.cloud.compute.v1.Quota.Metric`` enum of the Compute Engine API reference). Spot VMs draw on the
``PREEMPTIBLE_`` metric of the same GPU when the project has one, else on the standard one ("Consider requesting
dedicated Preemptible GPU quota to use for GPUs on Spot VMs", Compute Engine "About GPUs"); ``flex_start``
(Dynamic Workload Scheduler) draws on the preemptible quota too. Committed-use rows draw on the standard metric.
H100 Mega (``a3-megagpu``), H200 (``a3-ultragpu``) and B200 (``a4``) metrics are not in the sources we could read:
those offers get no key.

**Other providers** (Lambda, RunPod, CoreWeave, Nebius) publish no quota system: their offers draw on nothing
unless a quota file names them. A row ``provider: lambda, region: *, family: H100-80GB, limit: 16, unit: gpus`` is a
limit on that GPU model (``family`` = the canonical ``gpu_model``); ``family: *`` limits all GPUs (unit ``gpus``) or
vCPUs (unit ``vcpus``) of the provider in the region.

Quota files
===========

:func:`load_quota_file` reads CSV (``.csv``) or YAML (``.yaml``/``.yml``: a list of rows, or ``{quotas: [rows]}``)
with the columns ``provider, region, family, limit, unit`` and, optionally, ``used`` (already in use: the plan may
use ``limit - used``) and ``note`` (ignored). ``family`` is what the provider lists: an AWS quota code
(``L-417A185B``) or name (``Running On-Demand P instances``), an Azure usage name (``standardNDSH100v5Family``,
``cores``, ``lowPriorityCores``), a GCP metric (``NVIDIA_H100_GPUS``, also written
``compute.googleapis.com/nvidia_h100_gpus``). ``unit`` is ``vcpus`` or ``gpus`` and must be the quota's own unit.
``region`` ``*`` is the limit of each region that has no row of its own (AWS and Azure quotas are per region, so
``*`` does not pool regions: it repeats the limit in every one); an empty region is an error. Every error is one
line naming the file, the line, the field and the accepted values (:class:`gpuopt.kernel.errors.InputError`).

Live quotas
===========

:func:`fetch_aws_quota_pages` (I/O: Service Quotas ``ListServiceQuotas(ServiceCode='ec2')``, every page) and
:func:`aws_quota_table` (pure); :func:`fetch_azure_usages` (I/O: the usages REST endpoint, every ``nextLink``) and
:func:`azure_quota_table`; :func:`fetch_gcp_regions` and :func:`gcp_quota_table`. ``fetch_*_quotas`` compose the
two. Service Quotas gives the applied limit, not the usage (that is in CloudWatch ``AWS/Usage``, not read here):
AWS rows from the API have ``used`` 0 unless a file says otherwise; Azure's ``currentValue`` and GCP's ``usage``
are kept as ``used``. The pure halves are named ``*_quota_table`` rather than ``parse_*``: ``parse_*`` names the
price importers of :data:`providers.IMPORTERS` (tests/test_providers_registry.py), and these return quotas, not
offers.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from gpuopt.kernel.errors import InputError, ProviderError
from gpuopt.kernel.inputs import check_number, load_yaml, parse_decimal, read_text

UNITS = ("vcpus", "gpus")
#: The columns of a quota file (``used`` and ``note`` may be absent).
QUOTA_COLUMNS = ("provider", "region", "family", "limit", "unit", "used", "note")
_REQUIRED = ("provider", "region", "family", "limit", "unit")
#: Region wildcard of a quota file: the limit of every region without a row of its own.
ANY_REGION = "*"
#: Purchase options that run as On-Demand capacity on AWS and as pay-as-you-go VMs on Azure (reservations and
#: savings plans are billing discounts on that usage).
_STANDARD_PRICINGS = frozenset({"on_demand", "reserved_1y", "reserved_3y", "savings_plan_1y", "savings_plan_3y"})


# ------------------------------------------------------------------------------------------------------- the keys
@dataclass(frozen=True)
class QuotaKey:
    """One quota of one provider in one region.

    Attributes:
        provider: ``aws``, ``azure``, ``gcp`` or another provider named in a quota file.
        region: the provider's region code (``us-east-1``, ``eastus``, ``us-central1``).
        quota: the quota's identity as the provider lists it: AWS quota code, Azure usage name, GCP metric, or (other
            providers) a canonical GPU model / ``*``. Compare keys, not these strings: Azure names are matched
            without case and spaces (:func:`_norm_family`).
        unit: ``vcpus`` or ``gpus``.
        name: the quota's name for people (``Running On-Demand P instances``); not part of the identity.
        units_per_instance: what one instance of the offer the key was made from draws (vCPUs or GPUs); None when
            the offer does not say (no ``vcpus``): then no count of it can be shown to fit. Not part of the identity.
    """

    provider: str
    region: str
    quota: str
    unit: str
    name: str = field(default="", compare=False)
    units_per_instance: float | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """``aws us-east-1 L-417A185B (Running On-Demand P instances), vCPUs``: what a plan names."""
        nm = f" ({self.name})" if self.name and self.name != self.quota else ""
        return f"{self.provider} {self.region} {self.quota}{nm}, {'vCPUs' if self.unit == 'vcpus' else 'GPUs'}"


# AWS: class -> (on-demand code, on-demand name); spot: spot class -> (code, name)
_AWS_ON_DEMAND: dict[str, tuple[str, str]] = {
    "P": ("L-417A185B", "Running On-Demand P instances"),
    "G and VT": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "DL": ("L-6E869C2A", "Running On-Demand DL instances"),
    "Inf": ("L-1945791B", "Running On-Demand Inf instances"),
    "Trn": ("L-2C3B7624", "Running On-Demand Trn instances"),
    "Standard": ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    "F": ("L-74FC7D96", "Running On-Demand F instances"),
    "X": ("L-7295265B", "Running On-Demand X instances"),
    "High Memory": ("L-43DA4232", "Running On-Demand High Memory instances"),
}
_AWS_SPOT: dict[str, tuple[str, str]] = {
    "P2-P4": ("L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests"),
    "P5": ("L-C4BD4855", "All P5 Spot Instance Requests"),
    "G and VT": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    "DL": ("L-85EED4F7", "All DL Spot Instance Requests"),
    "Inf": ("L-B5D1601B", "All Inf Spot Instance Requests"),
    "Trn": ("L-6B0D517C", "All Trn Spot Instance Requests"),
    "Standard": ("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
    "F": ("L-88CF9481", "All F Spot Instance Requests"),
    "X": ("L-E3A00192", "All X Spot Instance Requests"),
}
#: Every AWS quota this module maps: code -> name (module docstring for the sources).
AWS_EC2_QUOTAS: dict[str, str] = {code: name for code, name in [*_AWS_ON_DEMAND.values(), *_AWS_SPOT.values()]}
_AWS_BY_NAME = {" ".join(n.lower().split()): c for c, n in AWS_EC2_QUOTAS.items()}

_FAMILY_RE = re.compile(r"^([a-z]+)(\d*)")


def aws_instance_class(instance_type: str) -> str | None:
    """The On-Demand quota class of an EC2 instance type (``p5.48xlarge`` -> ``P``, ``g6.xlarge`` -> ``G and VT``,
    ``trn1.32xlarge`` -> ``Trn``, ``m5.large`` -> ``Standard``); None for families the sources do not place (HPC,
    Mac) or a name that is not an instance type."""
    it = instance_type.strip().lower()
    if it.startswith("u-"):
        return "High Memory"
    m = _FAMILY_RE.match(it.split(".")[0])
    if not m or "." not in it:
        return None
    letters = m.group(1)
    if letters.startswith(("hpc", "mac")):
        return None
    for prefix, cls in (("dl", "DL"), ("inf", "Inf"), ("trn", "Trn"), ("vt", "G and VT")):
        if letters.startswith(prefix):
            return cls
    first = letters[0]
    if first == "p":
        return "P"
    if first == "g":
        return "G and VT"
    if first == "f":
        return "F"
    if first == "x":
        return "X"
    if first in "acdhimrtz":
        return "Standard"
    return None


def _aws_spot_class(instance_type: str, cls: str) -> str | None:
    if cls != "P":
        return cls if cls in _AWS_SPOT else None
    m = _FAMILY_RE.match(instance_type.strip().lower())
    gen = int(m.group(2)) if m and m.group(2) else 0
    if gen in (2, 3, 4):
        return "P2-P4"
    if gen == 5:
        return "P5"
    return None  # P6 spot: no quota in the sources


# Azure: size series -> usage name (module docstring for the source)
_AZURE_SERIES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^Standard_NC\d+ads_A100_v4$"), "StandardNCADSA100v4Family"),
    (re.compile(r"^Standard_NC\d+adi?s_H100_v5$"), "StandardNCadsH100v5Family"),
    (re.compile(r"^Standard_NCC\d+ads_H100_v5$"), "StandardNCCads2023Family"),
    (re.compile(r"^Standard_NC\d+as_T4_v3$"), "Standard NCASv3_T4 Family"),
    (re.compile(r"^Standard_NC\d+r?s_v3$"), "standardNCSv3Family"),
    (re.compile(r"^Standard_ND96asr_v4$"), "Standard NDASv4_A100 Family"),
    (re.compile(r"^Standard_ND96isr_H100_v5$"), "standardNDSH100v5Family"),
    (re.compile(r"^Standard_ND96isr_H200_v5$"), "standardNDISRH200V5Family"),
    (re.compile(r"^Standard_ND40rs_v2$"), "standardNDSv2Family"),
    (re.compile(r"^Standard_NV\d+adm?s_A10_v5$"), "StandardNVADSA10v5Family"),
    (re.compile(r"^Standard_NV\d+s_v3$"), "standardNVSv3Family"),
]
#: Azure usage names this module maps: the families of :data:`_AZURE_SERIES` and the two regional totals.
AZURE_TOTAL, AZURE_SPOT_TOTAL = "cores", "lowPriorityCores"
AZURE_FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(f for _, f in _AZURE_SERIES))
_AZURE_NAMES = {AZURE_TOTAL: "Total Regional vCPUs", AZURE_SPOT_TOTAL: "Total Regional Low-priority vCPUs"}


def _norm_family(name: str) -> str:
    """An Azure usage name compared as Azure writes it both ways: ``Standard NCASv3_T4 Family`` ==
    ``standardNCASv3_T4Family``."""
    return "".join(name.split()).lower()


_AZURE_BY_NORM = {_norm_family(f): f for f in (*AZURE_FAMILIES, AZURE_TOTAL, AZURE_SPOT_TOTAL)}


def azure_family(size: str) -> str | None:
    """The usage name of an Azure VM size's family (``Standard_ND96isr_H100_v5`` -> ``standardNDSH100v5Family``);
    None when the sources do not give it."""
    for pattern, fam in _AZURE_SERIES:
        if pattern.match(size.strip()):
            return fam
    return None


# GCP: canonical GPU model -> metric
_GCP_METRICS: dict[str, str] = {
    "A100-40GB": "NVIDIA_A100_GPUS",
    "A100-80GB": "NVIDIA_A100_80GB_GPUS",
    "H100-80GB": "NVIDIA_H100_GPUS",
    "L4": "NVIDIA_L4_GPUS",
    "T4": "NVIDIA_T4_GPUS",
    "V100-16GB": "NVIDIA_V100_GPUS",
    "V100-32GB": "NVIDIA_V100_GPUS",
    "P100": "NVIDIA_P100_GPUS",
    "P4": "NVIDIA_P4_GPUS",
}
#: GCP metrics this module maps (standard and ``PREEMPTIBLE_``).
GCP_METRICS: tuple[str, ...] = tuple(sorted({m for m in _GCP_METRICS.values()} |
                                            {"PREEMPTIBLE_" + m for m in _GCP_METRICS.values()}))
#: Machine series whose H100 has a metric of its own that the sources do not give (module docstring).
_GCP_UNMAPPED_SERIES = ("a3-megagpu", "a3-ultragpu", "a4-", "a4x-")


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def _text(offer: Mapping[str, Any], col: str) -> str:
    v = offer.get(col)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def _draws(offer: Mapping[str, Any]) -> list[list[QuotaKey]]:
    """Every quota the offer draws on, each as its alternatives in order (GCP spot: the preemptible metric, else
    the standard one); the first alternative is the one the offer draws on when the provider has it."""
    provider = _text(offer, "provider").lower()
    region = _text(offer, "region")
    itype = _text(offer, "instance_type")
    pricing = _text(offer, "pricing").lower() or "on_demand"
    vcpus = _num(offer.get("vcpus"))
    gpus = _num(offer.get("gpu_count"))
    if not provider or not region:
        return []
    if provider == "aws":
        cls = aws_instance_class(itype)
        if cls is None:
            return []
        if pricing in _STANDARD_PRICINGS:
            code, name = _AWS_ON_DEMAND[cls]
        elif pricing == "spot":
            spot = _aws_spot_class(itype, cls)
            if spot is None:
                return []
            code, name = _AWS_SPOT[spot]
        else:  # capacity_block (module docstring) or an unknown option
            return []
        return [[QuotaKey("aws", region, code, "vcpus", name, vcpus)]]
    if provider == "azure":
        if pricing == "spot":
            return [[QuotaKey("azure", region, AZURE_SPOT_TOTAL, "vcpus", _AZURE_NAMES[AZURE_SPOT_TOTAL], vcpus)]]
        if pricing not in _STANDARD_PRICINGS:
            return []
        out = []
        fam = azure_family(itype)
        if fam is not None:
            out.append([QuotaKey("azure", region, fam, "vcpus", fam, vcpus)])
        out.append([QuotaKey("azure", region, AZURE_TOTAL, "vcpus", _AZURE_NAMES[AZURE_TOTAL], vcpus)])
        return out
    if provider == "gcp":
        if itype.lower().startswith(_GCP_UNMAPPED_SERIES):
            return []
        metric = _GCP_METRICS.get(_text(offer, "gpu_model"))
        if metric is None:
            return []
        std = QuotaKey("gcp", region, metric, "gpus", metric, gpus)
        if pricing in ("spot", "flex_start"):
            pre = "PREEMPTIBLE_" + metric
            return [[QuotaKey("gcp", region, pre, "gpus", pre, gpus), std]]
        return [[std]]
    # another provider: only what a quota file names (by GPU model, or * for all its GPUs / vCPUs)
    model = _text(offer, "gpu_model")
    out = []
    if model:
        out.append([QuotaKey(provider, region, model, "gpus", model, gpus)])
    out.append([QuotaKey(provider, region, ANY_REGION, "gpus", "all GPUs", gpus)])
    out.append([QuotaKey(provider, region, ANY_REGION, "vcpus", "all vCPUs", vcpus)])
    return out


def quota_keys(offer: Mapping[str, Any]) -> tuple[QuotaKey, ...]:
    """Every quota an offer row (``provider, region, instance_type, gpu_model, gpu_count, vcpus, pricing``) draws
    on, as the provider defines them (module docstring): AWS one (its class's On-Demand or Spot quota), Azure two
    for pay-as-you-go and reserved VMs (the family and ``cores``; spot: ``lowPriorityCores``), GCP one (spot: the
    ``PREEMPTIBLE_`` metric; :meth:`QuotaTable.keys_for` falls back to the standard one when the table has no
    preemptible limit). Other providers: the keys a quota file could name (GPU model, ``*``). Empty when the offer
    draws on no known quota."""
    return tuple(alts[0] for alts in _draws(offer))


def quota_key(offer: Mapping[str, Any]) -> QuotaKey | None:
    """The quota an offer draws on first (AWS: its class's quota; Azure: its family's, else ``cores`` /
    ``lowPriorityCores``; GCP: its GPU's metric), with ``units_per_instance``; None when it draws on none
    (providers without a quota system, capacity blocks, families the sources do not place).

    >>> quota_key({"provider": "aws", "region": "us-east-1", "instance_type": "p5.48xlarge", "vcpus": 192,
    ...            "pricing": "on_demand"}).quota
    'L-417A185B'
    """
    if _text(offer, "provider").lower() not in ("aws", "azure", "gcp"):
        return None
    keys = quota_keys(offer)
    return keys[0] if keys else None


# ------------------------------------------------------------------------------------------------------ the table
@dataclass(frozen=True)
class QuotaLimit:
    """A limit of one quota: ``limit`` and ``used`` in the quota's unit, where it came from (``source``: a file
    and line, or an API)."""

    key: QuotaKey
    limit: float
    used: float = 0.0
    source: str = ""

    @property
    def headroom(self) -> float:
        """``limit - used``, never below 0 (usage above the limit leaves nothing)."""
        return max(0.0, self.limit - self.used)


class QuotaTable:
    """Known quota limits, by (provider, region, quota); region ``*`` is the limit of each region without its own.

    A key the table has no limit for is unknown (unlimited for the plan), never 0."""

    def __init__(self, limits: Iterable[QuotaLimit] = ()):
        self._limits: dict[tuple[str, str, str, str], QuotaLimit] = {}
        for lim in limits:
            self._limits[self._ident(lim.key, lim.key.region)] = lim

    @staticmethod
    def _ident(key: QuotaKey, region: str) -> tuple[str, str, str, str]:
        q = _norm_family(key.quota) if key.provider == "azure" else key.quota
        return (key.provider.lower(), region, q, key.unit)

    def limit_of(self, key: QuotaKey) -> QuotaLimit | None:
        """The limit of ``key``: its region's row, else the provider's ``*`` row, else None (unknown)."""
        return self._limits.get(self._ident(key, key.region)) or self._limits.get(self._ident(key, ANY_REGION))

    def headroom(self, key: QuotaKey) -> float | None:
        """What a plan may still use of ``key`` (``limit - used``, at least 0), in the key's unit; None when no
        limit is known."""
        lim = self.limit_of(key)
        return None if lim is None else lim.headroom

    def keys_for(self, offer: Mapping[str, Any]) -> list[tuple[QuotaKey, float | None]]:
        """Every quota with a known limit that the offer draws on, as ``(key, units_per_instance)``. Group offers
        by key and constrain ``sum(count * units_per_instance) <= headroom(key)``. ``units_per_instance`` None: the
        offer's size is unknown (no ``vcpus``), so no count of it can be shown to fit: place none of it."""
        out: list[tuple[QuotaKey, float | None]] = []
        for alts in _draws(offer):
            for k in alts:
                if self.limit_of(k) is not None:
                    out.append((k, k.units_per_instance))
                    break
        return out

    def key_for(self, offer: Mapping[str, Any]) -> tuple[QuotaKey, float | None] | None:
        """The first of :meth:`keys_for` (AWS and GCP offers draw on one quota; an Azure VM on two: use
        :meth:`keys_for` to honour both), or None when no known quota limits the offer."""
        keys = self.keys_for(offer)
        return keys[0] if keys else None

    def merged(self, other: "QuotaTable") -> "QuotaTable":
        """This table with ``other``'s limits on top (a file's row replaces the API's for the same key)."""
        return QuotaTable([*self._limits.values(), *other._limits.values()])

    def __iter__(self):
        return iter(self._limits.values())

    def __len__(self) -> int:
        return len(self._limits)

    def __repr__(self) -> str:
        return f"QuotaTable({len(self)} limits)"


# ---------------------------------------------------------------------------------------------- the quota files
def _resolve(provider: str, family: str, unit: str, where: str) -> tuple[str, str, str]:
    """(canonical quota, its unit, its name) of a file's ``family`` for ``provider``; InputError naming the row."""
    fam = family.strip()
    if provider == "aws":
        code = fam.upper()
        if code in AWS_EC2_QUOTAS:
            return code, "vcpus", AWS_EC2_QUOTAS[code]
        by_name = _AWS_BY_NAME.get(" ".join(fam.lower().split()))
        if by_name:
            return by_name, "vcpus", AWS_EC2_QUOTAS[by_name]
        raise InputError("family", f"{where}: '{fam}' is not an EC2 instance quota gpuopt maps to instance types",
                         accepted="a Service Quotas code or name of ec2: " + ", ".join(
                             f"{c} ({n})" for c, n in AWS_EC2_QUOTAS.items()))
    if provider == "azure":
        name = _AZURE_BY_NORM.get(_norm_family(fam))
        if name:
            return name, "vcpus", _AZURE_NAMES.get(name, name)
        raise InputError("family", f"{where}: '{fam}' is not an Azure usage name gpuopt maps to VM sizes",
                         accepted="name.value of the usages API: " + ", ".join(
                             (*AZURE_FAMILIES, AZURE_TOTAL, AZURE_SPOT_TOTAL)))
    if provider == "gcp":
        metric = fam.split("/")[-1].upper()
        if metric in GCP_METRICS:
            return metric, "gpus", metric
        raise InputError("family", f"{where}: '{fam}' is not a GCP GPU quota metric gpuopt maps to machine types",
                         accepted=", ".join(GCP_METRICS))
    if fam == "":
        raise InputError("family", f"{where}: empty", accepted="a GPU model (H100-80GB) or * for every GPU/vCPU")
    return fam, unit, ("all GPUs" if unit == "gpus" else "all vCPUs") if fam == ANY_REGION else fam


def _rows_from_csv(text: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    from providers._input import CsvReader, check_unique_columns

    reader = CsvReader(text, name)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("file", f"{name} is empty", accepted="a header: " + ", ".join(QUOTA_COLUMNS)) from None
    header = [h.strip().lower() for h in header]
    check_unique_columns(header, name)
    out = []
    for row in reader:
        if not any(c.strip() for c in row):
            continue
        line = reader.line_num
        if len(row) > len(header):
            raise InputError("file", f"{name} line {line}: {len(row)} cells but {len(header)} columns")
        out.append((line, dict(zip(header, row))))
    return out


def _rows_from_yaml(text: str, name: str) -> list[tuple[int, dict[str, Any]]]:
    data, node = load_yaml(text, name, "file")
    items, seq = data, node
    if isinstance(data, dict):
        if set(data) != {"quotas"}:
            raise InputError("file", f"{name}: a YAML quota file is a list of rows or {{quotas: [rows]}}",
                             accepted="quotas")
        items = data["quotas"]
        seq = next(v for k, v in node.value if getattr(k, "value", None) == "quotas")
    if not isinstance(items, list):
        raise InputError("file", f"{name}: a YAML quota file is a list of rows or {{quotas: [rows]}}")
    out = []
    for i, item in enumerate(items):
        line = seq.value[i].start_mark.line + 1
        if not isinstance(item, dict):
            raise InputError("file", f"{name} line {line}: a row is a mapping of " + ", ".join(QUOTA_COLUMNS))
        out.append((line, {str(k).strip().lower(): v for k, v in item.items()}))
    return out


def _number(raw: Any, col: str, where: str) -> float:
    if isinstance(raw, str):
        s = raw.strip()
        if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", s):  # 1,152 as the consoles print it
            s = s.replace(",", "")
        try:
            raw = parse_decimal(s)
        except ValueError:
            raise InputError(col, f"{where}: '{raw}' is not a number", accepted="a number of vCPUs or GPUs >= 0")
    return check_number(raw, col, where, lo=0.0, accepted="a finite number of vCPUs or GPUs >= 0")


def quota_table_from_rows(rows: Iterable[tuple[int, Mapping[str, Any]]], name: str = "<quotas>") -> QuotaTable:
    """Pure: quota rows ``(line, {provider, region, family, limit, unit[, used][, note]})`` -> :class:`QuotaTable`.

    Raises:
        InputError: an unknown or missing column, an empty provider or region, a family the provider does not list
            (with the accepted ones), a unit other than the quota's, a limit or used that is not a finite number
            >= 0, the same quota twice (both lines named)."""
    limits: list[QuotaLimit] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for line, row in rows:
        where = f"{name} line {line}"
        unknown = sorted(set(row) - set(QUOTA_COLUMNS))
        if unknown:
            raise InputError(unknown[0], f"{where}: unknown column", accepted=", ".join(QUOTA_COLUMNS))
        missing = [c for c in _REQUIRED if c not in row]
        if missing:
            raise InputError(missing[0], f"{where}: missing", accepted=", ".join(_REQUIRED) + " (used, note optional)")
        cell = {c: ("" if row.get(c) is None else str(row.get(c)).strip()) for c in ("provider", "region", "family",
                                                                                     "unit")}
        provider = cell["provider"].lower()
        if not provider:
            raise InputError("provider", f"{where}: empty", accepted="aws, azure, gcp or the provider of your offers")
        region = cell["region"]
        if not region:
            raise InputError("region", f"{where}: empty (write * for every region)",
                             accepted="a region code (us-east-1, eastus, us-central1) or *")
        unit = cell["unit"].lower().replace(" ", "")
        if unit not in UNITS:
            raise InputError("unit", f"{where}: '{cell['unit']}'", accepted=", ".join(UNITS))
        quota, own_unit, qname = _resolve(provider, cell["family"], unit, where)
        if unit != own_unit:
            raise InputError("unit", f"{where}: {quota} is counted in {own_unit}, not {unit}", accepted=own_unit)
        limit = _number(row["limit"], "limit", where)
        used_raw = row.get("used")
        used = 0.0 if used_raw is None or str(used_raw).strip() == "" else _number(used_raw, "used", where)
        key = QuotaKey(provider, region, quota, unit, qname)
        ident = QuotaTable._ident(key, region)
        if ident in seen:
            raise InputError("family", f"{name}: {provider} {region} {quota} is given twice (lines {seen[ident]} "
                                       f"and {line})")
        seen[ident] = line
        limits.append(QuotaLimit(key, limit, used, where))
    return QuotaTable(limits)


def load_quota_file(path: str | Path) -> QuotaTable:
    """The quota limits of a CSV or YAML file (``--quota FILE``; module docstring for the columns).

    Raises:
        InputError: the file is missing, not UTF-8, not CSV/YAML by its suffix, or a row is wrong (one line naming
            the file, the line, the field and the accepted values)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".yaml", ".yml"):
        raise InputError("quota", f"{p.name}: a quota file is .csv, .yaml or .yml", accepted=".csv, .yaml, .yml")
    text = read_text(p, "quota", what="quota file")
    rows = _rows_from_csv(text, p.name) if suffix == ".csv" else _rows_from_yaml(text, p.name)
    return quota_table_from_rows(rows, p.name)


# --------------------------------------------------------------------------------------------------- live: AWS
def fetch_aws_quota_pages(session: Any, regions: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """I/O only: every page of Service Quotas ``ListServiceQuotas(ServiceCode='ec2')`` per region, as returned.

    ``session`` is a boto3 Session (anything with ``client("service-quotas", region_name=...)``); the pages come
    from the client's ``list_service_quotas`` paginator, followed to the end (``NextToken``). Needs
    ``servicequotas:ListServiceQuotas``.

    Raises:
        MissingCredentials: no AWS credentials. InvalidCredentials: the credentials were refused.
        ProviderError: any other API error, naming the region and the error code."""
    from providers.base import InvalidCredentials, MissingCredentials

    try:
        from botocore.exceptions import ClientError, NoCredentialsError
    except ImportError as e:  # pragma: no cover - boto3 is a dependency
        raise MissingCredentials(f"aws quotas: boto3 is not installed ({e.name})") from None
    out: dict[str, list[dict[str, Any]]] = {}
    for region in regions:
        client = session.client("service-quotas", region_name=region)
        try:
            out[region] = list(client.get_paginator("list_service_quotas").paginate(ServiceCode="ec2"))
        except NoCredentialsError:
            raise MissingCredentials("aws quotas: no AWS credentials (set AWS_PROFILE or run `aws configure`), "
                                     "or give the quotas in a --quota file") from None
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredTokenException",
                        "SignatureDoesNotMatch"):
                raise InvalidCredentials(f"aws quotas {region}: the credentials were refused ({code})") from None
            raise ProviderError(f"aws quotas {region}: ListServiceQuotas failed ({code}: "
                                f"{e.response.get('Error', {}).get('Message', '')})") from None
    return out


def aws_quota_table(pages: Mapping[str, Iterable[Mapping[str, Any]]]) -> QuotaTable:
    """Pure: ``{region: [ListServiceQuotas pages]}`` -> the limits of the EC2 instance quotas this module maps
    (:data:`AWS_EC2_QUOTAS`); other quotas (hosts, VPCs...) are left out. ``Value`` is the applied limit in vCPUs;
    ``used`` is 0 (Service Quotas does not give usage)."""
    limits = []
    for region, region_pages in pages.items():
        for page in region_pages:
            for q in page.get("Quotas") or []:
                code = str(q.get("QuotaCode", "")).upper()
                value = q.get("Value")
                if code not in AWS_EC2_QUOTAS or not isinstance(value, (int, float)) or not math.isfinite(value):
                    continue
                name = str(q.get("QuotaName") or AWS_EC2_QUOTAS[code])
                key = QuotaKey("aws", region, code, "vcpus", name)
                limits.append(QuotaLimit(key, float(value), 0.0, f"aws service-quotas {region}"))
    return QuotaTable(limits)


def fetch_aws_quotas(session: Any, regions: Iterable[str]) -> QuotaTable:
    """:func:`fetch_aws_quota_pages` then :func:`aws_quota_table`."""
    return aws_quota_table(fetch_aws_quota_pages(session, regions))


# -------------------------------------------------------------------------------------------------- live: Azure
AZURE_MANAGEMENT_URL = "https://management.azure.com"
AZURE_USAGES_API_VERSION = "2023-09-01"
AZURE_SCOPE = "https://management.azure.com/.default"


def _get_json_pages(url: str, headers: dict[str, str], what: str, options: Any, next_of: Callable[[dict], Any],
                    max_pages: int = 1000) -> list[dict[str, Any]]:
    import requests

    from providers.base import FetchOptions, InvalidCredentials, http_session

    opts = options or FetchOptions()
    session = http_session(opts)
    pages: list[dict[str, Any]] = []
    seen: set[str] = set()
    try:
        while url:
            if url in seen or len(pages) >= max_pages:
                raise ProviderError(f"{what}: the next page link repeats or there are more than {max_pages} pages")
            seen.add(url)
            try:
                resp = session.get(url, headers=headers, timeout=opts.timeout_s)
            except requests.RequestException as e:
                raise ProviderError(f"{what}: request failed ({type(e).__name__}: {e})") from None
            if resp.status_code in (401, 403):
                raise InvalidCredentials(f"{what}: HTTP {resp.status_code}: the credentials were refused "
                                         f"({resp.text[:200]!r})")
            if resp.status_code != 200:
                raise ProviderError(f"{what}: HTTP {resp.status_code} ({resp.text[:200]!r})")
            try:
                page = resp.json()
            except ValueError:
                raise ProviderError(f"{what}: the answer is not JSON") from None
            if not isinstance(page, dict):
                raise ProviderError(f"{what}: the answer is not a JSON object")
            pages.append(page)
            url = next_of(page) or ""
    finally:
        session.close()
    return pages


def _bearer(credential: Any, scope: str) -> str:
    from providers.azure_spot import azure_token

    token = azure_token(credential, scope, "quotas")
    return str(getattr(token, "token", token))


def fetch_azure_usages(subscription_id: str, regions: Iterable[str], credential: Any, *, options: Any = None
                       ) -> dict[str, list[dict[str, Any]]]:
    """I/O only: the Compute usages of each region, every page as returned.

    ``GET {endpoint}/subscriptions/{subscription_id}/providers/Microsoft.Compute/locations/{region}/usages
    ?api-version=2023-09-01`` with ``Authorization: Bearer`` a token of ``credential`` (an azure-identity credential:
    ``credential.get_token("https://management.azure.com/.default")``), then each ``nextLink``. ``endpoint`` is
    ``options.endpoints["azure_management"]`` (tests: a 127.0.0.1 server) or https://management.azure.com; retries
    and timeouts are :func:`providers.base.http_session`'s.

    Raises:
        InvalidCredentials: HTTP 401/403. ProviderError: another HTTP error, an answer that is not JSON, a page link
            that repeats."""
    from urllib.parse import quote

    base = ((options.endpoints.get("azure_management") if options is not None else None)
            or AZURE_MANAGEMENT_URL).rstrip("/")
    headers = {"Authorization": f"Bearer {_bearer(credential, AZURE_SCOPE)}", "Accept": "application/json"}
    out = {}
    for region in regions:
        url = (f"{base}/subscriptions/{quote(subscription_id, safe='')}/providers/Microsoft.Compute/locations/"
               f"{quote(region, safe='')}/usages?api-version={AZURE_USAGES_API_VERSION}")
        out[region] = _get_json_pages(url, headers, f"azure usages {region}", options, lambda p: p.get("nextLink"))
    return out


def azure_quota_table(pages: Mapping[str, Iterable[Mapping[str, Any]]]) -> QuotaTable:
    """Pure: ``{region: [usages pages]}`` (``{"value": [{"name": {"value", "localizedValue"}, "currentValue",
    "limit", "unit": "Count"}], "nextLink"}``) -> the limits of the usage names this module maps (GPU families,
    ``cores``, ``lowPriorityCores``) with ``used`` = ``currentValue``."""
    limits = []
    for region, region_pages in pages.items():
        for page in region_pages:
            for u in page.get("value") or []:
                nm = u.get("name") or {}
                canon = _AZURE_BY_NORM.get(_norm_family(str(nm.get("value", ""))))
                lim, cur = u.get("limit"), u.get("currentValue", 0)
                if canon is None or not isinstance(lim, (int, float)) or not isinstance(cur, (int, float)):
                    continue
                label = str(nm.get("localizedValue") or _AZURE_NAMES.get(canon, canon))
                key = QuotaKey("azure", region, canon, "vcpus", label)
                limits.append(QuotaLimit(key, float(lim), max(0.0, float(cur)), f"azure usages {region}"))
    return QuotaTable(limits)


def fetch_azure_quotas(subscription_id: str, regions: Iterable[str], credential: Any, *, options: Any = None
                       ) -> QuotaTable:
    """:func:`fetch_azure_usages` then :func:`azure_quota_table`."""
    return azure_quota_table(fetch_azure_usages(subscription_id, regions, credential, options=options))


# ---------------------------------------------------------------------------------------------------- live: GCP
GCP_COMPUTE_URL = "https://compute.googleapis.com/compute/v1"
GCP_SCOPE = "https://www.googleapis.com/auth/compute.readonly"


def fetch_gcp_regions(project: str, regions: Iterable[str], credential: Any, *, options: Any = None
                      ) -> dict[str, dict[str, Any]]:
    """I/O only: ``GET {endpoint}/projects/{project}/regions/{region}`` (Compute Engine ``regions.get``) per region,
    as returned; ``credential`` is an access token string or has ``get_token(scope)`` / ``.token``; ``endpoint`` is
    ``options.endpoints["gcp_compute"]`` or https://compute.googleapis.com/compute/v1.

    Raises:
        InvalidCredentials: HTTP 401/403. ProviderError: another HTTP error or an answer that is not JSON."""
    from urllib.parse import quote

    base = ((options.endpoints.get("gcp_compute") if options is not None else None) or GCP_COMPUTE_URL).rstrip("/")
    headers = {"Authorization": f"Bearer {_bearer(credential, GCP_SCOPE)}", "Accept": "application/json"}
    out = {}
    for region in regions:
        url = f"{base}/projects/{quote(project, safe='')}/regions/{quote(region, safe='')}"
        out[region] = _get_json_pages(url, headers, f"gcp regions.get {region}", options, lambda p: None)[0]
    return out


def gcp_quota_table(regions: Mapping[str, Mapping[str, Any]]) -> QuotaTable:
    """Pure: ``{region: Region}`` (``{"quotas": [{"metric", "limit", "usage"}]}``) -> the limits of the GPU metrics
    this module maps (:data:`GCP_METRICS`) with ``used`` = ``usage``."""
    limits = []
    for region, body in regions.items():
        for q in body.get("quotas") or []:
            metric = str(q.get("metric", "")).upper()
            lim, use = q.get("limit"), q.get("usage", 0)
            if metric not in GCP_METRICS or not isinstance(lim, (int, float)) or not isinstance(use, (int, float)):
                continue
            key = QuotaKey("gcp", region, metric, "gpus", metric)
            limits.append(QuotaLimit(key, float(lim), max(0.0, float(use)), f"gcp regions.get {region}"))
    return QuotaTable(limits)


def fetch_gcp_quotas(project: str, regions: Iterable[str], credential: Any, *, options: Any = None) -> QuotaTable:
    """:func:`fetch_gcp_regions` then :func:`gcp_quota_table`."""
    return gcp_quota_table(fetch_gcp_regions(project, regions, credential, options=options))


# -------------------------------------------------------------------------------------- live: one entry, a file
def fetch_quotas(provider: str, regions: Iterable[str], *, profile: str | None = None,
                 subscription_id: str | None = None, project: str | None = None, token: str | None = None,
                 session: Any = None, credential: Any = None, options: Any = None) -> QuotaTable:
    """The live quotas of one provider's ``regions`` with the user's own credentials (what ``gpuopt quotas``
    writes into a ``--quota`` file):

    - ``aws``: Service Quotas through a boto3 Session (``session``, else one of ``profile`` or the standard
      credential chain): :func:`fetch_aws_quotas`.
    - ``azure``: the Compute usages of ``subscription_id`` (or ``AZURE_SUBSCRIPTION_ID``) with ``credential``, else
      azure-identity's ``DefaultAzureCredential`` (``pip install 'gpuopt[azure]'``): :func:`fetch_azure_quotas`.
    - ``gcp``: Compute Engine ``regions.get`` of ``project`` (or ``GOOGLE_CLOUD_PROJECT``) with ``credential``, else
      an OAuth access ``token`` (or ``GPUOPT_GCP_ACCESS_TOKEN``: ``gcloud auth print-access-token``):
      :func:`fetch_gcp_quotas`.

    Raises:
        InputError: an unknown provider, no region, a missing subscription, project or token (field named).
        MissingCredentials, InvalidCredentials, ProviderError: as the fetchers."""
    import os

    from providers.base import MissingCredentials

    provider = str(provider or "").strip().lower()
    regions = [str(r).strip() for r in regions if str(r).strip()]
    if provider not in ("aws", "azure", "gcp"):
        raise InputError("provider", f"no live quota API for '{provider}'", accepted="aws, azure, gcp")
    if not regions:
        raise InputError("region", "name the regions to read the quotas of", accepted="region codes, e.g. us-east-1")
    if provider == "aws":
        if session is None:
            import boto3

            session = boto3.Session(profile_name=profile) if profile else boto3.Session()
        return fetch_aws_quotas(session, regions)
    if provider == "azure":
        sub = subscription_id or os.environ.get("AZURE_SUBSCRIPTION_ID", "")
        if not sub:
            raise InputError("subscription", "the Azure subscription whose usages to read is not set",
                             accepted="--subscription ID or AZURE_SUBSCRIPTION_ID")
        if credential is None:
            try:
                from azure.identity import DefaultAzureCredential
            except ImportError:
                raise MissingCredentials("azure quotas: azure-identity is not installed "
                                         "(pip install 'gpuopt[azure]')") from None
            credential = DefaultAzureCredential()
        return fetch_azure_quotas(sub, regions, credential, options=options)
    proj = project or os.environ.get("GOOGLE_CLOUD_PROJECT", "")
    if not proj:
        raise InputError("project", "the GCP project whose quotas to read is not set",
                         accepted="--project ID or GOOGLE_CLOUD_PROJECT")
    if credential is None:
        credential = token or os.environ.get("GPUOPT_GCP_ACCESS_TOKEN", "")
        if not credential:
            raise MissingCredentials("gcp quotas: no access token (--gcp-token, or GPUOPT_GCP_ACCESS_TOKEN from "
                                     "`gcloud auth print-access-token`)")
    return fetch_gcp_quotas(proj, regions, credential, options=options)


def quota_rows(table: QuotaTable) -> list[dict[str, Any]]:
    """The rows of a quota file (:data:`QUOTA_COLUMNS`) for ``table``, sorted by provider, region and quota:
    ``family`` is the quota's code (AWS ``L-...``, Azure usage name, GCP metric), ``note`` its name and source.
    :func:`load_quota_file` reads them back to the same limits."""
    rows = []
    for lim in table:
        k = lim.key
        rows.append({"provider": k.provider, "region": k.region, "family": k.quota, "limit": lim.limit,
                     "unit": k.unit, "used": lim.used, "note": "; ".join(x for x in (k.name, lim.source) if x)})
    return sorted(rows, key=lambda r: (r["provider"], r["region"], r["family"]))


def write_quota_file(table: QuotaTable, path: str | Path) -> Path:
    """Write ``table`` as a quota CSV (:func:`quota_rows`) at ``path``, atomically (a temporary file renamed over
    it: a failed write leaves the old file). Returns the path."""
    import os
    import tempfile

    p = Path(path)
    buf = io.StringIO()
    out = csv.DictWriter(buf, fieldnames=list(QUOTA_COLUMNS), lineterminator="\n")
    out.writeheader()
    for r in quota_rows(table):
        out.writerow({**r, "limit": f"{r['limit']:g}", "used": f"{r['used']:g}"})
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".quotas-", suffix=".csv", dir=str(p.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(buf.getvalue())
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p
