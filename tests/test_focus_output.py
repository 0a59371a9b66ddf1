"""FOCUS 1.2 output: the validator on the spec's own example files (and their known defects), gpuopt's rows for a
one-workload plan with every payment option, a spot plan and the example fleet plan, the money identities of the
rows, and the validator's rules one by one."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

import gpuopt
from gpuopt.focus import (COLUMNS, Charge, charges_from_plan, focus_csv_text, focus_rows, next_month_start,
                          write_focus_csv)
from focus_validator import (MANDATORY, example_fleet_result, one_reserved_result, one_workload_result, validate_focus)

# the FOCUS sample and spec v1.2 examples, copied unchanged into the repo (tests/fixtures/usage/README.md, CC BY 4.0)
DATA = Path(__file__).parent / "fixtures" / "usage"
EXAMPLES = DATA / "focus_spec_v1.2"
START = dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc)

needs_data = pytest.mark.skipif(not EXAMPLES.exists(), reason="shared/data/focus is not beside this checkout")

# ------------------------------------------------------------------------------------ the spec's own examples
NULL_LITERAL = r"a literal string stands for a null"
HEADER_CASE = r"^SkuPriceid: header 'SkuPriceid' should be 'SkuPriceId'"
HOUR_30 = r"^ChargePeriodEnd: not a valid date/time .*'2023-02-01T30:00:00Z'"
# defects not listed in shared/data/PROVENANCE.md, found by the validator in the upstream files (tag v1.2):
LIST_COST_0333 = r"^ListCost: ListCost must equal ListUnitPrice x PricingQuantity .*\(line 4\)"  # 0.333 x 3.00 != 3.00
UNUSED_CONSUMED = r"^ConsumedQuantity: must be null on an Unused commitment row \(line 4\)"
UNUSED_RESOURCE = r"^ResourceId: an Unused commitment row's ResourceId must be its CommitmentDiscountId \(line 4\)"

EXPECTED = {
    "commitment_discount_flexibility/one_hundred_percent_utilization_with_commitment_discount_flexibility_with_1_resource.csv":
        [HEADER_CASE, NULL_LITERAL, LIST_COST_0333],
    "commitment_discount_flexibility/one_hundred_percent_utilization_with_commitment_discount_flexibility_with_2_resources.csv":
        [HEADER_CASE, NULL_LITERAL],
    "commitment_discount_flexibility/one_hundred_percent_utilization_without_commitment_discount_flexibility.csv":
        [HEADER_CASE, NULL_LITERAL],
    "commitment_discount_flexibility/zero_percent_utilization_without_commitment_discount_flexibility.csv":
        [HEADER_CASE, NULL_LITERAL, UNUSED_CONSUMED, UNUSED_RESOURCE],
    "commitment_discount_scenarios/commitment_discount_purchase_scenario_1.csv": [],
    "commitment_discount_scenarios/commitment_discount_purchase_scenario_2.csv": [HOUR_30],
    "commitment_discount_scenarios/commitment_discount_purchase_scenario_3.csv": [HOUR_30],
    "commitment_discount_scenarios/commitment_discount_usage_scenario_1.csv": [],
    "commitment_discount_scenarios/commitment_discount_usage_scenario_2.csv": [NULL_LITERAL],
    "commitment_discount_scenarios/commitment_discount_usage_scenario_3.csv": [NULL_LITERAL],
    "commitment_discount_scenarios/commitment_discount_usage_scenario_4.csv": [NULL_LITERAL],
}


@needs_data
def test_every_spec_example_is_covered():
    assert sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.csv")) == sorted(EXPECTED)


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_spec_examples_pass_but_for_their_known_defects(name):
    """The examples carry a subset of the columns (require_columns=False); every problem found is one of the file's
    known defects, and every known defect is found."""
    problems = validate_focus(EXAMPLES / name, require_columns=False)
    expected = EXPECTED[name]
    for p in problems:
        assert any(re.search(e, p) for e in expected), f"unexpected problem in {name}: {p}"
    for e in expected:
        assert any(re.search(e, p) for p in problems), f"{name}: the validator missed {e}"


@needs_data
def test_validator_catches_the_documented_defects_of_the_focus_1_0_sample():
    problems = validate_focus(DATA / "focus_sample_1.0.csv")
    text = "\n".join(problems)
    assert "literal string stands for a null (a CSV null is an empty field), e.g. 'NULL'" in text
    assert re.search(r"BillingPeriodStart: not a valid date/time .*'2024-09-01 00:00:00'", text)  # no T, no Z
    assert "the allowed value is spelled 'Usage-Based'), e.g. 'Usage-based'" in text
    assert re.search(r"ContractedCost: ContractedCost must equal ContractedUnitPrice x PricingQuantity", text)


# ------------------------------------------------------------------------------------------ gpuopt's plans
@pytest.fixture(scope="module")
def mixed_payment_result(tmp_path_factory):
    """A plan over 12 months with all three payment options: a catalog of AWS us-east-1 offers where each instance
    type is reserved (1 year) with a single payment option, few instances per instance type, 4,000 tokens/s (8,000
    before the operating-point sizing of issue 27 made one type carry more of it)."""
    from pricing_cache.store import load_offers

    offers, _ = load_offers(None)
    sub = offers[(offers["provider"] == "aws") & (offers["region"] == "us-east-1")]
    reserved = sub[sub["pricing"] == "reserved_1y"]
    pays = ("all_upfront", "partial_upfront", "no_upfront")
    keep = {t: pays[i % 3] for i, t in enumerate(sorted(reserved["instance_type"].unique()))}
    mask = (sub["pricing"] == "on_demand") | ((sub["pricing"] == "reserved_1y")
                                             & (sub["instance_type"].map(keep) == sub["payment"]))
    path = tmp_path_factory.mktemp("catalog") / "mixed_payments.csv"
    sub[mask].to_csv(path, index=False)
    found = []
    # one instance per instance type spreads the plan over several types (and so payment options); the planner
    # currently counts a committed instance twice against the quota (its units and its purchase), so a quota of 1
    # leaves no room for commitments and 2 is what allows one: try both
    for cap in (1, 2):
        # MLPerf's server targets, one replica floor and no N+1 (the FOCUS rows of mixed payments are under test,
        # not the production defaults of issue 26, which need more instances than a cap of 1-2 per type allows)
        r = gpuopt.recommend(budget=600000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=4000,
                             catalog=path, max_instances_per_offer=cap, scenario="server", min_replicas=1,
                             redundancy="none", mixed_replicas=True, min_replica_share=0.0)  # several types
        assert r.feasible
        found.append([(ln.instance_type, ln.pricing, ln.payment) for ln in r.plan.lines])
        if {ln.payment for ln in r.plan.lines} >= set(pays):
            return r
    pytest.fail(f"no plan with every payment option: {found}")


@pytest.fixture(scope="module")
def spot_result():
    r = gpuopt.recommend(budget=50000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000,
                         allow_spot=True, pricing=["spot", "on_demand"], mixed_replicas=True)
    assert r.feasible and any(ln.pricing == "spot" for ln in r.plan.lines)
    return r


def _plans(request):
    return {"one": one_workload_result, "mixed": lambda: request.getfixturevalue("mixed_payment_result"),
            "spot": lambda: request.getfixturevalue("spot_result"), "fleet": example_fleet_result}


def _month(label: str) -> dt.datetime:
    y, m = (int(x) for x in label.split("-"))
    return dt.datetime(y, m, 1, tzinfo=dt.timezone.utc)


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _label(start_label: str, months: int) -> str:
    """"YYYY-MM" ``months`` calendar months after ``start_label``."""
    y, m = (int(x) for x in start_label.split("-"))
    return f"{y + (m - 1 + months) // 12:04d}-{(m - 1 + months) % 12 + 1:02d}"


def _month_starts(start_label: str, months: int) -> list[str]:
    """ISO starts of the calendar months of a horizon, and the end of the last one."""
    return [f"{_label(start_label, i)}-01T00:00:00Z" for i in range(months + 1)]


def _committed(ln) -> bool:
    return ln.pricing.startswith("reserved")


def _tolerance(plan) -> float:
    """Lines carry cents: up to half a cent of rounding per line and month."""
    return 0.006 * sum(ln.end_month - ln.start_month + 1 for ln in plan.lines) + 0.01


@pytest.mark.parametrize("granularity", ["month", "day"])
@pytest.mark.parametrize("which", ["one", "mixed", "spot", "fleet"])
def test_every_row_of_gpuopt_plans_passes_the_validator(request, tmp_path, which, granularity):
    result = _plans(request)[which]()
    rows = focus_rows(charges_from_plan(result, START, granularity=granularity))
    assert rows and all(list(r) == list(COLUMNS) for r in rows)
    assert validate_focus(rows) == []
    path = write_focus_csv(rows, tmp_path / "plan.focus.csv")
    assert validate_focus(path) == []  # as written: nulls as empty fields, numbers in NumericFormat
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    ext = [c for c in COLUMNS if c.startswith("x_")]
    assert set(MANDATORY) <= set(header) and header[-len(ext):] == ext


def _sum(rows, col, **where):
    return sum(r[col] for r in rows if all(r[k] == v for k, v in where.items()))


@pytest.mark.parametrize("which", ["one", "mixed", "spot", "fleet"])
def test_money_over_the_horizon_is_the_plans(request, which):
    """Over the horizon: EffectiveCost adds up to the plan's total (every commitment of these plans ends within
    it; leftover value 0), the BilledCost of each month is the cash the plan pays that month, the One-Time rows are
    its upfront; one charge period per calendar month of the horizon and nothing after it."""
    result = _plans(request)[which]()
    plan = result.plan
    assert plan.horizon_months == 12 and plan.leftover_value == 0
    rows = focus_rows(charges_from_plan(result))  # from the plan's first month (next month when it was planned)
    tol = _tolerance(plan)
    # every line's EffectiveCost in the horizon: hourly lines their total, commitments the months the term covers
    expected = sum(ln.usd_per_hour * 730 * ln.count * (ln.end_month - ln.start_month + 1) if _committed(ln)
                   else ln.total_usd for ln in plan.lines)
    assert _sum(rows, "EffectiveCost") == pytest.approx(expected, abs=tol)
    assert all(ln.start_month + 11 <= 12 for ln in plan.lines if _committed(ln))  # 1-year terms ending in month 12
    assert _sum(rows, "EffectiveCost") == pytest.approx(plan.total_usd, abs=tol)
    upfront = _sum(rows, "BilledCost", ChargeFrequency="One-Time")
    assert upfront == pytest.approx(plan.upfront_usd, abs=0.01 * len(plan.lines))
    starts = _month_starts(plan.start_month, 12)
    assert sorted({r["BillingPeriodStart"] for r in rows}) == starts[:12]  # 12 monthly charge periods
    for i, month in enumerate(starts[:12]):
        billed = _sum(rows, "BilledCost", BillingPeriodStart=month)
        assert billed == pytest.approx(plan.cash_by_month_usd[i], abs=0.006 * len(plan.lines) + 0.01), month
    end = starts[12]
    for r in rows:
        assert r["BillingPeriodEnd"] <= end and r["ChargePeriodStart"] < end
        if r["ChargeFrequency"] != "One-Time":
            assert r["ChargePeriodEnd"] <= end and r["ChargePeriodEnd"] == r["BillingPeriodEnd"]
        if r["ChargeCategory"] == "Purchase":
            assert r["EffectiveCost"] == 0 and r["PricingCategory"] == "Standard" and r["ResourceType"] == "Commitment"
        elif r["PricingCategory"] == "Committed":
            assert r["BilledCost"] == 0 and r["ListUnitPrice"] == r["ContractedUnitPrice"]
            assert r["EffectiveCost"] <= r["ListCost"] + 1e-6  # the commitment discount
        else:
            assert r["BilledCost"] == r["EffectiveCost"] == r["ContractedCost"]
    # a 1-year commitment's recurring fee is charged in all 12 months
    for ln in plan.lines:
        if _committed(ln) and ln.monthly_usd > 0:
            fees = [r for r in rows if r["ChargeFrequency"] == "Recurring" and r["x_InstanceType"] == ln.instance_type
                    and r["x_PaymentOption"] == ln.payment and r["RegionId"] == ln.region]
            assert sorted(r["ChargePeriodStart"] for r in fees) == starts[:12]
            assert all(r["BilledCost"] == pytest.approx(ln.monthly_usd, abs=0.01) for r in fees)


def test_one_workload_plan_rows():
    # the README plan on Azure at 1,500 tokens/s: one quoted 1-year reservation paid monthly, all 12 months (two
    # instances since the N+1 default of issue 26: the demand carried after one of them is lost)
    result = one_reserved_result()
    plan = result.plan
    rows = focus_rows(charges_from_plan(result))
    first = plan.start_month  # next month when it was planned
    (ln,) = plan.lines
    assert (ln.provider, ln.region, ln.instance_type) == ("azure", "westus2", "Standard_ND96isr_H200_v5")
    assert (ln.pricing, ln.payment, ln.start_month, ln.end_month, ln.term_end) == (
        "reserved_1y", "no_upfront", 1, 12, _label(first, 11))
    # Azure Retail Prices API 2025-06-21 (pricing_cache/data/inputs/azure_prices.csv): 1-year term 45.223858 USD/h
    # (term total / 8,760), on demand 84.8 USD/h
    assert ln.usd_per_hour == pytest.approx(45.223858, abs=1e-6)
    used = [r for r in rows if r["ChargeCategory"] == "Usage"]
    fees = [r for r in rows if r["ChargeFrequency"] == "Recurring"]
    assert len(used) == 12 and len(fees) == 12 and len(rows) == 24  # no upfront, no idle hours
    starts = _month_starts(first, 12)
    for i, (u, f) in enumerate(zip(used, fees)):
        assert u["ChargePeriodStart"] == u["BillingPeriodStart"] == f["ChargePeriodStart"] == starts[i]
        assert u["ChargePeriodEnd"] == u["BillingPeriodEnd"] == starts[i + 1]  # calendar months
        assert u["PricingQuantity"] == ln.count * 730 and u["CommitmentDiscountStatus"] == "Used"
        assert u["EffectiveCost"] == pytest.approx(ln.usd_per_hour * 730 * ln.count, abs=1e-6)
        assert f["BilledCost"] == pytest.approx(ln.monthly_usd, abs=0.01)  # no upfront: the fee is the whole rate
    assert rows[0]["ChargePeriodStart"] == f"{first}-01T00:00:00Z"
    assert rows[0]["ChargePeriodEnd"] == f"{_label(first, 1)}-01T00:00:00Z"
    assert {r["CommitmentDiscountId"] for r in rows} == {
        f"gpuopt-plan/azure/westus2/Standard_ND96isr_H200_v5/reserved_1y-no_upfront/{first}"}
    assert {r["CommitmentDiscountName"] for r in rows} == {
        "1-year no upfront reservation: 2 x Standard_ND96isr_H200_v5 in westus2, "
        f"{first} to {ln.term_end}"}
    u = used[0]
    assert u["ProviderName"] == "Microsoft" and u["ServiceName"] == "Virtual Machines"
    assert u["CommitmentDiscountType"] == "Reservation" and u["CommitmentDiscountCategory"] == "Usage"
    assert u["ListUnitPrice"] == pytest.approx(84.8)  # the on-demand list price the term discounts
    assert u["x_PriceSource"].startswith("github.com/Jumbo2020/gpu_prices") and u["x_GpuModel"] == ln.gpu_model
    assert _sum(rows, "EffectiveCost") == pytest.approx(plan.total_usd, abs=0.01) == ln.commitment_usd


def test_mixed_payments_one_time_purchase_spans_the_term(mixed_payment_result):
    plan = mixed_payment_result.plan
    rows = focus_rows(charges_from_plan(mixed_payment_result))
    first = plan.start_month
    by_payment = {}
    for r in rows:
        if r["ChargeCategory"] == "Purchase":
            by_payment.setdefault(r["x_PaymentOption"], set()).add(r["ChargeFrequency"])
    assert by_payment == {"all_upfront": {"One-Time"}, "partial_upfront": {"One-Time", "Recurring"},
                          "no_upfront": {"Recurring"}}
    once = [r for r in rows if r["ChargeFrequency"] == "One-Time"]
    assert len(once) == sum(1 for ln in plan.lines if ln.upfront_usd > 0) >= 2
    for r in once:  # bought in the month the term starts, for the whole term
        assert r["ChargePeriodStart"] == r["BillingPeriodStart"] == f"{first}-01T00:00:00Z"
        assert r["BillingPeriodEnd"] == f"{_label(first, 1)}-01T00:00:00Z"
        assert r["ChargePeriodEnd"] == f"{_label(first, 12)}-01T00:00:00Z"
        assert r["CommitmentDiscountQuantity"] == r["PricingQuantity"]  # instance-hours over the term
    assert sum(r["BilledCost"] for r in once) == pytest.approx(plan.upfront_usd, abs=0.01 * len(plan.lines))
    assert plan.upfront_usd > 0
    ids = {ln.instance_type: {r["CommitmentDiscountId"] for r in rows if r["x_InstanceType"] == ln.instance_type}
           for ln in plan.lines if _committed(ln)}
    assert all(len(v) == 1 for v in ids.values()) and len({next(iter(v)) for v in ids.values()}) == len(ids)


def test_spot_rows_are_dynamic_with_the_on_demand_list_price(spot_result):
    """ListUnitPrice of a spot row is the on-demand rate of its instance type there; where the catalog sells it on
    spot only (GCP's a3-highgpu-4g in northamerica-northeast1 in the snapshot), the spot rate is the only price."""
    from optimizer.explain import on_demand_rates
    from pricing_cache.store import load_offers

    od = on_demand_rates(load_offers()[0])
    rows = focus_rows(charges_from_plan(spot_result, START))
    spot = [r for r in rows if r["x_PricingModel"] == "spot"]
    assert spot and all(r["PricingCategory"] == "Dynamic" and r["CommitmentDiscountId"] is None for r in spot)
    lines = {ln.instance_type: ln for ln in spot_result.plan.lines if ln.pricing == "spot"}
    for r in spot:
        ln = lines[r["x_InstanceType"]]
        rate = od.get((ln.provider, ln.region, ln.instance_type))
        if rate:
            assert r["ListUnitPrice"] == pytest.approx(rate, abs=1e-6) and rate > r["ContractedUnitPrice"] > 0
            assert r["ListCost"] > r["BilledCost"] == r["EffectiveCost"]
        else:
            assert r["ListUnitPrice"] == r["ContractedUnitPrice"] == pytest.approx(ln.usd_per_hour, abs=1e-6)


def test_fleet_rows_run_only_in_their_months_and_name_their_workloads():
    result = example_fleet_result()
    plan = result.plan
    rows = focus_rows(charges_from_plan(result))
    names = {w["name"] for w in plan.workloads}
    for r in rows:
        assert set(r["x_Workload"].split(", ")) <= names
    assert {r["x_PricingModel"] for r in rows} == {ln.pricing for ln in plan.lines}
    starts = _month_starts(plan.start_month, plan.horizon_months)
    # the serving lines run months 1-12 (alike in month 1, with the training jobs, and in months 2-12: one line
    # each, optimizer.planning.answer.merge_periods); the training jobs month 1 only
    assert any(ln.start_month == 1 and ln.end_month == 12 for ln in plan.lines)
    assert any(ln.end_month == 1 for ln in plan.lines)
    for ln in plan.lines:
        if _committed(ln):
            continue
        mine = [r for r in rows if r["x_InstanceType"] == ln.instance_type and r["RegionId"] == ln.region
                and r["x_PricingModel"] == ln.pricing and r["ChargePeriodStart"] in
                starts[ln.start_month - 1:ln.end_month]]
        assert len(mine) == ln.end_month - ln.start_month + 1
        assert all(r["BilledCost"] == pytest.approx(ln.monthly_usd, abs=1e-3) for r in mine)
    # a one-off job runs in month 1; on a line only it uses, month 1 only (it may share a reserved line with the
    # service, whose rows run all year and name both)
    train = [r for r in rows if "pretrain-1b" in r["x_Workload"].split(", ")]
    assert train and starts[0] in {r["ChargePeriodStart"] for r in train}
    assert all(r["ChargePeriodStart"] == starts[0] for r in train if r["x_Workload"] == "pretrain-1b")
    # per month: the lines that run in it, no more
    for i, month in enumerate(starts[:-1]):
        running = {(ln.instance_type, ln.region, ln.pricing) for ln in plan.lines
                   if ln.start_month <= i + 1 <= ln.end_month}
        assert {(r["x_InstanceType"], r["RegionId"], r["x_PricingModel"]) for r in rows
                if r["BillingPeriodStart"] == month} == running


def test_daily_rows_add_up_to_the_months():
    result = one_workload_result()
    month = focus_rows(charges_from_plan(result, START))
    days = focus_rows(charges_from_plan(result, START, granularity="day"))
    assert len({r["ChargePeriodStart"] for r in days}) == 365  # the calendar days of 2027
    assert days[-1]["ChargePeriodEnd"] == "2028-01-01T00:00:00Z"
    assert {r["BillingPeriodStart"] for r in days} == {r["BillingPeriodStart"] for r in month}  # billed by month
    for col in ("EffectiveCost", "BilledCost", "ListCost", "PricingQuantity"):
        assert _sum(days, col) == pytest.approx(_sum(month, col), rel=1e-6)
    feb = [r for r in days if r["BillingPeriodStart"] == "2027-02-01T00:00:00Z" and r["ChargeCategory"] == "Usage"]
    n = sum(ln.count for ln in result.plan.lines)
    assert len(feb) == 28 * len(result.plan.lines)
    assert sum(r["PricingQuantity"] for r in feb) == pytest.approx(730 * n)  # a plan month is 730 h an instance


def test_default_start_is_the_plans_first_month_and_infeasible_plans_have_no_rows():
    assert next_month_start(dt.date(2026, 12, 15)) == dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc)
    assert next_month_start(dt.date(2026, 3, 31)) == dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)
    result = one_workload_result()
    cs = charges_from_plan(result)
    assert cs[0].period_start == _month(result.plan.start_month) and len(cs) == 12
    assert cs[0].period_end == _month(_label(result.plan.start_month, 1))
    later = charges_from_plan(result, "2027-06-01")  # another start: the same months, moved
    assert [c.period_start.strftime("%Y-%m") for c in later][:2] == ["2027-06", "2027-07"]
    assert later[-1].period_end == dt.datetime(2028, 6, 1, tzinfo=dt.timezone.utc)
    r = gpuopt.recommend(budget=10, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    assert not r.feasible and charges_from_plan(r) == [] and focus_rows([]) == []


# ------------------------------------------------------------------------- a hand-built plan with long terms
def _fleet_line(**kw):
    from optimizer.planning.answer import FleetLine

    base = dict(provider="aws", region="us-east-1", zone="", instance_type="p5.48xlarge", pricing="on_demand",
                payment="", count=1, hours=730.0, usd_per_hour=2.0, monthly_usd=0.0, gpu_model="H100-80GB",
                gpu_count=8.0, gpu_memory_gib=80.0, workloads=["chat"], utilization=None,
                break_even_utilization=None, upfront_usd=0.0, commitment_usd=0.0, source="test", as_of="2026-11-30",
                estimated=False)
    base.update(kw)
    return FleetLine(**base)


def hand_built_plan():
    """12 months from 2027-11 (February 2028 has 29 days): a 3-year partial-upfront commitment of 2 instances bought
    in month 1, 75 % used; a 1-year no-upfront commitment bought in month 4 (it ends in month 15, after the horizon);
    3 on-demand instances in months 1-3."""
    from optimizer.planning.answer import FleetResult

    three = _fleet_line(pricing="reserved_3y", payment="partial_upfront", count=2, usd_per_hour=10.0,
                        monthly_usd=6.0 * 730 * 2, upfront_usd=4.0 * 26280 * 2, commitment_usd=10.0 * 26280 * 2,
                        total_usd=10.0 * 26280 * 2, start_month=1, end_month=12, term_end="2030-10",
                        utilization=0.75, break_even_utilization=0.5)
    one = _fleet_line(instance_type="p4d.24xlarge", pricing="reserved_1y", payment="no_upfront", usd_per_hour=5.0,
                      monthly_usd=5.0 * 730, commitment_usd=5.0 * 8760, total_usd=5.0 * 8760, start_month=4,
                      end_month=12, term_end="2029-01", utilization=1.0, break_even_utilization=0.6)
    od = _fleet_line(instance_type="g6e.xlarge", count=3, monthly_usd=2.0 * 730 * 3, total_usd=2.0 * 730 * 3 * 3,
                     start_month=1, end_month=3)
    cash = [8760 + 4380 + 210240, 8760 + 4380, 8760 + 4380] + [8760 + 3650] * 9
    return FleetResult(status="optimal", horizon_months=12, start_month="2027-11", lines=[three, one, od],
                       total_usd=525600 + 43800 + 13140, upfront_usd=210240, commitment_usd=525600 + 43800,
                       cash_by_month_usd=cash, after_horizon_usd=24 * 8760 + 3 * 3650)


def test_commitments_that_outlive_the_horizon_stop_with_it():
    plan = hand_built_plan()
    rows = focus_rows(charges_from_plan(plan, list_prices={}))
    assert validate_focus(rows) == []
    starts = _month_starts("2027-11", 12)
    assert sorted({r["BillingPeriodStart"] for r in rows}) == starts[:12]
    end = starts[12]  # 2028-11-01: nothing is charged after the horizon
    assert all(r["ChargePeriodStart"] < end and r["BillingPeriodEnd"] <= end for r in rows)
    for i, month in enumerate(starts[:12]):
        assert _sum(rows, "BilledCost", BillingPeriodStart=month) == pytest.approx(plan.cash_by_month_usd[i], abs=1e-6)
    # EffectiveCost: the horizon's months of each commitment (12 of the 3-year term, 9 of the 1-year one) and the
    # on-demand hours: the plan's total less what the commitments cost after the horizon
    assert _sum(rows, "EffectiveCost") == pytest.approx(10 * 730 * 2 * 12 + 5 * 730 * 9 + 13140, abs=1e-4)
    assert _sum(rows, "EffectiveCost") == pytest.approx(plan.total_usd - 10 * 730 * 2 * 24 - 5 * 730 * 3, abs=1e-4)
    once = [r for r in rows if r["ChargeFrequency"] == "One-Time"]
    assert len(once) == 1 and once[0]["BilledCost"] == pytest.approx(plan.upfront_usd)
    assert once[0]["ChargePeriodStart"] == "2027-11-01T00:00:00Z"
    assert once[0]["ChargePeriodEnd"] == "2030-11-01T00:00:00Z"  # the whole 3-year term, past the horizon
    assert once[0]["PricingQuantity"] == 2 * 26280
    ids = {r["x_InstanceType"]: r["CommitmentDiscountId"] for r in rows if r["CommitmentDiscountId"]}
    assert ids == {"p5.48xlarge": "gpuopt-plan/aws/us-east-1/p5.48xlarge/reserved_3y-partial_upfront/2027-11",
                   "p4d.24xlarge": "gpuopt-plan/aws/us-east-1/p4d.24xlarge/reserved_1y-no_upfront/2028-02"}
    names = {r["CommitmentDiscountName"] for r in rows if r["CommitmentDiscountName"]}
    assert names == {"3-year partial upfront reserved instance: 2 x p5.48xlarge in us-east-1, 2027-11 to 2030-10",
                     "1-year no upfront reserved instance: 1 x p4d.24xlarge in us-east-1, 2028-02 to 2029-01"}
    fees = [r for r in rows if r["ChargeFrequency"] == "Recurring"]
    assert sorted(r["ChargePeriodStart"] for r in fees if r["x_InstanceType"] == "p5.48xlarge") == starts[:12]
    assert sorted(r["ChargePeriodStart"] for r in fees if r["x_InstanceType"] == "p4d.24xlarge") == starts[3:12]
    # 25 % of the 3-year commitment's 1,460 hours a month idle, every month, February 2028 included (a plan month)
    unused = [r for r in rows if r["CommitmentDiscountStatus"] == "Unused"]
    assert len(unused) == 12 and all(r["PricingQuantity"] == pytest.approx(365) for r in unused)
    assert all(r["ResourceId"] == ids["p5.48xlarge"] for r in unused)
    od = [r for r in rows if r["x_PricingModel"] == "on_demand"]
    assert sorted(r["ChargePeriodStart"] for r in od) == starts[:3] and all(r["PricingQuantity"] == 2190 for r in od)


# ------------------------------------------------------------------------------ charges a review would build
def _charge(**kw) -> Charge:
    base = dict(provider="aws", region="us-east-1", zone="", instance_type="p4d.24xlarge", pricing="reserved_1y",
                payment="partial_upfront", usage_hours=600.0, list_unit_price=32.7726, contracted_unit_price=19.0,
                upfront_usd=2 * 8760 * 9.0, commitment_id="ri-123", commitment_term_hours=8760.0, gpu_model="A100-40GB",
                gpu_count=8.0, workload="chat", period_start=START, period_end=START + dt.timedelta(hours=730),
                unused_hours=860.0, instances=2)
    base.update(kw)
    return Charge(**base)


def test_unused_commitment_hours_become_unused_rows():
    rows = focus_rows([_charge()], billing_account="acme", currency="EUR")
    assert validate_focus(rows) == []
    kinds = [(r["ChargeCategory"], r["ChargeFrequency"], r["CommitmentDiscountStatus"]) for r in rows]
    assert kinds == [("Usage", "Usage-Based", "Used"), ("Usage", "Usage-Based", "Unused"),
                     ("Purchase", "Recurring", None), ("Purchase", "One-Time", None)]
    used, unused, fee, upfront = rows
    assert unused["ResourceId"] == unused["CommitmentDiscountId"] == "ri-123" and unused["ConsumedQuantity"] is None
    assert used["EffectiveCost"] + unused["EffectiveCost"] == pytest.approx(19.0 * 1460)
    assert fee["ListUnitPrice"] == pytest.approx(10.0) and fee["BilledCost"] == pytest.approx(10.0 * 1460)
    assert upfront["BilledCost"] == pytest.approx(2 * 8760 * 9.0) and upfront["PricingQuantity"] == 2 * 8760
    assert {r["BillingCurrency"] for r in rows} == {"EUR"} and {r["BillingAccountId"] for r in rows} == {"acme"}


def test_amortization_over_the_term_matches_the_purchases():
    """Discount handling: over the whole term, the EffectiveCost of a commitment's usage equals the BilledCost of its
    purchases (12 months of 730 h = 8,760 h; the upfront is bought in the first)."""
    months = [_charge(period_start=START + dt.timedelta(hours=730 * m), period_end=START + dt.timedelta(hours=730 * (m + 1)),
                      upfront_usd=2 * 8760 * 9.0 if m == 0 else 0.0, recurring_unit_price=10.0) for m in range(12)]
    rows = focus_rows(months)
    assert validate_focus(rows) == []
    assert _sum(rows, "EffectiveCost", ChargeCategory="Usage") == pytest.approx(
        _sum(rows, "BilledCost", ChargeCategory="Purchase"), rel=1e-9)


def test_estimated_prices_say_so_and_on_demand_rows_are_standard():
    rows = focus_rows([_charge(pricing="on_demand", payment="", commitment_id=None, commitment_term_hours=None,
                               upfront_usd=0.0, unused_hours=0.0, contracted_unit_price=32.7726,
                               source="rule:x", estimated=True, zone="use1-az1")])
    assert validate_focus(rows) == []
    (r,) = rows
    assert r["PricingCategory"] == "Standard" and r["x_PriceSource"] == "estimated: rule:x"
    assert r["AvailabilityZone"] == "use1-az1" and r["RegionName"] == "US East (N. Virginia)"


def test_csv_numbers_and_nulls():
    text = focus_csv_text(focus_rows([_charge()]))
    lines = text.splitlines()
    assert len(lines) == 5 and "e+" not in text and ",null," not in text.lower()
    assert lines[0].startswith("AvailabilityZone,BilledCost,")


# ------------------------------------------------------------------------------------- the validator's rules
def _good():
    return focus_rows([_charge()])


@pytest.mark.parametrize("mutate, expected", [
    (lambda rs: [r.pop("BilledCost") for r in rs], r"^BilledCost: mandatory column missing"),
    (lambda rs: rs[0].update(ChargeCategory="Usages"), r"^ChargeCategory: not an allowed value"),
    (lambda rs: rs[0].update(ChargeFrequency="Usage-based"), r"spelled 'Usage-Based'"),
    (lambda rs: rs[0].update(PricingCategory="OnDemand"), r"^PricingCategory: not an allowed value"),
    (lambda rs: rs[0].update(ServiceCategory="GPU"), r"^ServiceCategory: not an allowed value"),
    (lambda rs: rs[0].update(CommitmentDiscountStatus="Partly"), r"^CommitmentDiscountStatus: not an allowed value"),
    (lambda rs: rs[0].update(CommitmentDiscountCategory="Money"), r"^CommitmentDiscountCategory: not an allowed value"),
    (lambda rs: rs[0].update(ChargeClass="Fix"), r"^ChargeClass: not an allowed value"),
    (lambda rs: rs[0].update(BillingCurrency="usd"), r"^BillingCurrency: not an ISO 4217 currency code"),
    (lambda rs: rs[0].update(ListCost=rs[0]["ListCost"] + 0.02), r"^ListCost: ListCost must equal ListUnitPrice"),
    (lambda rs: rs[0].update(ContractedCost=rs[0]["ContractedCost"] * 2), r"^ContractedCost: ContractedCost must equal"),
    (lambda rs: rs[3].update(EffectiveCost=1.0), r"^EffectiveCost: must be 0 on a Purchase row"),
    (lambda rs: rs[0].update(BilledCost=5.0), r"^BilledCost: must be 0 on a Committed usage row"),
    (lambda rs: rs[2].update(ChargeFrequency="Usage-Based"), r"^ChargeFrequency: must not be 'Usage-Based' on a Purchase"),
    (lambda rs: rs[1].update(ConsumedQuantity=3.0, ConsumedUnit="Hours"), r"^ConsumedQuantity: must be null on an Unused"),
    (lambda rs: rs[0].update(ProviderName=None), r"^ProviderName: must not be null"),
    (lambda rs: rs[0].update(PricingQuantity=None, PricingUnit=None), r"^PricingQuantity: must not be null on a Usage row"),
    (lambda rs: rs[0].update(RegionName=None), r"^RegionName: null exactly when RegionId is null"),
    (lambda rs: rs[0].update(CommitmentDiscountType=None), r"^CommitmentDiscountType: must not be null when"),
    (lambda rs: rs[0].update(ChargePeriodEnd="2027-01-31T30:00:00Z"), r"^ChargePeriodEnd: not a valid date/time"),
    (lambda rs: rs[0].update(ChargePeriodStart="2027-01-01 00:00:00"), r"^ChargePeriodStart: not a valid date/time"),
    (lambda rs: rs[0].update(ChargePeriodEnd="2027-02-05T00:00:00Z"), r"^ChargePeriodEnd: after the end of the billing"),
    (lambda rs: rs[0].update(ChargePeriodStart="2026-12-31T00:00:00Z"), r"^ChargePeriodStart: outside the billing period"),
    (lambda rs: rs[0].update(ChargePeriodEnd="2027-01-01T00:00:00Z"), r"^ChargePeriodEnd: must be after ChargePeriodStart"),
    (lambda rs: rs[2].update(BilledCost=-1.0), r"^BilledCost: negative outside a Credit"),
    (lambda rs: rs[0].update(ListUnitPrice=-1.0, ListCost=-rs[0]["PricingQuantity"]),
     r"^ListUnitPrice: a unit price is never negative"),
    (lambda rs: rs[0].update(Tags="[1, 2]"), r"^Tags: not a JSON object"),
    # FOCUS 1.2 MUST rules added with issue 12 (rule ids of the spec's model, focus_validator rules/model-1.2.0.1.json)
    # PricingQuantity-C-001-M "PricingQuantity MUST be of type Decimal": an int is written 600, read as an integer
    (lambda rs: rs[0].update(PricingQuantity=600), r"^PricingQuantity: an integer where FOCUS requires a Decimal"),
    # SkuPriceId-C-008-M "SkuPriceId MUST have one and only one parent SkuId" (rows 1 and 2 share a SkuPriceId)
    (lambda rs: rs[1].update(SkuId="another-sku"), r"^SkuPriceId: one SkuPriceId with several SkuId values"),
    # ServiceName-C-005-C "ServiceName MUST have one and only one ServiceCategory"
    (lambda rs: rs[2].update(ServiceCategory="Storage"), r"^ServiceName: one ServiceName with several ServiceCategory"),
    # BillingCurrency-C-006-M "BillingCurrency MUST be expressed in national currency": gold is ISO 4217, not national
    (lambda rs: rs[0].update(BillingCurrency="XAU"), r"^BillingCurrency: not a national currency"),
    (lambda rs: rs[0].update(BillingCurrency="XTS"), r"^BillingCurrency: not a national currency"),
    # KeyValueFormat-A-002-M "Keys in a key-value pair MUST be unique within an object"
    (lambda rs: rs[0].update(Tags='{"team": "chat", "team": "search"}'), r"^Tags: a key appears twice .*'team'"),
    (lambda rs: [r.update(GpuModel="A100") for r in rs], r"^GpuModel: not a FOCUS 1.2 column and not prefixed 'x_'"),
    (lambda rs: [r.update(Skupriceid=r.pop("SkuPriceId")) for r in rs], r"^Skupriceid: header 'Skupriceid' should be 'SkuPriceId'"),
])
def test_validator_rules(mutate, expected):
    rows = _good()
    assert validate_focus(rows) == []
    mutate(rows)
    problems = validate_focus(rows)
    assert any(re.search(expected, p) for p in problems), problems


def test_csv_decimals_are_written_and_checked_as_decimals(tmp_path):
    """PricingQuantity-C-001-M and the other Decimal columns: gpuopt writes 1460.0, never 1460 (the FinOps
    validator failed gpuopt's 730); the validator catches an integer in the file."""
    path = write_focus_csv(_good(), tmp_path / "x.csv")
    text = path.read_text(encoding="utf-8")
    assert ",1460.0,Hours," in text and ",0.0," in text and validate_focus(path) == []
    path.write_text(text.replace(",1460.0,Hours,", ",1460,Hours,", 1), encoding="utf-8")
    problems = validate_focus(path)
    assert len(problems) == 1 and problems[0].startswith("PricingQuantity: an integer where FOCUS requires a Decimal")


def test_validator_allows_credits_to_be_negative_and_reads_literal_nulls_from_csv(tmp_path):
    rows = _good()
    credit = dict(rows[2], ChargeCategory="Credit", ChargeFrequency="One-Time", BilledCost=-5.0, EffectiveCost=-5.0,
                  ListCost=-5.0, ContractedCost=-5.0, PricingQuantity=None, PricingUnit=None, ListUnitPrice=None,
                  ContractedUnitPrice=None, CommitmentDiscountQuantity=None, CommitmentDiscountUnit=None)
    assert validate_focus(rows + [credit]) == []
    path = write_focus_csv(rows, tmp_path / "x.csv")
    text = path.read_text(encoding="utf-8").replace(",,", ",null,", 1)
    path.write_text(text, encoding="utf-8")
    problems = validate_focus(path)
    assert len(problems) == 1 and "literal string stands for a null" in problems[0] and "(line 2)" in problems[0]
