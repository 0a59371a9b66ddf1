"""Reserved rules: AWS ratios measured from the real ec2instances quotes, quotes used only where on-demand matches,
GCP/Azure rule rows marked ``rule:``, no Lambda reservations."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from gpuopt.kernel.records import TERM_HOURS, is_estimated
from providers._common import OFFER_KEY, hourly_row, offers_frame
from providers.ec2instances import parse_instances_json
from providers.reserved_rules import (AZURE_RATIOS, GCP_RATIOS, aws_ratios_from_quotes, default_ratios,
                                      derive_reserved)

INPUTS = Path(__file__).resolve().parents[1] / "pricing_cache" / "data" / "inputs"
EC2 = INPUTS / "ec2instances_2017-11-12_gpu_subset.json"


@pytest.fixture(scope="module")
def quotes():
    return parse_instances_json(EC2, "2017-11-12", "ec2instances.info:2017-11-12").offers


def _od(provider, region, itype, price, as_of="2026-11-30"):
    return hourly_row("on_demand", price, provider=provider, region=region, zone="", instance_type=itype,
                      gpu_model="V100-16GB", gpu_count=1.0, gpu_memory_gib=16.0, vcpus=8.0, memory_gib=61.0,
                      interconnect="pcie", currency="USD", source="test", as_of=as_of)


def test_aws_ratios_are_the_medians_of_the_real_quotes(quotes):
    raw = json.loads(EC2.read_text())
    expected: dict[tuple[str, str], list[float]] = {}
    names = {"no": "no_upfront", "partial": "partial_upfront", "all": "all_upfront"}
    for inst in raw:
        for region, p in inst["pricing"].items():
            linux = p.get("linux")
            if not linux:
                continue
            od = float(linux["ondemand"])
            for key, val in linux.get("reserved", {}).items():
                term, rest = key.split(".")
                if "Standard" not in term:
                    continue
                pricing = "reserved_1y" if term.startswith("yrTerm1") else "reserved_3y"
                pay = names[rest.replace("Upfront", "")]
                expected.setdefault((pricing, pay), []).append(float(val) / od)
    ratios = aws_ratios_from_quotes(quotes)
    assert set(ratios) == set(expected) and len(ratios) == 6
    for k, vals in expected.items():
        assert ratios[k].ratio == pytest.approx(statistics.median(vals), abs=5e-5), k
    # p3 alone reproduces PROVENANCE's figures (1yr 0.682/0.650/0.637, 3yr 0.435/0.403/0.379)
    p3 = quotes[quotes["instance_type"] == "p3.2xlarge"]
    p3_ratios = aws_ratios_from_quotes(p3)
    pays = ("no_upfront", "partial_upfront", "all_upfront")
    assert [p3_ratios[("reserved_1y", p)].ratio for p in pays] == pytest.approx([0.682, 0.650, 0.637], abs=2e-3)
    assert [p3_ratios[("reserved_3y", p)].ratio for p in pays] == pytest.approx([0.435, 0.403, 0.379], abs=2e-3)


def test_quotes_used_only_when_on_demand_matches(quotes):
    ratios = default_ratios(quotes)
    od = offers_frame([_od("aws", "us-east-1", "p3.2xlarge", 3.06),  # 2017 on-demand was 3.06: quotes apply
                       _od("aws", "ap-northeast-1", "p3.2xlarge", 4.194),  # 2017: 5.243 -> rule
                       _od("aws", "us-east-1", "g5.xlarge", 1.006)])  # no quote -> rule
    res = derive_reserved(od, ratios, quotes=quotes)
    assert (res.groupby(list(OFFER_KEY)).size() == 1).all()
    q = res[(res.region == "us-east-1") & (res.instance_type == "p3.2xlarge")]
    assert len(q) == 6 and (q["source"] == "ec2instances.info:2017-11-12").sum() == 4
    assert q["source"].str.startswith("ec2instances.info:2017-11-12").all() and (q["as_of"] == "2017-11-12").all()
    assert q.set_index(["pricing", "payment"]).loc[("reserved_1y", "no_upfront"), "usd_per_hour"] == 2.088
    r = res[res.region == "ap-northeast-1"]
    assert len(r) == 6 and r["source"].str.startswith("rule:aws-").all() and (r["as_of"] == "2026-11-30").all()
    row = r.set_index(["pricing", "payment"]).loc[("reserved_1y", "all_upfront")]
    assert row["usd_per_hour"] == pytest.approx(4.194 * ratios["aws"][("reserved_1y", "all_upfront")].ratio, abs=1e-6)
    assert row["source"].startswith("rule:aws-1y-all_upfront:")
    g5 = res[res.instance_type == "g5.xlarge"]
    assert len(g5) == 6 and g5["source"].map(is_estimated).all()


def test_gcp_and_azure_rule_rows_marked_and_lambda_none(quotes):
    ratios = default_ratios(quotes)
    od = offers_frame([_od("gcp", "us-central1", "a2-highgpu-1g", 3.67339),
                       _od("azure", "eastus", "Standard_NC24ads_A100_v4", 3.673),
                       _od("lambda", "us-east-1", "gpu_1x_a100", 1.99)])
    res = derive_reserved(od, ratios)
    assert res[res.provider == "lambda"].empty
    gcp = res[res.provider == "gcp"].set_index("pricing")
    assert set(gcp["payment"]) == {"no_upfront"} and len(gcp) == 2
    assert gcp.loc["reserved_1y", "usd_per_hour"] == pytest.approx(3.67339 * 0.63, abs=1e-6)
    assert gcp.loc["reserved_3y", "usd_per_hour"] == pytest.approx(3.67339 * 0.35, abs=1e-6)
    assert gcp.loc["reserved_1y", "source"].startswith("rule:gcp-1y-no_upfront:")
    assert "Cyclenerd/google-cloud-pricing-cost-calculator" in gcp.loc["reserved_1y", "source"]
    az = res[res.provider == "azure"]
    assert len(az) == 4 and set(az["payment"]) == {"no_upfront", "all_upfront"}
    assert az["source"].str.startswith("rule:azure-").all() and az["source"].str.contains("ASSUMED").all()
    assert az["source"].str.contains("azure.microsoft.com").all()
    one_y = az[az.pricing == "reserved_1y"].set_index("payment")
    # monthly (no_upfront) and upfront cost the same in effect; the upfront row is paid in full upfront
    assert one_y.loc["no_upfront", "usd_per_hour"] == one_y.loc["all_upfront", "usd_per_hour"] == pytest.approx(
        3.673 * 0.65)
    assert one_y.loc["all_upfront", "upfront_usd"] == pytest.approx(3.673 * 0.65 * 8760, abs=0.01)
    assert (res["as_of"] == "2026-11-30").all() and res["source"].map(is_estimated).all()
    eff = res["recurring_usd_per_hour"] + res["upfront_usd"] / res["term_hours"]
    assert ((eff - res["usd_per_hour"]).abs() < 1e-5).all()
    assert set(res["term_hours"]) == set(TERM_HOURS.values())


def test_rule_constants_are_discounts():
    for table in (GCP_RATIOS, AZURE_RATIOS):
        for (pricing, payment), r in table.items():
            assert 0 < r.ratio < 1
    assert GCP_RATIOS[("reserved_3y", "no_upfront")].ratio < GCP_RATIOS[("reserved_1y", "no_upfront")].ratio
    assert AZURE_RATIOS[("reserved_3y", "all_upfront")].ratio < AZURE_RATIOS[("reserved_1y", "all_upfront")].ratio
