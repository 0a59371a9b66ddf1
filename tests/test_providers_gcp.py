"""GCP live adapter (providers/gcp.py): SKU parsing, machine composition, and the paginated fetch against a local
HTTP server on 127.0.0.1 (Google is never contacted). Fixtures: tests/fixtures/gcp/ (README says which SKUs are
recorded and how each price was derived)."""

from __future__ import annotations

import copy
import csv
import json
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import providers
import providers.gcp as gcp
from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES
from providers._common import OFFER_KEY, reason_code
from providers.base import FetchOptions, MissingCredentials, RegionSkipped, TruncatedPriceList

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gcp"
LISTING = FIXTURES / "skus_listing.json"
SKYPILOT_GCP = Path(__file__).resolve().parents[1] / "pricing_cache" / "data" / "inputs" / "gcp_vms_v8_gpu_more.csv"
AS_OF = "2026-12-01"
PATH = f"/v1/services/{gcp.SERVICE_ID}/skus"
KEY = "test-key-not-a-secret"


def _listing() -> dict:
    return json.loads(LISTING.read_text(encoding="utf-8"))


def _skus() -> list[dict]:
    return _listing()["skus"]


def _sku(sku_id: str) -> dict:
    return copy.deepcopy(next(s for s in _skus() if s["skuId"] == sku_id))


def _set_price(sku: dict, units: str, nanos: int) -> dict:
    sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units=units, nanos=nanos)
    return sku


def _offer(df, itype, pricing, region="us-central1"):
    rows = df[(df.instance_type == itype) & (df.pricing == pricing) & (df.region == region)]
    assert len(rows) == 1, (itype, pricing, region, len(rows))
    return rows.iloc[0]


def _reasons(skipped, itype=None, region=None):
    return [s.reason for s in skipped if (itype is None or s.instance_type == itype)
            and (region is None or s.region == region)]


@pytest.fixture(scope="module")
def us_central1():
    return gcp.parse_region(_listing(), "us-central1", AS_OF)


# ---------------------------------------------------------------------------------------------------- tables


def test_machine_shapes_are_the_skypilot_catalog_rows():
    with SKYPILOT_GCP.open(encoding="utf-8") as f:
        shapes = {(r["InstanceType"], float(r["vCPUs"]), float(r["MemoryGiB"])) for r in csv.DictReader(f)
                  if r["InstanceType"]}
    by_type = {}
    for itype, cpu, mem in shapes:
        by_type.setdefault(itype, set()).add((cpu, mem))
    assert all(len(v) == 1 for v in by_type.values())
    assert {k: v.pop() for k, v in by_type.items()} == gcp.MACHINE_SHAPES


def test_every_machine_type_has_a_series_a_gpu_and_a_canonical_model():
    for itype in gcp.MACHINE_SHAPES:
        series, acc, n = gcp.machine_spec(itype)
        assert series in gcp.SERIES_NAMES and n >= 1
        assert acc in gcp.GPU_PHRASES.values()
        assert providers.gpu_names.canonical_gpu(acc, provider="gcp") in providers.gpu_names.GPU_MEMORY_MIB
    assert gcp.machine_spec("n1-standard-8") is None
    assert gcp.machine_spec("a3-megagpu-8g") == ("a3plus", "H100-MEGA", 8)
    assert gcp.machine_spec("a3-ultragpu-8g-nolssd") == ("a3ultra", "H200", 8)


def test_registry_entries():
    imp = providers.importer_for_format("gcp-skus")
    assert (imp.module, imp.function, imp.kind) == ("providers.gcp", "parse_skus", "file")
    api = providers.IMPORTERS["gcp-region"]
    assert (api.function, api.kind, api.formats) == ("parse_region", "api", ())
    assert imp.load()(LISTING).shape[0] > 0


# ---------------------------------------------------------------------------------------------------- parse_skus


def test_parse_skus_recorded_a2_skus():
    df = gcp.parse_skus(LISTING)
    uc = df[df.region == "us-central1"].set_index(["component", "pricing"])
    assert uc.loc[("core:a2", "on_demand"), "unit_price"] == pytest.approx(0.031611)
    assert uc.loc[("ram:a2", "on_demand"), "unit_price"] == pytest.approx(0.004237)
    assert uc.loc[("gpu:A100", "on_demand"), "unit_price"] == pytest.approx(2.933908)
    assert uc.loc[("gpu:A100", "on_demand"), "gpu_model"] == "A100-40GB"
    assert uc.loc[("gpu:A100", "on_demand"), "sku_id"] == "039F-D0DA-4055"
    assert uc.loc[("ram:a2", "on_demand"), "usage_unit"] == "GiBy.h"
    assert uc.loc[("core:a2", "on_demand"), "usage_unit"] == "h"
    assert set(df["currency"]) == {"USD"}
    # one multi-regional SKU -> one row per region of its serviceRegions
    a100 = df[(df.component == "gpu:A100") & (df.pricing == "on_demand")]
    assert sorted(a100.region) == ["us-central1", "us-east1", "us-west1"]
    # the recorded APAC commitment (usageType Commit1Yr, asia-east1)
    apac = df[df.region == "asia-east1"]
    assert apac[["component", "pricing"]].values.tolist() == [["core:a2", "reserved_1y"]]
    assert apac.unit_price.iloc[0] == pytest.approx(0.0230593)
    assert list(df.columns) == list(gcp.COMPONENT_COLUMNS)
    assert not df.duplicated(["component", "region", "pricing"]).any()


def test_parse_skus_reports_what_it_does_not_use():
    df = gcp.parse_skus(_listing())
    by_sku = {s.instance_type.split("[sku ")[1].rstrip("]"): reason_code(s.reason) for s in df.attrs["skipped"]}
    assert by_sku == {
        "FX20-H1PL-OD00": "ambiguous_gpu",  # "Nvidia H100 80GB Plus GPU": not guessed
        "FX24-T4OD-GPU0": "no_host_series",
        "FX25-T4ST-GPU0": "variant",  # Sole Tenancy
        "976A-D3D9-74CD": "calendar_mode",  # Reserved ... in Calendar Mode: never an on-demand price
        "FX28-RTX6-OD00": "unknown_gpu",
    }
    # the DWS Defined Duration H100 Mega SKU (C564-6E87-E1B8, usageType OnDemand) is a Flex-start component, never
    # the on-demand H100 Mega price (that stays FX17's 10.344276)
    uc = df[df.region == "us-central1"].set_index(["component", "pricing"])
    assert uc.loc[("gpu:H100-MEGA", "flex_start"), "sku_id"] == "C564-6E87-E1B8"
    assert uc.loc[("gpu:H100-MEGA", "on_demand"), "unit_price"] == pytest.approx(10.344276)
    assert any("FX23-B200-SPOT" in n and "description wins" in n for n in df.attrs["notes"])
    assert any("1 SKU(s) outside" in n for n in df.attrs["notes"])  # the Network egress SKU


@pytest.mark.parametrize("description,group,usage,component,pricing", [
    ("Nvidia Tesla A100 80GB GPU running in Americas", "GPU", "OnDemand", "gpu:A100-80GB", "on_demand"),
    ("Nvidia H100 80GB GPU running in Americas", "GPU", "OnDemand", "gpu:H100", "on_demand"),
    ("Nvidia H100 80GB Mega GPU attached to Spot Preemptible VMs running in Tokyo", "GPU", "Preemptible",
     "gpu:H100-MEGA", "spot"),
    ("H200 141GB GPU running in Netherlands", "GPU", "OnDemand", "gpu:H200", "on_demand"),
    ("Commitment v1: H200 141GB GPU running in Americas for 3 Years", "GPU", "Commit3Yr", "gpu:H200", "reserved_3y"),
    ("A4 Nvidia B200 (1 gpu slice) running in Netherlands", "GPU", "OnDemand", "gpu:B200", "on_demand"),
    ("Commitment v1: A4 Nvidia B200 (1 gpu slice) in Americas for 1 Year", "GPU", "Commit1Yr", "gpu:B200",
     "reserved_1y"),
    ("Nvidia L4 GPU running in Netherlands", "GPU", "OnDemand", "gpu:L4", "on_demand"),
    ("Commitment v1: Nvidia L4 GPU in Frankfurt for 1 Year", "GPU", "Commit1Yr", "gpu:L4", "reserved_1y"),
    ("Spot Preemptible A3 Instance Core running in Americas", "CPU", "Preemptible", "core:a3", "spot"),
    ("A3 Instance Ram running in Americas", "RAM", "OnDemand", "ram:a3", "on_demand"),
    ("A3Plus Instance Core running in Americas", "CPU", "OnDemand", "core:a3plus", "on_demand"),
    ("A3Ultra Instance Ram running in Americas", "RAM", "OnDemand", "ram:a3ultra", "on_demand"),
    ("Commitment v1: A3 Cpu in Americas for 3 Years", "CPU", "Commit3Yr", "core:a3", "reserved_3y"),
    ("Commitment v1: G2 Ram in Americas for 1 Year", "RAM", "Commit1Yr", "ram:g2", "reserved_1y"),
    ("Spot Preemptible G2 Instance Core running in Americas", "CPU", "Preemptible", "core:g2", "spot"),
])
def test_description_table(description, group, usage, component, pricing):
    sku = _sku("2922-40C5-B19F")
    sku["description"] = description
    sku["category"].update(resourceGroup=group, usageType=usage)
    sku["pricingInfo"][0]["pricingExpression"]["usageUnit"] = "GiBy.h" if group == "RAM" else "h"
    df = gcp.parse_skus([sku])
    assert df.attrs["skipped"] == []
    assert sorted(set(zip(df.component, df.pricing))) == [(component, pricing)]


@pytest.mark.parametrize("description,group,usage,code", [
    ("N1 Predefined Instance Core running in Americas", "N1Standard", "OnDemand", None),  # not a GPU series
    ("E2 Instance Core running in Americas", "CPU", "OnDemand", None),
    ("G2 Custom Instance Core running in Americas", "CPU", "OnDemand", "variant"),
    ("Nvidia L4 Virtual Workstation GPU running in Netherlands", "GPU", "OnDemand", "variant"),
    ("Nvidia L40 GPU running in Netherlands", "GPU", "OnDemand", "unknown_gpu"),
    ("A3 Instance Something running in Americas", "CPU", "OnDemand", "unknown_description"),
    ("A2 Instance Core running in Americas", "RAM", "OnDemand", "inconsistent_category"),
    ("Commitment v1: A2 Cpu in Americas for 3 Years", "CPU", "Commit1Yr", "inconsistent_category"),
    ("A2 Instance Core running in Americas", "CPU", "Commit1Yr", "inconsistent_category"),
    ("A2 Instance Core running in Americas", "CPU", "Preemptible-ish", "unknown_usage_type"),
])
def test_descriptions_not_used(description, group, usage, code):
    sku = _sku("2922-40C5-B19F")
    sku["description"] = description
    sku["category"].update(resourceGroup=group, usageType=usage)
    df = gcp.parse_skus([sku])
    assert df.empty
    assert [reason_code(s.reason) for s in df.attrs["skipped"]] == ([code] if code else [])


def test_zero_and_missing_prices_are_reported_never_zero():
    """PRICE_FAULTS BUG-07: a 0 price (or units/nanos left out, i.e. 0) is not a price."""
    zero = _set_price(_sku("2922-40C5-B19F"), "0", 0)
    empty = _sku("2390-DCAF-DA38")
    del empty["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"]
    del empty["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"]
    nothing = _sku("039F-D0DA-4055")
    nothing["pricingInfo"] = []
    df = gcp.parse_skus([zero, empty, nothing])
    assert df.empty
    assert sorted(reason_code(s.reason) for s in df.attrs["skipped"]) == ["unknown_price", "zero_price", "zero_price"]
    res = gcp.parse_region({"skus": [zero, _sku("2390-DCAF-DA38"), _sku("039F-D0DA-4055")]}, "us-central1", AS_OF)
    assert res.offers.empty  # never priced with a 0 core
    assert "missing_part" in {reason_code(r) for r in _reasons(res.skipped, "a2-highgpu-1g")}
    assert (res.offers.usd_per_hour > 0).all()


def test_tiers_and_units_are_checked():
    tiered = _sku("2922-40C5-B19F")
    rates = tiered["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    rates.append({"startUsageAmount": 100, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 20000000}})
    late = _sku("2390-DCAF-DA38")
    late["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["startUsageAmount"] = 10
    monthly = _sku("039F-D0DA-4055")
    monthly["pricingInfo"][0]["pricingExpression"]["usageUnit"] = "mo"
    df = gcp.parse_skus([tiered, late, monthly])
    assert df.empty
    assert sorted(reason_code(s.reason) for s in df.attrs["skipped"]) == ["tiered_price", "tiered_price",
                                                                         "unexpected_unit"]


def test_duplicates_collapse_and_conflicts_keep_nothing():
    a = _sku("2922-40C5-B19F")
    same = copy.deepcopy(a)
    same["skuId"] = "DUP1-SAME-0000"
    df = gcp.parse_skus([a, same])
    assert len(df[df.region == "us-central1"]) == 1
    assert [reason_code(s.reason) for s in df.attrs["skipped"]] == ["duplicate"] * 3  # one per region
    other = _set_price(copy.deepcopy(a), "0", 40000000)
    other["skuId"] = "DUP2-DIFF-0000"
    df = gcp.parse_skus([a, other])
    assert df.empty
    assert {reason_code(s.reason) for s in df.attrs["skipped"]} == {"conflicting_price"}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(list(range(33))))
def test_order_of_skus_does_not_change_the_offers(order):
    skus = _skus()
    assert len(skus) == 33
    a = gcp.parse_region({"skus": skus}, "us-central1", AS_OF).offers
    b = gcp.parse_region({"skus": [skus[i] for i in order]}, "us-central1", AS_OF).offers
    assert a.equals(b)


def test_parse_skus_input_errors(tmp_path):
    with pytest.raises(InputError):
        gcp.parse_skus(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError):
        gcp.parse_skus(bad)
    with pytest.raises(InputError):
        gcp.parse_skus({"skus": "nope"})
    assert gcp.parse_skus(json.dumps(_listing()["skus"][:3])).shape[0] == 9  # JSON text of a SKU list


# ---------------------------------------------------------------------------------------------------- composition


def test_offer_columns_and_invariants(us_central1):
    df = us_central1.offers
    assert list(df.columns) == list(OFFER_COLUMNS)
    assert {c: str(t) for c, t in df.dtypes.items()} == OFFER_DTYPES
    assert (df.zone == "").all() and (df.provider == "gcp").all() and (df.region == "us-central1").all()
    assert set(df.source) == {"gcp-cloud-billing-catalog"} and set(df.as_of) == {AS_OF}
    assert set(df.currency) == {"USD"}
    assert df.groupby(list(OFFER_KEY)).size().max() == 1
    assert (df.usd_per_hour > 0).all()
    assert (df.usd_per_hour == df.recurring_usd_per_hour + df.upfront_usd / df.term_hours.where(
        df.term_hours > 0, 1)).all()


def test_a2_highgpu_1g_on_demand_is_cores_plus_ram_plus_a100(us_central1):
    row = _offer(us_central1.offers, "a2-highgpu-1g", "on_demand")
    host = 12 * 0.031611 + 85 * 0.004237
    assert round(host, 5) == 0.73948  # SkyPilot's host row of us-central1
    assert row.usd_per_hour == pytest.approx(host + 1 * 2.933908, abs=1e-9)
    assert row.usd_per_hour == pytest.approx(3.673385, abs=1e-9)  # Cyclenerd pricing.yml "hour"
    assert (row.gpu_model, row.gpu_count, row.gpu_memory_gib) == ("A100-40GB", 1.0, 40.0)
    assert (row.vcpus, row.memory_gib, row.interconnect, row.payment, row.term_hours) == (12, 85, "nvlink", "", 0)


def test_composition_agrees_with_the_skypilot_catalog(us_central1):
    """Every a2 machine type: our host part reproduces SkyPilot's host row, our total its host + accelerator."""
    from providers.skypilot import parse_skypilot_csv

    sky = parse_skypilot_csv(SKYPILOT_GCP, "gcp", AS_OF, "sky").offers
    sky = sky[(sky.region == "us-central1") & sky.instance_type.str.startswith("a2-highgpu") | (
        (sky.region == "us-central1") & (sky.instance_type == "a2-megagpu-16g"))]
    assert len(sky[sky.pricing == "on_demand"]) == 5
    for r in sky.itertuples():
        ours = _offer(us_central1.offers, r.instance_type, r.pricing)
        assert ours.usd_per_hour == pytest.approx(r.usd_per_hour, abs=2e-5), (r.instance_type, r.pricing)
    with SKYPILOT_GCP.open(encoding="utf-8") as f:
        hosts = [r for r in csv.DictReader(f) if r["Region"] == "us-central1" and r["InstanceType"].startswith("a2-")]
    for h in hosts:
        cpu, mem = gcp.MACHINE_SHAPES[h["InstanceType"]]
        assert round(cpu * 0.031611 + mem * 0.004237, 5) == float(h["Price"])
        assert round(cpu * 0.01581 + mem * 0.002118, 5) == float(h["SpotPrice"])


def test_spot_rows_and_placeholders(us_central1):
    df = us_central1.offers
    spot = _offer(df, "a2-highgpu-1g", "spot")
    assert spot.usd_per_hour == pytest.approx(12 * 0.01581 + 85 * 0.002118 + 1.4341, abs=1e-9)  # 1.80385
    assert (spot.payment, spot.term_hours, spot.zone) == ("", 0, "")
    # A100 80GB: the real on-demand and spot SKUs of the 2025-06-16 catalog (3.92808 / 1.5712, tests/fixtures/gcp/
    # README.md) on the A2 cores/RAM; the SkyPilot file had priced the on-demand GPU with the DWS SKU (1.8462)
    ultra = _offer(df, "a2-ultragpu-1g", "spot")
    assert ultra.usd_per_hour == pytest.approx(12 * 0.01581 + 170 * 0.002118 + 1.5712, abs=1e-9)
    assert _offer(df, "a2-ultragpu-1g", "on_demand").usd_per_hour == pytest.approx(
        12 * 0.031611 + 170 * 0.004237 + 3.92808, abs=1e-9)
    # a spot GPU part above its on-demand part (1.964, the SkyPilot file's own A100-80GB placeholder, against the
    # DWS-derived 1.8462 it took as on-demand): no spot row, reported
    skus = [_set_price(s, "1", 964000000) if s["skuId"] == "DD90-547C-2AAA" else
            _set_price(s, "1", 846200000) if s["skuId"] == "EDA0-3A70-3138" else s for s in _skus()]
    res = gcp.parse_region({"skus": skus}, "us-central1", AS_OF)
    assert res.offers[(res.offers.instance_type.str.startswith("a2-ultragpu")) & (res.offers.pricing == "spot")].empty
    assert "placeholder_spot" in {reason_code(r) for r in _reasons(res.skipped, "a2-ultragpu-1g")}
    # one spot part above its on-demand part (A2 spot cores at 0.04 > 0.031611): refused even if the total is lower
    skus = [_set_price(s, "0", 40000000) if s["skuId"] == "FX01-A2SP-CORE" else s for s in _skus()]
    res = gcp.parse_region({"skus": skus}, "us-central1", AS_OF)
    assert res.offers[(res.offers.instance_type == "a2-highgpu-1g") & (res.offers.pricing == "spot")].empty
    assert any(r.startswith("placeholder_spot: spot price of core:a2") for r in _reasons(res.skipped, "a2-highgpu-1g"))


def test_spot_without_on_demand_is_unverifiable():
    skus = [s for s in _skus() if s["skuId"] != "039F-D0DA-4055"]  # no A100 on-demand
    res = gcp.parse_region({"skus": skus}, "us-central1", AS_OF)
    assert res.offers[res.offers.instance_type == "a2-highgpu-1g"].pricing.tolist() == ["reserved_1y",
                                                                                        "reserved_3y"]
    codes = {reason_code(r) for r in _reasons(res.skipped, "a2-highgpu-1g")}
    assert {"missing_part", "unverifiable_spot"} <= codes


def test_committed_use_rows(us_central1):
    df = us_central1.offers
    od = _offer(df, "a2-highgpu-1g", "on_demand").usd_per_hour
    y1 = _offer(df, "a2-highgpu-1g", "reserved_1y")
    y3 = _offer(df, "a2-highgpu-1g", "reserved_3y")
    assert y1.usd_per_hour == pytest.approx(12 * 0.019915 + 85 * 0.002669 + 1.848362, abs=1e-9)
    assert y1.usd_per_hour == pytest.approx(1689.3711392 / 730, abs=1e-7)  # Cyclenerd month_1y / 730
    assert y3.usd_per_hour == pytest.approx(12 * 0.011064 + 85 * 0.001483 + 1.026868, abs=1e-9)
    for row, term in ((y1, 8760.0), (y3, 26280.0)):
        assert (row.payment, row.upfront_usd, row.term_hours) == ("no_upfront", 0.0, term)
        assert row.recurring_usd_per_hour == row.usd_per_hour
        assert not row.source.startswith("rule:")
    assert y1.usd_per_hour / od == pytest.approx(0.63, abs=1e-4)
    assert y3.usd_per_hour / od == pytest.approx(0.35, abs=1e-4)
    # 8 GPUs: the same parts scaled
    assert _offer(df, "a2-highgpu-8g", "reserved_1y").usd_per_hour == pytest.approx(8 * y1.usd_per_hour, abs=1e-8)


def test_commitment_not_below_on_demand_is_refused():
    skus = [_set_price(s, "3", 0) if s["skuId"] == "FX08-A100-CUD1" else s for s in _skus()]
    res = gcp.parse_region({"skus": skus}, "us-central1", AS_OF)
    assert res.offers[(res.offers.instance_type == "a2-highgpu-1g") & (res.offers.pricing == "reserved_1y")].empty
    assert "implausible_commitment" in {reason_code(r) for r in _reasons(res.skipped, "a2-highgpu-1g")}


def test_partial_parts_are_reported_never_priced(us_central1):
    df, skipped = us_central1.offers, us_central1.skipped
    # H100 on-demand is listed, A3 cores/RAM are not
    assert df[df.instance_type.str.startswith(("a3-highgpu", "a3-edgegpu"))].empty
    assert any("no core:a3, ram:a3" in r for r in _reasons(skipped, "a3-highgpu-8g"))
    # H200 without A3Ultra cores/RAM
    assert df[df.instance_type.str.startswith("a3-ultragpu")].empty
    # G2 spot: the L4 spot SKU is there, G2 spot cores/RAM are not
    assert df[(df.instance_type.str.startswith("g2-")) & (df.pricing == "spot")].empty
    assert any(r.startswith("missing_part: spot") for r in _reasons(skipped, "g2-standard-4"))
    # asia-east1 holds only the recorded 1-year A2 core commitment
    apac = gcp.parse_region(_listing(), "asia-east1", AS_OF)
    assert apac.offers.empty
    assert {reason_code(r) for r in _reasons(apac.skipped, region="asia-east1")} == {"missing_part"}


def test_other_series(us_central1):
    df = us_central1.offers
    mega = _offer(df, "a3-megagpu-8g", "on_demand")  # A3Plus cores/RAM + 8 Mega GPUs (not the "Plus" SKU)
    assert mega.usd_per_hour == pytest.approx(208 * 0.026924 + 1872 * 0.002344 + 8 * 10.344276, abs=1e-9)
    assert mega.gpu_model == "H100-80GB"
    a4 = _offer(df, "a4-highgpu-8g", "on_demand")  # 8 machine slices, vCPUs and RAM included
    assert (a4.usd_per_hour, a4.gpu_model, a4.vcpus, a4.memory_gib) == (pytest.approx(128.88), "B200", 224, 3968)
    assert _offer(df, "a4-highgpu-8g", "spot").usd_per_hour == pytest.approx(8 * 4.9542)
    g2 = _offer(df, "g2-standard-24", "on_demand")
    assert g2.usd_per_hour == pytest.approx(24 * 0.024988 + 96 * 0.0029275 + 2 * 0.56004, abs=1e-9)
    assert (g2.gpu_count, g2.interconnect) == (2.0, "pcie")
    # an A4 core SKU next to the slice: cannot tell what the slice covers -> not priced
    core = _sku("2922-40C5-B19F")
    core["description"] = "A4 Instance Core running in Americas"
    res = gcp.parse_region({"skus": _skus() + [core]}, "us-central1", AS_OF)
    assert res.offers[(res.offers.instance_type == "a4-highgpu-8g") & (res.offers.pricing == "on_demand")].empty
    assert "ambiguous_slice" in {reason_code(r) for r in _reasons(res.skipped, "a4-highgpu-8g")}


def test_other_regions_of_multiregional_skus():
    res = gcp.parse_region(_listing(), "us-east1", AS_OF)
    assert _offer(res.offers, "a2-highgpu-1g", "on_demand", "us-east1").usd_per_hour == pytest.approx(3.673385)
    assert res.offers[res.offers.pricing.str.startswith("reserved")].empty  # the commitments list us-central1 only
    assert gcp.parse_region(_listing(), "europe-north1", AS_OF).offers.empty


def test_non_usd_parts_refused():
    """PRICE_FAULTS BUG-12: a price is never relabelled or mixed; the usd_per_hour columns need USD."""
    skus = _skus()
    for s in skus:
        if s["skuId"] == "039F-D0DA-4055":
            s["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["currencyCode"] = "EUR"
    assert "EUR" in set(gcp.parse_skus({"skus": skus}).currency)
    with pytest.raises(PriceDataError, match="EUR"):
        gcp.parse_region({"skus": skus}, "us-central1", AS_OF)


def test_import_file_prices_every_region(tmp_path):
    res = gcp.import_file(LISTING, AS_OF)
    assert sorted(set(res.offers.region)) == ["us-central1", "us-east1", "us-west1"]
    assert res.offers.groupby(list(OFFER_KEY)).size().max() == 1
    pages = tmp_path / "pages.json"  # a list of listing pages works too
    pages.write_text(json.dumps([{"skus": _skus()[:10], "nextPageToken": "t"}, {"skus": _skus()[10:]}]),
                     encoding="utf-8")
    assert gcp.import_file(pages, AS_OF).offers.equals(res.offers)


# ---------------------------------------------------------------------------------------------------- fetch (HTTP)


@pytest.fixture(scope="session")
def httpserver_listen_address():
    return ("127.0.0.1", 0)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(gcp.API_KEY_ENV, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    gcp.clear_listing_cache()
    yield
    gcp.clear_listing_cache()


def _options(httpserver, **kw) -> FetchOptions:
    kw.setdefault("gcp_api_key", KEY)
    kw.setdefault("max_attempts", 2)
    kw.setdefault("timeout_s", 5.0)
    return FetchOptions(endpoints={"gcp": httpserver.url_for("/v1")}, **kw)


class _Pages:
    """A fake listing: the fixture's SKUs in ``n`` pages chained by nextPageToken; records every request."""

    def __init__(self, n=3, *, fail=None, repeat_token=False, currency=None):
        skus = _skus()
        size = -(-len(skus) // n)
        self.pages = [skus[i * size:(i + 1) * size] for i in range(n)]
        self.fail = fail or {}  # page index -> list of (status, headers) answered before the page (or forever)
        self.repeat_token = repeat_token
        self.currency = currency
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, request):
        from werkzeug.wrappers import Response

        args = dict(request.args)
        with self.lock:
            self.requests.append(args)
        token = args.get("pageToken", "")
        i = int(token[len("tok-"):]) if token else 0
        plan = self.fail.get(i)
        if plan:
            status, headers = plan[0] if isinstance(plan, list) else plan
            if isinstance(plan, list):
                plan.pop(0)
                if not plan:
                    del self.fail[i]
            return Response(json.dumps({"error": {"code": status, "message": f"boom for key {KEY}"}}), status=status,
                            headers=headers, content_type="application/json")
        skus = copy.deepcopy(self.pages[i])
        if self.currency:
            for s in skus:
                for info in s["pricingInfo"]:
                    for t in info["pricingExpression"]["tieredRates"]:
                        t["unitPrice"]["currencyCode"] = self.currency
        nxt = "" if i + 1 == len(self.pages) else f"tok-{i + 1}"
        if self.repeat_token and i == 1:
            nxt = "tok-1"
        return Response(json.dumps({"skus": skus, "nextPageToken": nxt}), content_type="application/json")


def _serve(httpserver, pages: _Pages) -> _Pages:
    httpserver.expect_request(PATH, method="GET").respond_with_handler(pages)
    return pages


def test_pagination_three_pages_fetched_once_per_refresh(httpserver):
    pages = _serve(httpserver, _Pages(3))
    options = _options(httpserver)
    regions = gcp.list_regions(options)
    assert regions == ["asia-east1", "europe-west1", "us-central1", "us-east1", "us-west1"]
    raws = {r: gcp.fetch_region(r, options) for r in ("us-central1", "us-east1", "us-west1")}
    assert len(pages.requests) == 3  # the global listing, once for list_regions and every region
    assert [r.get("pageToken", "") for r in pages.requests] == ["", "tok-1", "tok-2"]
    assert all(r["key"] == KEY and r["currencyCode"] == "USD" and r["pageSize"] == "5000" for r in pages.requests)
    raw = raws["us-central1"]
    assert raw["pages_listed"] == 3 and len(raw["pages"]) == 3 and raw["currency"] == "USD"
    assert all("us-central1" in s["serviceRegions"] for p in raw["pages"] for s in p["skus"])
    expected = gcp.parse_region(_listing(), "us-central1", AS_OF).offers
    assert gcp.parse_region(raw, "us-central1", AS_OF).offers.equals(expected)
    # a new refresh (new FetchOptions) lists again
    gcp.fetch_region("us-central1", _options(httpserver))
    assert len(pages.requests) == 6


def test_concurrent_regions_share_one_listing(httpserver):
    pages = _serve(httpserver, _Pages(3))
    options = _options(httpserver)
    out, errors = {}, []

    def work(region):
        try:
            out[region] = gcp.fetch_region(region, options)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in ("us-central1", "us-east1", "us-west1",
                                                                   "asia-east1")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(out) == 4
    assert len(pages.requests) == 3


def test_max_pages_reached_raises_truncated(httpserver):
    _serve(httpserver, _Pages(3))
    with pytest.raises(TruncatedPriceList) as e:
        gcp.fetch_region("us-central1", _options(httpserver, max_pages=1))
    assert e.value.next == "tok-1"


def test_repeated_page_token_is_caught(httpserver):
    pages = _serve(httpserver, _Pages(3, repeat_token=True))
    with pytest.raises(TruncatedPriceList) as e:
        gcp.fetch_region("us-central1", _options(httpserver))
    assert e.value.next == "tok-1"
    assert len(pages.requests) == 2


def test_429_with_retry_after_then_success(httpserver):
    pages = _serve(httpserver, _Pages(3, fail={1: [(429, {"Retry-After": "1"})]}))
    t0 = time.monotonic()
    raw = gcp.fetch_region("us-central1", _options(httpserver, max_attempts=3))
    assert time.monotonic() - t0 >= 0.9  # Retry-After honoured
    assert raw["pages_listed"] == 3
    assert [r.get("pageToken", "") for r in pages.requests] == ["", "tok-1", "tok-1", "tok-2"]


def test_persistent_500_in_the_middle_is_an_error_never_a_short_list(httpserver):
    pages = _serve(httpserver, _Pages(3, fail={1: (500, {})}))
    options = _options(httpserver, max_attempts=2)
    with pytest.raises(TruncatedPriceList) as e:
        gcp.fetch_region("us-central1", options)
    assert isinstance(e.value, ProviderError) and e.value.next == "tok-1"
    assert "HTTP 500" in str(e.value) and KEY not in str(e.value)
    assert [r.get("pageToken", "") for r in pages.requests] == ["", "tok-1", "tok-1"]  # retried, then gave up
    with pytest.raises(TruncatedPriceList):  # the other regions of this refresh fail fast, no new listing
        gcp.fetch_region("us-east1", options)
    assert len(pages.requests) == 3


def test_first_page_refused(httpserver):
    _serve(httpserver, _Pages(3, fail={0: (403, {})}))
    with pytest.raises(ProviderError) as e:
        gcp.list_regions(_options(httpserver))
    assert not isinstance(e.value, TruncatedPriceList)
    assert "HTTP 403" in str(e.value) and "Cloud Billing API" in str(e.value) and KEY not in str(e.value)


def test_missing_api_key(httpserver, monkeypatch):
    pages = _serve(httpserver, _Pages(1))
    options = _options(httpserver, gcp_api_key=None, regions=["us-central1"])
    for call in (lambda: gcp.list_regions(options), lambda: gcp.fetch_region("us-central1", options)):
        with pytest.raises(MissingCredentials) as e:
            call()
        assert "\n" not in str(e.value) and "Cloud Billing API" in str(e.value) and gcp.API_KEY_ENV in str(e.value)
    assert pages.requests == []
    monkeypatch.setenv(gcp.API_KEY_ENV, "from-env")
    gcp.fetch_region("us-central1", options)
    assert pages.requests[0]["key"] == "from-env"


def test_eur_answer_refused(httpserver):
    _serve(httpserver, _Pages(1, currency="EUR"))
    with pytest.raises(PriceDataError, match="asked for USD.*EUR"):
        gcp.fetch_region("us-central1", _options(httpserver))


def test_regions_given_are_validated_and_unknown_ones_skipped(httpserver):
    pages = _serve(httpserver, _Pages(2))
    options = _options(httpserver, regions=["us-central1", "us-central1", "europe-north1"])
    assert gcp.list_regions(options) == ["us-central1", "europe-north1"]
    assert pages.requests == []  # regions given: no listing needed
    with pytest.raises(InputError):
        gcp.list_regions(_options(httpserver, regions=["US Central"]))
    with pytest.raises(RegionSkipped):
        gcp.fetch_region("europe-north1", options)
