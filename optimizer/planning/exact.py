"""Exact minimum-cost plans by enumeration, without a MILP, for serving workloads that share nothing.

Why: the planning MILP (``optimizer.planning.milp``) couples every demand block through the committed base, and its LP
relaxation is weak there (fractional reservations against fractional instances). Measured on the shipped snapshot
(benchmarks/bench_fleet.py, ``--scenarios 1x720``): one Llama-2-13B chat service with 2 replicas always up over
720 distinct hourly demands in one AWS region — HiGHS 1.16 stopped at 60 s with a 9.4 % gap although its plan was
already optimal; this enumeration proves it in well under a second.

When it applies (:func:`separable`; otherwise ``None`` and the MILP plans): minimum cost; every workload serving
(not divisible); one period of the horizon or several (a horizon cut at term renewals and at the months workloads
start or stop: see "Several periods" below); no zone spread; no committed offer that two workloads could both
use, and no capped spot group (instance type and region) two candidates share; budgets and quotas only through
``optimizer.planning.solve.solve_within_limits`` (the plan without them, when it keeps them). Then the plan splits
into one problem per workload and placement group (the placement rule puts a workload in one group; without it all
its offers are one group), and each is

    min  sum_c cost_c n_c + sum_b H_b g(d_b - cap(n), m - reps(n), m - inst(n))

over the committed units n (c: committed candidates, bought for the whole period, cost_c = instances x the
cheapest covering slot's cost over the horizon), where H_b = block hours x months of the period, and
g(r, a, i) = the cheapest hourly (on-demand) units giving capacity >= r, >= a more replicas and >= i more
instances (m = min_replicas; committed units count towards both floors, as in the MILP's ``minrep``/``mininst``
rows; spot units count only when ``spot_only_ok``, else the non-spot floors, which imply the others, are the ones
to meet; a spot unit is used at most ``spot_capacity // instances`` times, the MILP's ``spot`` rows). A committed
unit is paid whatever its use, so using all of them in every block is optimal.

Several periods (:func:`_plan_group_periods`): a term covers the periods it spans, so a combination of committed
slots gives one capacity per period, and once it is fixed every block again stands alone. Terms that span several
periods (3 years on a 36-month horizon cut at the 1-year renewals) are enumerated as a Pareto frontier of capacity
vectors (:func:`_vector_frontier`, at most :data:`MAX_VECTOR_STATES` states); for each, every period is planned
alone with the terms that cover only it, as in one period, once per distinct capacity the long terms leave it.
With no committed candidate every block stands alone, and a workload's blocks outside its months cost nothing.

Both the committed units and g are enumerated exactly as Pareto frontiers: unit types are added one at a time and
a partial combination is dropped when another gives at least its capacity (capped at the peak demand), replicas
and instances (capped at m) for no more money — any completion of the dropped one is matched by the same
completion of the other, so nothing optimal is lost. A frontier larger than :data:`MAX_STATES`, or one that
generates more than :data:`MAX_GENERATED` partial combinations, hands the problem back to the MILP.

Where workloads could share, :func:`solve_separable` with ``apart=True`` plans each with commitments of its own (a
feasible plan that starts the MILP's placement search) and :func:`shared_lower_bound` bounds the shared optimum.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from operator import itemgetter
from typing import Any

from optimizer.planning.problem import (FleetProblem, SpotCaps, failure_loss, placement_part, spot_cap, spot_group,
                                       workload_group)
from optimizer.planning.solution import FleetSolution
from optimizer.planning.solver import SolveReport

#: Most Pareto-optimal partial combinations kept per frontier before the problem is handed back to the MILP.
MAX_STATES = 20_000
#: Demand met to this relative tolerance, the one ``optimizer.planning.solve.verify`` accepts.
TOL = 1e-9
#: Most partial combinations a frontier may generate (before pruning) before the problem is handed back to the MILP:
#: a big demand over small units extends every state one unit at a time (a breaker measured 20 s for a peak of
#: 20,000 tokens/s over units of 37-81 tokens/s, which the MILP solves in 0.3 s).
MAX_GENERATED = 150_000


class TooBig(Exception):
    """A frontier outgrew MAX_STATES or MAX_GENERATED, or its caller's deadline passed: the MILP plans the problem."""


#: The deadline (time.perf_counter()) of the frontiers built in this thread, None for none: a frontier past it gives
#: up like one past its caps (a bound of the placement search must not eat the plan's time: a 70B service and its
#: fine-tune spent 60 s in one vector frontier, found by a breaker session in issue 25).
_LIMIT = __import__("threading").local()


def frontier_deadline(deadline: float | None) -> None:
    """Set (or clear, None) the deadline of the frontiers this thread builds next."""
    _LIMIT.t = deadline


def frontier_limit() -> float | None:
    """The deadline :func:`frontier_deadline` set for this thread (None: none), to restore after a nested one."""
    return getattr(_LIMIT, "t", None)


def _past_deadline() -> bool:
    d = getattr(_LIMIT, "t", None)
    return d is not None and time.perf_counter() > d


def separable(problem: FleetProblem, allowed: set[str] | None = None, apart: bool = False,
              share_spot: bool = False) -> str | None:
    """Why ``problem`` is not for this module (a short reason), or None when it is (see the module docstring).
    ``apart``: do not ask that workloads share no committed offer (each is then planned with commitments of its
    own: a feasible plan, not a proven optimum, of a problem where they could share). ``share_spot``: nor that
    they share no capped spot group (:func:`plan_apart` then splits the cap)."""
    if problem.objective != "cost":
        return "objective is not cost"
    if problem.has_purchases(allowed):
        return "capacity blocks or savings plans (sized purchases the MILP plans)"
    if problem.budgets.any() or problem.max_instances is not None or problem.spread or problem.quotas:
        return "budgets, quotas or zone spread"
    if problem.owned_in_use():
        return "owned commitments (given instances at $0: the MILP plans them)"
    periods = problem.periods or []
    # one demand block (constant demand, blocks merged): every committed instance is in use in that one block by at
    # most one workload, so splitting the bought instances among their users costs the same -- sharing saves nothing
    # and each workload's own commitments are exact (a plan file of 200 constant services went to the MILP: 400 s)
    apart = apart or len(problem.blocks) == 1
    seen: dict[str, str] = {}
    spot_seen: dict[tuple, str] = {}
    for w in problem.workloads:
        if w.training or w.divisible:
            return f"{w.name} is not a serving workload"
        if w.mixed_replicas and w.min_replica_share > 0:
            return f"{w.name} mixes replica shapes, each with a least share of the demand (the MILP plans it)"
        if len(periods) == 1 and w.name not in periods[0].serving:
            return f"{w.name} does not run in the period"
        for c in problem.cands.get(w.name, []):
            if allowed is not None and c.offer["pricing"] not in allowed:
                continue
            if c.offer["pricing"] == "spot":
                # the spot cap is per instance type and region: one candidate of one workload per capped group
                g = spot_group(c.offer)
                if g in spot_seen and not (share_spot and spot_seen[g] != w.name):
                    return "a capped spot group two candidates share"
                spot_seen[g] = w.name
            if c.committed and not apart:
                ok = c.okey
                if seen.setdefault(ok, w.name) != w.name:
                    return "a committed offer two workloads can share"
    return None


_CAP = itemgetter(0)
_COST = itemgetter(1)


def frontier(units: list[tuple], capmax: float, m: int) -> dict | None:
    """Pareto frontier of integer combinations of ``units`` (capacity, replicas, instances, cost[, most units]):
    replicas and instances are what a unit adds to the floors (a spot unit adds none to the non-spot floors), the
    optional fifth item caps its count (spot: the instances of its capped group / its instances per unit).

    Returns {(replicas', instances'): list of (capacity', cost, combo)} with replicas', instances' capped at m and
    capacity' at ``capmax``; combo = ((unit index, count), ...). A unit is not added to a combination that already
    has capacity >= capmax and both floors. None when more than MAX_STATES combinations survive.
    """
    states: dict[tuple[int, int], list[tuple[float, float, tuple]]] = {(0, 0): [(0.0, 0.0, ())]}
    generated = 0
    for j, unit in enumerate(units):
        if _past_deadline():
            return None
        cap, reps, inst, cost = unit[:4]
        most = unit[4] if len(unit) > 4 else None
        new: dict[tuple[int, int], list] = {k: list(v) for k, v in states.items()}
        for (r0, i0), lst in states.items():
            for c0, k0, combo in lst:
                n, c, r, i, k = 0, c0, r0, i0, k0
                while not (c >= capmax and (r >= m or reps == 0) and (i >= m or inst == 0)) and \
                        (most is None or n < most):
                    n += 1
                    # min() by comparisons: 19 million calls were 8 s of a 200-workload plan
                    c, r, i, k = c0 + n * cap, r0 + n * reps, i0 + n * inst, k0 + n * cost
                    c = c if c < capmax else capmax
                    r = r if r < m else m
                    i = i if i < m else m
                    new.setdefault((r, i), []).append((c, k, combo + ((j, n),)))
                    generated += 1
                    if generated > MAX_GENERATED:
                        return None
        total = 0
        for key, lst in new.items():
            lst.sort(key=_COST)  # then capacity descending, stable: (-capacity, cost) without a tuple per item
            lst.sort(key=_CAP, reverse=True)
            kept, best = [], math.inf
            for s in lst:
                if s[1] < best - 1e-9:
                    kept.append(s)
                    best = s[1]
            kept.reverse()  # capacity ascending, cost ascending: a staircase
            new[key] = kept
        # across classes: a state is dropped when a class with at least its floors has one with >= capacity for
        # no more money (the cheapest such is the first of that staircase at or above its capacity)
        stairs = {k: [s[0] for s in v] for k, v in new.items()}
        for key in sorted(new, reverse=True):
            if _past_deadline():  # (m+1)^2 classes at a large floor: this loop alone ran past the limit (issue 33)
                return None
            better = [k2 for k2 in new if k2 != key and k2[0] >= key[0] and k2[1] >= key[1]]
            keep = []
            for s in new[key]:
                dom = False
                for k2 in better:
                    j = bisect.bisect_left(stairs[k2], s[0] - 1e-12)
                    if j < len(new[k2]) and new[k2][j][1] <= s[1] + 1e-9:
                        dom = True
                        break
                if not dom:
                    keep.append(s)
            new[key] = keep
            stairs[key] = [s[0] for s in keep]
            total += len(keep)
        if total > MAX_STATES:
            return None
        states = new
    return states


def hourly_table(front: dict, m: int):
    """For each remaining floor (a, i) in 0..m: (capacities ascending, cheapest cost of a combination with at least
    that capacity, its combo) over the hourly frontier's classes with replicas' >= a and instances' >= i."""
    import numpy as np

    out = {}
    for a in range(m + 1):
        if _past_deadline():  # (m+1)^2 entries: 100 replicas ran past the time limit here (issue 33)
            raise TooBig("")
        for i in range(m + 1):
            pts = [s for (r, ii), lst in front.items() if r >= a and ii >= i for s in lst]
            if not pts:
                out[(a, i)] = (np.zeros(0), np.zeros(0), [])
                continue
            pts.sort(key=lambda s: (s[0], s[1]))
            caps = np.array([s[0] for s in pts])
            cost = np.array([s[1] for s in pts])
            # suffix minimum: the cheapest combination with capacity >= caps[j]
            order = np.minimum.accumulate(cost[::-1])[::-1]
            arg = np.empty(len(pts), dtype=int)
            best_j = len(pts) - 1
            for j in range(len(pts) - 1, -1, -1):
                if cost[j] <= cost[best_j]:
                    best_j = j
                arg[j] = best_j
            out[(a, i)] = (caps, order, [pts[j][2] for j in arg])
    return out


def hourly_units(w, hourly, spot_capacity: int) -> list[tuple]:
    """Frontier units of hourly candidates: (throughput, replicas, instances, USD/h[, most units]). A spot unit is
    capped at ``spot_capacity // instances`` units (the MILP's ``spot`` rows, one candidate per capped group) and,
    unless ``spot_only_ok``, counts towards no redundancy floor (the non-spot floors then imply the others)."""
    out = []
    for c in hourly:
        k, r = int(c.instances_per_unit), int(c.replicas_per_unit)
        if c.offer["pricing"] == "spot":
            most = spot_cap(spot_capacity, c.offer) // k
            if most < 1:  # callers that index the result drop these candidates first
                continue
            out.append((c.throughput_per_unit, r if w.spot_only_ok else 0, k if w.spot_only_ok else 0,
                        c.usd_per_unit_hour, most))
        else:
            out.append((c.throughput_per_unit, r, k, c.usd_per_unit_hour))
    return out


def plan_group(w, cands, problem: FleetProblem, slot_for: dict[str, tuple[str, float]], blocks_idx, demand, hours,
                active=None):
    """Exact cheapest plan of serving workload ``w`` on ``cands`` (one placement group). Returns
    (cost, committed combo, committed units, hourly units, hourly combo per block), or None when no plan exists in
    the group. Raises TooBig when a frontier outgrows its limits."""
    import numpy as np

    m = int(w.min_replicas)
    peak = float(demand.max()) if len(demand) else 0.0
    hourly = [c for c in cands if not c.committed]
    committed = [c for c in cands if c.committed and c.okey in slot_for]
    if not hourly and not committed:
        return None
    capmax = peak
    hourly = [c for c in hourly if c.offer["pricing"] != "spot"
              or spot_cap(problem.spot_capacity, c.offer) >= c.instances_per_unit]
    hu = hourly_units(w, hourly, problem.spot_capacity)  # aligned with ``hourly``: combos index both
    cu = [(c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit),
           slot_for[c.okey][1] * c.instances_per_unit) for c in committed]
    memo = (tuple(hu), tuple(cu), capmax, m, demand.tobytes(), np.asarray(hours, dtype=float).tobytes(),
            None if active is None else np.asarray(active, dtype=bool).tobytes(), MAX_STATES, MAX_GENERATED)
    got = _PLANS.get(memo)
    if got is not None and _past_deadline():
        raise TooBig(w.name)  # as the frontier would: a caller past its deadline gets no plan, kept or not
    if got is not None:  # the same units, demand and hours: the same plan (combos index hu and cu)
        return None if got is _NONE else (got[0], got[1], committed, hourly, got[2])
    out = _plan_units(hu, cu, capmax, m, demand, hours, active, w.name)
    if len(_PLANS) >= MAX_MEMO:
        _PLANS.clear()
    _PLANS[memo] = _NONE if out is None else out
    return None if out is None else (out[0], out[1], committed, hourly, out[2])


#: plan_group's answers by (hourly units, committed units, peak, floor, demand, hours, active): a problem and its
#: group-bounding sub-problem (optimizer.planning.problem_build._bound_groups) plan the same groups of the same
#: workloads; 200 services built each frontier twice (25 s of 74). Cleared whole past MAX_MEMO entries.
_PLANS: dict[tuple, Any] = {}
_NONE = object()
MAX_MEMO = 50_000


def _plan_units(hu, cu, capmax, m, demand, hours, active, name):
    """plan_group's enumeration over the frontier units ``hu`` (hourly) and ``cu`` (committed): (cost, committed
    combo, hourly combo per block) or None. Raises TooBig."""
    import numpy as np

    hf = frontier(hu, capmax, m)
    cf = frontier(cu, capmax, m) if hf is not None else None
    if hf is None or cf is None:
        raise TooBig(name)
    table = hourly_table(hf, m)
    need = demand * (1.0 - TOL)
    if active is not None and not active.all():
        # a workload that stops in some periods (no commitment then, separable): in its blocks the cheapest hourly
        # cover of the demand and the floors, elsewhere nothing
        caps, order, combos = table[(m, m)]
        if len(caps) == 0:
            return None
        idx = np.searchsorted(caps, need, side="left")
        if (idx[active] >= len(caps)).any():
            return None
        cost_b = np.where(active, order[np.minimum(idx, len(caps) - 1)], 0.0)
        per_block = [combos[int(j)] if a else () for j, a in zip(idx, active)]
        return float(cost_b @ hours), (), per_block
    best = (math.inf, None, None)
    for (r, i), lst in cf.items():
        caps, order, combos = table[(m - r, m - i)]
        if not lst:
            continue
        if len(caps) == 0:
            # no hourly combination gives the missing floors: only committed states meeting everything qualify
            for c, k, combo in lst:
                if r >= m and i >= m and c >= float(need.max(initial=0.0)) and k < best[0]:
                    best = (k, combo, np.zeros(len(demand), dtype=int))
            continue
        ccap = np.array([s[0] for s in lst])
        ccost = np.array([s[1] for s in lst])
        for lo in range(0, len(lst), 2000):
            resid = need[None, :] - ccap[lo:lo + 2000, None]
            idx = np.searchsorted(caps, resid, side="left")
            feas = idx < len(caps)
            cost_b = np.where(feas, order[np.minimum(idx, len(caps) - 1)], np.inf)
            tot = ccost[lo:lo + 2000] + cost_b @ hours
            j = int(np.argmin(tot))
            if tot[j] < best[0] - 1e-9:
                best = (float(tot[j]), lst[lo + j][2], idx[j])
    if not math.isfinite(best[0]):
        return None
    total, ccombo, idx = best
    # hourly units per block, from the table of the committed state's class
    ccap = sum(cu[j][0] * n for j, n in ccombo)
    creps = min(m, sum(cu[j][1] * n for j, n in ccombo))
    cinst = min(m, sum(cu[j][2] * n for j, n in ccombo))
    caps, order, combos = table[(m - creps, m - cinst)]
    per_block = []
    for b in range(len(demand)):
        if len(caps) == 0:
            per_block.append(())
            continue
        j = int(np.searchsorted(caps, need[b] - min(ccap, capmax), side="left"))
        per_block.append(combos[j])
    return total, ccombo, per_block


#: Most states of a frontier over several periods (vectors of capacity): its dominance check is quadratic.
MAX_VECTOR_STATES = 1_500


def _vector_frontier(units: list[tuple], capmax: tuple, floors: tuple) -> list | None:
    """Pareto frontier of integer combinations of committed ``units`` over several periods.

    A unit is (capacity, replicas, instances, cost, coverage): ``coverage`` a 0/1 tuple per period (the periods its
    term covers in which the workload runs). A state is (capacities, replicas, instances, cost, combo), the first
    three tuples per period, capped at ``capmax`` and ``floors``; a state is dropped when another has at least its
    capacity, replicas and instances in every period for no more money. A unit is not added to a state that its
    periods no longer need. Returns the states, or None past MAX_VECTOR_STATES or MAX_GENERATED (the MILP plans).
    """
    import numpy as np

    P = len(capmax)
    zero = (0.0,) * P
    states = [(zero, (0,) * P, (0,) * P, 0.0, ())]
    generated = 0
    for j, (cap, reps, inst, cost, cov) in enumerate(units):
        if _past_deadline():
            return None
        new = list(states)
        for c0, r0, i0, k0, combo in states:
            n, c, r, i = 0, c0, r0, i0
            while any(cov[p] and (c[p] < capmax[p] or (reps and r[p] < floors[p]) or (inst and i[p] < floors[p]))
                      for p in range(P)):
                n += 1
                c = tuple(min(c0[p] + n * cap * cov[p], capmax[p]) for p in range(P))
                r = tuple(min(r0[p] + n * reps * cov[p], floors[p]) for p in range(P))
                i = tuple(min(i0[p] + n * inst * cov[p], floors[p]) for p in range(P))
                new.append((c, r, i, k0 + n * cost, combo + ((j, n),)))
                generated += 1
                if generated > MAX_GENERATED:
                    return None
        # dominance: cheapest first (ties: more of everything first); kept states that cover another drop it
        new.sort(key=lambda s: (s[3], -sum(s[0]) - sum(s[1]) - sum(s[2])))
        feats = np.array([s[0] + s[1] + s[2] for s in new], dtype=float).reshape(len(new), 3 * P)
        kept = np.empty_like(feats)
        kept_idx: list[int] = []
        for x in range(len(new)):
            n_kept = len(kept_idx)
            if n_kept and np.all(kept[:n_kept] >= feats[x] - 1e-9, axis=1).any():
                continue
            kept[n_kept] = feats[x]
            kept_idx.append(x)
            if len(kept_idx) > MAX_VECTOR_STATES:
                return None
        states = [new[x] for x in kept_idx]
    return states


def _plan_group_periods(w, cands, problem: FleetProblem, demand, hours, active, bper):
    """Exact cheapest plan of serving workload ``w`` on ``cands`` (one placement group) over several periods with
    commitments: every term covers the periods it spans (``FleetProblem.covering``), so a combination of committed
    slots gives a capacity per period, and once it is fixed every block stands alone (the cheapest hourly cover of
    what is left, as in one period).

    Terms over several periods (a 3-year term on a 36-month horizon cut at the 1-year renewals) are enumerated as a
    Pareto frontier of capacity vectors (:func:`_vector_frontier`); for each of its states, every period is then
    planned alone with the terms that cover only it (a scalar frontier per period, as in :func:`plan_group`), once
    per distinct capacity the long terms leave it. Returns (cost, committed combo, committed units, hourly units,
    hourly combo per block) with committed units (candidate, slot key, coverage), or None when no plan exists in the
    group. Raises TooBig when a frontier outgrows its limits."""
    import numpy as np

    periods = problem.periods
    P = len(periods)
    m = int(w.min_replicas)
    runs = [bool(active[bper == p].any()) for p in range(P)]
    peak = tuple(float(demand[bper == p].max(initial=0.0)) if runs[p] else 0.0 for p in range(P))
    floors = tuple(m if runs[p] else 0 for p in range(P))
    hourly = [c for c in cands if not c.committed and
              (c.offer["pricing"] != "spot" or spot_cap(problem.spot_capacity, c.offer) >= c.instances_per_unit)]
    hu = hourly_units(w, hourly, problem.spot_capacity)
    committed = []  # (candidate, slot key, coverage)
    units = []
    for c in cands:
        if not c.committed:
            continue
        for sk in problem.slots_of(c.okey):
            sl = problem.slots[sk]
            cov = tuple(int(runs[p] and sl.start_month <= periods[p].start_month and
                            periods[p].end_month <= sl.end_month) for p in range(P))
            if not any(cov):
                continue  # a term over none of the workload's periods is never worth buying for it
            committed.append((c, sk, cov))
            units.append((c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit),
                          problem.slot_cost(sl) * c.instances_per_unit, cov))
    if not hourly and not committed:
        return None
    hf = frontier(hu, max(peak), m)
    if hf is None:
        raise TooBig(w.name)
    table = hourly_table(hf, m)
    need = demand * (1.0 - TOL)
    blocks_of = [np.flatnonzero((bper == p) & active) for p in range(P)]
    long_j = [j for j, u in enumerate(units) if sum(u[4]) > 1]
    short_j = {p: [j for j, u in enumerate(units) if sum(u[4]) == 1 and u[4][p]] for p in range(P)}
    lf = _vector_frontier([units[j] for j in long_j], peak, floors)
    sf = {p: frontier([units[j][:4] for j in short_j[p]], peak[p], floors[p]) for p in range(P) if runs[p]}
    if lf is None or any(v is None for v in sf.values()):
        raise TooBig(w.name)
    memo: dict[tuple, tuple] = {}

    def period_best(p: int, oc: float, orr: int, oi: int) -> tuple:
        """(cost, short combo, (short capacity, replicas, instances)) of period p's blocks given the long terms'
        capacity ``oc`` and floors ``orr``/``oi`` there: the cheapest short-term state plus hourly cover."""
        key = (p, oc, orr, oi)
        if key in memo:
            return memo[key]
        bs = blocks_of[p]
        best = (math.inf, None, None)
        for (r, i), lst in sf[p].items():
            if not lst:
                continue
            a, ii = max(0, floors[p] - orr - r), max(0, floors[p] - oi - i)
            caps, order, _ = table[(a, ii)]
            ccap = np.array([x[0] for x in lst]) + oc
            ccost = np.array([x[1] for x in lst])
            if len(caps) == 0:  # no hourly combination gives the missing floors
                if a == 0 and ii == 0:
                    ok = ccap >= float(need[bs].max(initial=0.0))
                    if ok.any():
                        j = int(np.argmin(np.where(ok, ccost, np.inf)))
                        if ccost[j] < best[0] - 1e-9:
                            best = (float(ccost[j]), lst[j][2], (lst[j][0], r, i))
                continue
            idx = np.searchsorted(caps, need[bs][None, :] - ccap[:, None], side="left")
            feas = (idx < len(caps)).all(axis=1)
            if not feas.any():
                continue
            tot = ccost + np.where(idx < len(caps), order[np.minimum(idx, len(caps) - 1)], 0.0) @ hours[bs]
            tot = np.where(feas, tot, np.inf)
            j = int(np.argmin(tot))
            if tot[j] < best[0] - 1e-9:
                best = (float(tot[j]), lst[j][2], (lst[j][0], r, i))
        memo[key] = best
        return best

    best = (math.inf, None, None)
    for caps_v, reps_v, inst_v, cost, combo in lf:
        total, picks = cost, {}
        for p in range(P):
            if not runs[p]:
                continue
            got = period_best(p, caps_v[p], reps_v[p], inst_v[p])
            total += got[0]
            picks[p] = got
            if total >= best[0]:
                break
        if total < best[0] - 1e-9:
            best = (total, combo, (caps_v, reps_v, inst_v, picks))
    if not math.isfinite(best[0]):
        return None
    total, lcombo, (caps_v, reps_v, inst_v, picks) = best
    ccombo = [(long_j[j], n) for j, n in lcombo]
    offset = {}
    for p, (_cost, scombo, (sc, sr, si)) in picks.items():
        ccombo += [(short_j[p][j], n) for j, n in scombo]
        offset[p] = (caps_v[p] + sc, reps_v[p] + sr, inst_v[p] + si)
    per_block = []
    for b in range(len(demand)):
        p = int(bper[b])
        if not active[b] or p not in offset:
            per_block.append(())
            continue
        oc, orr, oi = offset[p]
        caps, order, combos = table[(max(0, floors[p] - orr), max(0, floors[p] - oi))]
        if len(caps) == 0:
            per_block.append(())
            continue
        j = int(np.searchsorted(caps, need[b] - min(oc, peak[p]), side="left"))
        per_block.append(combos[j])
    return total, ccombo, committed, hourly, per_block

class GroupMinima:
    """The exact minimum cost of each serving workload of a separable problem (:func:`separable`) in each placement
    group, computed when first asked and kept: :func:`solve_separable` picks each workload's best group with it, and
    the placement search of ``optimizer.planning.solve`` bounds its nodes with it (a node allowing groups G costs at least
    the sum over its serving workloads of the least of their minima over G).

    ``ok`` is False when the problem is not separable (then nothing is computed). :meth:`best` raises
    :class:`TooBig` when a frontier is past the enumeration's caps.
    """

    def __init__(self, problem: FleetProblem, allowed: set[str] | None = None, apart: bool = False,
                 share_spot: bool = False, deadline: float | None = None) -> None:
        import numpy as np

        self.problem, self.allowed, self.deadline = problem, allowed, deadline
        self.ok = separable(problem, allowed, apart, share_spot) is None
        self.evaluated = 0
        self.blocks_idx = list(range(len(problem.blocks)))
        self.hours = np.array([problem.blocks[b].hours * problem.months(problem.blocks[b]) for b in self.blocks_idx])
        self.slot_for: dict[str, tuple[str, float]] = {}
        if self.ok and len(problem.periods or []) == 1:  # several periods: no committed candidate (separable)
            p = problem.periods[0]
            for ok in {s.okey for s in problem.slots.values()}:
                cover = problem.covering(ok, p)
                if cover:
                    k = min(cover, key=lambda s: (problem.slot_cost(problem.slots[s]), s))
                    self.slot_for[ok] = (k, problem.slot_cost(problem.slots[k]))
        self.bper = np.array([int(problem.blocks[b].period) for b in self.blocks_idx])
        self._setup: dict[str, tuple] = {}
        self._exact: dict[tuple[str, Any], tuple | None] = {}

    def setup(self, w) -> tuple:
        """(candidates by group, cheap lower bound by group, by_periods, active, demand) of workload ``w``."""
        import numpy as np

        if w.name in self._setup:
            return self._setup[w.name]
        problem, allowed, hours, bper, blocks_idx = self.problem, self.allowed, self.hours, self.bper, self.blocks_idx
        cands = [c for c in problem.cands.get(w.name, []) if allowed is None or c.offer["pricing"] in allowed]
        # several periods with commitments: a term's capacity is one number per period (_plan_group_periods)
        by_periods = len(problem.periods or []) > 1 and any(c.committed for c in cands)
        active = np.array([problem.active(w, problem.blocks[b]) for b in blocks_idx])
        demand = np.array([float(problem.blocks[b].demand.get(w.name, 0.0)) if active[b] else 0.0
                           for b in blocks_idx])
        by_group: dict[Any, list] = {}
        for c in cands:
            by_group.setdefault(workload_group(problem, w, c), []).append(c)
        # cheapest groups first: a group whose bound is not below the incumbent is skipped. The bound charges each
        # committed unit its cost spread over every hour (as in shared_lower_bound): in every block with demand or a
        # redundancy floor at least one unit runs, and the capacity runs at no less than the lowest USD per
        # throughput-hour
        busy = active & ((demand > 0) | (w.min_replicas > 0))
        okeys = {id(c): c.okey for c in cands}
        total_hours = float(hours.sum())
        slot_for = self.slot_for

        def slot_rate(c) -> float | None:
            """Least USD per hour of use of one committed unit: its cost over the hours it can serve."""
            if not by_periods:
                return slot_for[okeys[id(c)]][1] * c.instances_per_unit / total_hours \
                    if okeys[id(c)] in slot_for else None
            rates = []
            for sk in problem.slots_of(okeys[id(c)]):
                sl = problem.slots[sk]
                inside = [p.index for p in problem.periods
                          if sl.start_month <= p.start_month and p.end_month <= sl.end_month]
                h = float(hours[np.isin(bper, inside) & active].sum())
                if h > 0:
                    rates.append(problem.slot_cost(sl) * c.instances_per_unit / h)
            return min(rates) if rates else None

        def bound(cs):
            units = [(c.usd_per_unit_hour, c.throughput_per_unit) for c in cs if not c.committed]
            units += [(r, c.throughput_per_unit) for c in cs if c.committed for r in (slot_rate(c),) if r is not None]
            if not units:
                return math.inf
            rate = min(u / t for u, t in units)
            unit = min(u for u, _ in units)
            return float(np.maximum(rate * demand, np.where(busy, unit, 0.0)) @ hours)
        bounds = {g: bound(cs) for g, cs in by_group.items()}
        self._setup[w.name] = (by_group, bounds, by_periods, active, demand)
        return self._setup[w.name]

    def exact(self, w, g) -> tuple | None:
        """The exact plan of workload ``w`` alone in group ``g``: (cost, committed combo, committed, hourly, per-block
        combos), or None when no plan exists there. Raises TooBig."""
        key = (w.name, g)
        if key not in self._exact:
            by_group, _bounds, by_periods, active, demand = self.setup(w)
            cs = by_group[g]
            self.evaluated += 1
            if self.deadline is not None and time.perf_counter() > self.deadline:
                raise TooBig(w.name)
            before = frontier_limit()
            frontier_deadline(self.deadline)
            try:
                self._exact[key] = self._plan(w, cs, by_periods, active, demand)
            finally:
                frontier_deadline(before)
        return self._exact[key]

    def _plan(self, w, cs, by_periods, active, demand) -> tuple | None:
        """The exact plan of ``w`` on candidates ``cs``; with an N+1 rule (``w.redundancy`` s > 0, issue 26) the
        least over thresholds t of the failure losses of ``cs`` (optimizer.planning.problem.failure_loss) of the
        plan on the candidates losing at most t with demand max(d, s x d + t) where d > 0: a plan whose largest loss is t*
        is feasible for t*, and any plan for t loses at most t, so capacity - loss >= s x d (exact)."""
        import numpy as np

        def one(cands, dem):
            return _plan_group_periods(w, cands, self.problem, dem, self.hours, active, self.bper) if by_periods \
                else plan_group(w, cands, self.problem, self.slot_for, self.blocks_idx, dem, self.hours, active)
        if not (w.redundancy > 0) or not (demand > 0).any():
            return one(cs, demand)
        total_hours = float(self.hours.sum())

        def rate(c) -> float:  # least USD per tokens/s-hour of a unit (a committed one used every hour it covers)
            if not c.committed:
                return c.usd_per_unit_hour / c.throughput_per_unit
            if not by_periods:
                if c.okey not in self.slot_for:
                    return math.inf
                return self.slot_for[c.okey][1] * c.instances_per_unit / total_hours / c.throughput_per_unit
            rates = []
            for sk in self.problem.slots_of(c.okey):
                sl = self.problem.slots[sk]
                inside = [p.index for p in self.problem.periods
                          if sl.start_month <= p.start_month and p.end_month <= sl.end_month]
                h = float(self.hours[np.isin(self.bper, inside) & active].sum())
                if h > 0:
                    rates.append(self.problem.slot_cost(sl) * c.instances_per_unit / h / c.throughput_per_unit)
            return min(rates) if rates else math.inf
        serving = demand > 0
        rates = {id(c): rate(c) for c in cs}
        tries = []
        for t in sorted({failure_loss(c) for c in cs}):
            sub = [c for c in cs if failure_loss(c) <= t + 1e-9]
            dem = np.where(serving, np.maximum(demand, w.redundancy * demand + t), 0.0)
            lo = min(rates[id(c)] for c in sub)
            tries.append((lo * float(dem @ self.hours) if math.isfinite(lo) else math.inf, t, sub, dem))
        best = None
        for lb, t, sub, dem in sorted(tries, key=lambda x: (x[0], x[1])):
            if best is not None and lb >= best[0] - 1e-9:
                break  # every other threshold's plan costs at least its bound
            if _past_deadline():
                raise TooBig(w.name)
            r = one(sub, dem)
            if r is not None and (best is None or r[0] < best[0] - 1e-9):
                best = r
        return best

    def best(self, w, groups=None) -> tuple | None:
        """The cheapest exact plan of ``w`` over ``groups`` (default: all its groups), found in the order of the cheap
        bounds and stopping when the next bound is not below the best found; None when none has a plan."""
        by_group, bounds, _bp, _a, _d = self.setup(w)
        best = None
        for g in sorted((g for g in by_group if groups is None or placement_part(g) in groups),
                        key=lambda g: (bounds[g], g)):
            if best is not None and bounds[g] >= best[0] - 1e-9:
                break
            r = self.exact(w, g)
            if r is None:
                continue
            if best is None or r[0] < best[0] - 1e-9:
                best = r
        return best

    def needs_nothing(self, w) -> bool:
        """``w`` has no demand and no redundancy floor: its plan is no units."""
        _bg, _b, _bp, _a, demand = self.setup(w)
        return not (demand > 0).any() and w.min_replicas <= 0


def solve_separable(problem: FleetProblem, *, allowed: set[str] | None = None,
                    apart: bool = False, deadline: float | None = None,
                    share_spot: bool = False) -> FleetSolution | None:
    """The exact minimum-cost plan of a separable problem (:func:`separable`), or None when it is not separable,
    a frontier is too large, or some workload has no feasible plan (the MILP then reports why).

    Returns a FleetSolution whose report is "optimal" with gap 0 and solver "enumeration"; its cost is recomputed
    from the units (``optimizer.planning.solution.fleet_cost``) like the MILP's. ``apart=True``: workloads that could
    share a committed offer are each planned with their own (report status "feasible"): an upper bound and a starting
    plan for the MILP, which may share.
    """
    from optimizer.planning.solution import fleet_cost

    gm = GroupMinima(problem, allowed, apart, share_spot, deadline=deadline)
    if not gm.ok:
        return None
    t0 = time.perf_counter()
    blocks_idx, bper, slot_for = gm.blocks_idx, gm.bper, gm.slot_for
    sol = FleetSolution(report=SolveReport("optimal", solver="enumeration"))
    for w in problem.workloads:
        if deadline is not None and time.perf_counter() > deadline:
            return None  # out of the caller's time (time.perf_counter() seconds): no plan rather than a late one
        try:
            best = gm.best(w)
        except TooBig:
            return None
        _bg, _b, by_periods, active, _d = gm.setup(w)
        if best is None and gm.needs_nothing(w):
            continue  # needs nothing: no units (the MILP's optimum too)
        if best is None:
            return None
        _total, ccombo, committed, hourly, per_block = best
        for j, n in ccombo:
            if by_periods:  # a slot's units serve the blocks of the periods it covers (where the workload runs)
                c, key, cov = committed[j]
                served = [b for b in blocks_idx if cov[bper[b]] and active[b]]
            else:
                c = committed[j]
                key, served = slot_for[c.okey][0], blocks_idx
            ok = c.okey
            sol.N[key] = sol.N.get(key, 0) + n * int(c.instances_per_unit)
            for b in served:
                sol.A[(w.name, ok, b)] = sol.A.get((w.name, ok, b), 0.0) + float(n)
        for b, combo in zip(blocks_idx, per_block):
            for j, n in combo:
                ok = hourly[j].okey
                sol.X[(w.name, ok, b)] = sol.X.get((w.name, ok, b), 0.0) + float(n)
    evaluated = gm.evaluated
    sol.cost = fleet_cost(problem, sol)
    sol.value = 0.0
    secs = time.perf_counter() - t0
    shared = apart and separable(problem, allowed) is not None
    sol.report = SolveReport("feasible" if shared else "optimal", objective=sol.cost, bound=None if shared else sol.cost,
                             gap=None if shared else 0.0, seconds=secs, solver="enumeration",
                             message=f"{'each workload apart' if shared else 'exact enumeration'} over {evaluated} "
                                     "workload x placement-group frontiers")
    return sol


def plan_apart(problem: FleetProblem, *, allowed: set[str] | None = None,
               deadline: float | None = None) -> FleetSolution | None:
    """A feasible plan of the whole problem made of each serving workload's exact plan alone (commitments of its
    own): the MILP's first incumbent and its fallback where workloads could share a committed offer or a capped spot
    group, so planning together never returns more than planning apart (a fresh user saw "no plan" in 60 s, and a
    plan dearer than apart, for three services of which two allowed spot).

    A spot cap (``spot_capacity`` instances per instance type and region) that several workloads' plans alone
    overrun together is split: each plans with ``spot_capacity // k`` (k the workloads that can use capped spot).
    Returns the plan (report status "feasible", solver "enumeration") or None (not applicable: training, budgets,
    zone spread, a frontier too big, past ``deadline``, or no plan for some workload).
    """
    from optimizer.planning.solution import spot_use

    sol = solve_separable(problem, allowed=allowed, apart=True, deadline=deadline, share_spot=True)
    if sol is None:
        return None

    def spot_over(s: FleetSolution) -> bool:
        caps = {spot_group(c.offer): spot_cap(problem.spot_capacity, c.offer) for cs in problem.cands.values()
                for c in cs if c.offer["pricing"] == "spot"}
        return any(v > caps.get(g, int(problem.spot_capacity)) + 1e-9 for (g, _b), v in spot_use(problem, s).items())

    if spot_over(sol):
        k = sum(1 for w in problem.workloads
                if any(c.offer["pricing"] == "spot" for c in problem.cands.get(w.name, [])))
        cap = problem.spot_capacity
        split = problem.replace(spot_capacity=cap.divided(k) if isinstance(cap, SpotCaps)
                                else max(0, int(cap) // max(1, k)))
        sol = solve_separable(split, allowed=allowed, apart=True, deadline=deadline, share_spot=True)
        if sol is None or spot_over(sol):
            return None
        from optimizer.planning.solution import fleet_cost

        sol.cost = fleet_cost(problem, sol)
    sol.report = dataclasses.replace(sol.report, status="feasible", bound=None, gap=None,
                                     message="each workload apart (commitments and spot of its own)")
    return sol


def shared_lower_bound(problem: FleetProblem, *, allowed: set[str] | None = None,
                       deadline: float | None = None) -> float | None:
    """A lower bound (USD) on the minimum cost when workloads may share committed offers, or None when the problem
    is not one :func:`separable` takes with ``apart=True``.

    Every committed instance is charged as if used in every hour of the horizon: its cost over the horizon spread
    evenly over the hours (slot cost / hours). A plan that buys N_o instances of o and uses u_ob <= N_o of them in
    block b pays N_o x cost_o >= sum_b H_b u_ob x cost_o / sum H, so the plan costs at least the sum over workloads
    and blocks of the cheapest cover of each block at those hourly rates — which splits by workload and block and is
    computed exactly by the same frontiers (placement: each workload's cheapest group). None too when ``deadline``
    (time.perf_counter()) passes first: its frontiers and tables check it (issue 33: at 100 replicas they ran for
    minutes past a 5 s limit).
    """
    if separable(problem, allowed, apart=True) is not None or len(problem.periods or []) != 1:
        return None
    before = frontier_limit()
    frontier_deadline(deadline)
    try:
        return _shared_lower_bound(problem, allowed)
    except TooBig:
        return None
    finally:
        frontier_deadline(before)


def _shared_lower_bound(problem: FleetProblem, allowed: set[str] | None) -> float | None:
    """:func:`shared_lower_bound`'s computation (the thread's frontier deadline set)."""
    import numpy as np

    deadline = frontier_limit()
    p = problem.periods[0]
    hours = np.array([b.hours * p.months for b in problem.blocks])
    total_hours = float(hours.sum())
    slot_cost = {}
    for ok in {s.okey for s in problem.slots.values()}:
        cover = problem.covering(ok, p)
        if cover:
            slot_cost[ok] = min(problem.slot_cost(problem.slots[k]) for k in cover)
    lb = 0.0
    for w in problem.workloads:
        if deadline is not None and time.perf_counter() > deadline:
            return None
        m = int(w.min_replicas)
        demand = np.array([float(b.demand.get(w.name, 0.0)) for b in problem.blocks])
        need = demand * (1.0 - TOL)
        by_group: dict[Any, list] = {}
        for c in problem.cands.get(w.name, []):
            if allowed is not None and c.offer["pricing"] not in allowed:
                continue
            by_group.setdefault(workload_group(problem, w, c), []).append(c)
        best = math.inf
        for cs in by_group.values():
            units = hourly_units(w, [c for c in cs if not c.committed], problem.spot_capacity)
            units += [(c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit),
                       slot_cost[c.okey] * c.instances_per_unit / total_hours)
                      for c in cs if c.committed and c.okey in slot_cost]
            if not units:
                continue
            front = frontier(units, float(demand.max(initial=0.0)), m)
            if front is None:
                return None
            caps, order, _ = hourly_table(front, m)[(m, m)]
            if len(caps) == 0:
                continue
            idx = np.searchsorted(caps, need, side="left")
            if (idx >= len(caps)).any():
                continue
            best = min(best, float(order[idx] @ hours))
        if not math.isfinite(best):
            return None
        lb += best
    return lb

