"""Savings-plan rows: AWS (providers/aws.py, ``describe_savings_plans_offering_rates`` through botocore's Stubber)
and Azure (providers/azure.py, the Retail Prices API's ``savingsPlan`` through a local HTTP server on 127.0.0.1).
No network.

Shapes: the AWS response is botocore's model (savingsplans 2019-06-28, ``DescribeSavingsPlansOfferingRatesResponse``;
the Stubber refuses a response or a request that does not fit it), with the ``properties`` names AWS returns (region,
instanceType, productDescription "Linux/UNIX", tenancy "shared", as recorded in public Stubber tests of the
operation). The Azure items are the adapter's recorded-shape fixtures (tests/fixtures/azure/README.md), the
PRICE_FAULTS BUG-01 reservation input verbatim, and a real answer quoted verbatim below.

Numbers:

* AWS on-demand rates are those of tests/fixtures/aws (GetProducts_gpu_us-east-1.derived.json: SkyPilot catalog,
  g4dn.xlarge 0.526, p4d.24xlarge 21.957642 $/h).
* AWS savings-plan RATES are test values, not AWS prices: no real Savings Plans rate of a GPU instance is in the
  stored data (pricing_cache/data/inputs/PRICES_README.md (d)). They are the on-demand rate times the discounts of
  the AWS Savings Plans User Guide's example ("Savings Plans Example", prices "illustrative only"; c5.9xlarge Linux
  on-demand 4.00, Compute Savings Plans 2.00 = 50 %, EC2 Instance Savings Plans 1.00 = 75 % off;
  docs.aws.amazon.com/savingsplans/latest/userguide/sp-applying.html): :data:`COMPUTE_RATIO`, :data:`EC2_RATIO`.
* Azure: NC24ads_A100_v4 eastus on-demand 3.673 (SkyPilot Azure catalog), reservations 21,900 / 52,560 (BUG-01
  input), savingsPlan 2.7 / 1.9 (illustrative, the fixture README); the real check is Standard_B16als_v2 in
  australiacentral (:data:`B16ALS_V2`).
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from werkzeug import Request, Response

from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import OFFER_COLUMNS, SAVINGS_PLAN_CLASSES, SAVINGS_PLAN_TERM_HOURS
from providers import aws, azure
from providers._common import OFFER_KEY, reason_code
from providers.base import FetchOptions, TruncatedPriceList
from providers.validate import validate_offers

FIX = Path(__file__).resolve().parent / "fixtures"
AS_OF = "2026-12-01"

# ============================================================================================================ AWS

G4DN_OD, P4D_OD = 0.526, 21.957642  # tests/fixtures/aws GetProducts_gpu_us-east-1.derived.json (SkyPilot catalog)
COMPUTE_RATIO, EC2_RATIO = 2.00 / 4.00, 1.00 / 4.00  # AWS user guide example (illustrative): 50 % and 75 % off
ONE_YEAR, THREE_YEARS = 31536000, 94608000


def _gpu_entries() -> list[str]:
    return json.loads((FIX / "aws" / "GetProducts_gpu_us-east-1.derived.json").read_text())["PriceList"]


def _moto_page() -> dict:
    return {"InstanceTypes": list(json.loads((FIX / "aws" / "moto-5.2.5_instance_types_with_GpuInfo.json")
                                             .read_text()).values())}


def _rate(itype: str, rate: float, plan: str = "Compute", seconds: int = ONE_YEAR, payment: str = "No Upfront", *,
          region: str = "us-east-1", operation: str = "RunInstances", usage: str | None = None,
          currency: str | None = "USD", unit: str = "Hrs", tenancy: str = "shared") -> dict:
    """One SavingsPlanOfferingRate (botocore model) with the properties AWS returns for an EC2 rate."""
    offering = {"offeringId": "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "paymentOption": payment, "planType": plan,
                "durationSeconds": seconds,
                "planDescription": f"{seconds // ONE_YEAR} year {payment} {plan} Savings Plan"}
    if currency:
        offering["currency"] = currency
    return {"savingsPlanOffering": offering, "rate": f"{rate:.10f}", "unit": unit, "productType": "EC2",
            "serviceCode": "AmazonEC2", "usageType": usage or f"BoxUsage:{itype}", "operation": operation,
            "properties": [{"name": "region", "value": region}, {"name": "instanceType", "value": itype},
                           {"name": "productDescription", "value": "Linux/UNIX"},
                           {"name": "tenancy", "value": tenancy}]}


#: The 3 pages the Stubber answers for us-east-1 (g4dn.xlarge and p4d.24xlarge), chained by nextToken.
def _pages() -> list[dict]:
    return [
        {"searchResults": [_rate("p4d.24xlarge", P4D_OD * COMPUTE_RATIO),
                           _rate("p4d.24xlarge", P4D_OD * EC2_RATIO, plan="EC2Instance")],
         "nextToken": "cGFnZTI="},
        {"searchResults": [_rate("p4d.24xlarge", P4D_OD * EC2_RATIO, seconds=THREE_YEARS, payment="All Upfront"),
                           _rate("g4dn.xlarge", G4DN_OD * COMPUTE_RATIO),
                           # Windows (RunInstances:0002) and dedicated tenancy: other products, reported
                           _rate("g4dn.xlarge", 0.5, operation="RunInstances:0002"),
                           _rate("g4dn.xlarge", 0.5, usage="DedicatedUsage:g4dn.xlarge", tenancy="dedicated")],
         "nextToken": "cGFnZTM="},
        {"searchResults": [_rate("g4dn.xlarge", G4DN_OD * EC2_RATIO, seconds=THREE_YEARS, payment="Partial Upfront"),
                           # a rate equal to on-demand: no saving, never an offer
                           _rate("g4dn.xlarge", G4DN_OD, plan="EC2Instance")]},
    ]


def _sp_stubbed():
    client = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing").client(
        "savingsplans", region_name=aws.SAVINGS_PLANS_REGION, config=aws.client_config(FetchOptions()))
    return client, Stubber(client)


USAGE = {"g4dn.xlarge": "BoxUsage:g4dn.xlarge", "p4d.24xlarge": "BoxUsage:p4d.24xlarge"}


def test_usage_types_come_from_the_price_list():
    assert aws.usage_types_for(_gpu_entries(), ["g4dn.xlarge", "p4d.24xlarge", "nope.large"]) == USAGE
    assert set(aws.usage_types_for(_gpu_entries())) == {"g4dn.xlarge", "g6.xlarge", "g6f.4xlarge", "p3.2xlarge",
                                                        "p4d.24xlarge", "p5.48xlarge"}


def test_request_follows_the_model_and_next_token_over_three_pages():
    client, stub = _sp_stubbed()
    params = aws.savings_plans_request("us-east-1", USAGE.values())
    assert params == {"savingsPlanTypes": ["Compute", "EC2Instance"], "products": ["EC2"],
                      "serviceCodes": ["AmazonEC2"],
                      "usageTypes": ["BoxUsage:g4dn.xlarge", "BoxUsage:p4d.24xlarge"], "operations": ["RunInstances"],
                      "savingsPlanPaymentOptions": ["No Upfront", "Partial Upfront", "All Upfront"],
                      "filters": [{"name": "region", "values": ["us-east-1"]}], "maxResults": 1000}
    pages = _pages()
    for i, page in enumerate(pages):
        expected = dict(params) if i == 0 else {**params, "nextToken": pages[i - 1]["nextToken"]}
        stub.add_response("describe_savings_plans_offering_rates", page, expected)
    with stub:
        got = aws.fetch_savings_plans_rates("us-east-1", USAGE.values(), FetchOptions(), client=client)
        stub.assert_no_pending_responses()
    assert got == pages and all("ResponseMetadata" not in p for p in got)
    assert aws.fetch_savings_plans_rates("us-east-1", [], FetchOptions(), client=client) == []  # nothing to ask


def test_page_cap_and_token_cycle_raise_never_a_short_list():
    client, stub = _sp_stubbed()
    params = aws.savings_plans_request("us-east-1", USAGE.values())
    pages = _pages()
    stub.add_response("describe_savings_plans_offering_rates", pages[0], params)
    with stub, pytest.raises(TruncatedPriceList) as exc:
        aws.fetch_savings_plans_rates("us-east-1", USAGE.values(), FetchOptions(max_pages=1), client=client)
    assert exc.value.next == "cGFnZTI=" and "max_pages=1" in str(exc.value)
    client, stub = _sp_stubbed()
    stub.add_response("describe_savings_plans_offering_rates", pages[0], params)
    stub.add_response("describe_savings_plans_offering_rates", {**pages[1], "nextToken": "cGFnZTI="},
                      {**params, "nextToken": "cGFnZTI="})
    with stub, pytest.raises(TruncatedPriceList, match="repeated") as exc:
        aws.fetch_savings_plans_rates("us-east-1", USAGE.values(), FetchOptions(max_pages=None), client=client)
    assert exc.value.next == "cGFnZTI="


def test_usage_types_are_asked_in_chunks(monkeypatch):
    monkeypatch.setattr(aws, "SAVINGS_PLANS_USAGE_TYPES_PER_CALL", 1)
    client, stub = _sp_stubbed()
    pages = _pages()
    stub.add_response("describe_savings_plans_offering_rates", {"searchResults": pages[0]["searchResults"]},
                      aws.savings_plans_request("us-east-1", ["BoxUsage:g4dn.xlarge"]))
    stub.add_response("describe_savings_plans_offering_rates", {"searchResults": pages[2]["searchResults"]},
                      aws.savings_plans_request("us-east-1", ["BoxUsage:p4d.24xlarge"]))
    with stub:
        got = aws.fetch_savings_plans_rates("us-east-1", USAGE.values(), FetchOptions(), client=client)
        stub.assert_no_pending_responses()
    assert len(got) == 2


def test_access_denied_is_one_line_naming_the_permission():
    client, stub = _sp_stubbed()
    stub.add_client_error("describe_savings_plans_offering_rates", service_error_code="AccessDeniedException",
                          http_status_code=403)
    with stub, pytest.raises(ProviderError) as exc:
        aws.fetch_savings_plans_rates("us-east-1", USAGE.values(), FetchOptions(), client=client)
    assert "savingsplans:DescribeSavingsPlansOfferingRates" in str(exc.value) and "\n" not in str(exc.value)


def test_parse_rates_maps_plan_term_and_payment_and_reports_the_rest():
    df = aws.savings_plans_rates_frame(_pages(), region="us-east-1")
    assert list(df.columns) == list(aws.SAVINGS_PLAN_COLUMNS)
    got = {(r.instance_type, r.pricing, r.payment, r.offering_class): round(r.usd_per_hour, 9)
           for r in df.itertuples()}
    assert got == {
        ("p4d.24xlarge", "savings_plan_1y", "no_upfront", "compute"): round(P4D_OD * COMPUTE_RATIO, 9),
        ("p4d.24xlarge", "savings_plan_1y", "no_upfront", "ec2_instance"): round(P4D_OD * EC2_RATIO, 9),
        ("p4d.24xlarge", "savings_plan_3y", "all_upfront", "compute"): round(P4D_OD * EC2_RATIO, 9),
        ("g4dn.xlarge", "savings_plan_1y", "no_upfront", "compute"): round(G4DN_OD * COMPUTE_RATIO, 9),
        ("g4dn.xlarge", "savings_plan_3y", "partial_upfront", "compute"): round(G4DN_OD * EC2_RATIO, 9),
        ("g4dn.xlarge", "savings_plan_1y", "no_upfront", "ec2_instance"): G4DN_OD,  # refused later, not here
    }
    assert set(df.term_hours) == {8760.0, 26280.0} and set(df.currency) == {"USD"}
    assert sorted(reason_code(s.reason) for s in df.attrs["skipped"]) == ["not_linux", "not_shared"]


@pytest.mark.parametrize("change,code", [
    ({"plan": "SageMaker"}, "unknown_plan_type"),
    ({"seconds": 63072000}, "unknown_term"),  # 2 years: not mapped to the nearest term
    ({"unit": "Lambda-GB-Second"}, "unexpected_unit"),
    ({"currency": None}, "unknown_currency"),
    ({"region": "us-west-2"}, "other_region"),
])
def test_rates_that_are_not_ec2_linux_instance_hours_of_a_known_term_are_reported(change, code):
    df = aws.savings_plans_rates_frame({"searchResults": [_rate("g4dn.xlarge", 0.25, **change)]}, region="us-east-1")
    assert df.empty and [reason_code(s.reason) for s in df.attrs["skipped"]] == [code]


def test_zero_missing_duplicate_and_conflicting_rates():
    zero = _rate("g4dn.xlarge", 0.0)
    missing = _rate("g4dn.xlarge", 0.2)
    missing["rate"] = ""
    df = aws.savings_plans_rates_frame({"searchResults": [zero, missing]})
    assert df.empty and sorted(reason_code(s.reason) for s in df.attrs["skipped"]) == ["unknown_price", "zero_price"]
    same = aws.savings_plans_rates_frame([{"searchResults": [_rate("g4dn.xlarge", 0.263)]},
                                          {"searchResults": [_rate("g4dn.xlarge", 0.263)]}])
    assert len(same) == 1 and [reason_code(s.reason) for s in same.attrs["skipped"]] == ["duplicate"]
    other = aws.savings_plans_rates_frame({"searchResults": [_rate("g4dn.xlarge", 0.263), _rate("g4dn.xlarge", 0.3)]})
    assert other.empty and {reason_code(s.reason) for s in other.attrs["skipped"]} == {"conflicting_price"}
    with pytest.raises(InputError):
        aws.savings_plans_rates_frame({"results": []})


def _raw(pages: list[dict]) -> dict:
    return {"price_list": _gpu_entries(), "instance_types": [_moto_page()], "spot": [],
            "savings_plans": {"region": "us-east-1", "usage_types": USAGE, "pages": pages}}


def test_parse_region_adds_savings_plan_rows_checked_against_on_demand():
    res = aws.parse_region(_raw(_pages()), "us-east-1", AS_OF)
    df = res.offers
    assert list(df.columns) == list(OFFER_COLUMNS) and (df.groupby(list(OFFER_KEY)).size() == 1).all()
    sp = df[df.pricing.isin(list(SAVINGS_PLAN_TERM_HOURS))]
    assert set(sp.source) == {aws.SOURCE_SAVINGS_PLANS} and set(sp.as_of) == {AS_OF}
    assert set(sp.offering_class) <= set(SAVINGS_PLAN_CLASSES) - {""}
    assert (sp.upfront_usd == 0).all() and (sp.recurring_usd_per_hour == sp.usd_per_hour).all()
    assert (sp.term_hours == sp.pricing.map(SAVINGS_PLAN_TERM_HOURS)).all() and (sp.zone == "").all()
    p4d = sp[sp.instance_type == "p4d.24xlarge"]
    assert len(p4d) == 3 and set(p4d.gpu_model) == {"A100-40GB"} and set(p4d.gpu_count) == {8.0}
    row = p4d[(p4d.pricing == "savings_plan_1y") & (p4d.offering_class == "compute")].iloc[0]
    assert row.usd_per_hour == pytest.approx(P4D_OD * COMPUTE_RATIO) and row.payment == "no_upfront"
    # the rate equal to on-demand is refused; every kept rate is below its type's on-demand rate
    assert any(s.instance_type == "g4dn.xlarge" and s.reason.startswith("implausible_commitment")
               for s in res.skipped)
    od = dict(zip(df[df.pricing == "on_demand"].instance_type, df[df.pricing == "on_demand"].usd_per_hour))
    assert (sp.usd_per_hour < sp.instance_type.map(od)).all()
    # the offer validation keeps them all (a rate not below on-demand would be commitment_not_below_on_demand)
    assert len(validate_offers(sp).offers) == len(sp)
    # only 3 of the 12 rates of p4d, 2 of g4dn: said, never presented as the whole set
    assert any("only some of the 12 rates" in n and "p4d.24xlarge (3 of 12)" in n for n in res.notes)


def test_parse_region_reports_types_without_rates_and_unverifiable_ones():
    usage = {**USAGE, "g6.xlarge": "BoxUsage:g6.xlarge"}
    raw = _raw([{"searchResults": [_rate("p4d.24xlarge", P4D_OD * COMPUTE_RATIO)]}])
    raw["savings_plans"]["usage_types"] = usage
    res = aws.parse_region(raw, "us-east-1", AS_OF)
    assert any("no usable rate for 2 GPU instance type(s)" in n and "g4dn.xlarge, g6.xlarge" in n for n in res.notes)
    raw = _raw([{"searchResults": [_rate("p4d.24xlarge", P4D_OD * COMPUTE_RATIO)]}])
    raw["price_list"] = [e for e in _gpu_entries() if "p4d.24xlarge" not in e]  # no on-demand p4d
    res = aws.parse_region(raw, "us-east-1", AS_OF)
    assert res.offers[res.offers.pricing.str.startswith("savings_plan")].empty
    assert any(s.reason.startswith("unverifiable_savings_plan") for s in res.skipped)


def test_fetch_region_asks_for_savings_plans_only_when_the_option_is_on():
    """fetch_region with EC2, the Pricing API and Savings Plans stubbed: the option adds step 4, off it is absent."""
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    table = json.loads((FIX / "aws" / "moto-5.2.5_instance_types_with_GpuInfo.json").read_text())
    keep = ("InstanceType", "VCpuInfo", "MemoryInfo", "GpuInfo")
    types = {"InstanceTypes": [{k: table[n][k] for k in keep if k in table[n]} for n in ("g4dn.xlarge",
                                                                                           "p4d.24xlarge")]}
    entries = [e for e in _gpu_entries() if '"g4dn.xlarge"' in e or '"p4d.24xlarge"' in e]
    filters = ([{"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}]
               + [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in aws.PRICING_FILTERS]
               + [{"Type": "TERM_MATCH", "Field": "instanceFamily", "Value": "GPU instance"}])
    from botocore.stub import ANY

    for on in (False, True):
        opts = FetchOptions(max_attempts=2, timeout_s=5.0)
        if on:
            opts.savings_plans = True  # the field the refresh would set (see the report: FetchOptions.savings_plans)
        ec2 = session.client("ec2", region_name="us-east-1", config=aws.client_config(opts))
        pricing = aws.make_client("pricing", "us-east-1", opts, session=session)
        sp_client, sps = _sp_stubbed()
        with Stubber(ec2) as es, Stubber(pricing) as ps, sps:
            es.add_response("describe_instance_types", types, {"MaxResults": 100})
            es.add_response("describe_spot_price_history", {"SpotPriceHistory": []},
                            {"ProductDescriptions": ["Linux/UNIX"], "InstanceTypes": ["g4dn.xlarge", "p4d.24xlarge"],
                             "StartTime": ANY, "EndTime": ANY, "MaxResults": 1000})
            ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": entries},
                            {"ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults": 100,
                             "Filters": filters})
            pages = _pages()
            params = aws.savings_plans_request("us-east-1", USAGE.values())
            if on:
                for i, page in enumerate(pages):
                    sps.add_response("describe_savings_plans_offering_rates", page,
                                     params if i == 0 else {**params, "nextToken": pages[i - 1]["nextToken"]})
            opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2, "savingsplans": sp_client}
            raw = aws.fetch_region("us-east-1", opts)
            for s in (es, ps, sps):
                s.assert_no_pending_responses()
        assert aws.wants_savings_plans(opts) is on
        if not on:
            assert "savings_plans" not in raw
            continue
        assert raw["savings_plans"] == {"region": "us-east-1", "usage_types": USAGE, "pages": pages}
        res = aws.parse_region(raw, "us-east-1", AS_OF)
        assert len(res.offers[res.offers.pricing.str.startswith("savings_plan")]) == 5


# ============================================================================================================ Azure

#: A real Retail Prices API answer (api-version 2023-01-01-preview, australiacentral, effectiveStartDate 2023-09-01),
#: quoted in full ("not one field removed") in a public survey document of the PNU-capstone-2026-17/easydep
#: repository: one consumption item with its savingsPlan and the size's 1-year reservation; the 3-year reservation
#: 6721.0 is from the same document's table of the 13 items of that size.
B16ALS_V2 = [
    {"currencyCode": "USD", "tierMinimumUnits": 0.0, "retailPrice": 0.673, "unitPrice": 0.673,
     "armRegionName": "australiacentral", "location": "AU Central", "effectiveStartDate": "2023-09-01T00:00:00Z",
     "meterId": "25385797-d48b-5b47-9e0c-6ee37b6b9a8d", "meterName": "B16als v2", "productId": "DZH318Z0K9JH",
     "skuId": "DZH318Z0K9JH/00QW", "productName": "Virtual Machines Basv2 Series", "skuName": "B16als v2",
     "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute",
     "unitOfMeasure": "1 Hour", "type": "Consumption", "isPrimaryMeterRegion": True, "armSkuName": "Standard_B16als_v2",
     "savingsPlan": [{"unitPrice": 0.34323, "retailPrice": 0.34323, "term": "3 Years"},
                     {"unitPrice": 0.49129, "retailPrice": 0.49129, "term": "1 Year"}]},
    {"currencyCode": "USD", "tierMinimumUnits": 0.0, "reservationTerm": "1 Year", "retailPrice": 3478.0,
     "unitPrice": 3478.0, "armRegionName": "australiacentral", "location": "AU Central",
     "effectiveStartDate": "2023-09-01T00:00:00Z", "meterId": "25385797-d48b-5b47-9e0c-6ee37b6b9a8d",
     "meterName": "B16als v2", "productId": "DZH318Z0K9JH", "skuId": "DZH318Z0K9JH/03RM",
     "productName": "Virtual Machines Basv2 Series", "skuName": "B16als v2", "serviceName": "Virtual Machines",
     "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour", "type": "Reservation",
     "isPrimaryMeterRegion": True, "armSkuName": "Standard_B16als_v2"},
]

#: PRICE_FAULTS BUG-01 input, verbatim (shared/cases/PRICE_FAULTS.md).
BUG01_1Y = {"type": "Reservation", "reservationTerm": "1 Year", "armSkuName": "Standard_NC24ads_A100_v4",
            "armRegionName": "eastus", "unitOfMeasure": "1 Hour", "unitPrice": 21900.0, "retailPrice": 21900.0,
            "currencyCode": "USD"}
BUG01_3Y = {**BUG01_1Y, "reservationTerm": "3 Years", "unitPrice": 52560.0, "retailPrice": 52560.0}


def _nc24_consumption() -> dict:
    """The NC24ads_A100_v4 eastus Linux consumption item of the recorded-shape fixture (3.673 $/h, savingsPlan
    1 Year 2.7 / 3 Years 1.9 illustrative)."""
    page = json.loads((FIX / "azure" / "retail_eastus_page1.json").read_text(encoding="utf-8"))
    return next(i for i in page["Items"] if i["armSkuName"] == "Standard_NC24ads_A100_v4" and i["type"] ==
                "Consumption" and i["productName"] == "Virtual Machines NCadsA100v4 Series" and
                i["meterName"] == "NC24ads A100 v4")


def test_real_answer_savings_plan_is_hourly_and_the_reservation_a_term_total():
    df = azure.parse_retail_items(B16ALS_V2, gpu_only=False, as_of=AS_OF)
    got = {(r.pricing, r.payment): round(r.usd_per_hour, 6) for r in df.itertuples()}
    assert got == {("on_demand", ""): 0.673,
                   ("savings_plan_1y", "no_upfront"): 0.49129, ("savings_plan_1y", "all_upfront"): 0.49129,
                   ("savings_plan_3y", "no_upfront"): 0.34323, ("savings_plan_3y", "all_upfront"): 0.34323,
                   ("reserved_1y", "no_upfront"): round(3478.0 / 8760, 6),
                   ("reserved_1y", "all_upfront"): round(3478.0 / 8760, 6)}
    three = {**B16ALS_V2[1], "reservationTerm": "3 Years", "retailPrice": 6721.0, "unitPrice": 6721.0}
    df3 = azure.parse_retail_items([three], gpu_only=False)
    assert set(df3.usd_per_hour.round(6)) == {round(6721.0 / 26280, 6)}  # 0.255746 $/h, not 6721 $/h


def test_savings_plan_edge_cases_are_reported():
    base = _nc24_consumption()
    cases = {
        "unknown_term": [{"unitPrice": 2.7, "retailPrice": 2.7, "term": "5 Years"}],
        "conflicting_price": [{"unitPrice": 2.7, "retailPrice": 2.6, "term": "1 Year"}],
        "unknown_price": [{"term": "1 Year"}],
        "zero_price": [{"unitPrice": 0.0, "retailPrice": 0.0, "term": "1 Year"}],
        "implausible_commitment": [{"unitPrice": 3.673, "retailPrice": 3.673, "term": "1 Year"}],
        "longer_term_not_cheaper": [{"unitPrice": 2.7, "retailPrice": 2.7, "term": "1 Year"},
                                    {"unitPrice": 2.8, "retailPrice": 2.8, "term": "3 Years"}],
    }
    for code, plans in cases.items():
        df = azure.parse_retail_items([{**base, "savingsPlan": plans}])
        assert code in [reason_code(s.reason) for s in df.attrs["skipped"]], code
        sp = df[df.pricing.str.startswith("savings_plan")]
        assert set(sp.pricing) == ({"savings_plan_1y"} if code == "longer_term_not_cheaper" else set()), code
    # a Spot item carrying a savingsPlan list (fixture spot price 0.444433): no savings-plan rows from it
    spot = {**base, "skuName": "NC24ads A100 v4 Spot", "meterName": "NC24ads A100 v4 Spot", "unitPrice": 0.444433,
            "retailPrice": 0.444433}
    both = azure.parse_retail_items([base, spot])
    assert set(both.pricing) == {"on_demand", "spot", "savings_plan_1y", "savings_plan_3y"}
    assert len(both[both.pricing.str.startswith("savings_plan")]) == 4  # the on-demand item's 2 terms x 2 payments


def test_azure_region_through_a_local_server_reservation_and_savings_plan_in_one_answer(server, monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    items = [BUG01_1Y, BUG01_3Y, _nc24_consumption()]
    page = {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail", "Items": items,
            "NextPageLink": None, "Count": len(items)}
    seen: list = []

    def handler(request: Request) -> Response:
        seen.append(dict(request.args))
        return Response(json.dumps(page), content_type="application/json")

    server.expect_request("/api/retail/prices").respond_with_handler(handler)
    opts = FetchOptions(endpoints={"azure": server.url_for("/api/retail/prices")}, timeout_s=5.0, max_attempts=2)
    raw = azure.fetch_region("eastus", opts)
    assert seen[0]["api-version"] == "2023-01-01-preview"  # the version that carries savingsPlan
    res = azure.parse_region(raw, "eastus", AS_OF)
    df = res.offers
    assert list(df.columns) == list(OFFER_COLUMNS) and (df.groupby(list(OFFER_KEY)).size() == 1).all()
    got = {(r.pricing, r.payment): (round(r.usd_per_hour, 6), r.upfront_usd, round(r.recurring_usd_per_hour, 6),
                                    r.term_hours) for r in df.itertuples()}
    assert got == {
        ("on_demand", ""): (3.673, 0.0, 3.673, 0.0),
        # BUG-01: the reservation's unitPrice is the term total: 21,900 / 8,760 = 2.50, 52,560 / 26,280 = 2.00
        ("reserved_1y", "all_upfront"): (2.5, 21900.0, 0.0, 8760.0),
        ("reserved_1y", "no_upfront"): (2.5, 0.0, 2.5, 8760.0),
        ("reserved_3y", "all_upfront"): (2.0, 52560.0, 0.0, 26280.0),
        ("reserved_3y", "no_upfront"): (2.0, 0.0, 2.0, 26280.0),
        # savingsPlan unitPrice IS hourly: 2.7 and 1.9 $/h as given, both payments at the same rate
        ("savings_plan_1y", "no_upfront"): (2.7, 0.0, 2.7, 8760.0),
        ("savings_plan_1y", "all_upfront"): (2.7, 0.0, 2.7, 8760.0),
        ("savings_plan_3y", "no_upfront"): (1.9, 0.0, 1.9, 26280.0),
        ("savings_plan_3y", "all_upfront"): (1.9, 0.0, 1.9, 26280.0),
    }
    sp = df[df.pricing.str.startswith("savings_plan")]
    assert set(sp.offering_class) == {""} and set(sp.source) == {azure.SOURCE}
    assert len(validate_offers(df).offers) == len(df)  # every row below on-demand, 3y below 1y
    with pytest.raises(PriceDataError, match="reservationTerm"):  # BUG-01: an unknown term is never hourly
        azure.parse_retail_items([{**BUG01_1Y, "reservationTerm": "2 Years"}])
