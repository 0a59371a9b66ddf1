"""AWS live adapter (providers/aws.py): real Pricing API / EC2 payloads, PRICE_FAULTS cases, botocore Stubber for the
Pricing API (moto does not mock it) and moto for EC2. No network: every client is stubbed or mocked.

Fixtures: tests/fixtures/aws/README.md (real payloads copied unchanged; ``*.derived.*`` files built in the same
shape by derive_fixtures.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from moto import mock_aws  # imported before any session is made: moto hooks botocore's handlers at import

from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import OFFER_COLUMNS, OFFER_DTYPES
from providers import IMPORTERS
from providers import aws
from providers._common import OFFER_KEY
from providers.base import FetchOptions, InvalidCredentials, MissingCredentials, RegionSkipped, TruncatedPriceList

FIX = Path(__file__).resolve().parent / "fixtures" / "aws"
M5 = FIX / "GetProducts_m5_large.json"
GPU_PRICES = FIX / "GetProducts_gpu_us-east-1.derived.json"
GPU_SPOT = FIX / "DescribeSpotPriceHistory_gpu_us-east-1.derived.json"
MOTO_TYPES = FIX / "moto-5.2.5_instance_types_with_GpuInfo.json"
P3_2X = FIX / "DescribeInstanceTypes_p3_2xlarge.derived.json"
BULK = FIX / "AmazonEC2_bulk_sample.derived.csv"

#: PRICE_FAULTS BUG-10 input, verbatim.
BUG10_G6F_LARGE = json.loads(
    '{"InstanceType":"g6f.large","GpuInfo":{"Gpus":[{"Name":"L4","Manufacturer":"NVIDIA","Count":0,'
    '"LogicalGpuCount":1,"GpuPartitionSize":0.125,"MemoryInfo":{"SizeInMiB":2861}}],"TotalGpuMemoryInMiB":2861}}')


def _one(df, **eq):
    for k, v in eq.items():
        df = df[df[k] == v]
    assert len(df) == 1, (eq, len(df))
    return df.iloc[0]


def _moto_page() -> dict:
    return {"InstanceTypes": list(json.loads(MOTO_TYPES.read_text()).values())}


def _gpu_entries() -> list[str]:
    return json.loads(GPU_PRICES.read_text())["PriceList"]


def _entry(itype: str) -> str:
    return next(e for e in _gpu_entries() if json.loads(e)["product"]["attributes"]["instanceType"] == itype)


@functools.lru_cache(maxsize=1)
def _fake_session() -> boto3.Session:
    """One session for every stubbed client: botocore loads a service model (EC2's is large) once per session."""
    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")


def _opts(**kw) -> FetchOptions:
    kw.setdefault("max_attempts", 3)
    kw.setdefault("timeout_s", 5.0)
    return FetchOptions(**kw)


# ------------------------------------------------------------------------------------------------ price list


def test_m5_large_on_demand_and_all_12_reserved_terms_from_the_real_payload():
    raw = json.loads(M5.read_text())
    df = aws.parse_price_list(M5)
    assert tuple(df.columns) == OFFER_COLUMNS + ("operating_system",)
    assert len(df) == 13 and df.attrs["skipped"] == []
    assert (df.groupby(list(OFFER_KEY)).size() == 1).all()  # offering_class is part of the key since schema 3
    assert set(df["region"]) == {"us-east-1"}  # mapped from "US East (N. Virginia)": the 2021 entry has no regionCode
    assert set(df["currency"]) == {"USD"} and set(df["as_of"]) == {"2021-02-05"}
    od = _one(df, pricing="on_demand")
    assert (od["usd_per_hour"], od["upfront_usd"], od["term_hours"], od["payment"]) == (0.096, 0, 0, "")
    assert (od["vcpus"], od["memory_gib"], od["operating_system"]) == (2, 8, "Linux")
    # every reserved term equals the file's own dimensions: Quantity = upfront total, Hrs = recurring hourly
    n = 0
    for term in raw["terms"]["Reserved"].values():
        ta = term["termAttributes"]
        dims = {d["unit"]: float(d["pricePerUnit"]["USD"]) for d in term["priceDimensions"].values()}
        pricing = {"1yr": "reserved_1y", "3yr": "reserved_3y"}[ta["LeaseContractLength"]]
        payment = ta["PurchaseOption"].lower().replace(" ", "_")
        row = _one(df, pricing=pricing, payment=payment, offering_class=ta["OfferingClass"])
        hours = {"reserved_1y": 8760, "reserved_3y": 26280}[pricing]
        assert row["upfront_usd"] == dims.get("Quantity", 0.0)
        assert row["recurring_usd_per_hour"] == dims["Hrs"]
        assert row["usd_per_hour"] == pytest.approx(dims["Hrs"] + dims.get("Quantity", 0.0) / hours, abs=1e-12)
        assert row["term_hours"] == hours
        n += 1
    assert n == 12


def test_m5_large_partial_upfront_split_exact_numbers():
    df = aws.parse_price_list(M5)
    expect = {  # (pricing, class): (upfront USD, recurring USD/h) as written in GetProducts_m5_large.json
        ("reserved_1y", "standard"): (252.0, 0.029), ("reserved_3y", "standard"): (505.0, 0.019),
        ("reserved_1y", "convertible"): (294.0, 0.034), ("reserved_3y", "convertible"): (592.0, 0.023)}
    for (pricing, klass), (fee, hourly) in expect.items():
        row = _one(df, pricing=pricing, payment="partial_upfront", offering_class=klass)
        hours = 8760 if pricing == "reserved_1y" else 26280
        assert (row["upfront_usd"], row["recurring_usd_per_hour"]) == (fee, hourly)
        assert row["usd_per_hour"] == pytest.approx(hourly + fee / hours, abs=1e-12)
    assert _one(df, pricing="reserved_1y", payment="partial_upfront", offering_class="standard")[
        "usd_per_hour"] == pytest.approx(0.0577671233, abs=1e-9)
    al = _one(df, pricing="reserved_3y", payment="all_upfront", offering_class="standard")
    assert (al["upfront_usd"], al["recurring_usd_per_hour"]) == (949.0, 0.0)
    assert al["usd_per_hour"] == pytest.approx(949 / 26280)


def test_price_list_entries_are_json_strings_in_a_get_products_response():
    """botocore's own example: PriceList entries are JSON strings; an EBS Storage product is not an instance."""
    ex = json.loads((FIX / "pricing_2017-10-15_examples-1.json").read_text())
    out = ex["examples"]["GetProducts"][0]["output"]
    assert isinstance(out["PriceList"][0], str)
    df = aws.parse_price_list(out)
    assert df.empty and "productFamily=Storage (1)" in df.attrs["notes"][0]
    as_string = aws.parse_price_list([M5.read_text()])
    as_pages = aws.parse_price_list([{"PriceList": [M5.read_text()]}])
    assert as_string.equals(aws.parse_price_list(M5)) and as_pages.equals(as_string)
    with pytest.raises(InputError):
        aws.parse_price_list({"not": "a price list"})


def test_bug03_capacitystatus_used_row_is_the_on_demand_price():
    """PRICE_FAULTS BUG-03: Allocated (0.0) and Unused capacity-reservation products are not the on-demand price."""
    df = aws.parse_price_list(FIX / "bug03_p3_2xlarge_capacitystatus.derived.json")
    row = _one(df, instance_type="p3.2xlarge")
    assert (row["region"], row["pricing"], row["usd_per_hour"]) == ("us-east-1", "on_demand", 3.06)
    assert "capacitystatus=AllocatedCapacityReservation (1)" in df.attrs["notes"][0]
    assert "capacitystatus=UnusedCapacityReservation (1)" in df.attrs["notes"][0]
    assert df.attrs["skipped"] == []  # the 0.0 row is a filtered variant, never a price


def test_bug03_two_used_products_for_one_key_raise():
    """PRICE_FAULTS BUG-03: after filtering the key must have exactly one row, else an error."""
    entries = json.loads((FIX / "bug03_p3_2xlarge_capacitystatus.derived.json").read_text())["PriceList"]
    used = json.loads(entries[2])
    other = json.loads(entries[2])
    other["product"]["sku"] = "DERIVEDOTHERSKU"
    other["terms"]["OnDemand"] = {k.replace(used["product"]["sku"], "DERIVEDOTHERSKU"): v
                                  for k, v in used["terms"]["OnDemand"].items()}
    with pytest.raises(PriceDataError, match="more than one product"):
        aws.parse_price_list([used, other])
    assert len(aws.parse_price_list([used, used])) == 1  # the same SKU and term repeated verbatim: one row


def test_bug04_linux_is_not_sql_windows_or_byol():
    """PRICE_FAULTS BUG-04: Linux 0.526 (not SQL Web 0.611); Windows 0.710 (BYOL 0.526 never stands in)."""
    f = FIX / "bug04_g4dn_xlarge_os_variants.derived.json"
    linux = aws.parse_price_list(f)
    assert _one(linux, instance_type="g4dn.xlarge")["usd_per_hour"] == 0.526
    assert "preInstalledSw=SQL Web (1)" in linux.attrs["notes"][0]
    both = aws.parse_price_list(f, operating_systems=("Linux", "Windows"))
    assert len(both) == 2
    assert _one(both, operating_system="Linux")["usd_per_hour"] == 0.526
    assert _one(both, operating_system="Windows")["usd_per_hour"] == 0.710
    assert "licenseModel=Bring your own license (1)" in both.attrs["notes"][0]


def _zero_item() -> dict:
    item = json.loads(_entry("p3.2xlarge"))
    for term in item["terms"]["OnDemand"].values():
        for d in term["priceDimensions"].values():
            d["pricePerUnit"]["USD"] = "0.0000000000"
    for term in item["terms"]["Reserved"].values():
        ta = term["termAttributes"]
        for d in term["priceDimensions"].values():
            if ta["OfferingClass"] == "standard" and ta["LeaseContractLength"] == "1yr":
                if d["unit"] == "Quantity" or ta["PurchaseOption"] == "No Upfront":
                    d["pricePerUnit"]["USD"] = "0"
            if ta["OfferingClass"] == "standard" and ta["LeaseContractLength"] == "3yr" and d["unit"] == "Hrs" \
                    and ta["PurchaseOption"] == "No Upfront":
                d["pricePerUnit"] = {}
    return item


def test_bug07_zero_and_missing_prices_are_excluded_and_reported_never_0():
    """PRICE_FAULTS BUG-07: a 0 price (or none) is never an offer; All Upfront's recurring 0 is its real shape."""
    df = aws.parse_price_list([_zero_item()])
    assert (df["usd_per_hour"] > 0).all()
    assert set(df["pricing"]) == {"reserved_1y", "reserved_3y"}
    assert len(_one(df, pricing="reserved_3y", payment="all_upfront", offering_class="standard")) > 0
    reasons = sorted(s.reason.split(":")[0] for s in df.attrs["skipped"])
    assert reasons == ["unknown_price", "zero_price", "zero_price", "zero_price"]
    assert any("on-demand" in s.reason and "zero_price" in s.reason for s in df.attrs["skipped"])


def test_currency_is_the_price_per_unit_key_and_carried():
    item = json.loads(_entry("g4dn.xlarge"))
    for term in item["terms"]["OnDemand"].values():
        for d in term["priceDimensions"].values():
            d["pricePerUnit"] = {"CNY": "4.1000000000"}
    row = _one(aws.parse_price_list([item]), pricing="on_demand")
    assert (row["currency"], row["usd_per_hour"]) == ("CNY", 4.1)


def test_bulk_csv_gives_the_same_rows_as_the_api():
    bulk = aws.parse_bulk_csv(BULK)
    m5 = bulk[bulk["instance_type"] == "m5.large"].drop(columns=["source"]).reset_index(drop=True)
    api = aws.parse_price_list(M5).drop(columns=["source"])
    key = ["pricing", "payment", "offering_class"]
    assert m5.sort_values(key).reset_index(drop=True).equals(api.sort_values(key).reset_index(drop=True))
    assert _one(bulk, instance_type="p3.2xlarge")["usd_per_hour"] == 3.06  # BUG-03 in the CSV
    assert _one(bulk, instance_type="g4dn.xlarge")["usd_per_hour"] == 0.526  # BUG-04 in the CSV
    assert set(bulk["source"]) == {"aws-bulk-csv"} and set(bulk["as_of"]) == {"2021-02-05"}
    notes = bulk.attrs["notes"][0]
    for part in ("capacitystatus=AllocatedCapacityReservation (1)", "operatingSystem=Windows (2)",
                 "preInstalledSw=SQL Web (1)"):
        assert part in notes


def test_bulk_csv_zero_price_reported_with_its_line_and_bad_files_refused():
    lines = BULK.read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if '"g4dn.xlarge"' in ln and '"Linux","No License required"' in ln
             and '"NA"' in ln and '"SQL Web"' not in ln)
    lines[i] = lines[i].replace('"0.5260000000"', '"0.0000000000"')
    df = aws.parse_bulk_csv("\n".join(lines) + "\n")
    assert "g4dn.xlarge" not in set(df["instance_type"])
    (sk,) = [s for s in df.attrs["skipped"] if s.instance_type == "g4dn.xlarge"]
    assert sk.reason.startswith("zero_price") and sk.line == i + 1
    with pytest.raises(InputError, match="FormatVersion"):
        aws.parse_bulk_csv("a,b\n1,2\n3,4\n5,6\n7,8\n9,10\n")
    with pytest.raises(InputError, match="lacks"):
        aws.parse_bulk_csv("\n".join(lines[:5] + ['"SKU","Unit"']) + "\n")


# ------------------------------------------------------------------------------------------------ GPU facts


def test_bug10_g6f_large_fractional_gpu_from_the_case_input():
    """PRICE_FAULTS BUG-10: 1 x 0.125 of an L4 (never 0, never 1); the share's memory is 2,861 MiB."""
    df = aws.parse_instance_types([BUG10_G6F_LARGE])
    row = _one(df, instance_type="g6f.large")
    assert row["gpu_model"] == "L4" and row["gpu_count"] == 0.125 and isinstance(row["gpu_count"], float)
    assert row["gpu_memory_gib"] * 1024 == pytest.approx(22888)  # ONE WHOLE L4 (22.35 GiB), as g6 reports it
    assert row["gpu_count"] * row["gpu_memory_gib"] * 1024 == pytest.approx(2861)  # = TotalGpuMemoryInMiB
    assert row["total_gpu_memory_gib"] * 1024 == 2861 and df.attrs["notes"] == []


def test_instance_types_moto_table_fractions_memory_and_unknown_gpus():
    df = aws.parse_instance_types(MOTO_TYPES)
    counts = dict(zip(df["instance_type"], df["gpu_count"]))
    assert (counts["g6f.large"], counts["g6f.xlarge"], counts["g6f.2xlarge"], counts["g6f.4xlarge"]) == (
        0.125, 0.125, 0.25, 0.5)
    assert counts["p5.48xlarge"] == 8 and counts["g4dn.xlarge"] == 1
    # gpu_count x one whole GPU's memory = the instance's TotalGpuMemoryInMiB, for every type
    assert ((df["gpu_count"] * df["gpu_memory_gib"] - df["total_gpu_memory_gib"]).abs() < 1e-6).all()
    models = dict(zip(df["instance_type"], df["gpu_model"]))
    assert (models["p4d.24xlarge"], models["p4de.24xlarge"], models["p3dn.24xlarge"]) == (
        "A100-40GB", "A100-80GB", "V100-32GB")
    assert dict(zip(df["instance_type"], df["interconnect"]))["p5.48xlarge"] == "nvlink"
    assert dict(zip(df["instance_type"], df["interconnect"]))["g6f.large"] == "pcie"
    unknown = {s.instance_type: s.reason for s in df.attrs["skipped"]}
    assert unknown["g5g.xlarge"].startswith("unknown_gpu") and "'T4g'" in unknown["g5g.xlarge"]
    assert "p6-b300.48xlarge" in unknown and len(df) + len(unknown) == 65


def test_instance_types_real_pages_and_lists():
    df = aws.parse_instance_types(FIX / "DescribeInstanceTypes_t3_micro_and_p3_16xl.json")
    row = _one(df, instance_type="p3.16xlarge")
    assert (row["gpu_model"], row["gpu_count"], row["gpu_memory_gib"], row["vcpus"], row["memory_gib"],
            row["interconnect"]) == ("V100-16GB", 8.0, 16.0, 64.0, 488.0, "nvlink")
    assert "t3.micro" not in set(df["instance_type"]) and "1 instance type(s) without GpuInfo" in df.attrs["notes"][0]
    g3 = aws.parse_instance_types(FIX / "FilterVerbose_g3_16xlarge.json")  # a list of instance types
    assert _one(g3, instance_type="g3.16xlarge")[["gpu_model", "gpu_count", "gpu_memory_gib"]].tolist() == [
        "M60", 4.0, 8.0]
    g2 = aws.parse_instance_types(FIX / "DescribeInstanceTypes_g2_2xlarge.json")
    assert g2.empty and "'K520'" in g2.attrs["skipped"][0].reason


# ------------------------------------------------------------------------------------------------ spot


def test_spot_newest_per_availability_zone_real_m5_history():
    raw = json.loads((FIX / "DescribeSpotPriceHistory_m5_large.json").read_text())["SpotPriceHistory"]
    expect = {}
    for e in raw:
        ts = dt.datetime.fromisoformat(e["Timestamp"])
        if e["AvailabilityZone"] not in expect or ts > expect[e["AvailabilityZone"]][0]:
            expect[e["AvailabilityZone"]] = (ts, float(e["SpotPrice"]))
    df = aws.parse_spot_history(FIX / "DescribeSpotPriceHistory_m5_large.json")
    got = {r.zone: (r.timestamp, r.spot_usd_per_hour) for r in df.itertuples()}
    assert got == {z: (ts.isoformat(), p) for z, (ts, p) in expect.items()}
    assert got["us-east-1f"] == ("2021-02-09T01:40:10+00:00", 0.0437)
    assert got["us-east-1a"][1] == 0.0423 and got["us-east-1c"][1] == 0.0381
    # boto3 pages carry datetimes, in any order: the same answer
    pages = [{"SpotPriceHistory": [{**e, "Timestamp": dt.datetime.fromisoformat(e["Timestamp"])}
                                   for e in reversed(raw)]}]
    again = aws.parse_spot_history(pages)
    assert dict(zip(again["zone"], again["spot_usd_per_hour"])) == {z: p for z, (_, p) in expect.items()}


def test_spot_zero_newest_price_and_other_products():
    t0 = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    page = {"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g4dn.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.2", "Timestamp": t0},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g4dn.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.000000", "Timestamp": t0 + dt.timedelta(hours=1)},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "g4dn.xlarge", "ProductDescription": "Windows",
         "SpotPrice": "0.3", "Timestamp": t0}]}
    df = aws.parse_spot_history(page)
    assert df.empty
    assert df.attrs["skipped"][0].reason.startswith("zero_price") and "Windows (1)" in df.attrs["notes"][0]


# ------------------------------------------------------------------------------------------------ parse_region


def _raw_from_fixtures() -> dict:
    return {"price_list": _gpu_entries(), "instance_types": [_moto_page(), json.loads(P3_2X.read_text())],
            "spot": [json.loads(GPU_SPOT.read_text())]}


def test_parse_region_on_demand_standard_reserved_and_spot_per_zone():
    res = aws.parse_region(_raw_from_fixtures(), "us-east-1", "2026-11-30")
    df = res.offers
    assert tuple(df.columns) == OFFER_COLUMNS and dict(df.dtypes.astype(str)) == OFFER_DTYPES
    assert (df.groupby(list(OFFER_KEY)).size() == 1).all()
    assert set(df["as_of"]) == {"2026-11-30"} and set(df["currency"]) == {"USD"} and (df["usd_per_hour"] > 0).all()
    assert set(df.loc[df["pricing"] == "spot", "source"]) == {"aws-ec2-spot-history"}
    assert set(df.loc[df["pricing"] != "spot", "source"]) == {"aws-pricing-api"}
    # p3.2xlarge: on-demand + Standard and Convertible reserved (1y/3y x no/all upfront), told apart by
    # offering_class (schema 3; before it the Convertible rows were left out)
    p3 = df[(df["instance_type"] == "p3.2xlarge") & (df["pricing"] != "spot")]
    assert sorted(zip(p3["pricing"], p3["payment"], p3["offering_class"])) == [
        ("on_demand", "", ""),
        ("reserved_1y", "all_upfront", "convertible"), ("reserved_1y", "all_upfront", "standard"),
        ("reserved_1y", "no_upfront", "convertible"), ("reserved_1y", "no_upfront", "standard"),
        ("reserved_3y", "all_upfront", "convertible"), ("reserved_3y", "all_upfront", "standard"),
        ("reserved_3y", "no_upfront", "convertible"), ("reserved_3y", "no_upfront", "standard")]
    r1 = _one(p3, pricing="reserved_1y", payment="no_upfront", offering_class="standard")
    assert r1["usd_per_hour"] == 2.088 and r1["gpu_model"] == "V100-16GB"  # ec2instances 2017 Standard 1y no upfront
    c1 = _one(p3, pricing="reserved_1y", payment="no_upfront", offering_class="convertible")
    assert c1["usd_per_hour"] > r1["usd_per_hour"]  # a Convertible term is dearer than the Standard one
    # g6f.4xlarge: half an L4, on-demand and spot per zone (AZ ids)
    g6f = df[df["instance_type"] == "g6f.4xlarge"]
    assert set(g6f["gpu_count"]) == {0.5} and set(g6f["gpu_memory_gib"] * 1024) == {22888}
    spot = g6f[g6f["pricing"] == "spot"]
    assert dict(zip(spot["zone"], spot["usd_per_hour"])) == {"use1-az1": 0.4098, "use1-az2": 0.3797,
                                                             "use1-az4": 0.4115, "use1-az6": 0.4051}
    assert set(df.loc[df["pricing"] != "spot", "zone"]) == {""}
    # p5.48xlarge: spot = on-demand 55.04 in use1-az1 and az4 is the catalog's placeholder: reported, not an offer
    p5_spot = set(df.loc[(df["instance_type"] == "p5.48xlarge") & (df["pricing"] == "spot"), "zone"])
    assert "use1-az1" not in p5_spot and "use1-atl2-az1" in p5_spot
    placeholders = [s for s in res.skipped if s.reason.startswith("placeholder_spot")]
    assert {(s.instance_type, s.region) for s in placeholders} == {("p5.48xlarge", "us-east-1")}
    assert len(placeholders) == 2
    # GPU types AWS reports without a known GPU are reported with the region filled in
    assert any(s.instance_type == "g5g.xlarge" and s.reason.startswith("unknown_gpu") and s.region == "us-east-1"
               for s in res.skipped)


def test_parse_region_spot_placeholders_moto_style_and_ten_percent():
    """moto serves 0.00001 for every spot price; spot exactly 10 % of on-demand is AWS's placeholder."""
    t = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    spot = {"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g4dn.xlarge", "ProductDescription":
         "Linux/UNIX (Amazon VPC)", "SpotPrice": "0.00001", "Timestamp": t},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "g4dn.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.052600", "Timestamp": t},
        {"AvailabilityZone": "us-east-1c", "InstanceType": "g4dn.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.210000", "Timestamp": t},
        {"AvailabilityZone": "us-east-1c", "InstanceType": "g5.xlarge", "ProductDescription": "Linux/UNIX",
         "SpotPrice": "0.400000", "Timestamp": t}]}
    raw = {"price_list": [_entry("g4dn.xlarge")], "instance_types": [_moto_page()], "spot": [spot]}
    res = aws.parse_region(raw, "us-east-1", "2025-01-01")
    spot_rows = res.offers[res.offers["pricing"] == "spot"]
    assert list(zip(spot_rows["zone"], spot_rows["usd_per_hour"])) == [("us-east-1c", 0.21)]
    reasons = {s.reason.split(":")[0] for s in res.skipped if s.source == "aws-ec2-spot-history"}
    assert reasons == {"placeholder_spot", "unverifiable_spot"}  # g5.xlarge has no on-demand price here


def test_parse_region_reports_other_regions_and_missing_payloads():
    raw = {"price_list": _gpu_entries()[:1], "instance_types": [_moto_page()], "spot": []}
    res = aws.parse_region(raw, "us-west-2", "2026-11-30")
    assert res.offers.empty and any(s.reason.startswith("other_region") for s in res.skipped)
    with pytest.raises(InputError):
        aws.parse_region({"price_list": []}, "us-east-1", "2026-11-30")


def test_import_file_json_and_bulk_csv_with_gpu_facts(tmp_path):
    facts = [_moto_page(), json.loads(P3_2X.read_text())]
    res = aws.import_file(GPU_PRICES, "2026-11-30", gpu_facts=facts)
    assert tuple(res.offers.columns) == OFFER_COLUMNS and len(res.offers) == 6 + 4 + 4  # + 4 Convertible rows
    assert set(res.offers["source"]) == {"import:GetProducts_gpu_us-east-1.derived.json"}
    csv_res = aws.import_file(BULK, "2021-02-05", gpu_facts=facts)
    assert set(csv_res.offers["instance_type"]) == {"g4dn.xlarge", "p3.2xlarge"}  # m5.large: no GPU facts
    assert _one(csv_res.offers, instance_type="p3.2xlarge")["usd_per_hour"] == 3.06
    assert any(s.instance_type == "m5.large" and s.reason.startswith("no_gpu") for s in csv_res.skipped)
    bad = tmp_path / "x.txt"
    bad.write_text("hello")
    with pytest.raises(InputError):
        aws.import_file(bad, "2026-11-30", gpu_facts=facts)


def test_registered_importers():
    # registered where they are defined; the live adapter providers.aws exports the same functions
    for name, module, fn, kind in (("aws-price-list", "providers.aws_prices", "parse_price_list", "file"),
                                   ("aws-bulk-csv", "providers.aws_import", "parse_bulk_csv", "file"),
                                   ("aws-instance-types", "providers.aws_parse", "parse_instance_types", "api"),
                                   ("aws-spot-history", "providers.aws_parse", "parse_spot_history", "api"),
                                   ("aws-region", "providers.aws_parse", "parse_region", "api")):
        imp = IMPORTERS[name]
        assert (imp.module, imp.function, imp.kind) == (module, fn, kind)
        assert imp.load() is getattr(aws, fn)


# ------------------------------------------------------------------------------------------------ fetching


def _ec2_stubbed(region: str = "us-east-1"):
    c = _fake_session().client("ec2", region_name=region, config=aws.client_config(_opts()))
    return c, Stubber(c)


def _pricing_stubbed(options: FetchOptions):
    c = aws.make_client("pricing", "us-east-1", options, session=_fake_session())
    return c, Stubber(c)


def _family_params(region: str, token: str | None = None) -> dict:
    p = {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults": 100,
         "Filters": [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
         + [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in aws.PRICING_FILTERS]
         + [{"Type": "TERM_MATCH", "Field": "instanceFamily", "Value": "GPU instance"}]}
    if token:
        p["NextToken"] = token
    return p


def _types_page(*names: str) -> dict:
    table = json.loads(MOTO_TYPES.read_text())
    keep = ("InstanceType", "VCpuInfo", "MemoryInfo", "GpuInfo")
    return {"InstanceTypes": [{k: table[n][k] for k in keep if k in table[n]} for n in names]}


def _stub_ec2_two_types(ec2s: Stubber, spot_pages: list[dict] | None = None) -> None:
    ec2s.add_response("describe_instance_types", _types_page("g4dn.xlarge", "p4d.24xlarge"), {"MaxResults": 100})
    for n, page in enumerate(spot_pages or []):
        params = {"ProductDescriptions": ["Linux/UNIX"], "InstanceTypes": ["g4dn.xlarge", "p4d.24xlarge"],
                  "StartTime": ANY, "EndTime": ANY, "MaxResults": 1000}
        if n:
            params["NextToken"] = spot_pages[n - 1]["NextToken"]
        ec2s.add_response("describe_spot_price_history", page, params)


def _spot_page(itype: str, zone: str, price: str, token: str | None = None) -> dict:
    page = {"SpotPriceHistory": [{"AvailabilityZone": zone, "InstanceType": itype, "ProductDescription": "Linux/UNIX",
                                  "SpotPrice": price, "Timestamp": dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)}]}
    if token:
        page["NextToken"] = token
    return page


def test_bug08_get_products_next_token_page_cap_raises_and_no_cap_gives_both_pages():
    """PRICE_FAULTS BUG-08 (AWS shape): get_products returns NextToken on page 1."""
    page1 = {"FormatVersion": "aws_v1", "PriceList": [_entry("g4dn.xlarge")], "NextToken": "tok-page-2"}
    page2 = {"FormatVersion": "aws_v1", "PriceList": [_entry("p4d.24xlarge")]}
    # max_pages=1: TruncatedPriceList(next=the token), never a one-item list
    opts = _opts(max_pages=1)
    ec2, ec2s = _ec2_stubbed()
    pricing, ps = _pricing_stubbed(opts)
    _stub_ec2_two_types(ec2s)
    ps.add_response("get_products", page1, _family_params("us-east-1"))
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    with ec2s, ps, pytest.raises(TruncatedPriceList) as exc:
        aws.fetch_region("us-east-1", opts)
    assert exc.value.next == "tok-page-2" and "max_pages=1" in str(exc.value)
    # no cap: both pages, both types priced
    opts = _opts(max_pages=None)
    ec2, ec2s = _ec2_stubbed()
    pricing, ps = _pricing_stubbed(opts)
    _stub_ec2_two_types(ec2s, [_spot_page("g4dn.xlarge", "us-east-1a", "0.2158", "spot-2"),
                               _spot_page("p4d.24xlarge", "us-east-1a", "7.8799")])
    ps.add_response("get_products", page1, _family_params("us-east-1"))
    ps.add_response("get_products", page2, _family_params("us-east-1", "tok-page-2"))
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    with ec2s, ps:
        raw = aws.fetch_region("us-east-1", opts)
        ps.assert_no_pending_responses()
        ec2s.assert_no_pending_responses()
    assert raw["price_list"] == [_entry("g4dn.xlarge"), _entry("p4d.24xlarge")] and len(raw["spot"]) == 2
    res = aws.parse_region(raw, "us-east-1", "2026-11-30")
    od = res.offers[res.offers["pricing"] == "on_demand"]
    assert dict(zip(od["instance_type"], od["usd_per_hour"])) == {"g4dn.xlarge": 0.526, "p4d.24xlarge": 21.957642}
    assert len(res.offers[res.offers["pricing"] == "spot"]) == 2


def test_bug08_spot_history_next_token_page_cap_raises():
    opts = _opts(max_pages=1)
    ec2, ec2s = _ec2_stubbed()
    pricing, ps = _pricing_stubbed(opts)
    _stub_ec2_two_types(ec2s, [_spot_page("g4dn.xlarge", "us-east-1a", "0.2158", "spot-2")])
    ps.add_response("get_products", {"PriceList": [_entry("g4dn.xlarge"), _entry("p4d.24xlarge")]},
                    _family_params("us-east-1"))
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    with ec2s, ps, pytest.raises(TruncatedPriceList) as exc:
        aws.fetch_region("us-east-1", opts)
    assert exc.value.next == "spot-2" and "describe_spot_price_history" in str(exc.value)


@pytest.mark.parametrize("tokens", [["same", "same", "same"], ["a", "b", "a"]])
def test_bug08_next_token_that_repeats_forever_is_caught(tokens):
    """A NextToken pointing back at a page already read would loop forever: TruncatedPriceList, not a hang."""
    opts = _opts(max_pages=None)
    ec2, ec2s = _ec2_stubbed()
    pricing, ps = _pricing_stubbed(opts)
    _stub_ec2_two_types(ec2s)
    prev = None
    for tok in tokens:
        ps.add_response("get_products", {"PriceList": [_entry("g4dn.xlarge")], "NextToken": tok},
                        _family_params("us-east-1", prev))
        prev = tok
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    with ec2s, ps, pytest.raises(TruncatedPriceList) as exc:
        aws.fetch_region("us-east-1", opts)
    assert exc.value.next == tokens[-1] and "repeated" in str(exc.value)


class _Body:
    def __init__(self, data: bytes):
        self.data = data

    def stream(self, **_):
        yield self.data


def _throttle_then(pages: list[dict], n_throttles: int, calls: list):
    """A before-send handler: the first ``n_throttles`` HTTP answers are 400 ThrottlingException (Pricing's JSON
    protocol), then the pages. before-send sits inside botocore's retry loop (a Stubber answers before it, so a
    Stubber's client error is never retried)."""
    def handler(request, **_):
        calls.append(request.url)
        if len(calls) <= n_throttles:
            return AWSResponse(request.url, 400, {"Content-Type": "application/x-amz-json-1.1"},
                               _Body(b'{"__type":"ThrottlingException","message":"Rate exceeded"}'))
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.1"},
                           _Body(json.dumps(pages[len(calls) - n_throttles - 1]).encode()))
    return handler


def test_throttling_is_retried_by_botocore_with_the_configured_attempts(monkeypatch):
    import time

    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda s: sleeps.append(s))
    opts = _opts(max_attempts=3)
    pricing = aws.make_client("pricing", "us-east-1", opts, session=_fake_session())
    assert pricing.meta.config.retries == {"mode": aws.PRICING_RETRY_MODE, "total_max_attempts": 3}
    assert pricing.meta.config.connect_timeout == 5.0 and pricing.meta.config.read_timeout == 5.0
    assert aws.client_config(opts).retries == {"mode": "standard", "total_max_attempts": 3}
    calls: list[str] = []
    pricing.meta.events.register_first("before-send.pricing.GetProducts", _throttle_then(
        [{"FormatVersion": "aws_v1", "PriceList": [_entry("g4dn.xlarge"), _entry("p4d.24xlarge")]}], 2, calls))
    ec2, ec2s = _ec2_stubbed()
    _stub_ec2_two_types(ec2s, [_spot_page("g4dn.xlarge", "us-east-1a", "0.2158")])
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    with ec2s:
        raw = aws.fetch_region("us-east-1", opts)
    assert len(calls) == 3 and len(sleeps) >= 2  # two throttled attempts, backed off, then the answer
    assert len(raw["price_list"]) == 2
    # one attempt only: the throttling error comes through (the refresh records the region as failed)
    opts1 = _opts(max_attempts=1)
    p1 = aws.make_client("pricing", "us-east-1", opts1, session=_fake_session())
    p1.meta.events.register_first("before-send.pricing.GetProducts", _throttle_then([], 5, []))
    ec2, ec2s = _ec2_stubbed()
    _stub_ec2_two_types(ec2s)
    opts1.clients = {"pricing": p1, "ec2:us-east-1": ec2}
    with ec2s, pytest.raises(ClientError, match="ThrottlingException"):
        aws.fetch_region("us-east-1", opts1)


def test_stubber_client_errors_are_not_retried_documented():
    """Why the throttling test uses before-send: a Stubber answers before botocore's retry loop."""
    c, s = _pricing_stubbed(_opts(max_attempts=5))
    s.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    s.add_response("get_products", {"PriceList": []})
    with s, pytest.raises(ClientError, match="ThrottlingException"):
        c.get_products(ServiceCode="AmazonEC2")


@pytest.mark.parametrize("code", ["OptInRequired", "AuthFailure", "UnrecognizedClientException"])
def test_region_not_enabled_is_skipped(code):
    """OptInRequired means a region not enabled; AuthFailure / UnrecognizedClientException may mean that or refused
    credentials: describe_regions in us-east-1 (always enabled) tells (issue 13)."""
    opts = _opts()
    ec2, ec2s = _ec2_stubbed("ap-east-1")
    ec2s.add_client_error("describe_instance_types", service_error_code=code, http_status_code=401)
    home, homes = _ec2_stubbed("us-east-1")
    if code != "OptInRequired":
        homes.add_response("describe_regions", {"Regions": [{"RegionName": "ap-east-1", "OptInStatus": "not-opted-in",
                                                             "Endpoint": "ec2.ap-east-1.amazonaws.com"}]},
                           {"RegionNames": ["ap-east-1"], "AllRegions": True})
    pricing, ps = _pricing_stubbed(opts)
    opts.clients = {"pricing": pricing, "ec2:ap-east-1": ec2, "ec2": home}
    with ec2s, homes, ps, pytest.raises(RegionSkipped, match=code) as e:
        aws.fetch_region("ap-east-1", opts)
    assert "region not enabled" in str(e.value) and "credentials" not in str(e.value)
    homes.assert_no_pending_responses()


@pytest.mark.parametrize("code", ["AuthFailure", "UnrecognizedClientException"])
def test_invalid_credentials_are_not_reported_as_a_region_not_enabled(code):
    """Issue 13: invalid AWS credentials were reported as "region not enabled". EC2 answers AuthFailure both ways;
    describe_regions in us-east-1 refusing them too means the credentials."""
    opts = _opts()
    ec2, ec2s = _ec2_stubbed("eu-west-1")
    ec2s.add_client_error("describe_instance_types", service_error_code=code, http_status_code=401,
                          service_message="AWS was not able to validate the provided access credentials")
    home, homes = _ec2_stubbed("us-east-1")
    homes.add_client_error("describe_regions", service_error_code=code, http_status_code=401,
                           service_message="AWS was not able to validate the provided access credentials")
    opts.clients = {"ec2:eu-west-1": ec2, "ec2": home}
    with ec2s, homes, pytest.raises(InvalidCredentials) as e:
        aws.fetch_region("eu-west-1", opts)
    msg = str(e.value)
    assert msg.startswith("aws: the AWS credentials were refused") and code in msg
    assert "not enabled" not in msg and "\n" not in msg
    assert isinstance(e.value, MissingCredentials) and not isinstance(e.value, RegionSkipped)


def test_credentials_refused_in_an_enabled_region_say_so():
    opts = _opts()
    ec2, ec2s = _ec2_stubbed("eu-west-1")
    ec2s.add_client_error("describe_instance_types", service_error_code="AuthFailure", http_status_code=401)
    home, homes = _ec2_stubbed("us-east-1")
    homes.add_response("describe_regions", {"Regions": [{"RegionName": "eu-west-1", "OptInStatus": "opt-in-not-required",
                                                         "Endpoint": "ec2.eu-west-1.amazonaws.com"}]},
                       {"RegionNames": ["eu-west-1"], "AllRegions": True})
    opts.clients = {"ec2:eu-west-1": ec2, "ec2": home}
    with ec2s, homes, pytest.raises(ProviderError) as e:
        aws.fetch_region("eu-west-1", opts)
    assert not isinstance(e.value, RegionSkipped)
    assert "credentials are refused in this region (AuthFailure) although it is enabled" in str(e.value)


@pytest.mark.parametrize("code", ["InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken",
                                  "UnrecognizedClientException"])
def test_credentials_refused_by_the_pricing_api_or_describe_regions(code):
    opts = _opts()
    ec2, ec2s = _ec2_stubbed("eu-west-1")
    ec2s.add_response("describe_instance_types", _types_page("p4d.24xlarge"))
    pricing, ps = _pricing_stubbed(opts)
    ps.add_client_error("get_products", service_error_code=code, http_status_code=403,
                        service_message="The security token included in the request is invalid.")
    opts.clients = {"pricing": pricing, "ec2:eu-west-1": ec2}
    with ec2s, ps, pytest.raises(InvalidCredentials, match=f"aws: the AWS credentials were refused \\({code}") as e:
        aws.fetch_region("eu-west-1", opts)
    assert "GetProducts for eu-west-1" in str(e.value) and "not enabled" not in str(e.value)
    home, homes = _ec2_stubbed("us-east-1")
    homes.add_client_error("describe_regions", service_error_code=code, http_status_code=401)
    with homes, pytest.raises(InvalidCredentials, match="credentials were refused"):
        aws.list_regions(_opts(clients={"ec2": home}))


def test_a_refresh_with_refused_credentials_says_credentials_and_aws(tmp_path):
    from pricing_cache.refresh import refresh

    opts = _opts(regions=["eu-west-1"])
    ec2, ec2s = _ec2_stubbed("eu-west-1")
    ec2s.add_client_error("describe_instance_types", service_error_code="AuthFailure", http_status_code=401)
    home, homes = _ec2_stubbed("us-east-1")
    homes.add_client_error("describe_regions", service_error_code="AuthFailure", http_status_code=401)
    opts.clients = {"ec2:eu-west-1": ec2, "ec2": home}
    with ec2s, homes:
        out = refresh(["aws"], opts).providers[0]
    assert out.status == "failed" and not out.regions_skipped
    assert out.error.startswith("InvalidCredentials: aws: the AWS credentials were refused (AuthFailure")
    assert "not enabled" not in out.error


def test_missing_credentials_one_line_howto(monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(MissingCredentials, match="aws configure") as exc:
        aws.fetch_region("us-east-1", _opts())
    assert "\n" not in str(exc.value)
    with pytest.raises(MissingCredentials, match="profile 'nope' not found"):
        aws.fetch_region("us-east-1", _opts(profile="nope"))
    with pytest.raises(MissingCredentials):
        aws.list_regions(_opts())


# ------------------------------------------------------------------------------------------------ moto (EC2)


@pytest.fixture(scope="module")
def moto_ec2():
    """One moto EC2 for the tests below (its backend and describe_instance_types are slow: ~1-2 s each)."""
    with pytest.MonkeyPatch.context() as mp:
        for var, val in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                         ("AWS_DEFAULT_REGION", "us-east-1")):
            mp.setenv(var, val)
        with mock_aws():
            yield


def test_list_regions_keeps_opted_in_regions_with_notes_moto(moto_ec2):
    notes: list[tuple[str, str, str]] = []
    opts = _opts(progress=lambda *a: notes.append(a))
    regions = aws.list_regions(opts)
    assert "us-east-1" in regions and "eu-west-1" in regions and regions == sorted(regions)
    assert "ap-east-1" not in regions  # moto: not-opted-in
    assert ("aws", "ap-east-1", "skipped: region not enabled for this account (OptInStatus not-opted-in)") in notes
    explicit = aws.list_regions(_opts(regions=["us-west-2", "us-west-2", "ap-east-1"]))
    assert explicit == ["us-west-2", "ap-east-1"]  # asked explicitly: fetch_region decides (RegionSkipped)
    with pytest.raises(InputError, match="not AWS region codes"):
        aws.list_regions(_opts(regions=["US East"]))
    said: list = []
    assert aws.list_regions(_opts(regions=["xx-nowhere-9"], progress=lambda *a: said.append(a))) == ["xx-nowhere-9"]
    assert "not in botocore's region list" in said[0][2]


@pytest.fixture(scope="module")
def moto_fetch(moto_ec2):
    """fetch_region with the Pricing API stubbed (the derived GPU price list; empty answers for the GPU types the
    family query lacks) and EC2 from moto (real GpuInfo; moto's 0.00001 spot prices)."""
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    opts = _opts(max_pages=50)
    ec2 = aws.make_client("ec2", "us-east-1", opts, session=_fake_session())
    pricing, ps = _pricing_stubbed(opts)
    moto_gpu_types = sorted(k for k, v in INSTANCE_TYPES.items() if (v.get("GpuInfo") or {}).get("Gpus"))
    listed = {json.loads(e)["product"]["attributes"]["instanceType"] for e in _gpu_entries()}
    ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": _gpu_entries()},
                    _family_params("us-east-1"))
    follow_ups = [t for t in moto_gpu_types if t not in listed]
    for itype in follow_ups:
        params = _family_params("us-east-1")
        params["Filters"][-1] = {"Type": "TERM_MATCH", "Field": "instanceType", "Value": itype}
        ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []}, params)
    said: list = []
    opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2}
    opts.progress = lambda *a: said.append(a)
    with ps:
        raw = aws.fetch_region("us-east-1", opts)
        ps.assert_no_pending_responses()
    return raw, said, follow_ups


def test_describe_instance_types_moto_real_gpu_info(moto_fetch):
    raw, _, _ = moto_fetch
    df = aws.parse_instance_types(raw["instance_types"])
    g6f = _one(df, instance_type="g6f.large")
    assert (g6f["gpu_count"], g6f["gpu_model"]) == (0.125, "L4")  # BUG-10 in moto's real GpuInfo
    assert g6f["gpu_count"] * g6f["gpu_memory_gib"] * 1024 == pytest.approx(2861)
    assert _one(df, instance_type="p5.48xlarge")["gpu_model"] == "H100-80GB"
    assert any("without GpuInfo" in n for n in df.attrs["notes"])


def test_full_fetch_and_parse_one_region_stubber_pricing_and_moto_ec2(moto_fetch):
    raw, said, follow_ups = moto_fetch
    assert set(raw) == {"price_list", "instance_types", "spot"}
    assert all(isinstance(e, str) for e in raw["price_list"]) and len(raw["price_list"]) == 6
    assert "g5.xlarge" in follow_ups and "g4dn.xlarge" not in follow_ups
    assert raw["spot"] and all("ResponseMetadata" not in p for p in raw["spot"] + raw["instance_types"])
    assert [m for _, _, m in said] == ["describe_instance_types", "get_products (GPU instance family)",
                                       "describe_spot_price_history"]
    res = aws.parse_region(raw, "us-east-1", "2026-11-30")
    df = res.offers
    assert tuple(df.columns) == OFFER_COLUMNS and (df.groupby(list(OFFER_KEY)).size() == 1).all()
    od = df[df["pricing"] == "on_demand"]
    assert dict(zip(od["instance_type"], od["usd_per_hour"])) == {
        "g4dn.xlarge": 0.526, "g6.xlarge": 0.8048, "g6f.4xlarge": 0.95, "p4d.24xlarge": 21.957642,
        "p5.48xlarge": 55.04}
    row = _one(od, instance_type="p4d.24xlarge")
    assert (row["gpu_model"], row["gpu_count"], row["gpu_memory_gib"], row["vcpus"], row["memory_gib"],
            row["interconnect"], row["source"], row["as_of"]) == (
        "A100-40GB", 8.0, 40.0, 96.0, 1152.0, "nvlink", "aws-pricing-api", "2026-11-30")
    assert _one(od, instance_type="g6f.4xlarge")["gpu_count"] == 0.5
    assert (df["pricing"] != "spot").all()  # moto's 0.00001 spot prices are all placeholders
    reasons = {s.reason.split(":")[0] for s in res.skipped}
    assert {"placeholder_spot", "no_gpu", "unknown_price", "unknown_gpu"} <= reasons
    ph = [s for s in res.skipped if s.reason.startswith("placeholder_spot")]
    assert ph and all("below 1% of on-demand" in s.reason for s in ph)
    assert any(s.instance_type == "p3.2xlarge" and s.reason.startswith("no_gpu") for s in res.skipped)
    assert df["vcpus"].notna().all()
