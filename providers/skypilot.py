"""Importer for SkyPilot catalog ``vms.csv`` files (skypilot-org/skypilot-catalog, ``catalogs/v8/{aws,gcp,lambda}``
and ``catalogs/v6/azure``): pure parsing, no I/O beyond reading the text you hand it.

The four clouds' files have different headers (AWS has ``Arch``, Azure ``Generation``, GCP puts ``Region`` before
``Price``, Lambda has no zone); columns are read by name. What the importer does with each quirk of the real files
(see ``pricing_cache/data/inputs/PROVENANCE.md``):

* **One on-demand row per (instance type, region).** AWS and GCP repeat the on-demand ``Price`` on every
  availability-zone row; those rows are collapsed. If the zone rows of one (type, region) disagree on the on-demand
  price, nothing is picked: every line of that group is reported (``conflicting_price``) and no on-demand offer is
  made (``strict=True`` raises ``PriceDataError`` instead). Spot is kept **per zone** (the ``zone`` column filled).
* **AWS Local Zones** (``use1-atl2-az1``, ``usw2-lax1-az1``) are listed by SkyPilot as zones of their parent region.
  We keep ``region`` = the parent region code and the Local Zone id in ``zone`` for spot rows; their on-demand price
  joins the parent region's collapse (in these files it is equal; a different one would be a reported conflict).
* **Missing prices are unknown, never 0.** An empty ``Price``/``SpotPrice`` is excluded and reported
  (``unknown_price``); a price of 0.0 (GCP ``a4-highgpu-8g`` host rows) is excluded and reported (``zero_price``).
  Exception: Lambda has no spot market at all, so its always-empty ``SpotPrice`` is not reported.
* **Placeholder spot prices** are excluded and reported (``placeholder_spot``): spot >= on-demand (AWS rows where
  ``SpotPrice == Price``, Azure H100 v5 rows, GCP rows where spot is above on-demand) and, on AWS, spot exactly 10 %
  of on-demand. A spot price whose on-demand price is unknown cannot be checked and is reported
  (``unverifiable_spot``, e.g. ``p5e.48xlarge``). TPU rows priced 700.0 are reported (``placeholder_price``).
* **GPU facts.** ``AcceleratorCount`` is kept as a float (AWS g6f: 0.25, 0.5; Azure NVads A10 v5 fractions).
  ``gpu_memory_gib`` is the memory of ONE WHOLE GPU: from ``GpuInfo.Gpus[0].MemoryInfo.SizeInMiB`` divided by
  ``GpuPartitionSize`` when AWS gives a partition (AWS reports the partition's memory for g6f), never from
  ``TotalGpuMemoryInMiB`` (the instance total on AWS, wrongly equal to one GPU on Lambda); when ``GpuInfo`` is empty
  (AWS g6f, some p3/p5 rows) it comes from ``providers.gpu_names.GPU_MEMORY_MIB``. ``AcceleratorName`` is the
  primary name (AWS normalises it, e.g. ``A100-80GB``, while ``GpuInfo`` says ``A100``).
* **Azure** sizes come from the documented table :data:`AZURE_GPU_SIZES` (model, GPUs per VM, interconnect), which
  overrides the file: ``Standard_ND96isr_H100_v5`` says 12 GPUs, the real size has 8; rows with empty accelerator
  fields (``Standard_NCC40ads_H100_v5``) get their GPU from the table; sizes not in the table with empty
  accelerator fields are reported (``unknown_gpu``). Promo K80 sizes (``Standard_NC6_Promo``...) are kept as their
  own instance types at their own price (they are real catalog SKUs; K80 has no spec row, so the planner lists
  but never sizes them).
* **GCP** host rows (``a2``/``a3``/``a4``/``g2``) carry only the vCPU + RAM price; the GPU price is a separate row with
  an empty ``InstanceType``. An instance price = host row + the accelerator row with the same region, zone, GPU
  name and count, where name and count per machine type come from :data:`GCP_MACHINE_GPUS`. Accelerator rows that
  no host machine type of the file uses (T4, V100, P100, P4 attach to N1 machines, whose host prices are not in the
  file) are reported (``no_host_row``).
* Duplicate lines (same type, region, zone) with equal prices collapse to exactly one row (the later lines are
  reported ``duplicate``); with different prices none is kept (``conflicting_price``).

Invariant, checked before returning: ``offers.groupby([provider, region, zone, instance_type, pricing,
payment]).size() == 1``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from gpuopt.kernel.errors import InputError, PriceDataError
from gpuopt.kernel.records import SkippedRow
from providers._common import ParseResult, check_unique, offers_frame, hourly_row, float_or_none, read_text
from providers.gpu_names import GPU_MEMORY_MIB, canonical_gpu

FORMATS = ("skypilot",)
PROVIDERS = ("aws", "azure", "gcp", "lambda")


def _gcp_table() -> dict[str, tuple[str, int]]:
    t: dict[str, tuple[str, int]] = {}
    for n in (1, 2, 4, 8):
        t[f"a2-highgpu-{n}g"] = ("A100", n)
        t[f"a2-ultragpu-{n}g"] = ("A100-80GB", n)
        t[f"a3-highgpu-{n}g"] = ("H100", n)
    t["a2-megagpu-16g"] = ("A100", 16)
    t["a3-megagpu-8g"] = ("H100-MEGA", 8)
    t["a3-edgegpu-8g"] = ("H100", 8)
    t["a3-ultragpu-8g"] = ("H200", 8)
    t["a4-highgpu-8g"] = ("B200", 8)
    for size in (4, 8, 12, 16, 32):
        t[f"g2-standard-{size}"] = ("L4", 1)
    t["g2-standard-24"] = ("L4", 2)
    t["g2-standard-48"] = ("L4", 4)
    t["g2-standard-96"] = ("L4", 8)
    return t


#: GCP machine type -> (accelerator name as written in the catalog's accelerator rows, GPUs per VM).
#: Sources: Google's accelerator-optimized machine family docs (https://cloud.google.com/compute/docs/
#: accelerator-optimized-machines: A2 Standard = A100 40GB, A2 Ultra = A100 80GB, A3 High/Mega/Edge = H100 80GB,
#: A3 Ultra = H200, A4 = B200, G2 = L4); SkyPilot's own table (skypilot-org/skypilot sky/catalog/gcp_catalog.py,
#: ``_ACC_INSTANCE_TYPE_DICTS``: a3-megagpu-8g -> H100-MEGA:8, g2-standard-24 -> L4:2, -48 -> L4:4, -96 -> L4:8,
#: the other g2 sizes -> L4:1); Cyclenerd/google-cloud-pricing-cost-calculator build/gcp.yml (a2/g2 GPU counts);
#: a GKE doc's ComputeClass for ``a3-edgegpu-8g-nolssd`` with 8 x nvidia-h100-80gb. ``-nolssd`` variants carry
#: the same GPUs (looked up without the suffix).
GCP_MACHINE_GPUS: dict[str, tuple[str, int]] = _gcp_table()


@dataclass(frozen=True)
class AzureSize:
    gpu: str  # canonical GPU name
    count: float  # GPUs per VM (fractions for GPU partitions)
    interconnect: str


def _azure_table() -> dict[str, AzureSize]:
    t: dict[str, AzureSize] = {}
    for promo in ("", "_Promo"):  # NC (K80, retired 2023): NC6 = 1 GPU = half a K80 board
        t[f"Standard_NC6{promo}"] = AzureSize("K80", 1, "pcie")
        t[f"Standard_NC12{promo}"] = AzureSize("K80", 2, "pcie")
        t[f"Standard_NC24{promo}"] = AzureSize("K80", 4, "pcie")
        t[f"Standard_NC24r{promo}"] = AzureSize("K80", 4, "pcie")
    for size, n in (("NC6s_v3", 1), ("NC12s_v3", 2), ("NC24s_v3", 4), ("NC24rs_v3", 4)):  # NCv3: V100 16GB PCIe
        t[f"Standard_{size}"] = AzureSize("V100-16GB", n, "pcie")
    for size, n in (("NC4as_T4_v3", 1), ("NC8as_T4_v3", 1), ("NC16as_T4_v3", 1), ("NC64as_T4_v3", 4)):
        t[f"Standard_{size}"] = AzureSize("T4", n, "pcie")
    for size, n in (("NC24ads_A100_v4", 1), ("NC48ads_A100_v4", 2), ("NC96ads_A100_v4", 4)):  # A100 80GB PCIe
        t[f"Standard_{size}"] = AzureSize("A100-80GB", n, "pcie")
    t["Standard_NC40ads_H100_v5"] = AzureSize("H100-NVL-94GB", 1, "pcie")
    t["Standard_NC80adis_H100_v5"] = AzureSize("H100-NVL-94GB", 2, "pcie")
    t["Standard_NCC40ads_H100_v5"] = AzureSize("H100-NVL-94GB", 1, "pcie")
    t["Standard_ND40rs_v2"] = AzureSize("V100-32GB", 8, "nvlink")  # NDv2: 8 x V100 32GB SXM2, NVLink
    t["Standard_ND96asr_v4"] = AzureSize("A100-40GB", 8, "nvlink")  # ND A100 v4: 8 x A100 40GB SXM4
    t["Standard_ND96amsr_A100_v4"] = AzureSize("A100-80GB", 8, "nvlink")  # NDm A100 v4: 8 x A100 80GB SXM4
    t["Standard_ND96isr_H100_v5"] = AzureSize("H100-80GB", 8, "nvlink")  # ND H100 v5: 8 x H100 80GB SXM5
    for size, n in (("NV6", 1), ("NV12", 2), ("NV24", 4)):  # NV (M60)
        t[f"Standard_{size}"] = AzureSize("M60", n, "pcie")
    for size, n in (("NV12s_v3", 1), ("NV24s_v3", 2), ("NV48s_v3", 4)):  # NVv3 (M60)
        t[f"Standard_{size}"] = AzureSize("M60", n, "pcie")
    for size, n in (("NV6ads_A10_v5", 1 / 6), ("NV12ads_A10_v5", 1 / 3), ("NV18ads_A10_v5", 0.5),
                    ("NV36ads_A10_v5", 1), ("NV36adms_A10_v5", 1), ("NV72ads_A10_v5", 2)):  # GPU partitions
        t[f"Standard_{size}"] = AzureSize("A10", n, "pcie")
    return t


#: Azure GPU VM sizes -> GPU model, GPUs per VM (fractions for partitioned GPUs) and interconnect.
#: Sources: MicrosoftDocs/azure-docs articles/virtual-machines/sizes/gpu-accelerated/ (nc-family.md, nd-family.md,
#: nv-family.md and their includes: ncads-h100-v5 "up to 2 NVIDIA H100 NVL GPUs with 94GB memory each",
#: nccadsh100v5 "1 NVIDIA H100 NVL GPU", nd-h100-v5 (Standard_ND96isr_H100_v5: 8 GPUs), nvads-a10-v5
#: "1/6 - 2 GPUs ... NVIDIA A10 24 GiB"), and Aspire's AKS node VM size list (microsoft/aspire
#: src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs: "Standard_ND96isr_H100_v5 -- 8 GPU(s)",
#: "Standard_NC80adis_H100_v5 -- 2 GPU(s)", "Standard_NCC40ads_H100_v5 -- 1 GPU(s)"). The NC A10 v4 sizes
#: (Standard_NC8ads_A10_v4 ...) are not in the table: their GPU share is not documented in the sources we could
#: check, so their rows with empty accelerator fields are reported, not guessed.
AZURE_GPU_SIZES: dict[str, AzureSize] = _azure_table()

_AWS_NVLINK = re.compile(r"^(p3\.(8|16)xlarge|p3dn\.|p4d\.|p4de\.|p5|p5e\.|p5en\.|p6)")


def interconnect_for(provider: str, instance_type: str) -> str:
    """``nvlink`` for SXM/NVLink instances, ``pcie`` otherwise (the conservative default).

    AWS: p3.8x/16xlarge, p3dn, p4d, p4de, p5*, p6* (SXM boards with NVLink); g4dn/g5/g6/g6e/g6f, p3.2xlarge, p2, g3
    are PCIe. GCP: a2/a3/a4 NVLink, g2 PCIe. Azure: ND sizes NVLink, NC/NV PCIe. Lambda: names with ``sxm``.
    """
    it = instance_type.lower()
    p = provider.lower()
    if p == "aws":
        return "nvlink" if _AWS_NVLINK.match(it) else "pcie"
    if p == "gcp":
        return "nvlink" if it.startswith(("a2-", "a3-", "a4-")) else "pcie"
    if p == "azure":
        size = AZURE_GPU_SIZES.get(instance_type)
        if size is not None:
            return size.interconnect
        return "nvlink" if it.startswith("standard_nd") else "pcie"
    if p == "lambda":
        return "nvlink" if "sxm" in it else "pcie"
    return "pcie"


@dataclass
class _Raw:
    line: int
    instance_type: str
    acc_name: str
    acc_count: float | None
    vcpus: float | None
    memory_gib: float | None
    gpu_info: str
    price: float | None
    spot: float | None
    region: str
    zone: str


def _read_rows(text: str, name: str = "the SkyPilot catalog") -> tuple[list[str], list[_Raw]]:
    from providers._input import CsvReader

    reader = CsvReader(text, name, field="catalog")
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("catalog", "empty SkyPilot catalog (no header line)") from None
    header = [h.strip() for h in header]
    from providers._input import check_unique_columns

    check_unique_columns(header, "the SkyPilot catalog", field="catalog")
    need = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region"}
    missing = sorted(need - set(header))
    if missing:
        raise InputError("catalog", f"line 1: not a SkyPilot vms.csv header, missing {', '.join(missing)}",
                         accepted="SkyPilot catalog v5-v8 vms.csv")
    idx = {h: i for i, h in enumerate(header)}

    def get(rec: list[str], col: str) -> str:
        i = idx.get(col)
        return rec[i].strip() if i is not None and i < len(rec) else ""

    def num(rec: list[str], col: str) -> float | None:
        """The number in ``col``, None when empty; a text that is not a decimal number (``1_8.5``) refused."""
        v = get(rec, col)
        f = float_or_none(v)
        if f is None and v and v.lower() not in ("nan", "none", "null", "n/a", "na"):
            raise InputError("catalog", f"{name} line {reader.line_num}: {col} {v[:40]!r} is not a number",
                             accepted="digits, a point, an exponent: 18.5, 1e3 (no _ between digits)")
        return f

    rows = []
    for rec in reader:
        line = reader.line_num
        if not any(x.strip() for x in rec):
            continue
        rows.append(_Raw(line=line, instance_type=get(rec, "InstanceType"), acc_name=get(rec, "AcceleratorName"),
                         acc_count=num(rec, "AcceleratorCount"), vcpus=num(rec, "vCPUs"),
                         memory_gib=num(rec, "MemoryGiB"), gpu_info=get(rec, "GpuInfo"),
                         price=num(rec, "Price"), spot=num(rec, "SpotPrice"),
                         region=get(rec, "Region"), zone=get(rec, "AvailabilityZone")))
    return header, rows


def _gpu_info_memory_mib(gpu_info: str) -> float | None:
    """Per-WHOLE-GPU memory (MiB) from a GpuInfo dict literal, or None.

    ``Gpus[0].MemoryInfo.SizeInMiB`` is per GPU; for AWS GPU partitions (g6f) it is the partition's memory, so it is
    divided by ``GpuPartitionSize``. ``TotalGpuMemoryInMiB`` is never used.
    """
    s = (gpu_info or "").strip()
    if not s.startswith("{"):
        return None
    try:
        info = ast.literal_eval(s)
        gpu = info["Gpus"][0]
        size = float(gpu["MemoryInfo"]["SizeInMiB"])
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None
    part = gpu.get("GpuPartitionSize")
    try:
        part = float(part) if part is not None else 1.0
    except (TypeError, ValueError):
        part = 1.0
    if 0 < part < 1:
        size = size / part
    return size if size > 0 else None


def _fmt(x: float | None) -> str:
    return "empty" if x is None else repr(x)


class _Collector:
    def __init__(self, source: str, strict: bool):
        self.source = source
        self.strict = strict
        self.skipped: list[SkippedRow] = []
        self.notes: list[str] = []

    def skip(self, raw: _Raw, reason: str, instance_type: str | None = None) -> None:
        self.skipped.append(SkippedRow(source=self.source, line=raw.line,
                                       instance_type=instance_type if instance_type is not None else raw.instance_type,
                                       region=raw.region, reason=reason))

    def conflict(self, message: str) -> None:
        if self.strict:
            raise PriceDataError(f"{self.source}: {message}")


def _dedupe(rows: list[_Raw], key, col: _Collector, label) -> list[_Raw]:
    """Collapse lines with the same key: equal prices -> keep the first, report the rest (duplicate); different
    prices -> keep none, report all (conflicting_price)."""
    groups: dict[Any, list[_Raw]] = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    kept = []
    for k, grp in groups.items():
        if len(grp) == 1:
            kept.append(grp[0])
            continue
        prices = {(g.price, g.spot) for g in grp}
        if len(prices) == 1:
            kept.append(grp[0])
            for g in grp[1:]:
                col.skip(g, f"duplicate: same {label(g)} and prices as line {grp[0].line}; collapsed to one row")
        else:
            col.conflict(f"lines {[g.line for g in grp]} give different prices for {label(grp[0])}")
            for g in grp:
                col.skip(g, f"conflicting_price: lines {[x.line for x in grp]} give different prices for "
                            f"{label(g)}; none kept")
    kept.sort(key=lambda r: r.line)
    return kept


def _collapse_on_demand(cands: list[tuple[_Raw, dict]], col: _Collector) -> list[dict]:
    """One on-demand row per (instance type, region); zone rows must agree on the price."""
    groups: dict[tuple[str, str], list[tuple[_Raw, dict]]] = {}
    for raw, row in cands:
        groups.setdefault((row["instance_type"], row["region"]), []).append((raw, row))
    out = []
    for (itype, region), grp in groups.items():
        prices = sorted({round(row["usd_per_hour"], 9) for _, row in grp})
        if len(prices) > 1:
            lines = [raw.line for raw, _ in grp]
            col.conflict(f"on-demand price of {itype} in {region} differs across zone rows: {prices}")
            for raw, _ in grp:
                col.skip(raw, f"conflicting_price: on-demand {itype} in {region} differs across zone rows "
                              f"{prices} (lines {lines}); no on-demand row kept", instance_type=itype)
            continue
        grp.sort(key=lambda x: x[0].line)
        out.append(grp[0][1])
    return out


def _price_check(raw: _Raw, price: float | None, what: str, col: _Collector, itype: str | None = None) -> bool:
    if price is None:
        col.skip(raw, f"unknown_price: empty {what}; a missing price is unknown, never 0", instance_type=itype)
        return False
    if price == 0:
        col.skip(raw, f"zero_price: {what} is 0.0 (not a real price)", instance_type=itype)
        return False
    if price < 0:
        col.skip(raw, f"invalid_price: {what} is negative ({price})", instance_type=itype)
        return False
    return True


def _spot_check(raw: _Raw, spot: float | None, od: float | None, provider: str, col: _Collector,
                itype: str | None = None, detail: str = "SpotPrice") -> bool:
    if not _price_check(raw, spot, detail, col, itype):
        return False
    assert spot is not None
    if od is None:
        col.skip(raw, f"unverifiable_spot: {detail} {spot} but the on-demand price is unknown, so the spot price "
                      "cannot be checked for placeholders", instance_type=itype)
        return False
    if spot >= od - 1e-12:
        col.skip(raw, f"placeholder_spot: {detail} {spot} >= on-demand {od}", instance_type=itype)
        return False
    # 10 % to within half a cent of the quoted rounding (p5en eu-south-2: 6.836 vs 68.35968 = 10.00005 %)
    if provider == "aws" and abs(spot - 0.1 * od) <= max(0.005, 1e-4 * od):
        col.skip(raw, f"placeholder_spot: {detail} {spot} is exactly 10% of on-demand {od}", instance_type=itype)
        return False
    return True


def _base(provider: str, raw: _Raw, itype: str, gpu: str, count: float, mem_mib: float, vcpus, mem_gib,
          as_of: str, source: str) -> dict[str, Any]:
    return {"provider": provider, "region": raw.region, "zone": "", "instance_type": itype, "gpu_model": gpu,
            "gpu_count": float(count), "gpu_memory_gib": mem_mib / 1024.0,
            "vcpus": float("nan") if vcpus is None else float(vcpus),
            "memory_gib": float("nan") if mem_gib is None else float(mem_gib),
            "interconnect": interconnect_for(provider, itype), "currency": "USD", "source": source, "as_of": as_of}


def _resolve_gpu(provider: str, raw: _Raw, col: _Collector) -> tuple[str, float, float] | None:
    """(canonical gpu, gpu_count, per-GPU memory MiB) for a flat-file row, or None (row reported)."""
    name, count = raw.acc_name, raw.acc_count
    if provider == "azure":
        size = AZURE_GPU_SIZES.get(raw.instance_type)
        if size is not None:
            if not name or count is None:
                col.notes.append(f"line {raw.line}: {raw.instance_type} has empty accelerator fields; "
                                 f"GPU taken from the documented size table ({size.count:g} x {size.gpu})")
            elif abs(count - size.count) > 1e-9:
                col.notes.append(f"line {raw.line}: {raw.instance_type} says {count:g} GPUs; the documented size "
                                 f"has {size.count:g} ({size.gpu}); using {size.count:g}")
            mem = GPU_MEMORY_MIB.get(size.gpu)
            if mem is None:
                col.skip(raw, f"unknown_gpu_memory: no per-GPU memory known for {size.gpu}")
                return None
            return size.gpu, float(size.count), float(mem)
    if not name or count is None:
        col.skip(raw, "unknown_gpu: empty AcceleratorName/AcceleratorCount and the size is not in the documented "
                      "size table")
        return None
    mem = _gpu_info_memory_mib(raw.gpu_info)
    gpu = canonical_gpu(name, memory_mib=mem, provider=provider, instance_type=raw.instance_type)
    if gpu is None:
        col.skip(raw, f"unknown_gpu: '{name}' is not a canonical GPU name")
        return None
    if count <= 0:
        col.skip(raw, f"no_gpu: AcceleratorCount {count}")
        return None
    from providers._input import MAX_GPU_COUNT

    if not count <= MAX_GPU_COUNT:
        col.skip(raw, f"bad_gpu_count: AcceleratorCount {count:g} is not in (0, {MAX_GPU_COUNT:g}]")
        return None
    if mem is None:
        mem = GPU_MEMORY_MIB.get(gpu)
        if mem is None:
            col.skip(raw, f"unknown_gpu_memory: GpuInfo is empty and no per-GPU memory is known for {gpu}")
            return None
    return gpu, float(count), float(mem)


def _parse_flat(provider: str, rows: list[_Raw], as_of: str, source: str, col: _Collector) -> list[dict]:
    has_zone = provider in ("aws",)
    rows = _dedupe(rows, key=lambda r: (r.instance_type, r.region, r.zone), col=col,
                   label=lambda r: f"{r.instance_type}/{r.region}" + (f"/{r.zone}" if r.zone else ""))
    od_cands: list[tuple[_Raw, dict]] = []
    spot_rows: list[dict] = []
    for raw in rows:
        if not raw.instance_type:
            col.skip(raw, "not_a_gpu_row: empty InstanceType")
            continue
        gpu = _resolve_gpu(provider, raw, col)
        if gpu is None:
            continue
        name, count, mem = gpu
        base = _base(provider, raw, raw.instance_type, name, count, mem, raw.vcpus, raw.memory_gib, as_of, source)
        od_ok = _price_check(raw, raw.price, "Price (on-demand)", col)
        if od_ok:
            od_cands.append((raw, hourly_row("on_demand", raw.price, **base)))
        if provider == "lambda":
            if raw.spot is not None:
                col.skip(raw, "not_a_gpu_row: Lambda has no spot market; SpotPrice ignored")
            continue
        if _spot_check(raw, raw.spot, raw.price if od_ok else None, provider, col):
            zone = raw.zone if has_zone else ""
            spot_rows.append(hourly_row("spot", raw.spot, **{**base, "zone": zone}))
    return _collapse_on_demand(od_cands, col) + spot_rows


#: The GCP Billing Catalog's per-GPU SKU prices that are NOT on-demand (Flex-start/DWS, Calendar mode, commitments)
#: and the on-demand ones, per canonical GPU: ``pricing_cache/data/inputs/gcp_gpu_sku_prices.csv`` (a Cloud Billing
#: Catalog dump, effectiveTime 2025-06-16; PROVENANCE.md). Read once, on first use.
_GCP_SKUS: dict[str, dict[str, list[float]]] | None = None
GCP_SKU_FILE = "gcp_gpu_sku_prices.csv"


def _gcp_skus() -> dict[str, dict[str, list[float]]]:
    global _GCP_SKUS
    if _GCP_SKUS is None:
        import csv as _csv
        from pathlib import Path as _Path

        out: dict[str, dict[str, list[float]]] = {}
        # pricing_cache/data/inputs (build_snapshot.INPUTS_DIR), read without importing the build (providers stay
        # below pricing_cache)
        path = _Path(__file__).resolve().parent.parent / "pricing_cache" / "data" / "inputs" / GCP_SKU_FILE
        if path.is_file():
            with open(path, newline="", encoding="utf-8") as fh:
                for r in _csv.DictReader(fh):
                    gpu = r["gpu_model"].split(" ", 1)[0]
                    out.setdefault(gpu, {}).setdefault(r["pricing"], []).append(float(r["usd_per_gpu_hour"]))
        _GCP_SKUS = out
    return _GCP_SKUS


def gcp_non_on_demand_sku(gpu: str, usd_per_gpu_hour: float, tol: float = 5e-6) -> str | None:
    """The kind of GCP GPU SKU (``dws_flex``, ``dws_calendar_reservation``, ``cud_1y``...) whose per-GPU price equals
    ``usd_per_gpu_hour`` when no on-demand SKU of that GPU has that price; None otherwise (an on-demand price, or a
    GPU the SKU table does not list). The SkyPilot GCP fetcher takes the first SKU whose description CONTAINS "H100
    80GB GPU" / "A100 80GB GPU", which is the DWS (Flex-start) SKU: a3-highgpu-8g us-central1 priced 43.07 USD/h for
    a list price of 88.49 (shared/data/prices/README.md (a); skypilot-org/skypilot
    sky/catalog/data_fetchers/fetch_gcp.py ``get_gpu_df``@21fd5541)."""
    skus = _gcp_skus().get(gpu)
    if not skus:
        return None
    if any(abs(v - usd_per_gpu_hour) <= tol for v in skus.get("on_demand", [])):
        return None
    for kind in sorted(k for k in skus if k != "on_demand"):
        if any(abs(v - usd_per_gpu_hour) <= tol for v in skus[kind]):
            return kind
    return None


def _parse_gcp(rows: list[_Raw], as_of: str, source: str, col: _Collector) -> list[dict]:
    hosts = [r for r in rows if r.instance_type]
    accs = [r for r in rows if not r.instance_type]
    acc_index: dict[tuple[str, float, str, str], _Raw] = {}
    usable_accs = []
    for r in accs:
        if r.acc_name.lower().startswith("tpu"):
            if r.price is not None and abs(r.price - 700.0) < 1e-9:
                col.skip(r, "placeholder_price: TPU row priced 700.0 (SkyPilot placeholder)", instance_type=r.acc_name)
            else:
                col.skip(r, "not_a_gpu_row: TPU accelerator row", instance_type=r.acc_name)
            continue
        if not r.acc_name or r.acc_count is None:
            col.skip(r, "not_a_gpu_row: empty InstanceType and AcceleratorName")
            continue
        usable_accs.append(r)
    usable_accs = _dedupe(usable_accs, key=lambda r: (r.acc_name, r.acc_count, r.region, r.zone), col=col,
                          label=lambda r: f"{r.acc_name} x{r.acc_count:g}/{r.region}/{r.zone}")
    for r in usable_accs:
        acc_index[(r.acc_name, float(r.acc_count), r.region, r.zone)] = r
    used: set[int] = set()
    hosts = _dedupe(hosts, key=lambda r: (r.instance_type, r.region, r.zone), col=col,
                    label=lambda r: f"{r.instance_type}/{r.region}/{r.zone}")
    od_cands: list[tuple[_Raw, dict]] = []
    spot_rows: list[dict] = []
    for h in hosts:
        family_key = h.instance_type[:-len("-nolssd")] if h.instance_type.endswith("-nolssd") else h.instance_type
        spec = GCP_MACHINE_GPUS.get(family_key)
        if spec is None:
            col.skip(h, "unknown_gpu: machine type not in the documented GCP machine-type table (GCP_MACHINE_GPUS)")
            continue
        acc_name, n = spec
        acc = acc_index.get((acc_name, float(n), h.region, h.zone))
        if acc is None:
            col.skip(h, f"no_accelerator_row: no {acc_name} x{n} accelerator row in {h.zone}; host price alone "
                        "(vCPU + RAM) is not an instance price")
            continue
        used.add(acc.line)
        mem = _gpu_info_memory_mib(acc.gpu_info)
        gpu = canonical_gpu(acc_name, memory_mib=mem, provider="gcp", instance_type=h.instance_type)
        if gpu is None:
            col.skip(h, f"unknown_gpu: '{acc_name}' is not a canonical GPU name")
            continue
        if mem is None:
            mem = GPU_MEMORY_MIB.get(gpu)
        if mem is None:
            col.skip(h, f"unknown_gpu_memory: no per-GPU memory known for {gpu}")
            continue
        base = _base("gcp", h, h.instance_type, gpu, n, mem, h.vcpus, h.memory_gib, as_of, source)
        od_ok = (_price_check(h, h.price, "Price (on-demand, host vCPU+RAM)", col)
                 and _price_check(h, acc.price, f"Price (on-demand) of accelerator line {acc.line}", col))
        sku = gcp_non_on_demand_sku(gpu, acc.price / n) if od_ok else None
        if sku:
            col.skip(h, f"flex_start_sku_as_on_demand: accelerator line {acc.line} prices one {gpu} at "
                        f"{acc.price / n:.6g} USD/h, the {sku} SKU, not on-demand (the catalog fetcher matched the "
                        "GPU SKU by substring); no on-demand row")
        od = round(h.price + acc.price, 6) if od_ok and not sku else None
        if od is not None:
            od_cands.append((h, hourly_row("on_demand", od, **base)))
        # spot = host spot + accelerator spot, each checked against its own on-demand part
        if not (_price_check(h, h.spot, "SpotPrice (host)", col)
                and _price_check(h, acc.spot, f"SpotPrice of accelerator line {acc.line}", col)):
            continue
        if od is None and not sku:
            col.skip(h, "unverifiable_spot: the on-demand price is unknown, so the spot price cannot be checked")
            continue
        if h.spot >= h.price:
            col.skip(h, f"placeholder_spot: host SpotPrice {h.spot} >= host on-demand {h.price}")
            continue
        if acc.spot >= acc.price:
            col.skip(h, f"placeholder_spot: accelerator line {acc.line} SpotPrice {acc.spot} >= its on-demand "
                        f"{acc.price}")
            continue
        spot = round(h.spot + acc.spot, 6)
        if od is not None and not _spot_check(h, spot, od, "gcp", col, detail="composed SpotPrice"):
            continue  # (without an on-demand row, each part was checked against its own on-demand part above)
        spot_rows.append(hourly_row("spot", spot, **{**base, "zone": h.zone}))
    for r in usable_accs:
        if r.line not in used:
            col.skip(r, f"no_host_row: no host machine type in this file carries {r.acc_name} x{r.acc_count:g} in "
                        f"{r.zone} (T4/V100/P100/P4 attach to N1 machines, whose prices are not in the catalog)",
                     instance_type=f"{r.acc_name} x{r.acc_count:g}")
    return _collapse_on_demand(od_cands, col) + spot_rows


def parse_skypilot_csv(text_or_path: "str | Path", provider: str, as_of: str, source: str, *,
                       exclude_instance_types: Collection[str] = (), strict: bool = False) -> ParseResult:
    """Normalize one SkyPilot ``vms.csv`` (AWS, Azure, GCP or Lambda) into offers.

    Args:
        text_or_path: the CSV text, or a ``Path``/path string of the file.
        provider: ``aws``, ``azure``, ``gcp`` or ``lambda`` (the headers differ; see the module docstring).
        as_of: ISO date the prices were valid (written to every row).
        source: where the file came from (written to every row), e.g. ``skypilot-catalog:catalogs/v8/aws/vms.csv@00148f2a``.
        exclude_instance_types: instance types to leave out entirely (neither offers nor report), used to take
            from a second file only the types the first lacks.
        strict: raise ``PriceDataError`` on conflicting prices instead of reporting them.

    Returns:
        ParseResult: ``offers`` (OFFER_COLUMNS / OFFER_DTYPES, USD; on-demand per region, spot per zone),
        ``skipped`` (1-based lines, header = line 1, with reason codes), ``notes`` (table corrections).

    Raises:
        InputError: the text is not a SkyPilot vms.csv or the provider is unknown.
        PriceDataError: ``strict`` and conflicting prices, or the uniqueness invariant fails.
    """
    provider = str(provider).lower()
    if provider not in PROVIDERS:
        raise InputError("provider", f"unknown SkyPilot catalog provider '{provider}'", accepted=", ".join(PROVIDERS))
    text, name = read_text(text_or_path)
    _, rows = _read_rows(text, "the SkyPilot catalog" if name == "<text>" else name)
    excluded = set(exclude_instance_types)
    if excluded:
        rows = [r for r in rows if r.instance_type not in excluded]
    col = _Collector(source, strict)
    if provider == "gcp":
        out = _parse_gcp(rows, as_of, source, col)
    else:
        out = _parse_flat(provider, rows, as_of, source, col)
    df = offers_frame(out)
    check_unique(df, f"{source} ({provider})")
    from providers._input import check_offer_values

    df, bad = check_offer_values(df, source)
    col.skipped.extend(bad)
    col.skipped.sort(key=lambda s: (s.line, s.reason))
    return ParseResult(offers=df, skipped=col.skipped, notes=col.notes)
