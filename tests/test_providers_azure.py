"""Azure live adapter (providers/azure.py): pure parsing of Retail Prices items and resource SKUs, and fetching
through a local HTTP server on 127.0.0.1 (never Azure). PRICE_FAULTS cases are quoted verbatim from
shared/cases/PRICE_FAULTS.md; recorded-shape fixtures are described in tests/fixtures/azure/README.md."""

from __future__ import annotations

import copy
import itertools
import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import providers
from gpuopt.kernel.errors import InputError, PriceDataError, ProviderError
from gpuopt.kernel.records import OFFER_COLUMNS
from providers import azure
from providers._common import OFFER_KEY
from providers.base import FetchOptions, MissingCredentials, TruncatedPriceList

FIXTURES = Path(__file__).parent / "fixtures" / "azure"
API_PATH = "/api/retail/prices"
RECORDED_BASE = "https://prices.azure.com:443/api/retail/prices"
AS_OF = "2025-01-15"


def _load(name: str):
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _reasons(skipped) -> list[str]:
    return [s.reason.split(":", 1)[0] for s in skipped]


def _one(df: pd.DataFrame, **where) -> pd.Series:
    m = pd.Series(True, index=df.index)
    for k, v in where.items():
        m &= df[k] == v
    sel = df[m]
    assert len(sel) == 1, f"{where}: {len(sel)} rows"
    return sel.iloc[0]


# ---------------------------------------------------------------------------------------------------- local server


@pytest.fixture(autouse=True)
def _no_subscription(monkeypatch):
    """No test may reach Azure: without a client and AZURE_SUBSCRIPTION_ID, resource SKUs are not fetched."""
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)


@pytest.fixture
def azure_server(server):
    server.clear()
    yield server
    server.clear()


def _options(server: HTTPServer, **kw) -> FetchOptions:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_attempts", 2)
    return FetchOptions(endpoints={"azure": server.url_for(API_PATH)}, **kw)


def _rebase(page: dict, server: HTTPServer) -> dict:
    page = copy.deepcopy(page)
    if page.get("NextPageLink"):
        page["NextPageLink"] = page["NextPageLink"].replace(RECORDED_BASE, server.url_for(API_PATH))
    return page


def _serve(server: HTTPServer, by_skip: dict, log: list | None = None, status: dict | None = None) -> None:
    """Answer GET /api/retail/prices with by_skip[$skip] (None for the first page); ``status[skip]`` is a list of
    status codes (and headers) to return first, one per call."""
    status = status or {}

    def handler(request: Request) -> Response:
        skip = request.args.get("$skip")
        if log is not None:
            log.append(request)
        queue = status.get(skip)
        if queue:
            code, headers = queue.pop(0)
            return Response("{}", status=code, headers=headers, content_type="application/json")
        return Response(json.dumps(by_skip[skip]), content_type="application/json")

    server.expect_request(API_PATH).respond_with_handler(handler)


@pytest.fixture
def eastus_pages(azure_server):
    pages = [_rebase(_load(f"retail_eastus_page{i}.json"), azure_server) for i in (1, 2, 3)]
    return {None: pages[0], "1000": pages[1], "2000": pages[2]}


# ---------------------------------------------------------------------------------------------------- BUG-01

BUG01_1Y = {"type": "Reservation", "reservationTerm": "1 Year", "armSkuName": "Standard_NC24ads_A100_v4",
            "armRegionName": "eastus", "unitOfMeasure": "1 Hour", "unitPrice": 21900.0, "retailPrice": 21900.0,
            "currencyCode": "USD"}
BUG01_3Y = {**BUG01_1Y, "reservationTerm": "3 Years", "unitPrice": 52560.0, "retailPrice": 52560.0}


def test_bug01_reservation_price_is_the_term_total():
    df = azure.parse_retail_items([BUG01_1Y, BUG01_3Y], as_of=AS_OF)
    assert set(df["pricing"]) == {"reserved_1y", "reserved_3y"} and len(df) == 4
    for pricing, total, hours, hourly, monthly in (("reserved_1y", 21900.0, 8760.0, 2.50, 1825.00),
                                                   ("reserved_3y", 52560.0, 26280.0, 2.00, 1460.00)):
        allup = _one(df, pricing=pricing, payment="all_upfront")
        assert allup["upfront_usd"] == total and allup["recurring_usd_per_hour"] == 0.0
        assert allup["usd_per_hour"] == pytest.approx(hourly) and allup["term_hours"] == hours
        monthly_pay = _one(df, pricing=pricing, payment="no_upfront")
        assert monthly_pay["upfront_usd"] == 0.0
        assert monthly_pay["recurring_usd_per_hour"] == pytest.approx(hourly)
        assert monthly_pay["recurring_usd_per_hour"] * 730 == pytest.approx(monthly)  # same total, paid monthly
        assert monthly_pay["usd_per_hour"] == pytest.approx(allup["usd_per_hour"])


@pytest.mark.parametrize("term", ["5 Years", "1 year", "", None])
def test_bug01_unrecognized_term_raises_never_consumption_math(term):
    item = {**BUG01_1Y, "reservationTerm": term}
    with pytest.raises(PriceDataError, match="reservationTerm"):
        azure.parse_retail_items([item])


def test_savings_plan_prices_are_hourly_reservation_prices_term_totals(eastus_pages):
    """BUG-01 note: in one payload, savingsPlan 2.7 / 1.9 $/h (illustrative, fixture README) are hourly, the
    reservations 21,900 / 52,560 are term totals (2.50 / 2.00 $/h)."""
    page = eastus_pages[None]
    df = azure.parse_retail_items(page)
    nc24 = df[(df["instance_type"] == "Standard_NC24ads_A100_v4") & (df["operating_system"] == "linux")]
    assert sorted(nc24["usd_per_hour"].round(6)) == [0.444433, 1.9, 1.9, 2.0, 2.0, 2.5, 2.5, 2.7, 2.7, 3.673]
    sp = nc24[nc24["pricing"].str.startswith("savings_plan")]
    assert sorted(zip(sp["pricing"], sp["payment"], sp["usd_per_hour"], sp["term_hours"])) == [
        ("savings_plan_1y", "all_upfront", 2.7, 8760.0), ("savings_plan_1y", "no_upfront", 2.7, 8760.0),
        ("savings_plan_3y", "all_upfront", 1.9, 26280.0), ("savings_plan_3y", "no_upfront", 1.9, 26280.0)]
    assert (sp["upfront_usd"] == 0).all() and (sp["recurring_usd_per_hour"] == sp["usd_per_hour"]).all()
    assert set(sp["offering_class"]) == {""}


# ---------------------------------------------------------------------------------------------------- BUG-05

BUG05 = [
    {"armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "productName": "Virtual Machines NCadsA100v4 Series", "type": "Consumption", "skuName": "NC24ads A100 v4", "meterName": "NC24ads A100 v4", "unitOfMeasure": "1 Hour", "unitPrice": 3.673},  # noqa: E501
    {"armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "productName": "Virtual Machines NCadsA100v4 Series", "type": "Consumption", "skuName": "NC24ads A100 v4 Spot", "meterName": "NC24ads A100 v4 Spot", "unitOfMeasure": "1 Hour", "unitPrice": 0.95},  # noqa: E501
    {"armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "productName": "Virtual Machines NCadsA100v4 Series", "type": "DevTestConsumption", "skuName": "NC24ads A100 v4", "meterName": "NC24ads A100 v4", "unitOfMeasure": "1 Hour", "unitPrice": 3.673},  # noqa: E501
    {"armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "productName": "Virtual Machines NCadsA100v4 Series", "type": "Reservation", "reservationTerm": "1 Year", "skuName": "NC24ads A100 v4", "unitOfMeasure": "1 Hour", "unitPrice": 21900.0},  # noqa: E501
    {"armSkuName": "Standard_NC24ads_A100_v4", "armRegionName": "eastus", "productName": "Virtual Machines NCadsA100v4 Series", "type": "Consumption", "skuName": "NC24ads A100 v4 Low Priority", "meterName": "NC24ads A100 v4 Low Priority", "unitOfMeasure": "1 Hour", "unitPrice": 0.735},  # noqa: E501
]


def _bug05_values(df: pd.DataFrame) -> dict:
    return {(r.pricing, r.payment): r.usd_per_hour for r in df.itertuples()}


def test_bug05_spot_low_priority_devtest_reservation_in_api_order():
    df = azure.parse_retail_items(BUG05, as_of=AS_OF)
    assert _bug05_values(df) == {("on_demand", ""): 3.673, ("spot", ""): 0.95,
                                 ("reserved_1y", "all_upfront"): pytest.approx(2.50),
                                 ("reserved_1y", "no_upfront"): pytest.approx(2.50)}
    assert _one(df, pricing="spot")["zone"] == ""
    assert sorted(_reasons(df.attrs["skipped"])) == ["devtest", "low_priority"]
    assert 0.735 not in set(df["usd_per_hour"])


def test_bug05_result_does_not_depend_on_item_order():
    reference = azure.parse_retail_items(BUG05, as_of=AS_OF)
    for perm in itertools.permutations(BUG05):
        df = azure.parse_retail_items(list(perm), as_of=AS_OF)
        pd.testing.assert_frame_equal(df, reference)


# ---------------------------------------------------------------------------------------------------- BUG-06

BUG06 = [
    {"armSkuName": "Standard_NC40ads_H100_v5", "armRegionName": "eastus", "type": "Consumption", "productName": "Virtual Machines NCads H100 v5 Series", "skuName": "NC40ads H100 v5", "unitPrice": 7.00},  # noqa: E501
    {"armSkuName": "Standard_NC40ads_H100_v5", "armRegionName": "eastus", "type": "Consumption", "productName": "Virtual Machines NCads H100 v5 Series Win", "skuName": "NC40ads H100 v5", "unitPrice": 7.90},  # noqa: E501
    {"armSkuName": "Standard_NC40ads_H100_v5", "armRegionName": "eastus", "type": "Consumption", "productName": "Cloud Services NCads H100 v5 Series", "skuName": "NC40ads H100 v5", "unitPrice": 7.45},  # noqa: E501
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_bug06_win_suffix_and_cloud_services(order):
    df = azure.parse_retail_items([BUG06[i] for i in order], as_of=AS_OF)
    assert _one(df, operating_system="linux")["usd_per_hour"] == 7.00
    assert _one(df, operating_system="windows")["usd_per_hour"] == 7.90
    assert 7.45 not in set(df["usd_per_hour"])
    assert _reasons(df.attrs["skipped"]) == ["not_a_vm_row"]
    assert (df.groupby(["instance_type", "region", "operating_system", "pricing"]).size() == 1).all()
    assert _one(df, operating_system="linux")["gpu_model"] == "H100-NVL-94GB"


def test_bug06_offers_of_a_region_are_linux_only():
    res = azure.parse_region({"retail_pages": [{"Items": BUG06, "NextPageLink": None, "Count": 3}],
                              "resource_skus": None}, "eastus", AS_OF)
    assert list(res.offers.columns) == list(OFFER_COLUMNS)
    assert list(res.offers["usd_per_hour"]) == [7.00]
    assert any("Windows" in n for n in res.notes)


@pytest.mark.parametrize("reverse", [False, True])
def test_two_prices_for_one_key_raise_whatever_the_order(reverse):
    other = {**BUG06[0], "unitPrice": 7.25}
    items = [BUG06[0], other][::-1 if reverse else 1]
    with pytest.raises(PriceDataError, match="more than one price"):
        azure.parse_retail_items(items)


def test_identical_repeat_collapses_and_is_reported():
    df = azure.parse_retail_items([BUG06[0], dict(BUG06[0])])
    assert len(df) == 1 and _reasons(df.attrs["skipped"]) == ["duplicate"]


# ---------------------------------------------------------------------------------------------------- BUG-07

BUG07 = {"items": [{"armSkuName": "Standard_B1s", "armRegionName": "eastus", "type": "Consumption", "meterName": "B1s", "unitPrice": 0.0},  # noqa: E501
                   {"armSkuName": "Standard_B1s", "armRegionName": "eastus", "type": "Consumption", "meterName": "B1s", "unitPrice": 0.0104}],  # noqa: E501
         "catalog": [{"sku": "Standard_NC40ads_H100_v5", "region": "northcentralus", "gpus": 1, "price": None}]}


@pytest.mark.parametrize("reverse", [False, True])
def test_bug07_zero_price_discarded_with_a_report(reverse):
    items = BUG07["items"][::-1 if reverse else 1]
    df = azure.parse_retail_items(items, gpu_only=False, as_of=AS_OF)  # B1s is not a GPU size: inspect all sizes
    assert list(df["usd_per_hour"]) == [0.0104]
    assert _one(df, instance_type="Standard_B1s")["pricing"] == "on_demand"
    assert _reasons(df.attrs["skipped"]) == ["zero_price"]
    # the GPU offers (default) never hold it
    assert azure.parse_retail_items(items).empty


def test_bug07_zero_price_kept_only_with_the_free_tier_flag():
    zero = BUG07["items"][:1]
    assert azure.parse_retail_items(zero, gpu_only=False).empty
    kept = azure.parse_retail_items(zero, gpu_only=False, allow_free={"Standard_B1s"})
    assert list(kept["usd_per_hour"]) == [0.0] and any("allow_free" in n for n in kept.attrs["notes"])


def test_bug07_missing_price_is_unknown_never_zero():
    c = BUG07["catalog"][0]
    item = {"armSkuName": c["sku"], "armRegionName": c["region"], "type": "Consumption",
            "productName": "Virtual Machines NCads H100 v5 Series", "skuName": "NC40ads H100 v5",
            "unitPrice": c["price"]}
    df = azure.parse_retail_items([item])
    assert df.empty
    assert [(s.instance_type, s.region) for s in df.attrs["skipped"]] == [(c["sku"], c["region"])]
    assert _reasons(df.attrs["skipped"]) == ["unknown_price"]


# ---------------------------------------------------------------------------------------------------- BUG-08

BUG08 = [{"Items": [{"armSkuName": "Standard_NC24ads_A100_v4", "type": "Consumption", "unitPrice": 3.673}],
          "NextPageLink": "https://prices.azure.com/api/retail/prices?$skip=1000"},
         {"Items": [{"armSkuName": "Standard_NC48ads_A100_v4", "type": "Consumption", "unitPrice": 7.346}],
          "NextPageLink": None}]


def test_bug08_both_pages_without_cap(azure_server):
    first = {**BUG08[0], "NextPageLink": azure_server.url_for(API_PATH) + "?$skip=1000"}
    _serve(azure_server, {None: first, "1000": BUG08[1]})
    raw = azure.fetch_region("eastus", _options(azure_server))
    assert len(raw["retail_pages"]) == 2
    res = azure.parse_region(raw, "eastus", AS_OF)
    assert dict(zip(res.offers["instance_type"], res.offers["usd_per_hour"])) == {
        "Standard_NC24ads_A100_v4": 3.673, "Standard_NC48ads_A100_v4": 7.346}


def test_bug08_max_pages_1_raises_truncated_never_a_short_list(azure_server):
    log: list = []
    _serve(azure_server, {None: BUG08[0], "1000": BUG08[1]}, log=log)
    with pytest.raises(TruncatedPriceList) as e:
        azure.fetch_region("eastus", _options(azure_server, max_pages=1))
    assert e.value.next == "https://prices.azure.com/api/retail/prices?$skip=1000"
    assert "$skip=1000" in str(e.value)
    assert len(log) == 1  # the link was never followed (nor sent to the internet)


def test_bug08_next_page_link_pointing_at_itself(azure_server):
    self_link = {"Items": BUG08[0]["Items"], "NextPageLink": None}
    log: list = []

    def handler(request: Request) -> Response:
        log.append(request)
        return Response(json.dumps({**self_link, "NextPageLink": request.url}), content_type="application/json")

    azure_server.expect_request(API_PATH).respond_with_handler(handler)
    with pytest.raises(TruncatedPriceList, match="already read") as e:
        azure.fetch_region("eastus", _options(azure_server))
    assert e.value.next and len(log) == 1


def test_next_page_link_back_to_an_earlier_page(azure_server):
    base = azure_server.url_for(API_PATH)
    pages = {None: {"Items": BUG08[0]["Items"], "NextPageLink": base + "?$skip=1000"},
             "1000": {"Items": BUG08[1]["Items"], "NextPageLink": base + "?$skip=1000"}}
    _serve(azure_server, pages)
    with pytest.raises(TruncatedPriceList, match="already read"):
        azure.fetch_region("eastus", _options(azure_server))


# ---------------------------------------------------------------------------------------------------- BUG-12

BUG12 = {"request": "https://prices.azure.com/api/retail/prices?currencyCode='EUR'&$filter=armSkuName eq 'Standard_NC24ads_A100_v4'",  # noqa: E501
         "response": {"BillingCurrency": "EUR", "Count": 1, "Items": [{"currencyCode": "EUR", "unitPrice": 3.10, "type": "Consumption"}]},  # noqa: E501
         "other_cloud": {"provider": "aws", "instance": "p4d.24xlarge", "usd_hr": 32.77}}


def _bug12_response() -> dict:
    """The case's response; its item names no size, the request's $filter does (armSkuName eq '...')."""
    r = copy.deepcopy(BUG12["response"])
    r["Items"][0]["armSkuName"] = "Standard_NC24ads_A100_v4"
    return r


def test_bug12_eur_answer_to_a_usd_request_is_refused(azure_server):
    _serve(azure_server, {None: BUG12["response"]})
    with pytest.raises(PriceDataError, match="BillingCurrency EUR but USD"):
        azure.fetch_region("eastus", _options(azure_server))


def test_bug12_eur_requested_is_carried_per_row(azure_server):
    log: list = []
    _serve(azure_server, {None: _bug12_response()}, log=log)
    raw = azure.fetch_region("eastus", _options(azure_server, currency="EUR"))
    assert log[0].args["currencyCode"] == "'EUR'"
    row = _one(azure.parse_region(raw, "eastus", AS_OF).offers, pricing="on_demand")
    assert (row["usd_per_hour"], row["currency"]) == (3.10, "EUR")
    # the pure importer carries it too; mixing it with USD prices of the same key is refused
    df = azure.parse_retail_items(_bug12_response(), region="eastus")
    assert list(df["currency"]) == ["EUR"]
    usd = {**_bug12_response()["Items"][0], "currencyCode": "USD", "unitPrice": 3.673}
    with pytest.raises(PriceDataError):
        azure.parse_retail_items([_bug12_response()["Items"][0], usd], region="eastus")


def test_bug12_count_0_is_an_error_not_an_empty_catalog(azure_server):
    empty = {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail", "Items": [],
             "NextPageLink": None, "Count": 0}
    _serve(azure_server, {None: empty})
    with pytest.raises(PriceDataError, match="no prices"):
        azure.fetch_region("eastus", _options(azure_server))


def test_items_in_another_currency_than_their_page_are_refused():
    page = {"BillingCurrency": "USD", "Items": [{**_bug12_response()["Items"][0]}], "NextPageLink": None}
    with pytest.raises(PriceDataError, match="items in"):
        azure.parse_region({"retail_pages": [page], "resource_skus": None}, "eastus", AS_OF)


# ---------------------------------------------------------------------------------------------------- fetch + parse


def test_three_pages_through_the_local_server(azure_server, eastus_pages):
    log: list = []
    _serve(azure_server, eastus_pages, log=log)
    raw = azure.fetch_region("eastus", _options(azure_server))
    assert [r.args.get("$skip") for r in log] == [None, "1000", "2000"]
    first = log[0].args
    assert first["$filter"] == "serviceName eq 'Virtual Machines' and armRegionName eq 'eastus'"
    assert (first["currencyCode"], first["api-version"], first["meterRegion"]) == ("'USD'", "2023-01-01-preview",
                                                                                     "'primary'")
    assert raw["retail_pages"] == [eastus_pages[k] for k in (None, "1000", "2000")]  # unchanged payloads
    assert raw["resource_skus"] is None

    res = azure.parse_region({**raw, "resource_skus": None}, "eastus", AS_OF)
    o = res.offers
    assert list(o.columns) == list(OFFER_COLUMNS)
    assert (o.groupby(list(OFFER_KEY)).size() == 1).all()
    assert set(o["source"]) == {"azure-retail-prices-api"} and set(o["as_of"]) == {AS_OF}
    assert set(o.loc[o["pricing"] == "spot", "zone"]) == {""}
    got = {(r.instance_type, r.pricing, r.payment): round(r.usd_per_hour, 6) for r in o.itertuples()}
    assert got == {
        ("Standard_NC24ads_A100_v4", "on_demand", ""): 3.673,
        ("Standard_NC24ads_A100_v4", "spot", ""): 0.444433,
        ("Standard_NC24ads_A100_v4", "reserved_1y", "all_upfront"): 2.5,
        ("Standard_NC24ads_A100_v4", "reserved_1y", "no_upfront"): 2.5,
        ("Standard_NC24ads_A100_v4", "reserved_3y", "all_upfront"): 2.0,
        ("Standard_NC24ads_A100_v4", "reserved_3y", "no_upfront"): 2.0,
        ("Standard_NC24ads_A100_v4", "savings_plan_1y", "all_upfront"): 2.7,  # savingsPlan: hourly as given
        ("Standard_NC24ads_A100_v4", "savings_plan_1y", "no_upfront"): 2.7,
        ("Standard_NC24ads_A100_v4", "savings_plan_3y", "all_upfront"): 1.9,
        ("Standard_NC24ads_A100_v4", "savings_plan_3y", "no_upfront"): 1.9,
        ("Standard_NC48ads_A100_v4", "on_demand", ""): 7.346,
        ("Standard_NC48ads_A100_v4", "spot", ""): 0.888866,
        ("Standard_ND96isr_H100_v5", "on_demand", ""): 98.32,
        ("Standard_NV36ads_A10_v5", "on_demand", ""): 3.2,
        ("Standard_NV36ads_A10_v5", "spot", ""): 0.8,
        ("Standard_NV6ads_A10_v5", "on_demand", ""): 0.5333,
        ("Standard_NC4as_T4_v3", "on_demand", ""): 0.526,
        ("Standard_NC4as_T4_v3", "spot", ""): 0.062699,
    }
    nv6 = _one(o, instance_type="Standard_NV6ads_A10_v5")
    assert nv6["gpu_count"] == pytest.approx(1 / 6) and nv6["gpu_memory_gib"] == 24 and nv6["gpu_model"] == "A10"
    assert _one(o, instance_type="Standard_ND96isr_H100_v5")["gpu_count"] == 8
    assert _one(o, instance_type="Standard_ND96isr_H100_v5")["interconnect"] == "nvlink"
    reasons = {(s.instance_type, s.reason.split(":", 1)[0]) for s in res.skipped}
    assert reasons == {("Standard_NC24ads_A100_v4", "devtest"), ("Standard_NC24ads_A100_v4", "low_priority"),
                       ("Standard_NC24ads_A100_v4", "not_a_vm_row"), ("Standard_ND96isr_H100_v5", "placeholder_spot"),
                       ("Standard_NC8ads_A10_v4", "unknown_gpu")}
    assert any("non-GPU" in n for n in res.notes) and any("resource SKUs not fetched" in n for n in res.notes)
    assert o["vcpus"].isna().all()  # without a subscription vCPUs are unknown, never guessed


def test_429_with_retry_after_is_retried(azure_server, eastus_pages):
    log: list = []
    _serve(azure_server, eastus_pages, log=log, status={"1000": [(429, {"Retry-After": "1"})]})
    t0 = time.monotonic()
    raw = azure.fetch_region("eastus", _options(azure_server, max_attempts=3))
    assert time.monotonic() - t0 >= 0.9  # Retry-After honoured
    assert len(raw["retail_pages"]) == 3
    assert [r.args.get("$skip") for r in log] == [None, "1000", "1000", "2000"]


def test_500_once_then_success(azure_server, eastus_pages):
    log: list = []
    _serve(azure_server, eastus_pages, log=log, status={"2000": [(500, {})]})
    raw = azure.fetch_region("eastus", _options(azure_server))
    assert len(raw["retail_pages"]) == 3 and len(log) == 4


def test_500_that_persists_in_the_middle_is_an_error_not_a_short_list(azure_server, eastus_pages):
    log: list = []
    _serve(azure_server, eastus_pages, log=log, status={"1000": [(500, {})] * 10})
    with pytest.raises(TruncatedPriceList, match="page 2") as e:
        azure.fetch_region("eastus", _options(azure_server, max_attempts=2))
    assert isinstance(e.value, ProviderError) and "$skip=1000" in e.value.next
    assert [r.args.get("$skip") for r in log] == [None, "1000", "1000"]


def test_first_page_failing_is_a_provider_error(azure_server, eastus_pages):
    _serve(azure_server, eastus_pages, status={None: [(503, {})] * 10})
    with pytest.raises(ProviderError, match="page 1.*HTTP 503"):
        azure.fetch_region("eastus", _options(azure_server, max_attempts=1))


def test_timeout_is_honoured(azure_server):
    def slow(request: Request) -> Response:
        time.sleep(1.5)
        return Response(json.dumps(BUG08[1]), content_type="application/json")

    azure_server.expect_request(API_PATH).respond_with_handler(slow)
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match="page 1"):
        azure.fetch_region("eastus", _options(azure_server, timeout_s=0.2, max_attempts=2))
    assert time.monotonic() - t0 < 1.2  # two attempts of 0.2 s, not the handler's 1.5 s


# ---------------------------------------------------------------------------------------------------- resource SKUs


def _snake(d):
    """The msrest-era ``as_dict()`` spelling of the same SKU (resource_type, reason_code, restriction_info)."""
    names = {"resourceType": "resource_type", "locationInfo": "location_info", "restrictionInfo": "restriction_info",
             "reasonCode": "reason_code", "zoneDetails": "zone_details"}
    if isinstance(d, dict):
        return {names.get(k, k): _snake(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_snake(x) for x in d]
    return d


@pytest.mark.parametrize("spelling", ["wire", "snake"])
def test_parse_resource_skus(spelling):
    skus = _load("resource_skus_eastus.json")
    df = azure.parse_resource_skus(skus if spelling == "wire" else _snake(skus))
    assert "Premium_LRS" not in set(df["instance_type"])  # disks ignored
    nv6 = _one(df, instance_type="Standard_NV6ads_A10_v5")
    assert (nv6["gpus_reported"], nv6["gpu_count"], nv6["gpu_model"]) == (1.0, pytest.approx(1 / 6), "A10")
    assert (nv6["vcpus"], nv6["memory_gib"], nv6["restricted"]) == (6.0, 55.0, False)
    nd = _one(df, instance_type="Standard_ND96isr_H100_v5")
    assert bool(nd["restricted"]) and nd["gpu_count"] == 8
    t4 = _one(df, instance_type="Standard_NC4as_T4_v3")
    assert not t4["restricted"] and t4["restricted_zones"] == "2"


def test_resource_skus_fill_facts_and_skip_restricted_sizes(eastus_pages):
    raw = {"retail_pages": list(eastus_pages.values()), "resource_skus": _load("resource_skus_eastus.json")}
    res = azure.parse_region(raw, "eastus", AS_OF)
    o = res.offers
    assert "Standard_ND96isr_H100_v5" not in set(o["instance_type"])
    assert ("Standard_ND96isr_H100_v5", "restricted") in {(s.instance_type, s.reason.split(":")[0])
                                                          for s in res.skipped}
    nv6 = _one(o, instance_type="Standard_NV6ads_A10_v5")
    assert (nv6["gpu_count"], nv6["vcpus"], nv6["memory_gib"]) == (pytest.approx(1 / 6), 6.0, 55.0)
    assert _one(o, instance_type="Standard_NC24ads_A100_v4", pricing="on_demand")["vcpus"] == 24
    assert any("zones 2 restricted" in n for n in res.notes)
    assert not any("NV6ads" in n and "GPUs" in n for n in res.notes)  # GPUs: 1 for a 1/6 partition is expected
    assert not any("not fetched" in n for n in res.notes)


class _FakeSkus:
    def __init__(self, skus):
        self.skus, self.filters = skus, []

    def list(self, *, filter=None):  # noqa: A002 - the SDK's keyword
        from azure.mgmt.compute.models import ResourceSku

        self.filters.append(filter)
        return iter([ResourceSku(s) for s in self.skus])


class _FakeCompute:
    def __init__(self, skus):
        self.resource_skus = _FakeSkus(skus)


def test_fetch_uses_a_given_compute_client(azure_server, eastus_pages):
    _serve(azure_server, eastus_pages)
    client = _FakeCompute(_load("resource_skus_eastus.json"))
    raw = azure.fetch_region("eastus", _options(azure_server, clients={"azure_compute": client}))
    assert client.resource_skus.filters == ["location eq 'eastus'"]
    assert raw["resource_skus"] == _load("resource_skus_eastus.json")


def test_without_subscription_no_resource_skus(azure_server, eastus_pages):
    _serve(azure_server, eastus_pages)
    assert azure.fetch_region("eastus", _options(azure_server))["resource_skus"] is None


def test_subscription_without_the_azure_extra_says_how_to_install_it(azure_server, eastus_pages, monkeypatch):
    """The Azure SDK is the extra gpuopt[azure]: without it, AZURE_SUBSCRIPTION_ID gives one clear error."""
    _serve(azure_server, eastus_pages)
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", "00000000-0000-0000-0000-000000000000")
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # import azure.identity -> ImportError
    with pytest.raises(MissingCredentials) as e:
        azure.fetch_region("eastus", _options(azure_server))
    assert "pip install 'gpuopt[azure]'" in str(e.value) and "(azure.identity)" in str(e.value)


# ---------------------------------------------------------------------------------------------------- regions, file


def test_list_regions():
    assert azure.list_regions(FetchOptions()) == list(azure.DEFAULT_REGIONS)
    assert azure.list_regions(FetchOptions(regions=["westeurope", "eastus", "eastus"])) == ["westeurope", "eastus"]
    for bad in ("East US", "us-east-1"):
        with pytest.raises(InputError, match="regions"):
            azure.list_regions(FetchOptions(regions=[bad]))


def test_file_importer_accepts_a_response_a_list_of_responses_or_items(tmp_path, eastus_pages):
    imp = providers.importer_for_format("azure-retail")
    assert (imp.module, imp.function, imp.kind) == ("providers.azure", "parse_retail_items", "file")
    pages = list(eastus_pages.values())
    items = [i for p in pages for i in p["Items"]]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(pages), encoding="utf-8")
    from_file = imp.load()(path, as_of=AS_OF)
    pd.testing.assert_frame_equal(from_file, azure.parse_retail_items(items, as_of=AS_OF))
    one = azure.parse_retail_items(str(FIXTURES / "retail_eastus_page3.json"))
    assert set(one["instance_type"]) == {"Standard_NV36ads_A10_v5", "Standard_NV6ads_A10_v5", "Standard_NC4as_T4_v3"}
    with pytest.raises(InputError):
        azure.parse_retail_items({"value": []})
    api = {n: i for n, i in providers.IMPORTERS.items() if i.module == "providers.azure" and i.kind == "api"}
    assert {i.function for i in api.values()} == {"parse_resource_skus", "parse_region"}


def test_import_file_gives_linux_offers_of_a_saved_listing(tmp_path, eastus_pages):
    path = tmp_path / "eastus.json"
    path.write_text(json.dumps(list(eastus_pages.values())), encoding="utf-8")
    res = azure.import_file(path, AS_OF)
    assert list(res.offers.columns) == list(OFFER_COLUMNS)
    assert set(res.offers["source"]) == {"import:eastus.json"}
    assert len(res.offers) == 14 + 4 and "windows" not in res.offers.to_string().lower()  # + 4 savings-plan rows
    assert any("Windows" in n for n in res.notes)
