"""A solved plan (:class:`FleetSolution`: the non-zero variable values) and what is read from it whichever method
found it (the MILP, the exact enumeration or the shared-commitment enumeration): its cost and value recomputed from the
units, the capacity blocks bought, the money (totals, cash by month, upfront, commitment) and the spot used per group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpuopt.kernel.records import HOURS_PER_MONTH
from optimizer.planning.milp import FleetVars
from optimizer.planning.problem import (
    FleetProblem,
    block_days_of,
    cand_index,
    capacity_block_split,
    commitment_parts,
    committed_rate,
    spot_group,
)
from optimizer.planning.solver import SolveReport


@dataclass
class FleetSolution:
    """Variable values of a solved model (non-zero only), its cost and value recomputed from them."""

    report: SolveReport
    N: dict[str, int] = field(default_factory=dict)
    A: dict[tuple[str, str, int], float] = field(default_factory=dict)
    X: dict[tuple[str, str, int], float] = field(default_factory=dict)
    S: dict[tuple[str, int], float] = field(default_factory=dict)
    Z: dict[str, float] = field(default_factory=dict)
    CB: dict[tuple, int] = field(default_factory=dict)   # capacity blocks, as FleetVars.CB
    SP: dict[str, float] = field(default_factory=dict)   # savings plans: slot key -> USD/h committed
    cost: float = 0.0
    value: float = 0.0


def var_value(v) -> float:
    x = v.value()
    return 0.0 if x is None else float(x)


def read_solution(problem: FleetProblem, V: FleetVars, report: SolveReport) -> FleetSolution:
    """Read the variables (rounding integers) and recompute cost and value from them (not from the objective)."""
    sol = FleetSolution(report=report)
    if report.status not in ("optimal", "time_limit"):
        return sol
    for k, v in V.N.items():
        n = round(var_value(v))
        if n > 0:
            sol.N[k] = n
    for k, v in V.CB.items():
        n = round(var_value(v)) if v.cat == "Integer" else var_value(v)
        if n > 1e-9:
            sol.CB[k] = n
    for k, v in V.SP.items():
        x = var_value(v)
        if x > 1e-9:
            sol.SP[k] = x
    for store, src in ((sol.A, V.A), (sol.X, V.X)):
        for k, v in src.items():
            x = var_value(v)
            if v.cat == "Integer":
                x = float(round(x))
            if x > 1e-9:
                store[k] = x
    for k, v in V.S.items():
        sol.S[k] = var_value(v)
    for k, v in V.Z.items():
        sol.Z[k] = round(var_value(v))
    sol.cost = fleet_cost(problem, sol)
    sol.value = fleet_value(problem, sol)
    return sol


def fleet_cost(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD over the horizon: commitments (whole term less the leftover value) + hourly units x rate x block hours x
    months of their period."""
    idx = cand_index(problem)
    total = sum(problem.slot_cost(problem.slots[k]) * n for k, n in sol.N.items())
    for (w, ok, bi), x in sol.X.items():
        b = problem.blocks[bi]
        total += idx[(w, ok)].usd_per_unit_hour * b.hours * problem.months(b) * x
    total += sum(problem.plan_slot_cost(problem.plan_slots[k]) * x for k, x in sol.SP.items())
    total += sum(usd for _, usd, _ in capacity_block_purchases(problem, sol))
    return total


def capacity_block_purchases(problem: FleetProblem, sol: FleetSolution) -> list[tuple[tuple, float, int]]:
    """The capacity blocks of a plan: (key of ``sol.CB``, USD paid whole, month bought (0-based)) each. A training
    job's unit-days cost the block's rate x instances per unit x 24 h each, bought in the job's first month; a
    service's instances for a window of months the rate x the block's days x 24 h each, bought in its first month
    (``("job_units", ...)`` keys, the units a job runs at once, cost nothing of their own)."""
    idx = cand_index(problem)
    offers = {c.okey: c for cs in problem.cands.values() for c in cs}
    wl = {w.name: w for w in problem.workloads}
    out = []
    for key, n in sol.CB.items():
        if key[0] == "job":
            _, wn, ok = key
            c = idx[(wn, ok)]
            out.append((key, float(c.offer["usd_per_hour"]) * c.instances_per_unit * 24.0 * n, wl[wn].start_month))
        elif key[0] == "window":
            _, ok, a, b = key
            out.append((key, float(offers[ok].offer["usd_per_hour"]) * 24.0 * block_days_of(b - a) * n, a))
    return out


def fleet_value(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD of value over the horizon: served tokens x value per million + finished training jobs x their value."""
    total = 0.0
    for w in problem.workloads:
        if w.training:
            done = sol.Z.get(w.name, 1.0 if problem.objective == "cost" else 0.0)
            total += (w.value_usd or 0.0) * done
        else:
            for bi, b in enumerate(problem.blocks):
                if not problem.active(w, b):
                    continue
                served = sol.S.get((w.name, bi), b.demand.get(w.name, 0.0))
                total += (w.value_per_million_tokens or 0.0) * 3600.0 * b.hours * problem.months(b) * served / 1e6
    return total


def money(problem: FleetProblem, sol: FleetSolution) -> dict[str, Any]:
    """The plan's money over the horizon: total, average per month, upfront, commitment over the terms, cash paid in
    each month of the horizon, what the commitments still cost after it and the leftover value credited."""
    H = problem.horizon_months
    idx = cand_index(problem)
    cash = [0.0] * H
    after = 0.0
    upfront = commitment = credit = 0.0
    for k, n in sol.N.items():
        s = problem.slots[k]
        up, rec = commitment_parts(s.offer)
        upfront += up * n
        commitment += committed_rate(s.offer) * HOURS_PER_MONTH * s.term_months * n
        cash[s.start_month] += up * n
        for mo in range(s.start_month, s.end_month):
            if mo < H:
                cash[mo] += rec * HOURS_PER_MONTH * n
            else:
                after += rec * HOURS_PER_MONTH * n
        outlive = max(0, s.end_month - H)
        credit += problem.leftover_value * committed_rate(s.offer) * HOURS_PER_MONTH * outlive * n
    for (w, ok, bi), x in sol.X.items():
        b = problem.blocks[bi]
        p = problem.period_of(b)
        per_month = idx[(w, ok)].usd_per_unit_hour * b.hours * x
        for mo in range(p.start_month, p.end_month):
            cash[mo] += per_month
    for k, x in sol.SP.items():
        s = problem.plan_slots[k]
        if s.owned:
            continue  # a savings plan the team owns: already paid
        whole = HOURS_PER_MONTH * s.term_months * x
        upfront += s.upfront_share * whole
        commitment += whole
        cash[s.start_month] += s.upfront_share * whole
        for mo in range(s.start_month, s.end_month):
            if mo < H:
                cash[mo] += (1.0 - s.upfront_share) * HOURS_PER_MONTH * x
            else:
                after += (1.0 - s.upfront_share) * HOURS_PER_MONTH * x
        credit += problem.leftover_value * HOURS_PER_MONTH * max(0, s.end_month - H) * x
    for _, _, _, usd, first, _ in capacity_block_parts(problem, sol):
        upfront += usd
        commitment += usd
        cash[first] += usd  # each block paid in the month it starts
    total = sol.cost
    return {"total_usd": round(total, 2), "monthly_usd": round(total / H, 2), "upfront_usd": round(upfront, 2),
            "commitment_usd": round(commitment, 2), "cash_by_month_usd": [round(c, 2) for c in cash],
            "after_horizon_usd": round(after, 2), "leftover_credit_usd": round(credit, 2),
            "max_month_usd": round(max(cash) if cash else 0.0, 2)}


def capacity_block_parts(problem: FleetProblem, sol: FleetSolution) -> list[tuple[tuple, int, int, float, int, int]]:
    """The blocks a plan buys: (key of ``sol.CB``, instances, days, USD, first month, last month) each (months
    0-based, within the horizon). A job's unit-days are split by :func:`capacity_block_split` and its blocks run back
    to back from the job's start (a 182-day block, then the next: each is bought, and paid, in the month it
    starts — AWS sells blocks at most 8 weeks ahead); a service's block covers its window of months."""
    idx = cand_index(problem)
    offers = {c.okey: c for cs in problem.cands.values() for c in cs}
    H = problem.horizon_months
    out = []
    for key, _, month in capacity_block_purchases(problem, sol):
        n = int(sol.CB[key])
        if key[0] == "job":
            _, wn, ok = key
            c = idx[(wn, ok)]
            k = c.instances_per_unit
            units = int(sol.CB.get(("job_units", wn, ok), 0)) or 1
            start_day = 0
            for u, d in capacity_block_split(n, units):
                at = start_day if u == units else n // units  # the r < units units' extra day comes last
                first = min(H - 1, month + int(at * 24.0 // HOURS_PER_MONTH))
                last = min(H - 1, month + max(1, math.ceil((at + d) * 24.0 / HOURS_PER_MONTH - 1e-9)) - 1)
                out.append((key, u * k, d, float(c.offer["usd_per_hour"]) * 24.0 * d * u * k, first, max(first, last)))
                if u == units:
                    start_day += d
        else:
            _, ok, a, b = key
            d = block_days_of(b - a)
            out.append((key, n, d, float(offers[ok].offer["usd_per_hour"]) * 24.0 * d * n, a, min(H, b) - 1))
    return out


def spot_use(problem: FleetProblem, sol: FleetSolution) -> dict[tuple, float]:
    """Spot instances the plan uses per (spot group (provider, region, instance type), block index): what the spot
    cap (``problem.spot_capacity``) bounds."""
    idx = cand_index(problem)
    used: dict[tuple, float] = {}
    for (w, ok, bi), x in sol.X.items():
        c = idx[(w, ok)]
        if c.offer["pricing"] == "spot":
            key = (spot_group(c.offer), bi)
            used[key] = used.get(key, 0.0) + x * c.instances_per_unit
    return used
