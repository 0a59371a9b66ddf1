"""Reproducers of the failures a breaker found in the exact enumeration (optimizer/planning/exact.py), checked against
the planning MILP (optimizer.planning.solve.solve_cost(exact=False, gap_rel=0)): a frontier too big taken for an
infeasible group, a demand tolerance stricter than the plan check, frontiers that grew for tens of seconds (now handed
to the MILP past MAX_GENERATED: speed is measured in benchmarks/, here the outcome), a workload that needs nothing."""

from __future__ import annotations

import pytest

import optimizer.planning.exact as E
from optimizer.planning.exact import solve_separable
from optimizer.planning.solve import solve_cost, verify
from test_exact import _cand, _problem  # the same tiny catalogs as the enumeration's own tests


# ------------------------------------------------------------------------------------------------ (a) dearer plan
def test_a_group_whose_committed_frontier_is_too_big_is_not_skipped_as_infeasible():
    # Region r1: three cheap 1-year commitments of odd sizes; its committed frontier (peak 3000 tokens/s) has more
    # than MAX_STATES states, so _plan_group gives up (None). solve_separable then asks _frontier_too_big, which
    # rebuilds the committed frontier with every cost set to 0.0 -> it collapses to one state -> "not too big" ->
    # r1 is treated as INFEASIBLE and skipped, and the dearer on-demand region r2 is returned as "optimal".
    caps = [40.1, 47.3, 53.9]
    cs = [_cand("r1", f"c{j}", "reserved_1y", round(c * 0.005, 6), c) for j, c in enumerate(caps)]
    cs.append(_cand("r2", "h2", "on_demand", 1.0, 100.0))
    pr = _problem({"a": cs}, {"a": [3000.0, 2000.0]}, {"a": 1}, mixed=True)
    milp = solve_cost(pr, exact=False, gap_rel=0.0)
    assert milp.report.status == "optimal" and milp.cost == pytest.approx(131400.0)
    ex = solve_cost(pr)  # the default path: the enumeration answers
    if ex.report.solver == "enumeration":
        # today: 219000.0 (r2 on demand), status "optimal", gap 0
        assert ex.cost == pytest.approx(milp.cost, rel=1e-6), (ex.cost, ex.report)


def test_frontier_too_big_check_uses_zero_costs(monkeypatch):
    # The same defect on a tiny case, with MAX_STATES lowered so the committed frontier of r1 (69 states with its
    # real costs; 1 state with the zero costs _frontier_too_big uses) overflows.
    cs = [_cand("r1", f"c{j}", "reserved_1y", round(0.4 + 0.05 * j + 0.003 * j * j, 4), 40.0 + 7 * j)
          for j in range(5)]
    cs += [_cand("r1", "h", "on_demand", 3.0, 100.0), _cand("r2", "h2", "on_demand", 1.5, 100.0)]
    pr = _problem({"a": cs}, {"a": [400.0, 300.0]}, {"a": 1}, mixed=True)
    milp = solve_cost(pr, exact=False, gap_rel=0.0)
    assert milp.report.status == "optimal" and milp.cost == pytest.approx(33436.92)
    monkeypatch.setattr(E, "MAX_STATES", 20)
    ex = solve_separable(pr)
    # expected: None (hand the too-big problem to the MILP) or the optimum; today 45990.0 (r2), "optimal"
    assert ex is None or ex.cost == pytest.approx(milp.cost, rel=1e-6), (ex.cost, ex.report)


def test_demand_a_hair_above_a_capacity_multiple():
    # 3 units of 100 tokens/s for 300 x (1 + 5e-10): the MILP's proven optimum (3 units) passes verify (1e-9),
    # but the enumeration demands 1e-10 and buys a 4th unit: 2920 USD for 2190.
    pr = _problem({"a": [_cand("r1", "x", "on_demand", 1.0, 100.0)]}, {"a": [300.0 * (1 + 5e-10)]}, {"a": 0}, H=1)
    milp = solve_cost(pr, exact=False, gap_rel=0.0)
    assert milp.report.status == "optimal" and verify(pr, milp) is None
    ex = solve_separable(pr)
    assert ex is not None and verify(pr, ex) is None
    assert ex.cost <= milp.cost + 1e-6, (ex.cost, milp.cost)


# ------------------------------------------------------------------------------------------------ (d) slow / None
def test_many_small_units_for_a_big_demand_go_to_the_milp():
    # 5 instance types of 37..81 tokens/s (on demand + 1-year), 3 blocks, peak 20000 tokens/s, min_replicas 2.
    # The MILP proves the optimum (1164431.76 USD) in ~0.3 s; the enumeration takes ~20 s (each frontier state is
    # extended unit by unit up to the peak: ~4,500 hourly states x ~500 units per type). MAX_STATES never trips.
    cs = []
    for j in range(5):
        th = 37.0 + 11 * j
        cs.append(_cand("r1", f"h{j}", "on_demand", round(0.5 + 0.13 * j + 0.01 * j * j, 3), th))
        cs.append(_cand("r1", f"h{j}", "reserved_1y", round(0.3 + 0.09 * j + 0.013 * j * j, 3), th))
    pr = _problem({"a": cs}, {"a": [20000.0, 12000.0, 6000.0]}, {"a": 2}, mixed=True)
    milp = solve_cost(pr, exact=False, gap_rel=0.0)
    assert milp.report.status == "optimal"
    assert solve_separable(pr) is None  # past MAX_GENERATED: the MILP's
    sol = solve_cost(pr, gap_rel=0.0)
    assert sol.report.solver != "enumeration" and sol.cost == pytest.approx(milp.cost, rel=1e-9)


def test_recommend_a_big_aws_fleet_equals_the_milp():
    # gpuopt recommend --model meta-llama/Llama-2-7b-hf --tokens-per-second 100000 --provider aws: the enumeration
    # takes ~10 s (300000 tokens/s: ~117 s); the MILP (enumeration patched out) 0.3 s, with the same total.
    from gpuopt import api

    r = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=100000, providers=["aws"], explain=False)
    assert r.plan.status == "optimal"
    orig = E.solve_separable
    try:
        E.solve_separable = lambda *a, **k: None  # the MILP alone
        m = api.recommend(model="meta-llama/Llama-2-7b-hf", tokens_per_second=100000, providers=["aws"], explain=False)
    finally:
        E.solve_separable = orig
    assert m.plan.status == "optimal" and r.plan.total_usd == pytest.approx(m.plan.total_usd, abs=0.01)


def test_a_workload_needing_nothing_is_planned_without_the_milp():
    # demand 0 and min_replicas 0: the empty plan (0 USD) is optimal and the MILP says so; under a pricing subset
    # that leaves the workload no candidate (a strategy of the explanation), solve_separable returns None.
    pr = _problem({"a": [_cand("r1", "x", "reserved_1y", 1.0, 100.0)]}, {"a": [0.0]}, {"a": 0})
    milp = solve_cost(pr, exact=False, gap_rel=0.0, allowed={"on_demand"})
    assert milp.report.status == "optimal" and milp.cost == 0.0
    ex = solve_separable(pr, allowed={"on_demand"})
    assert ex is not None and ex.cost == 0.0
