"""Billing-export readers at their input boundary (issue 13, points 1, 2 and 5): every bad file gets a result with
bad rows or a one-line InputError naming the file, in bounded time; a refund of a commitment is netted against its
purchase. Every file is built in the test; amounts are test values (an 8,760 USD savings-plan upfront fee is 1 USD/h
for a year; a 20,000 USD Azure reservation), not prices."""

from __future__ import annotations

import csv
import gzip
import math
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuopt.kernel.errors import GpuoptError, InputError
from providers import usage as U

FIX = Path(__file__).parent / "fixtures" / "usage"
SYN = FIX / "synthetic_focus_1.0.csv"
SAMPLE = FIX / "focus_sample_1.0.csv"
SP = "arn:aws:savingsplans::111122223333:savingsplan/sp-1"


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def synthetic() -> pd.DataFrame:
    return pd.read_csv(SYN, dtype=str, keep_default_na=False)


# ------------------------------------------------------------------------------------------- files that break

def test_truncated_csv_gz_is_one_line_naming_the_file(tmp_path):
    gz = gzip.compress(SYN.read_bytes())
    p = tmp_path / "export.csv.gz"
    p.write_bytes(gz[: len(gz) // 2])
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert "export.csv.gz" in one_line(e) and e.value.field == "usage"


def test_a_whole_csv_gz_still_reads(tmp_path):
    p = tmp_path / "export.csv.gz"
    p.write_bytes(gzip.compress(SYN.read_bytes()))
    assert U.read_usage(p).rows_read == U.read_usage(SYN).rows_read


def test_folder_with_a_corrupt_parquet_part_names_the_part(tmp_path):
    synthetic().to_parquet(tmp_path / "part-0.parquet")
    (tmp_path / "part-1.parquet").write_bytes(b"PAR1" + b"\x00garbage" * 50 + b"PAR1")
    with pytest.raises(InputError) as e:
        U.read_usage(tmp_path)
    text = one_line(e)
    assert "part-1.parquet" in text and "not a readable Parquet file" in text and "mixes" not in text


def test_parquet_with_a_corrupt_data_page_names_the_file(tmp_path):
    p = tmp_path / "part-0.parquet"
    synthetic().to_parquet(p, compression="snappy")
    b = bytearray(p.read_bytes())
    for i in range(8, len(b) // 2):  # the data pages; the footer (schema) at the end stays whole
        b[i] ^= 0x5A
    p.write_bytes(bytes(b))
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert "part-0.parquet" in one_line(e)


def test_duplicate_columns_are_refused_naming_the_column(tmp_path):
    df = synthetic()
    p = tmp_path / "dup.csv"
    text = SYN.read_text().splitlines()
    p.write_text("\n".join([text[0] + ",BilledCost"] + [t + ",0" for t in text[1:]]) + "\n")
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert "'BilledCost' appears twice (columns 1 and 28)" in one_line(e)
    assert len(df.columns) == 27
    q = tmp_path / "dup_case.csv"
    q.write_text("\n".join([text[0] + ",billedcost"] + [t + ",0" for t in text[1:]]) + "\n")
    with pytest.raises(InputError, match="'billedcost' appears twice"):
        U.read_usage(q)


def test_header_names_with_spaces_are_stripped(tmp_path):
    text = SYN.read_text().splitlines()
    p = tmp_path / "spaces.csv"
    p.write_text("\n".join([text[0].replace("BilledCost", "BilledCost ").replace("ChargePeriodEnd", " ChargePeriodEnd")]
                           + text[1:]) + "\n")
    a, b = U.read_usage(p), U.read_usage(SYN)
    assert a.hourly["billed_cost"].sum() == pytest.approx(b.hourly["billed_cost"].sum())
    assert a.hourly["billed_cost"].sum() > 0 and a.bad_rows == b.bad_rows


def test_utf8_with_bom_reads_like_without(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + SYN.read_bytes())
    assert U.read_usage(p).hourly.equals(U.read_usage(SYN).hourly)


def test_latin1_byte_in_an_unread_cur_column_is_read(tmp_path):
    # CUR 2.0 has ~130 columns and gpuopt reads ~30: a column it never reads is not decoded (as pyarrow and DuckDB
    # decode only the columns they project), so a legacy byte in a tag does not stop the review
    lines = (FIX / "synthetic_cur2.csv").read_bytes().rstrip(b"\n").split(b"\n")
    out = [lines[0] + b",resource_tags"] + [ln + (b",caf\xe9" if i == 1 else b",x")
                                            for i, ln in enumerate(lines[1:], 1)]
    p = tmp_path / "cur_latin1.csv"
    p.write_bytes(b"\n".join(out) + b"\n")
    a, b = U.read_usage(p), U.read_usage(FIX / "synthetic_cur2.csv")
    assert a.rows_read == b.rows_read and a.hourly.equals(b.hourly) and len(a.purchases) == len(b.purchases)


def test_latin1_byte_in_a_read_column_is_one_line_naming_file_and_line(tmp_path):
    lines = SYN.read_bytes().rstrip(b"\n").split(b"\n")
    lines[3] = lines[3].replace(b"Instance Hour", b"Instance Hour \xe9", 1)
    p = tmp_path / "focus_latin1.csv"
    p.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert "focus_latin1.csv line 4" in one_line(e) and "not UTF-8" in str(e.value)


def test_latin1_header_is_one_line(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes(SYN.read_bytes().replace(b"BilledCost", b"BilledCost\xe9", 1))
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert "h.csv line 1: not UTF-8" in one_line(e)


@pytest.mark.parametrize("when,column", [("0001-01-01T00:00:00Z", "ChargePeriodStart"),
                                         ("1970-01-01T00:00:00Z", "ChargePeriodStart"),
                                         ("9999-12-31T00:00:00Z", "ChargePeriodEnd")])
def test_a_row_dated_far_away_is_a_bad_row_not_a_decades_window(tmp_path, when, column):
    df = synthetic()
    df.loc[0, column] = when  # line 2: a p4d.24xlarge usage row
    p = tmp_path / "far.csv"
    df.to_csv(p, index=False)
    t = time.monotonic()
    d = U.read_usage(p)
    assert time.monotonic() - t < 20
    lo, hi = U.date_window()
    assert [(b.line, b.reason) for b in d.bad_rows] == [
        (2, f"{column} is outside the accepted dates 2000-01-01 .. {hi:%Y-%m-%d}")]
    assert d.period_start == pd.Timestamp("2024-09-01", tz="UTC")
    assert d.period_end == pd.Timestamp("2024-10-01", tz="UTC")
    assert d.coverage_end - d.coverage_start <= pd.Timedelta(days=31)


@pytest.mark.parametrize("when", ["0001-01-01", "1970-01-01", "9999-12-31"])
def test_azure_row_dated_far_away_is_a_bad_row(tmp_path, when):
    src = FIX / "synthetic_azure_cost_details.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df.loc[0, "Date"] = when
    p = tmp_path / "az.csv"
    df.to_csv(p, index=False)
    d = U.read_usage(p)
    ref = U.read_usage(src)
    assert [b.line for b in d.bad_rows] == [2] and "Date is outside the accepted dates" in d.bad_rows[0].reason
    assert d.period_end - d.period_start <= ref.period_end - ref.period_start


def test_a_million_columns_fail_fast(tmp_path):
    p = tmp_path / "wide.csv"
    text = SYN.read_text().splitlines()
    extra = ",".join(f"x_{i}" for i in range(1_000_000))
    p.write_text(text[0] + "," + extra + "\n" + text[1] + "," + ",".join("" for _ in range(1_000_000)) + "\n")
    t = time.monotonic()
    with pytest.raises(InputError) as e:
        U.read_usage(p)
    assert time.monotonic() - t < 10
    assert "wide.csv: header line longer than 1,048,576 characters" in one_line(e)
    q = tmp_path / "wide2.csv"  # a header under the length limit, over the column limit
    q.write_text(text[0] + "," + ",".join(f"x{i}" for i in range(3000)) + "\n" + text[1] + "," * 3000 + "\n")
    with pytest.raises(InputError) as e:
        U.read_usage(q)
    assert "wide2.csv has 3,027 columns, more than 2,000" in one_line(e)


def test_infinite_or_huge_costs_are_bad_rows(tmp_path):
    df = synthetic()
    df.loc[0, "BilledCost"] = "inf"
    df.loc[2, "BilledCost"] = "1e400"
    df.loc[3, "EffectiveCost"] = "-1e300"
    p = tmp_path / "inf.csv"
    df.to_csv(p, index=False)
    d = U.read_usage(p)
    assert [(b.line, b.reason) for b in d.bad_rows] == [
        (2, "BilledCost is not a number"), (4, "BilledCost is not a number"), (5, "EffectiveCost is not a number")]
    assert all(math.isfinite(x) for x in d.hourly[["billed_cost", "effective_cost"]].to_numpy().ravel())


def test_an_infinite_quantity_is_a_bad_row_not_demand_of_one(tmp_path):
    """Issue 13: "quantity inf reported as 'demand: value 1'": a usage quantity that is not finite is a bad row
    naming its column; the review goes on with the other rows."""
    df = synthetic()
    i = df.index[df["ChargeDescription"].astype(str).str.contains("p4d")][0]
    df.loc[i, ["ConsumedQuantity", "PricingQuantity"]] = "inf"
    p = tmp_path / "qinf.csv"
    df.to_csv(p, index=False)
    d = U.read_usage(p)
    assert [(b.line, b.reason) for b in d.bad_rows] == [(i + 2, "ConsumedQuantity is not a number")]
    assert math.isfinite(d.hourly["usage_hours"].sum()) and d.hourly["usage_hours"].max() <= 3.0  # 3 instances at most


# ---------------------------------------------------------------------------------------------- refunds netted

CUR = ["line_item_line_item_type", "line_item_usage_start_date", "line_item_usage_end_date", "line_item_usage_type",
       "line_item_usage_amount", "line_item_unblended_cost", "line_item_currency_code", "product_instance_type",
       "product_region_code", "pricing_term", "savings_plan_savings_plan_a_r_n",
       "savings_plan_savings_plan_effective_cost", "savings_plan_total_commitment_to_date",
       "savings_plan_used_commitment"]


def write(path: Path, header: list[str], rows: list[dict]) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows([{k: r.get(k, "") for k in header} for r in rows])
    return path


def cur_refund(tmp_path: Path) -> Path:
    t0, t1 = "2026-09-02T00:00:00Z", "2026-09-02T01:00:00Z"
    base = {"line_item_currency_code": "USD", "product_region_code": "us-east-1"}
    return write(tmp_path / "cur.csv", CUR, [
        {**base, "line_item_line_item_type": "Usage", "line_item_usage_start_date": t0, "line_item_usage_end_date": t1,
         "line_item_usage_type": "BoxUsage:p4d.24xlarge", "line_item_usage_amount": "1",
         "line_item_unblended_cost": "21.957642", "product_instance_type": "p4d.24xlarge", "pricing_term": "OnDemand"},
        {**base, "line_item_line_item_type": "SavingsPlanUpfrontFee", "line_item_usage_start_date":
         "2026-09-01T00:00:00Z", "line_item_usage_end_date": "2026-09-01T00:00:00Z",
         "line_item_unblended_cost": "8760", "savings_plan_savings_plan_a_r_n": SP},
        {**base, "line_item_line_item_type": "Refund", "line_item_usage_start_date": "2026-09-03T00:00:00Z",
         "line_item_usage_end_date": "2026-09-03T00:00:00Z", "line_item_unblended_cost": "-8760",
         "savings_plan_savings_plan_a_r_n": SP}])


def test_cur_refund_of_a_savings_plan_nets_to_zero(tmp_path):
    d = U.read_usage(cur_refund(tmp_path))
    p = d.purchases
    assert p[["charge_category", "commitment_id", "billed_cost", "effective_cost"]].values.tolist() == [
        ["Purchase", SP, 8760.0, 0.0], ["Adjustment", SP, -8760.0, 0.0]]
    assert round(p["effective_cost"].sum(), 2) == 0.00 and round(p["billed_cost"].sum(), 2) == 0.00
    assert U.purchase_totals(p) == {"Purchase": 0.0}
    assert any("netted against its purchase" in n for n in d.notes)


def test_cur_refund_in_the_review_is_netted(tmp_path):
    from gpuopt import api

    res = api.review(usage=str(cur_refund(tmp_path)))
    assert res.purchases == {"Purchase": 0.0}


AZ = ["Date", "ChargeType", "ProductName", "MeterCategory", "MeterName", "ConsumedService", "ResourceLocation",
      "Quantity", "UnitOfMeasure", "CostInBillingCurrency", "BillingCurrency", "PricingModel", "ReservationId"]
ORDER = "/providers/Microsoft.Capacity/reservationOrders/11111111-2222-3333-4444-555555555555"


def test_azure_refund_of_a_reservation_nets_to_zero(tmp_path):
    res = {"ProductName": "Reserved VM Instance, Standard_NC24ads_A100_v4, US East, 1 Year", "BillingCurrency": "USD",
           "PricingModel": "Reservation"}
    p = write(tmp_path / "az.csv", AZ, [
        {"Date": "09/02/2026", "ChargeType": "Usage", "MeterCategory": "Virtual Machines",
         "MeterName": "NC24ads A100 v4", "ConsumedService": "Microsoft.Compute", "ResourceLocation": "EastUS",
         "Quantity": "1", "UnitOfMeasure": "1 Hour", "CostInBillingCurrency": "3.673", "BillingCurrency": "USD",
         "PricingModel": "OnDemand"},
        {**res, "Date": "09/01/2026", "ChargeType": "Purchase", "CostInBillingCurrency": "20000",
         "ReservationId": ORDER},
        # the refund names the order by its bare id: the same commitment
        {**res, "Date": "09/20/2026", "ChargeType": "Refund", "CostInBillingCurrency": "-20000",
         "ReservationId": ORDER.rsplit("/", 1)[1].upper()}])
    d = U.read_usage(p)
    pur = d.purchases
    assert pur[["charge_category", "billed_cost", "effective_cost"]].values.tolist() == [
        ["Purchase", 20000.0, 0.0], ["Adjustment", -20000.0, 0.0]]
    assert round(pur["effective_cost"].sum(), 2) == 0.00
    assert U.purchase_totals(pur) == {"Purchase": 0.0}


def test_a_refund_larger_than_its_purchase_keeps_the_rest_and_other_credits_stay():
    pur = pd.DataFrame({"charge_category": ["Purchase", "Adjustment", "Credit"], "commitment_id": ["a", "A", ""],
                        "billed_cost": [100.0, -150.0, -7.0], "effective_cost": [0.0, 0.0, -7.0]})
    assert U.purchase_totals(pur) == {"Adjustment": -50.0, "Credit": -7.0, "Purchase": 0.0}


def test_a_refund_of_an_unamortized_purchase_nets_its_effective_cost():
    # a FOCUS purchase that is not amortized carries EffectiveCost = BilledCost; its refund nets it in the
    # amortized view too, and never below the refund
    pur = pd.DataFrame({"charge_category": ["Purchase", "Credit"], "commitment_id": ["c", "c"],
                        "billed_cost": [300.0, -500.0], "effective_cost": [300.0, -500.0]})
    assert U._net_refunds_amortized(pur) == (1, -500.0)
    assert pur["effective_cost"].tolist() == [300.0, -300.0]


# ------------------------------------------------------------------------------------------------------- fuzzing

FOCUS_COLS = ["BilledCost", "EffectiveCost", "ListCost", "ChargeCategory", "ChargeClass", "ChargeDescription",
              "ChargePeriodStart", "ChargePeriodEnd", "ConsumedQuantity", "ConsumedUnit", "PricingQuantity",
              "PricingUnit", "PricingCategory", "ProviderName", "RegionId", "ResourceId", "CommitmentDiscountId",
              "CommitmentDiscountStatus", "BillingCurrency", "x_InstanceType"]
CELLS = st.one_of(
    st.sampled_from(["", "NULL", "0", "1", "-1", "2.5", "inf", "-inf", "nan", "1e400", "1e308", "-1e308",
                     "2024-09-01T00:00:00Z", "2024-09-01T01:00:00Z", "0001-01-01", "9999-12-31T23:59:59Z",
                     "1970-01-01", "09/31/2024", "Usage", "Purchase", "Credit", "Adjustment", "Correction",
                     "Committed", "Standard", "Dynamic", "Used", "Unused", "Hours", "10K Hours",
                     "1" + "0" * 400 + " Hours", "AWS", "Microsoft", "p4d.24xlarge", "g5.xlarge", "USD",
                     "arn:aws:savingsplans::1:savingsplan/x", "$1 per On Demand Linux p3.2xlarge Instance Hour",
                     "{\"InstanceType\": \"p5.48xlarge\"}", "us-east-1"]),
    st.text(max_size=12))


def _check(d: U.UsageData) -> None:
    assert d.rows_read == d.rows_gpu + d.rows_not_gpu + len(d.bad_rows)
    for frame, cols in ((d.hourly, ["usage_hours", "billed_cost", "effective_cost"]),
                        (d.purchases, ["billed_cost", "effective_cost"])):
        vals = frame[cols].to_numpy(dtype=float).ravel()
        assert not any(math.isinf(v) for v in vals)
        assert all(math.isfinite(v) for v in frame[cols[:1]].to_numpy(dtype=float).ravel() if not math.isnan(v))
    if len(d.hourly):
        assert d.period_end - d.period_start <= pd.Timedelta(days=30 * 366)


def _read(p: Path) -> None:
    try:
        d = U.read_usage(p, is_gpu_instance=lambda prov, t: t.startswith(("p", "g")))
    except GpuoptError as e:
        assert "\n" not in str(e)
        return
    _check(d)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries({c: CELLS for c in FOCUS_COLS}), min_size=1, max_size=6))
def test_fuzz_focus_rows(tmp_path, rows):
    _read(write(tmp_path / "fuzz_focus.csv", FOCUS_COLS, rows))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.lists(st.one_of(st.sampled_from(FOCUS_COLS + CUR + AZ + [" BilledCost", "BilledCost ", ""]),
                                 st.text(max_size=8)), min_size=1, max_size=12),
       cells=st.lists(CELLS, min_size=1, max_size=40))
def test_fuzz_headers(tmp_path, header, cells):
    p = tmp_path / "fuzz_header.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for i in range(0, len(cells), len(header)):
            w.writerow(cells[i:i + len(header)])
    _read(p)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries({c: CELLS for c in CUR}), min_size=1, max_size=5),
       junk=st.binary(max_size=8))
def test_fuzz_cur_rows_and_bytes(tmp_path, rows, junk):
    p = write(tmp_path / "fuzz_cur.csv", CUR, rows)
    p.write_bytes(p.read_bytes() + junk)
    _read(p)


def test_a_currency_with_a_line_break_stays_one_line(tmp_path):
    """Found by test_fuzz_focus_rows (issue 25's merge): a BillingCurrency cell "EU\\nR" came back in the error
    message as a real line break; every gpuopt error now shows such characters escaped (gpuopt.kernel.errors)."""
    row = {c: "" for c in FOCUS_COLS}
    row.update(BilledCost="2.5", EffectiveCost="2.5", ChargeCategory="Usage", ChargePeriodStart="2024-09-01T00:00:00Z",
               ChargePeriodEnd="2024-09-01T01:00:00Z", ConsumedQuantity="1", ProviderName="AWS", RegionId="us-east-1",
               ResourceId="i-1", BillingCurrency="EU\nR", x_InstanceType="p4d.24xlarge")
    p = write(tmp_path / "eur.csv", FOCUS_COLS, [row])
    with pytest.raises(GpuoptError) as exc:
        U.read_usage(p, is_gpu_instance=lambda prov, t: t.startswith(("p", "g")))
    assert "\n" not in str(exc.value) and "EU\\nR" in str(exc.value) and exc.value.field == "currency"
