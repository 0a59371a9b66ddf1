"""The whole refresh within one deadline (issue 13, point 4; ``prices refresh --deadline``): no API call starts after
it, every call's timeouts and retry waits are capped at the time left, and the regions not done by then fail with
"deadline reached after N s" while what was fetched in time is written (exit code 3), never a hang. Local servers on
127.0.0.1 (pytest-httpserver, the threaded ``server`` fixture of conftest) play slow and throttling APIs; the bounds
on elapsed time are generous (a loaded shared machine must not fail them) and far below what the refresh would
take without the deadline."""

from __future__ import annotations

import inspect
import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app
from providers.base import (DEFAULT_DEADLINE_S, DeadlineReached, FetchOptions, cap_timeout, http_session,
                            remaining_s)

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()
DEADLINE_S = 3.0
#: Slack for a loaded machine: the refresh must end within the deadline plus this.
SLACK_S = 10.0


@pytest.fixture()
def api(server, monkeypatch):
    """The threaded local server, cleared; a slow handler waits on ``release`` (set at the end of the test, so no
    server thread outlives it)."""
    server.clear()
    release = threading.Event()
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    yield server, release
    release.set()
    server.clear()


def _azure_api(server, release, monkeypatch, *, slow: bool = False):
    """eastus answers its three fixture pages at once; every other region is throttled (429, Retry-After: 3600),
    or with ``slow`` never answers before ``release``. Returns the list of regions asked for, in order."""
    from werkzeug.wrappers import Response

    base = server.url_for("/api/retail/prices")
    pages = {}
    for i, skip in ((1, None), (2, "1000"), (3, "2000")):
        p = json.loads((FIX / "azure" / f"retail_eastus_page{i}.json").read_text())
        if p.get("NextPageLink"):
            p["NextPageLink"] = p["NextPageLink"].replace("https://prices.azure.com:443/api/retail/prices", base)
        pages[skip] = p
    asked: list[str] = []
    lock = threading.Lock()

    def handler(request):
        flt = request.args.get("$filter", "")
        region = flt.split("armRegionName eq '")[1].split("'")[0] if "armRegionName eq '" in flt else "?"
        with lock:
            asked.append(region)
        if region == "eastus":
            return Response(json.dumps(pages[request.args.get("$skip")]), content_type="application/json")
        if slow:
            release.wait(60)
            return Response("{}", status=503)
        return Response('{"error": "slow down"}', status=429, headers={"Retry-After": "3600"},
                        content_type="application/json")

    server.expect_request("/api/retail/prices").respond_with_handler(handler)
    monkeypatch.setenv("GPUOPT_AZURE_PRICES_URL", base)
    return asked


OTHER = ["westus2", "northeurope", "westeurope", "southcentralus", "japaneast"]


def _refresh(*extra: str):
    args = ["prices", "refresh", "--provider", "azure", "--region", "eastus"]
    for r in OTHER:
        args += ["--region", r]
    t0 = time.monotonic()
    r = runner.invoke(app, [*args, "--workers", "2", "--deadline", f"{DEADLINE_S:g}", "--format", "json", *extra])
    return r, time.monotonic() - t0


def _azure_rows(region: str):
    d = json.loads(runner.invoke(app, ["prices", "list", "--provider", "azure", "--region", region, "--limit", "0",
                                       "--format", "json"]).stdout)
    return d["rows"]


def test_throttled_regions_end_at_the_deadline_and_what_was_fetched_is_kept(api, monkeypatch):
    server, release = api
    asked = _azure_api(server, release, monkeypatch)
    before_west = _azure_rows("westus2")
    # without the deadline: 5 throttled regions, 2 at a time, each call up to --timeout 2 x --attempts 5 = 10 s
    r, elapsed = _refresh("--timeout", "2", "--attempts", "5")
    assert elapsed < DEADLINE_S + SLACK_S
    assert r.exit_code == 3, r.output
    (az,) = json.loads(r.stdout)["providers"]
    assert az["status"] == "partial" and az["regions_done"] == ["eastus"] and az["rows_by_region"]["eastus"] > 0
    assert sorted(az["regions_failed"]) == sorted(OTHER)
    for region, msg in az["regions_failed"].items():
        # given up when the next wait (Retry-After capped at --timeout 2 s) would pass the deadline, or not started
        assert msg.startswith(("deadline reached after ", "deadline too near after ")), msg
        assert "(--deadline 3 s" in msg and ("not started" in msg or "HTTP 429" in msg), msg
        assert asked.count(region) <= 2  # at most one retry: never a wait past the deadline
    # eastus now comes from the API; the failed regions keep their previous prices
    assert {row["source"] for row in _azure_rows("eastus")} == {"azure-retail-prices-api"}
    assert _azure_rows("westus2") == before_west


def test_a_server_that_does_not_answer_is_cut_at_the_deadline_not_at_timeout(api, monkeypatch):
    server, release = api
    asked = _azure_api(server, release, monkeypatch, slow=True)
    # --timeout 60: without the deadline one silent region alone would hold the refresh a minute or more
    r, elapsed = _refresh("--timeout", "60", "--attempts", "2")
    release.set()
    assert elapsed < DEADLINE_S + SLACK_S
    assert r.exit_code == 3, r.output
    (az,) = json.loads(r.stdout)["providers"]
    assert az["regions_done"] == ["eastus"] and sorted(az["regions_failed"]) == sorted(OTHER)
    assert all(m.startswith("deadline reached after ") for m in az["regions_failed"].values())
    # two workers: eastus, then two silent regions held them to the deadline; the three queued were not started
    assert len(set(asked) - {"eastus"}) == 2
    assert sum("not started" in m for m in az["regions_failed"].values()) == 3
    assert "not (fully) refreshed" in r.stderr


def test_gcp_listing_of_endless_slow_pages_ends_at_the_deadline(api, monkeypatch):
    from werkzeug.wrappers import Response

    import providers.gcp as gcp

    server, release = api
    count = []

    def page(request):  # one SKU-less page a second, each with a next page: a listing that never ends on its own
        count.append(1)
        release.wait(1.0)
        return Response(json.dumps({"skus": [], "nextPageToken": f"t{len(count)}"}), content_type="application/json")

    server.expect_request(f"/v1/services/{gcp.SERVICE_ID}/skus").respond_with_handler(page)
    monkeypatch.setenv("GPUOPT_GCP_BILLING_URL", server.url_for("/v1"))
    monkeypatch.setenv("GPUOPT_GCP_API_KEY", "test-key-not-a-secret")
    gcp.clear_listing_cache()
    t0 = time.monotonic()
    r = runner.invoke(app, ["prices", "refresh", "--provider", "gcp", "--region", "us-central1", "--region",
                            "europe-west4", "--deadline", "3", "--timeout", "5", "--format", "json"])
    elapsed = time.monotonic() - t0
    assert elapsed < DEADLINE_S + SLACK_S
    assert r.exit_code == 3, r.output
    (g,) = json.loads(r.stdout)["providers"]
    assert g["status"] == "failed" and g["regions_done"] == []
    assert sorted(g["regions_failed"]) == ["europe-west4", "us-central1"]
    assert all(m.startswith("deadline reached after ") for m in g["regions_failed"].values())
    assert g["error"].startswith("deadline reached after ")
    assert 1 <= len(count) <= 6  # about one page a second until the deadline, then no call started
    assert "test-key-not-a-secret" not in r.output


def test_a_call_after_the_deadline_is_not_started(api):
    from werkzeug.wrappers import Response

    server, _ = api
    hits = []
    server.expect_request("/x").respond_with_handler(lambda r: hits.append(1) or Response("ok"))
    options = FetchOptions(timeout_s=5, deadline_s=1, started_at=time.monotonic() - 2)
    s = http_session(options)
    with pytest.raises(DeadlineReached, match="not started .*--deadline 1 s, has passed"):
        s.get(server.url_for("/x"), timeout=options.timeout_s)
    s.close()
    assert hits == []


def test_timeouts_are_capped_at_the_time_left():
    assert cap_timeout(FetchOptions(timeout_s=30), 30.0) == 30.0  # no deadline: unchanged
    opts = FetchOptions(timeout_s=30, deadline_s=100, started_at=time.monotonic() - 98)
    assert 1.0 < cap_timeout(opts, 30.0) <= 2.0 and 1.0 < remaining_s(opts) <= 2.0
    assert cap_timeout(opts, 0.5) == 0.5
    assert cap_timeout(opts, (30.0, 0.5))[1] == 0.5 and cap_timeout(opts, (30.0, 0.5))[0] <= 2.0
    passed = FetchOptions(timeout_s=30, deadline_s=1, started_at=time.monotonic() - 5)
    assert cap_timeout(passed, 30.0) == 0.01  # positive: a socket timeout must be


def _aws_pricing(server, options, monkeypatch):
    import boto3

    import providers.aws as aws

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    client = boto3.Session(region_name="us-east-1").client(
        "pricing", region_name="us-east-1", endpoint_url=server.url_for("/"),
        config=aws.client_config(options, aws.PRICING_RETRY_MODE))
    return aws.bound_retries(client, options)


def test_aws_throttling_stops_at_the_deadline_before_the_calls_budget(api, monkeypatch):
    from werkzeug.wrappers import Response

    server, _ = api
    hits = []
    server.expect_request("/", method="POST").respond_with_handler(
        lambda r: hits.append(1) or Response('{"__type": "ThrottlingException", "message": "Rate exceeded"}',
                                             status=400, content_type="application/x-amz-json-1.1"))
    # the call's budget is 2 x 10 = 20 s; the deadline leaves 2 s
    options = FetchOptions(timeout_s=2, max_attempts=10, deadline_s=2, started_at=time.monotonic())
    client = _aws_pricing(server, options, monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(DeadlineReached, match="ThrottlingException after .* left before the refresh's deadline"):
        client.get_products(ServiceCode="AmazonEC2")
    assert time.monotonic() - t0 < 2 + SLACK_S
    assert 1 <= len(hits) < 10
    hits.clear()
    time.sleep(max(0.0, remaining_s(options)) + 0.05)
    with pytest.raises(DeadlineReached, match="aws GetProducts: not started"):
        client.get_products(ServiceCode="AmazonEC2")
    assert hits == []


def test_aws_read_timeout_is_capped_at_the_time_left(api, monkeypatch):
    from werkzeug.wrappers import Response

    server, release = api
    server.expect_request("/", method="POST").respond_with_handler(
        lambda r: release.wait(30) and Response("{}", content_type="application/x-amz-json-1.1"))
    options = FetchOptions(timeout_s=30, max_attempts=3, deadline_s=2, started_at=time.monotonic())
    client = _aws_pricing(server, options, monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(Exception) as e:  # a read timeout, then no retry past the deadline
        client.get_products(ServiceCode="AmazonEC2")
    release.set()
    assert time.monotonic() - t0 < 2 + SLACK_S  # --timeout 30 x 3 attempts would be 90 s
    assert isinstance(e.value, DeadlineReached) or "timeout" in type(e.value).__name__.lower(), repr(e.value)


@pytest.mark.parametrize("value", ["0", "-5", "inf", "nan"])
def test_a_bad_deadline_is_refused_naming_it(value):
    r = runner.invoke(app, ["prices", "refresh", "--provider", "azure", "--deadline", value])
    assert r.exit_code == 1
    assert "deadline" in r.stderr and "Traceback" not in r.output


def test_the_default_deadline_is_stated_once():
    import gpuopt.api as api_mod
    import gpuopt.cli as cli_mod

    assert DEFAULT_DEADLINE_S == 1800.0
    assert inspect.signature(api_mod.prices_refresh).parameters["deadline_s"].default == DEFAULT_DEADLINE_S
    assert inspect.signature(cli_mod.prices_refresh).parameters["deadline"].default == DEFAULT_DEADLINE_S
    help_text = runner.invoke(app, ["prices", "refresh", "--help"], env={"COLUMNS": "200"}).output
    assert "--deadline" in help_text and "1800" in help_text
