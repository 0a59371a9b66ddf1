"""Importer for ec2instances.info ``instances.json`` (vantage-sh/ec2instances.info ``www/instances.json``).

Each instance has ``pricing[region][os]`` with ``ondemand`` and ``reserved``; the reserved keys are
``yrTerm{1,3}{Standard,Convertible}.{no,partial,all}Upfront`` and their values are EFFECTIVE hourly rates (upfront
amortized over the term). Only Linux (``linux``) is read.

Upfront / recurring split of an effective rate ``r`` over ``term_hours`` (8,760 or 26,280):

* all upfront: upfront = r x term_hours, recurring 0;
* no upfront: upfront 0, recurring = r;
* partial upfront: the file does not say how much is paid upfront. We take the share from the real AWS Pricing API
  payload ``GetProducts_m5_large.json`` (aws/amazon-ec2-instance-selector test data, publication 2021-02-05): for
  m5.large, Standard 1yr partial = 252 USD upfront + 0.029 USD/h, i.e. the upfront part is 0.4980 of the effective
  cost; Standard 3yr partial = 505 USD + 0.019 USD/h -> 0.5028 (Convertible: 0.4968 / 0.4948). :data:`PARTIAL_UPFRONT_SHARE`
  holds these fractions; :func:`partial_upfront_shares` recomputes them from the payload. The ``source`` of such
  rows says so (``...;partial split from GetProducts m5.large``). upfront is rounded to cents and recurring is
  ``r - upfront / term_hours``, so ``usd_per_hour`` stays the quoted effective rate.

Offering class: only **Standard** reserved rates become offers. Convertible reservations are a different product
(exchangeable, dearer) with the same (provider, region, zone, instance type, pricing, payment) key; the offer schema
has no column to tell them apart, so they are left out (``offering_classes`` can select Convertible instead, never
both).

The file gives no GPU model, only a count (``GPU``); the model comes from :data:`AWS_FAMILY_GPU` (AWS instance type
docs: P2 = NVIDIA K80, P3 = V100 16 GB, P3dn = V100 32 GB, G3 = Tesla M60).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from gpuopt.kernel.errors import InputError, PriceDataError
from gpuopt.kernel.records import SkippedRow, TERM_HOURS
from providers._common import ParseResult, check_unique, hourly_row, offers_frame, float_or_none
from providers.gpu_names import GPU_MEMORY_MIB
from providers.skypilot import interconnect_for

FORMATS = ("ec2instances",)

#: AWS instance family -> canonical GPU (AWS "Accelerated computing" instance type docs).
AWS_FAMILY_GPU: dict[str, str] = {"p2": "K80", "p3": "V100-16GB", "p3dn": "V100-32GB", "g3": "M60", "g3s": "M60"}

#: Share of the effective partial-upfront cost paid upfront, by (term years, offering class), computed from
#: GetProducts_m5_large.json (see the module docstring and :func:`partial_upfront_shares`).
PARTIAL_UPFRONT_SHARE: dict[tuple[int, str], float] = {
    (1, "standard"): (252 / 8760) / (252 / 8760 + 0.029),
    (3, "standard"): (505 / 26280) / (505 / 26280 + 0.019),
    (1, "convertible"): (294 / 8760) / (294 / 8760 + 0.034),
    (3, "convertible"): (592 / 26280) / (592 / 26280 + 0.023),
}
PARTIAL_SPLIT_CITE = "partial split from GetProducts m5.large 2021-02-05"

_KEY = re.compile(r"^yrTerm([13])(Standard|Convertible)\.(no|partial|all)Upfront$")
_PAYMENT = {"no": "no_upfront", "partial": "partial_upfront", "all": "all_upfront"}


def partial_upfront_shares(get_products_item: dict[str, Any]) -> dict[tuple[int, str], float]:
    """Upfront share of the effective partial-upfront cost per (term years, class) from one Pricing API item.

    ``terms.Reserved`` entries with ``PurchaseOption == "Partial Upfront"`` have a ``Quantity`` dimension (upfront fee
    for the whole term) and an ``Hrs`` dimension (recurring hourly); share = (fee / term_hours) / effective.
    """
    out: dict[tuple[int, str], float] = {}
    for term in get_products_item["terms"]["Reserved"].values():
        attrs = term["termAttributes"]
        if attrs.get("PurchaseOption") != "Partial Upfront":
            continue
        years = int(str(attrs["LeaseContractLength"]).rstrip("yr"))
        hours = TERM_HOURS["reserved_1y" if years == 1 else "reserved_3y"]
        fee = hourly = None
        for dim in term["priceDimensions"].values():
            usd = float(dim["pricePerUnit"]["USD"])
            if dim["unit"] == "Quantity":
                fee = usd
            elif dim["unit"] == "Hrs":
                hourly = usd
        if fee is None or hourly is None:
            raise PriceDataError(f"partial-upfront term without both a fee and an hourly part: {attrs}")
        out[(years, str(attrs["OfferingClass"]).lower())] = (fee / hours) / (fee / hours + hourly)
    return out


def split_reserved(effective: float, payment: str, term_hours: float, partial_share: float) -> tuple[float, float]:
    """(upfront_usd, recurring_usd_per_hour) of an effective hourly rate; see the module docstring."""
    if payment == "all_upfront":
        return round(effective * term_hours, 2), 0.0
    if payment == "no_upfront":
        return 0.0, float(effective)
    if payment == "partial_upfront":
        upfront = round(effective * partial_share * term_hours, 2)
        return upfront, round(effective - upfront / term_hours, 9)
    raise PriceDataError(f"unknown payment option '{payment}'")


def _float_or_nan(value: Any) -> float:
    f = float_or_none(value)
    return float("nan") if f is None else f


def _family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def parse_instances_json(data: "list[dict] | str | Path", as_of: str, source: str, *,
                         offering_classes: Iterable[str] = ("standard",),
                         partial_shares: dict[tuple[int, str], float] | None = None) -> ParseResult:
    """Linux on-demand and reserved offers from ec2instances.info ``instances.json``.

    Args:
        data: the parsed JSON list, or its text, or a Path to it.
        as_of: ISO date of the file (e.g. ``2017-11-12``); source: e.g. ``ec2instances.info:2017-11-12``.
        offering_classes: which reserved offering class to keep: ``("standard",)`` (default) or ``("convertible",)``.
        partial_shares: upfront share per (term years, class) for partial upfront (default PARTIAL_UPFRONT_SHARE).

    Returns:
        ParseResult with on_demand (zone "") and reserved_1y/reserved_3y rows (payment no/partial/all upfront,
        upfront_usd, recurring_usd_per_hour, term_hours, usd_per_hour = the quoted effective rate). Skipped rows have
        ``line`` 0 (JSON is not line-oriented).
    """
    classes = tuple(c.lower() for c in offering_classes)
    if len(classes) != 1 or classes[0] not in ("standard", "convertible"):
        raise InputError("offering_classes", f"{list(offering_classes)}: choose exactly one class (the offer key has "
                         "no offering-class column)", accepted="standard, convertible")
    cls = classes[0]
    shares = partial_shares or PARTIAL_UPFRONT_SHARE
    from providers._input import loads_json, read_json_file

    if isinstance(data, Path) or (isinstance(data, str) and not data.lstrip().lstrip("\ufeff").startswith("[")):
        data = read_json_file(Path(data))
    elif isinstance(data, str):
        data = loads_json(data)
    if not isinstance(data, list):
        raise InputError("catalog", "ec2instances.info instances.json must be a JSON list of instances",
                         accepted="ec2instances.info www/instances.json")
    rows: list[dict[str, Any]] = []
    skipped: list[SkippedRow] = []

    def skip(itype: str, region: str, reason: str) -> None:
        skipped.append(SkippedRow(source=source, line=0, instance_type=itype, region=region, reason=reason))

    from providers._input import where

    for k, inst in enumerate(data):
        if not isinstance(inst, dict):
            raise InputError("catalog", f"{source}: {where([k])} is a {type(inst).__name__}, not an instance object",
                             accepted="ec2instances.info www/instances.json")
        if not isinstance(inst.get("pricing", {}), dict):
            raise InputError("catalog", f"{source}: {where([k, 'pricing'])} is not an object of regions",
                             accepted="ec2instances.info www/instances.json")
        itype = str(inst.get("instance_type", ""))
        gpus = float_or_none(inst.get("GPU"))
        if not gpus or gpus <= 0:
            skip(itype, "", "no_gpu: GPU count is 0 or missing")
            continue
        gpu = AWS_FAMILY_GPU.get(_family(itype))
        if gpu is None:
            skip(itype, "", f"unknown_gpu: family '{_family(itype)}' not in AWS_FAMILY_GPU")
            continue
        base = {"provider": "aws", "zone": "", "instance_type": itype, "gpu_model": gpu, "gpu_count": float(gpus),
                "gpu_memory_gib": GPU_MEMORY_MIB[gpu] / 1024.0, "vcpus": _float_or_nan(inst.get("vCPU")),
                "memory_gib": _float_or_nan(inst.get("memory")), "interconnect": interconnect_for("aws", itype),
                "currency": "USD", "source": source, "as_of": as_of}
        for region in sorted(inst.get("pricing", {})):
            prices = inst["pricing"][region]
            linux = prices.get("linux") if isinstance(prices, dict) else None
            if not isinstance(linux, dict):
                continue
            if not isinstance(linux.get("reserved") or {}, dict):
                raise InputError("catalog", f"{source}: {where([k, 'pricing', region, 'linux', 'reserved'])} is not an object "
                                            "of terms", accepted="ec2instances.info www/instances.json")
            od = float_or_none(linux.get("ondemand"))
            if od is None:
                skip(itype, region, "unknown_price: empty Linux on-demand rate")
            elif od <= 0:
                skip(itype, region, f"zero_price: Linux on-demand rate {od}")
            else:
                rows.append(hourly_row("on_demand", od, **{**base, "region": region}))
            for key, value in sorted((linux.get("reserved") or {}).items()):
                m = _KEY.match(key)
                if not m:
                    skip(itype, region, f"unknown_term: reserved key '{key}'")
                    continue
                years, klass, pay = int(m.group(1)), m.group(2).lower(), _PAYMENT[m.group(3)]
                if klass != cls:
                    continue
                rate = float_or_none(value)
                if rate is None:
                    skip(itype, region, f"unknown_price: empty reserved rate {key}")
                    continue
                if rate <= 0:
                    skip(itype, region, f"zero_price: reserved rate {key} is {rate}")
                    continue
                pricing = "reserved_1y" if years == 1 else "reserved_3y"
                hours = TERM_HOURS[pricing]
                upfront, recurring = split_reserved(rate, pay, hours, shares[(years, cls)])
                src = source + (f";{PARTIAL_SPLIT_CITE}" if pay == "partial_upfront" else "")
                rows.append({**base, "region": region, "pricing": pricing, "payment": pay, "upfront_usd": upfront,
                             "recurring_usd_per_hour": recurring, "usd_per_hour": rate, "term_hours": hours,
                             "source": src})
    df = offers_frame(rows)
    check_unique(df, source)
    from providers._input import check_offer_values

    df, bad = check_offer_values(df, source)
    return ParseResult(offers=df, skipped=skipped + bad)
