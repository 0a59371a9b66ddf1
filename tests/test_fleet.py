"""The fleet model (several workloads, demand over blocks, shared committed base, spot caps, ROI) on hand-made
candidates, checked against hand solutions and brute-force enumeration (DESIGN.md: "a brute-force check agrees on
small catalogs"); the planner on real offers is exercised in tests/test_fleet_plan.py."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.planning.candidates import Candidate
from optimizer.planning.problem import FleetBlock, FleetProblem, FleetWorkload
from optimizer.planning.prune import prune_fleet
from optimizer.planning.solve import solve_cost, solve_roi, verify


def _cand(itype: str, pricing: str, usd_per_hour: float, theta: float, k: int = 1, r: int = 1) -> Candidate:
    offer = {"provider": "test", "region": "r1", "zone": "", "instance_type": itype, "pricing": pricing,
             "payment": "all_upfront" if pricing.startswith("reserved") else "", "usd_per_hour": usd_per_hour,
             "upfront_usd": 0.0, "gpu_model": "L4", "gpu_count": 1.0, "gpu_memory_gib": 22.35, "interconnect": "pcie",
             "source": "test", "as_of": "2026-01-01"}
    return Candidate(key=f"{itype}|{pricing}", offer=offer, instances_per_unit=k, replicas_per_unit=r,
                     sizing=SimpleNamespace(gpus_per_replica=1.0), usd_per_unit_hour=k * usd_per_hour,
                     throughput_per_unit=theta, shape=f"L4 x1 ({itype})")


def _wl(name: str, task: str = "serve", **kw) -> FleetWorkload:
    return FleetWorkload(name=name, workload=SimpleNamespace(task=task, model=SimpleNamespace(name="m")), **kw)


def _blocks(*demands: float, name: str = "chat") -> list[FleetBlock]:
    h = 730.0 / len(demands)
    return [FleetBlock(start_hour=i * h, hours=h, demand={name: d}, label=f"b{i}") for i, d in enumerate(demands)]


def test_reserved_base_plus_on_demand_peak():
    # day 1,000 tok/s, night 200; units of 250 tok/s; reserved 0.6 $/h billed 730 h a month for its 12-month term,
    # on-demand 1.0 $/h per block; a 12-month horizon. Per month, N reserved: 438 N + 365 x max(0, 4 - N) (day)
    # + 365 x max(0, 1 - N) (night): N=0 1,825; N=1 1,533; N=2 1,606 -> one reserved instance as the base, three
    # on-demand in the day peak: 12 x 1,533 = 18,396 over the horizon.
    w = _wl("chat")
    p = FleetProblem([w], _blocks(1000.0, 200.0), {"chat": [_cand("t", "reserved_1y", 0.6, 250.0),
                                                            _cand("t", "on_demand", 1.0, 250.0)]}, {},
                     horizon_months=12)
    sol = solve_cost(p, gap_rel=0.0)
    assert sol.report.status == "optimal"
    assert sol.cost == pytest.approx(12 * 1533.0)
    assert sol.N == {"test|r1||t|reserved_1y|all_upfront@0": 1}
    assert verify(p, sol) is None


def test_committed_base_is_shared_with_training_at_night():
    # Over 12 months, serving needs 4 units by day and 0 at night (the first and second half of each month); a
    # one-off training job in month 1 needs 4 x 365 unit-hours of work (time-sliced). With 4 reserved instances
    # (0.45 $/h x 730 h x 12 months x 4 = 15,768) the night hours of month 1 do the training for free; serving
    # on-demand by day (4 x 365 x 12 = 17,520) plus the job on-demand (1,460) would cost 18,980.
    from optimizer.planning.demand import inline_profile
    from optimizer.planning.horizon import periods
    from optimizer.planning.problem_build import blocks_for_periods

    chat, train = _wl("chat", min_replicas=0), _wl("train", task="train", deadline_hours=730.0)
    cands = {n: [_cand("t", "reserved_1y", 0.45, 250.0 if n == "chat" else 1e15),
                 _cand("t", "on_demand", 1.0, 250.0 if n == "chat" else 1e15)] for n in ("chat", "train")}
    per = periods([chat.activity(), train.activity()], 12)
    blocks = blocks_for_periods(per, {"chat": inline_profile([1000.0, 0.0])})
    p = FleetProblem([chat, train], blocks, cands, {"train": 4 * 365 * 3600 * 1e15}, horizon_months=12, periods=per)
    sol = solve_cost(p, gap_rel=0.0)
    assert sol.cost == pytest.approx(15768.0)
    assert sol.N == {"test|r1||t|reserved_1y|all_upfront@0": 4}
    assert not sol.X  # the training job runs on the reserved base at night
    assert verify(p, sol) is None


def test_spot_cap_and_redundancy_without_spot():
    # min 2 replicas that may not all be spot: the on-demand replica must exist in every block even though spot
    # is cheaper; spot is capped at 3 instances: demand 500 = 5 units -> 3 spot + 2 on-demand.
    w = _wl("chat", allow_spot=True, min_replicas=2)
    cands = {"chat": [_cand("t", "spot", 0.3, 100.0), _cand("t", "on_demand", 1.0, 100.0)]}
    p = FleetProblem([w], _blocks(500.0), cands, {}, spot_capacity=3)
    sol = solve_cost(p, gap_rel=0.0)
    xs = {k[1].split("|")[4]: v for k, v in sol.X.items()}
    assert xs == {"spot": 3.0, "on_demand": 2.0}
    assert sol.cost == pytest.approx(730 * (3 * 0.3 + 2 * 1.0))


def _brute(p: FleetProblem, max_n: int = 7, max_x: int = 7) -> float:
    """The cheapest plan by brute force; a workload without ``mixed_replicas`` runs one replica shape (issue 31:
    the least over the shapes, each alone)."""
    (w,) = p.workloads
    if not w.mixed_replicas:
        shapes = {c.shape for c in p.cands[w.name]}
        return min(_brute(p.replace(cands={w.name: [c for c in p.cands[w.name] if c.shape == s]},
                                    workloads=[dataclasses.replace(w, mixed_replicas=True)]), max_n, max_x)
                   for s in sorted(shapes))
    commit = [c for c in p.cands[w.name] if c.committed]
    hourly = [c for c in p.cands[w.name] if not c.committed]
    best = math.inf
    for ns in itertools.product(range(max_n + 1), repeat=len(commit)):
        base = sum(n * c.throughput_per_unit for n, c in zip(ns, commit))
        cost = sum(n * c.usd_per_unit_hour * 730 for n, c in zip(ns, commit))
        for b in p.blocks:
            need = b.demand[w.name] - base
            bc = math.inf
            for xs in itertools.product(range(max_x + 1), repeat=len(hourly)):
                if sum(x * c.throughput_per_unit for x, c in zip(xs, hourly)) + 1e-9 >= need:
                    bc = min(bc, sum(x * c.usd_per_unit_hour * b.hours for x, c in zip(xs, hourly)))
            cost += bc
        best = min(best, cost)
    return best


@pytest.mark.parametrize("mixed", [False, True])
@settings(max_examples=40, deadline=None)
@given(prices=st.tuples(st.floats(0.2, 2.0), st.floats(0.2, 2.0), st.floats(0.2, 2.0)),
       thetas=st.tuples(st.sampled_from([50.0, 100.0, 150.0]), st.sampled_from([50.0, 100.0, 150.0]),
                        st.sampled_from([50.0, 100.0, 150.0])),
       demand=st.lists(st.sampled_from([0.0, 80.0, 160.0, 240.0, 300.0]), min_size=2, max_size=3))
def test_fleet_milp_equals_brute_force(mixed, prices, thetas, demand):
    w = _wl("chat", mixed_replicas=mixed)
    cands = {"chat": [_cand("a", "reserved_3y", prices[0], thetas[0]), _cand("b", "on_demand", prices[1], thetas[1]),
                      _cand("c", "on_demand", prices[2], thetas[2])]}
    # a 36-month horizon: the 3-year term is paid in full and used every month, so the plan is 36 typical months
    p = FleetProblem([w], _blocks(*demand), cands, {}, horizon_months=36)
    sol = solve_cost(p, gap_rel=0.0)
    assert sol.report.status == "optimal"
    assert sol.cost == pytest.approx(36 * _brute(p), rel=1e-6, abs=1e-6)
    assert verify(p, sol) is None


@settings(max_examples=30, deadline=None)
@given(prices=st.tuples(st.floats(0.2, 2.0), st.floats(0.2, 2.0), st.floats(0.2, 2.0), st.floats(0.2, 2.0)),
       thetas=st.tuples(*[st.sampled_from([50.0, 100.0, 150.0])] * 4),
       demand=st.lists(st.sampled_from([0.0, 80.0, 160.0, 300.0]), min_size=2, max_size=2),
       horizon=st.sampled_from([1, 12, 24, 36]))
def test_fleet_pruning_keeps_the_optimum(prices, thetas, demand, horizon):
    # commitments bought once for the whole horizon are compared across terms by their cost over it (a 3-year term
    # on a 12-month horizon is charged 36 months); with renewals (24 months: two 1-year slots) only within a term
    w = _wl("chat")
    cands = {"chat": [_cand("a", "reserved_3y", prices[0], thetas[0]), _cand("b", "reserved_1y", prices[1], thetas[1]),
                      _cand("c", "on_demand", prices[2], thetas[2]), _cand("d", "on_demand", prices[3], thetas[3])]}
    p = FleetProblem([w], _blocks(*demand), cands, {}, horizon_months=horizon)
    kept, _ = prune_fleet(cands, [w], p.blocks, {}, 16, commit_cost=p.single_slot_costs())
    q = FleetProblem([w], p.blocks, kept, {}, horizon_months=horizon)
    assert solve_cost(q, gap_rel=0.0).cost == pytest.approx(solve_cost(p, gap_rel=0.0).cost, rel=1e-7, abs=1e-7)


def test_roi_by_dinkelbach_equals_the_best_ratio():
    # One block of 730 h, demand 250 tok/s, value 2 $ per million tokens: a fully used 100 tok/s unit earns
    # 2 x 3600 x 730 x 100 / 1e6 = 525.6 $/month. Offer A: 100 tok/s for 0.5 $/h (365 $/month); offer B: 250 tok/s
    # for 1.5 $/h (1,095). Enumerating units (S = min(250, capacity)): best value/cost is 1 A (525.6 / 365 = 1.44;
    # 2 A the same; B 1,314/1,095 = 1.2). ROI = 0.44.
    w = _wl("chat", value_per_million_tokens=2.0)
    cands = {"chat": [_cand("a", "on_demand", 0.5, 100.0), _cand("b", "on_demand", 1.5, 250.0)]}
    p = FleetProblem([w], _blocks(250.0), cands, {}, objective="roi")
    sol, its = solve_roi(p)
    best = 0.0
    for ua, ub in itertools.product(range(4), range(3)):
        cost = 730 * (0.5 * ua + 1.5 * ub)
        if cost:
            served = min(250.0, 100 * ua + 250 * ub)
            best = max(best, 2.0 * 3600 * 730 * served / 1e6 / cost)
    assert sol.value / sol.cost == pytest.approx(best, rel=1e-6)
    assert len(its) >= 2 and its[0]["lambda"] == 0.0
    assert abs(its[-1]["F"]) <= 1e-6 * max(sol.cost, 1.0)


def test_roi_drops_a_training_job_that_does_not_pay():
    # the job's value (100 $) is below its cost (1,000 unit-hours x 1 $/h): the ROI plan leaves it out
    w = _wl("train", task="train", deadline_hours=730.0, value_usd=100.0)
    p = FleetProblem([w], _blocks(0.0, name="x"), {"train": [_cand("t", "on_demand", 1.0, 1e15)]},
                     {"train": 1000 * 3600 * 1e15}, objective="roi")
    sol, _ = solve_roi(p)
    assert sol.cost == pytest.approx(0.0) and sol.Z.get("train", 0) == 0


@settings(max_examples=40, deadline=None)
@given(
    base=st.tuples(st.floats(0.3, 3.0), st.sampled_from([100.0, 150.0]), st.sampled_from([1e14, 2e14])),
    mults=st.lists(st.tuples(st.sampled_from([1, 2, 4]), st.floats(0.9, 1.2)), min_size=1, max_size=3),
    od=st.floats(0.5, 5.0),
    demand=st.lists(st.sampled_from([0.0, 150.0, 300.0, 450.0]), min_size=2, max_size=3),
    work_hours=st.floats(50.0, 800.0),
)
def test_fleet_pruning_is_safe_with_sharing_and_multiples(base, mults, od, demand, work_hours):
    # committed offers that are m-times multiples of another (GCP a2-ultragpu-2g/4g/8g pattern) at various prices,
    # shared by a serving and a training workload: the pruned model must reach the unpruned optimum
    price, theta, flops = base
    chat, train = _wl("chat"), _wl("train", task="train", deadline_hours=730.0)
    cands = {"chat": [], "train": []}
    for i, (m, f) in enumerate([(1, 1.0)] + mults):
        for wname, th in (("chat", theta), ("train", flops)):
            cands[wname].append(_cand(f"t{i}x{m}", "reserved_3y", price * m * f, th * m, r=m))
    for wname, th in (("chat", theta), ("train", flops)):
        cands[wname].append(_cand("od", "on_demand", od, th))
    blocks = _blocks(*demand)
    work = {"train": work_hours * 3600 * flops}
    p = FleetProblem([chat, train], blocks, cands, work)
    kept, _ = prune_fleet(cands, [chat, train], blocks, work, 16)
    q = FleetProblem([chat, train], blocks, kept, work)
    a, b = solve_cost(p, gap_rel=0.0), solve_cost(q, gap_rel=0.0)
    assert a.report.status == b.report.status == "optimal"
    assert b.cost == pytest.approx(a.cost, rel=1e-6, abs=1e-6)


def test_an_hourly_offer_running_alike_through_consecutive_periods_is_one_line():
    # a fresh user's 18-month plan showed one on-demand pair on 7 lines in no month order (a line per period)
    import dataclasses as _dc

    from optimizer.planning.answer import FleetLine, merge_periods

    base = FleetLine(provider="aws", region="us-east-1", zone="", instance_type="g6.xlarge", pricing="on_demand",
                     payment="", count=2, hours=730.0, usd_per_hour=0.8, monthly_usd=1168.0, gpu_model="L4",
                     gpu_count=1.0, gpu_memory_gib=22.35, workloads=["chat"], utilization=None,
                     break_even_utilization=None, upfront_usd=0.0, commitment_usd=0.0, source="t", as_of="2026",
                     estimated=False, total_usd=1168.0, start_month=1, end_month=1)
    lines = [_dc.replace(base, start_month=4, end_month=12, total_usd=1168.0 * 9),
             _dc.replace(base, start_month=1, end_month=3, total_usd=1168.0 * 3),
             _dc.replace(base, start_month=13, end_month=13, count=3, monthly_usd=1752.0, total_usd=1752.0),
             _dc.replace(base, start_month=15, end_month=18, total_usd=1168.0 * 4),
             _dc.replace(base, pricing="reserved_1y", start_month=1, end_month=12),
             _dc.replace(base, pricing="reserved_1y", start_month=13, end_month=18)]
    out = merge_periods(lines)
    od = sorted((ln.start_month, ln.end_month, ln.count, ln.total_usd) for ln in out if ln.pricing == "on_demand")
    assert od == [(1, 12, 2, 1168.0 * 12), (13, 13, 3, 1752.0), (15, 18, 2, 1168.0 * 4)]
    assert sum(1 for ln in out if ln.pricing == "reserved_1y") == 2  # commitments stay as bought


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_lp_relaxation_without_presolve_has_the_same_optimum_and_duals(solver):
    """The shadow prices' LP is solved with presolve off (optimizer.planning.solver.run_solver(presolve=False): measured
    0.7 s instead of 3.3 s in CBC on a one-region LP of 720 blocks); its optimum and the demand rows' duals are those of
    the LP with presolve. Reserved 0.6 $/h (12-month term), on-demand 1.0 $/h, units of 250 tokens/s, demand 1,000
    by day and 200 by night: the LP reserves 0.8 unit (the night) and buys the day's rest on demand."""
    from optimizer.planning.milp import build_fleet_model
    from optimizer.planning.solver import run_solver

    w = _wl("chat")
    p = FleetProblem([w], _blocks(1000.0, 200.0), {"chat": [_cand("t", "reserved_1y", 0.6, 250.0),
                                                            _cand("t", "on_demand", 1.0, 250.0)]}, {},
                     horizon_months=12)
    out = []
    for pre in (True, False):
        m, _ = build_fleet_model(p, relax=True)
        rep = run_solver(m, solver=solver, time_limit_s=30, presolve=pre)
        assert rep.status == "optimal"
        out.append((rep.objective, {n: round(c.pi, 9) for n, c in m.constraints.items() if n.startswith("demand_")}))
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-9)
    assert out[0][1] == pytest.approx(out[1][1], rel=1e-6)
    # per month: 0.8 reserved unit x 0.6 x 730 + day's 3.2 units x 1.0 x 365 -> x 12 months
    assert out[1][0] == pytest.approx(12 * (0.8 * 0.6 * 730 + 3.2 * 365.0), rel=1e-6)
