"""Reserved 1y/3y offers for on-demand offers that lack a real reservation quote, from documented discount ratios.

No file in the SkyPilot catalogs holds a reserved or committed-use price, so the snapshot derives them:
``usd_per_hour = on-demand x ratio`` per (provider, term, payment), marked ``source = rule:<provider>-<term>-<payment>:
<short cite>`` (``gpuopt.kernel.records.is_estimated`` is then true) and ``as_of`` = the on-demand row's ``as_of``.

Ratios (reserved effective rate / on-demand rate):

* **AWS** - measured, not assumed: the median over p2/p3/g3 x regions of the real Linux Standard reserved rates in
  ec2instances.info ``instances.json`` of 2017-11-12 (:func:`aws_ratios_from_quotes`): 0.6974 / 0.6642 / 0.6509
  for 1y no / partial / all upfront and 0.5100 / 0.4733 / 0.4448 for 3y. (p3 alone gives the 0.682 / 0.650 / 0.637
  and 0.435 / 0.403 / 0.379 of PROVENANCE.md; p2 and g3 have smaller discounts, which raises the median.) Partial upfront rows are split
  into upfront + recurring with the share measured on the real Pricing API payload (``providers.ec2instances``).
  Where a real quote exists (ec2instances p2/p3/g3 in their regions) it is used instead of the rule, but only when
  the quote's on-demand rate equals the snapshot's on-demand rate for that (type, region); quoted rows keep
  ``source = ec2instances.info:2017-11-12`` and ``as_of = 2017-11-12``.
* **GCP** - committed use discounts are paid monthly, no upfront (Google: "Committed use discounts are simple and
  flexible, and require no upfront costs", https://cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts).
  Ratios 0.63 (1y) and 0.35 (3y), i.e. 37 % and 65 % off, measured on the accelerator-optimized A2 machine types
  in the Cloud Billing Catalog-derived price list of Cyclenerd/google-cloud-pricing-cost-calculator
  (``pricing.yml``, generated 2025-03-06, https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator):
  a2-highgpu-1g in us-central1 costs 2,681.57 USD/month on demand, 1,689.37 with a 1-year and 938.57 with a 3-year
  commitment (1689.37 / 2681.57 = 0.6300, 938.57 / 2681.57 = 0.3500; the same ratios hold in every region listed).
  The same ratios are applied to A3, A4 and G2 machine types: that is an assumption (their CUD rates were not
  checked). Google's own overview only says "up to 57% for most resources like machine types or GPUs" (older
  page) - the measured A2 figure is the most specific number found.
* **Azure** - reservations are paid all upfront or monthly, and "monthly payment option at no extra cost"
  (https://azure.microsoft.com/en-us/pricing/reserved-vm-instances/), so ``all_upfront`` and ``no_upfront``
  (monthly) get the same effective rate. No GPU-specific reservation percentage was found in the sources searched:
  the page's "up to 72 percent" is a 3-year M32ts (SUSE) example, not a GPU figure. We therefore ASSUME 0.65 (1y)
  and 0.45 (3y): no deeper than the measured GPU commitment ratios of AWS (median, all upfront: 0.651 / 0.445) and
  GCP (0.63 / 0.35), so that an estimated Azure commitment is never made to look better than the evidence allows.
  The rows say ``assumed`` in their source.
* **Lambda** - the data holds no reservation prices and Lambda sells reserved clusters only by quote: no reserved
  rows are derived.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuopt.kernel.errors import PriceDataError
from gpuopt.kernel.records import TERM_HOURS
from providers._common import check_unique, empty_offers, offers_frame
from providers.ec2instances import PARTIAL_SPLIT_CITE, PARTIAL_UPFRONT_SHARE, split_reserved

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass(frozen=True)
class Ratio:
    """Reserved effective hourly rate / on-demand rate, and where the number comes from (short, goes in ``source``)."""

    ratio: float
    cite: str


#: provider -> (pricing, payment) -> Ratio
Ratios = dict[str, dict[tuple[str, str], Ratio]]

GCP_CUD_CITE_URL = "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator"
GCP_RATIOS: dict[tuple[str, str], Ratio] = {
    ("reserved_1y", "no_upfront"): Ratio(0.63, "1y CUD of a2 = 0.63 x on-demand, pricing.yml 2025-03-06 of "
                                               "github.com/Cyclenerd/google-cloud-pricing-cost-calculator"),
    ("reserved_3y", "no_upfront"): Ratio(0.35, "3y CUD of a2 = 0.35 x on-demand, pricing.yml 2025-03-06 of "
                                               "github.com/Cyclenerd/google-cloud-pricing-cost-calculator"),
}

AZURE_RI_CITE_URL = "https://azure.microsoft.com/en-us/pricing/reserved-vm-instances/"
_AZ = "no GPU reservation % published (azure.microsoft.com/en-us/pricing/reserved-vm-instances)"
AZURE_RATIOS: dict[tuple[str, str], Ratio] = {
    ("reserved_1y", "no_upfront"): Ratio(0.65, f"ASSUMED 0.65, {_AZ}; monthly payment = upfront price"),
    ("reserved_1y", "all_upfront"): Ratio(0.65, f"ASSUMED 0.65, {_AZ}"),
    ("reserved_3y", "no_upfront"): Ratio(0.45, f"ASSUMED 0.45, {_AZ}; monthly payment = upfront price"),
    ("reserved_3y", "all_upfront"): Ratio(0.45, f"ASSUMED 0.45, {_AZ}"),
}

#: The payment options of reservations / committed use discounts each provider sells (provider -> (payments sold,
#: how the provider names them, source)). A payment missing here is not sold at all: no price is missing.
RESERVATION_PAYMENTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "aws": (("no_upfront", "partial_upfront", "all_upfront"), "no_upfront, partial_upfront and all_upfront",
            "https://aws.amazon.com/ec2/pricing/reserved-instances/pricing/ (No Upfront, Partial Upfront, All Upfront)"),
    "azure": (("no_upfront", "all_upfront"), "only no_upfront (monthly) and all_upfront",
              "Azure reservations are paid upfront or monthly: " + AZURE_RI_CITE_URL + " and "
              "https://learn.microsoft.com/azure/cost-management-billing/reservations/prepare-buy-reservation"),
    "gcp": (("no_upfront",), "only no_upfront: committed use discounts are billed monthly",
            "'Committed use discounts ... require no upfront costs', "
            "https://cloud.google.com/compute/docs/instances/signing-up-committed-use-discounts"),
    "lambda": ((), "no reservation at a published price (reserved clusters by quote only)",
               "this module's docstring (Lambda)"),
}


def payment_not_sold(provider: str, payment: str) -> str | None:
    """Why ``provider`` has no reservation price with ``payment`` because it does not sell that payment option,
    e.g. "azure sells no partial_upfront reservations (only no_upfront (monthly) and all_upfront)"; None when it
    sells it or the provider is not in :data:`RESERVATION_PAYMENTS` (then a missing price is just missing)."""
    entry = RESERVATION_PAYMENTS.get(str(provider).lower())
    if entry is None or payment in entry[0]:
        return None
    sold, said, _source = entry
    if not sold:
        return f"{provider} sells {said}"
    kind = "committed use discounts" if provider == "gcp" else "reservations"
    return f"{provider} sells no {payment} {kind} ({said})"


_TERM = {"reserved_1y": "1y", "reserved_3y": "3y"}


def aws_ratios_from_quotes(quotes: "pd.DataFrame", as_of: str = "2017-11-12") -> dict[tuple[str, str], Ratio]:
    """Median reserved/on-demand ratio per (term, payment) over the real quotes (ec2instances Standard class rows).

    Args:
        quotes: ``parse_instances_json(...).offers`` (on_demand + reserved rows of p2/p3/g3 in their regions).
    """
    import pandas as pd

    od = quotes[quotes["pricing"] == "on_demand"].set_index(["instance_type", "region"])["usd_per_hour"]
    res = quotes[quotes["pricing"].isin(list(TERM_HOURS))]
    if res.empty or od.empty:
        raise PriceDataError("no reserved quotes to compute AWS ratios from")
    joined = res.join(od.rename("od"), on=["instance_type", "region"], how="inner")
    joined = joined[joined["od"] > 0]
    ratio = joined["usd_per_hour"] / joined["od"]
    med = pd.Series(ratio.values, index=pd.MultiIndex.from_frame(joined[["pricing", "payment"]])).groupby(
        level=[0, 1]).median()
    out = {}
    for (pricing, payment), r in med.items():
        out[(str(pricing), str(payment))] = Ratio(round(float(r), 4), f"{float(r):.4f} = median of the Linux Standard "
                                                  f"quotes of p2/p3/g3 in ec2instances.info {as_of} "
                                                  "(github.com/vantage-sh/ec2instances.info)")
    return out


def default_ratios(aws_quotes: "pd.DataFrame") -> Ratios:
    """The snapshot's rules: AWS measured from ``aws_quotes``; GCP and Azure from the documented constants."""
    return {"aws": aws_ratios_from_quotes(aws_quotes), "gcp": dict(GCP_RATIOS), "azure": dict(AZURE_RATIOS)}


def rule_source(provider: str, pricing: str, payment: str, cite: str) -> str:
    """``rule:<provider>-<term>-<payment>:<short cite>``."""
    return f"rule:{provider}-{_TERM[pricing]}-{payment}:{cite}"


def derive_reserved(offers_on_demand: "pd.DataFrame", ratios: Ratios,
                    quotes: "pd.DataFrame | None" = None) -> "pd.DataFrame":
    """Reserved rows for every on-demand offer of a provider that has ratios.

    Args:
        offers_on_demand: offers (only ``pricing == on_demand`` rows are used).
        ratios: provider -> (pricing, payment) -> Ratio (see :func:`default_ratios`).
        quotes: real reserved quotes (ec2instances offers). For an AWS (type, region) whose quoted on-demand rate
            equals the offer's on-demand rate, the quoted reserved rows are used (their source/as_of kept) instead
            of the rule; otherwise the rule applies.

    Returns:
        DataFrame with OFFER_COLUMNS: reserved_1y / reserved_3y rows, zone "", currency of the on-demand row.
    """
    od = offers_on_demand[offers_on_demand["pricing"] == "on_demand"]
    if od.empty:
        return empty_offers()
    quote_od: dict[tuple[str, str], float] = {}
    quote_res: dict[tuple[str, str], list[dict]] = {}
    if quotes is not None and not quotes.empty:
        for r in quotes.to_dict("records"):
            key = (r["instance_type"], r["region"])
            if r["pricing"] == "on_demand":
                quote_od[key] = float(r["usd_per_hour"])
            elif r["pricing"] in TERM_HOURS:
                quote_res.setdefault(key, []).append(r)
    meta_cols = ("provider", "region", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "vcpus",
                 "memory_gib", "interconnect", "currency")
    rows: list[dict] = []
    for o in od.to_dict("records"):
        prov = str(o["provider"])
        rules = ratios.get(prov)
        if rules is None:  # (an empty dict: the real quotes only, no rule)
            continue
        meta = {c: o[c] for c in meta_cols}
        meta["zone"] = ""
        key = (o["instance_type"], o["region"])
        qod = quote_od.get(key) if prov == "aws" else None
        quoted: set[tuple[str, str]] = set()
        if qod is not None and abs(qod - float(o["usd_per_hour"])) < 1e-9:
            for q in quote_res.get(key, []):
                quoted.add((q["pricing"], q["payment"]))
                rows.append({**meta, **{c: q[c] for c in ("pricing", "payment", "upfront_usd",
                                                          "recurring_usd_per_hour", "usd_per_hour", "term_hours",
                                                          "source", "as_of")}})
        for (pricing, payment), rule in sorted(rules.items()):
            if (pricing, payment) in quoted:
                continue
            hours = TERM_HOURS[pricing]
            usd = round(float(o["usd_per_hour"]) * rule.ratio, 6)
            years = 1 if pricing == "reserved_1y" else 3
            upfront, recurring = split_reserved(usd, payment, hours, PARTIAL_UPFRONT_SHARE[(years, "standard")])
            cite = rule.cite + (f"; {PARTIAL_SPLIT_CITE}" if payment == "partial_upfront" else "")
            rows.append({**meta, "pricing": pricing, "payment": payment, "upfront_usd": upfront,
                         "recurring_usd_per_hour": recurring, "usd_per_hour": usd, "term_hours": hours,
                         "source": rule_source(prov, pricing, payment, cite), "as_of": o["as_of"]})
    df = offers_frame(rows)
    check_unique(df, "derived reserved offers")
    return df


# --- ratios refreshed from the published quotes (issue 9): per provider and GPU generation -----------------------

#: AWS instance types with no published reservation: the published data (ec2instances.info, 2025-11-30) has no
#: reserved rate for them, and a code comment of June 2026 quoted in shared/data/prices/README.md says AWS had "not
#: yet published" reserved prices for p5e, p5en and p6-b200. No reserved row is derived for them: capacity blocks
#: (and savings plans) are how they are bought.
NO_PUBLISHED_RESERVATIONS: dict[str, tuple[str, ...]] = {
    "aws": ("p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"),
}


def gpu_generation(gpu_model: str) -> str:
    """The GPU's architecture (``Hopper``, ``Ampere``, ``Ada Lovelace``...) from optimizer/data/gpu_specs.csv
    (column ``architecture``, up to the first parenthesis), "" when the spec table has no row for it."""
    from gpuopt.kernel.records import CANONICAL_GPUS

    table = _architectures()
    row = CANONICAL_GPUS.get(str(gpu_model))
    return table.get(row, "") if row else ""


_ARCH: dict[str, str] | None = None


def _architectures() -> dict[str, str]:
    global _ARCH
    if _ARCH is None:
        import csv
        from pathlib import Path

        path = Path(__file__).resolve().parent.parent / "optimizer" / "data" / "gpu_specs.csv"
        with open(path, newline="", encoding="utf-8") as fh:
            _ARCH = {r["name"]: r["architecture"].split("(", 1)[0].strip() for r in csv.DictReader(fh)}
    return _ARCH


@dataclass(frozen=True)
class LevelRatio:
    """A median ratio (reserved effective rate / on-demand rate of the same type and region) and what it is over.

    ``gpu_model`` / ``gpu_count`` (GPUs per instance) are those of the instance type for a ``type`` level ratio
    ("" / 0.0 otherwise): what :func:`sibling_ratios` matches a sibling by."""

    ratio: float
    level: str      # "type", "sibling", "generation" or "provider"
    over: str       # the instance type (for "sibling": the sibling's), the generation, or the provider
    quotes: int     # how many quoted rows the median is over
    gpu_model: str = ""
    gpu_count: float = 0.0


#: Azure VM size names: ``Standard_`` + series letters + vCPUs + capability letters + ``_`` accelerator/version
#: (learn.microsoft.com/azure/virtual-machines/vm-naming-conventions), e.g. Standard_NC40ads_H100_v5.
_AZURE_SIZE = re.compile(r"^Standard_([A-Z]+)(\d+)([a-z]*)(?:_(.*))?$")


def instance_family(provider: str, instance_type: str) -> str:
    """The family an instance type belongs to, for the sibling rule of :func:`derive_by_ratio`; "" when the name
    does not parse or the provider has no rule (then the type has no sibling).

    * AWS: the family and generation before the capability letters ("p5" for p5.48xlarge, "g6" for g6.xlarge and
      g6f.2xlarge; AWS EC2 docs, "Instance type naming conventions": family, generation, capabilities, size).
    * Azure: the series letters without the confidential-computing "C" (NCC -> NC) and the accelerator and version
      after the size ("NC_H100_v5" for Standard_NC40ads_H100_v5, Standard_NC80adis_H100_v5 and the confidential
      Standard_NCC40ads_H100_v5; Azure "Virtual machine size naming conventions").
    * GCP: the machine series before the first hyphen ("a3" for a3-highgpu-8g, a3-megagpu-8g and a3-edgegpu-8g;
      Google Cloud, "Machine families resource and comparison guide").
    Siblings must also have the same GPU model (:func:`sibling_ratios`), which keeps p5 (H100) apart from p5en
    (H200) and a2-highgpu (A100 40GB) apart from a2-ultragpu (A100 80GB).
    """
    prov, itype = str(provider).lower(), str(instance_type)
    if prov == "aws":
        m = re.match(r"([a-z]+\d+)", itype.split(".", 1)[0])
        return m.group(1) if m else ""
    if prov == "azure":
        m = _AZURE_SIZE.match(itype)
        if not m:
            return ""
        series = m.group(1)[:-1] if m.group(1).endswith("CC") else m.group(1)
        return f"{series}_{m.group(4) or ''}"
    if prov == "gcp":
        return itype.split("-", 1)[0] if "-" in itype else ""
    return ""


def sibling_ratios(provider: str, instance_type: str, gpu_model: str, gpu_count: float,
                   levels: dict[tuple[str, str, str], dict[tuple[str, str, str], "LevelRatio"]]
                   ) -> dict[tuple[str, str, str], "LevelRatio"]:
    """The quoted ratios of the nearest sibling of ``instance_type``: another type of the same provider, family
    (:func:`instance_family`) and GPU model with quoted reservations (a ``type`` level in ``levels``), preferring
    the nearest GPU count (the same first), then the sibling with the most quoted rows, then the name. {} when none
    has quotes.

    Returns (pricing, payment, offering_class) -> LevelRatio(level="sibling", over=<the sibling's type>): the
    sibling's median quoted rate / its own on-demand rate, to apply to this type's on-demand rate (issue 31: an
    estimate from a GPU-generation median must not undercut the quote of the identical non-confidential size).
    """
    fam = instance_family(provider, instance_type)
    if not fam:
        return {}
    found = []
    for (level, prov, other), entries in levels.items():
        if level != "type" or prov != provider or other == instance_type or not entries:
            continue
        first = next(iter(entries.values()))
        if first.gpu_model != str(gpu_model) or instance_family(prov, other) != fam:
            continue
        found.append((abs(float(first.gpu_count) - float(gpu_count)), -max(r.quotes for r in entries.values()),
                      other, entries))
    if not found:
        return {}
    _, _, other, entries = min(found, key=lambda f: f[:3])
    return {k: LevelRatio(r.ratio, "sibling", other, r.quotes, r.gpu_model, r.gpu_count) for k, r in entries.items()}


def quoted_ratios(offers: "pd.DataFrame") -> dict[tuple, LevelRatio]:
    """Median ratios of the QUOTED reservations in ``offers`` (rows whose source is not ``rule:``) to the on-demand
    rate of the same provider, type and region, at three levels, keyed
    (level, provider, type|generation|"", pricing, payment, offering_class)."""
    import pandas as pd

    from gpuopt.kernel.records import RESERVED_PRICING, is_estimated

    od = offers[offers["pricing"] == "on_demand"].set_index(["provider", "region", "instance_type"])["usd_per_hour"]
    od = od[~od.index.duplicated()]
    res = offers[offers["pricing"].isin(list(RESERVED_PRICING))]
    res = res[[not is_estimated(s) for s in res["source"].astype(str)]]
    if res.empty or od.empty:
        return {}
    j = res.join(od.rename("od"), on=["provider", "region", "instance_type"], how="inner")
    j = j[j["od"] > 0].copy()
    j["ratio"] = j["usd_per_hour"].astype(float) / j["od"].astype(float)
    j["generation"] = [gpu_generation(g) for g in j["gpu_model"].astype(str)]
    j["all"] = ""
    gpu_of = {(str(p), str(t)): (str(g), float(n)) for p, t, g, n in
              j[["provider", "instance_type", "gpu_model", "gpu_count"]].itertuples(index=False)}
    out: dict[tuple, LevelRatio] = {}
    for level, col in (("type", "instance_type"), ("generation", "generation"), ("provider", "all")):
        keys = ["provider", col, "pricing", "payment", "offering_class"]
        grouped = j.groupby(keys, dropna=False)["ratio"]
        for k, s in grouped:
            k = tuple(str(x) for x in k)
            if level == "generation" and not k[1]:
                continue
            gpu = gpu_of[(k[0], k[1])] if level == "type" else ("", 0.0)
            out[(level, *k)] = LevelRatio(round(float(pd.Series(s).median()), 4), level, k[1] or k[0], int(len(s)),
                                          *gpu)
    return out


def derive_by_ratio(offers: "pd.DataFrame", ratios: dict[tuple, LevelRatio],
                    providers: tuple[str, ...] = ("aws", "azure", "gcp")) -> "pd.DataFrame":
    """Reserved rows by rule for every on-demand row of ``providers`` that has no quoted reservation for its
    provider, type and region: for each (pricing, payment, offering_class) quoted at the most specific level
    available — the same instance type in other regions, else a sibling (the same family and GPU model, confidential
    or not, the nearest GPU count first: :func:`sibling_ratios`), else the same GPU generation, else the provider — the
    on-demand rate x that median ratio. Types in :data:`NO_PUBLISHED_RESERVATIONS` get none.

    The sibling level comes before the generation's (issue 31): Azure's confidential Standard_NCC40ads_H100_v5 got
    0.64 / 0.44 (the median of the Hopper quotes) where the identical Standard_NC40ads_H100_v5 is quoted at 0.75 /
    0.55, and won plans 17-25 % below what Azure charges; from the sibling it gets 0.75 / 0.55.

    Returns an offer frame; each row's ``source`` is ``rule:<provider>-<term>-<payment>:<ratio> = median of N quoted
    <level> <what> rows`` (from a sibling: ``<ratio> from sibling <type> quoted ratio (median of N quoted rows)``)
    and ``as_of`` the on-demand row's (an estimate is as old as what it is derived from).
    """
    from gpuopt.kernel.records import RESERVED_PRICING

    has_res = set(map(tuple, offers[offers["pricing"].isin(list(RESERVED_PRICING))][
        ["provider", "region", "instance_type"]].astype(str).values.tolist()))
    levels: dict[tuple[str, str, str], dict[tuple[str, str, str], LevelRatio]] = {}
    for k, r in ratios.items():
        levels.setdefault((k[0], k[1], k[2]), {})[(k[3], k[4], k[5])] = r
    meta_cols = ("provider", "region", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "vcpus",
                 "memory_gib", "interconnect", "currency")
    rows = []
    od = offers[(offers["pricing"] == "on_demand") & offers["provider"].isin(list(providers))]
    siblings: dict[tuple[str, str, str, float], dict] = {}
    for o in od.to_dict("records"):
        prov, itype = str(o["provider"]), str(o["instance_type"])
        if (prov, str(o["region"]), itype) in has_res or itype in NO_PUBLISHED_RESERVATIONS.get(prov, ()):
            continue
        gen = gpu_generation(str(o["gpu_model"]))
        sib_key = (prov, itype, str(o["gpu_model"]), float(o["gpu_count"]))
        if sib_key not in siblings:
            siblings[sib_key] = sibling_ratios(*sib_key, levels)
        found = (levels.get(("type", prov, itype)) or siblings[sib_key] or levels.get(("generation", prov, gen))
                 or _standard_first(levels.get(("provider", prov, ""), {})))
        for (pricing, payment, klass), r in sorted(found.items()):
            hours = TERM_HOURS[pricing]
            usd = round(float(o["usd_per_hour"]) * r.ratio, 6)
            years = 1 if pricing == "reserved_1y" else 3
            upfront, recurring = split_reserved(usd, payment, hours,
                                                PARTIAL_UPFRONT_SHARE[(years, klass or "standard")])
            cite = (f"{r.ratio:.4f} from sibling {r.over} quoted ratio (median of {r.quotes} quoted rows)"
                    if r.level == "sibling" else f"{r.ratio:.4f} = median of {r.quotes} quoted {r.level} {r.over} rows")
            if payment == "partial_upfront":
                cite += f"; {PARTIAL_SPLIT_CITE}"
            rows.append({**{c: o[c] for c in meta_cols}, "zone": "", "pricing": pricing, "payment": payment,
                         "offering_class": klass, "upfront_usd": upfront, "recurring_usd_per_hour": recurring,
                         "usd_per_hour": usd, "term_hours": hours,
                         "source": rule_source(prov, pricing, payment, cite), "as_of": o["as_of"]})
    df = offers_frame(rows)
    check_unique(df, "derived reserved offers")
    return df


def _standard_first(found: dict[tuple[str, str, str], LevelRatio]) -> dict[tuple[str, str, str], LevelRatio]:
    """Provider-level ratios without a Convertible term where a Standard one of the same term and payment exists
    (AWS sells Convertible 1-year p5 terms only because it sells no Standard one: not a class to derive for
    other types)."""
    return {k: r for k, r in found.items() if k[2] != "convertible" or (k[0], k[1], "standard") not in found}
