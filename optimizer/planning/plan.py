"""Plan any set of workloads (:func:`plan_fleet`) or one workload (:func:`plan_workload`, a plan of one workload):
make the problem, solve it, verify the plan, write the answer and explain it.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import time
from typing import TYPE_CHECKING

from optimizer.planning.answer import (
    FleetResult,
    blocks_too_short,
    fleet_lines,
    purchase_notes,
    unusable_notes,
    workload_summaries,
)
from optimizer.planning.candidates import DEFAULT_PRICING, candidates_for
from optimizer.planning.horizon import month_label
from optimizer.planning.limits import kept_out_notes, quota_notes, zone_notes
from optimizer.planning import progress
from gpuopt.kernel.words import plural
from optimizer.planning.problem import (
    DEFAULT_SPOT_CAPACITY,
    Budgets,
    FleetBlock,
    FleetWorkload,
    cand_index,
    SPOT_TRAINING_MAX_HOURS,
    UNDATED_SPOT_MAX_DAYS,
    placed,
    placement_group,
)
from optimizer.planning.problem_build import make_problem
from optimizer.planning.rate_guards import cap_estimated_commitments, capped_notes
from optimizer.planning.size_guard import ModelTooLarge
from optimizer.planning.solution import money
from optimizer.planning.solve import as_unplaced, groups_used, solve_cost, solve_roi, trim_allocations, verify
from optimizer.planning.solver import resolve_solver

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from optimizer.sizing import Workload


#: Why "auto" plans with HiGHS when a serving workload has an N+1 rule (issue 26): measured on
#: benchmarks/bench_fleet.py's mix5-n1 (five workloads at the production defaults, 2026-12-06, this 2-core machine),
#: CBC ended at its 60 s limit with a plan 4-12 % dearer ($125,321-135,981, gaps 4-36 %) where HiGHS 1.16 proved
#: $120,868.48 optimal in 44 s; on the bundled example plan they were even (CBC 14.3 s, HiGHS 16.2 s end to end).
N1_SOLVER_NOTE = "highs for N+1"


def _highs_available() -> bool:
    import pulp

    return "HiGHS" in pulp.listSolvers(onlyAvailable=True)


#: Most workloads a plan is explained for (strategies, what-ifs, provider alternatives, other serving targets: each a
#: re-plan of the whole fleet). Measured (benchmarks/bench_fleet.py): 30 services x 168 blocks explained within the
#: targets; 200 services spent 190 s of 330 in explanations. Above it the plan says they were skipped.
EXPLAIN_MAX_WORKLOADS = 30


def not_solved_reason(solver: str, time_limit_s: float, rep) -> dict[str, str]:
    """The ``reason`` of a solve that stopped without a plan and without a proof that none exists (status
    not_solved): kind "time_limit" — "not solved within the limit (N s): no plan was found and none was proven
    impossible; rerun with --time-limit M ..." — or kind "solver" when the solver stopped early on an error (``rep``:
    the SolveReport; its message names the error). Never "no plan": only a proven infeasibility says that (issue
    33: a plan file of 16 workloads read "no plan" where a plan existed)."""
    note = rep.message or rep.status
    more = int(max(60.0, 4.0 * time_limit_s))
    if re.match(r"^[A-Za-z]*(Error|Exception)\b", str(rep.message or "")):
        return {"kind": "solver", "message": f"not solved: the {solver} solver stopped on an error ({note}) after "
                                             f"{rep.seconds:.0f} s; no plan was found and none was proven impossible"}
    return {"kind": "time_limit",
            "message": f"not solved within the limit ({time_limit_s:g} s): no plan was found and none was proven "
                       f"impossible; rerun with --time-limit {more} or narrow the choice (the {solver} solver: {note})"}


def plan_fleet(workloads: list[FleetWorkload], profiles: dict | list[FleetBlock], offers: "pd.DataFrame", *,
               budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
               spot_capacity: int = DEFAULT_SPOT_CAPACITY, solver: str = "auto", time_limit_s: float = 60.0,
               gap_rel: float = 0.001, explain: bool = True, merge_note: str = "",
               max_instances: int | None = None, horizon_months: int | None = None, leftover_value: float = 0.0,
               placement: str = "region", spread: str = "", budgets: Budgets | None = None,
               start_date: _dt.date | None = None, quotas=None, owned: list | None = None) -> FleetResult:
    """Plan several workloads over a horizon (minimum cost, or maximum ROI by Dinkelbach).

    Args: as :func:`make_problem`; solver "auto"|"cbc"|"highs"; time_limit_s: wall time of the plan's own solve;
        explain: also price the strategies, duals, per-provider alternatives and demand sensitivity.
    Returns a FleetResult (infeasible plans included, with ``reason``). Raises InputError for bad input.
    """
    from optimizer.explain import on_demand_rates
    from optimizer.planning import explain as fx

    t0 = time.perf_counter()
    offers, _ = cap_estimated_commitments(offers)  # an estimated commitment rate never undercuts a quote (issue 31)
    skipped_explain = explain and len(workloads) > EXPLAIN_MAX_WORKLOADS
    if skipped_explain:
        explain = False
    progress.update("sizing candidates", detail=f"{plural(len(workloads), 'workload')} on {plural(len(offers), 'offer', ',')}")
    if start_date is None:
        today = _dt.date.today()
        start_date = _dt.date(today.year + (today.month == 12), today.month % 12 + 1, 1)
    problem = make_problem(workloads, profiles, offers, budget_usd=budget_usd, objective=objective, pricing=pricing,
                           spot_capacity=spot_capacity, max_instances=max_instances, horizon_months=horizon_months,
                           leftover_value=leftover_value, placement=placement, spread=spread, budgets=budgets,
                           start_date=start_date, keep_unpruned=explain, quotas=quotas,
                           owned=owned)
    if solver == "auto" and any(w.redundancy > 0 and not w.training for w in workloads) and _highs_available():
        solver = "highs"  # N+1 models: see N1_SOLVER_NOTE
    solver = resolve_solver(solver)
    progress.update("solving", detail=f"{sum(len(c) for c in problem.cands.values()):,} candidates, "
                                      f"{plural(len(problem.blocks), 'block')}")
    res = FleetResult(status="infeasible", objective=objective, horizon_months=problem.horizon_months,
                      horizon_note=problem.horizon_note, start_month=month_label(start_date, 0),
                      leftover_value=problem.leftover_value)
    res.rules = fx.rules(problem)
    res.solver = {"name": solver, "blocks": len(problem.blocks), "periods": len(problem.periods or []),
                  "merge": merge_note or problem.merge_note, "pruned": problem.pruned,
                  "candidates": {w: len(cs) for w, cs in problem.cands.items()},
                  "rejected": {w: dict(r) for w, r in problem.rejected.items()}}
    empty = [w for w in workloads if not problem.cands.get(w.name)]
    if empty:
        w = empty[0]
        from optimizer.diagnose import no_fit_reason

        rej = problem.rejected.get(w.name, {})
        why = no_fit_reason(w.workload, offers, rej)
        if rej.get("spot_not_allowed") or rej.get("pricing_not_allowed"):
            fits, _, _ = candidates_for(w.workload, offers, allow_spot=True, pricing=None)
            offered = sorted({c.offer["pricing"] for c in fits})
            asked = sorted(set(pricing or DEFAULT_PRICING)
                           - ({"spot"} if not w.allow_spot else set()))
            why = {"kind": "pricing", "message": (
                f"none of the offers that can hold a replica is sold as {', '.join(asked)}; they are offered as: "
                f"{', '.join(offered)} (change --pricing" + (" or add --allow-spot" if "spot" in offered and
                                                              not w.allow_spot else "") + ")")}
        kept = {k: n for k, n in rej.items()
                if k in ("marketplace_tier", "spot_undated", "spot_training_not_allowed", "outside_region")}
        if kept:  # the offers left out as not signable (issue 26) are what blocks it: say that, not "not sold"
            words = {"marketplace_tier": "on marketplace hosts (--allow-marketplace)",
                     "spot_undated": f"spot prices without a date, not planned for over {UNDATED_SPOT_MAX_DAYS:g} "
                                     "days (`gpuopt prices refresh` fetches dated ones)",
                     "spot_training_not_allowed": f"spot for a job over {SPOT_TRAINING_MAX_HOURS} h "
                                                  "(--allow-spot-training)",
                     "outside_region": f"outside the workload's region {'/'.join(w.region or ())}"}
            why = {"kind": "pricing", "message": "the offers that could hold a replica were kept out: " + "; ".join(
                f"{n:,} {words[k]}" for k, n in sorted(kept.items()))}
        if rej.get("flex_start_training_only"):
            why = {"kind": "pricing", "message": (
                f"{rej['flex_start_training_only']} Flex-start offers are for training jobs only (their VMs run at "
                "most 7 days and start when capacity is found), and no other offer allowed can hold a replica "
                "(add on_demand or reserved to --pricing)")}
        res.reason = {**why, "workload": w.name, "message": f"{w.name}: {why['message']}"}
        long = blocks_too_short(problem)
        if long:
            res.reason = {**res.reason, "kind": "pricing", "message": long}
        return res
    if objective == "roi":
        roi_problem = problem
        if problem.placement != "any" and placed(problem):
            # each serving workload stays in the placement group the minimum-cost plan chose (the ROI steps then
            # need no placement binaries); said in the notes
            base = solve_cost(problem.replace(objective="cost"), solver=solver, time_limit_s=time_limit_s / 2,
                              gap_rel=gap_rel)
            if base.report.status in ("optimal", "time_limit"):
                keep = {w.name: set(groups_used(problem, base, w.name)) for w in placed(problem)}
                cands = {w: [c for c in cs if w not in keep or placement_group(c.offer, problem.placement) in keep[w]]
                         for w, cs in problem.cands.items()}
                roi_problem = as_unplaced(problem.replace(cands=cands))
                res.notes.append("ROI with placement rules: each serving workload is kept in the "
                                 + problem.placement + " its minimum-cost plan uses")
        sol, its = solve_roi(roi_problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        res.dinkelbach = its
    elif problem.owned_in_use() and _model_size(problem) > OWNED_FULL_MILP_MAX:
        sol, note = _solve_with_owned(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        res.notes.append(note)
    else:
        sol = solve_cost(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
    rep = sol.report
    res.solver.update({"status": rep.status, "gap": rep.gap, "seconds": round(rep.seconds, 3), "message": rep.message,
                       "method": "enumeration" if rep.solver == "enumeration" else "milp"})
    if rep.status == "infeasible":
        res.reason = fx.why_infeasible(problem, solver, time_limit_s, gap_rel)
        long = blocks_too_short(problem)
        if long and res.reason:
            res.reason = {**res.reason, "message": f"{long} (else: {res.reason.get('message', '')})"}
        return res
    if rep.status not in ("optimal", "time_limit"):
        res.status = rep.status
        res.reason = not_solved_reason(solver, time_limit_s, rep)
        return res
    if owned:  # an owned slot is free: the solver may leave it at any count up to its size; count what runs
        _owned_in_use(problem, sol)
    bad = verify(problem, sol)
    if bad:
        res.status = "not_solved"
        res.reason = {"kind": "solver", "message": f"the solver's plan fails a check ({bad}); no plan is shown rather than a wrong one"}
        return res
    res.status = rep.status
    sol = trim_allocations(problem, sol)
    res.recurring = problem.recurring
    cidx = cand_index(problem)
    used_types = {problem.slots[k].offer["instance_type"] for k in sol.N} | \
        {cidx[(w, ok)].offer["instance_type"] for (w, ok, _) in list(sol.X) + list(sol.A)}
    res.lines = fleet_lines(problem, sol, on_demand_rates(offers, used_types))
    mo = money(problem, sol)
    for k, v in mo.items():
        setattr(res, k, v)
    res.commitment = {"total_over_term_usd": mo["commitment_usd"], "upfront_usd": mo["upfront_usd"]}
    big = [ln for ln in res.lines if ln.count > 64]
    if big:
        res.notes.append(f"{big[0].count} instances of {big[0].instance_type} in {big[0].region}: check your quota "
                         "(max_instances caps it)")
    res.workloads, res.blocks = workload_summaries(problem, sol)
    for ws in res.workloads:
        note = at_peak_note(ws)
        if note:
            res.notes.append(note)
    if objective == "roi":
        res.value_usd = round(sol.value, 2)
        res.net_value_usd = round(sol.value - sol.cost, 2)
        res.roi = None if sol.cost <= 0 else round(sol.value / sol.cost - 1.0, 6)
        if sol.cost <= 0:
            res.notes.append("no workload's value pays for its capacity: the ROI-maximizing plan buys nothing")
    if rep.status == "time_limit":
        res.notes.append("the solver stopped at its time limit: feasible, not proven optimal "
                         f"(gap {100 * (rep.gap or 0.0):.3g} %)")
    if any(ln.estimated for ln in res.lines):
        res.notes.append("some prices are estimated (source rule:...): reserved rates derived from a documented discount rule")
    res.notes.extend(capped_notes(res.lines))
    res.notes.extend(zone_notes(problem, res.lines))
    res.notes.extend(quota_notes(problem, sol))
    if owned:
        from optimizer.planning.owned import owned_id as _oid, owned_notes

        used = {_oid(problem.slots[k].offer): float(n) for k, n in sol.N.items() if k.startswith("owned:") and n}
        offer_of = {c.okey: c.offer for cs in problem.cands.values() for c in cs}
        for (_, ok, _), a in sol.A.items():  # an owned savings plan runs instances (purchase_notes say how much)
            oid = _oid(offer_of[ok])
            if oid and a > 0 and oid not in used:
                used[oid] = 1.0
        training = {w.name for w in problem.workloads if w.training}
        job_hours = sorted({(str(o["provider"]), str(o["region"]), str(o["instance_type"]))
                            for (w, ok, _), x in sol.X.items() if w in training and x > 0
                            for o in [offer_of[ok]] if str(o["pricing"]) == "on_demand"})
        res.owned_used = sorted(k for k, n in used.items() if n)
        res.notes.extend(owned_notes(owned, used, start_date, problem.horizon_months, job_hours))
    if mo["after_horizon_usd"] > 0:
        res.notes.append(f"commitments outlive the {problem.horizon_months}-month horizon: ${mo['after_horizon_usd']:,.2f} "
                         f"is still paid after it, counted in the total at {100 * (1 - problem.leftover_value):.0f} %"
                         " (--leftover-value)")
    res.binding = fx.binding(problem, sol)
    res.notes.extend(unusable_notes(problem, len(offers)))
    res.notes.extend(kept_out_notes(problem))
    res.notes.extend(purchase_notes(problem, sol))
    if skipped_explain:
        res.notes.append(f"explanations skipped: {len(workloads)} workloads, above {EXPLAIN_MAX_WORKLOADS} (the strategy "
                         "comparison, what-ifs, provider alternatives and other serving targets each re-plan the "
                         "whole fleet; plan a subset of the workloads to see them)")
    if explain and objective == "roi":
        res.notes.append("the strategy comparison and the provider alternatives price the FULL demand; an ROI plan "
                         "may serve less, so they are not shown (run --objective cost to compare)")
    elif explain:
        progress.hold("explaining (strategies, what-ifs, alternatives)")
        progress.update(best=sol.cost)
        try:
            fx.explain_into(res, problem, sol, solver, time_limit_s, gap_rel, mo, plan_seconds=rep.seconds)
        except ModelTooLarge as exc:  # the plan is complete; an explanation's model would not fit in memory
            res.notes.append(f"explanations skipped: {exc.message.split(';')[0]}")
        finally:
            progress.release()
    if explain and objective == "cost" and any(not w.training for w in workloads):
        progress.update("pricing the other serving targets and tiers")
        # the alternatives share one time budget: as long as the plan's own solve took, at least
        # ALTERNATIVES_MIN_S (the example plan's four re-plans took 45 s apart)
        alt_deadline = time.perf_counter() + max(ALTERNATIVES_MIN_S, float(rep.seconds or 0.0))
        again = dict(profiles=profiles, offers=offers, budget_usd=budget_usd, objective=objective, pricing=pricing,
                     spot_capacity=spot_capacity, solver=solver, time_limit_s=min(time_limit_s, ALTERNATIVE_TIME_S),
                     deadline=alt_deadline,
                     gap_rel=gap_rel, max_instances=max_instances, horizon_months=horizon_months,
                     leftover_value=leftover_value, placement=placement, spread=spread, budgets=budgets,
                     start_date=start_date, quotas=quotas, owned=owned)
        res.targets = target_alternatives(workloads, res, again)
        res.marketplace = marketplace_alternative(workloads, res, problem, again)
        res.precision = precision_alternative(workloads, res, again)
        pc = res.precision or {}
        if pc.get("precision") == "without quantized checkpoints" and pc.get("total_usd") is not None \
                and pc["total_usd"] <= res.total_usd + 0.01:
            res.notes.append(f"{', '.join(pc['workloads'])}: the plan in 16-bit costs the same "
                             f"(${pc['total_usd']:,.2f}): quantizing saves nothing here, serve bf16 (the replica "
                             "count is set by the redundancy floor, not the throughput)")
        if res.marketplace and res.marketplace.get("total_usd") is not None \
                and res.marketplace["total_usd"] < res.total_usd - 0.01:
            res.notes.append(
                f"marketplace offers (third-party hosts without a data-centre SLA) were kept from the serving "
                f"workloads: allowing them (--allow-marketplace) would cost ${res.marketplace['total_usd']:,.2f} over "
                f"the horizon, ${res.total_usd - res.marketplace['total_usd']:,.2f} less")
    res.solver["total_seconds"] = round(time.perf_counter() - t0, 3)
    return res


#: Candidates x blocks above which a plan with owned commitments is not given to the MILP whole (the example plan,
#: 8,200 candidates over 50 blocks, found no plan in 180 s): :func:`_solve_with_owned`.
OWNED_FULL_MILP_MAX = 30000


def _model_size(problem) -> int:
    return sum(len(cs) for cs in problem.cands.values()) * max(1, len(problem.blocks))


def _solve_with_owned(problem, *, solver: str, time_limit_s: float, gap_rel: float | None):
    """A large plan with owned commitments: first the plan without them (the enumerations solve it), then the MILP
    over the owned rows and the offers that plan uses (every layout and pricing of its instance types), whose
    answer is never dearer (the first plan is one of its answers). Returns (solution, a note saying so); the first
    plan when the second finds nothing better."""
    from optimizer.planning.owned import owned_id

    plain = {w: [c for c in cs if not owned_id(c.offer)] for w, cs in problem.cands.items()}
    base = solve_cost(problem.replace(cands=plain), solver=solver, time_limit_s=time_limit_s / 2, gap_rel=gap_rel)
    if base.report.status not in ("optimal", "time_limit"):
        return solve_cost(problem, solver=solver, time_limit_s=time_limit_s / 2, gap_rel=gap_rel), \
            "owned commitments: planned by the MILP over every offer"

    def place(o) -> tuple:
        return (str(o["provider"]), str(o["region"]), str(o.get("zone") or ""), str(o["instance_type"]))

    offer_of = {c.okey: c.offer for cs in problem.cands.values() for c in cs}
    used = {place(offer_of[ok]) for store in (base.A, base.X) for (_, ok, _) in store}
    used |= {place(problem.slots[k].offer) for k in base.N}
    keep = {w: [c for c in cs if owned_id(c.offer) or place(c.offer) in used] for w, cs in problem.cands.items()}
    sol = solve_cost(problem.replace(cands=keep), solver=solver, time_limit_s=time_limit_s / 2, gap_rel=gap_rel)
    what = ("owned commitments: the plan was first made without them, then made again with them over the offers "
            "it used (its instance types, every pricing) -- the choice among all offers with owned capacity is too "
            "large for the MILP in the time limit, so this plan is optimal within that choice, not proven over every "
            "offer")
    if sol.report.status in ("optimal", "time_limit") and sol.cost <= base.cost + 1e-6:
        return sol, what
    return base, what + "; that second plan was not cheaper: the owned commitments are not used"


def _owned_in_use(problem, sol) -> None:
    """Set each owned slot's count in ``sol.N`` to the most instances of it the plan runs in any block (whole
    instances): an owned commitment costs nothing in the model, so the solver's count of it says nothing."""
    from optimizer.planning.problem import cand_index

    idx = cand_index(problem)
    for k in [k for k in sol.N if k.startswith("owned:")]:
        okey = problem.slots[k].okey
        per_block: dict[int, float] = {}
        for (w, ok, bi), a in sol.A.items():
            if ok == okey:
                per_block[bi] = per_block.get(bi, 0.0) + a * idx[(w, ok)].instances_per_unit
        sol.N[k] = min(sol.N[k], math.ceil(max(per_block.values(), default=0.0) - 1e-6))
    # an owned savings plan nothing runs on: no "reused" line at $0/h (a breaker saw one beside "not used")
    from optimizer.planning.owned import owned_id

    offer_of = {c.okey: c.offer for cs in problem.cands.values() for c in cs}
    running = {owned_id(offer_of[ok]) for (_, ok, _), a in sol.A.items() if a > 1e-9 and ok in offer_of}
    for k in [k for k in sol.SP if k.startswith("owned:") and k[len("owned:"):] not in running]:
        del sol.SP[k]


#: An alternative whose solve stopped at its time limit is priced only when within this gap of proven (1 %).
ALTERNATIVE_MAX_GAP = 0.01
#: Seconds each alternative plan (another serving target, marketplace offers allowed) may take.
ALTERNATIVE_TIME_S = 20.0
#: Seconds the alternatives may take together, at least (else as long as the plan's own solve).
ALTERNATIVES_MIN_S = 10.0


def _alt_plan(workloads, kw: dict) -> dict:
    """Plan ``workloads`` again without explanations, within half the alternatives' time left (``kw["deadline"]``,
    a perf_counter instant); its total, or why there is none (``not_computed`` once that time is spent)."""
    left = float(kw.get("deadline", math.inf)) - time.perf_counter()
    if left < 1.0:
        return {"status": "not_computed", "total_usd": None,
                "reason": "not computed: the alternatives' share of the time ran out (the plan itself is complete)"}
    limit = min(float(kw["time_limit_s"]), max(1.0, left / 2.0)) if math.isfinite(left) else float(kw["time_limit_s"])
    try:
        r = plan_fleet(workloads, kw["profiles"], kw["offers"], explain=False,
                       **{k: v for k, v in kw.items() if k not in ("profiles", "offers", "deadline", "time_limit_s")},
                       time_limit_s=limit)
    except ModelTooLarge as exc:  # the plan itself is complete: this comparison alone is not priced
        return {"status": "not_computed", "total_usd": None, "reason": f"not computed: {exc.message.split(';')[0]}"}
    if not r.feasible:
        return {"status": r.status, "total_usd": None,
                "reason": (r.reason or {}).get("message", r.status)}
    gap = r.solver.get("gap")
    if r.status == "time_limit" and (gap is None or gap > ALTERNATIVE_MAX_GAP):
        # a breaker read an fp8 alternative of $518,487,867.92 (gap 99.999 %) beside a $15,827 plan
        return {"status": "not_computed", "total_usd": None,
                "reason": f"not computed: its solve stopped at the time limit {100 * (gap or 1.0):.3g} % from "
                          "proven (the plan itself is complete)"}
    out = {"status": r.status, "total_usd": round(r.total_usd, 2), "max_month_usd": round(r.max_month_usd, 2),
           "gap": gap}
    return out


def target_alternatives(workloads, res, kw: dict) -> list[dict]:
    """The plan priced at each serving target of ``optimizer.sizing.serving.ALTERNATIVE_SCENARIOS`` (interactive,
    chat, offline/batch) for every serving workload, beside this plan (issue 26: "every serving plan shows beside it
    what the interactive and the batch (offline) targets would cost"). Targets a workload sets itself (ttft_ms,
    tpot_ms) are replaced by the scenario's in the alternative."""
    import dataclasses

    from optimizer.sizing.serving import ALTERNATIVE_SCENARIOS, SCENARIOS

    serving = [w for w in workloads if not w.training]
    own = {w.workload.scenario for w in serving
           if w.workload.ttft_slo_ms is None and w.workload.tpot_slo_ms is None}
    out = [{"scenario": "this plan", "targets": sorted(own) if own else ["yours"], "total_usd": round(res.total_usd, 2),
            "status": res.status}]
    for sc in ALTERNATIVE_SCENARIOS:
        if own == {sc} and len(serving) and all(w.workload.scenario == sc for w in serving):
            continue
        alt = [dataclasses.replace(w, workload=dataclasses.replace(w.workload, scenario=sc, ttft_slo_ms=None,
                                                                     tpot_slo_ms=None)) if not w.training else w
               for w in workloads]
        ttft, tpot = SCENARIOS[sc]
        row = {"scenario": sc, "ttft_ms": ttft, "tpot_ms": tpot}
        try:
            row.update(_alt_plan(alt, kw))
        except Exception as exc:  # an alternative is a comparison: its failure never costs the plan
            row.update({"status": "not_computed", "total_usd": None, "reason": str(exc)})
        out.append(row)
    return out


def _precisions(w) -> tuple[str, ...]:
    """The precisions serving workload ``w`` may run."""
    return tuple(w.workload.precision_options or ()) or (w.workload.precision,)


def _priced_with_precisions(workloads, opts: dict[str, tuple[str, ...]], row: dict, kw: dict) -> dict:
    """``row`` with the total of the plan whose workloads named in ``opts`` run those precisions (the first one the
    stated one), or why it was not computed."""
    import dataclasses

    def with_opts(w):
        o = opts[w.name]
        return dataclasses.replace(w, workload=dataclasses.replace(
            w.workload, precision=o[0], precision_options=o if len(o) > 1 else None))
    alt = [with_opts(w) if w.name in opts else w for w in workloads]
    try:
        row.update(_alt_plan(alt, kw))
    except Exception as exc:  # a comparison only
        row.update({"status": "not_computed", "total_usd": None, "reason": str(exc)})
    return row


def precision_alternative(workloads, res, kw: dict) -> dict | None:
    """The plan with FP8 allowed beside the stated precision of every serving workload that does not allow it
    (issue 26: "a 405B bf16 plan on H100 costs 40 % more than the FP8 plan ... and the plan does not say so"): its
    total, what it saves, and the quality rule (gpuopt.request.AUTO_PRECISIONS). When every serving workload
    already allows fp8: :func:`_without_checkpoints`."""
    todo = [w for w in workloads if not w.training and "fp8" not in _precisions(w)]
    if not todo:
        return _without_checkpoints(workloads, res, kw)
    given = sorted({p for w in todo for p in _precisions(w)})
    row = {"precision": "fp8 allowed", "workloads": sorted(w.name for w in todo),
           "label": None if given == ["bf16"] else f"with fp8 added to {'/'.join(given)}",
           "rule": "FP8 W8A8 on GPUs with FP8 tensor cores: 99 % or more of BF16 accuracy (arXiv 2411.02355); vLLM "
                   "quantizes a BF16 checkpoint to FP8 on load"}
    opts = {w.name: tuple(dict.fromkeys(_precisions(w) + ("fp8",))) for w in todo}
    return _priced_with_precisions(workloads, opts, row, kw)


def _without_checkpoints(workloads, res, kw: dict) -> dict | None:
    """When a serving workload's plan runs a quantized precision it chose among several (fp8, or a weight-only
    checkpoint, int8/int4, that ``precision: auto`` allowed; optimizer.sizing.checkpoints): the plan in 16-bit only,
    so the choice shows its price (a fresh user saw no bf16 cost beside an fp8 plan). None otherwise."""
    quantized = ("fp8", "int8", "int4")
    used = {n for ln in res.lines if str(getattr(ln, "precision", "") or "") in quantized
            for n in (getattr(ln, "workloads", None) or [])}
    todo = [w for w in workloads if not w.training and w.name in used and len(_precisions(w)) > 1
            and any(p not in quantized for p in _precisions(w))]
    if not todo:
        return None
    row = {"precision": "without quantized checkpoints", "workloads": sorted(w.name for w in todo),
           "label": "in 16-bit only, without the fp8/int8/int4 the plan chose",
           "rule": "fp8 keeps 99 % or more of BF16 accuracy (arXiv 2411.02355); a published weight-only checkpoint "
                   "is served only when its card reports 99 % or more of the unquantized score "
                   "(optimizer.sizing.checkpoints)"}
    opts = {w.name: tuple(p for p in _precisions(w) if p not in quantized) for w in todo}
    return _priced_with_precisions(workloads, opts, row, kw)


def marketplace_alternative(workloads, res, problem, kw: dict) -> dict | None:
    """The plan with marketplace-tier offers allowed for the serving workloads, when some were kept out (issue 26:
    "a plan that excluded a cheaper marketplace offer says what it would have cost"); None when none was."""
    import dataclasses

    kept_out = sum(problem.rejected.get(w.name, {}).get("marketplace_tier", 0) for w in workloads if not w.training)
    if not kept_out:
        return None
    alt = [dataclasses.replace(w, allow_marketplace=True) if not w.training else w for w in workloads]
    try:
        return {"offers_kept_out": int(kept_out), **_alt_plan(alt, kw)}
    except Exception as exc:  # a comparison only
        return {"offers_kept_out": int(kept_out), "status": "not_computed", "total_usd": None, "reason": str(exc)}


def plan_workload(workload: "Workload", offers: "pd.DataFrame", *, name: str = "workload", allow_spot: bool = False,
                  min_replicas: int | None = None, spot_only_ok: bool = False, start_month: int = 0,
                  end_month: int | None = None, explain: bool = False, **kw) -> FleetResult:
    """A plan of one workload (what a single-workload ``recommend`` is): serving at its flat demand
    ``workload.tokens_per_second``, or a training job before ``workload.deadline_hours``. ``min_replicas`` defaults
    to 1 for serving (a fleet never drops to zero), 0 for training; other keywords as :func:`plan_fleet`."""
    from optimizer.planning.demand import flat_profile

    serve = workload.task == "serve"
    fw = FleetWorkload(name=name, workload=workload, allow_spot=allow_spot,
                       min_replicas=(1 if serve else 0) if min_replicas is None else min_replicas,
                       spot_only_ok=spot_only_ok, deadline_hours=None if serve else workload.deadline_hours,
                       start_month=start_month, end_month=end_month)
    profiles = {name: flat_profile(float(workload.tokens_per_second or 0.0))} if serve else {}
    return plan_fleet([fw], profiles, offers, explain=explain, **kw)


def at_peak_note(ws: dict) -> str:
    """The plan's note on a serving workload's replicas at its peak (``ws["at_peak"]``,
    :func:`optimizer.planning.answer.at_peak_load`), or "": the load each runs at and its simulated p99s, a
    WARNING when the simulation misses a target or saturates (the sizing's mean field and the simulation disagree)."""
    ap = ws.get("at_peak")
    if not ap:
        return ""
    head = (f"{ws['name']}: at its peak ({ap['block']}) each {ap['gpu']} replica gets {ap['rate_per_replica']:.3g} "
            f"requests/s ({100 * ap['utilization']:.0f} % of the rate it saturates at)")
    if ap.get("method", "").startswith(("prefill pool", "decode pool")):  # one pool on its own GPU type
        pool = ap["method"].split()[0]
        return head.replace("replica gets", f"{pool} replica gets").replace("saturates at", "was sized for") \
            + f" ({pool} pool sized for its target, not simulated)"
    if ap.get("method", "").startswith("disaggregated"):
        return head.replace("replica gets", "disaggregated unit gets").replace("saturates at", "was sized for") \
            + " (prefill and decode pools sized for their targets, not simulated)"
    if ap["saturated"]:
        return (f"WARNING: {head}: the simulation saturates there -- queues grow without bound; the mean-field "
                "sizing and the simulation disagree: add replicas (--min-replicas) or relax the targets")
    if ap["ttft_p99_ms"] is None or ap["tpot_p99_ms"] is None:
        return ""
    text = (f"{head}: p99 TTFT {ap['ttft_p99_ms']:,.0f} ms, p99 TPOT {ap['tpot_p99_ms']:,.1f} ms at that load "
            "(simulated, Poisson arrivals; the replicas are sized at the highest rate whose p99s meet the targets)")
    missed = [f"p99 {k} {ap[f'{k.lower()}_p99_ms']:,.1f} ms > {t:g} ms"
              for k, t in (("TTFT", ap.get("ttft_target_ms")), ("TPOT", ap.get("tpot_target_ms")))
              if t is not None and ap[f"{k.lower()}_p99_ms"] > t]
    if missed:
        text = ("WARNING: " + text + f"; the simulation misses the target ({'; '.join(missed)}): the sizing's "
                "mean field is optimistic here -- add replicas or relax the targets")
    return text
