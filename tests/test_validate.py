"""Issue 9 point 2: every offer is validated (snapshot build, imports, live refresh) with a documented reason for
each rejection. Hand-made bad rows next to real rows of shared/data."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from providers._common import hourly_row, offers_frame
from providers.validate import (MEMORY_TOLERANCE, PRICE_PER_GPU_HOUR_MAX, not_sold_on_demand, skipped_dicts,
                                validate_offers)


def _row(pricing="on_demand", usd=10.0, *, itype="p4d.24xlarge", region="us-east-1", gpu="A100-40GB", count=8.0,
         mem=40.0, provider="aws", payment="", klass="", term=0.0, upfront=0.0, recurring=None):
    base = {"provider": provider, "region": region, "zone": "", "instance_type": itype, "gpu_model": gpu,
            "gpu_count": count, "gpu_memory_gib": mem, "vcpus": 96.0, "memory_gib": 1152.0, "interconnect": "nvlink",
            "currency": "USD", "source": "test", "as_of": "2026-07-30"}
    if pricing in ("on_demand", "spot", "capacity_block"):
        return hourly_row(pricing, usd, **base)
    return {**base, "pricing": pricing, "payment": payment, "offering_class": klass, "upfront_usd": upfront,
            "recurring_usd_per_hour": usd if recurring is None else recurring, "usd_per_hour": usd,
            "term_hours": term}


def _check(rows):
    res = validate_offers(offers_frame(rows))
    return res, {(s.instance_type, s.reason.split(":")[0]) for s in res.skipped}


@pytest.mark.parametrize("price", [math.inf, 1e308, 1e-300, -1.0, 0.0])
def test_prices_no_cloud_quotes_are_refused(price):
    # the cases: importers accepted inf, 1e308 and 1e-300
    rows = [_row(usd=21.957642), {**_row(usd=21.957642, itype="p4de.24xlarge", gpu="A100-80GB", mem=80.0),
                                  "usd_per_hour": price, "recurring_usd_per_hour": price}]
    res, why = _check(rows)
    assert why == {("p4de.24xlarge", "bad_price")} and len(res.offers) == 1


def test_bounds_are_per_gpu_hour():
    # AWS p6-b200.48xlarge on demand, 113.9328 USD/h for 8 B200 (AWS Price List 2026-07-28): well inside
    ok = _row(usd=113.9328, itype="p6-b200.48xlarge", gpu="B200", mem=180.0)
    too = _row(usd=PRICE_PER_GPU_HOUR_MAX * 8 * 1.01, itype="p5.48xlarge", gpu="H100-80GB", mem=80.0)
    res, why = _check([ok, too])
    assert why == {("p5.48xlarge", "bad_price")} and list(res.offers["instance_type"]) == ["p6-b200.48xlarge"]


def test_spot_commitments_and_terms_against_on_demand():
    od = _row(usd=55.04, itype="p5.48xlarge", gpu="H100-80GB", mem=80.0)
    h = dict(itype="p5.48xlarge", gpu="H100-80GB", mem=80.0)
    spot_bad = _row("spot", 55.04, **h)
    ri_bad = _row("reserved_1y", 56.0, payment="no_upfront", klass="convertible", term=8760.0, **h)
    # a 1-year all-upfront term total read as hourly (BUG-01 kind): 354,381 USD "per hour" is no price at all
    total = _row("reserved_1y", 354381.0, payment="partial_upfront", klass="convertible", term=8760.0, **h)
    y1 = _row("reserved_1y", 30.0, payment="all_upfront", klass="standard", term=8760.0, upfront=262800.0,
              recurring=0.0, **h)
    y3 = _row("reserved_3y", 31.0, payment="all_upfront", klass="standard", term=26280.0, upfront=814680.0,
              recurring=0.0, **h)
    block = _row("capacity_block", 60.0, **h)
    res, _ = _check([od, spot_bad, ri_bad, total, y1, y3, block])
    reasons = sorted(s.reason.split(":")[0] for s in res.skipped)
    assert reasons == ["bad_price", "commitment_not_below_on_demand", "commitment_not_below_on_demand",
                       "longer_term_not_cheaper", "spot_not_below_on_demand"]
    assert list(zip(res.offers["pricing"], res.offers["usd_per_hour"])) == [("on_demand", 55.04),
                                                                             ("reserved_1y", 30.0)]


def test_instance_total_memory_is_divided_and_noted():
    # a live AWS refresh read g6.48xlarge as 8 x 178.8 GiB L4s: the instance total in the per-GPU field
    g6 = _row(usd=13.35, itype="g6.48xlarge", gpu="L4", count=8.0, mem=178.8)
    res, why = _check([g6])
    assert not why and len(res.offers) == 1
    assert res.offers["gpu_memory_gib"].iloc[0] == pytest.approx(178.8 / 8)
    assert "instance total" in res.notes[0] and "g6.48xlarge" in res.notes[0]


def test_memory_neither_per_gpu_nor_total_is_refused():
    bad = _row(usd=13.35, itype="g6.48xlarge", gpu="L4", count=8.0, mem=64.0)
    _, why = _check([bad])
    assert why == {("g6.48xlarge", "gpu_memory_mismatch")}
    # within the tolerance: AWS reports 22,888 MiB for a 24 GB L4 (-7 %)
    ok = _row(usd=0.8048, itype="g6.xlarge", gpu="L4", count=1.0, mem=22888 / 1024)
    assert _check([ok])[1] == set() and MEMORY_TOLERANCE >= 0.07


@pytest.mark.parametrize("count", [0.0, -1.0, math.inf, 17.0])
def test_gpu_count_bounds(count):
    _, why = _check([_row(count=count)])
    assert why == {("p4d.24xlarge", "bad_gpu_count")}


def test_shapes_not_sold_on_demand():
    # GCP sells a3-highgpu-1g/2g/4g as Spot or Flex-start only (gpuhunt, GCP docs); a3-highgpu-8g on demand
    assert not_sold_on_demand("gcp", "a3-highgpu-4g") and not_sold_on_demand("gcp", "a4-highgpu-8g")
    assert not_sold_on_demand("gcp", "a3-highgpu-8g") is None and not_sold_on_demand("aws", "a3-highgpu-4g") is None
    h = dict(provider="gcp", region="us-central1", gpu="H100-80GB", mem=80.0)
    rows = [_row(usd=44.2, itype="a3-highgpu-4g", count=4.0, **h), _row("spot", 25.3, itype="a3-highgpu-4g",
                                                                        count=4.0, **h),
            _row(usd=88.49, itype="a3-highgpu-8g", count=8.0, **h)]
    res, why = _check(rows)
    assert why == {("a3-highgpu-4g", "not_sold_on_demand")}
    assert sorted(zip(res.offers["instance_type"], res.offers["pricing"])) == [
        ("a3-highgpu-4g", "spot"), ("a3-highgpu-8g", "on_demand")]
    d = skipped_dicts(res)
    assert d[0]["provider"] == "gcp" and d[0]["reason"].startswith("not_sold_on_demand")


def test_a_clean_frame_passes_unchanged():
    df = offers_frame([_row(usd=21.957642), _row("spot", 9.0)])
    res = validate_offers(df)
    assert not res.skipped and not res.notes
    pd.testing.assert_frame_equal(res.offers, df.reset_index(drop=True))


def test_user_catalog_rows_of_the_new_options_and_dates():
    # offers CSV (--catalog, prices import --input-format offers): a savings-plan row keeps its payment, class and term;
    # a class that is not a reservation's, a savings plan without its payment and a date with trailing text are
    # refused naming the line (a breaker's cases)
    from gpuopt.kernel.errors import InputError
    from providers.offers_csv import parse_offers_csv

    head = ("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,payment,offering_class,"
            "usd_per_hour,as_of\n")
    od = "aws,us-east-1,p5.48xlarge,H100-80GB,8,80,on_demand,,,55.04,2025-11-30\n"
    df = parse_offers_csv(head + od + "aws,us-east-1,p5.48xlarge,H100-80GB,8,80,savings_plan_1y,no_upfront,compute,"
                          "40,2025-11-30\n", "x.csv")
    sp = df[df["pricing"] == "savings_plan_1y"].iloc[0]
    assert (sp["payment"], sp["offering_class"], sp["term_hours"], sp["upfront_usd"]) == (
        "no_upfront", "compute", 8760.0, 0.0)
    for bad, said in (("reserved_1y,no_upfront,compute,40,2025-11-30", "is not a reservation's"),
                      ("savings_plan_3y,,compute,30,2025-11-30", "payment '' for a savings_plan_3y row"),
                      ("spot,,,20,2025-11-30garbage", "as_of '2025-11-30garbage' is not a date")):
        with pytest.raises(InputError, match="line 3: .*" + said.replace("(", r"\(")):
            parse_offers_csv(head + od + "aws,us-east-1,p5.48xlarge,H100-80GB,8,80," + bad + "\n", "x.csv")


def test_a_user_catalog_is_validated_like_the_snapshot(tmp_path):
    # a planted 1e-300 USD/h row never reaches a plan: refused with a warning naming the reason (breaker's case)
    from pricing_cache.store import load_offers

    p = tmp_path / "mine.csv"
    p.write_text("provider,region,instance_type,gpu_model,gpu_count,gpu_memory_gib,pricing,usd_per_hour\n"
                 "myco,dc1,box,A100-40GB,8,40,on_demand,1e-300\nmyco,dc1,box2,A100-40GB,8,40,on_demand,12\n")
    df, info = load_offers(p)
    assert list(df["instance_type"]) == ["box2"]
    assert info.warnings == ("mine.csv: 1 rows refused by the price checks (bad_price 1); see `gpuopt prices list "
                             "--catalog` for what is left",)
    again, info2 = load_offers(p)  # from the checked copy: the same rows and the same warning
    assert list(again["instance_type"]) == ["box2"] and info2.warnings == info.warnings


def test_not_sold_as_refuses_commitments_of_spot_only_shapes():
    # GCP sells a3-highgpu-1g/2g/4g as Spot or Flex-start only; the calculator still lists CUD prices computed from
    # SKUs for them, which are not offers (a fresh user's plan bought one)
    h = dict(provider="gcp", region="us-central1", gpu="H100-80GB", mem=80.0, itype="a3-highgpu-2g", count=2.0)
    rows = [_row("spot", 12.7, **h), _row("reserved_3y", 10.1, payment="no_upfront", term=26280.0, **h),
            _row(usd=44.2, itype="a3-highgpu-8g".upper(), count=8.0, provider="gcp", region="us-central1",
                 gpu="H100-80GB", mem=80.0)]
    _, why = _check(rows)
    assert why == {("a3-highgpu-2g", "not_sold_as")}  # and A3-HIGHGPU-8G on demand (any case) is sold
