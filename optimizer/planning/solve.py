"""Solve a planning problem: minimum cost (:func:`solve_cost`: the exact enumerations of
:mod:`optimizer.planning.exact` and :mod:`optimizer.planning.shared` where they apply, else the MILP of
:mod:`optimizer.planning.milp`, with a branch and bound over placement groups) or maximum ROI (:func:`solve_roi`,
Dinkelbach iterations); then check the plan against the problem (:func:`verify`) and drop idle allocations
(:func:`trim_allocations`). The solver runs themselves (status, gap, wall time) are :mod:`optimizer.planning.solver`'s.
"""

from __future__ import annotations

import dataclasses
import math
import time

from gpuopt.kernel.words import plural
from optimizer.planning import progress
from optimizer.planning.milp import build_fleet_model
from optimizer.planning.size_guard import ModelTooLarge
from optimizer.planning.problem import (
    CAPACITY_BLOCK,
    CAPACITY_BLOCK_MAX_INSTANCES,
    Budgets,
    FleetProblem,
    cand_index,
    failure_loss,
    job_units,
    model_seconds,
    placed,
    placement_group,
    purchase_kind,
    savings_plan_scope,
    spot_group,
)
from optimizer.planning.prune import drop_lone_training_commitments, prune_fleet
from optimizer.planning.solution import FleetSolution, fleet_cost, fleet_value, money, read_solution, var_value
from optimizer.planning.solver import SolveReport
from optimizer.planning.solver import run_solver as solve_fleet  # the planner's name for it


#: The share of a solve's time limit the shared-commitment enumeration (optimizer/planning/shared.py) may use before the
#: MILP gets the rest.
SHARED_TIME_SHARE = 0.4

#: The share of a solve's time limit the problem without its shared limits (budgets, ``max_instances``) may use
#: (:func:`solve_within_limits`) before the MILP with the limits gets what is left; all of it when a plain plan keeps
#: the limits already (:func:`construct_plan`: they are unlikely to bind) or the MILP with the limits could not start
#: in what the share leaves (``model_seconds``).
FREE_TIME_SHARE = 0.5


def independent_parts(problem: FleetProblem, allowed: set[str] | None = None) -> list[list[str]]:
    """The workloads split into parts that share no constraint but the objective (names, in problem order).

    Two workloads are in one part when they could share a committed offer (a reservation's instances), a capacity
    block or savings plan offer, or a capped spot group (one spot instance type in one region), or any instance
    type in a region when a quota (``max_instances``) caps it. Budgets tie every workload together: with any
    budget there is one part. Without those ties the MILP's rows never mention two parts at once, so the minimum
    cost of the whole is the sum of the parts' minima (the decomposition of DESIGN.md "Making it fast")."""
    names = [w.name for w in problem.workloads]
    if problem.budgets.any() or problem.objective != "cost" or len(names) < 2 or problem.quotas:
        return [names]  # budgets (and --quota limits, issue 26) tie every workload together
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    owner: dict[tuple, str] = {}
    for w in problem.workloads:
        for c in problem.cands.get(w.name, []):
            o = c.offer
            if allowed is not None and o["pricing"] not in allowed:
                continue
            keys = []
            if c.committed or purchase_kind(o) == CAPACITY_BLOCK:
                keys.append(("offer", c.okey))
            if purchase_kind(o) == "savings_plan":
                keys.append(("plan", savings_plan_scope(o)))
            if o["pricing"] == "spot" or problem.max_instances is not None:
                keys.append(("type", spot_group(o)))
            for k in keys:
                if k in owner:
                    a, b = find(owner[k]), find(w.name)
                    if a != b:
                        parent[a] = b
                else:
                    owner[k] = w.name
    parts: dict[str, list[str]] = {}
    for n in names:
        parts.setdefault(find(n), []).append(n)
    return list(parts.values())


def _solve_parts(problem: FleetProblem, parts: list[list[str]], *, solver, time_limit_s, gap_rel,
                 allowed) -> FleetSolution:
    """Minimum cost of a problem whose ``parts`` (:func:`independent_parts`) share nothing: each part solved alone
    (:func:`solve_cost`, its share of the time left) and the plans put together. The report is "optimal" when every
    part is, else the worst status; the bound is the sum of the parts' bounds."""
    t_end = time.perf_counter() + float(time_limit_s)
    t0 = time.perf_counter()
    by_name = {w.name: w for w in problem.workloads}
    merged = FleetSolution(report=SolveReport("optimal", solver=solver))
    bound, statuses, messages = 0.0, [], []
    for i, part in enumerate(parts):
        share = max(0.5, (t_end - time.perf_counter()) / (len(parts) - i))
        sub = problem.replace(workloads=[by_name[n] for n in part], cands={n: problem.cands.get(n, []) for n in part},
                              work_flops={n: f for n, f in problem.work_flops.items() if n in part},
                              unpruned=None)
        sol = solve_cost(sub, solver=solver, time_limit_s=share, gap_rel=gap_rel, allowed=allowed)
        rep = sol.report
        statuses.append(rep.status)
        if rep.status not in ("optimal", "time_limit"):
            return FleetSolution(report=dataclasses.replace(rep, seconds=time.perf_counter() - t0,
                                                            message=f"{', '.join(part)}: {rep.message or rep.status}"))
        bound += float(rep.bound if rep.bound is not None else sol.cost)
        messages.append(f"{'+'.join(part)}: {rep.message or rep.solver}")
        for store in ("N", "A", "X", "S", "Z", "CB", "SP"):
            getattr(merged, store).update(getattr(sol, store))
    merged.cost = fleet_cost(problem, merged)
    merged.value = fleet_value(problem, merged)
    status = "optimal" if all(st == "optimal" for st in statuses) else "time_limit"
    gap = 0.0 if status == "optimal" or merged.cost <= 0 else max(0.0, (merged.cost - bound) / merged.cost)
    merged.report = SolveReport(status, objective=merged.cost, bound=min(bound, merged.cost), gap=gap,
                                seconds=time.perf_counter() - t0, solver=solver,
                                message=f"{len(parts)} independent parts: " + "; ".join(messages))
    return merged


def solve_cost(problem: FleetProblem, *, solver="auto", time_limit_s=60.0, gap_rel=0.001,
               allowed: set[str] | None = None, exact: bool = True) -> FleetSolution:
    """Minimum-cost plan. Serving workloads that share nothing (``optimizer.planning.exact.separable``): exactly, by
    enumeration, no MILP (``exact=False`` skips it). Otherwise, without placement rules (or when no serving
    workload could be split) one MILP; with them, :func:`_solve_placed`. The enumerations keep to
    ``time_limit_s`` too (checked between workloads): past it they give no plan, and what is left of the time goes
    to the solver (an explanation given 2 s spent 10 s in the apart plan of 30 workloads). A model past the memory
    share (optimizer.planning.size_guard) is not built: the plan held (shared, within the limits, apart) is
    returned with its bound, else ModelTooLarge (an InputError) is raised."""
    t_start = time.perf_counter()
    t_end = t_start + float(time_limit_s)
    parts = independent_parts(problem, allowed)
    if len(parts) > 1:
        return _solve_parts(problem, parts, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel,
                            allowed=allowed)
    fallback = None
    if exact:
        from optimizer.planning.exact import solve_separable
        from optimizer.planning.shared import solve_shared

        sol = solve_separable(problem, allowed=allowed, deadline=t_end)
        if sol is not None:
            return sol
        # several workloads that can share a commitment: proven (returned), or a plan with its bound when some
        # co-location is past the enumeration's caps (then the MILP's start, and its bound kept)
        # at most SHARED_TIME_SHARE of the time: what it leaves is the MILP's (a breaker's six services in one
        # region spent all 20 s here and left CBC 0.5 s: no plan, where the MILP alone found one in 16 s)
        fallback = solve_shared(problem, allowed=allowed, gap_rel=gap_rel,
                                  deadline=min(t_end, time.perf_counter() + SHARED_TIME_SHARE * float(time_limit_s)))
        if fallback is not None and fallback.report.status == "optimal":
            return fallback
        if problem.budgets.any() or problem.max_instances is not None:
            # a plan by construction before any joint MILP: the problem without its shared limits, by the whole
            # machinery (parts apart, placement, apart plans), in a share of the time. A budget that cannot bind
            # tied 16 workloads into one MILP that found nothing in 60 s ("no plan", issue 33). When a plain plan
            # keeps the limits already (each workload on its cheapest on-demand offer: the last resort below, made
            # in milliseconds) they are unlikely to bind, and it may take the whole time: at half of it the
            # placement search of 200 budgeted services started no node and left a 47 % gap where the whole time
            # proves the plan
            # It may as well when the MILP with the limits could not start in what the share leaves (a breaker's
            # example plan with two more services: any budget, even $10M, ended "not solved" after a third of the
            # limit, where the plan without it was found in the whole limit)
            loose = fallback is not None or construct_plan(problem, allowed=allowed) is not None or \
                model_seconds(len(problem.blocks), problem.cands) >= (1 - FREE_TIME_SHARE) * float(time_limit_s)
            share = 1.0 if loose else FREE_TIME_SHARE
            sol = solve_within_limits(problem, solver=solver, allowed=allowed, gap_rel=gap_rel,
                                      deadline=min(t_end, time.perf_counter() + share * float(time_limit_s)))
            if sol is not None and (fallback is None or sol.cost <= fallback.cost + 1e-6):
                return sol
            if fallback is None:  # a plan that keeps every limit: the MILP's start and its fallback
                fallback = start_within_limits(problem, allowed=allowed, deadline=t_end)
            if sol is not None and fallback is not None and sol.report.bound is not None:
                # the plan without the limits, dearer than the one held: its bound bounds the limited problem too
                fallback.report = dataclasses.replace(fallback.report, bound=max(float(sol.report.bound),
                                                                                 float(fallback.report.bound or 0.0)))
        if fallback is None:
            from optimizer.planning.exact import plan_apart, separable

            if separable(problem, allowed) is not None:  # else it was just tried, and its frontiers are too big
                # each workload apart: the MILP's start and its fallback (together never above apart)
                fallback = plan_apart(problem, allowed=allowed, deadline=t_end)
    try:
        sol = _solve_milp(problem, solver=solver, gap_rel=gap_rel, allowed=allowed, fallback=fallback,
                          t_start=t_start, t_end=t_end)
    except ModelTooLarge as exc:
        fallback = fallback or construct_plan(problem, allowed=allowed)
        if fallback is None:
            raise  # the one-line refusal with its figure
        # a plan is held (shared, within the limits, or each workload apart): it, not a refusal, with its own bound
        # and the reason the joint model was not built (issue 33: 200 services with a budget that cannot bind)
        return held_plan(fallback, None, gap_rel=gap_rel, t_start=t_start,
                         why=f"the joint model was not built ({exc.message.split(';')[0]})")
    if sol.report.status not in ("optimal", "time_limit", "infeasible"):
        # nothing found in the time and nothing proven: a plan by construction when one exists, so a stop at the
        # limit gives a plan with its gap stated, not "not solved" (a breaker's 100-replica service: nothing in
        # 60 s). Only here: as the solver's start it changed which of equal-cost plans it returned
        built = construct_plan(problem, allowed=allowed)
        if built is not None:
            built.report = dataclasses.replace(built.report, seconds=time.perf_counter() - t_start,
                                               message=f"the {solver} solver found no plan in its time; this is "
                                                       f"{built.report.message}")
            return built
    return sol


def _solve_milp(problem: FleetProblem, *, solver, gap_rel, allowed, fallback, t_start: float,
                t_end: float) -> FleetSolution:
    """solve_cost's MILP step: the placement search (:func:`_solve_placed`) or one MILP, ``fallback`` (a plan held
    already, or None) their start and what is returned when it is better; until ``t_end`` (time.perf_counter()).
    Raises ModelTooLarge (optimizer.planning.size_guard) before building a model past the memory share."""

    def left() -> float:
        return max(0.0, t_end - time.perf_counter())

    time_limit_s = t_end - t_start
    if problem.placement != "any" and placed(problem):
        sol = _solve_placed(problem, solver=solver, time_limit_s=left(), gap_rel=gap_rel, allowed=allowed,
                            start=fallback)
        if fallback is not None and (sol.report.status not in ("optimal", "time_limit")
                                     or fallback.cost < sol.cost - 1e-9):
            # nothing better in the time: the plan held, its bound the better of the two (gap 1.0 without one)
            return held_plan(fallback, sol, gap_rel=gap_rel, t_start=t_start,
                             why="the placement search found no better plan in its time")
        if fallback is not None and sol.report.status == "time_limit" and sol.cost > 0:
            # the bound of committed instances charged as if always used (optimizer.planning.exact) may be tighter, and
            # the shared enumeration's bound tighter still
            from optimizer.planning.exact import shared_lower_bound

            # the bound only narrows the reported gap: a tenth of the limit past it at most, else the gap stands
            lb = shared_lower_bound(problem, allowed=allowed, deadline=t_end + 0.1 * float(time_limit_s))
            if fallback.report.bound is not None:
                lb = max(lb or 0.0, float(fallback.report.bound))
            if lb is not None and lb > (sol.report.bound or 0.0):
                gap = max(0.0, (sol.cost - lb) / sol.cost)
                sol.report = dataclasses.replace(sol.report, bound=lb, gap=gap,
                                                 status="optimal" if gap <= gap_rel + 1e-9 else "time_limit")
        return sol
    m, V = build_fleet_model(problem, allowed=allowed)
    sol = read_solution(problem, V, solve_fleet(m, solver=solver, time_limit_s=max(left(), 0.5), gap_rel=gap_rel))
    if fallback is not None and (sol.report.status not in ("optimal", "time_limit") or
                                   fallback.cost < sol.cost - 1e-9):
        # the enumeration's plan (shared or apart) beats what the MILP found in its time: it, with the better bound;
        # not proven, the solver is named (a fresh user read "exact enumeration (no MILP) time_limit, 0.019 s" after
        # 17.5 s of MILP)
        return held_plan(fallback, sol, gap_rel=gap_rel, t_start=t_start,
                         why="the MILP found no better plan in its time", solver=solver)
    return sol


def held_plan(held: FleetSolution, other: FleetSolution | None, *, gap_rel: float, t_start: float, why: str,
              solver: str | None = None) -> FleetSolution:
    """The plan already held when a solve did no better (an enumeration's plan, the plan within the limits, the plans
    apart, a construction), returned with what is proven of it: its bound the better of its own and ``other``'s
    (a solve that ended optimal or at its time limit), never above its cost; its gap from that bound (1.0 without
    one, 0 for a plan that costs nothing); ``optimal`` within ``gap_rel``, else ``time_limit`` with ``why`` said
    before its own message and ``solver`` (when given) named as the one that ran. ``t_start``
    (time.perf_counter()) dates the seconds. One rule for the three places a solve falls back on a held plan
    (the model too large to build, the placement search, the joint MILP)."""
    bound = float(held.report.bound or 0.0)
    if other is not None and other.report.status in ("optimal", "time_limit"):
        bound = max(bound, float(other.report.bound or 0.0))
    bound = min(bound, held.cost)
    if held.cost <= 0:
        gap = 0.0
    else:
        gap = max(0.0, (held.cost - bound) / held.cost) if bound > 0 else 1.0
    proven = gap <= gap_rel + 1e-9
    held.report = dataclasses.replace(
        held.report, bound=bound or None, gap=gap, status="optimal" if proven else "time_limit",
        solver=held.report.solver if proven or solver is None else solver, seconds=time.perf_counter() - t_start,
        message=held.report.message if proven else f"{why}; this is {held.report.message}")
    return held


def as_unplaced(problem: FleetProblem) -> FleetProblem:
    """The problem without the one-group placement rule, its candidates pruned across groups (a relaxation of the
    placed problem; exact when each serving workload's candidates are already in one group)."""
    kept = problem.cands if problem.capped else prune_fleet(
        problem.cands, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity, "any",
        problem.spread, problem.single_slot_costs(), problem.payment_matters())[0]
    return problem.replace(cands=kept, placement="any")


def fix_placement(problem: FleetProblem, sol: FleetSolution) -> FleetProblem:
    """The problem with each placed serving workload kept in the placement group the plan ``sol`` uses (its
    candidates, unpruned ones included, filtered), without placement binaries: the explanations price alternatives
    in the plan's own regions."""
    ws = placed(problem)
    if problem.placement == "any" or not ws:
        return problem
    keep = {w.name: set(groups_used(problem, sol, w.name)) for w in ws}

    def filt(cands):
        return {w: [c for c in cs if w not in keep or not keep[w] or placement_group(c.offer, problem.placement) in keep[w]]
                for w, cs in cands.items()}
    out = as_unplaced(problem.replace(cands=filt(problem.cands)))
    out.unpruned = filt(problem.unpruned) if problem.unpruned else None
    return out


def _dominated_groups(problem: FleetProblem) -> set[tuple]:
    """Placement groups no serving workload needs: group g2 is dominated by g1 when every offer of g2 that some
    workload can use (instance type, pricing, payment) is in g1 too, at no higher price (spot: its cheapest zone).
    The same instance type hosts the same replicas anywhere, so a plan placing a workload in g2 maps unit for unit
    onto g1 at no more cost (training jobs, not placed, keep every group). Of identical groups the first is kept.
    Returns the dominated groups."""
    price: dict[tuple, dict[tuple, float]] = {}
    units: dict[tuple, dict[tuple, set]] = {}  # what each workload's unit of the offer is, in the group
    for w, cs in problem.cands.items():
        for c in cs:
            o = c.offer
            g = placement_group(o, problem.placement)
            k = (str(o["instance_type"]), str(o["pricing"]), str(o.get("payment") or ""))
            d = price.setdefault(g, {})
            d[k] = min(d.get(k, math.inf), float(o["usd_per_hour"]))
            units.setdefault(g, {}).setdefault(k, set()).add(
                (w, c.instances_per_unit, c.replicas_per_unit, round(c.throughput_per_unit, 9)))
    groups = sorted(price, key=lambda g: (sum(price[g].values()), g))
    out: set[tuple] = set()
    for i, g2 in enumerate(groups):
        for g1 in groups[:i]:
            if g1 in out:
                continue
            p1, p2 = price[g1], price[g2]
            # the same offer in g1, no dearer, and hosting every workload alike (an instance type sized otherwise in
            # another region — other memory or links in its rows — is not the same unit: a property test found a
            # plan called optimal at $10,862.40 where $10,618.00 was feasible)
            if all(k in p1 and p1[k] <= v * (1 + 1e-12) and units[g1][k] == units[g2][k] for k, v in p2.items()):
                out.add(g2)
                break
    return out


def groups_used(problem: FleetProblem, sol: FleetSolution, w: str, placement: str | None = None) -> dict[tuple, float]:
    """Placement group (of ``placement``, default the problem's) -> what serving workload w spends or uses in it
    (committed units weigh their offer's price)."""
    idx = cand_index(problem)
    placement = placement or problem.placement
    out: dict[tuple, float] = {}
    for store in (sol.A, sol.X):
        for (wn, ok, bi), x in store.items():
            if wn == w and x > 1e-9:
                c = idx[(wn, ok)]
                g = placement_group(c.offer, placement)
                out[g] = out.get(g, 0.0) + c.usd_per_unit_hour * problem.blocks[bi].hours * x
    return out


#: Share of the placement search's time its bounds without an LP may take (GroupMinima, SpreadMinima frontiers).
BOUND_TIME_SHARE = 0.25


def _solve_placed(problem: FleetProblem, *, solver, time_limit_s, gap_rel, allowed,
                  start: FleetSolution | None = None) -> FleetSolution:
    """Minimum cost with each serving workload in one placement group, by branch and bound on the placement.

    A node allows each placed serving workload a set of groups. An inner node is bounded by its LP relaxation
    without the one-group rule (no placement binaries; candidates pruned across the allowed groups); a *leaf* (every
    workload down to one group) is solved as a MILP — small, since its candidates lie in one group each — and is
    feasible for the placement. An inner node whose bound is not below the incumbent is cut; else the workload with
    the most allowed groups is branched on: one child per group its LP solution uses (the most used first), and one
    child with those groups removed. Nodes are explored best bound first, so the plan is proven optimal within
    ``gap_rel`` — or, at the time limit, reported with its true gap (the smallest open bound). ``start``: a
    feasible plan to begin with (each workload planned apart, ``optimizer.planning.exact``): nodes whose bound is not
    below it are cut from the first, and it is the plan if nothing beats it.
    """
    import heapq

    t0 = time.perf_counter()
    t_end = t0 + time_limit_s
    base = problem.cands
    serving = placed(problem)
    all_groups = {w.name: frozenset(placement_group(c.offer, problem.placement) for c in base.get(w.name, []))
                  for w in serving}
    if problem.spread != "zones" and not problem.capped:
        drop = _dominated_groups(problem)
        all_groups = {w: (gs - drop) or gs for w, gs in all_groups.items()}
    costs = problem.single_slot_costs()

    def node_problem(allow: dict[str, frozenset]) -> FleetProblem:
        cands = {w: ([c for c in cs if placement_group(c.offer, problem.placement) in allow[w]] if w in allow else cs)
                 for w, cs in base.items()}
        kept, _ = (prune_fleet(cands, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity,
                               "any", problem.spread, costs, problem.payment_matters())
                   if not problem.capped else (cands, 0))
        sub = problem.replace(cands=kept, placement="any")
        return drop_lone_training_commitments(sub) if hourly_allowed else sub

    hourly_allowed = allowed is None or "on_demand" in allowed
    serving_only = [w for w in problem.workloads if not w.training and not w.divisible]
    minima = None
    # the bounds that need no LP get a quarter of the time: past it they bound nothing more (0) and the LPs do. When
    # not even the root's LP could be started in the time, they are all the search has: the whole time (200 services
    # of hourly demand: the spread bound took 16 s, past its quarter of 60 s, and the plan was left with a 15 % gap
    # after 12 s where the bound proves it)
    bound_end = t0 + BOUND_TIME_SHARE * time_limit_s
    if t0 + model_seconds(len(problem.blocks), base) >= t_end:
        bound_end = t_end
    if serving_only and (len(serving_only) < len(problem.workloads) or problem.budgets.any()):
        from optimizer.planning.exact import GroupMinima

        # the serving workloads alone, without training jobs or budgets, over the same candidates
        minima = GroupMinima(problem.replace(workloads=serving_only, cands={w.name: base.get(w.name, [])
                                                                            for w in serving_only},
                                             work_flops={}, budgets=Budgets(), budget_usd=None), allowed,
                             deadline=bound_end)
        minima = minima if minima.ok else None
    # every workload with each sized purchase charged per hour of use (optimizer.planning.bounds): valid with
    # sharing, savings plans, capacity blocks and training jobs
    from optimizer.planning.bounds import SpreadMinima

    spread = SpreadMinima(problem, allowed, deadline=bound_end)
    spread = spread if spread.ok else None
    # the training jobs' least cost beside the serving workloads' exact minima (optimizer.planning.bounds.JobBounds)
    jobs = None
    serving_offers: dict[tuple, frozenset] = {}
    if minima is not None and any(w.training for w in problem.workloads):
        from optimizer.planning.bounds import JobBounds

        jobs = JobBounds(problem, allowed)

    def jobs_bound(allow: dict[str, frozenset]) -> float:
        """The jobs' least cost when serving pays for the commitments its candidates in the node's groups use."""
        if jobs is None:
            return 0.0
        key = tuple(sorted((w, tuple(sorted(g))) for w, g in allow.items()))
        if key not in serving_offers:
            serving_offers[key] = frozenset(
                c.okey for w in serving_only for c in base.get(w.name, []) if c.committed and
                (w.name not in allow or placement_group(c.offer, problem.placement) in allow[w.name]))
        return jobs.total(serving_offers[key])

    def spread_bound(allow: dict[str, frozenset]) -> float:
        """A lower bound on every plan of the node with each sized purchase charged per hour of use
        (``optimizer.planning.bounds.SpreadMinima``): the serving workloads in the best group the node allows, plus
        the training jobs; 0 without it."""
        if spread is None or time.perf_counter() > t_end:
            return 0.0
        total = spread.training()
        for w in problem.workloads:
            if w.training or w.divisible:
                continue
            r = spread.best(w, allow.get(w.name))
            if r is None:
                if spread.needs_nothing(w):
                    continue
                return math.inf
            total += float(r[0])
        return total

    def node_bound(allow: dict[str, frozenset]) -> float:
        """The best of the node's bounds that need no LP: the serving workloads' exact minima (plus the training
        jobs' hourly least), and the spread bound."""
        sb = serving_bound(allow)
        return max(sb + jobs_bound(allow) if sb > 0 and math.isfinite(sb) else sb, spread_bound(allow))

    def serving_bound(allow: dict[str, frozenset]) -> float:
        """A lower bound on every plan of the node: the sum over its serving workloads of their exact minimum alone
        (no training job, no budget; ``optimizer.planning.exact.GroupMinima``, by enumeration) in the best group the
        node allows. The serving part of any plan of the node — every commitment it buys and the serving workloads'
        hourly units — is such a plan and costs no more. 0 when the serving workloads alone are not separable
        (they could share a commitment; quotas, spread...) or when they are the whole problem (the node's own
        LP/MILP is then that problem)."""
        if minima is None or time.perf_counter() > t_end:
            return 0.0
        from optimizer.planning.exact import TooBig

        total = 0.0
        try:
            for w in serving_only:
                r = minima.best(w, allow.get(w.name))
                if r is None:
                    if minima.needs_nothing(w):
                        continue
                    return math.inf  # no plan of this workload in the node's groups
                total += float(r[0])
        except TooBig:
            lp_again[0] = True  # the exact minima gave up (caps or their time): the nodes need their LPs again
            return 0.0
        return total

    def left() -> float:
        return max(0.5, t_end - time.perf_counter())

    def relax(sub):
        """(LP bound, what each placed workload spends per group in the LP solution), (None, {}) when the LP is
        infeasible, or (NaN, {}) when it was not solved in its time."""
        m, V = build_fleet_model(sub, allowed=allowed, relax=True)
        rep = solve_fleet(m, solver=solver, time_limit_s=left(), gap_rel=gap_rel)
        if rep.status != "optimal":
            return (None if rep.status == "infeasible" else math.nan), {}
        sol = FleetSolution(report=rep)
        for store, src in ((sol.A, V.A), (sol.X, V.X)):
            for k, v in src.items():
                x = var_value(v)
                if x > 1e-9:
                    store[k] = x
        return float(rep.objective or 0.0), {w.name: groups_used(sub, sol, w.name, problem.placement) for w in serving}

    def leaf(sub):
        m, V = build_fleet_model(sub, allowed=allowed)
        # only a plan cheaper than the incumbent by more than the gap asked for is of use: the solver stops once its
        # bound reaches that (a leaf that cannot beat it is pruned as a node whose bound does, below)
        cut = None if best is None else best.cost * (1 - gap_rel) - 1e-6
        rep = solve_fleet(m, solver=solver, time_limit_s=left(), gap_rel=gap_rel, cutoff=cut)
        sol = read_solution(sub, V, rep)
        if rep.status == "time_limit":
            return sol, (rep.bound if rep.bound is not None else 0.0)
        return sol, (rep.bound if rep.bound is not None else sol.cost)

    nblocks = len(problem.blocks)

    def node_seconds(allow: dict[str, frozenset]) -> float:
        """The least a node's solve can take (:func:`model_seconds` of its candidates before pruning)."""
        return model_seconds(nblocks, {w: [c for c in cs if w not in allow or
                                           placement_group(c.offer, problem.placement) in allow[w]]
                                       for w, cs in base.items()})

    best: FleetSolution | None = start
    open_bounds: list[float] = []
    counter = nodes = lps = milps = 0
    heap: list = [(0.0, 0, {w.name: all_groups[w.name] for w in serving})]
    timed_out = False
    # branch without LPs when the serving workloads' exact minima bound the nodes (separable serving workloads)
    no_lp = minima is not None
    lp_again = [False]
    while heap:
        bound, _, allow = heapq.heappop(heap)
        progress.update("placement search", best=None if best is None else best.cost,
                        bound=min(open_bounds + [bound] + ([best.cost] if best is not None else [])),
                        detail=f"{plural(nodes, 'node')}, {len(heap) + 1} open")
        if best is not None and bound >= best.cost * (1 - gap_rel) - 1e-6:
            continue
        if time.perf_counter() >= t_end:
            # out of time: this node and every open one keep their bounds (the gap below is taken over them). Without
            # this stop, branching without LPs went on past the limit with bounds of 0 once theirs had run out of
            # time (an all-reserved strategy of 5 workloads: 1,082 nodes in 98 s against an 18.5 s limit)
            open_bounds.append(bound)
            timed_out = True
            break
        sb = node_bound(allow)
        if best is not None and sb >= best.cost * (1 - gap_rel) - 1e-6:
            continue  # its workloads' bounds alone already cost the incumbent: nothing below it is cheaper
        bound = max(bound, sb)
        leaf_node = all(len(g) == 1 for g in allow.values())
        sub = None
        if lp_again[0] and minima is not None:
            no_lp = False
        if (leaf_node or not no_lp) and time.perf_counter() + node_seconds(allow) >= t_end:
            # not started when it could not end in time: its bound stays open (the plan keeps to its time limit).
            # A leaf is counted on its candidates after pruning (a fraction of the time), an LP node before it (its
            # LP's own time is not in the estimate: the 30 x 168 root LP took 30 s where the estimate said 20)
            sub = node_problem(allow) if leaf_node and time.perf_counter() < t_end else None
            if sub is None or time.perf_counter() + model_seconds(nblocks, sub.cands) >= t_end:
                open_bounds.append(bound)
                timed_out = True
                continue
        nodes += 1
        if not leaf_node and no_lp:
            # the bounds that need no LP bound every child: branch on the workload with the most groups, one child
            # per group, each bounded by its own bounds (no LP; the children are taken best bound first)
            wname = max((w for w in allow if len(allow[w]) > 1), key=lambda w: (len(allow[w]), w))
            for g in sorted(allow[wname]):
                child = {**allow, wname: frozenset({g})}
                cb = max(bound, node_bound(child))
                if best is not None and cb >= best.cost * (1 - gap_rel) - 1e-6:
                    continue
                counter += 1
                heapq.heappush(heap, (cb, counter, child))
            continue
        sub = sub if sub is not None else node_problem(allow)
        if leaf_node:
            milps += 1
            sol, b2 = leaf(sub)
            if sol.report.status == "infeasible":
                continue  # no plan in this placement
            if sol.report.status not in ("optimal", "time_limit"):
                # no plan found in its time (not_solved): its bound stays open. It was dropped as if infeasible, and
                # a dearer leaf was then called optimal (CBC, 240 blocks, 8 s: $46,643 "optimal" for a $31,799
                # optimum; tests/test_exact.py::test_a_long_profile_is_exact_where_the_milp_is_slow)
                open_bounds.append(bound)
                timed_out = True
                continue
            if sol.report.status == "time_limit":
                open_bounds.append(max(bound, b2))
                timed_out = True
            if best is None or sol.cost < best.cost - 1e-9:
                best = sol
            continue
        lps += 1
        lb, used = relax(sub)
        if lb is None:
            continue  # the relaxation is infeasible: so is every plan below
        if math.isnan(lb):  # not solved in its time: the node's bound stays open (never dropped as infeasible)
            open_bounds.append(bound)
            timed_out = True
            continue
        if nodes == 1 and not no_lp and spread is not None and sb >= lb - 1e-6 * max(1.0, abs(lb)):
            # the root's spread bound is as strong as its LP: the LPs would not bound the children better, so
            # they are bounded without one from here on (each LP of the example plans took 0.3-1.5 s)
            no_lp = True
        lb = max(lb, bound)
        if best is not None and lb >= best.cost * (1 - gap_rel) - 1e-6:
            continue
        wname = max((w for w in allow if len(allow[w]) > 1), key=lambda w: (len(used.get(w) or ()) > 1, len(allow[w])))
        g_used = {g: v for g, v in (used.get(wname) or {}).items() if g in allow[wname]}
        children = [frozenset({g}) for g in sorted(g_used, key=lambda g: -g_used[g])]
        rest = allow[wname] - frozenset(g_used)
        if not children:  # the LP gives the workload nothing to serve: any single group will do; split in two
            ordered = sorted(allow[wname])
            children, rest = [frozenset(ordered[: len(ordered) // 2])], frozenset(ordered[len(ordered) // 2:])
        if rest:
            children.append(rest)
        for ch in children:
            counter += 1
            heapq.heappush(heap, (lb, counter, {**allow, wname: ch}))
    solves = f"{lps} LPs, {milps} MILPs"
    nodes_note = nodes
    if best is None:
        return FleetSolution(report=SolveReport("not_solved" if timed_out else "infeasible", solver=solver,
                                                seconds=time.perf_counter() - t0,
                                                message="no plan meets every constraint with each serving workload "
                                                        "in one placement group" if not timed_out else
                                                "time limit" if nodes else
                                                "no node of the placement search could be built and solved in the "
                                                f"{time_limit_s:.0f} s left (its models were estimated too large), "
                                                "so none was started"))
    lb = min(open_bounds + [h[0] for h in heap] + [best.cost])
    gap = max(0.0, (best.cost - lb) / best.cost) if best.cost > 0 else 0.0
    status = "optimal" if gap <= gap_rel + 1e-9 and not timed_out else "time_limit"
    # a copy: the start the caller passed keeps its own report (and bound)
    return dataclasses.replace(best, report=dataclasses.replace(
        best.report, solver=solver, status=status, gap=gap if status == "time_limit" else 0.0, bound=lb,
        seconds=time.perf_counter() - t0, message=f"placement branch and bound: {nodes_note} node{'' if str(nodes_note) == '1' else 's'}, {solves}"))


def solve_roi(problem: FleetProblem, *, solver="auto", time_limit_s=60.0, gap_rel=0.001,
              max_iterations: int = 30, tol: float = 1e-6) -> tuple[FleetSolution, list[dict[str, float]]]:
    """Maximum ROI = value / cost - 1, exactly, by Dinkelbach iterations over MILPs.

    lambda_0 = 0; at each step solve max value - lambda x cost (a MILP), then lambda <- value / cost of that
    plan; stop when the optimum of the step is within ``tol`` x cost of 0 (then lambda is the best value/cost
    ratio; Dinkelbach 1967, "On nonlinear fractional programming"). Returns (the plan, the iterations:
    lambda, value, cost, F(lambda)). A plan with zero cost has no ROI: returned as is (nothing is worth buying).
    """
    lam = 0.0
    its: list[dict[str, float]] = []
    best: FleetSolution | None = None
    first: FleetSolution | None = None
    deadline = time.perf_counter() + time_limit_s
    for _ in range(max_iterations):
        m, V = build_fleet_model(problem, lam=lam)
        left = max(1.0, deadline - time.perf_counter())
        rep = solve_fleet(m, solver=solver, time_limit_s=left, gap_rel=gap_rel)
        sol = read_solution(problem, V, rep)
        if rep.status not in ("optimal", "time_limit"):
            return (best or sol), its
        first = first or sol
        f = sol.value - lam * sol.cost
        its.append({"lambda": lam, "value": round(sol.value, 6), "cost": round(sol.cost, 6), "F": round(f, 6)})
        # keep the plan with the best value/cost so far: at the optimum lambda the empty plan also scores F = 0
        if sol.cost > 1e-9 and (best is None or sol.value / sol.cost > best.value / best.cost):
            best = sol
        if sol.cost <= 1e-9 or abs(f) <= tol * max(sol.cost, 1.0) or time.perf_counter() >= deadline:
            break
        lam = sol.value / sol.cost
    if best is not None and best.value < best.cost and all(w.min_replicas <= 0 for w in problem.workloads):
        # every plan loses money (ROI < 0) and nothing is mandatory: buying nothing is the better answer
        return FleetSolution(report=best.report), its
    return (best or first), its  # type: ignore[return-value]


def keeps_limits(problem: FleetProblem, sol: FleetSolution) -> str | None:
    """The first shared limit of ``problem`` the plan ``sol`` breaks (a short phrase), or None when it keeps them
    all: cash in every month <= the monthly budget (the MILP bounds the first month of each period, which this
    implies), total <= budget_total, upfront <= max_upfront, commitment <= max_commitment (USD), and at most
    ``max_instances`` instances of one instance type in one region in every block (hourly units and the
    commitments covering the block)."""
    bg = problem.budgets
    mo = money(problem, sol)
    for name, limit, key in (("budget", bg.monthly, "max_month_usd"), ("budget_total", bg.total, "total_usd"),
                             ("max_upfront", bg.upfront, "upfront_usd"),
                             ("max_commitment", bg.commitment, "commitment_usd")):
        if limit is not None and mo[key] > limit:
            return f"{name} {limit:,.2f} USD (the plan: {mo[key]:,.2f})"
    if problem.max_instances is not None:
        cidx = {(w, c.okey): c for w, cs in problem.cands.items() for c in cs}
        training = problem.training_names()
        for bi in range(len(problem.blocks)):
            p = problem.period_of(problem.blocks[bi])
            count: dict[tuple, float] = {}
            for store in (sol.X, sol.A):
                for (w, ok, b), x in store.items():
                    c = cidx[(w, ok)]
                    if b == bi and not (store is sol.A and c.committed):  # committed units: counted as bought
                        g = spot_group(c.offer)
                        units = problem.running_units(training, w, x)  # a job's: whole instances
                        count[g] = count.get(g, 0.0) + c.instances_per_unit * units
            for k, n in sol.N.items():
                s = problem.slots[k]
                if s.start_month <= p.start_month < s.end_month:
                    g = spot_group(s.offer)
                    count[g] = count.get(g, 0.0) + n
            over = [g for g, v in count.items() if v > problem.max_instances + 1e-9]
            if over:
                return f"max_instances {problem.max_instances} ({over[0]}: {count[over[0]]:g} in block {bi})"
    return None


def solve_within_limits(problem: FleetProblem, *, solver="auto", allowed: set[str] | None = None,
                        deadline: float | None = None, gap_rel: float = 0.001) -> FleetSolution | None:
    """The plan of ``problem`` by construction when its shared limits (budgets, ``max_instances``) do not bind.

    The problem without them is planned by :func:`solve_cost` itself (independent parts solved apart, the exact
    enumerations, the placement search, each workload's plan apart) until ``deadline`` (time.perf_counter()
    seconds; None: 60 s). When that plan keeps every limit (:func:`keeps_limits`) it is the answer: a relaxation's
    optimum that is feasible is optimal, and a plan found at the time limit keeps its status and gap (its bound
    bounds the limited problem too). None when a limit binds or no plan was found (the MILP plans with the limits)
    or the problem has no shared limit. With budgets, the problem without them is planned on the candidates its own
    pruning rules keep (``problem.free_cands``: every payment option compared, terms by their cost over the
    horizon; problem_build._free_candidates): its optimum and bound are those of the problem without limits, a
    lower bound of the limited one.
    """
    if not (problem.budgets.any() or problem.max_instances is not None):
        return None
    t0 = time.perf_counter()
    free = problem.replace(budgets=Budgets(), budget_usd=None, max_instances=None, free_cands=None,
                           **({"cands": problem.free_cands} if problem.free_cands is not None else {}))
    left = 60.0 if deadline is None else max(0.5, deadline - t0)
    sol = solve_cost(free, solver=solver, time_limit_s=left, gap_rel=gap_rel, allowed=allowed)
    if sol.report.status not in ("optimal", "time_limit") or keeps_limits(problem, sol) is not None:
        return None
    sol.report = dataclasses.replace(sol.report, seconds=time.perf_counter() - t0,
                                     message=f"{sol.report.message or sol.report.solver} (budgets and quota do not bind)")
    return sol


def construct_plan(problem: FleetProblem, *, allowed: set[str] | None = None) -> FleetSolution | None:
    """A plan by construction, no search (issue 33: a solve stopped at its limit must not leave a user without a
    plan that plainly exists): each serving workload on its cheapest on-demand candidate alone, in every block it
    runs in as many units as its demand, its replica floor (``min_replicas``) and its N+1 rule (demand x
    redundancy carried after losing the candidate's failure domain, :func:`failure_loss`) need. Kept only when
    :func:`verify` and :func:`keeps_limits` pass it. None for training jobs, ROI, zone spread, or when on-demand
    is not allowed. The cost is :func:`fleet_cost`; its report: status ``time_limit``, no bound (gap 1.0)."""
    if problem.objective != "cost" or problem.spread or any(w.training for w in problem.workloads) or \
            (allowed is not None and "on_demand" not in allowed):
        return None
    import numpy as np

    X: dict[tuple[str, str, int], float] = {}
    for w in problem.workloads:
        red = w.redundancy if w.redundancy > 0 and not w.divisible else 0.0
        cs = [c for c in problem.cands.get(w.name, ()) if c.offer.get("pricing") == "on_demand"
              and c.throughput_per_unit > 0]
        act = [(bi, float(b.demand.get(w.name, 0.0)), b.hours * problem.months(b))
               for bi, b in enumerate(problem.blocks) if problem.active(w, b)]
        if not cs:
            return None
        if not act:
            continue
        # candidates x blocks at once (200 services x ~4,000 candidates: a Python loop took seconds)
        thr = np.array([float(c.throughput_per_unit) for c in cs])[:, None]
        loss = np.array([failure_loss(c) if red > 0 else 0.0 for c in cs])[:, None]
        floor = np.array([math.ceil(w.min_replicas / max(1, c.replicas_per_unit)) if w.min_replicas > 0 else 0
                          for c in cs], dtype=float)
        most = np.array([np.inf if c.max_units is None else float(c.max_units) for c in cs])
        d = np.array([a[1] for a in act])[None, :]
        hours = np.array([a[2] for a in act])
        n = np.maximum(floor[:, None], np.ceil(d / thr - 1e-9))
        if red > 0:
            n = np.maximum(n, np.where(d > 0, np.ceil((red * d + loss) / thr - 1e-9), 0.0))
        cost = (n * hours[None, :]).sum(axis=1) * np.array([c.usd_per_unit_hour for c in cs])
        cost[(n > most[:, None]).any(axis=1)] = np.inf
        j = int(np.argmin(cost))
        if not np.isfinite(cost[j]):
            return None
        X.update({(w.name, cs[j].okey, bi): float(n[j, k]) for k, (bi, _, _) in enumerate(act) if n[j, k] > 0})
    sol = FleetSolution(report=SolveReport(status="time_limit", solver="construction", gap=1.0, bound=None,
                                           message="each workload on its cheapest on-demand offer alone "
                                                   "(a plan by construction)"), X=X)
    sol.cost = fleet_cost(problem, sol)
    if verify(problem, sol) is not None or keeps_limits(problem, sol) is not None:
        return None
    return sol


def start_within_limits(problem: FleetProblem, *, allowed: set[str] | None = None,
                        deadline: float | None = None) -> FleetSolution | None:
    """A plan of ``problem`` that keeps its shared limits, for the MILP's start and fallback: each serving workload on
    its cheapest candidates alone (``optimizer.planning.exact.plan_apart``) of the problem without the limits, when
    that applies (serving workloads only, no zone spread...) and keeps every limit (:func:`keeps_limits`); else
    None. ``deadline``: time.perf_counter() seconds."""
    from optimizer.planning.exact import plan_apart, separable

    free = problem.replace(budgets=Budgets(), budget_usd=None, max_instances=None)
    if separable(free, allowed, apart=True, share_spot=True) is not None or \
            (deadline is not None and time.perf_counter() >= deadline):
        return None
    start = plan_apart(free, allowed=allowed, deadline=deadline)
    return start if start is not None and keeps_limits(problem, start) is None else None


def verify(problem: FleetProblem, sol: FleetSolution) -> str | None:
    """Check the plan meets every serving block, every training job, the redundancy and the sharing rule."""
    idx = cand_index(problem)
    cap: dict[tuple[str, int], float] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            cap[(w, bi)] = cap.get((w, bi), 0.0) + idx[(w, ok)].throughput_per_unit * x
    for w in problem.workloads:
        if w.training:
            if problem.objective == "roi" and not sol.Z.get(w.name):
                continue
            done = sum(cap.get((w.name, bi), 0.0) * 3600.0 * problem.before_deadline(w, b) * problem.months(b)
                       for bi, b in enumerate(problem.blocks))
            if done < problem.work_flops[w.name] * (1 - 1e-6):
                return f"{w.name}: {done:.6g} FLOPs planned for {problem.work_flops[w.name]:.6g} needed"
        elif problem.objective == "cost":
            loss = largest_loss(problem, sol, w.name) if w.redundancy > 0 and not w.divisible else 0.0
            for bi, b in enumerate(problem.blocks):
                if problem.active(w, b) and cap.get((w.name, bi), 0.0) < b.demand.get(w.name, 0.0) * (1 - 1e-9):
                    return f"{w.name}: block {b.label or bi} has {cap.get((w.name, bi), 0.0):.6g} tokens/s for {b.demand.get(w.name):.6g}"
                d = b.demand.get(w.name, 0.0)
                if loss > 0 and problem.active(w, b) and d > 0 and \
                        cap.get((w.name, bi), 0.0) - loss < w.redundancy * d * (1 - 1e-9) - 1e-9:
                    return (f"{w.name}: block {b.label or bi} carries {cap.get((w.name, bi), 0.0) - loss:.6g} tokens/s "
                            f"after losing {loss:.6g} (one instance), for {w.redundancy:g} x {d:.6g} (N+1)")
        elif w.redundancy > 0 and not w.divisible:  # ROI: the demand served is carried after the loss
            loss = largest_loss(problem, sol, w.name)
            for bi, b in enumerate(problem.blocks):
                served = float(sol.S.get((w.name, bi), 0.0))
                if loss > 0 and problem.active(w, b) and served > 0 and \
                        cap.get((w.name, bi), 0.0) - loss < w.redundancy * served * (1 - 1e-9) - 1e-6:
                    return (f"{w.name}: block {b.label or bi} carries {cap.get((w.name, bi), 0.0) - loss:.6g} tokens/s "
                            f"after losing {loss:.6g} (one instance), for {w.redundancy:g} x {served:.6g} served (N+1)")
    used: dict[tuple[str, int], float] = {}
    for (w, ok, bi), a in sol.A.items():
        used[(ok, bi)] = used.get((ok, bi), 0.0) + idx[(w, ok)].instances_per_unit * a
    kinds = {c.okey: purchase_kind(c.offer) for cs in problem.cands.values() for c in cs}
    spend: dict[tuple[str, int], float] = {}
    block_use: dict[tuple[str, str], float] = {}
    serve_use: dict[tuple[str, int], float] = {}
    for (w, ok, bi), a in sol.A.items():
        c = idx[(w, ok)]
        b = problem.blocks[bi]
        if kinds.get(ok) == "savings_plan":
            key = (savings_plan_scope(c.offer), bi)
            spend[key] = spend.get(key, 0.0) + c.usd_per_unit_hour * a
        elif kinds.get(ok) == CAPACITY_BLOCK and problem.workloads_by_name()[w].training:
            block_use[(w, ok)] = block_use.get((w, ok), 0.0) + a * problem.before_deadline(
                problem.workloads_by_name()[w], b) * problem.months(b)
        elif kinds.get(ok) == CAPACITY_BLOCK:
            key = (ok, bi)
            serve_use[key] = serve_use.get(key, 0.0) + c.instances_per_unit * a
    for (ok, bi), u in used.items():
        p = problem.period_of(problem.blocks[bi])
        kind = kinds.get(ok)
        if kind == "savings_plan":
            continue
        if kind == CAPACITY_BLOCK:
            have = sum(v for kk, v in sol.CB.items() if kk[0] == "window" and kk[1] == ok
                       and kk[2] <= p.start_month and p.end_month <= kk[3])
            if serve_use.get((ok, bi), 0.0) > have + 1e-6:
                return f"capacity block {ok} over-used in block {bi}"
            continue
        have = sum(sol.N.get(k, 0) for k in problem.covering(ok, p))
        if u > have + 1e-6:
            return f"committed offer {ok} over-used in block {bi}"
    for (scope, bi), u in spend.items():
        have = sum(sol.SP.get(k, 0.0) for k in problem.covering_plans(scope, problem.period_of(problem.blocks[bi])))
        if u > have * (1 + 1e-6) + 1e-6:
            return f"savings plan {scope} over-spent in block {bi}: {u:.6g} USD/h for {have:.6g}"
    wl = problem.workloads_by_name()
    for (w, ok), used_hours in block_use.items():
        days, units = sol.CB.get(("job", w, ok), 0), sol.CB.get(("job_units", w, ok), 0)
        margin = max(0.0, float(wl[w].schedule_margin))
        hours = used_hours * (1.0 + margin)  # the schedule margin is bought too (issue 26)
        if hours > 24.0 * days * (1 + 1e-6) + 1e-6:
            return f"capacity block {ok} of {w} used {hours:.6g} unit-hours (with its margin) for {days} unit-days"
        at_once = max(a for (w2, o2, _), a in sol.A.items() if w2 == w and o2 == ok)
        c = idx[(w, ok)]
        k = c.instances_per_unit
        window = problem.job_window_hours(wl[w])
        f_days, rem = int(window // 24.0), window - 24.0 * int(window // 24.0)
        if used_hours > window * units * (1 + 1e-6) + 1e-6:
            return f"capacity blocks {ok} of {w}: {used_hours:.6g} unit-hours do not fit {units} units in {window:g} h"
        if margin == 0 and used_hours > (rem * days + (24.0 - rem) * f_days * units) * (1 + 1e-6) + 1e-6 \
                and rem > 1e-9:
            return f"capacity blocks {ok} of {w}: {hours:.6g} unit-hours do not fit {days} whole days in {window:g} h"
        if units > job_units(c) + 1e-9:
            return f"capacity blocks {ok} of {w}: {units} units bought, more than the job runs at once ({job_units(c):g})"
        if at_once > units + 1e-6 or days < units or days > units * problem.job_block_days(wl[w], margin) \
                or units * k > CAPACITY_BLOCK_MAX_INSTANCES + 1e-9:
            return (f"capacity blocks {ok} of {w}: {at_once:.6g} units at once, {units} bought for {days} unit-days "
                    f"(each unit a day at least, within {problem.job_block_days(wl[w], margin)} days, at most "
                    f"{CAPACITY_BLOCK_MAX_INSTANCES} instances)")
    return None


def largest_loss(problem: FleetProblem, sol: FleetSolution, name: str) -> float:
    """The tokens/s serving workload ``name`` loses when its largest failure domain fails: the greatest
    ``failure_loss`` of the candidates the plan runs it on (any block)."""
    idx = cand_index(problem)
    return max((failure_loss(idx[(w, ok)]) for store in (sol.A, sol.X) for (w, ok, _), x in store.items()
                if w == name and x > 1e-9), default=0.0)


def trim_allocations(problem: FleetProblem, sol: FleetSolution) -> FleetSolution:
    """Committed capacity is paid whatever the use, so the solver may assign spare committed units to a workload
    that does not need them. For reporting (utilization), remove them: serving units on committed offers are taken
    away one by one while the block still meets its demand and redundancy; training work on committed offers is
    scaled down to what the job needs. Costs do not change."""
    import copy

    idx = cand_index(problem)
    A = dict(sol.A)
    X = dict(sol.X)
    for w in problem.workloads:
        if w.training:
            need = problem.work_flops[w.name]
            work = lambda store: sum(idx[(w.name, ok)].throughput_per_unit * 3600.0 *  # noqa: E731
                                     problem.before_deadline(w, problem.blocks[bi]) *
                                     problem.months(problem.blocks[bi]) * v
                                     for (wn, ok, bi), v in store.items() if wn == w.name)
            a_work, x_work = work(A), work(X)
            if a_work > 0 and a_work + x_work > need * (1 + 1e-9):
                f = max(0.0, need - x_work) / a_work * (1 + 1e-12)
                for k in [k for k in A if k[0] == w.name]:
                    A[k] *= f
            continue
        w_loss = largest_loss(problem, sol, w.name) if w.redundancy > 0 else 0.0  # once, not per block
        for bi, b in enumerate(problem.blocks):
            d = b.demand.get(w.name, 0.0)
            keys = sorted((k for k in A if k[0] == w.name and k[2] == bi),
                          key=lambda k: -idx[(w.name, k[1])].throughput_per_unit)

            def state():
                cap = reps = nonspot = inst = inst_ns = 0.0
                for store in (A, X):
                    for (wn, ok, b2), v in store.items():
                        if wn == w.name and b2 == bi:
                            c = idx[(wn, ok)]
                            cap += c.throughput_per_unit * v
                            reps += c.replicas_per_unit * v
                            inst += c.instances_per_unit * v
                            if c.offer["pricing"] != "spot":
                                nonspot += c.replicas_per_unit * v
                                inst_ns += c.instances_per_unit * v
                return cap, reps, nonspot, inst, inst_ns
            loss = w_loss if d > 0 else 0.0
            for k in keys:
                while A.get(k, 0) >= 1:
                    c = idx[(w.name, k[1])]
                    cap, reps, nonspot, inst, inst_ns = state()
                    m = w.min_replicas
                    if (cap - c.throughput_per_unit >= d * (1 - 1e-12)
                            and cap - c.throughput_per_unit - loss >= w.redundancy * d * (1 - 1e-12) - 1e-12
                            and reps - c.replicas_per_unit >= m
                            and inst - c.instances_per_unit >= (0 if w.divisible else m)
                            and (w.spot_only_ok or (nonspot - c.replicas_per_unit >= m
                                                    and inst_ns - c.instances_per_unit >= (0 if w.divisible else m)))
                            and problem.spread != "zones"):
                        A[k] -= 1
                    else:
                        break
    out = copy.copy(sol)
    out.A = {k: v for k, v in A.items() if v > 1e-9}
    return out
