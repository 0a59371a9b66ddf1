"""Spot interruption per instance type and region (issue 26, point 3): providers.spot_advisor (parse the AWS Spot
Instance Advisor JSON) and pricing_cache.spot_risk (shipped extract, refresh, look-up).

Figures used as checks, each with its source:
- The shipped extract and tests/fixtures/aws/spot-advisor-data_excerpt.json come from the Advisor's
  spot-advisor-data.json as committed in alexei-led/spotinfo@5bdc33cee2e185c2f62df29dd9c4ad0ad7102a74
  (internal/spot/data/spot-advisor-data.json, 2025-06-28; pricing_cache/data/SPOT_INTERRUPTION.md). In it, Linux:
  us-east-1 p5.48xlarge r=4 (>20%), p4d.24xlarge r=2 (10-15%), g5.xlarge r=4, g6.xlarge r=4, g6e.xlarge r=1
  (5-10%), g4dn.xlarge r=3 (15-20%); us-west-2 p5.48xlarge r=1; eu-west-1 g4dn.xlarge r=1.
- Bucket labels: "<5%", "5-10%", "10-15%", "15-20%", ">20%" (the file's "ranges";
  https://aws.amazon.com/ec2/spot/instance-advisor/).
"""

from __future__ import annotations

import copy
import json
import logging
import math
from pathlib import Path

import pytest
from werkzeug import Response

import providers
from gpuopt.kernel.errors import PriceDataError
from optimizer.sizing import goodput
from pricing_cache import spot_risk as sr
from providers.base import FetchOptions
from providers.spot_advisor import ADVISOR_URL, BUCKETS, parse_advisor

EXCERPT = Path(__file__).parent / "fixtures" / "aws" / "spot-advisor-data_excerpt.json"
SPOTINFO = ("alexei-led/spotinfo@5bdc33cee2e185c2f62df29dd9c4ad0ad7102a74 "
            "internal/spot/data/spot-advisor-data.json")
PATH = "/spot-advisor-data.json"


@pytest.fixture
def excerpt() -> dict:
    return json.loads(EXCERPT.read_text(encoding="utf-8"))


@pytest.fixture
def shipped() -> sr.SpotRiskTable:
    return sr.load_table(use_cache=False)


# ------------------------------------------------------------------------------------------ the shipped extract


@pytest.mark.parametrize("region, itype, bucket, fraction", [
    ("us-east-1", "p5.48xlarge", 4, 0.20),   # >20 %: lower bound
    ("us-east-1", "p4d.24xlarge", 2, 0.125),  # 10-15 %: midpoint
    ("us-east-1", "g5.xlarge", 4, 0.20),
    ("us-east-1", "g6.xlarge", 4, 0.20),
    ("us-east-1", "g6e.xlarge", 1, 0.075),    # 5-10 %
    ("us-east-1", "g4dn.xlarge", 3, 0.175),   # 15-20 %
    ("us-west-2", "p5.48xlarge", 1, 0.075),
    ("eu-west-1", "g4dn.xlarge", 1, 0.075),
])
def test_real_buckets_from_the_shipped_extract(shipped, region, itype, bucket, fraction):
    e = shipped.get("aws", region, itype)
    assert e is not None and e.bucket == bucket and e.as_of == "2025-06-28" and SPOTINFO in e.source
    f, src = sr.monthly_interruption("aws", region, itype, table=shipped)
    assert f == pytest.approx(fraction)
    assert BUCKETS[bucket][0] in src and "2025-06-28" in src and SPOTINFO in src
    assert ("at least" in src) == (bucket == 4)


def test_shipped_extract_is_whole_and_agrees_with_the_excerpt(excerpt):
    lines = sr.SHIPPED_EXTRACT.read_text(encoding="utf-8").splitlines()
    rows = sr.read_extract()
    assert len(rows) == len(lines) - 1 == 682
    keys = {(r.provider, r.region, r.instance_type, r.os) for r in rows}
    assert len(keys) == len(rows)
    assert {r.os for r in rows} == {"Linux"} and {r.provider for r in rows} == {"aws"}
    assert len({r.instance_type for r in rows}) == 55 and len({r.region for r in rows}) == 27
    assert not any(r.instance_type.startswith(("m5", "trn", "inf", "dl1")) for r in rows)
    # the extract is the project's parser applied to the copy: every GPU/Linux entry of the excerpt is in it as is
    table = {(r.region, r.instance_type): r.bucket for r in rows}
    part = parse_advisor(json.dumps(excerpt), as_of="2025-06-28", source=SPOTINFO, gpu_only=True)
    assert len(part) == 18
    assert all(table[(p.region, p.instance_type)] == p.bucket for p in part)


def test_read_extract_skips_a_malformed_row_with_its_line(tmp_path, caplog):
    text = sr.SHIPPED_EXTRACT.read_text(encoding="utf-8").splitlines()
    bad = text[1].split(",")
    bad[5] = "7"  # bounds that disagree with the bucket
    p = tmp_path / "x.csv"
    p.write_text("\n".join([text[0], ",".join(bad), text[2], "aws,us-east-1,g5.xlarge,Linux,9,0,5,2025-06-28,s"]) + "\n")
    with caplog.at_level(logging.WARNING, logger="pricing_cache.spot_risk"):
        rows = sr.read_extract(p)
    assert len(rows) == 1
    assert "line 2" in caplog.text and "line 4" in caplog.text
    p.write_text("provider,region\n")
    with pytest.raises(PriceDataError, match="header"):
        sr.read_extract(p)


# ----------------------------------------------------------------------------------------- rule and fallback


def test_bucket_rule_midpoint_and_open_bucket_lower_bound():
    assert [sr.bucket_fraction(i) for i in range(5)] == pytest.approx([0.025, 0.075, 0.125, 0.175, 0.20])
    assert sr.per_instance_hour(0.20) == pytest.approx(-math.log(0.8) / 730)
    with pytest.raises(ValueError):
        sr.per_instance_hour(1.0)


def test_default_agrees_with_goodput():
    assert sr.DEFAULT_MONTHLY_INTERRUPTION_FRACTION == goodput.SPOT_MONTHLY_INTERRUPTION_FRACTION
    assert sr.HOURS_PER_MONTH == goodput.HOURS_PER_MONTH
    rate, _ = sr.interruptions_per_instance_hour("aws", "us-east-1", "nope.48xlarge")
    assert rate == pytest.approx(goodput.SPOT_INTERRUPTIONS_PER_INSTANCE_HOUR)


@pytest.mark.parametrize("provider, region, itype", [
    ("aws", "us-east-1", "nope.48xlarge"),            # unknown type
    ("aws", "mars-north-1", "p5.48xlarge"),           # unknown region
    ("azure", "eastus", "Standard_ND96asr_v4"),       # no Azure data shipped
    ("gcp", "us-central1", "a3-highgpu-8g"),
])
def test_fallback_is_the_default_and_says_so(shipped, provider, region, itype):
    f, src = sr.monthly_interruption(provider, region, itype, table=shipped)
    assert f == 0.20 and src.startswith("default:") and itype in src
    if provider == "azure":
        assert "Azure" in src


def test_per_instance_hour_of_a_real_bucket(shipped):
    rate, src = sr.interruptions_per_instance_hour("aws", "us-east-1", "p4d.24xlarge", table=shipped)
    assert rate == pytest.approx(-math.log(1 - 0.125) / 730)
    assert "10-15%" in src and "-ln(1 - 0.125) / 730" in src


def test_os_is_a_key(shipped):
    assert sr.monthly_interruption("aws", "us-east-1", "p4d.24xlarge", os="Windows", table=shipped)[1].startswith(
        "default:")  # the extract is Linux only


# ------------------------------------------------------------------------------------------------- the parser


def test_parse_real_shape(excerpt):
    rows = parse_advisor(json.dumps(excerpt).encode(), as_of="2025-06-28", os_names=("Linux", "Windows"))
    assert len(rows) == 21 + 16
    by = {(r.region, r.instance_type, r.os): r for r in rows}
    assert by[("us-east-1", "g6.xlarge", "Windows")].bucket == 0  # Windows differs: {"s": 73, "r": 0}
    assert by[("us-east-1", "m5.large", "Linux")].bucket == 3
    p5 = by[("us-east-1", "p5.48xlarge", "Linux")]
    assert (p5.bucket, p5.low_pct, p5.high_pct, p5.source) == (4, 20.0, None, ADVISOR_URL)
    assert not any(r.instance_type == "m5.large" for r in parse_advisor(excerpt, as_of="x", gpu_only=True))
    assert providers.IMPORTERS["aws-spot-advisor"].load() is parse_advisor


def test_parse_refuses_changed_ranges_and_non_json(excerpt):
    changed = copy.deepcopy(excerpt)
    changed["ranges"][4]["label"] = "20-30%"
    with pytest.raises(PriceDataError, match="ranges changed"):
        parse_advisor(changed, as_of="x")
    with pytest.raises(PriceDataError, match="not JSON"):
        parse_advisor(b"<html>", as_of="x")
    with pytest.raises(PriceDataError, match="spot_advisor"):
        parse_advisor({"ranges": excerpt["ranges"]}, as_of="x")


def test_parse_skips_an_entry_without_a_valid_bucket(excerpt):
    d = copy.deepcopy(excerpt)
    d["spot_advisor"]["us-east-1"]["Linux"]["p5.48xlarge"] = {"s": 52, "r": 7}
    d["spot_advisor"]["us-east-1"]["Linux"]["g5.xlarge"] = {"s": 59}
    keys = {(r.region, r.instance_type) for r in parse_advisor(d, as_of="x")}
    assert ("us-east-1", "p5.48xlarge") not in keys and ("us-east-1", "g5.xlarge") not in keys
    assert ("us-east-1", "g6.xlarge") in keys


# ------------------------------------------------------------------------------------------------- the refresh


def _options(server) -> FetchOptions:
    return FetchOptions(endpoints={"aws_spot_advisor": server.url_for(PATH)}, timeout_s=5.0, max_attempts=1)


def _serve(server, body: bytes, status: int = 200, headers: dict | None = None) -> None:
    server.clear()
    server.expect_request(PATH).respond_with_response(Response(body, status=status, headers=headers or {},
                                                               content_type="application/json"))


def test_refresh_writes_the_real_shape_and_the_lookup_uses_it(server, excerpt):
    body = json.dumps(excerpt).encode()
    _serve(server, body, headers={"Last-Modified": "Sun, 20 Sep 2026 02:56:06 GMT"})
    out = sr.refresh_spot_advisor(_options(server), min_entries=10)
    assert out.ok and out.as_of == "2026-09-20" and out.entries == 21
    assert Path(out.path).read_bytes() == body  # the payload as served
    table = sr.load_table()
    assert table.origin.startswith("refresh") and "2026-09-20" in table.origin
    f, src = sr.monthly_interruption("aws", "us-west-2", "p5.48xlarge", table=table)
    assert f == pytest.approx(0.075) and "as_of 2026-09-20" in src and ADVISOR_URL in src
    # the refresh reads every type, not only GPUs
    assert sr.monthly_interruption("aws", "us-east-1", "m5.large", table=table)[0] == pytest.approx(0.175)


@pytest.mark.parametrize("status, body, error", [
    (500, b"{}", "HTTPError"),
    (200, b"<html>not json</html>", "not JSON"),
    (200, None, "ranges changed"),
    (200, b'{"ranges": [], "spot_advisor": {}}', "ranges changed"),
])
def test_failed_refresh_keeps_the_previous_file(server, excerpt, status, body, error):
    good = json.dumps(excerpt).encode()
    _serve(server, good)
    first = sr.refresh_spot_advisor(_options(server), min_entries=10)
    assert first.ok
    if body is None:
        changed = copy.deepcopy(excerpt)
        changed["ranges"][0]["label"] = "<3%"
        body = json.dumps(changed).encode()
    _serve(server, body, status=status)
    out = sr.refresh_spot_advisor(_options(server), min_entries=10)
    assert not out.ok and error in out.error and Path(first.path).name in out.kept
    assert [c.path for c in sr.cached_refreshes()] == [Path(first.path)]
    assert Path(first.path).read_bytes() == good
    assert sr.load_table().origin.startswith(f"refresh {Path(first.path).name}")


def test_failed_first_refresh_keeps_the_shipped_extract(server, excerpt):
    _serve(server, json.dumps(excerpt).encode())
    out = sr.refresh_spot_advisor(_options(server))  # 21 entries < MIN_ENTRIES: a truncated answer
    assert not out.ok and "fewer than" in out.error and "shipped extract" in out.kept
    assert sr.cached_refreshes() == []
    assert sr.load_table().origin.startswith("shipped")


def test_refresh_of_an_unreachable_server_keeps_the_shipped_extract():
    opts = FetchOptions(endpoints={"aws_spot_advisor": "http://127.0.0.1:9/spot-advisor-data.json"},
                        timeout_s=2.0, max_attempts=1)
    out = sr.refresh_spot_advisor(opts)
    assert not out.ok and "ConnectionError" in out.error and "shipped" in out.kept


def test_damaged_newest_refresh_is_skipped_and_old_ones_pruned(server, excerpt):
    import datetime as dt

    body = json.dumps(excerpt).encode()
    _serve(server, body)
    t = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    paths = [Path(sr.refresh_spot_advisor(_options(server), now=t + dt.timedelta(days=i), min_entries=10).path)
             for i in range(sr.KEEP_REFRESHES + 1)]
    assert [c.path for c in sr.cached_refreshes()] == paths[::-1][: sr.KEEP_REFRESHES]  # the oldest pruned
    assert not paths[0].exists()
    paths[-1].write_bytes(body + b" ")  # newest damaged: its sha256 no longer matches
    assert sr.cached_refreshes()[0].path == paths[-2]
    assert sr.load_table().origin.startswith(f"refresh {paths[-2].name}")


# ----------------------------------------------------------------------------- placement scores (Stubber-tested)


def _stubbed_ec2():
    import boto3
    from botocore.stub import Stubber

    c = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                      region_name="us-east-1").client("ec2")
    return c, Stubber(c)


def test_placement_scores_every_page_parsed():
    from providers.spot_advisor import PlacementScore, fetch_spot_placement_scores, parse_spot_placement_scores

    ec2, stub = _stubbed_ec2()
    asked = {"InstanceTypes": ["p5.48xlarge"], "TargetCapacity": 2, "TargetCapacityUnitType": "units",
             "SingleAvailabilityZone": True, "MaxResults": 1000, "RegionNames": ["us-east-1", "us-west-2"]}
    # the response shape of the EC2 API reference (GetSpotPlacementScores); scores made up for the test
    stub.add_response("get_spot_placement_scores", {
        "SpotPlacementScores": [{"Region": "us-east-1", "AvailabilityZoneId": "use1-az1", "Score": 3}],
        "NextToken": "t1"}, asked)
    stub.add_response("get_spot_placement_scores", {
        "SpotPlacementScores": [{"Region": "us-west-2", "AvailabilityZoneId": "usw2-az2", "Score": 9},
                                {"Region": "us-west-2", "AvailabilityZoneId": "usw2-az1", "Score": 11}]},
        {**asked, "NextToken": "t1"})
    with stub:
        pages = fetch_spot_placement_scores(["p5.48xlarge"], 2, regions=["us-east-1", "us-west-2"], single_az=True,
                                            options=FetchOptions(clients={"ec2": ec2}))
        stub.assert_no_pending_responses()
    assert len(pages) == 2 and "ResponseMetadata" not in pages[0]
    assert parse_spot_placement_scores(pages) == [PlacementScore("us-west-2", "usw2-az2", 9),
                                                  PlacementScore("us-east-1", "use1-az1", 3)]  # 11: out of range
    assert providers.IMPORTERS["aws-spot-placement"].load() is parse_spot_placement_scores


def test_placement_scores_errors():
    from gpuopt.kernel.errors import ProviderError
    from providers.base import TruncatedPriceList
    from providers.spot_advisor import fetch_spot_placement_scores

    ec2, stub = _stubbed_ec2()
    stub.add_client_error("get_spot_placement_scores", "UnauthorizedOperation", http_status_code=403)
    with stub, pytest.raises(ProviderError, match="UnauthorizedOperation"):
        fetch_spot_placement_scores(["g5.xlarge"], 1, options=FetchOptions(clients={"ec2": ec2}))
    ec2, stub = _stubbed_ec2()
    stub.add_response("get_spot_placement_scores", {"SpotPlacementScores": [], "NextToken": "again"})
    with stub, pytest.raises(TruncatedPriceList):
        fetch_spot_placement_scores(["g5.xlarge"], 1, options=FetchOptions(clients={"ec2": ec2}, max_pages=1))


# --------------------------------------------------------------------------------- Azure eviction rates (ARG)
# The answer's shape is the Resource Graph REST API's ({"data": [...], "$skipToken": ...}) with the columns of the
# Azure docs' eviction-rate sample query (skuName, location, spotEvictionRate; spot-vms.md, "Azure Resource Graph").
# The rates below are illustrative values of that shape, not measurements: no Azure data is shipped.
ARG_PATH = "/providers/Microsoft.ResourceGraph/resources"
ARG_PAGE1 = {"totalRecords": 3, "count": 2, "$skipToken": "page-2",
             "data": [{"skuName": "standard_nd96asr_v4", "location": "eastus", "spotEvictionRate": "0-5"},
                      {"skuName": "standard_nc24ads_a100_v4", "location": "eastus", "spotEvictionRate": "20+"}]}
ARG_PAGE2 = {"totalRecords": 3, "count": 1,
             "data": [{"skuName": "standard_nc24ads_a100_v4", "location": "westus2", "spotEvictionRate": "10-15"}]}


def _arg_options(server) -> FetchOptions:
    return FetchOptions(endpoints={"azure_management": server.url_for("").rstrip("/")}, timeout_s=5.0,
                        max_attempts=1)


def test_azure_eviction_rows_parse_to_the_advisors_buckets():
    from providers.azure_spot import RATE_BUCKETS, eviction_query, parse_eviction_rows

    rows = parse_eviction_rows(ARG_PAGE1["data"] + ARG_PAGE2["data"], as_of="2026-12-06", source="t",
                               sizes=["Standard_NC24ads_A100_v4"])
    by = {(r.region, r.instance_type): r for r in rows}
    assert by[("eastus", "Standard_NC24ads_A100_v4")].bucket == 4          # spelled as the price data spells it
    assert by[("eastus", "Standard_nd96asr_v4")].bucket == 0               # else Standard_ + the rest as read
    assert by[("westus2", "Standard_NC24ads_A100_v4")].bucket == 2
    assert [BUCKETS[i][1:] for i in RATE_BUCKETS.values()] == [(0, 5), (5, 10), (10, 15), (15, 20), (20, None)]
    q = eviction_query(["eastus", "West US 2"])
    assert "microsoft.compute/skuspotevictionrate/location" in q and "('eastus', 'westus2')" in q
    with pytest.raises(PriceDataError, match="rate labels"):
        parse_eviction_rows([{"skuName": "standard_nd96asr_v4", "location": "eastus", "spotEvictionRate": "low"}],
                            as_of="x", source="t")


def test_azure_eviction_refresh_follows_skip_tokens_and_planning_reads_it(server):
    from werkzeug import Request

    def answer(request: Request):
        body = request.get_json()
        assert body["subscriptions"] == ["sub-1"] and "skuspotevictionrate" in body["query"]
        assert request.headers["Authorization"] == "Bearer tok"
        page = ARG_PAGE2 if body["options"].get("$skipToken") == "page-2" else ARG_PAGE1
        return Response(json.dumps(page), content_type="application/json")

    server.clear()
    server.expect_request(ARG_PATH, method="POST").respond_with_handler(answer)
    out = sr.refresh_azure_eviction("sub-1", ["eastus", "westus2"], "tok", options=_arg_options(server),
                                    sizes=["Standard_NC24ads_A100_v4", "Standard_ND96asr_v4"])
    assert out.ok and out.entries == 3
    table = sr.load_table()
    f, src = sr.monthly_interruption("azure", "eastus", "Standard_ND96asr_v4", table=table)
    assert f == pytest.approx(0.025) and "Azure Spot eviction rate" in src
    assert sr.monthly_interruption("azure", "eastus", "Standard_NC24ads_A100_v4", table=table)[0] == 0.20
    # AWS stays read from its own source
    assert sr.monthly_interruption("aws", "us-east-1", "p4d.24xlarge", table=table)[0] == pytest.approx(0.125)
    # a refused credential writes nothing and keeps the previous rates
    server.clear()
    server.expect_request(ARG_PATH, method="POST").respond_with_response(Response("no", status=401))
    bad = sr.refresh_azure_eviction("sub-1", ["eastus"], "tok", options=_arg_options(server))
    assert not bad.ok and "credentials were refused" in bad.error and bad.kept.startswith("previous refresh")
    assert sr.monthly_interruption("azure", "westus2", "Standard_NC24ads_A100_v4")[0] == pytest.approx(0.125)


def test_azure_without_rates_gets_the_default_and_says_how_to_read_them(shipped):
    f, src = sr.monthly_interruption("azure", "eastus", "Standard_ND96asr_v4", table=shipped)
    assert f == 0.20 and "refresh-spot --provider azure" in src


def test_prices_spot_scores_command(monkeypatch):
    """``gpuopt prices spot-scores``: the scores of GetSpotPlacementScores pages (the fetch is Stubber-tested above;
    scores made up), best first, as a table and as JSON; the request's types, capacity and zones reach the fetch."""
    import json as _json

    from typer.testing import CliRunner

    import providers.spot_advisor as sa
    from gpuopt.cli import app

    seen = {}

    def fake(types, capacity, *, regions=None, single_az=False, options=None):
        seen.update(types=list(types), capacity=capacity, regions=regions, single_az=single_az)
        return [{"SpotPlacementScores": [{"Region": "us-east-1", "AvailabilityZoneId": "use1-az1", "Score": 3},
                                         {"Region": "us-west-2", "AvailabilityZoneId": "usw2-az2", "Score": 9}]}]

    monkeypatch.setattr(sa, "fetch_spot_placement_scores", fake)
    args = ["prices", "spot-scores", "--instance-type", "p5.48xlarge", "--capacity", "4", "--single-az",
            "--region", "us-east-1", "--region", "us-west-2"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0].split() == ["us-west-2", "usw2-az2", "9/10"]
    assert seen == {"types": ["p5.48xlarge"], "capacity": 4, "regions": ["us-east-1", "us-west-2"], "single_az": True}
    d = _json.loads(CliRunner().invoke(app, args + ["--format", "json"]).stdout)
    assert [s["score"] for s in d["scores"]] == [9, 3] and d["capacity"] == 4


def test_placement_scores_api_errors_are_one_line_provider_errors():
    """A breaker's UnauthorizedOperation (and a connection error) came out as botocore tracebacks."""
    from gpuopt.kernel.errors import ProviderError
    from providers.spot_advisor import fetch_spot_placement_scores

    ec2, stub = _stubbed_ec2()
    stub.add_client_error("get_spot_placement_scores", service_error_code="UnauthorizedOperation",
                          service_message="You are not authorized to perform this operation.")
    with stub, pytest.raises(ProviderError, match="GetSpotPlacementScores failed: .*UnauthorizedOperation"):
        fetch_spot_placement_scores(["p5.48xlarge"], 2, options=FetchOptions(clients={"ec2": ec2}))
