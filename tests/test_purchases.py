"""Purchases the planner sizes itself: AWS EC2 Capacity Blocks for ML, savings plans, GCP Flex-start
(optimizer/planning/, issue 9 point 3).

Numbers:

* Capacity-block rates are the shipped quotes (pricing_cache/data/inputs/aws_commitments.csv, the AWS capacity blocks
  pricing page as scraped on 2026-07-22 by github.com/koyakimu/ec2-capacity-blocks-for-ml-pricing-json): p5.48xlarge
  us-east-1 41.528 $/h, p4d.24xlarge us-west-2 11.80 $/h. The rules (1-64 instances; 1-14 days in 1-day steps, then
  up to 182 days in 7-day steps; paid whole when bought) are the AWS EC2 User Guide's, "Capacity Blocks for ML".
* On-demand rates are the shipped snapshot's (SkyPilot AWS catalog and published quotes).
* Savings-plan RATES are test values, not AWS prices (no real Savings Plans rate of a GPU instance is in the stored
  data: pricing_cache/data/inputs/PRICES_README.md (d)): the on-demand rate x 0.5, the Compute Savings Plans discount
  of the AWS Savings Plans User Guide's illustrative example (c5.9xlarge 4.00 on-demand, 2.00 under the plan).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.kernel.records import HOURS_PER_MONTH
from optimizer.planning.demand import inline_profile
from optimizer.planning.plan import plan_fleet
from optimizer.planning.problem import CAPACITY_BLOCK_DAYS, FleetWorkload, capacity_block_days, capacity_block_split
from optimizer.planning.problem_build import make_problem
from optimizer.planning.solve import solve_cost, verify
from optimizer.sizing import Workload
from pricing_cache.store import load_offers

SP_RATIO = 2.00 / 4.00  # AWS Savings Plans User Guide example (illustrative): Compute Savings Plans 50 % off


def _model(name):
    from gpuopt.api import _model_spec

    return _model_spec(name, None)


@pytest.fixture(scope="module")
def snapshot():
    return load_offers()[0]


def _aws(offers, regions, pricing, types=None):
    d = offers[(offers["provider"] == "aws") & offers["region"].isin(regions) & offers["pricing"].isin(pricing)
               & (offers["zone"].astype(str) == "")]
    if types is not None:
        d = d[d["instance_type"].isin(types)]
    return d.reset_index(drop=True)


# ------------------------------------------------------------------------------------------ capacity-block rules
def test_capacity_block_durations_are_the_ones_aws_sells():
    # AWS EC2 User Guide, "Capacity Blocks for ML": 1-14 days in 1-day steps, then up to 182 days in 7-day steps
    assert CAPACITY_BLOCK_DAYS[:14] == tuple(range(1, 15))
    assert CAPACITY_BLOCK_DAYS[14:16] == (21, 28) and CAPACITY_BLOCK_DAYS[-1] == 182
    assert capacity_block_days(10) == 1                       # a 10-hour window still buys a whole day
    assert capacity_block_days(13.5 * 24) == 14
    assert capacity_block_days(HOURS_PER_MONTH) == 35         # one month of 730 h is 30.4 days: a 35-day block
    assert capacity_block_days(2 * HOURS_PER_MONTH) == 63
    assert capacity_block_days(5 * HOURS_PER_MONTH) == 154
    with pytest.raises(ValueError):
        capacity_block_days(6 * HOURS_PER_MONTH)              # 182.5 days: longer than any block


@settings(max_examples=300, deadline=None)
@given(units=st.integers(1, 64), data=st.data())
def test_capacity_block_split_buys_exactly_the_unit_days(units, data):
    unit_days = data.draw(st.integers(units, units * 400))
    parts = capacity_block_split(unit_days, units)
    assert sum(u * d for u, d in parts) == unit_days
    assert all(1 <= u <= units and d in CAPACITY_BLOCK_DAYS for u, d in parts)
    # the units run their blocks back to back: unit_days // units days, the last r < units units one day more
    run = sum(d for u, d in parts if u == units)
    assert run == unit_days // units
    if unit_days % units:
        assert parts[-1] == (unit_days % units, 1)


def test_capacity_block_split_refuses_a_unit_of_no_day():
    with pytest.raises(ValueError):
        capacity_block_split(3, 4)  # 4 units bought need 4 unit-days at least


# ------------------------------------------------------------------------------------------ training on blocks
def _train(name="job", tokens=2e11, deadline=1000.0, model="llama-2-70b"):
    w = Workload(model=_model(model), task="train", tokens=tokens, deadline_hours=deadline)
    return FleetWorkload(name=name, workload=w, deadline_hours=deadline)


def test_a_training_job_buys_capacity_blocks_when_they_are_cheaper(snapshot):
    offers = _aws(snapshot, ["us-east-1"], ["on_demand", "capacity_block"], ["p5.48xlarge"])
    rates = {p: float(offers[offers["pricing"] == p]["usd_per_hour"].iloc[0]) for p in ("on_demand", "capacity_block")}
    assert rates == {"on_demand": 55.04, "capacity_block": 41.528}  # snapshot: catalog / AWS page 2026-07-22
    job = _train()
    od = plan_fleet([job], {}, offers, pricing=("on_demand",), horizon_months=2, explain=False)
    res = plan_fleet([job], {}, offers, horizon_months=2, explain=False)
    assert res.status == "optimal" and res.solver["method"] == "milp"
    blocks = [ln for ln in res.lines if ln.pricing == "capacity_block"]
    assert blocks and res.total_usd < od.total_usd
    for ln in blocks:
        assert 1 <= ln.count <= 64 and ln.days in CAPACITY_BLOCK_DAYS
        assert ln.total_usd == pytest.approx(41.528 * 24 * ln.days * ln.count, abs=0.01)
        assert ln.upfront_usd == ln.total_usd and ln.hours == 24 * ln.days
    assert sum(ln.total_usd for ln in res.lines) == pytest.approx(res.total_usd, abs=0.02)
    # paid whole in the job's first month
    cb = sum(ln.total_usd for ln in blocks)
    assert res.upfront_usd == pytest.approx(cb, abs=0.02) and res.cash_by_month_usd[0] >= cb - 0.02
    # the on-demand plan of the same work costs 55.04 / 41.528 as much per instance-hour (the blocks round up to
    # whole days, so at most that)
    assert res.total_usd >= od.total_usd * 41.528 / 55.04 - 0.01


def test_blocks_hold_at_most_64_instances_at_once(snapshot):
    # AWS sells a capacity block of 1-64 instances. One synchronous job runs in one capacity pool (issue 26), so a job
    # that needs more than 64 p5 instances at once cannot use blocks at all, even where a block is cheaper per hour:
    # 80 h (92 h with the 15 % schedule margin: a 4-day block, 96 h x 41.528 = 3,986.69 USD an instance) beats
    # 80 h x 55.04 = 4,403.20 USD on demand, but the job needs ~70 instances at once.
    offers = _aws(snapshot, ["us-east-1"], ["on_demand", "capacity_block"], ["p5.48xlarge"])
    big = make_problem([_train(tokens=2e11, deadline=80.0)], {}, offers, horizon_months=1)
    sol = solve_cost(big)
    assert sol.report.status == "optimal" and verify(big, sol) is None
    assert not sol.A and not sol.CB
    (units,) = sol.X.values()
    assert units * 4 > 64                                  # 4 p5.48xlarge a unit: more than a block holds
    # given 96 h the same job needs 56 instances: one block holds it all
    small = make_problem([_train(tokens=2e11, deadline=96.0)], {}, offers, horizon_months=1)
    sol = solve_cost(small)
    assert sol.report.status == "optimal" and verify(small, sol) is None and not sol.X
    idx = {(w, c.okey): c for w, cs in small.cands.items() for c in cs}
    par = {ok: a * idx[(w, ok)].instances_per_unit for (w, ok, _bi), a in sol.A.items()}
    assert par and max(par.values()) <= 64 + 1e-6
    # the check refuses a plan that puts more than 64 instances on one block
    (key, a), = [(k, v) for k, v in sol.A.items() if "capacity_block" in k[1]][:1]
    bad = type(sol)(report=sol.report, N=dict(sol.N), A={**sol.A, key: a + 64}, X=dict(sol.X), CB=dict(sol.CB))
    assert "over 64 instances" in (verify(small, bad) or "") or "capacity block" in (verify(small, bad) or "")


def test_a_short_service_runs_on_a_capacity_block_for_its_months(snapshot):
    offers = _aws(snapshot, ["us-west-2"], ["on_demand", "capacity_block"], ["p4d.24xlarge"])
    w = FleetWorkload(name="launch", workload=Workload(model=_model("llama-2-70b"), task="serve", tokens_per_second=1000),
                      min_replicas=1)
    # a service is put on blocks only when asked (by default they are for training jobs)
    dflt = plan_fleet([w], {"launch": inline_profile([1000.0])}, offers, horizon_months=2, explain=False)
    assert {ln.pricing for ln in dflt.lines} == {"on_demand"}
    res = plan_fleet([w], {"launch": inline_profile([1000.0])}, offers, horizon_months=2, explain=False,
                     pricing=("on_demand", "capacity_block"))
    assert res.status == "optimal"
    (ln,) = [x for x in res.lines if x.pricing == "capacity_block"]
    assert ln.days == 63 and ln.start_month == 1 and ln.end_month == 2   # 2 x 730 h = 60.8 days -> 63
    assert ln.total_usd == pytest.approx(11.80 * 24 * 63 * ln.count, abs=0.01)
    assert 0 < ln.utilization <= 1
    od_rate = float(offers[offers["pricing"] == "on_demand"]["usd_per_hour"].iloc[0])
    assert res.total_usd == pytest.approx(11.80 * 24 * 63 * ln.count, abs=0.02)
    assert res.total_usd < od_rate * 2 * HOURS_PER_MONTH * ln.count


# ------------------------------------------------------------------------------------------ savings plans
def _with_savings_plans(od: pd.DataFrame, pricing="savings_plan_1y", payment="no_upfront", cls="compute"):
    sp = od.copy()
    sp["pricing"], sp["payment"], sp["offering_class"] = pricing, payment, cls
    sp["usd_per_hour"] = sp["usd_per_hour"] * SP_RATIO
    sp["recurring_usd_per_hour"], sp["upfront_usd"] = sp["usd_per_hour"], 0.0
    sp["term_hours"] = 8760.0 if pricing.endswith("1y") else 26280.0
    sp["source"] = "test value: on-demand x 0.5 (AWS Savings Plans User Guide example, illustrative)"
    return pd.concat([od, sp], ignore_index=True)


def _serve(name, tps, model="llama-2-70b"):
    return FleetWorkload(name=name, workload=Workload(model=_model(model), task="serve", tokens_per_second=tps),
                         min_replicas=1)


def test_a_savings_plan_covers_the_base_and_on_demand_the_peak(snapshot):
    od = _aws(snapshot, ["us-east-1"], ["on_demand"], ["p4d.24xlarge"])
    offers = _with_savings_plans(od)
    rate = float(od["usd_per_hour"].iloc[0])
    w = _serve("chat", 1)
    problem0 = make_problem([w], {"chat": inline_profile([1.0])}, offers, pricing=("on_demand",), horizon_months=12)
    unit = problem0.cands["chat"][0]
    # one unit's throughput in 16 hours of the day, two units' in 8 (a peak a third of the day)
    one, two = unit.throughput_per_unit * 0.9, unit.throughput_per_unit * 1.9
    prof = inline_profile([one] * 16 + [two] * 8)
    res = plan_fleet([w], {"chat": prof}, offers, horizon_months=12, explain=False)
    assert res.status == "optimal"
    plan_line = [ln for ln in res.lines if ln.pricing == "savings_plan_1y" and not ln.covered_by]
    assert len(plan_line) == 1
    k = unit.instances_per_unit
    # covering the second unit by the plan costs 0.5 r x 730 h, on demand r x 730/3 h: the peak stays on demand
    assert plan_line[0].usd_per_hour == pytest.approx(rate * SP_RATIO * k, rel=1e-6)
    assert plan_line[0].region == "all regions" and plan_line[0].offering_class == "compute"
    assert plan_line[0].utilization == pytest.approx(1.0)
    peak = [ln for ln in res.lines if ln.pricing == "on_demand"]
    assert len(peak) == 1 and peak[0].count == k
    expected = rate * SP_RATIO * k * 8760 + rate * k * HOURS_PER_MONTH / 3 * 12
    assert res.total_usd == pytest.approx(expected, rel=1e-6)
    covered = [ln for ln in res.lines if ln.covered_by]
    assert covered and all(ln.total_usd == 0 for ln in covered)


def test_savings_plan_scopes():
    # AWS Savings Plans User Guide, "Savings Plans types": Compute Savings Plans apply to any family and region,
    # EC2 Instance Savings Plans to one family in one region
    from optimizer.planning.problem import savings_plan_scope

    a = {"provider": "aws", "pricing": "savings_plan_1y", "payment": "no_upfront", "region": "us-east-1",
         "instance_type": "p4d.24xlarge", "offering_class": "compute"}
    b = {**a, "region": "us-west-2", "instance_type": "p5.48xlarge"}
    assert savings_plan_scope(a) == savings_plan_scope(b) == "aws|savings_plan_1y|no_upfront|compute|*|*"
    ea, eb = ({**x, "offering_class": "ec2_instance"} for x in (a, b))
    assert savings_plan_scope(ea) == "aws|savings_plan_1y|no_upfront|ec2_instance|us-east-1|p4d"
    assert savings_plan_scope(eb) == "aws|savings_plan_1y|no_upfront|ec2_instance|us-west-2|p5"
    assert savings_plan_scope({**ea, "instance_type": "p4de.24xlarge"}) != savings_plan_scope(ea)  # another family


def test_one_compute_savings_plan_covers_workloads_in_two_regions(snapshot):
    od = _aws(snapshot, ["us-east-1", "us-west-2"], ["on_demand"], ["p4d.24xlarge"])
    # each service in its own region: the other region's offers of each are taken away
    offers = _with_savings_plans(od, cls="compute")
    ws = [_serve("east", 300), _serve("west", 300)]
    problem = make_problem(ws, {"east": inline_profile([300.0]), "west": inline_profile([300.0])}, offers,
                           horizon_months=12)
    problem = problem.replace(cands={w: [c for c in cs if c.offer["region"] == {"east": "us-east-1",
                                                                                 "west": "us-west-2"}[w]]
                                     for w, cs in problem.cands.items()})
    sol = solve_cost(problem)
    assert sol.report.status == "optimal" and verify(problem, sol) is None
    assert len(sol.SP) == 1  # one plan, both regions
    rates = [float(od[od["region"] == r]["usd_per_hour"].iloc[0]) for r in ("us-east-1", "us-west-2")]
    (spend,) = sol.SP.values()
    assert spend == pytest.approx(sum(rates) * SP_RATIO, rel=1e-6)
    assert sol.cost == pytest.approx(spend * 8760, rel=1e-9)


def test_an_all_upfront_savings_plan_is_paid_in_the_first_month(snapshot):
    od = _aws(snapshot, ["us-east-1"], ["on_demand"], ["p4d.24xlarge"])
    offers = _with_savings_plans(od, payment="all_upfront")
    res = plan_fleet([_serve("chat", 300)], {"chat": inline_profile([300.0])}, offers, horizon_months=12, explain=False)
    (pl,) = [ln for ln in res.lines if ln.pricing == "savings_plan_1y" and not ln.covered_by]
    whole = pl.usd_per_hour * 8760
    assert pl.upfront_usd == pytest.approx(whole, abs=0.01) and pl.monthly_usd == 0
    assert res.cash_by_month_usd[0] == pytest.approx(whole, abs=0.02) and res.cash_by_month_usd[1] == 0
    # a --max-upfront below it keeps the plan off the all-upfront savings plan
    res2 = plan_fleet([_serve("chat", 300)], {"chat": inline_profile([300.0])}, offers, horizon_months=12,
                      explain=False, budgets=__import__("optimizer.planning.problem", fromlist=["Budgets"]).Budgets(upfront=1000.0))
    assert res2.status == "optimal" and res2.upfront_usd <= 1000.0
    assert not [ln for ln in res2.lines if ln.pricing == "savings_plan_1y" and not ln.covered_by]


def test_the_check_refuses_spend_beyond_the_savings_plan(snapshot):
    od = _aws(snapshot, ["us-east-1"], ["on_demand"], ["p4d.24xlarge"])
    problem = make_problem([_serve("chat", 300)], {"chat": inline_profile([300.0])}, _with_savings_plans(od),
                           horizon_months=12)
    sol = solve_cost(problem)
    assert sol.SP and verify(problem, sol) is None
    sol.SP = {k: v / 2 for k, v in sol.SP.items()}
    assert "over-spent" in verify(problem, sol)


# ------------------------------------------------------------------------------------------ Flex-start
def _flex(offers: pd.DataFrame) -> pd.DataFrame:
    fx = offers[offers["pricing"] == "on_demand"].copy()
    fx["pricing"] = "flex_start"
    fx["usd_per_hour"] = fx["usd_per_hour"] * 0.6
    fx["recurring_usd_per_hour"] = fx["usd_per_hour"]
    fx["source"] = "test value: on-demand x 0.6"
    return pd.concat([offers, fx], ignore_index=True)


def test_flex_start_is_for_training_jobs_only(snapshot):
    gcp = snapshot[(snapshot["provider"] == "gcp") & (snapshot["region"] == "us-central1")
                   & (snapshot["instance_type"] == "a2-ultragpu-8g") & (snapshot["pricing"] == "on_demand")]
    offers = _flex(gcp.reset_index(drop=True))
    serve = make_problem([_serve("chat", 300)], {"chat": inline_profile([300.0])}, offers, horizon_months=1)
    assert serve.rejected["chat"].get("flex_start_training_only") == 1
    assert all(c.offer["pricing"] != "flex_start" for c in serve.cands["chat"])
    res = plan_fleet([_train(tokens=2e10, deadline=700.0, model="llama-2-7b")], {}, offers, horizon_months=1,
                     explain=False)
    assert res.status == "optimal" and {ln.pricing for ln in res.lines} == {"flex_start"}
    assert any("Flex-start" in n and "7 days" in n for n in res.notes)
    flex_rate = float(offers[offers["pricing"] == "flex_start"]["usd_per_hour"].iloc[0])
    assert all(math.isclose(ln.usd_per_hour, flex_rate, rel_tol=1e-9) for ln in res.lines)


# ------------------------------------------------------------------------------------------ as users get them
def _month_cash_matches(result, rows):
    from gpuopt.focus import next_month_start  # noqa: F401  (the rows' months are the plan's)

    plan = result.plan
    months = sorted({r["BillingPeriodStart"] for r in rows})
    billed = [sum(r["BilledCost"] for r in rows if r["BillingPeriodStart"] == m) for m in months]
    cash = [c for c in plan.cash_by_month_usd if c > 0.005]
    assert billed == pytest.approx(cash, abs=0.02 * len(plan.lines) + 0.01)


def test_a_capacity_block_plan_through_the_api_json_and_focus():
    import gpuopt
    from focus_validator import validate_focus
    from gpuopt.focus import charges_from_plan, focus_rows

    r = gpuopt.recommend(task="train", model="llama-2-70b", tokens=2e11, deadline_hours=1000, providers=["aws"],
                         pricing=["on_demand", "capacity_block"], horizon=2, explain=False)
    assert r.feasible
    d = r.to_dict()
    blocks = [ln for ln in d["lines"] if ln["pricing"] == "capacity_block"]
    assert blocks and all(ln["days"] in CAPACITY_BLOCK_DAYS and ln["upfront_usd"] == ln["total_usd"] for ln in blocks)
    assert any("describe-capacity-block-offerings" in n for n in d["notes"])
    rows = focus_rows(charges_from_plan(r))
    assert validate_focus(rows) == []
    cb = [x for x in rows if x["x_PricingModel"] == "capacity_block"]
    assert cb and {x["PricingCategory"] for x in cb} == {"Other"}
    # each block a one-time purchase, paid whole in the month it starts, its charge period the block's days
    assert {(x["ChargeCategory"], x["ChargeFrequency"]) for x in cb} == {("Purchase", "One-Time")}
    starts = sorted({ln["start_month"] for ln in blocks})
    assert len({x["BillingPeriodStart"] for x in cb}) == len(starts)
    import datetime as _dt

    for x in cb:
        span = (_dt.datetime.fromisoformat(x["ChargePeriodEnd"][:-1]) -
                _dt.datetime.fromisoformat(x["ChargePeriodStart"][:-1])).total_seconds() / 86400
        assert span in CAPACITY_BLOCK_DAYS
    assert sum(x["EffectiveCost"] for x in rows) == pytest.approx(r.plan.total_usd, abs=0.05)
    _month_cash_matches(r, rows)


def test_a_savings_plan_from_a_users_catalog_through_the_cli_and_focus(snapshot, tmp_path):
    import json as _json

    from typer.testing import CliRunner

    import gpuopt
    from focus_validator import validate_focus
    from gpuopt.cli import app
    from gpuopt.focus import charges_from_plan, focus_rows

    od = _aws(snapshot, ["us-east-1"], ["on_demand"], ["p4d.24xlarge"])
    path = tmp_path / "offers.csv"
    _with_savings_plans(od, payment="partial_upfront").to_csv(path, index=False)
    # partial upfront: half of the commitment upfront, the rest monthly (AWS Savings Plans User Guide)
    out = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-70b-hf", "--tokens-per-second", "300",
                                   "--catalog", str(path), "--no-explain", "--format", "json"])
    assert out.exit_code == 0, out.output
    lines = _json.loads(out.stdout)["lines"]
    (pl,) = [ln for ln in lines if ln["pricing"] == "savings_plan_1y" and not ln["covered_by"]]
    assert pl["offering_class"] == "compute" and pl["upfront_usd"] == pytest.approx(pl["commitment_usd"] / 2, abs=0.01)
    table = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-70b-hf", "--tokens-per-second",
                                     "300", "--catalog", str(path), "--no-explain"], env={"COLUMNS": "250"})
    assert "runs on the savings plan" in table.output and "savings plans: the commitment is a spend" in table.output
    r = gpuopt.recommend(model="meta-llama/Llama-2-70b-hf", tokens_per_second=300, catalog=path, explain=False)
    rows = focus_rows(charges_from_plan(r))
    assert validate_focus(rows) == []
    sp = [x for x in rows if x["CommitmentDiscountCategory"] == "Spend"]
    assert sp and {x["CommitmentDiscountUnit"] for x in sp} == {"USD"}
    assert {x["CommitmentDiscountType"] for x in sp} == {"Savings Plan"}
    # the instances run under the plan: committed usage at the plan's rate against the on-demand list price
    used = [x for x in sp if x["CommitmentDiscountStatus"] == "Used"]
    assert used and {x["x_InstanceType"] for x in used} == {"p4d.24xlarge"}
    assert all(x["PricingCategory"] == "Committed" and x["BilledCost"] == 0 for x in used)
    assert all(x["ListCost"] == pytest.approx(x["EffectiveCost"] / SP_RATIO, rel=1e-6) for x in used)
    names: dict = {}
    for x in sp:
        names.setdefault(x["CommitmentDiscountId"], set()).add(x["CommitmentDiscountName"])
    assert all(len(v) == 1 for v in names.values())
    # the plan's own rows (a compute plan: every region and instance type of AWS): a SkuId without empty parts
    own = {x["SkuId"] for x in sp if x["CommitmentDiscountStatus"] != "Used"}
    assert own == {"aws/savings-plan"} and not any("//" in x["SkuId"] or "//" in x["ResourceId"] for x in rows)
    assert sum(x["EffectiveCost"] for x in rows) == pytest.approx(r.plan.total_usd, abs=0.05)
    _month_cash_matches(r, rows)


# ------------------------------------------------------------------------------------------ a breaker's cases
def test_a_window_shorter_than_a_day_buys_every_instance_it_runs_for_a_day(snapshot):
    # 2e10 tokens of Llama-2-7B in 5 hours: the job runs ~48 p4d at once; on blocks each of them is a whole day
    # (the model had bought 10 unit-days for 48 instances x 5 h: $2,862.98 for a plan that could not finish)
    offers = _aws(snapshot, ["us-east-1"], ["on_demand", "capacity_block"], ["p4d.24xlarge"])
    job = _train(tokens=2e10, deadline=5.0, model="llama-2-7b")
    od = plan_fleet([job], {}, offers, pricing=("on_demand",), horizon_months=1, explain=False)
    res = plan_fleet([job], {}, offers, horizon_months=1, explain=False)
    assert res.status == "optimal" and res.total_usd <= od.total_usd + 0.01
    problem = make_problem([job], {}, offers, horizon_months=1)
    sol = solve_cost(problem)
    assert verify(problem, sol) is None
    for (w, ok, bi), a in sol.A.items():  # what runs at once on blocks is what was bought, each for a day at least
        assert a <= sol.CB[("job_units", w, ok)] + 1e-6 <= sol.CB[("job", w, ok)] + 1e-6
    for ln in res.lines:
        if ln.pricing == "capacity_block":
            assert ln.days >= 1 and ln.total_usd == pytest.approx(
                float(offers[offers.pricing == "capacity_block"]["usd_per_hour"].iloc[0]) * 24 * ln.days * ln.count,
                abs=0.01)


def test_blocks_keep_the_quota(snapshot):
    from optimizer.planning.candidates import candidates_for
    from optimizer.sizing import train_flops

    offers = _aws(snapshot, ["us-west-2"], ["capacity_block"], ["p4d.24xlarge"])
    # 2.1e10 tokens: 192-240 instance-hours of work (2.75e10 before issue 28's training model, which made Megatron
    # on A100 slower: Megatron-LM's own A100 runs)
    job = _train(tokens=2.1e10, deadline=30.0, model="llama-2-7b")
    (c,) = candidates_for(job.workload, offers)[0]
    hours = train_flops(job.workload) / (c.throughput_per_unit * 3600.0)  # instance-hours of work (1-instance units)
    assert c.instances_per_unit == 1 and 192 < hours <= 240  # more than 8 one-day blocks give: the quota binds
    res = plan_fleet([job], {}, offers, horizon_months=1, explain=False, max_instances=8)
    assert res.status == "optimal"
    assert res.lines and all(ln.count <= 8 for ln in res.lines)
    # in a 30-hour window 8 one-day blocks give 192 h and a unit's second day only the window's last 6 h, so
    # 8 + ceil((hours - 192) / 6) unit-days (a breaker's count; the model had once bought too few)
    days = 8 + math.ceil((hours - 192.0) / 6.0)
    assert sum(ln.count * ln.days for ln in res.lines) == days
    assert res.total_usd == pytest.approx(days * 24 * 11.80, abs=0.01)  # p4d us-west-2 block rate, 2026-07-22


def test_a_window_past_182_days_buys_blocks_back_to_back(snapshot):
    offers = _aws(snapshot, ["us-east-1"], ["capacity_block"], ["p5.48xlarge"])
    job = _train(tokens=1.2e14, deadline=8000.0, model="llama-2-7b")
    res = plan_fleet([job], {}, offers, horizon_months=11, explain=False)
    assert res.status == "optimal", res.reason
    days = [ln.days for ln in res.lines]
    assert 182 in days and all(d in CAPACITY_BLOCK_DAYS for d in days)
    assert all(ln.count <= 64 for ln in res.lines)


def test_a_service_block_spans_the_periods_an_unrelated_job_cuts(snapshot):
    # a 2-month service and a job starting in month 2 (which cuts the horizon into two periods): one 63-day block,
    # not two 35-day ones (a breaker's plan paid $69,404.16 for what costs $62,463.74)
    offers = _aws(snapshot, ["us-west-2"], ["on_demand", "capacity_block"], ["p4d.24xlarge"])
    chat = FleetWorkload(name="chat", workload=Workload(model=_model("llama-2-70b"), task="serve",
                                                        tokens_per_second=2000), min_replicas=1)
    alone = plan_fleet([chat], {"chat": inline_profile([2000.0])}, offers, horizon_months=2, explain=False,
                       pricing=("on_demand", "capacity_block"))
    job = FleetWorkload(name="job", workload=Workload(model=_model("llama-2-7b"), task="train", tokens=1e9,
                                                      deadline_hours=100), deadline_hours=100, start_month=1)
    both = plan_fleet([chat, job], {"chat": inline_profile([2000.0])}, offers, horizon_months=2, explain=False,
                      pricing=("on_demand", "capacity_block"))
    assert alone.status == both.status == "optimal"
    served = lambda r: [ln for ln in r.lines if ln.pricing == "capacity_block" and "chat" in ln.workloads]  # noqa: E731
    assert [(ln.days, ln.count) for ln in served(both)] == [(ln.days, ln.count) for ln in served(alone)]
    assert {ln.days for ln in served(both)} == {63}
    assert sum(ln.total_usd for ln in served(both)) == pytest.approx(sum(ln.total_usd for ln in served(alone)))


def test_one_instance_at_a_time_holds_for_reserved_units_too(snapshot):
    # an offer without a cluster fabric runs a job on one instance at a time, whatever its pricing (the rule had
    # missed every committed unit: 11 x g6e.xlarge reserved for one job)
    offers = _aws(snapshot, ["us-east-1"], ["reserved_1y"], ["g6e.xlarge"])
    job = FleetWorkload(name="job", workload=Workload(model=_model_params(1e9), task="train", tokens=2e10,
                                                      deadline_hours=24), deadline_hours=24)
    problem = make_problem([job], {}, offers, horizon_months=1)
    sol = solve_cost(problem)
    assert sol.report.status == "infeasible" or max(
        (a for (_, ok, _), a in sol.A.items()), default=0.0) <= 1 + 1e-6


def _model_params(n):
    from gpuopt.api import _model_spec

    return _model_spec(None, n)


def test_a_bigger_catalog_never_gives_a_dearer_training_plan(snapshot):
    # 4 x g6e.xlarge spot (no cluster fabric: one instance at a time for a job) had "replaced" the EFA g6e.12xlarge
    # a 24-hour job needed: $655.34 with it in the catalog, $276.84 without it
    g6e = snapshot[(snapshot["provider"] == "aws") & (snapshot["region"] == "us-east-1")
                   & snapshot["instance_type"].isin(["g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge"])]
    job = FleetWorkload(name="job", workload=Workload(model=_model_params(1e9), task="train", tokens=2e10,
                                                      deadline_hours=24), deadline_hours=24, allow_spot=True)
    full = plan_fleet([job], {}, g6e.reset_index(drop=True), horizon_months=1, explain=False)
    less = plan_fleet([job], {}, g6e[g6e["instance_type"] != "g6e.xlarge"].reset_index(drop=True), horizon_months=1,
                      explain=False)
    assert full.status == less.status == "optimal"
    assert full.total_usd <= less.total_usd + 0.01
