"""Plan one workload over a set of offers: candidates -> prune -> build -> solve -> explain.

:func:`plan` is what ``gpuopt.recommend`` calls. It never prints; it returns a
:class:`optimizer.explain.PlanResult`, infeasible plans included (infeasibility is a result with a reason,
not a crash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuopt.records import HOURS_PER_MONTH
from optimizer.explain import (
    PlanResult,
    binding_constraints,
    capacity_summary,
    on_demand_rates,
    plan_lines,
)
from optimizer.model import (
    SPOT_INTERRUPTION_OVERHEAD,
    PlanProblem,
    build_model,
    candidates_for,
    prune_dominated,
    prune_training,
)
from optimizer.solve import solve

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from optimizer.sizing import Workload

#: Strategies compared side by side: name -> pricing models allowed.
STRATEGIES = {
    "all_on_demand": ("on_demand",),
    "all_reserved_1y": ("reserved_1y",),
    "all_reserved_3y": ("reserved_3y",),
    "spot_where_allowed": ("spot",),
}


def _problem(workload: "Workload", cands, budget, max_instances, rejected) -> PlanProblem:
    from optimizer.sizing import train_flops

    if workload.task == "serve":
        demand, work = float(workload.tokens_per_second), None
        run_hours = horizon = HOURS_PER_MONTH
    else:
        demand, work = None, float(train_flops(workload))
        run_hours = float(workload.deadline_hours or HOURS_PER_MONTH)
        horizon = run_hours
    return PlanProblem(
        workload=workload, candidates=list(cands), demand_tokens_per_second=demand, work_flops=work,
        run_hours=run_hours, horizon_hours=horizon,
        budget_usd=None if budget is None else float(budget),
        max_instances_per_offer=max_instances, rejected=dict(rejected),
    )


def _prune(problem: PlanProblem) -> PlanProblem:
    if problem.max_instances_per_offer is not None:
        return problem  # capped offers: dominance pruning is not safe (DESIGN.md), keep all
    fn = prune_training if problem.is_training else prune_dominated
    kept, dropped = fn(problem.candidates, problem)
    problem.candidates = kept
    problem.pruned = dropped
    return problem


def _solve(problem: PlanProblem, solver: str, time_limit_s: float):
    model, U, Y = build_model(problem)
    return solve(model, U, Y, solver=solver, time_limit_s=time_limit_s)


def _plan_cost(problem: PlanProblem, sol) -> float:
    """The plan's cost computed from its units (not the solver's objective value, which carries its tolerance)."""
    by = {c.key: c for c in problem.candidates}
    total = 0.0
    for k, u in sol.units.items():
        c = by[k]
        if c.committed or not problem.is_training:
            total += problem.horizon_cost_per_unit(c) * u
    for k, uh in sol.unit_hours.items():
        total += by[k].usd_per_unit_hour * uh
    return total


def _top_up_training(problem: PlanProblem, sol):
    """Training: raise the hourly unit-hours (continuous) so the work is met exactly, when the solver left it short
    by no more than its tolerance (never more than 1e-6 of the work)."""
    import dataclasses

    if not problem.is_training or not sol.unit_hours:
        return sol
    by = {c.key: c for c in problem.candidates}
    committed = sum(by[k].throughput_per_unit * 3600.0 * problem.committed_work_hours(by[k]) * u
                    for k, u in sol.units.items() if by[k].committed)
    hourly = sum(by[k].throughput_per_unit * 3600.0 * uh for k, uh in sol.unit_hours.items())
    short = problem.work_flops - committed - hourly
    if short <= 0 or hourly <= 0 or short > 1e-6 * problem.work_flops:
        return sol
    f = (hourly + short) / hourly * (1 + 1e-12)
    return dataclasses.replace(sol, unit_hours={k: uh * f for k, uh in sol.unit_hours.items()})


def _solver_reason(workload, cands, problem: PlanProblem, sol, rejected, solver, time_limit_s) -> dict:
    """Why the solver found no plan, in the user's terms."""
    if sol.status == "not_solved":
        return {"kind": "solver", "message": (f"the {solver} solver found no plan within --time-limit {time_limit_s:g} s"
                                              f"{': ' + sol.message if getattr(sol, 'message', '') else ''}; "
                                              "raise --time-limit or narrow the choice (--provider, --region, --gpu)")}
    if sol.status == "infeasible" and problem.max_instances_per_offer is not None:
        free = _prune(_problem(workload, cands, None, None, rejected))
        s2 = _solve(free, solver, time_limit_s)
        if s2.status in ("optimal", "time_limit"):
            by = {c.key: c for c in free.candidates}
            counts = {}
            for k, u in list(s2.units.items()):
                c = by[k]
                from optimizer.model import instance_group
                g = instance_group(c)
                counts[g] = counts.get(g, 0) + u * c.instances_per_unit
            most = max(counts.values()) if counts else 0
            return {"kind": "max_instances", "message": (
                f"the demand cannot be met with at most {problem.max_instances_per_offer} instances of any one instance "
                f"type per region (--max-instances); the cheapest plan without that cap uses {most} of one type: raise "
                "--max-instances or allow more providers, regions or GPUs")}
    return {"kind": "solver", "message": f"the solver ended with status '{sol.status}'"}


def _shortfall(problem: PlanProblem, capacity: dict) -> str | None:
    """Check the solved plan really meets the demand (never trust the solver's word alone)."""
    if problem.is_training:
        need, got = capacity["work_flops_needed"], capacity["work_flops_planned"]
        what = "FLOPs"
    else:
        need, got = capacity["tokens_per_second_needed"], capacity["tokens_per_second_planned"]
        what = "tokens/s"
    if need and got < need * (1 - 1e-9):
        return (f"the solver's plan gives {got:.6g} {what} for {need:.6g} needed (numerical trouble): "
                "no plan is shown rather than a wrong one; try other limits or --solver highs")
    return None


def _no_fit_reason(workload: "Workload", offers: "pd.DataFrame", rejected: dict) -> dict:
    """Why no offer can host one replica: the memory one replica needs vs the largest instance offered."""
    from optimizer.model import MAX_GPUS_PER_REPLICA
    from optimizer.sizing import size_replica
    from optimizer.specs import load_gpu

    if offers.empty:
        return {"kind": "no_offers", "message": "no offers match the filters (provider, region, GPU, pricing)"}
    mem = offers.assign(total=offers["gpu_count"] * offers["gpu_memory_gib"]).sort_values("total", ascending=False)
    top = mem.iloc[0]
    need = None
    try:
        s = size_replica(workload, load_gpu(top["gpu_model"]), float(top["gpu_count"]))
        need = s.memory_gib_per_replica
    except Exception:  # the largest instance may carry a GPU without a datasheet row
        pass
    msg = "no offered GPU can hold one replica"
    if need is not None:
        msg += (f": one replica needs about {need:,.1f} GiB of GPU memory; the largest offered instance, "
                f"{top['provider']} {top['instance_type']} ({top['gpu_count']:g} x {top['gpu_model']}), has {top['total']:,.0f} GiB "
                f"and multi-instance replicas of up to {MAX_GPUS_PER_REPLICA} GPUs over NVLink-class instances did not fit either")
    if rejected.get("no_spec"):
        msg += f"; {rejected['no_spec']} offers were skipped because their GPU has no datasheet row"
    fits = gpus_that_fit(workload)
    if fits:
        msg += "; it would fit on " + ", ".join(f"{n} x {g}" for g, n in fits[:4]) + \
            " (widen --gpu/--provider/--region, or lower --precision/--context/--concurrency)"
    return {"kind": "no_gpu_fits", "message": msg, "memory_gib_per_replica": need,
            "gpus_that_fit": [{"gpu_model": g, "gpus_per_replica": n} for g, n in fits]}


def gpus_that_fit(workload: "Workload", max_gpus: int = 8) -> list[tuple[str, float]]:
    """GPU models of the spec table on which one replica fits within ``max_gpus`` GPUs (one 8-GPU server), fewest
    GPUs then most memory first: the "GPU that would fit" of an infeasible plan."""
    from optimizer.sizing import min_gpus_per_replica
    from optimizer.specs import known_gpus, load_gpu

    out = []
    for name in known_gpus():
        try:
            s = min_gpus_per_replica(workload, load_gpu(name), max_gpus=max_gpus)
        except Exception:  # a GPU the workload cannot use (e.g. a precision it lacks)
            continue
        if s is not None:
            out.append((name, float(s.gpus_per_replica), -load_gpu(name).memory_gib))
    out.sort(key=lambda t: (t[1], t[2], t[0]))
    return [(n, g) for n, g, _ in out]


def plan(
    workload: "Workload",
    offers: "pd.DataFrame",
    *,
    budget_usd: float | None = None,
    allow_spot: bool = False,
    pricing: tuple[str, ...] | None = None,
    max_instances_per_offer: int | None = None,
    solver: str = "cbc",
    time_limit_s: float = 60.0,
    compare_strategies: bool = True,
) -> PlanResult:
    """Plan ``workload`` over ``offers`` at minimum cost.

    Args:
        workload: a validated optimizer.sizing.Workload (serve: tokens_per_second set; train/finetune: tokens).
        offers: normalized offers (gpuopt.records.OFFER_COLUMNS) already filtered by the user's limits.
        budget_usd: serving: USD per month; training/finetune: USD for the whole job.
        allow_spot: spot offers allowed (interruptible work); pricing: pricing models allowed (default all but spot).
        max_instances_per_offer: cap on instances of any one offer (None: uncapped).
        solver: "cbc" or "highs"; time_limit_s: solver time limit.
        compare_strategies: also price the same demand all on-demand / all reserved / spot.

    Returns: PlanResult (status "optimal", "time_limit" or "infeasible" with ``reason``).
    Raises: InputError for an unknown solver; SolverError never (statuses are results).
    """
    all_cands, rejected, sizing = candidates_for(workload, offers, allow_spot=True, pricing=None)
    allowed = set(pricing) if pricing else {"on_demand", "reserved_1y", "reserved_3y", "spot"}
    if not allow_spot:
        allowed.discard("spot")
    cands = [c for c in all_cands if c.offer["pricing"] in allowed]
    for c in all_cands:
        if c.offer["pricing"] not in allowed:
            why = "spot_not_allowed" if c.offer["pricing"] == "spot" else "pricing_not_allowed"
            rejected[why] = rejected.get(why, 0) + 1
    full = _problem(workload, cands, budget_usd, max_instances_per_offer, rejected)
    result = PlanResult(status="infeasible", horizon_hours=full.horizon_hours)
    result.sizing = [
        {"gpu_shape": k, "gpu_model": s.gpu_model, "gpus_per_replica": s.gpus_per_replica,
         "memory_gib_per_replica": round(s.memory_gib_per_replica, 2), "memory_gib_per_gpu": round(s.memory_gib_per_gpu, 2),
         "tokens_per_second_per_replica": round(s.tokens_per_second_per_replica, 2),
         "flops_per_second_per_replica": s.flops_per_second_per_replica}
        for k, s in sorted(sizing.items())
    ]
    result.solver = {"name": solver, "candidates": len(cands), "rejected": dict(rejected)}
    if not cands:
        result.reason = _no_fit_reason(workload, offers, rejected)
        if all_cands:
            offered = sorted({c.offer["pricing"] for c in all_cands})
            result.reason = {"kind": "pricing", "message": (
                f"none of the offers that can hold a replica is sold as {', '.join(sorted(allowed)) or 'the pricing asked'}"
                f"; they are offered as: {', '.join(offered)} (change --pricing"
                + (" or add --allow-spot" if "spot" in offered and not allow_spot else "") + ")")}
        elif rejected and set(rejected) <= {"no_spec", "pricing_not_allowed", "spot_not_allowed"}:
            result.reason = {"kind": "no_spec", "message": (
                "the GPUs offered here have no datasheet row in gpuopt's spec table, so a replica cannot be sized "
                f"on them ({rejected.get('no_spec', 0)} offers); choose another --gpu (see `gpuopt estimate --list-models`)")}
        return result

    problem = _prune(_problem(workload, cands, budget_usd, max_instances_per_offer, rejected))
    sol = _solve(problem, solver, time_limit_s)
    result.solver.update({"status": sol.status, "seconds": round(sol.seconds, 3), "pruned": problem.pruned,
                          "variables_units": len(problem.candidates)})
    if sol.status == "infeasible" and problem.budget_usd is not None:
        free = _prune(_problem(workload, cands, None, max_instances_per_offer, rejected))
        sol_free = _solve(free, solver, time_limit_s)
        if sol_free.status in ("optimal", "time_limit") and _plan_cost(free, sol_free) > problem.budget_usd:
            need = _plan_cost(free, sol_free)
            per = "for the whole job" if free.is_training else "per month"
            result.reason = {
                "kind": "budget",
                "message": (f"the budget is too small: the cheapest plan that meets the demand costs ${need:,.2f} {per}; "
                            f"--budget {budget_usd:,.2f} falls short by ${need - budget_usd:,.2f}. Raise --budget to at least "
                            f"{need:,.2f}"),
                "budget_needed_usd": round(need, 2),
                "budget_usd": budget_usd,
            }
            return result
    if sol.status not in ("optimal", "time_limit"):
        result.status = sol.status if sol.status != "infeasible" else "infeasible"
        result.reason = _solver_reason(workload, cands, problem, sol, rejected, solver, time_limit_s)
        return result

    sol = _top_up_training(problem, sol)
    od = on_demand_rates(offers)
    lines, raw_total = plan_lines(problem, sol, od)
    result.status = sol.status
    result.lines = lines
    result.total_usd = round(raw_total, 2)
    result.total_monthly_usd = result.total_usd
    result.capacity = capacity_summary(problem, lines, sol)
    short = _shortfall(problem, result.capacity)
    if short:
        result.status = "not_solved"
        result.lines = []
        result.reason = {"kind": "solver", "message": short}
        return result
    big = [ln for ln in lines if ln.count > 64]
    if big:
        result.notes.append(f"{big[0].count} instances of {big[0].instance_type} in {big[0].region}: check your quota "
                            "(--max-instances caps it); the plan assumes near-linear data-parallel scaling")
    result.binding = binding_constraints(problem, lines, result.capacity, result.total_usd)
    if sol.status == "time_limit":
        result.notes.append("the solver stopped at its time limit: this plan is feasible but not proven optimal")
    if any(ln.estimated for ln in lines):
        result.notes.append("some prices in this plan are estimated (source rule:...): reserved rates derived from a "
                            "documented discount rule, not quoted")
    if any(ln.pricing == "spot" for ln in lines):
        result.notes.append(f"spot lines count {100 * (1 - SPOT_INTERRUPTION_OVERHEAD):.0f} % of their throughput "
                            "(interruptions and rework); spot capacity is not guaranteed")
    if getattr(workload.model, "estimated", False):
        result.notes.append("the model's shape was estimated from its parameter count (--params): memory and "
                            "throughput are approximate")
    if problem.is_training and any(ln.pricing.startswith("reserved") for ln in lines):
        result.notes.append("a reservation commits you for its whole term (see commitment_usd), beyond this job")

    if compare_strategies:
        result.strategies = _strategies(workload, all_cands, max_instances_per_offer, rejected, solver,
                                        time_limit_s, allow_spot, allowed, sol.status, result.total_monthly_usd)
        base = result.strategies.get("all_on_demand", {})
        if base.get("monthly_usd"):
            result.savings_vs_on_demand_usd = round(base["monthly_usd"] - result.total_monthly_usd, 2)
            result.savings_vs_on_demand_pct = round(100.0 * result.savings_vs_on_demand_usd / base["monthly_usd"], 2)
    return result


def _strategies(workload, cands, max_inst, rejected, solver, time_limit_s, allow_spot, allowed, status, optimal_monthly):
    """Price the same demand with one pricing model at a time (over every candidate, whatever --pricing allows;
    ``allowed_in_this_plan`` says whether the user's limits admit it)."""
    out = {}
    for name, models in STRATEGIES.items():
        if name == "spot_where_allowed" and not allow_spot:
            continue
        sub = [c for c in cands if c.offer["pricing"] in models]
        if not sub:
            out[name] = {"status": "no_offers", "monthly_usd": None}
            continue
        p = _prune(_problem(workload, sub, None, max_inst, rejected))
        s = _top_up_training(p, _solve(p, solver, time_limit_s))
        if s.status in ("optimal", "time_limit"):
            monthly = _plan_cost(p, s)
            out[name] = {"status": s.status, "monthly_usd": round(monthly, 2),
                         "allowed_in_this_plan": set(models) <= allowed}
        else:
            out[name] = {"status": s.status, "monthly_usd": None}
    out["optimal_mix"] = {"status": status, "monthly_usd": optimal_monthly, "allowed_in_this_plan": True}
    base = out.get("all_on_demand", {}).get("monthly_usd")
    for v in out.values():
        if base and v.get("monthly_usd") is not None:
            v["savings_usd"] = round(base - v["monthly_usd"], 2)
            v["savings_pct"] = round(100.0 * (base - v["monthly_usd"]) / base, 2)
    return out
