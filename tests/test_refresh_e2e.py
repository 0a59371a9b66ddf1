"""`gpuopt prices refresh` end to end, as a user runs it, against local test doubles of the clouds' APIs on
127.0.0.1 (recorded-shape payloads from tests/fixtures/): the refreshed prices become the ones every command uses,
and a failing API keeps the previous prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt.cli import app

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()


def _azure_page(i: int) -> dict:
    return json.loads((FIX / "azure" / f"retail_eastus_page{i}.json").read_text())


@pytest.fixture
def azure_api(httpserver, monkeypatch):
    """The Retail Prices API: three pages for eastus, linked by NextPageLink as the real API does."""
    base = httpserver.url_for("/api/retail/prices")
    pages = {None: _azure_page(1), "1000": _azure_page(2), "2000": _azure_page(3)}
    for p in pages.values():
        if p.get("NextPageLink"):
            p["NextPageLink"] = p["NextPageLink"].replace("https://prices.azure.com:443/api/retail/prices", base)
    calls = []

    def handler(request):
        from werkzeug.wrappers import Response

        calls.append(dict(request.args))
        return Response(json.dumps(pages[request.args.get("$skip")]), content_type="application/json")

    httpserver.expect_request("/api/retail/prices").respond_with_handler(handler)
    monkeypatch.setenv("GPUOPT_AZURE_PRICES_URL", base)
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    return calls


def test_refresh_azure_then_every_command_uses_it(azure_api):
    r = runner.invoke(app, ["prices", "refresh", "--provider", "azure", "--region", "eastus", "--format", "json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    (az,) = s["providers"]
    assert az["status"] == "refreshed" and az["regions_done"] == ["eastus"] and az["rows"] > 0
    assert len(azure_api) == 3 and all(c["currencyCode"] == "'USD'" for c in azure_api)
    # the other Azure regions keep the shipped prices; eastus now comes from the API
    d = json.loads(runner.invoke(app, ["prices", "list", "--provider", "azure", "--region", "eastus", "--limit", "0",
                                       "--format", "json"]).stdout)
    assert d["prices"]["providers"]["azure"]["origin"].startswith("cache")
    assert {row["source"] for row in d["rows"]} == {"azure-retail-prices-api"}
    west = json.loads(runner.invoke(app, ["prices", "list", "--provider", "azure", "--region", "westus2", "--format",
                                          "json"]).stdout)
    assert west["rows"] and all(row["source"] != "azure-retail-prices-api" for row in west["rows"])
    st = json.loads(runner.invoke(app, ["prices", "status", "--format", "json"]).stdout)
    (snap,) = st["cache"]["snapshots"]
    assert snap["provider"] == "azure" and snap["ok"] and "eastus" in snap["regions"]["done"]
    rec = runner.invoke(app, ["recommend", "--budget", "50000", "--model", "meta-llama/Llama-2-7b-hf",
                              "--tokens-per-second", "100", "--provider", "azure", "--region", "eastus",
                              "--format", "json"])
    assert rec.exit_code == 0, rec.output
    assert all(ln["source"] == "azure-retail-prices-api" for ln in json.loads(rec.stdout)["lines"])


def test_refresh_that_fails_keeps_previous_prices_and_says_so(httpserver, monkeypatch):
    from werkzeug.wrappers import Response

    httpserver.expect_request("/api/retail/prices").respond_with_handler(
        lambda request: Response('{"error": "boom"}', status=500, content_type="application/json"))
    monkeypatch.setenv("GPUOPT_AZURE_PRICES_URL", httpserver.url_for("/api/retail/prices"))
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    before = json.loads(runner.invoke(app, ["prices", "list", "--provider", "azure", "--limit", "0", "--format", "json"]).stdout)
    r = runner.invoke(app, ["prices", "refresh", "--provider", "azure", "--region", "eastus", "--timeout", "2",
                            "--attempts", "2"])
    assert r.exit_code == 3  # a price source failed (gpuopt.schemas.EXIT_CODES)
    assert "failed" in r.stdout and "previous prices stay in use" in r.stdout
    after = json.loads(runner.invoke(app, ["prices", "list", "--provider", "azure", "--limit", "0", "--format", "json"]).stdout)
    assert after["rows"] == before["rows"]


def test_refresh_gcp_needs_a_key(monkeypatch):
    monkeypatch.delenv("GPUOPT_GCP_API_KEY", raising=False)
    r = runner.invoke(app, ["prices", "refresh", "--provider", "gcp", "--format", "json"])
    assert r.exit_code == 3  # the provider could not be refreshed (no credentials)
    err = json.loads(r.stderr)
    assert err["kind"] == "error" and err["exit_code"] == 3 and err["error"]["type"] == "provider"
    (g,) = json.loads(r.stdout)["providers"]
    assert g["status"] == "failed" and "MissingCredentials" in g["error"]


def test_refresh_gcp_from_the_billing_catalog(httpserver, monkeypatch):
    from werkzeug.wrappers import Response

    listing = json.loads((FIX / "gcp" / "skus_listing.json").read_text())
    httpserver.expect_request("/v1/services/6F81-5844-456A/skus").respond_with_handler(
        lambda request: Response(json.dumps({"skus": listing["skus"], "nextPageToken": ""}), content_type="application/json"))
    monkeypatch.setenv("GPUOPT_GCP_BILLING_URL", httpserver.url_for("/v1"))
    monkeypatch.setenv("GPUOPT_GCP_API_KEY", "test-key")
    r = runner.invoke(app, ["prices", "refresh", "--provider", "gcp", "--region", "us-central1", "--format", "json"])
    assert r.exit_code == 0, r.output
    (g,) = json.loads(r.stdout)["providers"]
    assert g["status"] == "refreshed" and g["regions_done"] == ["us-central1"]
    d = json.loads(runner.invoke(app, ["prices", "list", "--provider", "gcp", "--region", "us-central1", "--gpu", "A100-40GB",
                                       "--pricing", "on_demand", "--format", "json"]).stdout)
    a2 = {row["instance_type"]: row["usd_per_hour"] for row in d["rows"]}
    # a2-highgpu-1g = 12 vCPU x core + 85 GiB x RAM + 1 x A100 (providers/gcp.py; tests/test_providers_gcp.py)
    assert a2["a2-highgpu-1g"] == pytest.approx(3.673385, abs=1e-5)


def test_refresh_aws_through_the_real_adapter_with_stubber_and_moto(monkeypatch):
    """The AWS adapter inside the refresh: Pricing API stubbed with botocore's Stubber (moto does not mock it),
    EC2 from moto (real GpuInfo), as in tests/test_providers_aws.py."""
    import test_providers_aws as t
    from moto import mock_aws
    from moto.ec2.models.instance_types import INSTANCE_TYPES

    from pricing_cache.refresh import refresh
    from pricing_cache.store import load_offers
    from providers import aws

    for var, val in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                     ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(var, val)
    with mock_aws():
        opts = t._opts(max_pages=50, regions=["us-east-1"])
        ec2 = aws.make_client("ec2", "us-east-1", opts, session=t._fake_session())
        pricing, ps = t._pricing_stubbed(opts)
        listed = {json.loads(e)["product"]["attributes"]["instanceType"] for e in t._gpu_entries()}
        ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": t._gpu_entries()},
                        t._family_params("us-east-1"))
        for itype in sorted(k for k, v in INSTANCE_TYPES.items() if (v.get("GpuInfo") or {}).get("Gpus")):
            if itype not in listed:
                params = t._family_params("us-east-1")
                params["Filters"][-1] = {"Type": "TERM_MATCH", "Field": "instanceType", "Value": itype}
                ps.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": []}, params)
        opts.clients = {"pricing": pricing, "ec2:us-east-1": ec2, "ec2": ec2}
        with ps:
            summary = refresh(["aws"], opts, adapters={"aws": aws})
    (p,) = summary.providers
    assert p.status == "refreshed" and p.regions_done == ["us-east-1"]
    df, info = load_offers()
    east = df[(df["provider"] == "aws") & (df["region"] == "us-east-1")]
    assert set(east["source"]) == {"aws-pricing-api"}
    od = east[east["pricing"] == "on_demand"].set_index("instance_type")["usd_per_hour"]
    assert od["p5.48xlarge"] == 55.04 and od["g4dn.xlarge"] == 0.526
    # every other AWS region keeps the shipped prices
    assert set(df[df["provider"] == "aws"]["region"]) >= {"us-west-2", "eu-west-1"}
    assert "us-west-2" in p.kept_previous


def test_a_trickling_answer_is_cut_at_the_timeout(httpserver):
    """requests' timeout bounds each socket read; the session also bounds the whole answer (providers.base)."""
    import time

    from werkzeug.wrappers import Response

    from providers.base import FetchOptions, http_session

    def trickle(request):
        def gen():
            for _ in range(40):
                time.sleep(0.1)
                yield b" "
        return Response(gen(), content_type="application/json")

    httpserver.expect_request("/slow").respond_with_handler(trickle)
    s = http_session(FetchOptions(timeout_s=1.0, max_attempts=1))
    t0 = time.perf_counter()
    import requests
    with pytest.raises(requests.exceptions.ReadTimeout, match="not complete after 1 s"):
        s.get(httpserver.url_for("/slow"), timeout=1.0)
    assert time.perf_counter() - t0 < 2.5
