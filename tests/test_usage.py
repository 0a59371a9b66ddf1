"""Billing-export readers (providers/usage.py) and the warehouse SQL (providers/sql/), on the FOCUS sample and
spec examples (real, CC BY 4.0), the synthetic month in four formats, and small hand-made exports."""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuopt.kernel.errors import InputError
from providers import usage as U
from providers.usage_formats import NUMERIC_COLUMNS
from providers.usage_source import open_source

FIX = Path(__file__).parent / "fixtures" / "usage"
SAMPLE = FIX / "focus_sample_1.0.csv"
SPEC = FIX / "focus_spec_v1.2"
SCEN = SPEC / "commitment_discount_scenarios"
FLEX = SPEC / "commitment_discount_flexibility"
ROOT = Path(__file__).resolve().parents[1]


def spec_gpu(provider: str, itype: str) -> bool:
    """The FOCUS spec examples name their VMs only in SkuId (VM_LARGE...) or ResourceId (<my-resource-id>)."""
    return itype.startswith("VM_") or itype == "<my-resource-id>"


def per_key(h: pd.DataFrame, cols=("usage_hours", "billed_cost")) -> pd.DataFrame:
    return h.groupby(["provider", "region", "instance_type", "hour"])[list(cols)].sum().sort_index()


def check_counts(d: U.UsageData) -> None:
    assert d.rows_read == d.rows_gpu + d.rows_not_gpu + len(d.bad_rows)
    assert list(d.hourly.columns) == list(U.HOURLY_COLUMNS)
    assert list(d.purchases.columns) == list(U.PURCHASE_COLUMNS)
    if len(d.hourly):
        assert str(d.hourly["hour"].dt.tz) == "UTC"
        assert (d.hourly["hour"] == d.hourly["hour"].dt.floor("h")).all()
        assert set(d.hourly["pricing_category"]) <= set(U.PRICING_CATEGORIES)


# ----------------------------------------------------------------------------------------------------------- formats

def test_detect_format_of_every_fixture():
    assert U.detect_format(SAMPLE) == "focus-1.0"
    assert U.detect_format(FIX / "synthetic_focus_1.0.csv") == "focus-1.0"
    assert U.detect_format(FIX / "synthetic_cur2.csv") == "aws-cur-2.0"
    assert U.detect_format(FIX / "synthetic_azure_cost_details.csv") == "azure-cost-details"
    assert U.detect_format(FIX / "synthetic_hourly.csv") == "hourly"
    # the spec examples carry CommitmentDiscountQuantity/Unit (new in 1.1) but no 1.2-only column
    for f in sorted(SPEC.rglob("*.csv")):
        assert U.detect_format(f) == "focus-1.1", f.name


def test_focus_12_columns_and_unknown_format(tmp_path):
    p = tmp_path / "f12.csv"
    p.write_text("BilledCost,ChargePeriodStart,ChargePeriodEnd,InvoiceId,PricingCurrency\n")
    assert U.detect_format(p) == "focus-1.2"
    q = tmp_path / "other.csv"
    q.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError) as e:
        U.read_usage(q)
    assert e.value.field == "format" and "FOCUS" in e.value.accepted
    with pytest.raises(InputError) as e:
        U.read_usage(SAMPLE, fmt="cur")
    assert e.value.field == "format"
    with pytest.raises(InputError):
        U.read_usage(SAMPLE, fmt="aws-cur-2.0")  # a FOCUS file read as CUR is refused, not misread


def test_headers_match_case_insensitively(tmp_path):
    # the flexibility files say SkuPriceid; any casing of any header reads the same
    src = open_source(FLEX / "one_hundred_percent_utilization_without_commitment_discount_flexibility.csv")
    assert src.col("SkuPriceId") == "SkuPriceid"
    text = (FIX / "synthetic_focus_1.0.csv").read_text().split("\n", 1)
    p = tmp_path / "lower.csv"
    p.write_text(text[0].lower() + "\n" + text[1])
    a = U.read_usage(FIX / "synthetic_focus_1.0.csv")
    b = U.read_usage(p)
    pd.testing.assert_frame_equal(a.hourly, b.hourly)


# ------------------------------------------------------------------------------------------------ the FOCUS sample

def test_focus_sample_gpu_rows_and_defects():
    d = U.read_usage(SAMPLE)
    check_counts(d)
    assert d.source_format == "focus-1.0" and d.currency == "USD"
    assert d.rows_read == 1000 and d.bad_rows == []
    raw = pd.read_csv(SAMPLE, dtype=str, keep_default_na=False)
    gpu = raw[raw["ChargeDescription"].str.contains(r"per On Demand Linux g[35]\.4xlarge Instance Hour")]
    assert d.rows_gpu == len(gpu) == 10
    assert set(d.hourly["instance_type"]) == {"g3.4xlarge", "g5.4xlarge"}
    assert d.hourly["usage_hours"].sum() == pytest.approx(gpu["ConsumedQuantity"].astype(float).sum())
    assert d.hourly["billed_cost"].sum() == pytest.approx(gpu["BilledCost"].astype(float).sum())
    # "2024-09-24 02:00:00" (no T, no Z) is UTC
    row = d.hourly[d.hourly["instance_type"] == "g3.4xlarge"].iloc[0]
    assert row["hour"] == pd.Timestamp("2024-09-24 02:00", tz="UTC") and row["region"] == "us-east-1"
    assert d.period_start == pd.Timestamp("2024-09-12 01:00", tz="UTC")
    assert d.period_end == pd.Timestamp("2024-09-30 19:00", tz="UTC")
    notes = "\n".join(d.notes)
    # Usage-based (Oracle rows) vs the spec's Usage-Based, compared case-insensitively and reported
    assert "ChargeFrequency: 7 row(s) say 'Usage-based'" in notes
    # Microsoft rows priced per 10,000 units, counted independently here
    cq = pd.to_numeric(raw["ConsumedQuantity"], errors="coerce")
    pq = pd.to_numeric(raw["PricingQuantity"], errors="coerce")
    n10k = int(((cq / pq.where(pq != 0)).round(6) == 10000).sum())
    assert n10k >= 25 and f"{n10k} row(s) are priced per 10,000 units" in notes
    # the sample's AWS EffectiveCost is rounded to whole dollars: reported, not corrected
    assert "10 on-demand GPU row(s) without a commitment have an effective cost that differs" in notes
    assert "first: line 188" in notes and raw.iloc[186]["EffectiveCost"].startswith("1.000")
    # NULL / null cells are nulls: no commitment id leaks in as the text "NULL"
    assert set(d.hourly["commitment_id"]) == {""}
    assert "credit/refund/adjustment row(s)" in notes  # the promotional credit names no commitment nor GPU


# -------------------------------------------------------------------------------- FOCUS spec v1.2 commitment files

def read_spec(path: Path) -> U.UsageData:
    d = U.read_usage(path, is_gpu_instance=spec_gpu)
    check_counts(d)
    return d


def test_spec_usage_scenarios_amortized_values():
    d1 = read_spec(SCEN / "commitment_discount_usage_scenario_1.csv")
    h = d1.hourly.iloc[0]
    assert (h["pricing_category"], h["usage_hours"], h["billed_cost"], h["effective_cost"]) == ("Committed", 1, 0, 1)
    assert h["commitment_id"] == "<my-commitment-discount-id>"
    # scenario 2: the whole commitment unused -> a purchases row of category Usage, EffectiveCost 1, billed 0
    d2 = read_spec(SCEN / "commitment_discount_usage_scenario_2.csv")
    assert d2.hourly.empty
    p = d2.purchases.iloc[0]
    assert (p["charge_category"], p["billed_cost"], p["effective_cost"]) == ("Usage", 0, 1)
    # scenario 3: 75 % used, 25 % unused; the commitment's hour costs 1.00 in all
    d3 = read_spec(SCEN / "commitment_discount_usage_scenario_3.csv")
    assert d3.hourly["effective_cost"].sum() == pytest.approx(0.75)
    assert d3.purchases["effective_cost"].sum() == pytest.approx(0.25)
    assert (d3.purchases["charge_category"] == "Usage").all() and d3.purchases["line"].tolist() == [3]
    # scenario 4: a fully used commitment plus on-demand overage
    d4 = read_spec(SCEN / "commitment_discount_usage_scenario_4.csv")
    by = d4.hourly.set_index("pricing_category")
    assert by.loc["Committed", "effective_cost"] == 1 and by.loc["Committed", "billed_cost"] == 0
    assert by.loc["Standard", "effective_cost"] == 0.5 and by.loc["Standard", "billed_cost"] == 0.5


def test_spec_purchase_scenarios_and_the_hour_30_defect():
    d1 = read_spec(SCEN / "commitment_discount_purchase_scenario_1.csv")
    p = d1.purchases.iloc[0]
    assert (p["charge_category"], p["billed_cost"], p["effective_cost"]) == ("Purchase", 8760, 0)
    assert p["charge_period_end"] == pd.Timestamp("2024-01-01", tz="UTC")
    # scenarios 2 and 3: the last recurring purchase ends at "2023-02-01T30:00:00Z": a bad row, never guessed
    d2 = read_spec(SCEN / "commitment_discount_purchase_scenario_2.csv")
    assert [(b.line, b.reason) for b in d2.bad_rows] == [(4, "ChargePeriodEnd does not parse")]
    assert d2.purchases["billed_cost"].tolist() == [1.0, 1.0] and (d2.purchases["effective_cost"] == 0).all()
    d3 = read_spec(SCEN / "commitment_discount_purchase_scenario_3.csv")
    assert [b.line for b in d3.bad_rows] == [5]
    assert d3.purchases["billed_cost"].sum() == pytest.approx(4381.0)
    assert (d3.purchases["effective_cost"] == 0).all() and d3.purchases["line"].tolist() == [2, 3, 4]


def test_spec_flexibility_files():
    # commitment of 1 normalized hour used by a VM 3x as large: 1/3 committed, the rest on demand
    d = read_spec(FLEX / "one_hundred_percent_utilization_with_commitment_discount_flexibility_with_1_resource.csv")
    by = d.hourly.set_index("pricing_category")
    assert by.loc["Committed", "effective_cost"] == 0.5 and by.loc["Committed", "billed_cost"] == 0
    assert by.loc["Standard", "effective_cost"] == 2.25
    # both rows say ConsumedQuantity 1 for the same VM-hour: shared by PricingQuantity, not counted twice
    assert d.hourly["usage_hours"].sum() == pytest.approx(1.0)
    assert by.loc["Committed", "usage_hours"] == pytest.approx(0.333 / (0.333 + 0.75))
    assert any("commitment flexibility" in n for n in d.notes)
    pur = d.purchases.iloc[0]
    assert (pur["charge_category"], pur["billed_cost"], pur["effective_cost"]) == ("Purchase", 0.5, 0)
    assert pur["line"] == 2
    # two medium VMs, both covered: 2 VM-hours, EffectiveCost 1 + 1 = the 2.00 purchase
    d2 = read_spec(FLEX / "one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv")
    assert d2.hourly["usage_hours"].sum() == 2 and d2.hourly["effective_cost"].sum() == 2
    assert d2.purchases["billed_cost"].sum() == 2 and d2.purchases["effective_cost"].sum() == 0
    # zero utilization: the unused commitment (EffectiveCost 1.50) and an on-demand medium VM; blank lines counted
    d3 = read_spec(FLEX / "zero_percent_utilization_without_commitment_discount_flexibility.csv")
    assert d3.hourly["pricing_category"].tolist() == ["Standard"] and d3.hourly["effective_cost"].sum() == 2
    assert d3.purchases[["charge_category", "billed_cost", "effective_cost", "line"]].values.tolist() == \
        [["Purchase", 1.5, 0.0, 2], ["Usage", 0.0, 1.5, 4]]
    d4 = read_spec(FLEX / "one_hundred_percent_utilization_without_commitment_discount_flexibility.csv")
    assert d4.hourly["effective_cost"].sum() == d4.purchases["billed_cost"].sum() == 1.5


# ----------------------------------------------------------------------------------- the synthetic month, 4 formats

def test_every_format_reads_the_synthetic_month_the_same():
    focus = U.read_usage(FIX / "synthetic_focus_1.0.csv")
    cur = U.read_usage(FIX / "synthetic_cur2.csv")
    az = U.read_usage(FIX / "synthetic_azure_cost_details.csv")
    hourly = U.read_usage(FIX / "synthetic_hourly.csv")
    for d in (focus, cur, az, hourly):
        check_counts(d)
        assert d.bad_rows == []
        assert d.period_start == pd.Timestamp("2024-09-01", tz="UTC")
        assert d.period_end == pd.Timestamp("2024-10-01", tz="UTC")
    f = per_key(focus.hourly)
    pd.testing.assert_frame_equal(per_key(cur.hourly), f.loc[["aws"]], check_exact=False)
    pd.testing.assert_frame_equal(per_key(az.hourly), f.loc[["azure"]], check_exact=False)
    pd.testing.assert_frame_equal(per_key(hourly.hourly), f, check_exact=False, atol=1e-5)
    # the known daily pattern
    u = f["usage_hours"]
    t = pd.Timestamp("2024-09-17 10:00", tz="UTC")
    assert u[("aws", "us-east-1", "p4d.24xlarge", t)] == 2
    assert u[("aws", "us-east-1", "p4d.24xlarge", t - pd.Timedelta(hours=8))] == 1
    assert u[("aws", "us-east-1", "g5.xlarge", t + pd.Timedelta(hours=3))] == 3
    assert ("aws", "us-east-1", "g5.xlarge", t) not in u.index
    assert (u.loc["azure"] == 1.5).all() and len(u.loc["azure"]) == 720
    assert u.groupby(level="instance_type").sum().to_dict() == \
        {"Standard_NC24ads_A100_v4": 1080.0, "g5.xlarge": 540.0, "p4d.24xlarge": 1080.0}
    # on-demand rates of the shipped snapshot
    assert cur.hourly["list_cost"].sum() == pytest.approx(cur.hourly["billed_cost"].sum())
    p4d = cur.hourly[cur.hourly["instance_type"] == "p4d.24xlarge"]
    assert (p4d["billed_cost"] / p4d["usage_hours"]).round(6).unique().tolist() == [21.957642]
    # non-GPU rows counted, not bad: m5.large, EBS, tax / D4s v3, disk
    assert cur.rows_not_gpu == 30 * 4 + 30 + 1 and az.rows_not_gpu == 60
    assert any("'10 Hours'" in n for n in az.notes)  # vm-b is billed in units of 10 hours


def test_parquet_reads_like_csv(tmp_path):
    for name in ("synthetic_cur2.csv", "synthetic_focus_1.0.csv"):
        df = pd.read_csv(FIX / name, dtype=str, keep_default_na=False)
        num = [c for c in df.columns if c in NUMERIC_COLUMNS["aws-cur-2.0"] or c in ("BilledCost", "EffectiveCost",
                                                                                  "ListCost", "ConsumedQuantity")]
        for c in num:
            df[c] = pd.to_numeric(df[c].replace({"": None, "NULL": None}))
        for c in ("line_item_usage_start_date", "line_item_usage_end_date", "ChargePeriodStart", "ChargePeriodEnd"):
            if c in df.columns:
                df[c] = pd.to_datetime(df[c], utc=True)
        p = tmp_path / name.replace(".csv", ".parquet")
        df.to_parquet(p, index=False)
        a, b = U.read_usage(FIX / name), U.read_usage(p)
        assert b.source_format == a.source_format
        pd.testing.assert_frame_equal(per_key(a.hourly), per_key(b.hourly), check_exact=False)


def test_lookback_keeps_the_last_days():
    d = U.read_usage(FIX / "synthetic_cur2.csv", lookback_days=7)
    assert d.period_start == pd.Timestamp("2024-09-24", tz="UTC")
    assert d.period_end == pd.Timestamp("2024-10-01", tz="UTC")
    assert d.hourly["usage_hours"].sum() == 7 * (36 + 18)
    assert any(n.startswith("lookback 7 days") for n in d.notes)
    d = U.read_usage(FIX / "synthetic_cur2.csv", lookback_days=0.5)
    assert d.period_start == pd.Timestamp("2024-09-30 12:00", tz="UTC")
    with pytest.raises(InputError) as e:
        U.read_usage(FIX / "synthetic_cur2.csv", lookback_days=-1)
    assert e.value.field == "lookback_days"


# ------------------------------------------------------------------------------------------ AWS CUR 2.0 by hand

CUR_HEADER = ["line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date",
              "line_item_usage_type", "line_item_usage_amount", "line_item_unblended_cost",
              "line_item_currency_code", "line_item_line_item_description", "product_instance_type",
              "product_region_code", "line_item_availability_zone", "pricing_term", "pricing_unit",
              "pricing_public_on_demand_cost", "reservation_reservation_a_r_n", "reservation_effective_cost",
              "reservation_unused_recurring_fee", "reservation_unused_amortized_upfront_fee_for_billing_period",
              "savings_plan_savings_plan_a_r_n", "savings_plan_savings_plan_effective_cost",
              "savings_plan_total_commitment_to_date", "savings_plan_used_commitment"]
RI = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-1"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-1"


def cur_rows() -> list[dict]:
    t0, t1 = "2024-09-02T10:00:00Z", "2024-09-02T11:00:00Z"
    base = {"line_item_usage_start_date": t0, "line_item_usage_end_date": t1, "line_item_currency_code": "USD",
            "product_region_code": "us-east-1", "pricing_unit": "Hrs"}
    return [
        {**base, "line_item_line_item_type": "Usage", "line_item_usage_type": "BoxUsage:g5.xlarge",
         "line_item_usage_amount": "1", "line_item_unblended_cost": "1.006", "product_instance_type": "g5.xlarge",
         "pricing_term": "OnDemand", "pricing_public_on_demand_cost": "1.006",
         "line_item_line_item_description": "$1.006 per On Demand Linux g5.xlarge Instance Hour"},
        {**base, "line_item_line_item_type": "DiscountedUsage", "line_item_usage_type": "BoxUsage:g5.xlarge",
         "line_item_usage_amount": "1", "line_item_unblended_cost": "0", "product_instance_type": "g5.xlarge",
         "pricing_term": "Reserved", "pricing_public_on_demand_cost": "1.006", "reservation_reservation_a_r_n": RI,
         "reservation_effective_cost": "0.6"},
        {**base, "line_item_line_item_type": "SavingsPlanCoveredUsage", "line_item_usage_type":
         "BoxUsage:p4d.24xlarge", "line_item_usage_amount": "1", "line_item_unblended_cost": "21.957642",
         "product_instance_type": "p4d.24xlarge", "pricing_term": "OnDemand", "pricing_public_on_demand_cost":
         "21.957642", "savings_plan_savings_plan_a_r_n": SP, "savings_plan_savings_plan_effective_cost": "15"},
        {**base, "line_item_line_item_type": "SavingsPlanNegation", "line_item_usage_type": "BoxUsage:p4d.24xlarge",
         "line_item_usage_amount": "0", "line_item_unblended_cost": "-21.957642", "product_instance_type":
         "p4d.24xlarge", "savings_plan_savings_plan_a_r_n": SP},
        {**base, "line_item_line_item_type": "Usage", "line_item_usage_type": "SpotUsage:g5.xlarge",
         "line_item_usage_amount": "0.5", "line_item_unblended_cost": "0.2", "product_instance_type": "",
         "product_region_code": "", "line_item_availability_zone": "us-west-2b", "pricing_term": "Spot"},
        {**base, "line_item_line_item_type": "RIFee", "line_item_usage_start_date": "2024-09-01T00:00:00Z",
         "line_item_usage_end_date": "2024-10-01T00:00:00Z", "line_item_usage_type": "HeavyUsage:g5.xlarge",
         "line_item_unblended_cost": "432", "product_instance_type": "g5.xlarge",
         "reservation_reservation_a_r_n": RI, "reservation_unused_recurring_fee": "5",
         "reservation_unused_amortized_upfront_fee_for_billing_period": "0"},
        {**base, "line_item_line_item_type": "SavingsPlanRecurringFee", "line_item_usage_start_date": t0,
         "line_item_unblended_cost": "100", "savings_plan_savings_plan_a_r_n": SP,
         "savings_plan_total_commitment_to_date": "100", "savings_plan_used_commitment": "80"},
        {**base, "line_item_line_item_type": "Refund", "line_item_unblended_cost": "-10",
         "reservation_reservation_a_r_n": RI},
        {**base, "line_item_line_item_type": "Credit", "line_item_unblended_cost": "-3",
         "line_item_line_item_description": "AWS Activate credit"},
        {**base, "line_item_line_item_type": "Tax", "line_item_unblended_cost": "7"},
        {**base, "line_item_line_item_type": "Usage", "line_item_usage_type": "BoxUsage:m5.large",
         "line_item_usage_amount": "1", "line_item_unblended_cost": "0.096", "product_instance_type": "m5.large"},
    ]


def write_cur(path: Path, rows: list[dict], header: list[str] = CUR_HEADER) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in header})
    return path


#: the account of each GPU usage row of cur_rows(): (line_item_usage_account_id, bill_payer_account_id)
CUR_ACCOUNTS = {("Usage", "BoxUsage:g5.xlarge"): ("210987654321", "111122223333"),
                ("DiscountedUsage", "BoxUsage:g5.xlarge"): ("", "111122223333"),  # falls back to the payer
                ("SavingsPlanCoveredUsage", "BoxUsage:p4d.24xlarge"): ("012345678901", "111122223333"),
                ("Usage", "SpotUsage:g5.xlarge"): ("210987654321", "111122223333")}


def write_cur_two_accounts(path: Path) -> Path:
    """cur_rows() with the usage account and payer columns: GPU usage in two member accounts (one with a leading
    zero) and one line with no usage account, which counts for the payer."""
    rows = []
    for r in cur_rows():
        usage, payer = CUR_ACCOUNTS.get((r["line_item_line_item_type"], r.get("line_item_usage_type")),
                                        ("210987654321", "111122223333"))
        rows.append({**r, "line_item_usage_account_id": usage, "bill_payer_account_id": payer})
    return write_cur(path, rows, CUR_HEADER + ["line_item_usage_account_id", "bill_payer_account_id"])


#: SubAccountId given to the synthetic FOCUS month's resources by write_focus_two_accounts (the others keep none)
FOCUS_SUB_ACCOUNTS = {"i-p4d-b": "444455556666", "i-g5-1": "444455556666", "i-g5-2": " 444455556666 ",
                      "/subscriptions/0000/resourcegroups/rg/providers/microsoft.compute/virtualmachines/vm-b":
                      "00000000-0000-0000-0000-00000000000b"}


def write_focus_two_accounts(path: Path) -> Path:
    """The synthetic FOCUS month (BillingAccountId 111122223333 throughout) with a SubAccountId column: i-p4d-b and
    two of the g5 instances run in sub account 444455556666 (once padded with spaces), the Azure VM vm-b in a
    subscription, the rest have none and count for the billing account; i-p4d-a and i-p4d-b share region, type and
    hours, so only the account splits them."""
    df = pd.read_csv(FIX / "synthetic_focus_1.0.csv", dtype=str, keep_default_na=False)
    df["SubAccountId"] = df["ResourceId"].map(FOCUS_SUB_ACCOUNTS).fillna("NULL")
    df.to_csv(path, index=False)
    return path


def test_cur_commitments_spot_fees_refunds(tmp_path):
    d = U.read_usage(write_cur(tmp_path / "cur.csv", cur_rows()))
    check_counts(d)
    # not used: the credit, the tax, m5.large, and the SavingsPlanNegation (covered usage is billed 0 instead)
    assert d.bad_rows == [] and d.rows_read == 11 and d.rows_not_gpu == 4
    h = d.hourly.set_index(["instance_type", "pricing_category"])
    assert h.loc[("g5.xlarge", "Standard"), "billed_cost"] == 1.006
    ri = h.loc[("g5.xlarge", "Committed")]
    assert (ri["commitment_id"], ri["billed_cost"], ri["effective_cost"], ri["list_cost"]) == (RI, 0, 0.6, 1.006)
    sp = h.loc[("p4d.24xlarge", "Committed")]
    assert (sp["commitment_id"], sp["billed_cost"], sp["effective_cost"], sp["usage_hours"]) == (SP, 0, 15, 1)
    spot = d.hourly[d.hourly["pricing_category"] == "Dynamic"].iloc[0]
    assert (spot["instance_type"], spot["region"], spot["usage_hours"]) == ("g5.xlarge", "us-west-2", 0.5)
    p = d.purchases
    assert p[["charge_category", "commitment_id", "billed_cost", "effective_cost"]].values.tolist() == [
        ["Purchase", RI, 432.0, 0.0], ["Usage", RI, 0.0, 5.0], ["Purchase", SP, 100.0, 0.0],
        ["Usage", SP, 0.0, 20.0], ["Adjustment", RI, -10.0, 0.0]]  # the RI refund is netted against its fee
    assert p["instance_type"].tolist()[:2] == ["g5.xlarge", "g5.xlarge"] and p["line"].tolist() == [7, 7, 8, 8, 9]
    notes = "\n".join(d.notes)
    assert "SavingsPlanCoveredUsage" in notes and "1 credit/refund/adjustment row(s) (total -3.00 USD)" in notes


def test_cur_bad_rows_have_their_file_lines(tmp_path):
    rows = cur_rows()[:1] * 5
    rows[1] = {**rows[1], "line_item_usage_start_date": "2024-09-02T30:00:00Z"}
    rows[2] = {**rows[2], "line_item_unblended_cost": "1,006"}
    rows[3] = {**rows[3], "line_item_line_item_type": "Mystery"}
    # a quoted description over two lines shifts every later row by one line
    rows[0] = {**rows[0], "line_item_line_item_description": "line one\nline two"}
    rows.append({**rows[4], "line_item_usage_end_date": "2024-09-02T09:00:00Z"})
    p = write_cur(tmp_path / "bad.csv", rows)
    d = U.read_usage(p)
    check_counts(d)
    assert [(b.line, b.reason) for b in d.bad_rows] == [
        (4, "line_item_usage_start_date does not parse"), (5, "line_item_unblended_cost is not a number"),
        (6, "line_item_line_item_type Mystery is unknown"), (8, "usage ends before it starts")]
    assert d.rows_gpu == 2 and d.hourly["usage_hours"].sum() == 2


def test_currency_other_than_usd_is_refused(tmp_path):
    rows = cur_rows()
    rows[-1] = {**rows[-1], "line_item_currency_code": "EUR"}
    with pytest.raises(InputError) as e:
        U.read_usage(write_cur(tmp_path / "eur.csv", rows))
    assert e.value.field == "currency" and "EUR and USD" in str(e.value) and e.value.accepted == "USD"
    text = SAMPLE.read_text().replace('"USD"', '"JPY"')
    p = tmp_path / "jpy.csv"
    p.write_text(text)
    with pytest.raises(InputError, match="JPY"):
        U.read_usage(p)


# ----------------------------------------------------------------------------------------- Azure cost details by hand

AZ_HEADER = ["Date", "MeterCategory", "MeterSubCategory", "MeterName", "ProductName", "ResourceLocation", "Quantity",
             "UnitOfMeasure", "EffectivePrice", "PayGPrice", "CostInBillingCurrency", "BillingCurrency",
             "ConsumedService", "AdditionalInfo", "ChargeType", "PricingModel", "ReservationId"]


def test_azure_reservations_spot_units_and_regions(tmp_path):
    vm = {"MeterCategory": "Virtual Machines", "MeterSubCategory": "NCads A100 v4 Series",
          "ConsumedService": "Microsoft.Compute", "BillingCurrency": "USD", "ChargeType": "Usage"}
    rows = [
        {**vm, "Date": "2024-09-02", "MeterName": "NC24ads A100 v4", "ResourceLocation": "US East 2", "Quantity": "2.4",
         "UnitOfMeasure": "10 Hours", "EffectivePrice": "36.73", "PayGPrice": "36.73",
         "CostInBillingCurrency": "88.152", "PricingModel": "OnDemand"},
        {**vm, "Date": "09/02/2024", "MeterName": "NC24ads A100 v4 Spot", "ResourceLocation": "eastus",
         "Quantity": "24", "UnitOfMeasure": "1 Hour", "CostInBillingCurrency": "12", "PricingModel": "Spot"},
        {**vm, "Date": "09/02/2024", "MeterName": "NC24ads A100 v4", "ResourceLocation": "EastUS", "Quantity": "24",
         "UnitOfMeasure": "1 Hour", "EffectivePrice": "2.2", "CostInBillingCurrency": "52.8",
         "PricingModel": "Reservation", "ReservationId": "r-1",
         "AdditionalInfo": json.dumps({"ServiceType": "Standard_NC24ads_A100_v4"})},
        {**vm, "Date": "09/02/2024", "MeterName": "NC24ads A100 v4", "ResourceLocation": "EastUS", "Quantity": "24",
         "UnitOfMeasure": "1 Hour", "EffectivePrice": "0", "CostInBillingCurrency": "0",
         "PricingModel": "Reservation", "ReservationId": "r-2"},
        {"Date": "09/02/2024", "ChargeType": "UnusedReservation", "MeterCategory": "Virtual Machines",
         "MeterName": "NC24ads A100 v4", "ConsumedService": "Microsoft.Compute", "ResourceLocation": "EastUS",
         "Quantity": "3", "UnitOfMeasure": "1 Hour", "CostInBillingCurrency": "6.6", "BillingCurrency": "USD",
         "PricingModel": "Reservation", "ReservationId": "r-1"},
        {"Date": "09/01/2024", "ChargeType": "Purchase", "ProductName":
         "Reserved VM Instance, Standard_NC24ads_A100_v4, US East, 1 Year", "CostInBillingCurrency": "19272",
         "BillingCurrency": "USD", "PricingModel": "Reservation", "ReservationId": "r-1"},
        {"Date": "09/15/2024", "ChargeType": "Refund", "ProductName":
         "Reserved VM Instance, Standard_NC24ads_A100_v4, US East, 1 Year", "CostInBillingCurrency": "-1000",
         "BillingCurrency": "USD", "PricingModel": "Reservation", "ReservationId": "r-1"},
        {**vm, "Date": "09/31/2024", "MeterName": "NC24ads A100 v4", "ResourceLocation": "EastUS", "Quantity": "1",
         "UnitOfMeasure": "1 Hour", "CostInBillingCurrency": "3.673", "PricingModel": "OnDemand"},
    ]
    p = tmp_path / "az.csv"
    with open(p, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=AZ_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows([{k: r.get(k, "") for k in AZ_HEADER} for r in rows])
    d = U.read_usage(p)
    check_counts(d)
    assert d.source_format == "azure-cost-details"
    assert [(b.line, b.reason) for b in d.bad_rows] == [(9, "Date does not parse")]  # September has 30 days
    h = d.hourly.groupby(["region", "pricing_category", "commitment_id"])[
        ["usage_hours", "billed_cost", "effective_cost", "list_cost"]].sum(min_count=1)
    assert set(d.hourly["instance_type"]) == {"Standard_NC24ads_A100_v4"}
    od = h.loc[("eastus2", "Standard", "")]
    assert od["usage_hours"] == pytest.approx(24) and od["list_cost"] == pytest.approx(88.152)
    assert h.loc[("eastus", "Dynamic", ""), "usage_hours"] == pytest.approx(24)
    r1 = h.loc[("eastus", "Committed", "r-1")]
    assert (r1["billed_cost"], r1["effective_cost"]) == (0, pytest.approx(52.8))
    assert math.isnan(h.loc[("eastus", "Committed", "r-2"), "effective_cost"])  # actual-cost export: unknown
    assert d.hourly["hour"].min() == pd.Timestamp("2024-09-02", tz="UTC") and len(d.hourly) == 4 * 24
    pur = d.purchases
    assert pur[["charge_category", "instance_type", "billed_cost", "effective_cost"]].values.tolist() == [
        ["Usage", "Standard_NC24ads_A100_v4", 0.0, 6.6], ["Purchase", "Standard_NC24ads_A100_v4", 19272.0, 0.0],
        ["Adjustment", "Standard_NC24ads_A100_v4", -1000.0, 0.0]]  # refund of r-1: netted, not a negative cost
    notes = "\n".join(d.notes)
    assert "'10 Hours'" in notes and "actual-cost export" in notes


# ------------------------------------------------------------------------------------------------ GPU identification

def test_gpu_instance_rules():
    assert U.default_is_gpu_instance("aws", "p4d.24xlarge") and U.default_is_gpu_instance("aws", "g3.4xlarge")
    assert U.default_is_gpu_instance("aws", "p6-b200.48xlarge") and U.default_is_gpu_instance("aws", "g6f.2xlarge")
    assert not U.default_is_gpu_instance("aws", "m5.large") and not U.default_is_gpu_instance("aws", "c7g.xlarge")
    assert U.default_is_gpu_instance("azure", "Standard_ND96isr_H100_v5")
    assert not U.default_is_gpu_instance("azure", "Standard_D4s_v3")
    assert U.default_is_gpu_instance("gcp", "a3-highgpu-8g") and U.default_is_gpu_instance("gcp", "g2-standard-4")
    assert not U.default_is_gpu_instance("gcp", "n2-standard-8")
    assert U.default_is_gpu_instance("lambda", "gpu_8x_h100_sxm5")
    assert U.azure_size_from_meter("NC24ads A100 v4") == "Standard_NC24ads_A100_v4"
    assert U.azure_size_from_meter("NC24ads A100 v4 Low Priority") == "Standard_NC24ads_A100_v4"
    assert U.azure_size_from_meter("D11 v2/DS11 v2") == "Standard_D11_v2"
    assert U.azure_size_from_meter("Standard IPv4 Static Public IP") == ""
    assert U.aws_type_from_usage_type("USE1-BoxUsage:p4d.24xlarge") == "p4d.24xlarge"
    assert U.azure_region("US East 2") == "eastus2" and U.azure_region("EastUS") == "eastus"


def test_focus_instance_type_sources_and_unattributable_gpu_rows(tmp_path):
    head = ("BilledCost,EffectiveCost,BillingCurrency,ChargeCategory,ChargePeriodStart,ChargePeriodEnd,"
            "ConsumedQuantity,ConsumedUnit,PricingCategory,ProviderName,RegionId,ChargeDescription,x_UsageType\n")
    body = textwrap.dedent("""\
        32.77,32.77,USD,Usage,2024-09-02T00:00:00Z,2024-09-02T01:00:00Z,1,Hours,Standard,AWS,us-east-1,Box usage,USE1-BoxUsage:p4d.24xlarge
        0,0,USD,Usage,2024-09-02T00:00:00Z,2024-09-02T01:00:00Z,1,Hours,Standard,AWS,us-east-1,"$0.00 for 19000 Mbps per p4d.24xlarge instance-hour (or partial hour)",
        1.2,1.2,USD,Usage,2024-09-02T00:00:00Z,2024-09-02T01:00:00Z,12,Hours,Standard,Google Cloud,us-central1,A2 Instance Core running in Americas,
        2.9,2.9,USD,Usage,2024-09-02T00:00:00Z,2024-09-02T01:00:00Z,1,Hours,Standard,Google Cloud,us-central1,Nvidia Tesla A100 GPU running in Americas,
        14.7,14.7,USD,Usage,2024-09-02T00:00:00Z,2024-09-02T10:00:00Z,10,10 Hours,Standard,Microsoft,eastus,Virtual Machines NCads A100 v4 Series - NC24ads A100 v4 - US East,
        """)
    # the last row: 10 units of "10 Hours" = 100 instance-hours over 10 clock hours (10 VMs), scaled to single hours
    p = tmp_path / "f.csv"
    p.write_text(head + body)
    d = U.read_usage(p)
    check_counts(d)
    types = d.hourly.groupby("instance_type")["usage_hours"].sum().to_dict()
    assert types == {"p4d.24xlarge": 1.0, "nvidia-tesla-a100": 1.0, "Standard_NC24ads_A100_v4": pytest.approx(100)}
    assert [(b.line, b.reason.split(":")[0]) for b in d.bad_rows] == [(4, "no_instance_type")]
    assert d.rows_not_gpu == 1  # the EBS-optimized line names a GPU type but is not instance usage
    assert any("GPU-hours" in n for n in d.notes)


def test_load_sql_names_the_files_and_they_take_parameters_not_placeholders():
    with pytest.raises(InputError) as e:
        U.load_sql("../usage.py")
    assert e.value.field == "sql" and "spark_focus_hourly_usage.sql" in str(e.value)
    texts = {f.name: f.read_text() for f in U.SQL_DIR.glob("*.sql")}
    assert all("{{" not in s and "window_start" in s and "window_end" in s for s in texts.values())
    assert ":start" in texts["spark_focus_hourly_usage.sql"] and "@start" in texts["bigquery_focus_hourly_usage.sql"]
    assert "CAST(? AS TIMESTAMP)" in texts["athena_cur2_hourly_gpu_usage.sql"]
    for f in U.SQL_DIR.glob("*.sql"):
        assert "\\" not in f.read_text(), f.name  # one regex text for every dialect


# ------------------------------------------------------------------------------------ warehouse SQL run in DuckDB

def duckdb_connection():
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    # DuckDB spellings of the Trino/Spark functions the SQL files use
    con.execute("CREATE MACRO regexp_like(s, p) AS regexp_matches(s, p)")
    con.execute("CREATE MACRO sequence(a, b, st) AS generate_series(a, b, st)")
    con.execute("CREATE MACRO unix_timestamp(t) AS epoch(t)")
    return con


#: account columns the SQL reads that an export may lack (SubAccountId is conditional in FOCUS; the hand-made CUR
#: files have no account columns, which a real CUR 2.0 always has); the reader takes a missing one as ''
SQL_ACCOUNT_COLUMNS = {"focus": ("SubAccountId", "BillingAccountId"),
                       "cur": ("line_item_usage_account_id", "bill_payer_account_id")}


def csv_view(con, view: str, csv_path: Path, add_accounts: bool = True) -> None:
    """The CSV as a DuckDB view of strings (empty and NULL/null fields as SQL NULL); with ``add_accounts`` the
    account columns the SQL reads that the file lacks are added as NULL, as the BigQuery file's header tells users
    to do with their view (the Spark file takes ``sub_account_column`` instead)."""
    with open(csv_path, newline="") as fh:
        header = next(csv.reader(fh))
    extra = "".join(f", CAST(NULL AS VARCHAR) AS {c}" for c in SQL_ACCOUNT_COLUMNS[view]
                    if c not in header and add_accounts)
    con.execute(f"CREATE VIEW {view} AS SELECT *{extra} FROM read_csv('{csv_path}', all_varchar=true, header=true, "
                "nullstr=['NULL', 'null', ''])")


def duckdb_sql(name: str, view: str, sub_account_column: str = "SubAccountId") -> str:
    """The SQL file in DuckDB's spelling. The Spark file: explode( -> unnest(, the named parameter markers :start /
    :end -> DuckDB's $start / $end (still bound as parameters), IDENTIFIER(:table) and
    IDENTIFIER(:sub_account_column) -> the names (DuckDB has no identifier clause). The Athena file runs as written
    (its positional ? are DuckDB's too)."""
    sql = U.load_sql(name)
    if name.startswith("spark"):
        sql = sql.replace("explode(", "unnest(").replace("IDENTIFIER(:table)", view)
        sql = sql.replace("IDENTIFIER(:sub_account_column)", sub_account_column)
        sql = re.sub(r":(start|end)\b", r"$\1", sql)
    return sql


def sql_params(name: str, start: str, end: str):
    """The window as the file's parameters: Athena's positional ?, the others' named ones."""
    return [start, end] if name.startswith("athena") else {"start": start, "end": end}


def run_sql(name: str, csv_path: Path, view: str, start: str = "2000-01-01", end: str = "2100-01-01",
            everything: bool = False) -> pd.DataFrame:
    """The SQL file run in DuckDB over the CSV with the window as real parameters. The rows of GPU usage (the
    hours-covered rows, instance_type NULL, and the window columns dropped) unless ``everything``. An export
    without SubAccountId runs with sub_account_column BillingAccountId, as the Spark file's header says."""
    con = duckdb_connection()
    with open(csv_path, newline="") as fh:
        has_sub = "SubAccountId" in next(csv.reader(fh))
    csv_view(con, view, csv_path, add_accounts=view != "focus")
    sql = duckdb_sql(name, view, "SubAccountId" if has_sub else "BillingAccountId")
    out = con.execute(sql, sql_params(name, start, end)).df()
    for c in ("hour", "window_start", "window_end"):
        out[c] = pd.to_datetime(out[c]).dt.tz_localize("UTC")
    if everything:
        return out
    return out[out["instance_type"].notna()].drop(columns=["window_start", "window_end"]).reset_index(drop=True)


def compare_sql_python(sql_out: pd.DataFrame, d: U.UsageData) -> None:
    """The SQL's hourly usage equals the reader's per (provider, region, instance_type, pricing_category,
    account_id, hour); the reader's commitment_id split is summed away (the SQL has none)."""
    cols = ["usage_hours", "billed_cost", "effective_cost", "list_cost"]
    key = ["provider", "region", "instance_type", "pricing_category", "account_id", "hour"]
    a = sql_out.groupby(key)[cols].sum(min_count=1).sort_index()
    b = d.hourly.groupby(key)[cols].sum(min_count=1).sort_index()
    assert len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fixture", ["focus_sample_1.0.csv", "synthetic_focus_1.0.csv"])
def test_spark_focus_sql_equals_python(fixture):
    out = run_sql("spark_focus_hourly_usage.sql", FIX / fixture, "focus")
    compare_sql_python(out, U.read_usage(FIX / fixture))
    # one account each: the sample's SubAccountId, the synthetic month's BillingAccountId (it has no SubAccountId)
    assert set(out["account_id"]) == {"focus_sample_1.0.csv": {"11353890204"},
                                      "synthetic_focus_1.0.csv": {"111122223333"}}[fixture]


def focus_account_hours(h: pd.DataFrame) -> dict:
    return {k: round(v, 6) for k, v in h.groupby(["account_id", "instance_type"])["usage_hours"].sum().items()}


#: GPU hours per (account, instance type) of write_focus_two_accounts, from the synthetic month's ConsumedQuantity
#: per resource: i-p4d-a 720 h, i-p4d-b 360 h, i-g5-1/2/3 180 h each, vm-a 720 h, vm-b 360 h
FOCUS_TWO_ACCOUNT_HOURS = {("00000000-0000-0000-0000-00000000000b", "Standard_NC24ads_A100_v4"): 360.0,
                           ("111122223333", "Standard_NC24ads_A100_v4"): 720.0,
                           ("111122223333", "g5.xlarge"): 180.0,
                           ("111122223333", "p4d.24xlarge"): 720.0,
                           ("444455556666", "g5.xlarge"): 360.0,
                           ("444455556666", "p4d.24xlarge"): 360.0}


def test_spark_focus_sql_splits_accounts_as_python(tmp_path):
    p = write_focus_two_accounts(tmp_path / "focus_two_accounts.csv")
    out, d = run_sql("spark_focus_hourly_usage.sql", p, "focus"), U.read_usage(p)
    compare_sql_python(out, d)
    assert focus_account_hours(out) == focus_account_hours(d.hourly) == FOCUS_TWO_ACCOUNT_HOURS


def test_athena_cur_sql_equals_python(tmp_path):
    out = run_sql("athena_cur2_hourly_gpu_usage.sql", FIX / "synthetic_cur2.csv", "cur")
    compare_sql_python(out, U.read_usage(FIX / "synthetic_cur2.csv"))
    assert set(out["account_id"]) == {""}  # no account columns in the file: '' as the reader
    p = write_cur(tmp_path / "cur.csv", cur_rows())
    compare_sql_python(run_sql("athena_cur2_hourly_gpu_usage.sql", p, "cur"), U.read_usage(p))


#: GPU hours per (account, instance type, pricing category) of write_cur_two_accounts
CUR_TWO_ACCOUNT_HOURS = {("012345678901", "p4d.24xlarge", "Committed"): 1.0,
                         ("111122223333", "g5.xlarge", "Committed"): 1.0,
                         ("210987654321", "g5.xlarge", "Dynamic"): 0.5,
                         ("210987654321", "g5.xlarge", "Standard"): 1.0}


def cur_account_hours(h: pd.DataFrame) -> dict:
    return h.groupby(["account_id", "instance_type", "pricing_category"])["usage_hours"].sum().to_dict()


def test_athena_cur_sql_splits_accounts_as_python(tmp_path):
    p = write_cur_two_accounts(tmp_path / "cur_two_accounts.csv")
    out, d = run_sql("athena_cur2_hourly_gpu_usage.sql", p, "cur"), U.read_usage(p)
    compare_sql_python(out, d)
    assert cur_account_hours(out) == cur_account_hours(d.hourly) == CUR_TWO_ACCOUNT_HOURS


def _write_hourly(out: pd.DataFrame, p: Path) -> Path:
    iso = {c: out[c].dt.strftime("%Y-%m-%dT%H:%M:%SZ") for c in ("hour", "window_start", "window_end")}
    out.assign(**iso).to_csv(p, index=False)
    return p


def test_sql_output_reads_back_as_hourly(tmp_path):
    out = run_sql("spark_focus_hourly_usage.sql", FIX / "synthetic_focus_1.0.csv", "focus", "2024-09-01",
                  "2024-10-01", everything=True)
    p = _write_hourly(out, tmp_path / "hourly.csv")
    d = U.read_usage(p)
    ref = U.read_usage(FIX / "synthetic_focus_1.0.csv")
    assert d.source_format == "hourly" and d.bad_rows == []
    pd.testing.assert_frame_equal(per_key(d.hourly), per_key(ref.hourly), check_exact=False)
    # the window and the hours covered travel with the data: the same coverage as the export read directly
    assert (d.coverage_start, d.coverage_end, d.covered_days) == (ref.coverage_start, ref.coverage_end,
                                                                  ref.covered_days)
    assert (str(d.period_start), str(d.period_end)) == ("2024-09-01 00:00:00+00:00", "2024-10-01 00:00:00+00:00")
    assert d.rows_not_gpu == 720  # one hours-covered row per hour of September 2024
    # the accounts survive the round trip, a payer's leading zero included
    for name, src, view in (("spark_focus_hourly_usage.sql", write_focus_two_accounts(tmp_path / "f.csv"), "focus"),
                            ("athena_cur2_hourly_gpu_usage.sql", write_cur_two_accounts(tmp_path / "c.csv"), "cur")):
        _write_hourly(run_sql(name, src, view, "2024-09-01", "2024-10-01", everything=True), p)
        back = U.read_usage(p, fmt="hourly")
        assert back.bad_rows == [] and ("012345678901" in set(back.hourly["account_id"])) == (view == "cur")
        compare_sql_python(back.hourly, U.read_usage(src))


# --------------------------------------------------------------------------------------------- streaming / memory

BIG_ROWS = 1_000_000
MEASURE = textwrap.dedent("""
    import json, sys, time
    from providers.usage import read_usage

    def hwm():  # this process's own peak RSS (KiB): VmHWM is per address space, new at exec; ru_maxrss is not
        # (Linux keeps the parent's across fork and exec: a 1.4 GiB pytest made the reader look 1.4 GiB)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    base = hwm()
    t = time.time()
    d = read_usage(sys.argv[1], is_gpu_instance=lambda p, t: t.startswith(("p", "g")))
    s = time.time() - t
    h = d.hourly.groupby("instance_type")[["usage_hours", "billed_cost"]].sum()
    print(json.dumps({"seconds": s, "peak_kib": hwm(),
                      "base_kib": base, "rows": d.rows_read, "gpu": d.rows_gpu, "hourly_rows": len(d.hourly),
                      "hours": h["usage_hours"].to_dict(), "cost": h["billed_cost"].to_dict()}))
""")


def test_streaming_memory(tmp_path):
    """A 1,000,000-row CUR-like CSV (~140 MB) is read in batches: the aggregate is exact and the reading process
    peaks far below 2 GiB (measured in a fresh process by its VmHWM: ~0.45 GiB, of which ~0.1 GiB is Python,
    pandas and pyarrow themselves)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(7)
    types = np.array(["p4d.24xlarge", "g5.xlarge", "m5.large", "c5.xlarge", "g6e.12xlarge"])
    rates = np.array([21.957642, 1.006, 0.096, 0.17, 10.49264])
    ti = rng.integers(0, len(types), BIG_ROWS)
    hr = rng.integers(0, 720, BIG_ROWS)
    st = np.datetime64("2024-09-01T00:00:00") + hr.astype("timedelta64[h]")
    amount = np.round(rng.uniform(0.1, 1.0, BIG_ROWS), 4)
    cost = np.round(amount * rates[ti], 6)
    tz = lambda a: pa.compute.binary_join_element_wise(pa.array(np.datetime_as_string(a, unit="s")), "Z", "")
    table = pa.table({
        "line_item_line_item_type": pa.array(np.full(BIG_ROWS, "Usage")),
        "line_item_usage_start_date": tz(st), "line_item_usage_end_date": tz(st + np.timedelta64(1, "h")),
        "line_item_usage_type": pa.array(np.char.add("BoxUsage:", types[ti])),
        "line_item_usage_amount": amount, "line_item_unblended_cost": cost,
        "line_item_currency_code": pa.array(np.full(BIG_ROWS, "USD")),
        "product_instance_type": pa.array(types[ti]), "product_region_code": pa.array(np.full(BIG_ROWS, "us-east-1")),
        "line_item_resource_id": pa.array(np.char.add("i-", (np.arange(BIG_ROWS) % 5000).astype(str)))})
    path = tmp_path / "big_cur.csv"
    pcsv.write_csv(table, path, pcsv.WriteOptions(quoting_style="none"))
    del table
    r = subprocess.run([sys.executable, "-c", MEASURE, str(path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["rows"] == BIG_ROWS
    gpu = np.isin(types[ti], ["p4d.24xlarge", "g5.xlarge", "g6e.12xlarge"])
    assert m["gpu"] == int(gpu.sum())
    for t in ("p4d.24xlarge", "g5.xlarge", "g6e.12xlarge"):
        sel = types[ti] == t
        assert m["hours"][t] == pytest.approx(amount[sel].sum(), rel=1e-9)
        assert m["cost"][t] == pytest.approx(cost[sel].sum(), rel=1e-9)
    assert m["hourly_rows"] == 3 * 720
    assert m["peak_kib"] < 1024 * 1024, m  # < 1 GiB, half the 2 GiB budget


def test_accounts_are_read_in_every_format(tmp_path):
    # the account that ran the usage (FOCUS SubAccountId else BillingAccountId; CUR line_item_usage_account_id;
    # Azure SubscriptionId else BillingAccountId; hourly account_id), for `gpuopt review --scope account`
    focus = U.read_usage(FIX / "synthetic_focus_1.0.csv")  # no SubAccountId column: the billing account
    assert set(focus.hourly["account_id"]) == {"111122223333"}
    az = U.read_usage(FIX / "synthetic_azure_cost_details.csv")  # no SubscriptionId column: the billing account
    assert set(az.hourly["account_id"]) == {"12345678"}
    rows = list(csv.reader((FIX / "synthetic_cur2.csv").open()))
    head, body = rows[0], rows[1:]
    f = tmp_path / "cur_accounts.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head + ["line_item_usage_account_id", "bill_payer_account_id"])
        for i, r in enumerate(body):
            w.writerow(r + [("" if i % 2 else "222222222222"), "999999999999"])
    cur = U.read_usage(f)
    assert set(cur.hourly["account_id"]) == {"222222222222", "999999999999"}
    assert cur.hourly["usage_hours"].sum() == pytest.approx(U.read_usage(FIX / "synthetic_cur2.csv").hourly["usage_hours"].sum())
    hourly = tmp_path / "h.csv"
    hourly.write_text("provider,region,instance_type,hour,usage_hours,billed_cost,effective_cost,account_id\n"
                      "aws,us-east-1,p4d.24xlarge,2024-09-01T00:00:00Z,1,21.96,21.96,333\n"
                      "aws,us-east-1,p4d.24xlarge,2024-09-01T00:00:00Z,1,21.96,21.96,444\n")
    h = U.read_usage(hourly, window=("2024-09-01", "2024-09-02")).hourly  # no window columns: given (issue 32)
    assert sorted(h["account_id"]) == ["333", "444"] and h["usage_hours"].sum() == 2


def test_coverage_comes_from_every_service():
    # the real FOCUS sample: GPU usage from 2024-09-12 01:00, but the export's hourly/daily rows cover September
    d = U.read_usage(SAMPLE)
    assert d.period_start == pd.Timestamp("2024-09-12 01:00", tz="UTC")
    assert (d.coverage_start, d.coverage_end) == (pd.Timestamp("2024-09-01", tz="UTC"), pd.Timestamp("2024-10-01", tz="UTC"))
    assert len(d.covered_days) == 30
