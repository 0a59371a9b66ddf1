"""GCP Cloud Billing Catalog SKUs (providers/gcp.py): a Flex-start (DWS Defined Duration), Calendar-mode, "Reserved"
or Commitment GPU SKU is never the on-demand or spot price of a GPU; Flex-start rows only from whole instances.

Fixtures: tests/fixtures/gcp/skus_gpu_2025-06-16.derived.json (real Billing Catalog GPU SKUs of 2025-06-16 from
pricing_cache/data/inputs/gcp_gpu_sku_prices.csv, and the two A3 Flex-start host SKUs quoted by Google Cloud Japan;
README.md in that folder says how the category and serviceRegions were filled).
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

import providers.gcp as gcp
from gpuopt.kernel.records import OFFER_COLUMNS, WINDOW_PRICING
from providers._common import reason_code
from providers.validate import validate_offers

ROOT = Path(__file__).resolve().parents[1]
LISTING = ROOT / "tests" / "fixtures" / "gcp" / "skus_gpu_2025-06-16.derived.json"
CSV = ROOT / "pricing_cache" / "data" / "inputs" / "gcp_gpu_sku_prices.csv"
AS_OF = "2026-12-01"

# Real SKUs of the 2025-06-16 catalog dump (gcp_gpu_sku_prices.csv rows, Americas):
H100_OD = ("D4E2-451A-15B9", 9.796551)   # Nvidia H100 80GB GPU running in Americas
H100_DWS = ("341A-49A5-0C07", 4.200761)  # Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas
H100_CAL = ("AE60-7D45-1DF5", 4.570091)  # Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode
A100_80_OD = ("EDA0-3A70-3138", 3.92808)
A100_80_DWS = ("484D-8AA8-3F73", 1.846198)
# Flex-start A3 host SKUs (zenn.dev/google_cloud_jp/articles/dws-flex-new-skus): per vCPU-hour and per GiB-hour
A3_DWS_CORE, A3_DWS_RAM = 0.010934, 0.000952
# SkyPilot's a3-highgpu-8g us-central1 row: its host part at on-demand (9.46006) + 8 x the DWS H100 SKU = 43.07
# (pricing_cache/data/inputs/PRICES_README.md (a)); the list price is 88.49 (Cyclenerd pricing.yml, same README)
SKYPILOT_HOST_8G, SKYPILOT_A3_8G = 9.46006, 43.07

#: the CSV's ``pricing`` column -> what classify_sku must make of the SKU (with the usageType the live catalog gives)
EXPECTED = {"on_demand": ("OnDemand", "on_demand"), "spot": ("Preemptible", "spot"),
            "cud_1y": ("Commit1Yr", "reserved_1y"), "cud_3y": ("Commit3Yr", "reserved_3y"),
            "dws_flex": ("OnDemand", "flex_start"), "dws_calendar_reservation": ("OnDemand", None)}


def _listing() -> dict:
    return json.loads(LISTING.read_text(encoding="utf-8"))


def _csv_rows() -> list[dict]:
    if not CSV.exists():
        pytest.skip(f"{CSV} is not in this checkout")
    with CSV.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def us_central1():
    return gcp.parse_region(_listing(), "us-central1", AS_OF)


# ---------------------------------------------------------------------------------------------- classification


def test_every_real_gpu_sku_of_the_2025_06_16_catalog_is_classified_by_its_description():
    """All 905 rows of gcp_gpu_sku_prices.csv: DWS rows are Flex-start, Calendar-mode rows are never used, and no
    DWS / Calendar / Commitment row is ever on-demand or spot."""
    rows = _csv_rows()
    assert len(rows) == 905
    seen = {}
    for r in rows:
        usage, want = EXPECTED[r["pricing"]]
        c = gcp.classify_sku(r["sku_description"], "GPU", usage)
        seen[r["pricing"]] = seen.get(r["pricing"], 0) + 1
        if " Plus GPU" in r["sku_description"]:  # "Nvidia H100 80GB Plus GPU": never guessed
            assert (c.status, reason_code(c.reason)) == ("skip", "ambiguous_gpu"), r
        elif want is None:
            assert (c.status, reason_code(c.reason)) == ("skip", "calendar_mode"), r
        else:
            assert (c.status, c.pricing, c.kind) == ("ok", want, "gpu"), r
    assert seen == {"cud_1y": 172, "cud_3y": 172, "spot": 171, "on_demand": 169, "dws_calendar_reservation": 124,
                    "dws_flex": 97}


@pytest.mark.parametrize("usage", ["OnDemand", "Preemptible", "Commit1Yr", "Commit3Yr", "", "Reserved"])
def test_dws_calendar_reserved_and_commitment_skus_are_never_on_demand_or_spot_whatever_the_usage_type(usage):
    descriptions = sorted({r["sku_description"] for r in _csv_rows() if r["pricing"] not in ("on_demand", "spot")})
    descriptions += ["DWS Defined Duration A3 Core running in Americas",
                     "DWS Defined Duration A3 Ram running in Americas",
                     "Reserved Nvidia Tesla A100 GPU in Americas",  # a reservation's own meter (seen at $0, OnDemand)
                     "Nvidia H100 80GB GPU in Americas in DWS Calendar Mode"]
    for d in descriptions:
        group = "CPU" if " Core " in d else "RAM" if " Ram " in d else "GPU"
        c = gcp.classify_sku(d, group, usage)
        assert not (c.status == "ok" and c.pricing in ("on_demand", "spot")), (d, usage, c)


@pytest.mark.parametrize("description,group,usage,expected", [
    # DWS Defined Duration: Flex-start, under OnDemand (the live catalog's usageType) or Preemptible
    ("Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas", "GPU", "OnDemand",
     ("ok", "flex_start", "gpu:H100")),
    ("Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas", "GPU", "Preemptible",
     ("ok", "flex_start", "gpu:H100")),
    ("DWS Defined Duration A3 Core running in Americas", "CPU", "OnDemand", ("ok", "flex_start", "core:a3")),
    ("DWS Defined Duration A3 Ram running in Americas", "RAM", "OnDemand", ("ok", "flex_start", "ram:a3")),
    ("DWS Flex Start A3 Core running in Americas", "CPU", "OnDemand", ("ok", "flex_start", "core:a3")),
    ("Nvidia H100 80GB GPU attached to DWS Defined Duration VMs running in Americas", "GPU", "Commit1Yr",
     ("skip", "inconsistent_category", "")),
    # Calendar mode and "Reserved ...": never used
    ("Reserved Nvidia H100 80GB GPU in Americas in Calendar Mode", "GPU", "OnDemand", ("skip", "calendar_mode", "")),
    ("Reserved H200 141GB GPU in Americas in Calendar Mode", "GPU", "Commit1Yr", ("skip", "calendar_mode", "")),
    ("Reserved Nvidia Tesla A100 GPU in Americas", "GPU", "OnDemand", ("skip", "reserved_capacity", "")),
    # DWS wording of no documented form, and two models in one description
    ("Nvidia H100 80GB GPU DWS Something running in Americas", "GPU", "OnDemand", ("skip", "unknown_dws", "")),
    ("Commitment v1: Nvidia H100 80GB GPU attached to DWS Defined Duration VMs in Americas for 1 Year", "GPU",
     "Commit1Yr", ("skip", "inconsistent_category", "")),
    ("Commitment v1: Spot Preemptible A3 Cpu in Americas for 1 Year", "CPU", "Commit1Yr",
     ("skip", "inconsistent_category", "")),
    # the plain description is on-demand only with usageType OnDemand
    ("Nvidia H100 80GB GPU running in Americas", "GPU", "OnDemand", ("ok", "on_demand", "gpu:H100")),
    ("Nvidia H100 80GB GPU running in Americas", "GPU", "Preemptible", ("skip", "inconsistent_category", "")),
    ("Nvidia H100 80GB GPU running in Americas", "GPU", "Commit3Yr", ("skip", "inconsistent_category", "")),
    # Spot wording: spot under Preemptible, or OnDemand (the description wins, with a note)
    ("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas", "GPU", "Preemptible",
     ("ok", "spot", "gpu:H100")),
    ("Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas", "GPU", "OnDemand",
     ("ok", "spot", "gpu:B200")),
    ("Commitment v1: Nvidia H100 80GB GPU running in Americas for 3 Years", "GPU", "Commit3Yr",
     ("ok", "reserved_3y", "gpu:H100")),
    # outside the GPU machine series: ignored, not reported
    ("DWS Defined Duration N2 Core running in Americas", "CPU", "OnDemand", ("ignore", "", "")),
])
def test_classify_sku_table(description, group, usage, expected):
    c = gcp.classify_sku(description, group, usage)
    status, what, comp = expected
    assert c.status == status, c
    if status == "ok":
        got = f"{c.kind}:{c.accelerator or c.series}"
        assert (c.pricing, got) == (what, comp)
        assert bool(c.note) == (c.pricing == "spot" and usage == "OnDemand")
    elif status == "skip":
        assert reason_code(c.reason) == what and "\n" not in c.reason


# ---------------------------------------------------------------------------------------------- components


def test_h100_on_demand_is_the_plain_sku_never_the_dws_one_in_any_order():
    """The SkyPilot fault: the first OnDemand SKU whose description CONTAINS 'H100 80GB GPU' is the DWS one."""
    skus = _listing()["skus"]
    dws_first = sorted(skus, key=lambda s: "DWS" not in s["description"])
    for order in (skus, dws_first, list(reversed(dws_first)), random.Random(7).sample(skus, len(skus))):
        df = gcp.parse_skus({"skus": order}, regions=["us-central1"]).set_index(["component", "pricing"])
        for pricing, (sku_id, price) in (("on_demand", H100_OD), ("flex_start", H100_DWS)):
            assert df.loc[("gpu:H100", pricing), "sku_id"] == sku_id
            assert df.loc[("gpu:H100", pricing), "unit_price"] == pytest.approx(price, abs=1e-12)
        assert df.loc[("gpu:A100-80GB", "on_demand"), "unit_price"] == pytest.approx(A100_80_OD[1], abs=1e-12)
        assert df.loc[("gpu:A100-80GB", "flex_start"), "unit_price"] == pytest.approx(A100_80_DWS[1], abs=1e-12)
        assert H100_CAL[0] not in set(df["sku_id"])  # Calendar mode: no component at all


def test_calendar_and_ambiguous_skus_are_reported():
    df = gcp.parse_skus(_listing(), regions=["us-central1"])
    by_sku = {s.instance_type.split("[sku ")[1].rstrip("]"): reason_code(s.reason) for s in df.attrs["skipped"]}
    assert by_sku[H100_CAL[0]] == "calendar_mode"
    assert by_sku["976A-D3D9-74CD"] == "calendar_mode"  # Reserved Nvidia H100 80GB Mega GPU ... in Calendar Mode
    assert by_sku["7CFD-81D6-E49C"] == "ambiguous_gpu"  # Nvidia H100 80GB Plus GPU running in Americas
    assert set(by_sku.values()) == {"calendar_mode", "ambiguous_gpu"}


# ---------------------------------------------------------------------------------------------- Flex-start rows


def test_flex_start_a3_highgpu_from_whole_instance_dws_skus(us_central1):
    df = us_central1.offers
    row = df[(df.instance_type == "a3-highgpu-8g") & (df.pricing == "flex_start")].iloc[0]
    expected = 8 * H100_DWS[1] + 208 * A3_DWS_CORE + 1872 * A3_DWS_RAM
    assert row.usd_per_hour == pytest.approx(expected, abs=1e-9) and expected == pytest.approx(37.662504, abs=1e-9)
    # Google Cloud Japan's a3-highgpu-1g table: 4.200761 + 26 x 0.010934 + 234 x 0.000952 = 4.707813
    one = df[(df.instance_type == "a3-highgpu-1g") & (df.pricing == "flex_start")].iloc[0]
    assert one.usd_per_hour == pytest.approx(4.707813, abs=1e-9)
    assert (row.payment, row.offering_class, row.upfront_usd, row.term_hours) == ("", "", 0.0, 0.0)
    assert row.recurring_usd_per_hour == row.usd_per_hour and row.source == gcp.SOURCE and row.as_of == AS_OF
    assert (row.gpu_model, row.gpu_count, row.vcpus, row.memory_gib) == ("H100-80GB", 8.0, 208.0, 1872.0)
    assert "flex_start" in WINDOW_PRICING and list(df.columns) == list(OFFER_COLUMNS)
    # no on-demand a3 row: the fixture has no on-demand A3 cores/RAM, and the DWS ones are never used for it
    assert set(df[df.instance_type == "a3-highgpu-8g"].pricing) == {"flex_start"}
    assert any(r.startswith("missing_part: on_demand") for r in
               (s.reason for s in us_central1.skipped if s.instance_type == "a3-highgpu-8g"))
    # SkyPilot's 43.07 = host at on-demand + 8 x DWS H100: a hybrid of two pricings, never produced here
    assert SKYPILOT_HOST_8G + 8 * H100_DWS[1] == pytest.approx(SKYPILOT_A3_8G, abs=0.005)
    assert not (df.usd_per_hour.round(2) == SKYPILOT_A3_8G).any()


def test_flex_start_gpu_without_its_host_skus_is_reported_never_priced(us_central1):
    """A2 (A100), A3 Mega, A3 Ultra (H200), G2 (L4): the DWS GPU SKU is there, the DWS cores/RAM are not."""
    df, skipped = us_central1.offers, us_central1.skipped
    assert set(df.pricing) == {"flex_start"}
    assert set(df.instance_type) == {"a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g", "a3-highgpu-8g",
                                     "a3-edgegpu-8g", "a3-edgegpu-8g-nolssd"}
    for itype, parts in (("a2-highgpu-1g", "core:a2, ram:a2"), ("a2-ultragpu-1g", "core:a2, ram:a2"),
                         ("a3-megagpu-8g", "core:a3plus, ram:a3plus"), ("a3-ultragpu-8g", "core:a3ultra, ram:a3ultra"),
                         ("g2-standard-4", "core:g2, ram:g2")):
        reasons = [s.reason for s in skipped if s.instance_type == itype and s.region == "us-central1"]
        assert any(r.startswith("missing_part: flex_start") and f"but no {parts}" in r for r in reasons), itype


def test_flex_start_checks_against_on_demand():
    """With the A3 on-demand host parts present, a Flex-start part dearer than its on-demand part is refused; the
    real DWS rate is kept (A3 on-demand core/RAM here: the A3Plus values of the recorded-shape fixture
    skus_listing.json FX18/FX19, used only as a reference point for this check)."""
    skus = _listing()["skus"]
    host = []
    for sid, desc, group, unit, units, nanos in (("T-A3-CORE", "A3 Instance Core running in Americas", "CPU", "h", "0",
                                                  26924000),
                                                 ("T-A3-RAM0", "A3 Instance Ram running in Americas", "RAM", "GiBy.h",
                                                  "0", 2344000)):
        sku = json.loads(json.dumps(next(s for s in skus if s["skuId"] == "9A32-36B2-7FBC")))
        sku.update(skuId=sid, description=desc)
        sku["category"]["resourceGroup"] = group
        sku["pricingInfo"][0]["pricingExpression"]["usageUnit"] = unit
        sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units=units, nanos=nanos)
        host.append(sku)
    res = gcp.parse_region({"skus": skus + host}, "us-central1", AS_OF)
    od = res.offers[(res.offers.instance_type == "a3-highgpu-8g") & (res.offers.pricing == "on_demand")].iloc[0]
    flex = res.offers[(res.offers.instance_type == "a3-highgpu-8g") & (res.offers.pricing == "flex_start")].iloc[0]
    assert od.usd_per_hour == pytest.approx(208 * 0.026924 + 1872 * 0.002344 + 8 * H100_OD[1], abs=1e-9)
    assert flex.usd_per_hour < od.usd_per_hour
    kept = validate_offers(res.offers[res.offers.instance_type == "a3-highgpu-8g"])
    assert set(kept.offers.pricing) >= {"on_demand", "flex_start"}
    # a DWS core above the on-demand core: no Flex-start row, reported
    dear = [json.loads(json.dumps(s)) for s in skus]
    for s in dear:
        if s["skuId"] == "9A32-36B2-7FBC":
            s["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units="0", nanos=30000000)
    res = gcp.parse_region({"skus": dear + host}, "us-central1", AS_OF)
    assert res.offers[(res.offers.instance_type == "a3-highgpu-8g") & (res.offers.pricing == "flex_start")].empty
    assert any(s.reason.startswith("implausible_flex_start") for s in res.skipped if s.instance_type == "a3-highgpu-8g")


def test_other_locations_of_the_real_listing():
    """Netherlands (europe-west4) and Tokyo (asia-northeast1): the real on-demand and DWS SKUs stay apart."""
    eu = gcp.parse_skus(_listing(), regions=["europe-west4"]).set_index(["component", "pricing"])
    assert eu.loc[("gpu:H100-MEGA", "on_demand"), "sku_id"] == "4124-1765-0CA6"
    assert eu.loc[("gpu:H100-MEGA", "on_demand"), "unit_price"] == pytest.approx(13.44756, abs=1e-12)
    assert eu.loc[("gpu:H100-MEGA", "flex_start"), "unit_price"] == pytest.approx(4.423936, abs=1e-12)
    tokyo = gcp.parse_skus(_listing(), regions=["asia-northeast1"]).set_index(["component", "pricing"])
    assert tokyo.loc[("gpu:H100", "on_demand"), "sku_id"] == "E166-C34C-2AF7"  # 14.204998, not the DWS 4.200761
    assert tokyo.loc[("gpu:H100", "on_demand"), "unit_price"] == pytest.approx(14.204998, abs=1e-12)
    assert tokyo.loc[("gpu:H100", "flex_start"), "sku_id"] == "0D84-873D-A330"
