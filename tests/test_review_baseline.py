"""The review's on-demand baseline is the bill's own list price (issue 31, point 5): a line the provider repriced is
saved against what the bill lists, not against the catalog (which overstated it by 27 %); a line whose export carries
no list price falls back to the catalog and says so, with the catalog's age warned as plans warn it; a Convertible
reservation is named Convertible, with its term, payment and what it can be exchanged for.

Export: tests/fixtures/usage/baseline_focus_1.0.csv, October 2026, rows copied from real rows of the FOCUS sample
(make_baseline.py there says which and what was replaced). Prices: the shipped snapshot (pricing_cache/data/offers.csv),
checked by test_the_snapshot_rows_are_the_ones_cited.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

FIX = Path(__file__).parent / "fixtures" / "usage"
EXPORT = FIX / "baseline_focus_1.0.csv"
#: When the review is generated: the catalog's ages count to this day.
GENERATED = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.timezone.utc)

# The shipped snapshot's rows (pricing_cache/data/offers.csv; sources in its PROVENANCE):
ND_OD_CATALOG = 98.32         # Standard_ND96isr_H100_v5 eastus, Azure Retail Prices API of 2025-06-21
ND_RI_1Y = 62.924772          # the same, 1-year reservation (no upfront: monthly payments of the same rate)
ND_OD_BILL = 90.84768         # the export's ListUnitPrice: 98.32 x (1 - 0.076), Azure's 2026-08-01 median change
P5_OD = 55.04                 # p5.48xlarge us-east-1 (AWS Price List since June 2025), also the export's
P5_RI_1Y_CONVERTIBLE = 43.344  # the only 1-year p5 reservation AWS sells: Convertible, no upfront
G5_OD = 1.624                 # g5.4xlarge us-east-1, skypilot-catalog confirmed by ec2instances.info 2025-11-30
G5_RI_1Y = 1.02312            # Standard, no upfront
P4D_OD = 21.957642            # p4d.24xlarge us-east-1 since June 2025
P4D_OD_BEFORE = 32.7726       # its list price until May 2025 (/work/shared/data/prices/README.md, source 9)
P4D_RI_1Y = 13.921094


@pytest.fixture(scope="module")
def offers():
    from pricing_cache.store import load_offers

    df, _ = load_offers(use_cache=False)
    return df


@pytest.fixture(scope="module")
def result(offers):
    from optimizer.review import review
    from providers.usage import read_usage

    return review(read_usage(EXPORT), offers, generated_at=GENERATED)


def _rec(res, itype):
    (r,) = [r for r in res.recommendations if r.instance_type == itype]
    return r


def _use(res, itype):
    (u,) = [u for u in res.usage if u.instance_type == itype]
    return u


def _rate(offers, prov, region, itype, pricing, payment=""):
    x = offers[(offers["provider"] == prov) & (offers["region"] == region) & (offers["instance_type"] == itype)
               & (offers["pricing"] == pricing) & (offers["zone"].fillna("") == "")]
    if payment:
        x = x[x["payment"] == payment]
    return x.sort_values("usd_per_hour").iloc[0]


def test_the_snapshot_rows_are_the_ones_cited(offers):
    nd = _rate(offers, "azure", "eastus", "Standard_ND96isr_H100_v5", "on_demand")
    assert nd["usd_per_hour"] == pytest.approx(ND_OD_CATALOG) and nd["as_of"] == "2025-06-21"
    assert _rate(offers, "azure", "eastus", "Standard_ND96isr_H100_v5", "reserved_1y", "no_upfront")[
        "usd_per_hour"] == pytest.approx(ND_RI_1Y)
    p5 = _rate(offers, "aws", "us-east-1", "p5.48xlarge", "reserved_1y", "no_upfront")
    assert p5["usd_per_hour"] == pytest.approx(P5_RI_1Y_CONVERTIBLE) and p5["offering_class"] == "convertible"
    assert _rate(offers, "aws", "us-east-1", "p5.48xlarge", "on_demand")["usd_per_hour"] == pytest.approx(P5_OD)
    g5 = _rate(offers, "aws", "us-east-1", "g5.4xlarge", "on_demand")
    assert g5["usd_per_hour"] == pytest.approx(G5_OD) and g5["as_of"] == "2025-11-30"
    assert _rate(offers, "aws", "us-east-1", "g5.4xlarge", "reserved_1y", "no_upfront")[
        "usd_per_hour"] == pytest.approx(G5_RI_1Y)


def test_a_repriced_line_saves_from_the_bills_list_price_not_the_catalogs(result):
    # 2 ND96isr H100 v5 VMs every hour of 30 days: commit to both. Per 730-hour month:
    #   bill:    on demand 2 x 730 x 90.84768 = 132,637.61; with 2 reserved 2 x 730 x 62.924772 = 91,870.17;
    #            saves 40,767.45 (30.74 %)
    #   catalog: on demand 2 x 730 x 98.32 = 143,547.20; saves 51,677.03 (36.0 %) -- what the review said before,
    #            26.8 % more than the bill gives
    r = _rec(result, "Standard_ND96isr_H100_v5")
    assert r.recommended_quantity == 2
    assert r.on_demand_baseline == "bill list price"
    assert r.on_demand_usd_per_hour == pytest.approx(ND_OD_BILL)
    assert r.bill_list_usd_per_hour == pytest.approx(ND_OD_BILL)
    assert r.catalog_on_demand_usd_per_hour == pytest.approx(ND_OD_CATALOG)
    assert r.catalog_on_demand_as_of == "2025-06-21"
    assert r.list_price_gap_pct == pytest.approx(-7.6)
    assert r.estimated_monthly_on_demand_cost_usd == pytest.approx(132637.61, abs=0.01)
    assert r.estimated_monthly_cost_with_commitment_usd == pytest.approx(91870.17, abs=0.01)
    assert r.estimated_monthly_savings_usd == pytest.approx(40767.45, abs=0.01)
    assert r.estimated_monthly_savings_pct == pytest.approx(30.74, abs=0.01)
    assert r.estimated_monthly_savings_at_catalog_usd == pytest.approx(51677.03, abs=0.01)
    overstated = r.estimated_monthly_savings_at_catalog_usd / r.estimated_monthly_savings_usd
    assert overstated == pytest.approx(1.268, abs=1e-3)
    u = _use(result, "Standard_ND96isr_H100_v5")
    assert u.on_demand_baseline == "bill list price"
    assert u.on_demand_equivalent_usd == pytest.approx(1440 * ND_OD_BILL, abs=0.01)  # = its billed cost
    assert u.on_demand_equivalent_usd == pytest.approx(u.billed_cost_usd, abs=0.01)
    (w,) = [w for w in result.warnings if w.startswith("Standard_ND96isr_H100_v5 (azure eastus)")]
    assert "90.8477 $/h is 7.6 % below the catalog's 98.3200 $/h (as of 2025-06-21; tolerance 2 %)" in w
    assert "the provider repriced, or the catalog or the bill is stale" in w and "reserved rate" in w


def test_a_line_priced_as_the_catalog_is_not_warned(result):
    r = _rec(result, "p5.48xlarge")
    assert r.on_demand_baseline == "bill list price" and r.list_price_gap_pct == 0.0
    assert r.estimated_monthly_savings_at_catalog_usd is None
    assert not [w for w in result.warnings if w.startswith("p5.48xlarge")]


def test_a_line_without_a_list_price_falls_back_to_the_catalog_and_says_so(result):
    # g5.4xlarge: ListCost and ListUnitPrice NULL -> the catalog's 1.624 of 2025-11-30, 372 days before the review
    r = _rec(result, "g5.4xlarge")
    assert r.on_demand_baseline == "catalog, 2025-11-30"
    assert r.bill_list_usd_per_hour is None and r.on_demand_usd_per_hour == pytest.approx(G5_OD)
    assert r.estimated_monthly_savings_usd == pytest.approx(730 * (G5_OD - G5_RI_1Y), abs=0.01)  # 438.64
    assert _use(result, "g5.4xlarge").on_demand_baseline == "catalog, 2025-11-30"
    (w,) = [w for w in result.warnings if w.startswith("g5.4xlarge (aws us-east-1)")]
    assert w == ("g5.4xlarge (aws us-east-1): the export carries no list price, so the on-demand baseline is the "
                 "catalog's 1.6240 $/h of 2025-11-30, 372 days old (skypilot-catalog:catalogs/v8/aws/vms.csv@00148f2a)"
                 ": check the current price before buying")
    (n,) = [n for n in result.notes if n.startswith("on-demand baseline:")]
    assert "bill's own list price for 2 of 3" in n and "catalog's on-demand rate for 1" in n


def test_the_catalogs_age_is_warned_only_past_the_limit(offers, monkeypatch):
    from optimizer.review import review
    from providers.usage import read_usage

    monkeypatch.setenv("GPUOPT_MAX_PRICE_AGE_DAYS", "400")  # the 372-day-old row is within it
    res = review(read_usage(EXPORT), offers, generated_at=GENERATED)
    assert not [w for w in res.warnings if "days old" in w]
    # a catalog row of no known date is always warned
    undated = offers.copy()
    undated["as_of"] = undated["as_of"].astype(object)
    undated.loc[(undated["instance_type"] == "g5.4xlarge") & (undated["pricing"] == "on_demand"), "as_of"] = "unknown"
    res = review(read_usage(EXPORT), undated, generated_at=GENERATED)
    assert _rec(res, "g5.4xlarge").on_demand_baseline == "catalog, date unknown"
    assert [w for w in res.warnings if w.startswith("g5.4xlarge") and "date is not known" in w]


def test_an_export_without_list_prices_is_priced_from_the_catalog_line_by_line(offers):
    # the warehouse's hourly table of the synthetic month carries no list_cost column
    from optimizer.review import review
    from providers.usage import read_usage

    res = review(read_usage(FIX / "synthetic_hourly.csv"), offers, generated_at=GENERATED)
    assert {u.instance_type: u.on_demand_baseline for u in res.usage} == {
        "g5.xlarge": "catalog, 2025-11-30", "p4d.24xlarge": "catalog, 2025-11-30",
        "Standard_NC24ads_A100_v4": "catalog, 2025-06-21"}
    assert sorted(w.split(":", 1)[0] for w in res.warnings if "the export carries no list price" in w) == [
        "Standard_NC24ads_A100_v4 (azure eastus)", "g5.xlarge (aws us-east-1)", "p4d.24xlarge (aws us-east-1)"]


def test_a_convertible_reservation_is_named_convertible(result, tmp_path):
    r = _rec(result, "p5.48xlarge")
    # 1 p5 every hour: 730 x (55.04 - 43.344) = 8,538.08 a month at the Convertible rate
    assert r.offering_class == "convertible"
    assert r.reserved_effective_usd_per_hour == pytest.approx(P5_RI_1Y_CONVERTIBLE)
    assert r.estimated_monthly_savings_usd == pytest.approx(8538.08, abs=0.01)
    assert r.commitment == "AWS Convertible Reserved Instance, 1-year term, No Upfront"
    assert r.flexibility.startswith("exchangeable during the term for Convertible RIs")
    g5 = _rec(result, "g5.4xlarge")
    assert g5.offering_class == "standard"
    assert g5.commitment == "AWS Standard Reserved Instance, 1-year term, No Upfront"
    nd = _rec(result, "Standard_ND96isr_H100_v5")
    assert nd.offering_class == "" and nd.commitment == "Azure reserved VM instance, 1-year term, No Upfront"
    # the report says it too, with the baseline of each line
    from gpuopt.review_report import render_review_report

    md = render_review_report(result, "markdown", tmp_path / "review.md").read_text()
    assert "| aws | us-east-1 | p5.48xlarge | Convertible | 1y | no\\_upfront | 1 | 55.0400 | bill list price |" in md
    assert "| aws | us-east-1 | g5.4xlarge | Standard | 1y | no\\_upfront | 1 | 1.6240 | catalog, 2025-11-30 |" in md
    assert "p5.48xlarge (aws us-east-1) x1: AWS Convertible Reserved Instance, 1-year term, No Upfront" in md
    html = render_review_report(result, "html", tmp_path / "review.html").read_text()
    assert "Convertible" in html and "bill list price" in html and "catalog, 2025-11-30" in html


def test_the_cli_table_and_json_say_the_baseline_and_the_class():
    from gpuopt.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["review", "--usage", str(EXPORT), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    from gpuopt.schemas import undeclared_keys, validate

    assert undeclared_keys(validate(d)) == []
    recs = {x["instance_type"]: x for x in d["recommendations"]}
    assert recs["p5.48xlarge"]["offering_class"] == "convertible"
    assert recs["Standard_ND96isr_H100_v5"]["on_demand_baseline"] == "bill list price"
    assert recs["g5.4xlarge"]["on_demand_baseline"] == "catalog, 2025-11-30"
    r = runner.invoke(app, ["review", "--usage", str(EXPORT)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "Convertible" in r.stdout and "bill list price" in r.stdout and "catalog," in r.stdout
    assert "AWS Convertible Reserved Instance, 1-year term, No Upfront" in r.stdout


def test_a_cur_line_listed_above_the_catalog_is_priced_from_its_public_on_demand_rate(offers, tmp_path):
    # The synthetic CUR month (September 2024) with the list price AWS published then for p4d.24xlarge: 32.7726 $/h
    # until May 2025 (pricing_public_on_demand_rate only, no _cost column). p4d runs 2 instances 12 h a day, 1 the
    # other 12 h. Break-even 13.921094 / 32.7726 = 0.425 < 0.5: commit to 2 (at the catalog's 21.957642: 0.634, 1).
    #   bill:    on demand 36 x 730 / 24 x 32.7726 = 35,886.00; with 2 reserved 2 x 730 x 13.921094 = 20,324.80;
    #            saves 15,561.20
    #   catalog: on demand 1,095 x 21.957642 = 24,043.62; with 1 reserved 10,162.40 + 365 x 21.957642 = 18,176.94;
    #            saves 5,866.68
    from optimizer.review import review
    from providers.usage import read_usage

    src = FIX / "synthetic_cur2.csv"
    with open(src, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        rate = float(r["line_item_unblended_rate"] or 0)
        if r["product_instance_type"] == "p4d.24xlarge" and r["line_item_line_item_type"] == "Usage":
            rate = P4D_OD_BEFORE
            r["line_item_unblended_cost"] = f"{P4D_OD_BEFORE * float(r['line_item_usage_amount']):.6f}"
        r["pricing_public_on_demand_rate"] = f"{rate}" if r["pricing_public_on_demand_cost"] else ""
        del r["pricing_public_on_demand_cost"]
    f = tmp_path / "cur_2024-09.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = review(read_usage(f), offers, generated_at=GENERATED)
    r = _rec(res, "p4d.24xlarge")
    assert r.on_demand_baseline == "bill list price" and r.on_demand_usd_per_hour == pytest.approx(P4D_OD_BEFORE)
    assert r.list_price_gap_pct == pytest.approx(100 * (P4D_OD_BEFORE / P4D_OD - 1), abs=0.01)  # +49.25 %
    assert r.recommended_quantity == 2
    assert r.estimated_monthly_on_demand_cost_usd == pytest.approx(1095 * P4D_OD_BEFORE, abs=0.01)
    assert r.estimated_monthly_savings_usd == pytest.approx(1095 * P4D_OD_BEFORE - 1460 * P4D_RI_1Y, abs=0.01)
    assert r.estimated_monthly_savings_at_catalog_usd == pytest.approx(5866.68, abs=0.01)
    assert [w for w in res.warnings if w.startswith("p4d.24xlarge") and "49.3 % above the catalog's" in w]
    assert _use(res, "g5.xlarge").on_demand_baseline == "bill list price"  # its rows list the catalog's 1.006


def test_a_focus_row_without_list_cost_takes_list_unit_price_times_pricing_quantity(tmp_path):
    from providers.usage import read_usage

    with open(EXPORT, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    i = head.index("ListCost")
    for r in rows[1:]:
        r[i] = "NULL"
    f = tmp_path / "no_list_cost.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    h = read_usage(f).hourly
    nd = h[h["instance_type"] == "Standard_ND96isr_H100_v5"]
    assert nd["list_cost"].sum() / nd["usage_hours"].sum() == pytest.approx(ND_OD_BILL)
    assert h[h["instance_type"] == "g5.4xlarge"]["list_cost"].isna().all()


def test_a_list_price_that_is_not_a_number_keeps_the_usage(tmp_path):
    # a breaker's export: ListUnitPrice / ListCost "abc" on the p5 and ND96 rows dropped them as bad rows -- 99 % of
    # the spend gone and exit 0. The usage and billed cost stay; the list price is taken as missing (catalog
    # baseline, said per line) and a note counts the rows
    from gpuopt.cli import app

    rows = list(csv.DictReader(EXPORT.open(newline="", encoding="utf-8")))
    spoiled = 0
    for r in rows:
        if r["ListUnitPrice"] and r["ListCost"]:
            r["ListUnitPrice"], r["ListCost"] = "abc", "abc"
            spoiled += 1
    path = tmp_path / "abc.csv"
    _write_rows(rows, path)
    good = json.loads(CliRunner().invoke(app, ["review", "--usage", str(EXPORT), "--format", "json"]).stdout)
    r = CliRunner().invoke(app, ["review", "--usage", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert spoiled > 0
    assert d["totals"]["billed_usd"] == pytest.approx(good["totals"]["billed_usd"])  # no usage lost
    assert any(f"{spoiled} row(s) carry a list price (ListCost / ListUnitPrice) that is not a number" in n
               for n in d["notes"])
    assert {x["on_demand_baseline"] for x in d["recommendations"]} == {"catalog, 2025-11-30", "catalog, 2025-06-21"}


def test_a_list_price_changed_inside_the_window_counts_each_hour_at_its_own(tmp_path):
    # a breaker's export: the ND96isr rows from 2026-10-16 listed at the catalog's 98.32 instead of 90.84768. The
    # forward baseline is the latest list price (warned as changed); the reviewed month's on-demand equivalent is
    # what the bill listed, hour by hour (the sum of the rows' ListCost), not all its hours at the latest price
    from gpuopt.cli import app

    rows = list(csv.DictReader(EXPORT.open(newline="", encoding="utf-8")))
    listed = 0.0
    for r in rows:
        if "ND96isr" in r["ChargeDescription"]:
            if r["ChargePeriodStart"] >= "2026-10-16":
                r["ListUnitPrice"] = f"{ND_OD_CATALOG}"
                r["ListCost"] = f"{ND_OD_CATALOG * float(r['PricingQuantity']):.8f}"
            listed += float(r["ListCost"])
    path = tmp_path / "mid.csv"
    _write_rows(rows, path)
    r = CliRunner().invoke(app, ["review", "--usage", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    nd = next(u for u in d["usage"] if u["instance_type"] == "Standard_ND96isr_H100_v5")
    assert nd["on_demand_usd_per_hour"] == pytest.approx(ND_OD_CATALOG)  # forward: the latest list price
    assert nd["on_demand_equivalent_usd"] == pytest.approx(listed, abs=0.02)  # the window: what the bill listed
    assert any("changed inside the window" in w for w in d["warnings"])


@pytest.mark.parametrize("factor", [10.0, 0.5])
def test_a_list_price_far_from_what_the_on_demand_rows_were_billed_is_warned(tmp_path, factor):
    # a breaker's exports: ListCost ten times ListUnitPrice x PricingQuantity claimed $370,151 a month of savings on
    # a p5 line billed $39,629 a month, without a word; half the billed cost passed silently too. On-demand rows are
    # billed at list less a negotiated discount at most: billed above list or under half of it is warned per line
    from gpuopt.cli import app

    rows = list(csv.DictReader(EXPORT.open(newline="", encoding="utf-8")))
    for r in rows:
        if r["ListCost"] not in ("", "NULL") and r["PricingCategory"] == "Standard":
            r["ListCost"] = f"{float(r['ListCost']) * factor:.8f}"
            if r["ListUnitPrice"] not in ("", "NULL"):
                r["ListUnitPrice"] = f"{float(r['ListUnitPrice']) * factor:.8f}"
    path = tmp_path / "list.csv"
    _write_rows(rows, path)
    d = json.loads(CliRunner().invoke(app, ["review", "--usage", str(path), "--format", "json"]).stdout)
    ratio = f"({1 / factor:.2f}x)"
    assert any(w.startswith("p5.48xlarge (aws us-east-1): its on-demand rows were billed") and ratio in w
               and "the export's list price looks wrong" in w for w in d["warnings"])
    good = json.loads(CliRunner().invoke(app, ["review", "--usage", str(EXPORT), "--format", "json"]).stdout)
    assert not any("looks wrong" in w for w in good["warnings"])


def _write_rows(rows: list[dict], path: Path) -> None:
    """Write the export's rows (csv.DictReader dicts, edited by a test) to ``path`` with its header."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
