"""The planning MILP against brute-force enumeration on small catalogs (DESIGN.md: "a brute-force check agrees
on small catalogs"), and the safety of dominance pruning. Candidates are built by hand here so that the MILP is
tested on its own; tests/test_planner.py runs the whole planner on real offers and real sizing."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.records import HOURS_PER_MONTH
from optimizer.model import Candidate, PlanProblem, build_model, prune_dominated, prune_training
from optimizer.solve import require_optimal, solve


def _cand(i: int, usd_per_hour: float, theta: float, pricing: str = "on_demand") -> Candidate:
    offer = {"provider": "test", "region": "r1", "zone": "", "instance_type": f"t{i}", "pricing": pricing,
             "payment": "all_upfront" if pricing.startswith("reserved") else "", "usd_per_hour": usd_per_hour,
             "gpu_model": "L4", "gpu_count": 1.0, "gpu_memory_gib": 24.0, "source": "test", "as_of": "2026-01-01"}
    return Candidate(key=f"k{i}|{pricing}", offer=offer, instances_per_unit=1, replicas_per_unit=1,
                     sizing=SimpleNamespace(gpus_per_replica=1.0), usd_per_unit_hour=usd_per_hour, throughput_per_unit=theta)


def _serve_problem(cands, demand, budget=None):
    return PlanProblem(workload=SimpleNamespace(task="serve"), candidates=cands, demand_tokens_per_second=demand,
                       work_flops=None, run_hours=HOURS_PER_MONTH, horizon_hours=HOURS_PER_MONTH, budget_usd=budget)


def _brute_force_serve(cands, demand, max_units=8):
    best = math.inf
    for units in itertools.product(range(max_units + 1), repeat=len(cands)):
        cap = sum(u * c.throughput_per_unit for u, c in zip(units, cands))
        if cap + 1e-9 >= demand:
            best = min(best, sum(u * c.usd_per_unit_hour * HOURS_PER_MONTH for u, c in zip(units, cands)))
    return best


def test_serving_milp_matches_hand_solution():
    # Two offers: A costs 1 $/h for 100 tok/s, B costs 1.5 $/h for 180 tok/s. Demand 350 tok/s:
    # 2B (360) = 3.0 $/h beats 4A = 4.0 $/h and 1A+2B = 4.0 $/h, so the optimum is 2 x B = 3.0 x 730 = 2190 USD.
    cands = [_cand(0, 1.0, 100.0), _cand(1, 1.5, 180.0)]
    m, U, Y = build_model(_serve_problem(cands, 350.0))
    sol = require_optimal(solve(m, U, Y))
    assert sol.objective == pytest.approx(2190.0)
    assert sol.units == {"k1|on_demand": 2}


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(st.tuples(st.floats(0.2, 20.0), st.floats(10.0, 500.0), st.booleans()), min_size=1, max_size=3),
    demand=st.floats(10.0, 1500.0),
)
def test_serving_milp_equals_brute_force(specs, demand):
    cands = [_cand(i, p, th, "reserved_1y" if r else "on_demand") for i, (p, th, r) in enumerate(specs)]
    need_max = max(math.ceil(demand / c.throughput_per_unit) for c in cands)
    if need_max > 8:  # keep the enumeration small; the MILP does not need this bound
        return
    m, U, Y = build_model(_serve_problem(cands, demand))
    sol = require_optimal(solve(m, U, Y))
    expected = _brute_force_serve(cands, demand)
    assert sol.objective == pytest.approx(expected, rel=1e-6)
    cap = sum(sol.units.get(c.key, 0) * c.throughput_per_unit for c in cands)
    assert cap + 1e-6 >= demand


@settings(max_examples=60, deadline=None)
@given(
    specs=st.lists(st.tuples(st.floats(0.2, 20.0), st.floats(10.0, 500.0), st.booleans()), min_size=1, max_size=6),
    demand=st.floats(10.0, 1500.0),
)
def test_dominance_pruning_keeps_the_optimum(specs, demand):
    cands = [_cand(i, p, th, "reserved_3y" if r else "on_demand") for i, (p, th, r) in enumerate(specs)]
    full = _serve_problem(cands, demand)
    kept, dropped = prune_dominated(cands, full)
    assert len(kept) + dropped == len(cands)
    s_full = require_optimal(solve(*build_model(full)))
    s_pruned = require_optimal(solve(*build_model(_serve_problem(kept, demand))))
    assert s_pruned.objective == pytest.approx(s_full.objective, rel=1e-7)


def test_budget_below_cheapest_plan_is_infeasible():
    cands = [_cand(0, 1.0, 100.0)]
    # demand 250 needs 3 units = 3 x 730 = 2190 USD; a 2000 USD budget cannot pay for it
    sol = solve(*build_model(_serve_problem(cands, 250.0, budget=2000.0)))
    assert sol.status == "infeasible"
    sol = require_optimal(solve(*build_model(_serve_problem(cands, 250.0, budget=2190.0))))
    assert sol.objective == pytest.approx(2190.0)


def _train_problem(cands, work, deadline):
    return PlanProblem(workload=SimpleNamespace(task="train"), candidates=cands, demand_tokens_per_second=None,
                       work_flops=work, run_hours=deadline, horizon_hours=max(HOURS_PER_MONTH, deadline))


def test_training_on_demand_pays_for_hours_used():
    # 1e15 FLOP/s per unit at 2 $/h; work 3.6e21 FLOPs = 1000 unit-hours (3.6e18 FLOPs each) -> 2000 USD, whatever the deadline,
    # and with a 100 h deadline at least 10 units run.
    cands = [_cand(0, 2.0, 1e15)]
    p = _train_problem(cands, 3.6e21, 100.0)
    m, U, Y = build_model(p)
    sol = require_optimal(solve(m, U, Y))
    assert sol.objective == pytest.approx(2000.0)
    assert sol.unit_hours["k0|on_demand"] == pytest.approx(1000.0)
    assert sol.units["k0|on_demand"] >= 10


def test_training_reservation_is_charged_its_whole_term():
    # A one-off training job pays the whole commitment of a reservation: 1.2 $/h x 8,760 h = 10,512 USD.
    # 700 unit-hours: on-demand 2 $/h x 700 = 1,400 USD wins (the reservation would sit idle 92 % of its term).
    cands = [_cand(0, 2.0, 1e15), _cand(1, 1.2, 1e15, "reserved_1y")]
    sol = require_optimal(solve(*build_model(_train_problem(cands, 700 * 3600e15, 730.0))))
    assert sol.objective == pytest.approx(1400.0)
    assert "k1|reserved_1y" not in sol.units
    # 10,000 unit-hours within 8,760 h: one reservation covers 8,760 (10,512 USD) and 1,240 on-demand
    # unit-hours cost 2,480: 12,992 USD < 20,000 all on-demand.
    sol = require_optimal(solve(*build_model(_train_problem(cands, 10000 * 3600e15, 8760.0))))
    assert sol.objective == pytest.approx(12992.0)
    assert sol.units["k1|reserved_1y"] == 1


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(st.tuples(st.floats(0.2, 20.0), st.floats(1e14, 2e15), st.booleans()), min_size=1, max_size=5),
    unit_hours=st.floats(10.0, 3000.0),
    deadline=st.floats(50.0, 730.0),
)
def test_training_pruning_keeps_the_optimum(specs, unit_hours, deadline):
    cands = [_cand(i, p, th, "reserved_1y" if r else "on_demand") for i, (p, th, r) in enumerate(specs)]
    work = unit_hours * 3600.0 * 1e15
    full = _train_problem(cands, work, deadline)
    kept, _ = prune_training(cands, full)
    s_full = solve(*build_model(full))
    s_pruned = solve(*build_model(_train_problem(kept, work, deadline)))
    assert s_full.status == s_pruned.status
    if s_full.status == "optimal":
        assert s_pruned.objective == pytest.approx(s_full.objective, rel=1e-6)


def test_training_reservation_works_at_most_its_term():
    # A 1-year reservation (8,760 h) cannot work 20,000 h: with a 20,000 h deadline and 15,000 unit-hours of work,
    # two reservations (17,520 unit-hours, 2 x 10,512 = 21,024 USD) beat one plus 6,240 on-demand unit-hours
    # (10,512 + 12,480 = 22,992) and all on-demand (30,000). Counting one reservation for all 20,000 h would
    # wrongly give 10,512.
    cands = [_cand(0, 2.0, 1e15), _cand(1, 1.2, 1e15, "reserved_1y")]
    sol = require_optimal(solve(*build_model(_train_problem(cands, 15000 * 3600e15, 20000.0))))
    assert sol.objective == pytest.approx(21024.0, rel=1e-6)
    assert sol.units["k1|reserved_1y"] == 2


def test_demand_exactly_equal_to_capacity_needs_no_extra_unit():
    # 2 units of 225.05627159352165 tok/s give exactly 450.1125431870433: no third unit for a solver tolerance
    cands = [_cand(0, 1.0, 225.05627159352165)]
    sol = require_optimal(solve(*build_model(_serve_problem(cands, 450.1125431870433))))
    assert sol.units == {"k0|on_demand": 2}


def test_huge_demand_is_met_in_full():
    # 1e10 tok/s with 8,477.32 tok/s units: ceil(1e10 / 8477.32) = 1,179,622 units; a tolerance of 1e-7 on an
    # unscaled row would accept 1,179,621 (short by ~2,000 tok/s)
    cands = [_cand(0, 1.0, 8477.32)]
    sol = require_optimal(solve(*build_model(_serve_problem(cands, 1e10))))
    assert sol.units["k0|on_demand"] == math.ceil(1e10 / 8477.32)


def test_max_instances_caps_an_instance_type_across_pricing_models():
    # quota of 2 instances of t0 in r1, whatever the pricing model: 2 on-demand + 2 reserved would break it
    cands = [_cand(0, 1.0, 100.0), _cand(0, 0.6, 100.0, "reserved_1y")]
    p = _serve_problem(cands, 350.0)
    p.max_instances_per_offer = 3
    sol = solve(*build_model(p))
    assert sol.status == "infeasible"  # 4 instances of t0 are needed
    p.max_instances_per_offer = 4
    sol = require_optimal(solve(*build_model(p)))
    assert sum(sol.units.values()) == 4
