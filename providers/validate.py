"""Validation every offer passes before gpuopt uses it: the snapshot build, ``prices import`` and the live refresh
all call :func:`validate_offers` (issue 9, point 2), so a fault found once is refused everywhere.

Each rule rejects a row with a reason code (the part before the first ``:``, counted by ``gpuopt prices status``
and listed in ``skipped.csv``) and a detail naming the values:

=============================  ===================================================================================
``bad_price``                  ``usd_per_hour`` not finite, <= 0, or outside [PRICE_PER_GPU_HOUR_MIN,
                               PRICE_PER_GPU_HOUR_MAX] per GPU-hour; ``upfront_usd`` or
                               ``recurring_usd_per_hour`` not finite or < 0 (``inf``, ``1e308`` and ``1e-300``
                               are prices no cloud quotes)
``bad_gpu_count``              ``gpu_count`` not finite, <= 0 or above MAX_GPUS_PER_INSTANCE
``gpu_memory_mismatch``        per-GPU memory more than MEMORY_TOLERANCE away from the GPU's datasheet and not
                               the instance total either (an instance total is divided and kept, with a note)
``spot_not_below_on_demand``   a spot rate at or above the on-demand rate of the same type and region (a
                               placeholder, as the SkyPilot catalogs carry)
``commitment_not_below_on_demand``  a reservation, savings-plan rate or capacity block at or above the
                               on-demand rate (a term total read as hourly: PRICE_FAULTS BUG-01)
``longer_term_not_cheaper``    a 3-year reservation (or savings-plan rate) whose effective rate is not below the
                               1-year one of the same type, region, payment and offering class
``not_sold_on_demand``         an on-demand row for a shape the provider does not sell on demand
                               (:data:`NOT_SOLD_ON_DEMAND`, with sources)
``not_sold_as``                a commitment (or other option) row for a shape sold only as spot or Flex-start
                               (:data:`SOLD_ONLY_AS`)
``bad_tier``                   ``tier`` neither one of TIERS nor "" (unknown)
``tier_not_documented``        a ``tier`` other than the one the provider's own words give it
                               (``providers.facts.tier_fact``: an AWS row called ``marketplace``, a RunPod
                               Community Cloud row called ``neocloud``); a provider or RunPod product without a
                               documented tier keeps the tier it is given
=============================  ===================================================================================

The bounds are wide on purpose: they catch unit faults and sentinels, not unusual prices.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.records import (CANONICAL_GPUS, RESERVED_PRICING, SAVINGS_PLAN_TERM_HOURS, TIERS, WINDOW_PRICING,
                                   SkippedRow)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Lowest believable price of one GPU-hour: 0.01 USD. The cheapest GPU-hours in the shipped data are fractions
#: of an L4 on AWS g6f and spot T4s at about 0.1 USD (shared/data/catalogs); a hundredth of that is a unit fault.
PRICE_PER_GPU_HOUR_MIN = 0.01
#: Highest believable price of one GPU-hour: 50 USD, about 3.5x the dearest list price in the shared data (AWS
#: p6-b200.48xlarge on demand, 113.9328 USD/h for 8 B200 = 14.24 USD per GPU-hour, AWS Price List 2026-07-28,
#: shared/data/prices/README.md source 7).
PRICE_PER_GPU_HOUR_MAX = 50.0
#: Most GPUs one instance of the clouds has: 16 (GCP a2-megagpu-16g, AWS p4/p5 have 8; Azure ND 8).
MAX_GPUS_PER_INSTANCE = 16.0
#: How far a row's per-GPU memory may be from the datasheet before it is refused: 15 %. The clouds report GiB
#: (or MiB) of what the vendors sell as GB (AWS L4: 22,888 MiB for a 24 GB board, -7 %; H100 81,559 MiB for 80 GB).
MEMORY_TOLERANCE = 0.15

#: Shapes a provider does not sell on demand, with the source of each (never priced on-demand, issue 9 point 2):
#: (provider, regular expression on the instance type, source).
NOT_SOLD_ON_DEMAND: tuple[tuple[str, str, str], ...] = (
    ("gcp", r"a3-highgpu-[124]g", "Google Cloud docs 'Accelerator-optimized machines: consumption option "
     "availability by machine type' (a3-highgpu-1g/2g/4g: Spot and Flex-start only), as filtered by "
     "dstackai/gpuhunt providers/gcp.py@35841515 and noted by tgarg01/silybench-data (2026-09-26)"),
    ("gcp", r"a3-ultragpu-.*", "Google Cloud docs 'About reservation-bound VMs' and gpuhunt providers/gcp.py@35841515: "
     "A3 Ultra is provisioned by reservation, Flex-start or Spot, not on demand"),
    ("gcp", r"a4x?-.*", "Google Cloud docs 'About reservation-bound VMs' and gpuhunt providers/gcp.py@35841515: A4 "
     "and A4X are provisioned by reservation, Flex-start or Spot, not on demand"),
)


#: Shapes sold ONLY through the listed pricing options (no on-demand and no commitment either), with sources:
#: (provider, regular expression on the instance type, pricing options sold, source).
SOLD_ONLY_AS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("gcp", r"a3-highgpu-[124]g", ("spot", "flex_start"), NOT_SOLD_ON_DEMAND[0][2]),
)


def not_sold_on_demand(provider: str, instance_type: str) -> str | None:
    """The source saying ``provider`` does not sell ``instance_type`` on demand, or None when it does (names
    compared in lower case)."""
    itype = str(instance_type).lower()
    for prov, pattern, source in NOT_SOLD_ON_DEMAND:
        if prov == str(provider).lower() and re.fullmatch(pattern, itype):
            return source
    return None


def not_sold_as(provider: str, instance_type: str, pricing: str) -> str | None:
    """Why ``provider`` does not sell ``instance_type`` under ``pricing`` (a shape sold only as spot or Flex-start,
    :data:`SOLD_ONLY_AS`: a commitment price computed from SKUs, as the GCP calculator lists for a3-highgpu-1g, is
    not an offer), or None."""
    itype = str(instance_type).lower()
    for prov, pattern, sold, source in SOLD_ONLY_AS:
        if prov == str(provider).lower() and re.fullmatch(pattern, itype) and pricing not in sold:
            return f"{provider} sells {instance_type} only as {' or '.join(sold)} ({source})"
    return None


@dataclass
class Validated:
    """What :func:`validate_offers` returns: the rows kept (a new frame), the rows refused and notes on rows kept
    after a documented correction (memory given as the instance total, divided by the GPU count)."""

    offers: "pd.DataFrame"
    skipped: list[SkippedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the provider of each skipped row (SkippedRow has none)
    providers: list[str] = field(default_factory=list)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.skipped:
            code = s.reason.split(":", 1)[0]
            out[code] = out.get(code, 0) + 1
        return dict(sorted(out.items()))


def _datasheet_memory() -> dict[str, float]:
    """GiB-as-sold of one GPU per canonical GPU name, from optimizer/data/gpu_specs.csv (``memory_gb``)."""
    from optimizer.sizing.specs import load_gpu

    out = {}
    for name, row in CANONICAL_GPUS.items():
        if row is None:
            continue
        try:
            out[name] = float(load_gpu(row).memory_gib)
        except Exception:  # noqa: BLE001 - a spec row missing is "unknown", checked by the specs' own tests
            continue
    return out


def validate_offers(offers: "pd.DataFrame", source: str = "") -> Validated:
    """Check every row of an offer frame (OFFER_COLUMNS) against the rules of this module.

    Args:
        offers: offers of any provider(s); not modified.
        source: what the rows came from, for the skipped rows whose own ``source`` is empty.

    Returns:
        :class:`Validated`: the rows that pass (same columns and dtypes, order kept; ``gpu_memory_gib`` divided
        where the row gave the instance total), the refused rows as ``SkippedRow`` (line 0: frames have no lines)
        and notes on corrected rows.
    """
    import numpy as np

    n = len(offers)
    if n == 0:
        return Validated(offers.copy())
    df = offers.reset_index(drop=True).copy()
    prov = df["provider"].astype(str).to_numpy(dtype=object)
    itype = df["instance_type"].astype(str).to_numpy(dtype=object)
    region = df["region"].astype(str).to_numpy(dtype=object)
    zone = df["zone"].astype(object).where(df["zone"].notna(), "").astype(str).to_numpy(dtype=object)
    pricing = df["pricing"].astype(str).to_numpy(dtype=object)
    payment = df["payment"].astype(object).where(df["payment"].notna(), "").astype(str).to_numpy(dtype=object)
    oclass = df["offering_class"].astype(object).where(df["offering_class"].notna(), "").astype(str)\
        .to_numpy(dtype=object)
    src = df["source"].astype(object).where(df["source"].notna(), "").astype(str).to_numpy(dtype=object)

    def num(col: str) -> np.ndarray:
        return df[col].astype(float).to_numpy(dtype=float, na_value=np.nan)

    price, gcount, gmem = num("usd_per_hour"), num("gpu_count"), num("gpu_memory_gib").copy()
    upfront, recurring = num("upfront_usd"), num("recurring_usd_per_hour")
    why: list[str | None] = [None] * n
    notes: list[str] = []

    def refuse(i: int, reason: str) -> None:
        if why[i] is None:
            why[i] = reason

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        per_gpu = price / gcount
    for i in range(n):
        p, g = price[i], gcount[i]
        if not (math.isfinite(g) and 0 < g <= MAX_GPUS_PER_INSTANCE):
            refuse(i, f"bad_gpu_count: gpu_count {g} is not in (0, {MAX_GPUS_PER_INSTANCE:g}]")
            continue
        if not (math.isfinite(p) and p > 0):
            refuse(i, f"bad_price: usd_per_hour {p} is not a finite positive price")
            continue
        if not PRICE_PER_GPU_HOUR_MIN <= per_gpu[i] <= PRICE_PER_GPU_HOUR_MAX:
            refuse(i, f"bad_price: {per_gpu[i]:.6g} USD per GPU-hour ({p:g} USD/h for {g:g} GPUs) is outside "
                      f"[{PRICE_PER_GPU_HOUR_MIN:g}, {PRICE_PER_GPU_HOUR_MAX:g}]")
            continue
        for name, v in (("upfront_usd", upfront[i]), ("recurring_usd_per_hour", recurring[i])):
            if not (math.isfinite(v) and v >= 0):
                refuse(i, f"bad_price: {name} {v} is not a finite price >= 0")
                break
    # per-GPU memory against the datasheet (the instance total divided and kept)
    sheet = _datasheet_memory()
    gpu = df["gpu_model"].astype(str).to_numpy(dtype=object)
    for i in range(n):
        if why[i] is not None:
            continue
        ref = sheet.get(gpu[i])
        m = gmem[i]
        if ref is None or not math.isfinite(m):
            continue
        if abs(m - ref) <= MEMORY_TOLERANCE * ref:
            continue
        g = gcount[i]
        if g >= 1 and abs(m / g - ref) <= MEMORY_TOLERANCE * ref:
            gmem[i] = m / g
            notes.append(f"{prov[i]} {itype[i]} {region[i]}: gpu_memory_gib {m:g} is the instance total of {g:g} "
                         f"{gpu[i]}; divided to {m / g:g} per GPU (datasheet {ref:g} GB)")
            continue
        refuse(i, f"gpu_memory_mismatch: {m:g} GiB per {gpu[i]} is neither the datasheet's {ref:g} GB nor "
                  f"{g:g} x it (+-{MEMORY_TOLERANCE:.0%})")
    df["gpu_memory_gib"] = gmem
    # rows against the on-demand rate of their type and region
    od: dict[tuple, float] = {}
    for i in range(n):
        if pricing[i] == "on_demand" and why[i] is None:
            od[(prov[i], region[i], itype[i])] = price[i]
    for i in range(n):
        if why[i] is not None:
            continue
        key = (prov[i], region[i], itype[i])
        only = not_sold_as(prov[i], itype[i], pricing[i]) if pricing[i] != "on_demand" else None
        if only:
            refuse(i, f"not_sold_as: {only}")
            continue
        if pricing[i] == "on_demand":
            src_ = not_sold_on_demand(prov[i], itype[i])
            if src_:
                refuse(i, f"not_sold_on_demand: {prov[i]} does not sell {itype[i]} on demand ({src_})")
            continue
        base = od.get(key)
        if base is None:
            continue
        if pricing[i] == "spot" and price[i] >= base:
            refuse(i, f"spot_not_below_on_demand: spot {price[i]:g} >= on-demand {base:g} (a placeholder)")
        elif (pricing[i] in RESERVED_PRICING or pricing[i] in WINDOW_PRICING or pricing[i] in SAVINGS_PLAN_TERM_HOURS)\
                and price[i] >= base:
            refuse(i, f"commitment_not_below_on_demand: {pricing[i]} {price[i]:g} USD/h >= on-demand {base:g} "
                      "(a term total read as hourly?)")
    longer = {"reserved_3y": "reserved_1y", "savings_plan_3y": "savings_plan_1y"}
    one_year: dict[tuple, float] = {}
    for i in range(n):
        if why[i] is None and pricing[i] in longer.values():
            one_year[(pricing[i], prov[i], region[i], zone[i], itype[i], payment[i], oclass[i])] = price[i]
    for i in range(n):
        if why[i] is None and pricing[i] in longer:
            y1 = one_year.get((longer[pricing[i]], prov[i], region[i], zone[i], itype[i], payment[i], oclass[i]))
            if y1 is not None and price[i] >= y1:
                refuse(i, f"longer_term_not_cheaper: {pricing[i]} {price[i]:g} USD/h >= {longer[pricing[i]]} {y1:g} "
                          f"({payment[i]}, {oclass[i] or 'one class'})")
    _check_tiers(df, prov, itype, why)
    keep = np.array([w is None for w in why])
    skipped = [SkippedRow(source=src[i] or source, line=0, instance_type=itype[i], region=region[i], reason=why[i])
               for i in range(n) if why[i] is not None]
    out = df[keep].reset_index(drop=True)
    return Validated(out.astype(offers.dtypes.to_dict()), skipped, notes,
                     [prov[i] for i in range(n) if why[i] is not None])


def _check_tiers(df: "pd.DataFrame", prov, itype, why: list[str | None]) -> None:
    """Refuse (into ``why``) the rows whose ``tier`` is not one of TIERS or "", or is not the documented one
    (``bad_tier``, ``tier_not_documented``; see the module docstring). A frame without the column passes: its tiers
    are filled from the same facts when it becomes an offer frame."""
    if "tier" not in df.columns:
        return
    from providers.facts import tier_fact

    col = df["tier"].astype(object)
    tier = col.where(col.notna(), "").astype(str).str.strip().to_numpy(dtype=object)
    documented: dict[tuple[str, str], str] = {}
    for i, t in enumerate(tier):
        if why[i] is not None or not t:
            continue
        if t not in TIERS:
            why[i] = f"bad_tier: tier '{t}' is not one of {', '.join(TIERS)} (or empty: unknown)"
            continue
        key = (str(prov[i]).strip().lower(), str(itype[i]))
        if key not in documented:
            fact = tier_fact(*key)
            documented[key] = fact.tier if fact is not None else ""
        if documented[key] and documented[key] != t:
            why[i] = (f"tier_not_documented: {prov[i]} {itype[i]} is {documented[key]} in the provider's own words "
                      f"(providers/facts.py), not {t}")


def skipped_dicts(result: Validated) -> list[dict[str, Any]]:
    """The skipped rows as dicts with their provider, the shape of skipped.csv."""
    return [{"provider": p, **s.__dict__} for p, s in zip(result.providers, result.skipped)]
