"""Parsers of the published price files the shipped snapshot is built from (``pricing_cache/data/inputs/``, copied
from the project's shared data ``prices/``; every source, date and caveat in ``inputs/PROVENANCE.md``):

* ``gcp_list_prices.csv`` — GCP whole-instance list prices per machine type and region (Cyclenerd
  google-cloud-pricing-cost-calculator ``pricing.yml`` of 2026-07-30, summed from Cloud Billing Catalog SKUs):
  ``on_demand`` (only where ``sold_on_demand`` is ``yes``), ``spot``, ``cud_1y``/``cud_3y`` -> ``reserved_1y``/
  ``reserved_3y`` (resource-based CUDs, paid monthly: payment ``no_upfront``; monthly total / 730 in the file);
* ``aws_commitments.csv`` — AWS reserved instances (ec2instances.info data of 2025-11-30: effective hourly rates,
  Linux, shared tenancy, Standard class, Convertible only where AWS sells no Standard term) and EC2 Capacity Blocks
  for ML (AWS pricing page as scraped 2024-12-31, 2026-01-31, 2026-07-22; the newest per type and region is kept);
* ``azure_prices.csv`` — Azure Retail Prices API dump of 2025-06-21 (Linux pay-as-you-go, Spot, 1- and 3-year
  reservations as term total / hours) for 9 A100/H100/H200 sizes in 18 regions;
* ``other_clouds.csv`` — Lambda's instance page transcribed 2026-09-20 (per GPU-hour x count).

Every function returns price rows (dicts: provider, region, zone, instance_type, pricing, payment,
offering_class, upfront_usd, recurring_usd_per_hour, usd_per_hour, term_hours, currency, source, as_of) WITHOUT the
hardware columns: :func:`with_hardware` joins those from the catalog rows of the same provider and instance type.
No price is computed here but unit conversions (a partial-upfront AWS rate split into upfront and recurring with
the share measured on a real Pricing API payload, ``providers.ec2instances.PARTIAL_UPFRONT_SHARE``).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Iterable

from gpuopt.kernel.records import TERM_HOURS, SkippedRow

#: gcp_list_prices.csv pricing -> offer pricing
_GCP_PRICING = {"on_demand": "on_demand", "spot": "spot", "cud_1y": "reserved_1y", "cud_3y": "reserved_3y"}


#: An AWS Local Zone name: <parent region>-<metro>-<n><letter> (us-east-1-atl-2a, us-west-2-lax-1a).
_LOCAL_ZONE = __import__("re").compile(r"([a-z]{2}(?:-gov)?-[a-z]+-\d+)-[a-z]+-\d+[a-z]")


def _rows(path: Path) -> Iterable[tuple[int, dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        for i, r in enumerate(csv.DictReader(fh), start=2):
            yield i, {k: (v or "").strip() for k, v in r.items()}


def _short(source: str) -> str:
    """A source without its parenthesised gloss, for the ``source`` column (the gloss is in PROVENANCE.md)."""
    return source.split(" (", 1)[0].strip()


def _hourly(pricing: str, price: float) -> dict[str, Any]:
    return {"pricing": pricing, "payment": "", "offering_class": "", "upfront_usd": 0.0,
            "recurring_usd_per_hour": price, "usd_per_hour": price, "term_hours": 0.0}


def gcp_list_prices(path: Path) -> tuple[list[dict[str, Any]], list[SkippedRow]]:
    """Rows of ``gcp_list_prices.csv``; on-demand rows of shapes not sold on demand are skipped
    (``not_sold_on_demand``, the file's own ``sold_on_demand`` column)."""
    out, skipped = [], []
    for line, r in _rows(path):
        pricing = _GCP_PRICING.get(r["pricing"])
        if pricing is None:
            skipped.append(SkippedRow(path.name, line, r["machine_type"], r["region"],
                                      f"unknown_pricing: {r['pricing']!r}"))
            continue
        price = float(r["usd_per_hour"]) if r["usd_per_hour"] else None
        if price is None:
            skipped.append(SkippedRow(path.name, line, r["machine_type"], r["region"], "unknown_price: empty"))
            continue
        if pricing == "on_demand" and not r["sold_on_demand"].startswith("yes"):
            skipped.append(SkippedRow(path.name, line, r["machine_type"], r["region"],
                                      f"not_sold_on_demand: {r['sold_on_demand']} (the file's sold_on_demand)"))
            continue
        base = {"provider": "gcp", "region": r["region"], "zone": "", "instance_type": r["machine_type"],
                "currency": "USD", "source": _short(r["source"]), "as_of": r["as_of"]}
        if pricing in TERM_HOURS:
            out.append({**base, "pricing": pricing, "payment": "no_upfront", "offering_class": "",
                        "upfront_usd": 0.0, "recurring_usd_per_hour": price, "usd_per_hour": price,
                        "term_hours": TERM_HOURS[pricing]})
        else:
            out.append({**base, **_hourly(pricing, price)})
    return out, skipped


def aws_commitments(path: Path) -> tuple[list[dict[str, Any]], list[SkippedRow], list[dict[str, Any]]]:
    """(reserved and newest capacity-block rows, skipped rows, older capacity-block rows).

    Reserved rows: ``usd_per_hour`` is the quoted effective rate; no_upfront -> upfront 0; all_upfront -> upfront
    = rate x term hours; partial_upfront -> split by the measured share (the row's source says so). A capacity
    block in a Local Zone (``us-east-1-atl-2a``) is kept in its parent region with the zone named.
    """
    from providers.ec2instances import PARTIAL_SPLIT_CITE, PARTIAL_UPFRONT_SHARE, split_reserved

    out, skipped, blocks = [], [], {}
    for line, r in _rows(path):
        price = float(r["usd_per_hour"]) if r["usd_per_hour"] else None
        if price is None:
            skipped.append(SkippedRow(path.name, line, r["instance_type"], r["region"], "unknown_price: empty"))
            continue
        source = _short(r["source"])
        region, zone = r["region"], ""
        if r["pricing"] == "capacity_block":
            lz = _LOCAL_ZONE.fullmatch(region)
            if lz:  # a Local Zone name: us-east-1-atl-2a (GovCloud us-gov-east-1 is a region)
                region, zone = lz.group(1), r["region"]
            row = {"provider": "aws", "region": region, "zone": zone, "instance_type": r["instance_type"],
                   "currency": "USD", "source": source, "as_of": r["as_of"], **_hourly("capacity_block", price)}
            key = (region, zone, r["instance_type"])
            blocks.setdefault(key, []).append(row)
            continue
        if r["pricing"] not in TERM_HOURS:
            skipped.append(SkippedRow(path.name, line, r["instance_type"], r["region"],
                                      f"unknown_pricing: {r['pricing']!r}"))
            continue
        hours = TERM_HOURS[r["pricing"]]
        years = 1 if r["pricing"] == "reserved_1y" else 3
        klass = r["offering_class"] or "standard"
        upfront, recurring = split_reserved(price, r["payment"], hours, PARTIAL_UPFRONT_SHARE[(years, klass)])
        if r["payment"] == "partial_upfront":
            source += f"; {PARTIAL_SPLIT_CITE}"
        out.append({"provider": "aws", "region": region, "zone": "", "instance_type": r["instance_type"],
                    "pricing": r["pricing"], "payment": r["payment"], "offering_class": klass,
                    "upfront_usd": upfront, "recurring_usd_per_hour": recurring, "usd_per_hour": price,
                    "term_hours": hours, "currency": "USD", "source": source, "as_of": r["as_of"]})
    older = []
    for key in sorted(blocks):
        rows = sorted(blocks[key], key=lambda x: x["as_of"])
        out.append(rows[-1])
        older.extend(rows[:-1])
    return out, skipped, older


def azure_prices(path: Path) -> tuple[list[dict[str, Any]], list[SkippedRow]]:
    """Rows of ``azure_prices.csv``. A reservation is sold paid all upfront or monthly at the same total
    ("monthly payment option at no extra cost", azure.microsoft.com/en-us/pricing/reserved-vm-instances), so each
    quoted term gives an ``all_upfront`` and a ``no_upfront`` (monthly) row of the same effective rate."""
    out, skipped = [], []
    for line, r in _rows(path):
        price = float(r["usd_per_hour"]) if r["usd_per_hour"] else None
        if price is None:
            skipped.append(SkippedRow(path.name, line, r["arm_sku_name"], r["region"], "unknown_price: empty"))
            continue
        base = {"provider": "azure", "region": r["region"], "zone": "", "instance_type": r["arm_sku_name"],
                "currency": "USD", "source": _short(r["source"]), "as_of": r["as_of"]}
        if r["pricing"] in TERM_HOURS:
            hours = TERM_HOURS[r["pricing"]]
            out.append({**base, "pricing": r["pricing"], "payment": "all_upfront", "offering_class": "",
                        "upfront_usd": round(price * hours, 2), "recurring_usd_per_hour": 0.0, "usd_per_hour": price,
                        "term_hours": hours})
            out.append({**base, "pricing": r["pricing"], "payment": "no_upfront", "offering_class": "",
                        "upfront_usd": 0.0, "recurring_usd_per_hour": price, "usd_per_hour": price,
                        "term_hours": hours, "source": base["source"] + "; monthly payment at the upfront price"})
        elif r["pricing"] in ("on_demand", "spot"):
            out.append({**base, **_hourly(r["pricing"], price)})
        else:
            skipped.append(SkippedRow(path.name, line, r["arm_sku_name"], r["region"],
                                      f"unknown_pricing: {r['pricing']!r}"))
    return out, skipped


def lambda_prices(path: Path, catalog_types: dict[tuple[str, float], "str | list[str]"],
                  region: str = "us-east-1") -> tuple[list[dict[str, Any]], list[SkippedRow]]:
    """Lambda rows of ``other_clouds.csv``, matched to the catalog's instance types by (GPU model, count).

    Args:
        catalog_types: (canonical GPU model, GPU count) -> the Lambda instance type(s) of the SkyPilot catalog
            with that many of that GPU (one quote prices each: ``gpu_8x_v100`` and ``gpu_8x_v100_n``).
        region: Lambda quotes one price for every region; the catalog lists it under us-east-1.
    """
    out, skipped = [], []
    for line, r in _rows(path):
        if r["provider"] != "lambda":
            continue
        gpu = _gpu_of(r["gpu_model"])
        count = float(r["gpu_count"])
        itypes = catalog_types.get((gpu, count)) if gpu else None
        if itypes and not isinstance(itypes, str):  # the board's form factor, as the product and the type name say
            pcie = "pcie" in r["product"].lower()
            itypes = [t for t in itypes if ("pcie" in t.lower()) == pcie]
        if not itypes:
            skipped.append(SkippedRow(path.name, line, r["product"], region,
                                      f"no_hardware_facts: no Lambda instance type with {count:g} x {gpu or r['gpu_model']}"
                                      " in the catalog to take vCPUs, memory and interconnect from"))
            continue
        price = float(r["usd_per_hour"])
        for itype in ([itypes] if isinstance(itypes, str) else sorted(itypes)):
            out.append({"provider": "lambda", "region": region, "zone": "", "instance_type": itype,
                        "currency": "USD", "source": _short(r["source"]), "as_of": r["as_of"],
                        **_hourly(r["pricing"], price)})
    return out, skipped


#: Clouds of ``other_clouds.csv`` besides Lambda, priced per instance from their pricing pages (the file's
#: README names each source). ``region`` is the price region the page states (CoreWeave prices North America);
#: RunPod and Nebius quote one price for all their regions: "global".
OTHER_CLOUDS: tuple[str, ...] = ("coreweave", "runpod", "nebius")
#: Rows of other_clouds.csv that are not a price one can buy at: Vast.ai's row is the median of a marketplace's
#: asks (silybench-data), not a list price.
NOT_LIST_PRICES: frozenset[str] = frozenset({"vast"})


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def other_cloud_prices(path: Path) -> tuple[list[dict[str, Any]], list[tuple[str, SkippedRow]]]:
    """CoreWeave, RunPod and Nebius rows of ``other_clouds.csv`` as offers, with their hardware from the product
    name and the GPU datasheet: ``instance_type`` the product's slug (``nvidia-hgx-h100``,
    ``h100-sxm-community-cloud``), the GPU count the page's, per-GPU memory the datasheet's
    (optimizer.sizing.specs.load_gpu), ``interconnect`` ``nvlink`` for an HGX board (NVIDIA HGX is the SXM
    baseboard whose GPUs NVLink/NVSwitch join: NVIDIA HGX platform datasheet) and for several SXM GPUs, else
    unknown (""); vCPUs and memory unknown (NaN, the pages do not give them); fabric unknown (""), so a training
    replica never spans two of these instances (an NVL72 node's GPUs are NVLink-joined within it; the 72-GPU
    domain across nodes is not modelled). A GPU with no datasheet row is listed and never planned, and refused
    when nothing gives its memory. Vast.ai's marketplace median is refused (:data:`NOT_LIST_PRICES`)."""
    from gpuopt.kernel.errors import InputError
    from optimizer.sizing.specs import load_gpu

    out, skipped = [], []
    for line, r in _rows(path):
        prov = r["provider"]
        if prov in NOT_LIST_PRICES:
            skipped.append((prov, SkippedRow(path.name, line, r["product"], r.get("region") or "",
                                             "not_a_list_price: a marketplace median, not a price one can buy at")))
            continue
        if prov not in OTHER_CLOUDS:
            continue
        gpu = _gpu_of(r["gpu_model"]) or r["gpu_model"]
        count = float(r["gpu_count"])
        try:
            mem = float(load_gpu(gpu).memory_gib)
        except InputError:  # no datasheet row (GH200): the page's memory; listed, never planned
            mem = _gpu_mem_of(r["gpu_model"])
        if mem is None:
            skipped.append((prov, SkippedRow(path.name, line, r["product"], r.get("region") or "",
                                             "no_hardware_facts: neither the page nor the GPU datasheet table gives "
                                             "the GPU memory")))
            continue
        product = r["product"]
        # an NVL72 rack's node: its GPUs are in the rack's 72-GPU NVLink domain (NVIDIA GB200 NVL72 page)
        nvlink = "hgx" in product.lower() or "nvl72" in product.lower() or ("sxm" in product.lower() and count > 1)
        try:  # a GPU the datasheet makes a PCIe card (L40S, L40: no NVLink) is PCIe-linked in any instance
            pcie = load_gpu(gpu).interconnect == "pcie"
        except InputError:
            pcie = False
        out.append({"provider": prov, "region": r.get("region") or "global", "zone": "",
                    "instance_type": _slug(product), "gpu_model": gpu, "gpu_count": count, "gpu_memory_gib": mem,
                    "vcpus": float("nan"), "memory_gib": float("nan"), "interconnect": "nvlink" if nvlink else "pcie" if pcie and count > 1 else "",
                    "currency": "USD", "source": _short(r["source"]), "as_of": r["as_of"],
                    **_hourly(r["pricing"], float(r["usd_per_hour"]))})
    return out, skipped


def _gpu_mem_of(name: str) -> float | None:
    """GiB of a ``-96GB`` suffix (GB as the page writes it, read as GiB like the catalogs' GPU memory)."""
    import re

    m = re.search(r"-(\d+)GB$", name)
    return float(m.group(1)) if m else None


def _gpu_of(name: str) -> str | None:
    """The canonical GPU of a name as the shared price files write it: ``B200-180GB``, ``RTX-A6000-48GB``,
    ``H100-PCIe-80GB`` (the memory suffix read as the board's memory; the form factor is the catalog's)."""
    import re

    from providers.gpu_names import canonical_gpu

    direct = canonical_gpu(name)
    if direct:
        return direct
    m = re.search(r"-(\d+)GB$", name)
    base = re.sub(r"-(\d+)GB$", "", name).replace("RTX-", "").replace("-PCIe", "")
    return canonical_gpu(base, memory_mib=int(m.group(1)) * 1024 if m else None)


HARDWARE = ("gpu_model", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "interconnect")


#: Hardware of sizes the price files price but the catalogs do not describe, from the provider's size table.
#: Standard_ND96isr_H200_v5: 96 vCPUs, 1,850 GB RAM, 8 GPUs (Azure AKS node sizes as published in
#: microsoft/aspire src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs@5bd693ae, "Standard_ND96isr_H200_v5 -- 96
#: vCPUs -- 1850 GB RAM -- 8 GPU(s)"); 8 x H200 141 GB on NVLink as the ND H200 v5 series is documented by
#: Microsoft Learn ("ND H200 v5 sizes series"); the GPU memory is the datasheet's 141 GB (gpu_specs.csv).
#: p5e.48xlarge: the SkyPilot catalog's own rows describe it (8 x H200, MemoryInfo 144,384 MiB = 141 GiB each,
#: 192 vCPUs, 2,048 GiB: inputs/aws_vms_v8_gpu_all_regions.csv) but price none on demand, so no catalog offer
#: carries the facts; its capacity blocks need them. NVLink as every AWS p5-family instance (providers/skypilot).
HARDWARE_FACTS: dict[tuple[str, str], dict[str, Any]] = {
    ("aws", "p5e.48xlarge"): {"gpu_model": "H200-141GB", "gpu_count": 8.0, "gpu_memory_gib": 141.0,
                              "vcpus": 192.0, "memory_gib": 2048.0, "interconnect": "nvlink"},
    ("azure", "Standard_ND96isr_H200_v5"): {"gpu_model": "H200-141GB", "gpu_count": 8.0, "gpu_memory_gib": 141.0,
                                            "vcpus": 96.0, "memory_gib": 1850.0, "interconnect": "nvlink"},
}


def with_hardware(rows: list[dict[str, Any]], catalog: "Any") -> tuple["Any", list[dict[str, Any]]]:
    """The rows as an offer frame, each with the hardware columns of the catalog's rows of the same provider and
    instance type (the catalogs describe the machines; the price files only price them), else of
    :data:`HARDWARE_FACTS`. A row whose type neither describes is skipped (``no_hardware_facts``; returned as a
    skipped.csv dict with its provider)."""
    from providers._common import offers_frame

    facts: dict[tuple[str, str], dict[str, Any]] = {}
    for r in catalog[["provider", "instance_type", *HARDWARE]].drop_duplicates(["provider", "instance_type"])\
            .to_dict("records"):
        facts[(str(r["provider"]), str(r["instance_type"]))] = {k: r[k] for k in HARDWARE}
    for k, v in HARDWARE_FACTS.items():
        facts.setdefault(k, v)
    out, skipped = [], []
    for r in rows:
        f = facts.get((r["provider"], r["instance_type"]))
        if f is None:
            skipped.append({"provider": r["provider"], **SkippedRow(
                r["source"], 0, r["instance_type"], r["region"],
                "no_hardware_facts: the catalogs do not describe this instance type").__dict__})
            continue
        out.append({**r, **f})
    return offers_frame(out), skipped
