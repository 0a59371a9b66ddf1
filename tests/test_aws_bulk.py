"""Issue 29, point 1: AWS prices and Savings Plans rates without credentials, from the public Price List files
(providers/aws_bulk.py), refreshed through ``gpuopt prices refresh`` against a 127.0.0.1 server (pytest-httpserver).

The files are built here in the public format (docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/ "Reading the
service price list file" for EC2 CSV and for Savings Plans JSON; the EC2 CSV header is the real 2025-09-12 file's,
tests/fixtures/aws/AmazonEC2_bulk_sample.derived.csv line 6). Prices: p5.48xlarge us-east-1's on-demand 55.04 and
its Reserved Instance quotes are the shipped snapshot's (ec2instances.info data of 2025-11-30); no public GPU Savings
Plans rate exists in our stores, so the Savings Plans rates here are STAND-INS (the same p5 RI rates placed in the
Savings Plans format): they test the reading, not a price.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuopt import api
from gpuopt.cli import app

FIX = Path(__file__).parent / "fixtures" / "aws"
HEADER = next(csv.reader(io.StringIO((FIX / "AmazonEC2_bulk_sample.derived.csv").read_text().splitlines()[5])))
PUBLISHED = "2026-12-01T18:00:00Z"
SP_PUBLISHED = "2026-12-02T08:00:00Z"
EC2_V = "/offers/v1.0/aws/AmazonEC2/20261201180000"
SP_V = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/20261202080000"
LOCATIONS = {"us-east-1": "US East (N. Virginia)", "eu-west-1": "EU (Ireland)", "ap-northeast-1": "Asia Pacific (Tokyo)",
             "ap-south-1": "Asia Pacific (Mumbai)"}


def _row(sku, term, code, kind, unit, price, itype, region, *, lease="", purchase="", klass="", os_="Linux",
         gpu="8", desc=""):
    r = dict.fromkeys(HEADER, "")
    r.update({"SKU": sku, "OfferTermCode": code, "RateCode": f"{sku}.{code}.{term}", "TermType": kind,
              "PriceDescription": desc, "EffectiveDate": "2026-12-01", "Unit": unit, "PricePerUnit": price,
              "Currency": "USD", "LeaseContractLength": lease, "PurchaseOption": purchase, "OfferingClass": klass,
              "Product Family": "Compute Instance", "serviceCode": "AmazonEC2", "Location": LOCATIONS[region],
              "Location Type": "AWS Region", "Instance Type": itype, "vCPU": "192" if gpu else "2",
              "Memory": "2048 GiB" if gpu else "8 GiB", "Tenancy": "Shared", "Operating System": os_,
              "License Model": "No License required", "usageType": f"BoxUsage:{itype}",
              "operation": "RunInstances" if os_ == "Linux" else "RunInstances:0002", "CapacityStatus": "Used",
              "GPU": gpu, "MarketOption": "OnDemand", "Pre Installed S/W": "NA", "Region Code": region})
    return [r[h] for h in HEADER]


def ec2_csv(region: str) -> str:
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for k, v in (("FormatVersion", "v1.0"), ("Disclaimer", "This pricing list is for informational purposes only."),
                 ("Publication Date", PUBLISHED), ("Version", "20261201180000"), ("OfferCode", "AmazonEC2")):
        w.writerow([k, v])
    w.writerow(HEADER)
    p5, m5, win = "P5SKUAAAAAAAAAAA", "M5SKUAAAAAAAAAAA", "P5WINAAAAAAAAAAA"
    w.writerow(_row(p5, "6YS6EN2CT7", "JRTCKXETXF", "OnDemand", "Hrs", "55.0400000000", "p5.48xlarge", region))
    w.writerow(_row(p5, "6YS6EN2CT7", "BPH4J8HBKS", "Reserved", "Hrs", "23.7772800000", "p5.48xlarge", region,
                    lease="3yr", purchase="No Upfront", klass="standard"))
    w.writerow(_row(p5, "2TG2D8R56U", "NQ3QZPMQV9", "Reserved", "Quantity", "543865.99", "p5.48xlarge", region,
                    lease="3yr", purchase="All Upfront", klass="standard"))
    w.writerow(_row(p5, "6YS6EN2CT7", "NQ3QZPMQV9", "Reserved", "Hrs", "0.0000000000", "p5.48xlarge", region,
                    lease="3yr", purchase="All Upfront", klass="standard"))
    w.writerow(_row(p5, "6YS6EN2CT7", "7NE97W5U4E", "Reserved", "Hrs", "43.3440000000", "p5.48xlarge", region,
                    lease="1yr", purchase="No Upfront", klass="convertible"))
    w.writerow(_row(m5, "6YS6EN2CT7", "JRTCKXETXF", "OnDemand", "Hrs", "0.0960000000", "m5.large", region, gpu=""))
    w.writerow(_row(win, "6YS6EN2CT7", "JRTCKXETXF", "OnDemand", "Hrs", "60.0000000000", "p5.48xlarge", region,
                    os_="Windows"))
    return out.getvalue()


def sp_json(region: str) -> str:
    products, terms = [], []
    plans = [("SPCOMPUTE1YNU", "ComputeSavingsPlans", "No Upfront", 1, "43.344"),
             ("SPCOMPUTE3YAU", "ComputeSavingsPlans", "All Upfront", 3, "20.695"),
             ("SPEC2P51YNU", "EC2InstanceSavingsPlans", "No Upfront", 1, "43.0")]
    for sku, family, payment, years, rate in plans:
        products.append({"sku": sku, "productFamily": family, "serviceCode": "ComputeSavingsPlans",
                         "attributes": {"purchaseOption": payment, "purchaseTerm": f"{years}yr",
                                        "granularity": "hourly", "locationType": "AWS Region"}})
        rates = [{"discountedSku": "P5SKUAAAAAAAAAAA", "discountedUsageType": "BoxUsage:p5.48xlarge",
                  "discountedOperation": "RunInstances", "discountedServiceCode": "AmazonEC2",
                  "rateCode": f"{sku}.P5", "unit": "Hrs", "discountedRate": {"price": rate, "currency": "USD"}},
                 {"discountedSku": "M5SKUAAAAAAAAAAA", "discountedUsageType": "BoxUsage:m5.large",
                  "discountedOperation": "RunInstances", "discountedServiceCode": "AmazonEC2",
                  "rateCode": f"{sku}.M5", "unit": "Hrs", "discountedRate": {"price": "0.06", "currency": "USD"}},
                 {"discountedSku": "P5WINAAAAAAAAAAA", "discountedUsageType": "BoxUsage:p5.48xlarge",
                  "discountedOperation": "RunInstances:0002", "discountedServiceCode": "AmazonEC2",
                  "rateCode": f"{sku}.W", "unit": "Hrs", "discountedRate": {"price": "50.0", "currency": "USD"}}]
        terms.append({"sku": sku, "description": f"{years} year {payment} {family}", "effectiveDate": "2026-12-01",
                      "leaseContractLength": {"duration": years, "unit": "year"}, "rates": rates})
    return json.dumps({"version": "20261202080000", "publicationDate": SP_PUBLISHED, "regionCode": region,
                       "products": products, "terms": {"savingsPlan": terms}}, indent=1)


@pytest.fixture
def bulk_server(httpserver, monkeypatch):
    """The public price list files: us-east-1 whole, eu-west-1 behind a redirect, ap-northeast-1 cut short,
    ap-south-1 missing (404). No AWS credentials in the environment."""
    from werkzeug.wrappers import Response

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    regions = list(LOCATIONS)
    httpserver.expect_request("/offers/v1.0/aws/AmazonEC2/current/region_index.json").respond_with_json(
        {"formatVersion": "v1.0", "publicationDate": PUBLISHED,
         "regions": {r: {"regionCode": r, "currentVersionUrl": f"{EC2_V}/{r}/index.json"} for r in regions}})
    httpserver.expect_request("/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json")\
        .respond_with_json({"regions": [{"regionCode": r, "versionUrl": f"{SP_V}/{r}/index.json"} for r in regions]})
    for r in ("us-east-1",):
        httpserver.expect_request(f"{EC2_V}/{r}/index.csv").respond_with_data(ec2_csv(r), content_type="text/csv")
        httpserver.expect_request(f"{SP_V}/{r}/index.json").respond_with_data(sp_json(r),
                                                                               content_type="application/json")
    # eu-west-1: both files moved (a 301 to where they are, as S3/CloudFront answer)
    for path, body, ctype in ((f"{EC2_V}/eu-west-1/index.csv", ec2_csv("eu-west-1"), "text/csv"),
                              (f"{SP_V}/eu-west-1/index.json", sp_json("eu-west-1"), "application/json")):
        moved = "/moved" + path
        httpserver.expect_request(path).respond_with_response(Response(status=301, headers={"Location": moved}))
        httpserver.expect_request(moved).respond_with_data(body, content_type=ctype)

    # ap-northeast-1: the EC2 file's body ends before its Content-Length (a dropped connection)
    def cut(request):
        full = ec2_csv("ap-northeast-1").encode()
        resp = Response(full[: len(full) // 2], content_type="text/csv")
        resp.headers["Content-Length"] = str(len(full))
        resp.automatically_set_content_length = False
        return resp

    httpserver.expect_request(f"{EC2_V}/ap-northeast-1/index.csv").respond_with_handler(cut)
    httpserver.expect_request(f"{EC2_V}/ap-south-1/index.csv").respond_with_data("Not Found", status=404)
    return httpserver.url_for("").rstrip("/")


def _aws(summary):
    (aws,) = [p for p in summary.providers if p.provider == "aws"]
    return aws


def test_a_user_without_credentials_refreshes_aws_prices_and_savings_plans(bulk_server):
    events = []
    s = api.prices_refresh(providers=["aws"], regions=list(LOCATIONS), endpoints={"aws_bulk": bulk_server},
                           timeout_s=5, max_attempts=1, deadline_s=120,
                           on_event=lambda kind, prov, **kw: events.append((kind, prov, kw)))
    aws = _aws(s)
    # the progress of the streamed files reaches the progress bar (the CLI's RefreshProgress shows each message)
    said = [kw["message"] for kind, _, kw in events if kind == "message" and kw.get("region") == "us-east-1"]
    assert any(m.startswith("EC2 price list: 4 GPU price rows of 0 MB (published 2026-12-01)") for m in said), said
    assert any(m.startswith("Savings Plans rates: 6 GPU rates") for m in said), said  # Windows ones refused later
    # auto: no credentials, so the public files, and the summary says so first
    assert aws.notes[0].startswith("aws: no AWS credentials found, so prices from the public AWS Price List files")
    assert aws.status == "partial" and sorted(aws.regions_done) == ["eu-west-1", "us-east-1"]
    assert "the body broke off" in aws.regions_failed["ap-northeast-1"] \
        or "the body ended" in aws.regions_failed["ap-northeast-1"]
    assert "HTTP 404" in aws.regions_failed["ap-south-1"]
    assert set(aws.kept_previous) >= {"ap-northeast-1", "ap-south-1"}
    from pricing_cache.store import load_offers

    offers, _ = load_offers()
    p5 = offers[(offers["provider"] == "aws") & (offers["instance_type"] == "p5.48xlarge")
                & (offers["region"] == "us-east-1")]
    od = p5[p5["pricing"] == "on_demand"].iloc[0]
    assert od["usd_per_hour"] == 55.04 and od["as_of"] == "2026-12-01" and od["source"] == "aws-price-list-bulk"
    assert od["gpu_model"] == "H100-80GB" and od["gpu_count"] == 8  # GPU facts from the current offers
    ri = p5[(p5["pricing"] == "reserved_3y") & (p5["payment"] == "all_upfront")].iloc[0]
    assert ri["upfront_usd"] == pytest.approx(543865.99) and ri["offering_class"] == "standard"
    sp = p5[p5["pricing"].astype(str).str.startswith("savings_plan")]
    got = {(r.pricing, r.payment, r.offering_class): r.usd_per_hour for r in sp.itertuples()}
    assert got == {("savings_plan_1y", "no_upfront", "compute"): 43.344,
                   ("savings_plan_3y", "all_upfront", "compute"): 20.695,
                   ("savings_plan_1y", "no_upfront", "ec2_instance"): 43.0}
    assert set(sp["source"]) == {"aws-savings-plans-bulk"} and set(sp["as_of"]) == {"2026-12-02"}
    # no Windows row, no m5 (not a GPU type); the spot and capacity-block rows stay as they were, with their dates
    assert 60.0 not in set(p5["usd_per_hour"]) and not (offers["instance_type"] == "m5.large").any()
    shipped, _ = load_offers(use_cache=False)
    before = shipped[(shipped["provider"] == "aws") & (shipped["region"] == "us-east-1")
                     & shipped["pricing"].isin(["spot", "capacity_block"])]
    after = offers[(offers["provider"] == "aws") & (offers["region"] == "us-east-1")
                   & offers["pricing"].isin(["spot", "capacity_block"])]
    assert len(after) == len(before) > 0 and set(after["source"]) == set(before["source"])
    assert any("kept from before with their own dates" in n for n in aws.notes)
    # the moved (redirected) region's files were read
    eu = offers[(offers["provider"] == "aws") & (offers["region"] == "eu-west-1")
                & (offers["instance_type"] == "p5.48xlarge")]
    assert {"on_demand", "savings_plan_1y"} <= set(eu["pricing"])


def test_a_plan_can_buy_a_savings_plan_after_the_keyless_refresh(bulk_server):
    api.prices_refresh(providers=["aws"], regions=["us-east-1"], endpoints={"aws_bulk": bulk_server}, timeout_s=5,
                       max_attempts=1, deadline_s=120, aws_source="bulk")
    r = api.prices_list(gpu=["H100"], provider=["aws"], pricing=["savings_plan_1y"], region=["us-east-1"])
    assert {row["instance_type"] for row in r.rows} == {"p5.48xlarge"}
    # a year of a 70B service on p5 in us-east-1, savings plans allowed: the plan buys one (the stand-in rate
    # 43.344 is below on-demand 55.04)
    res = api.recommend(model="meta-llama/Llama-2-70b-hf", tokens_per_second=5000, providers=["aws"],
                        regions=["us-east-1"], gpus=["H100-80GB"], pricing=["on_demand", "savings_plan_1y"],
                        horizon_months=12, explain=False)
    lines = res.plan.lines
    assert any(ln.pricing == "savings_plan_1y" and ln.source == "aws-savings-plans-bulk" for ln in lines), \
        [(ln.instance_type, ln.pricing) for ln in lines]


def test_the_cli_source_option(bulk_server, monkeypatch):
    runner = CliRunner()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")  # credentials present: --source bulk still reads
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")  # the public files
    from gpuopt import api as api_mod

    real = api_mod.prices_refresh

    def with_endpoint(**kw):
        return real(**{**kw, "endpoints": {"aws_bulk": bulk_server}})

    monkeypatch.setattr(api_mod, "prices_refresh", with_endpoint)
    r = runner.invoke(app, ["prices", "refresh", "--provider", "aws", "--region", "us-east-1", "--source", "bulk",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    (aws,) = json.loads(r.stdout)["providers"]
    assert aws["status"] == "refreshed" and aws["notes"][0].startswith("aws: prices from the public AWS Price List")
    table = runner.invoke(app, ["prices", "refresh", "--provider", "aws", "--region", "us-east-1", "--source", "bulk"])
    assert table.exit_code == 0 and "aws: prices from the public AWS Price List files" in table.output
    bad = runner.invoke(app, ["prices", "refresh", "--provider", "aws", "--source", "web"])
    assert bad.exit_code == 1 and "source" in bad.output and "auto, api, bulk" in bad.output
    assert "Traceback" not in bad.output



def test_an_unreachable_endpoint_is_one_short_line(monkeypatch):
    # a fresh user's find: no network printed urllib3's pool dump as the error
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    s = api.prices_refresh(providers=["aws"], regions=["us-east-1"], endpoints={"aws_bulk": "http://127.0.0.1:9"},
                           timeout_s=2, max_attempts=1, aws_source="bulk")
    aws = _aws(s)
    assert aws.status == "failed" and "\n" not in aws.error
    assert aws.error.startswith("ProviderError: aws price list region index: cannot reach 127.0.0.1:9: "
                                "ConnectionError (Connection refused)"), aws.error
    assert "HTTPConnectionPool" not in aws.error and len(aws.error) < 200


def test_source_is_for_aws_only():
    from gpuopt.kernel.errors import InputError

    with pytest.raises(InputError) as exc:
        api.prices_refresh(providers=["gcp"], aws_source="bulk")
    assert exc.value.field == "source" and "does not refresh AWS" in exc.value.message


def test_bulk_region_parser_is_registered():
    # the keyless refresh's parse function is listed with the other live adapters' (gpuopt importers shows it)
    import providers
    from providers import aws_bulk

    imp = providers.IMPORTERS["aws-bulk-region"]
    assert (imp.module, imp.function, imp.kind) == ("providers.aws_bulk", "parse_region", "api")
    assert imp.load() is aws_bulk.parse_region
