"""The exact enumeration of optimizer/planning/exact.py against the planning MILP (optimizer.planning.solve,
exact=False): the same optimum on random small catalogs (replicas and instances per unit, min_replicas floors, several
blocks, placement groups, commitments of several payment options), handed back to the MILP whenever workloads could
share."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpuopt.cli import app
from optimizer.planning.candidates import Candidate
from optimizer.planning.exact import separable, solve_separable
from optimizer.planning.problem import Budgets, FleetBlock, FleetProblem, FleetWorkload
from optimizer.planning.solve import solve_cost


#: The MILP the enumerations are checked against: HiGHS. CBC 2.10.3 (PuLP's bundled binary) called a plan of a
#: three-block, two-workload model optimal at $13,782.40 where $13,382.36 is feasible (found by this file's property
#: test; with "cuts off" or "heuristicsOnOff off" CBC finds it too); HiGHS agrees with the enumeration.
MILP_REFERENCE = "highs"

def _cand(region, itype, pricing, usd, theta, k=1, r=1):
    offer = {"provider": "t", "region": region, "zone": "", "instance_type": itype, "pricing": pricing,
             "payment": "no_upfront" if pricing.startswith("reserved") else "", "usd_per_hour": usd,
             "recurring_usd_per_hour": usd if pricing.startswith("reserved") else 0.0, "upfront_usd": 0.0,
             "gpu_model": "L4", "gpu_count": 1.0, "gpu_memory_gib": 22.35, "interconnect": "pcie",
             "source": "test", "as_of": "2026-01-01"}
    return Candidate(key=f"{region}|{itype}|{pricing}", offer=offer, instances_per_unit=k, replicas_per_unit=r,
                     sizing=SimpleNamespace(gpus_per_replica=1.0), usd_per_unit_hour=usd * k, throughput_per_unit=theta,
                     shape=itype)


def _problem(cands, demands, mins, H=12, placement="region", mixed=False, **kw):
    """A problem over ``cands``; ``mixed``: its workloads may mix replica shapes (``--mixed-replicas``; each test
    candidate's shape is its instance type), else one shape per workload and region (the default, issue 31)."""
    names = list(cands)
    n = len(next(iter(demands.values())))
    blocks = [FleetBlock(start_hour=i * 730 / n, hours=730 / n, demand={w: demands[w][i] for w in names},
                         label=f"b{i}") for i in range(n)]
    ws = [FleetWorkload(name=w, workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")),
                        min_replicas=mins[w], allow_spot=True, mixed_replicas=mixed) for w in names]
    return FleetProblem(ws, blocks, cands, {}, horizon_months=H, placement=placement, **kw)


_unit = st.tuples(st.floats(0.3, 3.0), st.sampled_from([40.0, 90.0, 150.0, 260.0]),
                  st.sampled_from(["on_demand", "reserved_1y", "spot"]),
                  st.sampled_from(["r1", "r2"]), st.sampled_from([(1, 1), (1, 2), (2, 1)]))


def _cands(units, tag=""):
    return [_cand(reg, f"{tag}i{i}", pricing, usd, th, k, r)
            for i, (usd, th, pricing, reg, (k, r)) in enumerate(units)]


@settings(max_examples=40, deadline=None)
@given(units=st.lists(_unit, min_size=2, max_size=5),
       demand=st.lists(st.sampled_from([0.0, 60.0, 130.0, 250.0, 420.0]), min_size=1, max_size=6),
       m=st.integers(0, 2), H=st.sampled_from([1, 12, 36]), placement=st.sampled_from(["region", "any"]),
       cap=st.sampled_from([1, 2, 16]), spot_ok=st.booleans())
def test_enumeration_equals_the_milp_for_one_workload(units, demand, m, H, placement, cap, spot_ok):
    # spot units: capped per group (spot_capacity instances), outside the redundancy floors unless spot_only_ok
    cands = {"a": _cands(units)}
    pr = _problem(cands, {"a": demand}, {"a": m}, H, placement, spot_capacity=cap)
    pr.workloads[0].spot_only_ok = spot_ok
    ex = solve_separable(pr)
    if separable(pr) is not None:  # e.g. a 36-month horizon renews 1-year terms: several periods
        assert ex is None
        return
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    if milp.report.status != "optimal":
        assert ex is None
        return
    assert ex is not None and ex.report.status == "optimal" and ex.report.solver == "enumeration"
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)


@settings(max_examples=20, deadline=None)
@given(ua=st.lists(_unit, min_size=1, max_size=3), ub=st.lists(_unit, min_size=1, max_size=3),
       da=st.lists(st.sampled_from([60.0, 130.0, 250.0]), min_size=2, max_size=2),
       db=st.lists(st.sampled_from([0.0, 90.0, 300.0]), min_size=2, max_size=2), m=st.integers(0, 2))
def test_workloads_without_a_shared_commitment_are_planned_apart_exactly(ua, ub, da, db, m):
    # distinct instance types per workload: no committed offer can be shared, so the plan splits exactly
    cands = {"a": _cands(ua, "a"), "b": _cands(ub, "b")}
    pr = _problem(cands, {"a": da, "b": db}, {"a": m, "b": 1})
    assert separable(pr) is None
    ex = solve_separable(pr)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    if milp.report.status == "infeasible":  # e.g. only spot for b, whose replica must not be on spot alone
        assert ex is None
        return
    assert milp.report.status == "optimal" and ex is not None
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(units=st.lists(_unit.filter(lambda u: u[2] != "spot"), min_size=1, max_size=4),
       da=st.sampled_from([60.0, 130.0, 250.0, 420.0]), db=st.sampled_from([0.0, 90.0, 300.0]),
       ma=st.integers(0, 2), mb=st.integers(0, 2))
def test_one_block_makes_shared_commitments_separable_exactly(units, da, db, ma, mb):
    # the same instance types (reservations included) for both workloads, one demand block: a committed instance is
    # in use by one workload in that block, so planning each with its own commitments is the shared optimum (issue
    # 30: 200 constant services went to the MILP for 400 s); the MILP, free to share, finds no cheaper plan
    cands = {"a": _cands(units), "b": _cands(units)}
    pr = _problem(cands, {"a": [da], "b": [db]}, {"a": ma, "b": mb})
    assert separable(pr) is None
    ex = solve_separable(pr)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    if milp.report.status == "infeasible":
        assert ex is None
        return
    assert milp.report.status == "optimal" and ex is not None and ex.report.status == "optimal"
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)
    # with two blocks the same offers could be time-shared: not separable, the shared enumeration or the MILP plans
    two = _problem(cands, {"a": [da, 0.0], "b": [0.0, db]}, {"a": 0, "b": 0})
    if any(c.committed for c in cands["a"]):
        assert separable(two) == "a committed offer two workloads can share"


def test_the_milp_plans_whatever_could_share_or_is_bounded():
    shared = [_cand("r1", "x", "reserved_1y", 1.0, 100.0), _cand("r1", "x", "on_demand", 1.6, 100.0)]
    pr = _problem({"a": shared, "b": list(shared)}, {"a": [100.0, 0.0], "b": [0.0, 100.0]}, {"a": 0, "b": 0})
    assert separable(pr) == "a committed offer two workloads can share"
    assert solve_separable(pr) is None
    # and the MILP shares the one reservation between the day and the night service: 1 instance bought, not 2
    # (solve_cost plans it by optimizer.planning.shared: tests/test_shared.py)
    sol = solve_cost(pr, gap_rel=0.0, exact=False)
    assert sol.report.solver != "enumeration" and sum(sol.N.values()) == 1
    one = [_cand("r1", "x", "on_demand", 1.0, 100.0)]
    assert separable(_problem({"a": one}, {"a": [50.0]}, {"a": 1}, budgets=Budgets(monthly=10_000.0))) is not None
    spot = one + [_cand("r1", "x", "spot", 0.4, 90.0)]
    assert separable(_problem({"a": spot}, {"a": [50.0]}, {"a": 1})) is None
    two = {"a": spot, "b": [_cand("r1", "x", "spot", 0.4, 90.0)]}  # one capped spot group, two workloads
    assert separable(_problem(two, {"a": [50.0], "b": [50.0]}, {"a": 1, "b": 1})) == \
        "a capped spot group two candidates share"


def test_a_long_profile_is_exact_where_the_milp_is_slow():
    # 240 distinct hourly demands, a diurnal curve: the MILP (exact=False) is given 8 s and reaches the same plan
    # or stops with a gap; the enumeration proves the optimum, and never costs more than the MILP's plan.
    import math

    demand = [round(300 + 250 * math.sin(i / 24 * 2 * math.pi) + (i % 7) * 3.1, 1) for i in range(240)]
    cands = {"a": [_cand("r1", "s", "on_demand", 1.2, 90.0), _cand("r1", "s", "reserved_1y", 0.75, 90.0),
                   _cand("r1", "b", "on_demand", 4.0, 400.0, r=2), _cand("r1", "b", "reserved_1y", 2.6, 400.0, r=2),
                   _cand("r2", "s", "on_demand", 1.3, 90.0)]}
    pr = _problem(cands, {"a": demand}, {"a": 2})
    ex = solve_separable(pr)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, time_limit_s=8.0)
    assert ex is not None and ex.report.status == "optimal"
    assert ex.cost <= milp.cost + 1e-6
    if milp.report.status == "optimal":
        assert ex.cost == pytest.approx(milp.cost, rel=1e-9)


def test_cli_says_how_the_plan_was_solved():
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--no-explain", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["status"] == "optimal" and d["solver"]["method"] == "enumeration"
    # a budget that does not bind: the plan without it keeps it, so it is the plan (no MILP)
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--no-explain", "--budget", "100000", "--format", "json"])
    d2 = json.loads(r.stdout)
    assert d2["solver"]["method"] == "enumeration" and d2["total_usd"] == pytest.approx(d["total_usd"], abs=0.01)
    # one that binds (below the plan's dearest month, its upfront month) goes to the MILP
    tight = d["max_month_usd"] - 1.0
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--no-explain", "--budget", f"{tight:.2f}", "--format", "json"])
    d3 = json.loads(r.stdout)
    assert d3["solver"]["method"] == "milp"
    if d3["status"] == "optimal":
        assert d3["max_month_usd"] <= tight + 0.01 and d3["total_usd"] >= d["total_usd"] - 0.01
    # zone spread is the MILP's
    r = CliRunner().invoke(app, ["recommend", "--model", "meta-llama/Llama-2-7b-hf", "--tokens-per-second", "500",
                                 "--no-explain", "--min-replicas", "2", "--spread", "zones", "--format", "json"])
    assert json.loads(r.stdout)["solver"]["method"] == "milp"


@settings(max_examples=30, deadline=None)
@given(units=st.lists(_unit, min_size=2, max_size=4),
       demand=st.lists(st.sampled_from([60.0, 130.0, 250.0]), min_size=1, max_size=3),
       monthly=st.one_of(st.none(), st.floats(100.0, 3000.0)), upfront=st.one_of(st.none(), st.floats(0.0, 5000.0)),
       quota=st.one_of(st.none(), st.integers(1, 6)))
def test_limits_that_do_not_bind_keep_the_enumeration_and_those_that_do_go_to_the_milp(units, demand, monthly,
                                                                                       upfront, quota):
    cands = {"a": [_cand(reg, f"i{i}", pricing, usd, th, k, r) if pricing != "reserved_1y" else
                   _cand(reg, f"i{i}", pricing, usd, th, k, r)
                   for i, (usd, th, pricing, reg, (k, r)) in enumerate(units)]}
    pr = _problem(cands, {"a": demand}, {"a": 1}, budgets=Budgets(monthly=monthly, upfront=upfront),
                  max_instances=quota)
    from optimizer.planning.solve import solve_within_limits

    ex = solve_within_limits(pr)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    if ex is None:
        return  # a limit binds (or nothing fits): the MILP's plan stands
    assert milp.report.status == "optimal"
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("kw", [dict(horizon=36, pricing=("on_demand",)),
                                dict(horizon=18, start_month=4, pricing=("on_demand", "spot"), allow_spot=True)])
def test_several_periods_without_commitments_are_planned_exactly(kw, monkeypatch):
    # a fresh user: with --horizon 36 even "all on demand" went to the MILP (three periods, cut at the renewals of
    # 1-year terms) and came back "not proven". With hourly units only, every block stands alone.
    from gpuopt import api
    import optimizer.planning.exact as E

    r = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=800, explain=False, **kw)
    assert r.plan.status == "optimal" and r.plan.solver["method"] == "enumeration" and r.plan.solver["periods"] > 1
    monkeypatch.setattr(E, "solve_separable", lambda *a, **k: None)
    m = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=800, explain=False, **kw)
    assert m.plan.solver["method"] == "milp" and m.plan.status == "optimal"
    assert r.plan.total_usd == pytest.approx(m.plan.total_usd, abs=0.01)
    assert r.plan.cash_by_month_usd == pytest.approx(m.plan.cash_by_month_usd, abs=0.01)


def _periods_problem(cands, demands, mins, H, windows, **kw):
    """A problem cut into periods as make_problem cuts them (optimizer.planning.horizon.periods: workload starts/ends,
    term renewals), each period with the same blocks; ``windows`` = workload -> (start_month, end_month)."""
    from optimizer.planning.horizon import periods as make_periods

    names = list(cands)
    ws = [FleetWorkload(name=w, workload=SimpleNamespace(task="serve", model=SimpleNamespace(name="m")),
                        min_replicas=mins[w], allow_spot=True, start_month=windows[w][0], end_month=windows[w][1])
          for w in names]
    ps = make_periods([w.activity() for w in ws], H)
    n = len(next(iter(demands.values())))
    blocks = [FleetBlock(start_hour=i * 730 / n, hours=730 / n,
                         demand={w: demands[w][i] for w in names if w in p.serving}, label=f"b{i}", period=p.index)
              for p in ps for i in range(n)]
    return FleetProblem(ws, blocks, cands, {}, horizon_months=H, placement="region", periods=ps, **kw)


_unit_c = st.tuples(st.floats(0.3, 3.0), st.sampled_from([40.0, 90.0, 150.0, 260.0]),
                    st.sampled_from(["on_demand", "reserved_1y", "reserved_3y", "spot"]),
                    st.sampled_from(["r1", "r2"]), st.sampled_from([(1, 1), (1, 2), (2, 1)]))


@settings(max_examples=40, deadline=None)
@given(units=st.lists(_unit_c, min_size=2, max_size=5),
       demand=st.lists(st.sampled_from([0.0, 60.0, 130.0, 250.0, 420.0]), min_size=1, max_size=4),
       m=st.integers(0, 2), H=st.sampled_from([18, 24, 36]),
       window=st.sampled_from([(0, None), (4, None), (0, 15), (6, 20)]), cap=st.sampled_from([1, 16]),
       leftover=st.sampled_from([0.0, 0.5]))
def test_several_periods_with_commitments_equal_the_milp(units, demand, m, H, window, cap, leftover):
    # a fresh user: one 7B workload with --horizon 36 took 10.9 s (three periods, cut at the renewals of 1-year
    # terms, went to the MILP); each term's capacity is now one number per period it covers, enumerated exactly
    start, end = window
    cands = {"a": _cands(units)}
    pr = _periods_problem(cands, {"a": demand}, {"a": m}, H, {"a": (start, min(end or H, H))}, spot_capacity=cap,
                          leftover_value=leftover)
    assert separable(pr) is None
    ex = solve_separable(pr)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    if milp.report.status != "optimal":
        assert ex is None
        return
    if ex is None:  # a frontier outgrew its limits (many small units over many periods): solve_cost uses the MILP
        return
    assert ex.report.status == "optimal" and ex.report.solver == "enumeration"
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)


def test_cbc_preprocessing_bug_does_not_reach_the_plan():
    """CBC 2.10.3 (PuLP's binary) with its default preprocessing called $35,040 optimal for a 2-instance-unit
    reservation against one capped spot unit, where 1 reservation unit + the spot unit meets the demand for $26,280
    (coin-or/Cbc#293: CglProbing on general integers; preprocessing off is the maintainers' workaround). Found when
    the enumeration over several periods disagreed with the MILP."""
    cands = {"a": _cands([(1.0, 260.0, "reserved_1y", "r2", (2, 1)), (1.0, 260.0, "spot", "r2", (1, 1))])}
    pr = _problem(cands, {"a": [420.0]}, {"a": 0}, 12, "any", mixed=True, spot_capacity=1)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    assert milp.report.status == "optimal"
    # 1 reserved unit = 2 instances x $1/h x 8,760 h; the spot unit $1/h x 8,760 h
    assert milp.cost == pytest.approx(2 * 8760.0 + 8760.0)
    assert solve_separable(pr).cost == pytest.approx(milp.cost)


def test_a_placement_leaf_not_solved_in_its_time_is_an_open_bound_not_an_infeasible_one(monkeypatch):
    # the placement search dropped a leaf whose MILP found no plan in its time as if it had none, then called a
    # dearer leaf optimal (CBC, 240 blocks, 8 s: "$46,643 optimal" for a $31,799 optimum). Here the cheap region's
    # leaf is made to run out of time: the plan of the dear region may be returned, never as proven optimal.
    import optimizer.planning.solve as fl
    from optimizer.planning.solver import SolveReport

    cands = {"a": [_cand("r1", "s", "on_demand", 1.0, 100.0), _cand("r2", "s", "on_demand", 1.5, 100.0)]}
    pr = _problem(cands, {"a": [150.0, 80.0]}, {"a": 1})
    real = fl.solve_fleet
    calls = {"mip": 0}

    def first_leaf_times_out(m, **kw):
        if m.isMIP():
            calls["mip"] += 1
            if calls["mip"] == 1:
                return SolveReport("not_solved", solver="cbc", message="time limit")
        return real(m, **kw)

    monkeypatch.setattr(fl, "solve_fleet", first_leaf_times_out)
    sol = solve_cost(pr, gap_rel=0.0, exact=False)
    assert calls["mip"] >= 1
    if sol.report.status == "optimal":  # only if the cheap region's plan was found after all
        assert sol.cost == pytest.approx(1.0 * 2 * 730 * 12 / 2 + 1.0 * 1 * 730 * 12 / 2)
    else:
        assert sol.report.status in ("time_limit", "not_solved") and (sol.report.gap or 1.0) > 0


def test_pruning_keeps_a_dearer_on_demand_unit_that_reaches_the_redundancy_floor_cheaper():
    # a breaker's case: A (3 instances, 1 replica, 160 tokens/s, $1.5/h a unit) beats B (1 instance, 2 replicas,
    # 30 tokens/s, $1.6/h) on price and throughput, but with min_replicas 3 one A plus one B ($3.1/h) is the
    # cheapest way to three replicas; pruning on (price, throughput) alone left 3 x A ($4.5/h) "optimal"
    a1 = _cand("r1", "A", "on_demand", 0.5, 160.0, k=3, r=1)
    b1 = _cand("r1", "B", "on_demand", 1.6, 30.0, k=1, r=2)
    a2 = _cand("r2", "A", "on_demand", 0.5, 160.0, k=3, r=1)
    pr = _problem({"a": [a1, b1, a2]}, {"a": [100.0]}, {"a": 3}, mixed=True)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    ex = solve_separable(pr)
    assert milp.report.status == "optimal"
    assert milp.cost == pytest.approx(3.1 * 730 * 12) and ex.cost == pytest.approx(milp.cost)
