"""ec2instances.info importer on the real 2017-11-12 GPU subset and the real GetProducts m5.large payload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import OFFER_COLUMNS
from providers._common import OFFER_KEY
from providers.ec2instances import (PARTIAL_UPFRONT_SHARE, parse_instances_json, partial_upfront_shares,
                                    split_reserved)

INPUTS = Path(__file__).resolve().parents[1] / "pricing_cache" / "data" / "inputs"
EC2 = INPUTS / "ec2instances_2017-11-12_gpu_subset.json"
GETPRODUCTS = INPUTS / "GetProducts_m5_large.json"
SOURCE = "ec2instances.info:2017-11-12"


@pytest.fixture(scope="module")
def res():
    return parse_instances_json(EC2, "2017-11-12", SOURCE)


@pytest.fixture(scope="module")
def raw():
    return json.loads(EC2.read_text())


def _one(df, **eq):
    for k, v in eq.items():
        df = df[df[k] == v]
    assert len(df) == 1, eq
    return df.iloc[0]


def test_shape_and_unique(res):
    df = res.offers
    assert tuple(df.columns) == OFFER_COLUMNS
    assert (df.groupby(list(OFFER_KEY)).size() == 1).all()
    assert set(df["pricing"]) == {"on_demand", "reserved_1y", "reserved_3y"}
    assert set(df["instance_type"]) == {"p2.xlarge", "p2.8xlarge", "p2.16xlarge", "p3.2xlarge", "p3.8xlarge",
                                        "p3.16xlarge", "g3.4xlarge", "g3.8xlarge", "g3.16xlarge"}
    assert set(df["currency"]) == {"USD"} and (df["usd_per_hour"] > 0).all()
    assert (df["as_of"] == "2017-11-12").all() and df["source"].str.startswith(SOURCE).all()


def test_linux_on_demand_and_standard_reserved_rates(res, raw):
    linux = next(i for i in raw if i["instance_type"] == "p3.2xlarge")["pricing"]["us-east-1"]["linux"]
    df = res.offers
    od = _one(df, instance_type="p3.2xlarge", region="us-east-1", pricing="on_demand")
    assert od["usd_per_hour"] == float(linux["ondemand"]) == 3.06
    assert (od["gpu_model"], od["gpu_count"], od["vcpus"], od["memory_gib"]) == ("V100-16GB", 1, 8, 61)
    no = _one(df, instance_type="p3.2xlarge", region="us-east-1", pricing="reserved_1y", payment="no_upfront")
    assert no["usd_per_hour"] == float(linux["reserved"]["yrTerm1Standard.noUpfront"]) == 2.088
    assert (no["upfront_usd"], no["recurring_usd_per_hour"], no["term_hours"]) == (0, 2.088, 8760)
    al = _one(df, instance_type="p3.2xlarge", region="us-east-1", pricing="reserved_3y", payment="all_upfront")
    assert al["usd_per_hour"] == float(linux["reserved"]["yrTerm3Standard.allUpfront"]) == 1.159
    assert al["recurring_usd_per_hour"] == 0 and al["upfront_usd"] == pytest.approx(1.159 * 26280, abs=0.01)
    # the mswin (Windows) rate 5.611 in ap-northeast-1 is never read
    assert 5.611 not in set(df["usd_per_hour"])
    # Convertible rates are not in the Standard rows: p3.2xlarge us-east-1 yrTerm1Convertible.allUpfront = 2.243
    assert 2.243 not in set(df[(df.instance_type == "p3.2xlarge") & (df.region == "us-east-1")]["usd_per_hour"])


def test_partial_upfront_split_from_real_get_products(res):
    shares = partial_upfront_shares(json.loads(GETPRODUCTS.read_text()))
    # m5.large Standard 1yr partial: 252 USD upfront + 0.029 USD/h
    assert shares[(1, "standard")] == pytest.approx((252 / 8760) / (252 / 8760 + 0.029))
    assert shares[(3, "standard")] == pytest.approx((505 / 26280) / (505 / 26280 + 0.019))
    assert shares == pytest.approx(PARTIAL_UPFRONT_SHARE)
    p = _one(res.offers, instance_type="p3.2xlarge", region="us-east-1", pricing="reserved_1y",
             payment="partial_upfront")
    assert p["usd_per_hour"] == 1.99
    assert p["upfront_usd"] == pytest.approx(1.99 * shares[(1, "standard")] * 8760, abs=0.01)
    assert p["recurring_usd_per_hour"] + p["upfront_usd"] / 8760 == pytest.approx(1.99, abs=1e-9)
    assert "GetProducts m5.large" in p["source"]


def test_every_reserved_row_is_consistent(res):
    r = res.offers[res.offers["pricing"] != "on_demand"]
    eff = r["recurring_usd_per_hour"] + r["upfront_usd"] / r["term_hours"]
    assert ((eff - r["usd_per_hour"]).abs() < 1e-6).all()
    assert set(r["payment"]) == {"no_upfront", "partial_upfront", "all_upfront"}


def test_gpu_models_from_family_table(res):
    models = dict(zip(res.offers["instance_type"], res.offers["gpu_model"]))
    assert models["p2.16xlarge"] == "K80" and models["g3.4xlarge"] == "M60"
    count = dict(zip(res.offers["instance_type"], res.offers["gpu_count"]))
    assert (count["p2.16xlarge"], count["p3.16xlarge"], count["g3.16xlarge"]) == (16, 8, 4)
    ic = dict(zip(res.offers["instance_type"], res.offers["interconnect"]))
    assert (ic["p3.16xlarge"], ic["p3.2xlarge"], ic["p2.16xlarge"]) == ("nvlink", "pcie", "pcie")


def test_convertible_instead_of_standard(raw):
    conv = parse_instances_json(raw, "2017-11-12", SOURCE, offering_classes=("convertible",))
    row = _one(conv.offers, instance_type="p3.2xlarge", region="us-east-1", pricing="reserved_1y",
               payment="all_upfront")
    assert row["usd_per_hour"] == 2.243
    with pytest.raises(InputError):
        parse_instances_json(raw, "2017-11-12", SOURCE, offering_classes=("standard", "convertible"))


def test_missing_rates_reported_not_zero():
    data = [{"instance_type": "p3.2xlarge", "GPU": 1, "vCPU": 8, "memory": 61.0,
             "pricing": {"us-east-1": {"linux": {"ondemand": "N/A", "reserved": {"yrTerm1Standard.noUpfront": "",
                                                                                 "yrTerm1Standard.allUpfront": "0"}}}}}]
    res = parse_instances_json(data, "2017-11-12", SOURCE)
    assert res.offers.empty
    assert sorted(s.reason.split(":")[0] for s in res.skipped) == ["unknown_price", "unknown_price", "zero_price"]


def test_split_reserved_rules():
    assert split_reserved(1.0, "all_upfront", 8760, 0.5) == (8760.0, 0.0)
    assert split_reserved(1.0, "no_upfront", 8760, 0.5) == (0.0, 1.0)
    up, rec = split_reserved(1.0, "partial_upfront", 8760, 0.5)
    assert up == 4380.0 and rec == pytest.approx(0.5)
