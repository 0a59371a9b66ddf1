"""Explain a solved plan: plan lines, totals, the strategy comparison, break-even, binding constraints.

Pure functions over (problem, solution, offers): nothing here solves or prints.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gpuopt.records import HOURS_PER_MONTH, TERM_HOURS, is_estimated
from optimizer.model import PlanProblem
from optimizer.solve import Solution


@dataclass(frozen=True)
class PlanLine:
    """One line of a plan: ``count`` instances of one offer for ``hours`` hours each.

    Units: usd_per_hour is the effective (amortized) rate of ONE instance; monthly_usd is this line's cost in
    an average month of the plan (730 h); upfront_usd is the upfront fee of all ``count`` instances over the
    whole term; commitment_usd is the total owed over the term (reserved only); break_even_utilization is
    the reserved effective rate / the on-demand rate of the same instance type and region (the share of hours
    the instance must be busy for the reservation to pay off), None when not reserved or no on-demand rate.
    """

    provider: str
    region: str
    zone: str
    instance_type: str
    pricing: str
    payment: str
    count: int
    hours: float
    usd_per_hour: float
    monthly_usd: float
    gpu_model: str
    gpu_count: float
    gpu_memory_gib: float
    replicas: int
    gpus_per_replica: float
    gpu_shape: str
    upfront_usd: float
    commitment_usd: float
    break_even_utilization: float | None
    source: str
    as_of: str
    estimated: bool


@dataclass
class PlanResult:
    """A plan and its explanation (what `gpuopt recommend` renders).

    Attributes:
        status: "optimal", "time_limit" (feasible, not proven optimal) or "infeasible".
        lines: the plan lines (empty when infeasible).
        total_usd: cost of the plan (serving: one month; training: the whole job); total_monthly_usd: the same
            number under its historical name (serving: USD per month; training: USD for the job).
        horizon_hours: 730 for serving; the deadline for training.
        sizing: what one replica needs on each GPU shape used (memory_gib_per_replica, gpus_per_replica, ...).
        capacity: serving: tokens/s planned vs demanded; training: FLOPs planned vs needed, finish hours.
        strategies: strategy name -> {"monthly_usd", "savings_usd", "savings_pct", "status"} for the same demand
            priced all on-demand, all reserved 1y/3y, spot (when allowed) and the optimal mix.
        savings_vs_on_demand_usd / _pct: monthly savings of the plan against all on-demand (None if no baseline).
        binding: human-readable statements of the constraints that bind (or do not).
        reason: when infeasible, why (and what would fix it): a dict with "kind" and "message".
        notes: warnings (estimated prices, reservations on short jobs, ...).
        solver: {"name", "status", "seconds", "candidates", "pruned", "rejected"}.
    """

    status: str
    lines: list[PlanLine] = field(default_factory=list)
    total_usd: float = 0.0
    total_monthly_usd: float = 0.0
    horizon_hours: float = HOURS_PER_MONTH
    sizing: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, Any] = field(default_factory=dict)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    savings_vs_on_demand_usd: float | None = None
    savings_vs_on_demand_pct: float | None = None
    binding: list[str] = field(default_factory=list)
    reason: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    solver: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return self.status in ("optimal", "time_limit")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["feasible"] = self.feasible
        return d


def on_demand_rates(offers) -> dict[tuple[str, str, str], float]:
    """(provider, region, instance_type) -> on-demand USD/h, from the offers frame (for break-even)."""
    od = offers[offers["pricing"] == "on_demand"]
    return {
        (r.provider, r.region, r.instance_type): float(r.usd_per_hour)
        for r in od[["provider", "region", "instance_type", "usd_per_hour"]].itertuples(index=False)
    }


def plan_lines(problem: PlanProblem, sol: Solution, od_rates: dict) -> tuple[list[PlanLine], float]:
    """The plan's lines, dearest first, and their total cost unrounded (lines carry money rounded to cents).
    Training hourly lines: count = ceil(unit-hours / H), hours spread evenly over the count."""
    raw_total = 0.0
    by_key = {c.key: c for c in problem.candidates}
    lines = []
    keys = set(sol.units) | set(sol.unit_hours)
    for key in keys:
        c = by_key[key]
        o = c.offer
        if c.committed:
            units = sol.units.get(key, 0)
            hours = problem.committed_hours(c)
            cost = c.usd_per_unit_hour * hours * units
        elif problem.is_training:
            uh = sol.unit_hours.get(key, 0.0)
            if uh <= 1e-9:
                continue
            units = max(1, math.ceil(uh / problem.run_hours - 1e-9))
            hours = uh / units
            cost = c.usd_per_unit_hour * uh
        else:
            units = sol.units.get(key, 0)
            hours = problem.run_hours
            cost = c.usd_per_unit_hour * hours * units
        if units <= 0:
            continue
        raw_total += cost
        count = units * c.instances_per_unit
        term = TERM_HOURS.get(o["pricing"], 0.0)
        upfront = float(o.get("upfront_usd") or 0.0) * count
        commitment = float(o["usd_per_hour"]) * term * count if term else 0.0
        od = od_rates.get((o["provider"], o["region"], o["instance_type"]))
        be = float(o["usd_per_hour"]) / od if (c.committed and od) else None
        lines.append(
            PlanLine(
                provider=o["provider"], region=o["region"], zone=str(o.get("zone") or ""),
                instance_type=o["instance_type"], pricing=o["pricing"], payment=str(o.get("payment") or ""),
                count=int(count), hours=round(hours, 4), usd_per_hour=float(o["usd_per_hour"]),
                monthly_usd=round(cost, 2), gpu_model=o["gpu_model"], gpu_count=float(o["gpu_count"]),
                gpu_memory_gib=float(o["gpu_memory_gib"]), replicas=int(units * c.replicas_per_unit),
                gpus_per_replica=float(c.sizing.gpus_per_replica),
                gpu_shape=c.shape,
                upfront_usd=round(upfront, 2),
                commitment_usd=round(commitment, 2), break_even_utilization=None if be is None else round(be, 4),
                source=str(o.get("source") or ""), as_of=str(o.get("as_of") or ""), estimated=is_estimated(o.get("source") or ""),
            )
        )
    lines.sort(key=lambda ln: (-ln.monthly_usd, ln.provider, ln.region, ln.instance_type))
    return lines, raw_total


def capacity_summary(problem: PlanProblem, lines: list[PlanLine], sol: Solution) -> dict[str, Any]:
    """Capacity planned vs needed (serving tokens/s; training FLOPs and finish hours)."""
    by_key = {c.key: c for c in problem.candidates}
    if problem.is_training:
        done = 0.0
        for key, units in sol.units.items():
            c = by_key[key]
            if c.committed:
                done += c.throughput_per_unit * 3600.0 * problem.committed_work_hours(c) * units
        for key, uh in sol.unit_hours.items():
            done += by_key[key].throughput_per_unit * 3600.0 * uh
        finish = 0.0
        for key in set(sol.units) | set(sol.unit_hours):
            c = by_key[key]
            if c.committed and sol.units.get(key):
                finish = max(finish, problem.committed_work_hours(c))
        finish = max([finish] + [ln.hours for ln in lines if ln.pricing not in TERM_HOURS])
        return {"work_flops_needed": problem.work_flops, "work_flops_planned": done,
                "deadline_hours": problem.run_hours, "finish_hours": round(finish, 2)}
    cap = 0.0
    for key, units in sol.units.items():
        cap += by_key[key].throughput_per_unit * units
    need = problem.demand_tokens_per_second
    return {"tokens_per_second_needed": need, "tokens_per_second_planned": cap,
            "headroom_pct": round(100.0 * (cap / need - 1.0), 2) if need else None}


def binding_constraints(problem: PlanProblem, lines: list[PlanLine], capacity: dict, total_usd: float) -> list[str]:
    """Statements of which constraints bind: demand/work, deadline, budget."""
    out = []
    if problem.is_training:
        out.append(f"work: {capacity['work_flops_planned']:.3g} FLOPs planned for {capacity['work_flops_needed']:.3g} needed (binding)")
        if capacity["finish_hours"] >= problem.run_hours - 1e-6:
            out.append(f"deadline: the plan uses the full {problem.run_hours:g} h before the deadline (binding: a later deadline would need fewer instances)")
        else:
            out.append(f"deadline: the plan finishes in {capacity['finish_hours']:g} h of {problem.run_hours:g} h (not binding)")
    else:
        out.append(f"demand: {capacity['tokens_per_second_planned']:g} tokens/s planned for {capacity['tokens_per_second_needed']:g} needed "
                   f"(binding: it sets the size of the plan; the {capacity['headroom_pct']:g} % headroom comes from buying whole replicas)")
    if problem.budget_usd is not None:
        head = problem.budget_usd - total_usd
        if head < 0.005 * problem.budget_usd:
            out.append(f"budget: ${problem.budget_usd:,.2f} (binding: ${head:,.2f} left)")
        else:
            out.append(f"budget: ${problem.budget_usd:,.2f}, ${head:,.2f} left (not binding: this is the cheapest plan that meets the demand)")
    return out
