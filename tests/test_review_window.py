"""The review's window follows the data (issue 12, point 1) and its recommendations carry Cost Explorer's fields
(point 9): a 30-day export that straddles two months is 720 hours, not 61 days; a lookback longer than the data, or
whole days without a row, are said; a payment option a provider does not sell is said as such; min/avg/max
instances per hour, AWS normalized units, a stable recommendation id, the generation time and the account scope."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from typer.testing import CliRunner

from gpuopt import api
from gpuopt.cli import app
from optimizer.review import aws_normalization_factor

# The shipped snapshot's p4d.24xlarge prices in us-east-1 (pricing_cache/data/offers.csv; PROVENANCE there):
# on demand 21.957642 $/h (skypilot-catalog catalogs/v8/aws/vms.csv@00148f2a, confirmed by ec2instances.info,
# as of 2025-11-30); reserved 1y Standard no upfront 13.921094 $/h (tsaol/aws-gpu data/gpu_instances_raw.json@2d0108c7,
# ec2instances.info 2025-11-30). test_snapshot_prices_are_the_ones_cited checks these are the snapshot's rows.
P4D_OD = 21.957642
P4D_RI_1Y_NO_UPFRONT = 13.921094

HEADER = ("BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,ChargeCategory,ChargeClass,"
          "ChargeDescription,ChargeFrequency,ChargePeriodEnd,ChargePeriodStart,CommitmentDiscountId,"
          "CommitmentDiscountStatus,ConsumedQuantity,ConsumedUnit,EffectiveCost,ListCost,ListUnitPrice,"
          "PricingCategory,PricingQuantity,PricingUnit,ProviderName,RegionId,ResourceId,ServiceCategory,ServiceName,"
          "SkuId,SubAccountId")


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _row(t: dt.datetime, itype: str, rate: float, resource: str, account: str) -> str:
    p0 = t.replace(day=1, hour=0)
    p1 = (p0 + dt.timedelta(days=32)).replace(day=1)
    desc = f"${rate:.4f} per On Demand Linux {itype} Instance Hour"
    return ",".join([f"{rate}", "999988887777", "USD", _iso(p1), _iso(p0), "Usage", "", desc, "Usage-Based",
                     _iso(t + dt.timedelta(hours=1)), _iso(t), "", "", "1", "Hours", f"{rate}", f"{rate}", f"{rate}",
                     "Standard", "1", "Hours", "AWS", "us-east-1", resource, "Compute",
                     "Amazon Elastic Compute Cloud", "SKU" + itype.upper().replace(".", ""), account])


def p4d_export(path, *, start=dt.datetime(2026, 9, 16, tzinfo=dt.timezone.utc), days=30, missing_days=(),
               monthly_rows=False):
    """A FOCUS 1.0 export of ``days`` days from ``start``: 4 p4d.24xlarge on demand from 00:00 to 18:00 every day
    (75 % of the fleet's hours; i-p4d-0/1 in account 111111111111, i-p4d-2/3 in 222222222222) and an m5.large
    running every hour (a service that is not a GPU: the export covers the whole day). ``missing_days`` (0-based)
    have no row at all. ``monthly_rows``: add a month-long row per month touched (a Usage row of a monthly service
    and a Purchase fee), whose charge periods start on the 1st."""
    rows = [HEADER]
    if monthly_rows:
        for m0 in sorted({(start + dt.timedelta(days=d)).replace(day=1, hour=0) for d in range(days)}):
            m1 = (m0 + dt.timedelta(days=32)).replace(day=1)
            for cat in ("Usage", "Purchase"):
                rows.append(",".join(["10", "999988887777", "USD", _iso(m1), _iso(m0), cat, "", "monthly charge",
                                      "Recurring", _iso(m1), _iso(m0), "", "", "1", "Month", "10", "10", "10",
                                      "Standard", "1", "Month", "AWS", "us-east-1", "hz-1", "Networking",
                                      "Amazon Route 53", "SKUHZ", "111111111111"]))
    for d in range(days):
        if d in missing_days:
            continue
        for h in range(24):
            t = start + dt.timedelta(days=d, hours=h)
            rows.append(_row(t, "m5.large", 0.096, "i-m5", "111111111111"))
            if h < 18:
                for i in range(4):
                    rows.append(_row(t, "p4d.24xlarge", P4D_OD, f"i-p4d-{i}", "111111111111" if i < 2 else "222222222222"))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_snapshot_prices_are_the_ones_cited():
    from pricing_cache.store import load_offers

    df, _ = load_offers(use_cache=False)
    x = df[(df["provider"] == "aws") & (df["region"] == "us-east-1") & (df["instance_type"] == "p4d.24xlarge")]
    od = x[x["pricing"] == "on_demand"]["usd_per_hour"].min()
    ri = x[(x["pricing"] == "reserved_1y") & (x["payment"] == "no_upfront")]["usd_per_hour"].min()
    assert od == pytest.approx(P4D_OD) and ri == pytest.approx(P4D_RI_1Y_NO_UPFRONT)


def test_an_export_straddling_two_months_is_its_30_days_not_61(tmp_path):
    # with month-long rows (Sep 1 - Oct 1, Oct 1 - Nov 1) that must not stretch the window to the calendar months
    f = p4d_export(tmp_path / "sep16_oct15.csv", monthly_rows=True)
    res = api.review(usage=f)
    assert res.window_start == "2026-09-16T00:00:00+00:00" and res.window_end == "2026-10-16T00:00:00+00:00"
    assert res.window_hours == 720 and res.coverage_hours == 720 and res.covered_fraction == 1.0
    assert res.gap_days == [] and res.warnings == [] and res.lookback_days == 30.0
    (u,) = [u for u in res.usage if u.instance_type == "p4d.24xlarge"]
    assert u.utilization == pytest.approx(0.75) and u.peak_instances == 4 and u.average_instances == pytest.approx(3.0)
    (rec,) = res.recommendations
    # break-even 13.921094 / 21.957642 = 0.634 < 0.75 of hours with all 4 running: commit to 4.
    # on demand: 3 instances on average x 730 h x 21.957642 = 48,087.24 $/month;
    # with 4 reserved: 4 x 730 x 13.921094 = 40,649.59 $/month; saves 7,437.64 $/month (15.5 %).
    assert rec.recommended_quantity == 4 and rec.term == "1y" and rec.payment == "no_upfront"
    assert rec.on_demand_usd_per_hour == pytest.approx(P4D_OD)
    assert rec.reserved_effective_usd_per_hour == pytest.approx(P4D_RI_1Y_NO_UPFRONT)
    assert rec.estimated_monthly_on_demand_cost_usd == pytest.approx(3 * 730 * P4D_OD, abs=0.01)
    assert rec.estimated_monthly_cost_with_commitment_usd == pytest.approx(4 * 730 * P4D_RI_1Y_NO_UPFRONT, abs=0.01)
    assert rec.estimated_monthly_savings_usd == pytest.approx(7437.64, abs=0.01)
    assert rec.average_utilization == pytest.approx(0.75)
    # Cost Explorer fields
    assert (rec.minimum_instances_per_hour, rec.average_instances_per_hour, rec.maximum_instances_per_hour) == (0, 3, 4)
    assert rec.normalization_factor == 192 and rec.normalized_units_to_purchase == 768
    assert (rec.minimum_normalized_units_per_hour, rec.average_normalized_units_per_hour,
            rec.maximum_normalized_units_per_hour) == (0, 576, 768)
    assert rec.account_scope == "shared" and rec.account_id is None
    assert dt.datetime.strptime(rec.generation_time, "%Y-%m-%dT%H:%M:%SZ")


def test_a_calendar_window_wider_than_the_data_is_not_padded_with_idle_hours(tmp_path):
    # the same usage asked for over September and October (61 days, what the review did before this fix, when the
    # fleet looked 37 % used and nothing paid): the 31 days without data are unknown, not idle, and said so
    from optimizer.review import review
    from pricing_cache.store import load_offers
    from providers.usage import read_usage

    data = read_usage(p4d_export(tmp_path / "x.csv"))
    offers, _ = load_offers(use_cache=False)
    padded = review(data, offers, window=("2026-09-01T00:00:00Z", "2026-11-01T00:00:00Z"))
    (u,) = [u for u in padded.usage if u.instance_type == "p4d.24xlarge"]
    assert padded.window_hours == 61 * 24 and u.utilization == pytest.approx(0.75)  # over covered hours only
    assert padded.coverage_hours == 720 and any("data starts at 2026-09-16" in w for w in padded.warnings)
    assert any("data ends at 2026-10-16" in w for w in padded.warnings)
    assert [r.recommended_quantity for r in padded.recommendations] == [4]


def test_recommendation_ids_are_stable_and_scope_per_account(tmp_path):
    from optimizer.review import review
    from pricing_cache.store import load_offers
    from providers.usage import read_usage

    data = read_usage(p4d_export(tmp_path / "x.csv"))
    offers, _ = load_offers(use_cache=False)
    t1 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.timezone.utc)
    a = review(data, offers, generated_at=t1)
    b = review(data, offers, generated_at=t1 + dt.timedelta(days=1))
    assert a.recommendations[0].recommendation_id == b.recommendations[0].recommendation_id
    assert a.recommendations[0].generation_time == "2026-12-01T08:00:00Z" != b.recommendations[0].generation_time
    per = review(data, offers, scope="account", generated_at=t1)
    assert per.account_scope == "account"
    recs = {r.account_id: r for r in per.recommendations}
    assert set(recs) == {"111111111111", "222222222222"}
    for r in recs.values():  # each account runs 2 of the 4 instances, 18 h a day
        assert r.recommended_quantity == 2 and r.maximum_instances_per_hour == 2
        assert r.estimated_monthly_savings_usd == pytest.approx(7437.64 / 2, abs=0.01)
    ids = {r.recommendation_id for r in per.recommendations} | {a.recommendations[0].recommendation_id}
    assert len(ids) == 3
    u = next(u for u in per.usage if u.instance_type == "p4d.24xlarge")
    assert u.accounts == ["111111111111", "222222222222"]


def test_a_lookback_longer_than_the_data_is_warned(tmp_path):
    f = p4d_export(tmp_path / "12days.csv", days=12)
    r = CliRunner().invoke(app, ["review", "--usage", str(f), "--lookback", "30d", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["window_hours"] == 720 and d["coverage_hours"] == 12 * 24 and d["covered_fraction"] == 0.4
    assert d["window_end"] == "2026-09-28T00:00:00+00:00" and d["lookback_days"] == 12
    (w,) = [w for w in d["warnings"] if "--lookback 30 days" in w]
    assert "covers 12.0 of the window's 30 days (40 %)" in w
    assert r.stderr == ""  # --format json: the warnings are in the document, stderr is for an error document
    t = CliRunner().invoke(app, ["review", "--usage", str(f), "--lookback", "30d"])
    assert "gpuopt: warning: --lookback 30 days" in t.stderr
    # the profile is the 12 days of data, not 12 days of use over 30: still 75 % used, still 4 to commit
    (u,) = [u for u in d["usage"] if u["instance_type"] == "p4d.24xlarge"]
    assert u["utilization"] == pytest.approx(0.75)
    (rec,) = d["recommendations"]
    assert rec["recommended_quantity"] == 4


def test_whole_days_without_any_row_are_gaps(tmp_path):
    f = p4d_export(tmp_path / "gaps.csv", missing_days=(3, 4))
    res = api.review(usage=f)
    assert res.window_hours == 720 and res.coverage_hours == 28 * 24
    assert res.gap_days == ["2026-09-19", "2026-09-20"]
    assert any("no row at all on 2 whole day(s)" in w and "2026-09-19, 2026-09-20" in w for w in res.warnings)
    (u,) = [u for u in res.usage if u.instance_type == "p4d.24xlarge"]
    assert u.utilization == pytest.approx(0.75)  # missing days are unknown, not idle


def test_a_burst_in_a_month_long_export_is_reviewed_over_the_export(tmp_path):
    # 48 hours of p4d use inside an export of September (its m5.large runs all month): 48 of 720 hours, no commitment
    f = p4d_export(tmp_path / "sep.csv", start=dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc))
    lines = f.read_text().splitlines()
    keep = [ln for ln in lines if "p4d" not in ln or ",2026-09-10T" in ln or ",2026-09-11T" in ln]
    f.write_text("\n".join(keep) + "\n")
    res = api.review(usage=f)
    assert res.window_hours == 720 and res.coverage_hours == 720
    assert res.recommendations == []


def test_a_burst_alone_is_its_own_short_window_and_warned(tmp_path):
    # an hourly file without window columns (issue 32: refused unless --window is given): 48 hours of rows under a
    # 48-hour --window are a 48-hour review, and the review says it is short
    rows = ["provider,region,instance_type,pricing_category,hour,usage_hours,billed_cost,effective_cost"]
    for h in range(48):
        t = dt.datetime(2026, 9, 10, tzinfo=dt.timezone.utc) + dt.timedelta(hours=h)
        rows.append(f"aws,us-east-1,p4d.24xlarge,Standard,{_iso(t)},1,21.96,21.96")
    f = tmp_path / "burst.csv"
    f.write_text("\n".join(rows) + "\n")
    r = CliRunner().invoke(app, ["review", "--usage", str(f), "--usage-format", "hourly", "--format", "json",
                                   "--window", "2026-09-10", "2026-09-12"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["window_hours"] == 48 and d["lookback_days"] == 2
    assert any("covers 2.0 days of usage" in w for w in d["warnings"])
    t = CliRunner().invoke(app, ["review", "--usage", str(f), "--usage-format", "hourly",
                                 "--window", "2026-09-10", "2026-09-12"])
    assert "gpuopt: warning: the review covers 2.0 days of usage" in t.stderr


def test_azure_partial_upfront_is_not_sold_not_unpriced():
    from pathlib import Path

    fix = Path(__file__).parent / "fixtures" / "usage" / "synthetic_azure_cost_details.csv"
    res = api.review(usage=fix, payment="partial_upfront")
    (x,) = [x for x in res.unpriced if x["provider"] == "azure"]
    assert x["kind"] == "not_sold"
    assert x["missing"] == "azure sells no partial_upfront reservations (only no_upfront (monthly) and all_upfront)"
    assert any(w.startswith("azure sells no partial_upfront reservations") for w in res.warnings)
    assert not any("had no price" in n for n in res.notes)
    # a payment option Azure sells is priced and reviewed
    ok = api.review(usage=fix, payment="all_upfront")
    assert not [x for x in ok.unpriced if x["provider"] == "azure"]


def test_gcp_sells_commitments_without_upfront_only():
    from providers.reserved_rules import payment_not_sold

    assert payment_not_sold("gcp", "all_upfront") == ("gcp sells no all_upfront committed use discounts (only "
                                                      "no_upfront: committed use discounts are billed monthly)")
    assert payment_not_sold("gcp", "no_upfront") is None and payment_not_sold("aws", "partial_upfront") is None


@pytest.mark.parametrize("itype, family, factor", [
    ("p4d.24xlarge", (), 192.0), ("g5.xlarge", (), 8.0), ("g5.2xlarge", (), 16.0), ("p5.48xlarge", (), 384.0),
    ("t3.nano", (), 0.25), ("t3.micro", (), 0.5), ("t3.small", (), 1.0), ("t3.medium", (), 2.0), ("m5.large", (), 4.0),
    ("m7i.metal-24xl", (), 192.0), ("g4dn.metal", ("g4dn.xlarge", "g4dn.16xlarge", "g4dn.metal"), 128.0),
    ("g4dn.metal", (), None), ("Standard_NC24ads_A100_v4", (), None),
])
def test_aws_normalization_factors(itype, family, factor):
    assert aws_normalization_factor(itype, family) == factor


def test_per_account_commitments_each_reach_the_focus_projection(tmp_path):
    """--scope account: each account's recommended commitment is its own FOCUS commitment (its CommitmentDiscountId
    names the account), its used hours land on that account's resources (SubAccountId), and the file passes gpuopt's
    FOCUS 1.2 validator. Before, only the last recommendation of an instance type reached the projection."""
    from gpuopt.api import review as api_review
    from gpuopt.focus import focus_rows
    from tests.focus_validator import validate_focus

    rv = api_review(usage=p4d_export(tmp_path / "x.csv"), scope="account")
    assert {r.account_id for r in rv.recommendations} == {"111111111111", "222222222222"}
    rows = focus_rows(rv.focus_charges())
    assert validate_focus(rows) == []
    purchases = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    cids = {r["CommitmentDiscountId"] for r in purchases}
    assert len(cids) == 2 and all(c.endswith(("/111111111111", "/222222222222")) for c in cids)
    for acct in ("111111111111", "222222222222"):
        used = [r for r in rows if r["ChargeCategory"] == "Usage" and r.get("CommitmentDiscountStatus") == "Used"
                and str(r["CommitmentDiscountId"]).endswith(acct)]
        assert used and {r["SubAccountId"] for r in used} == {acct}
        # 2 instances reserved per account, used 75 % of the projected month's hours: the calendar month after the
        # window's end (Oct 15) is November 2026, 720 h
        assert {r["BillingPeriodStart"] for r in used} == {"2026-11-01T00:00:00Z"}
        assert sum(float(r["ConsumedQuantity"]) for r in used) == pytest.approx(2 * 720 * 0.75, rel=1e-6)


def test_per_account_table_keeps_the_account_on_a_narrow_terminal(tmp_path):
    r = CliRunner().invoke(app, ["review", "--usage", str(p4d_export(tmp_path / "x.csv")), "--scope", "account"],
                           env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    assert "111111111111" in r.stdout and "222222222222" in r.stdout  # whose each recommendation is
    assert max(len(x) for x in r.stdout.splitlines()) <= 100
