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
from focus_validator import (MANDATORY, example_fleet_result, one_workload_result, validate_focus)

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
    """A one-workload plan with all three payment options: a catalog of AWS us-east-1 offers where each instance
    type is reserved (1 year) with a single payment option, at most one instance per offer, 8,000 tokens/s."""
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
    r = gpuopt.recommend(budget=300000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=8000,
                         catalog=path, max_instances_per_offer=1)
    assert r.feasible
    assert {ln.payment for ln in r.plan.lines} >= set(pays), [(ln.instance_type, ln.payment) for ln in r.plan.lines]
    return r


@pytest.fixture(scope="module")
def spot_result():
    r = gpuopt.recommend(budget=50000, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000,
                         allow_spot=True, pricing=["spot", "on_demand"])
    assert r.feasible and any(ln.pricing == "spot" for ln in r.plan.lines)
    return r


def _plans(request):
    return {"one": one_workload_result, "mixed": lambda: request.getfixturevalue("mixed_payment_result"),
            "spot": lambda: request.getfixturevalue("spot_result"), "fleet": example_fleet_result}


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
def test_effective_cost_is_the_plan_total_and_billed_cost_the_cash(request, which):
    result = _plans(request)[which]()
    plan = result.plan
    rows = focus_rows(charges_from_plan(result, START))
    assert _sum(rows, "EffectiveCost") == pytest.approx(plan.total_monthly_usd, abs=0.02)
    upfront = sum(ln.upfront_usd for ln in plan.lines)
    recurring = sum((ln.usd_per_hour - ln.upfront_usd / ln.count / (8760 if ln.pricing == "reserved_1y" else 26280))
                    * ln.count * 730 for ln in plan.lines if ln.pricing.startswith("reserved"))
    hourly = sum(ln.monthly_usd for ln in plan.lines if not ln.pricing.startswith("reserved"))
    assert _sum(rows, "BilledCost") == pytest.approx(hourly + recurring + upfront, abs=0.05)
    assert _sum(rows, "BilledCost", ChargeFrequency="One-Time") == pytest.approx(upfront, abs=0.01)
    for r in rows:
        if r["ChargeCategory"] == "Purchase":
            assert r["EffectiveCost"] == 0 and r["PricingCategory"] == "Standard" and r["ResourceType"] == "Commitment"
        elif r["PricingCategory"] == "Committed":
            assert r["BilledCost"] == 0 and r["ListUnitPrice"] == r["ContractedUnitPrice"]
            assert r["EffectiveCost"] <= r["ListCost"] + 1e-6  # the commitment discount
        else:
            assert r["BilledCost"] == r["EffectiveCost"] == r["ContractedCost"]


def test_one_workload_plan_rows(request):
    result = one_workload_result()
    rows = focus_rows(charges_from_plan(result, START))
    (ln,) = result.plan.lines  # gcp a3-ultragpu-8g-nolssd reserved_3y no_upfront (the README example)
    used = [r for r in rows if r["ChargeCategory"] == "Usage"]
    fees = [r for r in rows if r["ChargeFrequency"] == "Recurring"]
    assert len(used) == 1 and len(fees) == 1 and len(rows) == 2
    u = used[0]
    assert u["PricingQuantity"] == ln.count * 730 and u["CommitmentDiscountStatus"] == "Used"
    assert u["BillingPeriodStart"] == u["ChargePeriodStart"] == "2027-01-01T00:00:00Z"
    assert u["BillingPeriodEnd"] == u["ChargePeriodEnd"] == "2027-01-31T10:00:00Z"  # 730 h
    assert u["ProviderName"] == "Google Cloud" and u["ServiceName"] == "Compute Engine"
    assert u["CommitmentDiscountType"] == "Committed Use Discount" and u["CommitmentDiscountCategory"] == "Usage"
    assert u["ListUnitPrice"] == pytest.approx(ln.usd_per_hour / ln.break_even_utilization, rel=1e-3)
    assert u["x_PriceSource"].startswith("estimated: rule:") and u["x_GpuModel"] == ln.gpu_model
    assert fees[0]["BilledCost"] == pytest.approx(ln.monthly_usd, abs=0.01)  # no upfront: the fee is the whole rate


def test_mixed_payments_one_time_purchase_spans_the_term(mixed_payment_result):
    rows = focus_rows(charges_from_plan(mixed_payment_result, START))
    by_payment = {}
    for r in rows:
        if r["ChargeCategory"] == "Purchase":
            by_payment.setdefault(r["x_PaymentOption"], set()).add(r["ChargeFrequency"])
    assert by_payment == {"all_upfront": {"One-Time"}, "partial_upfront": {"One-Time", "Recurring"},
                          "no_upfront": {"Recurring"}}
    for r in rows:
        if r["ChargeFrequency"] == "One-Time":
            assert r["ChargePeriodStart"] == "2027-01-01T00:00:00Z" and r["ChargePeriodEnd"] == "2028-01-01T00:00:00Z"
            assert r["CommitmentDiscountQuantity"] == r["PricingQuantity"]  # instance-hours over the term


def test_spot_rows_are_dynamic_with_the_on_demand_list_price(spot_result):
    rows = focus_rows(charges_from_plan(spot_result, START))
    spot = [r for r in rows if r["x_PricingModel"] == "spot"]
    assert spot and all(r["PricingCategory"] == "Dynamic" and r["CommitmentDiscountId"] is None for r in spot)
    for r in spot:
        assert r["ListUnitPrice"] > r["ContractedUnitPrice"] > 0  # on-demand list vs the spot rate
        assert r["ListCost"] > r["BilledCost"] == r["EffectiveCost"]


def test_fleet_rows_name_their_workloads():
    result = example_fleet_result()
    rows = focus_rows(charges_from_plan(result, START))
    names = {w["name"] for w in result.plan.workloads}
    for r in rows:
        assert set(r["x_Workload"].split(", ")) <= names
    assert {r["x_PricingModel"] for r in rows} == {ln.pricing for ln in result.plan.lines}


def test_daily_rows_add_up_to_the_month():
    result = one_workload_result()
    month = focus_rows(charges_from_plan(result, START))
    days = focus_rows(charges_from_plan(result, START, granularity="day"))
    assert len({r["ChargePeriodStart"] for r in days}) == 31  # 30 days and the 10 h that end a 730 h month
    assert days[-1]["ChargePeriodEnd"] == "2027-01-31T10:00:00Z"
    for col in ("EffectiveCost", "BilledCost", "ListCost", "PricingQuantity"):
        assert _sum(days, col) == pytest.approx(_sum(month, col), rel=1e-6)


def test_default_period_is_next_month_and_infeasible_plans_have_no_rows():
    assert next_month_start(dt.date(2026, 12, 15)) == dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc)
    assert next_month_start(dt.date(2026, 3, 31)) == dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)
    c = charges_from_plan(one_workload_result())[0]
    assert c.period_start == next_month_start() and (c.period_end - c.period_start) == dt.timedelta(hours=730)
    r = gpuopt.recommend(budget=10, model="meta-llama/Llama-2-70b-hf", task="serve", tokens_per_second=2000)
    assert not r.feasible and charges_from_plan(r) == [] and focus_rows([]) == []


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
    (lambda rs: [r.update(GpuModel="A100") for r in rs], r"^GpuModel: not a FOCUS 1.2 column and not prefixed 'x_'"),
    (lambda rs: [r.update(Skupriceid=r.pop("SkuPriceId")) for r in rs], r"^Skupriceid: header 'Skupriceid' should be 'SkuPriceId'"),
])
def test_validator_rules(mutate, expected):
    rows = _good()
    assert validate_focus(rows) == []
    mutate(rows)
    problems = validate_focus(rows)
    assert any(re.search(expected, p) for p in problems), problems


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
