"""Plans of serving workloads that can share a commitment (optimizer/planning/shared.py) against the planning MILP
(optimizer.planning.solve, exact=False, gap 0): the same optimum on random small catalogs — two or three workloads,
committed offers some of them share, placement groups, replicas and instances per unit, redundancy floors, several
blocks — and the bounds it proves optimality with never above the optimum."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from optimizer.planning import shared
from optimizer.planning.exact import solve_separable
from optimizer.planning.problem import Budgets
from optimizer.planning.solve import solve_cost, verify
from tests.test_exact import _cand, _problem

_unit = st.tuples(st.floats(0.3, 3.0), st.sampled_from([40.0, 90.0, 150.0, 260.0]),
                  st.sampled_from(["on_demand", "reserved_1y", "reserved_1y", "reserved_3y"]),
                  st.sampled_from(["r1", "r2"]), st.sampled_from([(1, 1), (1, 2), (2, 1)]),
                  st.sampled_from(["x", "y", "z", "u"]))


#: The MILP the enumerations are checked against: HiGHS. CBC 2.10.3 (PuLP's bundled binary) called a plan of a
#: three-block, two-workload model optimal at $13,782.40 where $13,382.36 is feasible (found by this file's property
#: test; with "cuts off" or "heuristicsOnOff off" CBC finds it too); HiGHS agrees with the enumeration.
MILP_REFERENCE = "highs"

def _shared_cands(units, tag):
    """Candidates of one workload: instance types x, y, z, u are common to all workloads (a committed offer of the
    same type, region and pricing is one offer they can share); each workload sizes them its own way (throughput,
    replicas, instances per unit)."""
    out, seen = [], set()
    for usd, th, pricing, reg, (k, r), itype in units:
        key = (reg, itype, pricing)
        if key in seen:
            continue
        seen.add(key)
        # one price per (region, type, pricing) whoever uses it: the price is the offer's, not the workload's
        price = {"x": 1.0, "y": 1.7, "z": 3.1, "u": 0.55}[itype] * {"r1": 1.0, "r2": 1.15}[reg] * \
            {"on_demand": 1.0, "reserved_1y": 0.62, "reserved_3y": 0.41}[pricing]
        out.append(_cand(reg, itype, pricing, price, th * (0.5 + usd / 3.0), k, r))
    return out


def _plan_both(pr):
    ex = shared.solve_shared(pr, gap_rel=0.0)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE, time_limit_s=30.0)
    return ex, milp


@settings(max_examples=80, deadline=None)
@given(units=st.lists(st.lists(_unit, min_size=1, max_size=5), min_size=2, max_size=3),
       demand=st.lists(st.lists(st.sampled_from([0.0, 40.0, 90.0, 180.0, 330.0]), min_size=3, max_size=3),
                       min_size=3, max_size=3),
       mins=st.lists(st.integers(0, 2), min_size=3, max_size=3), placement=st.sampled_from(["region", "any"]))
def test_shared_enumeration_equals_the_milp(units, demand, mins, placement):
    names = ["a", "b", "c"][: len(units)]
    cands = {w: _shared_cands(u, w) for w, u in zip(names, units)}
    pr = _problem(cands, {w: demand[i] for i, w in enumerate(names)}, {w: mins[i] for i, w in enumerate(names)},
                  12, placement)
    ex, milp = _plan_both(pr)
    if not shared.applies(pr):
        event("nothing to share")
        assert ex is None
        return
    event(f"shared, milp {milp.report.status}, N {sum(milp.N.values())}")
    if milp.report.status != "optimal":
        assert ex is None or milp.report.status == "time_limit"
        return
    assert ex is not None, "the enumeration gave up on a tiny problem"
    assert ex.report.status == "optimal" and ex.report.solver == "enumeration"
    assert verify(pr, ex) is None
    assert ex.cost == pytest.approx(milp.cost, rel=1e-6, abs=1e-6)


def test_day_and_night_services_share_one_reservation():
    # a day service and a night service, one reserved offer both can run on: one instance bought, used by each in
    # turn (two bought when planned apart), and the plan says it is proven by enumeration
    res = [_cand("r1", "x", "reserved_1y", 1.0, 100.0), _cand("r1", "x", "on_demand", 1.6, 100.0)]
    pr = _problem({"a": res, "b": list(res)}, {"a": [100.0, 0.0], "b": [0.0, 100.0]}, {"a": 0, "b": 0})
    assert shared.applies(pr)
    sol = solve_cost(pr, gap_rel=0.0)
    assert sol.report.solver == "enumeration" and sol.report.status == "optimal"
    assert sum(sol.N.values()) == 1
    assert sol.A[("a", res[0].okey, 0)] == 1.0 and sol.A[("b", res[0].okey, 1)] == 1.0
    # 1 instance x 1.0 USD/h x 8,760 h, where each apart would pay 2 x 8,760 or on demand 1.6 x 4,380 each
    assert sol.cost == pytest.approx(1.0 * 730 * 12)
    apart = solve_separable(pr, apart=True)
    assert apart.cost == pytest.approx(2 * 1.6 * 365 * 12)  # each alone: on demand in its half of the hours


def test_the_bound_of_peak_priced_commitments_is_a_bound_and_beats_the_even_spread():
    # _pi_bound never exceeds the exact joint cost, and is at least the bound that spreads commitments evenly
    import numpy as np

    from optimizer.planning.exact import TOL

    res = [_cand("r1", "x", "reserved_1y", 1.0, 100.0), _cand("r1", "x", "on_demand", 1.6, 100.0),
           _cand("r1", "s", "on_demand", 0.5, 20.0)]
    da, db = [100.0, 30.0, 0.0, 250.0], [0.0, 100.0, 190.0, 20.0]
    pr = _problem({"a": res, "b": list(res)}, {"a": da, "b": db}, {"a": 1, "b": 0}, mixed=True)
    exact = shared.solve_shared(pr, gap_rel=0.0)
    milp = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    assert exact.cost == pytest.approx(milp.cost)
    p = pr.periods[0]
    hours = np.array([b.hours * p.months for b in pr.blocks])
    slot_for = {s.okey: (k, pr.slot_cost(s)) for k, s in pr.slots.items()}
    sides = [shared._Side(w, pr.cands[w.name], pr, slot_for, [], hours,
                          np.array([b.demand[w.name] for b in pr.blocks]) * (1 - TOL)) for w in pr.workloads]
    lb = shared._pi_bound(sides)
    from optimizer.planning.exact import shared_lower_bound

    even = shared_lower_bound(pr)
    assert even - 1e-6 <= lb <= exact.cost + 1e-6
    assert lb > even  # the peak hours carry the reservation


def test_budgets_that_do_not_bind_keep_the_shared_plan_and_those_that_bind_go_to_the_milp():
    res = [_cand("r1", "x", "reserved_1y", 1.0, 100.0), _cand("r1", "x", "on_demand", 1.6, 100.0)]
    cands = {"a": res, "b": list(res)}
    loose = _problem(cands, {"a": [100.0, 0.0], "b": [0.0, 100.0]}, {"a": 0, "b": 0},
                     budgets=Budgets(monthly=10_000.0))
    sol = solve_cost(loose, gap_rel=0.0)
    assert sol.report.solver == "enumeration" and "do not bind" in sol.report.message
    assert sol.cost == pytest.approx(1.0 * 730 * 12)
    tight = _problem(cands, {"a": [100.0, 0.0], "b": [0.0, 100.0]}, {"a": 0, "b": 0},
                     budgets=Budgets(commitment=100.0))  # no reservation allowed: on demand, by the MILP
    sol = solve_cost(tight, gap_rel=0.0)
    assert sol.report.solver != "enumeration" and sum(sol.N.values()) == 0
    assert sol.cost == pytest.approx(2 * 1.6 * 365 * 12)


def test_caps_hand_the_problem_back(monkeypatch):
    res = [_cand("r1", "x", "reserved_1y", 1.0, 100.0), _cand("r1", "x", "on_demand", 1.6, 100.0)]
    pr = _problem({"a": res, "b": list(res)}, {"a": [100.0, 0.0], "b": [0.0, 100.0]}, {"a": 0, "b": 0})
    monkeypatch.setattr(shared, "MAX_BOX", 0)
    # the co-location past the caps is left out with its bound: the plan of each apart (each on demand in its half
    # of the hours, 2 x 1.6 x 4,380 h), "feasible", its gap from the peak-priced bound (8,760: the optimum here)
    part = shared.solve_shared(pr)
    assert part.report.status == "feasible" and part.cost == pytest.approx(2 * 1.6 * 365 * 12)
    assert part.report.bound == pytest.approx(1.0 * 730 * 12) and part.report.gap == pytest.approx(0.375)
    sol = solve_cost(pr, gap_rel=0.0)  # the MILP plans it from there, to the optimum: one shared reservation
    assert sol.report.solver != "enumeration" and sol.cost == pytest.approx(1.0 * 730 * 12)
    assert sol.report.status == "optimal" and math.isfinite(sol.cost)


def test_the_plan_users_get_is_the_enumerations_where_cbc_misreports():
    # two workloads in one region, three blocks: CBC 2.10.3 calls $13,782.40 optimal where $13,382.36 is feasible
    # (MILP_REFERENCE); the plan solve_cost gives (enumeration first) is the true optimum, proven, and HiGHS agrees
    units = [[(1.0, 40.0, "on_demand", "r1", (1, 1), "y"), (2.0, 260.0, "reserved_1y", "r1", (1, 1), "x")],
             [(1.0, 40.0, "on_demand", "r1", (1, 1), "x"), (1.0, 40.0, "reserved_1y", "r1", (1, 1), "x"),
              (1.0, 40.0, "reserved_1y", "r1", (1, 1), "u")]]
    cands = {w: _shared_cands(u, w) for w, u in zip(["a", "b"], units)}
    pr = _problem(cands, {"a": [0.0, 40.0, 330.0], "b": [0.0, 0.0, 0.0]}, {"a": 0, "b": 1}, 12, "region",
                  mixed=True)
    plan = solve_cost(pr, gap_rel=0.0)
    assert plan.report.status == "optimal" and plan.cost == pytest.approx(13382.36, abs=0.01)
    ref = solve_cost(pr, gap_rel=0.0, exact=False, solver=MILP_REFERENCE)
    assert ref.cost == pytest.approx(plan.cost, abs=0.01)
