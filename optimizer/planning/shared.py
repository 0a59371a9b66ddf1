"""Exact minimum-cost plans for serving workloads that can share committed offers, without a MILP.

Why: workloads placed in one region may time-share a reservation (one runs on it at night, another by day); the
planning MILP couples every demand block through the shared base and its LP bound is weak there. Measured on the
shipped snapshot (``benchmarks/bench_fleet.py --scenarios 3x720``: three chat services over 720 distinct hourly
demands, two of them able to share GCP reservations in several regions): HiGHS' placement search stopped at 60 s
with a 17.7 % gap on the plan of each workload apart; on its one co-located leaf alone (us-central1, two
workloads) HiGHS needed 37 s to prove that sharing saves $45 there.

When it applies (:func:`applies`): what ``optimizer.planning.exact.separable(..., apart=True)`` takes (minimum cost,
serving workloads only, no budgets/quota/zone spread, no capped spot group two workloads share) in ONE period of
the horizon, where some committed offer could serve two workloads. Budgets and quotas: through
``optimizer.planning.solve.solve_within_limits`` (the plan without them, when it keeps them).

The plan is a placement (each workload in one placement group) and, per group, a committed base shared by the
workloads placed there. Write A(w, g) for the exact cost of w alone in group g
(``optimizer.planning.exact.plan_group``), A*(w) = min_g A(w, g), S(w, g) for its cost with every committed instance
charged its cost spread evenly over the hours of the horizon (a lower bound on what w contributes to any shared plan:
``optimizer.planning.exact.shared_lower_bound``) and J(C, g) for the exact cost of the set C planned together in g. A
placement costs the sum over its groups of J; a group holding one workload costs A.

1. **Which co-locations can matter.** A set C (two or more workloads, a group g where some committed offer serves
   two of them) is *relevant* when S(C, g) + sum over the other workloads of Lo(w) < U (1 - gap), U the plan in
   hand (each apart at A*), Lo(w) = A*(w) when fewer than two other workloads are left (no second co-location can
   form), else min_g S(w, g). Any placement with an irrelevant co-location costs at least U (1 - gap): the others
   cost at least their Lo. So only relevant sets need their exact J; when more than :data:`MAX_SETS` are relevant
   the problem goes back to the MILP.
2. **J(C, g) exactly** (:func:`_joint`). Committed offers that one workload of C can use (private) enter that
   workload's Pareto frontier of committed combinations (capacity, replicas, instances;
   ``optimizer.planning.exact.frontier``); the shared ones are enumerated as a base vector n (instances per shared
   offer) in the box of what any workload could use at its peak. For a fixed n, private states P_w and per block a split
   of n among the workloads (a committed unit is paid whatever its use, so a block hands out all of n), the rest of each
   block is the cheapest hourly cover (``optimizer.planning.exact.hourly_table``). So

       J = min over n, (P_w) of  c.n + sum_w cost(P_w) + sum_b min over splits x_1 + ... + x_W <= n of
           sum_w H_b g_w(d_wb - cap(P_w) - cap_w(x_w), floors)

   computed exactly: per block by a min-plus convolution over the workloads (numpy over the blocks), the base
   vectors and private states cut by bounds that hand every workload all of n (valid: a cover never costs more with
   more capacity). The enumeration is capped (:data:`MAX_BOX` base vectors, :data:`MAX_WORK` block evaluations);
   a co-location past the caps is left out with its bound: the plan is then "feasible" with its gap, and
   ``optimizer.planning.solve.solve_cost`` starts the MILP from it (the enumeration gets at most
   ``optimizer.planning.solve.SHARED_TIME_SHARE`` of the time limit).
3. **The placement** is the cheapest packing of relevant sets (disjoint, one group each) with every other workload
   at A*: every placement is either made only of relevant sets (then it costs at least that packing) or holds an
   irrelevant one (then at least U (1 - gap)). The plan is proven optimal within ``gap_rel``; the reported gap is
   the bound's (0 when no irrelevant set comes within U).
"""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

from optimizer.planning.exact import (TOL, TooBig, frontier, frontier_deadline, frontier_limit, hourly_table, hourly_units,
                                      plan_group, separable)
from optimizer.planning.problem import FleetProblem, placement_group, replica_shape, spot_cap
from optimizer.planning.solution import FleetSolution, fleet_cost
from optimizer.planning.solver import SolveReport

#: Most relevant co-locations (workload set x placement group) whose joint plan is computed exactly.
MAX_SETS = 200
#: Most shared base vectors (instances per shared committed offer) enumerated for one co-location.
MAX_BOX = 4096
#: Most block evaluations (block x combination of committed states and splits) for one co-location.
MAX_WORK = 4e8
#: Most workload subsets looked at per group before the problem is handed back to the MILP (2^workloads grows fast).
MAX_SUBSETS = 4096
#: Most cells (breakpoints x committed states x blocks) of one peak-priced bound (:func:`_pi_bound`): ~200 MB of
#: float64 at the cap; past it that bound is skipped (the even-spread one stands).
PI_MAX_CELLS = 25_000_000


def applies(problem: FleetProblem, allowed: set[str] | None = None) -> bool:
    """True when this module plans ``problem`` (module docstring): separable with commitments of each workload's
    own, one period, and some committed offer two workloads could share."""
    if any(w.redundancy > 0 for w in problem.workloads) or problem.owned_in_use():  # N+1, owned: the MILP
        return False
    if any(not w.training and not w.divisible and not w.mixed_replicas
           and len({replica_shape(c) for c in _cands(problem, w, allowed)}) > 1 for w in problem.workloads):
        return False  # one replica shape per workload and region (issue 31): a choice among shapes, the MILP's
    if separable(problem, allowed, apart=True) is not None or len(problem.periods or []) != 1:
        return False
    return separable(problem, allowed) is not None


def _cands(problem: FleetProblem, w, allowed) -> list:
    return [c for c in problem.cands.get(w.name, []) if allowed is None or c.offer["pricing"] in allowed]


def _group_of(problem: FleetProblem, c) -> tuple:
    return placement_group(c.offer, problem.placement) if problem.placement != "any" else ()


class _Side:
    """One workload of a co-location: its demand, floors, hourly table, private committed states and shared units."""

    def __init__(self, w, cs, problem: FleetProblem, slot_for: dict, shared: list[str], hours, need):
        import numpy as np

        self.w = w
        self.m = m = int(w.min_replicas)
        self.need = need
        peak = float(need.max(initial=0.0))
        hourly = [c for c in cs if not c.committed and
                  (c.offer["pricing"] != "spot" or spot_cap(problem.spot_capacity, c.offer) >= c.instances_per_unit)]
        self.hourly = hourly
        hf = frontier(hourly_units(w, hourly, problem.spot_capacity), peak, m)
        if hf is None:
            raise TooBig(w.name)
        self.table = hourly_table(hf, m)
        self.private = [c for c in cs if c.committed and c.okey in slot_for and c.okey not in shared]
        cu = [(c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit),
               slot_for[c.okey][1] * c.instances_per_unit) for c in self.private]
        pf = frontier(cu, peak, m)
        if pf is None:
            raise TooBig(w.name)
        # private states: (capacity, replicas, instances, cost, combo), cheapest first
        self.states = sorted(((cap, r, i, cost, combo) for (r, i), lst in pf.items() for cap, cost, combo in lst),
                             key=lambda s: s[3])
        by_ok = {c.okey: c for c in cs if c.committed and c.okey in shared}
        self.shared = [by_ok.get(ok) for ok in shared]  # aligned with the shared offers; None: not usable by w
        # the most instances of each shared offer w could use: its peak and floors on that offer alone
        self.most = []
        for c in self.shared:
            if c is None:
                self.most.append(0)
                continue
            units = max(math.ceil(peak / c.throughput_per_unit - 1e-9) if c.throughput_per_unit > 0 else 0,
                        math.ceil(m / max(1, int(c.replicas_per_unit))) if m else 0,
                        math.ceil(m / max(1, int(c.instances_per_unit))) if m else 0, 0)
            self.most.append(units * int(c.instances_per_unit))
        self.hours = hours
        self._cache: dict[tuple, Any] = {}
        self.np = np

    def shared_part(self, x: tuple[int, ...]) -> tuple[float, int, int]:
        """(capacity, replicas, instances) of ``x`` instances of each shared offer, in whole units of w."""
        cap = reps = inst = 0
        for c, n in zip(self.shared, x):
            if c is None or n <= 0:
                continue
            u = n // int(c.instances_per_unit)
            cap += u * c.throughput_per_unit
            reps += u * int(c.replicas_per_unit)
            inst += u * int(c.instances_per_unit)
        return cap, reps, inst

    def block_costs(self, si: int, x: tuple[int, ...]):
        """USD per block (vector over blocks) of w's hourly cover with private state ``si`` and ``x`` shared
        instances; inf where no hourly combination covers what is left."""
        np = self.np
        scap, sreps, sinst = self.shared_part(x)
        cap0, r0, i0, _cost, _combo = self.states[si]
        key = (cap0 + scap, min(self.m, r0 + sreps), min(self.m, i0 + sinst))
        v = self._cache.get(key)
        if v is None:
            caps, order, _ = self.table[(self.m - key[1], self.m - key[2])]
            if len(caps) == 0:
                v = np.where(self.need - key[0] <= 0, 0.0, np.inf) if self.m == 0 else np.full(len(self.need), np.inf)
            else:
                idx = np.searchsorted(caps, self.need - key[0], side="left")
                v = np.where(idx < len(caps), order[np.minimum(idx, len(caps) - 1)], np.inf) * self.hours
            self._cache[key] = v
        return v

    def hourly_combo(self, si: int, x: tuple[int, ...], b: int) -> tuple:
        """The hourly units (combo of ``self.hourly`` indices) covering block b after state si and x."""
        np = self.np
        scap, sreps, sinst = self.shared_part(x)
        cap0, r0, i0, _cost, _combo = self.states[si]
        caps, _order, combos = self.table[(self.m - min(self.m, r0 + sreps), self.m - min(self.m, i0 + sinst))]
        if len(caps) == 0:
            return ()
        j = int(np.searchsorted(caps, self.need[b] - (cap0 + scap), side="left"))
        return combos[j]


def _pi_bound(sides: list[_Side]) -> float:
    """max over pi of sum over blocks and sides of min over committed states P of (c_P pi_b + hourly cover of the
    rest), pi >= 0 summing to 1 over the blocks: a lower bound (USD) on the set's joint cost (module docstring,
    step 1). Each side's states are ALL its committed combinations (``_Side`` with no shared offer).

    Why it is a bound: a committed offer k bought N_k times and used by u_kb instances in block b costs
    c_k N_k = sum_b pi_b c_k N_k >= sum_b pi_b c_k u_kb, so the plan costs at least, block by block, the cheapest
    cover with committed instances priced c_k pi_b there. pi_b = H_b / H gives ``shared_lower_bound``; the best pi
    (peak hours carry the commitments) is found exactly: the function is a sum over blocks of concave piecewise-linear
    functions of pi_b, maximized over the simplex by filling its steepest segments first.
    """
    import numpy as np

    B = len(sides[0].need)
    # the candidate breakpoints are the pairs of each side's states, evaluated against every state: past
    # PI_MAX_CELLS cells the even-spread bound stands instead (a breaker's 535 states x 24 blocks wanted 13.7 GiB)
    pairs = sum(len(s.states) * (len(s.states) - 1) // 2 for s in sides) + 1
    if pairs * max(len(s.states) for s in sides) * B > PI_MAX_CELLS:
        return -math.inf
    pts = [np.zeros((1, B))]
    per_side = []
    final = 0.0 * np.zeros(B)
    for s in sides:
        c = np.array([st[3] for st in s.states], dtype=float)
        M = np.vstack([s.block_costs(i, ()) for i in range(len(s.states))])  # states x blocks, inf: no cover
        finite = np.isfinite(M)
        if not finite.any(axis=0).all():
            return math.inf  # some block has no cover at all: no plan
        per_side.append((c, M))
        # slope of the envelope for large pi: the least-slope line among those that cover the block
        final = final + np.where(finite, c[:, None], np.inf).min(axis=0)
        if len(c) > 1:
            i, j = np.triu_indices(len(c), 1)
            dc = c[i] - c[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                x = (M[j] - M[i]) / dc[:, None]  # where line i meets line j
            x[~np.isfinite(x) | (x < 0)] = 0.0
            pts.append(x)
    T = np.sort(np.vstack(pts), axis=0)  # candidate breakpoints per block (every envelope's are among them)
    F = np.zeros_like(T)
    for c, M in per_side:
        F += np.min(c[:, None, None] * T[None, :, :] + M[:, None, :], axis=0)
    base = float(F[0].sum())  # pi = 0 everywhere
    dT = np.diff(T, axis=0)
    ok = dT > 1e-18
    slope = np.where(ok, np.diff(F, axis=0) / np.where(ok, dT, 1.0), -np.inf)
    slopes = np.concatenate([slope[ok], final])
    lengths = np.concatenate([dT[ok], np.full(B, np.inf)])
    order = np.argsort(-slopes, kind="stable")
    slopes, lengths = slopes[order], lengths[order]
    pos = slopes > 0
    slopes, lengths = slopes[pos], lengths[pos]
    if len(slopes) == 0:
        return base
    before = np.concatenate([[0.0], np.cumsum(lengths)[:-1]])
    take = np.clip(1.0 - before, 0.0, lengths)
    return base + float(slopes @ take)


def _users(ws: dict[str, list], members, slot_for: dict) -> dict[str, set[str]]:
    """Committed offer key -> the workloads of ``members`` (names; ``ws`` their candidates in one group) that can
    use it."""
    users: dict[str, set[str]] = {}
    for wn in members:
        for c in ws[wn]:
            if c.committed and c.okey in slot_for:
                users.setdefault(c.okey, set()).add(wn)
    return users


def _vectors(box: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(n + 1) for n in box)))


def _joint(sides: list[_Side], shared: list[str], unit_cost: list[float], upper: float, deadline: float | None):
    """Exact minimum of the co-location (module docstring, step 2) if below ``upper`` (USD), else None.

    Returns (cost, base n, private state index per side, per block the split x per side). Raises TooBig past the
    caps or the deadline."""
    import numpy as np

    W = len(sides)
    box = tuple(sum(s.most[k] for s in sides) for k in range(len(shared)))
    B = len(sides[0].need)
    work = 0.0
    best_cost, best = upper, None
    tol = 1e-9 * max(1.0, upper)
    # every base vector that costs less than the plan in hand, cheapest first (a depth-first walk cut by cost)
    ordered: list[tuple[float, tuple[int, ...]]] = []

    def walk(k: int, cost: float, n: tuple[int, ...]) -> None:
        if k == len(box):
            ordered.append((cost, n))
            if len(ordered) > MAX_BOX:
                raise TooBig("shared base")
            return
        for cnt in range(box[k] + 1):
            c = cost + cnt * unit_cost[k]
            if c >= best_cost - tol:
                break
            walk(k + 1, c, n + (cnt,))

    walk(0, 0.0, ())
    ordered.sort()

    def lb_side(s: _Side, n) -> tuple[list[float], float]:
        """Per private state: its cost + the blocks' cover with all of n; and the minimum."""
        xs = tuple(min(a, b) for a, b in zip(n, s.most))
        vals = [s.states[i][3] + float(s.block_costs(i, xs).sum()) for i in range(len(s.states))]
        return vals, min(vals) if vals else math.inf

    for base_cost, n in ordered:
        if deadline is not None and time.perf_counter() > deadline:
            raise TooBig("deadline")
        if base_cost >= best_cost - tol:
            break
        lbs = [lb_side(s, n) for s in sides]
        work += sum(len(s.states) for s in sides) * B
        if base_cost + sum(m for _, m in lbs) >= best_cost - tol:
            continue
        # splits: each side's allocation x <= n (instances per shared offer), capped at what it could use
        subs = [[x for x in _vectors(tuple(min(a, b) for a, b in zip(n, s.most)))] for s in sides]
        order = [sorted(range(len(s.states)), key=lambda i, v=lb[0]: v[i]) for s, lb in zip(sides, lbs)]
        rest_lb = [sum(lbs[j][1] for j in range(i + 1, W)) for i in range(W)]

        def search(i: int, acc_fixed: float, table: dict, chosen: list[int]):
            """Side i onward; ``table``: allocation used so far (tuple) -> per-block cost of sides < i."""
            nonlocal best_cost, best, work
            s = sides[i]
            prev_lb = float(np.minimum.reduce(list(table.values())).sum()) if i else 0.0
            for si in order[i]:
                if base_cost + acc_fixed + prev_lb + lbs[i][0][si] + rest_lb[i] >= best_cost - tol:
                    break  # sorted by this bound: the rest are no better
                fixed = acc_fixed + s.states[si][3]
                new: dict = {}
                for used, vec in table.items():
                    for x in subs[i]:
                        u = tuple(a + b for a, b in zip(used, x))
                        if any(a > b for a, b in zip(u, n)):
                            continue
                        v = vec + s.block_costs(si, x)
                        work += B
                        old = new.get(u)
                        new[u] = v if old is None else np.minimum(old, v)
                if work > MAX_WORK:
                    raise TooBig("work")
                if deadline is not None and time.perf_counter() > deadline:
                    raise TooBig("deadline")
                if i + 1 < W:
                    # a per-block minimum over the splits still to come needs every allocation kept; an allocation
                    # using more instances is never worse for sides < i+1 (it only leaves less to the rest)
                    search(i + 1, fixed, new, chosen + [si])
                else:
                    per_block = None
                    for vec in new.values():
                        per_block = vec if per_block is None else np.minimum(per_block, vec)
                    total = base_cost + fixed + float(per_block.sum())
                    if total < best_cost - tol:
                        best_cost, best = total, (n, chosen + [si])

        search(0, 0.0, {tuple(0 for _ in n): np.zeros(B)}, [])
    if best is None:
        return None
    n, states = best
    # per block, the split that attains the minimum (a second pass over the chosen states only)
    splits = _best_splits(sides, n, states)
    return best_cost, n, states, splits


def _best_splits(sides: list[_Side], n, states: list[int]) -> list[list[tuple[int, ...]]]:
    """Per block, the allocation of base ``n`` to each side minimizing the blocks' hourly cost (the DP of
    :func:`_joint` with back pointers)."""
    import numpy as np

    B = len(sides[0].need)
    layers: list[dict] = []
    table = {tuple(0 for _ in n): (np.zeros(B), None)}
    for s, si in zip(sides, states):
        xs = _vectors(tuple(min(a, b) for a, b in zip(n, s.most)))
        new: dict = {}
        for used, (vec, _) in table.items():
            for x in xs:
                u = tuple(a + b for a, b in zip(used, x))
                if any(a > b for a, b in zip(u, n)):
                    continue
                v = vec + s.block_costs(si, x)
                old = new.get(u)
                if old is None:
                    new[u] = (v, [(used, x)] * B)
                else:
                    ov, back = old
                    better = np.nonzero(v < ov)[0]
                    if len(better):
                        back = list(back)
                        for b in better:
                            back[b] = (used, x)
                        new[u] = (np.minimum(v, ov), back)
        layers.append(new)
        table = new
    final = table
    keys = list(final)
    mat = np.vstack([final[k][0] for k in keys])
    arg = np.argmin(mat, axis=0)
    out = []
    for b in range(B):
        u = keys[int(arg[b])]
        xs = [None] * len(sides)
        for i in range(len(sides) - 1, -1, -1):
            used, x = layers[i][u][1][b]
            xs[i] = x
            u = used
        out.append(xs)
    return out


def solve_shared(problem: FleetProblem, *, allowed: set[str] | None = None, gap_rel: float = 0.001,
                 deadline: float | None = None) -> FleetSolution | None:
    """The minimum-cost plan of a problem :func:`applies` to, proven within ``gap_rel`` (module docstring), or
    None (not applicable, past a cap or the ``deadline`` in time.perf_counter() seconds, or a workload with no plan:
    the MILP then plans and reports).

    Returns a FleetSolution whose report is "optimal" (solver "enumeration") with the proven gap; cost recomputed
    from the units (``optimizer.planning.solution.fleet_cost``). When some co-location that could matter is past the
    enumeration's caps (:data:`MAX_BOX`, :data:`MAX_WORK`), it is left out and its bound kept: the plan (the best
    of the rest) is then "feasible", with ``bound`` and ``gap`` — optimal still if the gap is within ``gap_rel``.
    The frontiers and tables it builds check ``deadline`` too (issue 33: a 100-replica floor ran for minutes in them)."""
    if not applies(problem, allowed):
        return None
    before = frontier_limit()
    frontier_deadline(deadline)
    try:
        return _solve_shared(problem, allowed=allowed, gap_rel=gap_rel, deadline=deadline)
    except TooBig:
        return None
    finally:
        frontier_deadline(before)


def _solve_shared(problem: FleetProblem, *, allowed: set[str] | None, gap_rel: float,
                  deadline: float | None) -> FleetSolution | None:
    """:func:`solve_shared`'s enumeration (the thread's frontier deadline set)."""
    import numpy as np

    t0 = time.perf_counter()
    p = problem.periods[0]
    blocks = list(range(len(problem.blocks)))
    hours = np.array([b.hours * p.months for b in problem.blocks])
    total_hours = float(hours.sum())
    slot_for: dict[str, tuple[str, float]] = {}
    for ok in {s.okey for s in problem.slots.values()}:
        cover = problem.covering(ok, p)
        if cover:
            k = min(cover, key=lambda s: (problem.slot_cost(problem.slots[s]), s))
            slot_for[ok] = (k, problem.slot_cost(problem.slots[k]))
    names = [w.name for w in problem.workloads]
    wl = {w.name: w for w in problem.workloads}
    need = {w: np.array([float(b.demand.get(w, 0.0)) for b in problem.blocks]) * (1.0 - TOL) for w in names}
    demand = {w: np.array([float(b.demand.get(w, 0.0)) for b in problem.blocks]) for w in names}
    by_group: dict[tuple, dict[str, list]] = {}
    for w in problem.workloads:
        for c in _cands(problem, w, allowed):
            by_group.setdefault(_group_of(problem, c), {}).setdefault(w.name, []).append(c)
    subsets = sum(2 ** len(ws) for ws in by_group.values())
    if subsets > MAX_SUBSETS * max(1, len(by_group)):
        return None
    # S(w, g) for every workload and group; A(w, g) only where needed (each workload's best group is found in
    # the order of S, a lower bound on A, and stops once S reaches the best A)
    S: dict[tuple[str, tuple], float] = {}
    for g, ws in by_group.items():
        if deadline is not None and time.perf_counter() > deadline:
            return None
        for wn, cs in ws.items():
            w = wl[wn]
            m = int(w.min_replicas)
            units = hourly_units(w, [c for c in cs if not c.committed], problem.spot_capacity)
            units += [(c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit),
                       slot_for[c.okey][1] * c.instances_per_unit / total_hours)
                      for c in cs if c.committed and c.okey in slot_for]
            front = frontier(units, float(demand[wn].max(initial=0.0)), m) if units else None
            if units and front is None:
                return None
            sv = math.inf
            if front is not None:
                caps, order, _ = hourly_table(front, m)[(m, m)]
                if len(caps):
                    idx = np.searchsorted(caps, need[wn], side="left")
                    if (idx < len(caps)).all():
                        sv = float(order[idx] @ hours)
            S[(wn, g)] = sv
    A: dict[tuple[str, tuple], tuple] = {}

    def a_of(wn: str, g: tuple) -> tuple:
        """plan_group of w alone in g: (cost, committed combo, committed, hourly, per block), cost inf: no plan."""
        if (wn, g) not in A:
            r = plan_group(wl[wn], by_group[g][wn], problem, slot_for, blocks, demand[wn], hours)
            A[(wn, g)] = r if r is not None else (math.inf,)
        return A[(wn, g)]

    a_star: dict[str, tuple[float, tuple]] = {}
    try:
        for wn in names:
            best = (math.inf, ())
            for g in sorted((g for g in by_group if (wn, g) in S), key=lambda g: (S[(wn, g)], g)):
                if S[(wn, g)] >= best[0] - 1e-9:
                    break
                if deadline is not None and time.perf_counter() > deadline:
                    return None
                best = min(best, (a_of(wn, g)[0], g))
            a_star[wn] = best
    except TooBig:
        return None
    if any(not math.isfinite(a_star[w][0]) for w in names):
        return None
    upper = sum(a_star[w][0] for w in names)
    s_min = {w: min(S[(w, g)] for g in by_group if (w, g) in S) for w in names}
    lone_cache: dict[tuple[str, tuple], _Side] = {}

    def lone(wn: str, g: tuple) -> _Side:
        """w in g with every committed offer its own (for the bound of :func:`_pi_bound`)."""
        if (wn, g) not in lone_cache:
            lone_cache[(wn, g)] = _Side(wl[wn], by_group[g][wn], problem, slot_for, [], hours, need[wn])
        return lone_cache[(wn, g)]

    # step 1: relevant co-locations — first by the even-spread bound (cheap), then by the peak-priced one
    relevant: list[tuple[frozenset, tuple, float]] = []
    lb_irrelevant = math.inf
    candidates: list[tuple[frozenset, tuple, float, float]] = []
    for g, ws in by_group.items():
        if deadline is not None and time.perf_counter() > deadline:
            return None
        members = sorted(ws)
        users = _users(ws, members, slot_for)
        for r in range(2, len(members) + 1):
            for C in itertools.combinations(members, r):
                cs_ = set(C)
                if not any(len(u & cs_) >= 2 for u in users.values()):
                    continue  # nothing to share: J = sum of A, never below the plan apart
                rest = [w for w in names if w not in cs_]
                lo = sum(a_star[w][0] if len(rest) < 2 else s_min[w] for w in rest)
                lb = sum(S[(w, g)] for w in C) + lo
                if lb < upper * (1 - gap_rel):
                    candidates.append((frozenset(C), g, lb, lo))
                    if len(candidates) > 4 * MAX_SETS:
                        return None  # too many to bound one by one: the MILP plans
                else:
                    lb_irrelevant = min(lb_irrelevant, lb)
    for C, g, lb, lo in candidates:
        if deadline is not None and time.perf_counter() > deadline:
            return None
        # the commitments' cost put on the hours that need them: a tighter bound, dearer to compute
        try:
            lb = max(lb, _pi_bound([lone(wn, g) for wn in sorted(C)]) + lo)
        except TooBig:
            return None
        if lb < upper * (1 - gap_rel):
            relevant.append((C, g, lb))
        else:
            lb_irrelevant = min(lb_irrelevant, lb)
    if len(relevant) > MAX_SETS:
        return None
    # step 2: J of each relevant set
    joint: dict[tuple[frozenset, tuple], tuple] = {}
    lb_skipped = math.inf  # co-locations past the caps: not enumerated, their bound kept (the plan then says its gap)
    skipped = 0
    for C, g, lb in sorted(relevant, key=lambda t: t[2]):
        ws = by_group[g]
        members = sorted(C)
        users = _users(ws, members, slot_for)
        shared = sorted(ok for ok, u in users.items() if len(u) >= 2)
        # only a joint plan below every member's best plan apart can enter the packing (step 3)
        try:
            apart = min(sum(a_of(w, g)[0] for w in members), sum(a_star[w][0] for w in members))
            sides = [_Side(wl[wn], ws[wn], problem, slot_for, shared, hours, need[wn]) for wn in members]
            res = _joint(sides, shared, [slot_for[ok][1] for ok in shared], apart, deadline)
        except TooBig as e:
            if str(e) == "deadline" or (deadline is not None and time.perf_counter() > deadline):
                return None
            lb_skipped, skipped = min(lb_skipped, lb), skipped + 1
            continue
        if res is not None:
            joint[(C, g)] = (res, sides, shared)
    # step 3: the cheapest packing of relevant sets (disjoint, distinct groups), the rest apart at A*
    gains = []
    for (C, g), (res, _s, _sh) in joint.items():
        gain = sum(a_star[w][0] for w in C) - res[0]
        if gain > 1e-9:
            gains.append((gain, C, g))
    gains.sort(key=lambda t: -t[0])
    best_gain, best_pack = 0.0, []

    def pack(i: int, used_w: frozenset, used_g: frozenset, gain: float, chosen: list):
        nonlocal best_gain, best_pack
        if gain > best_gain + 1e-9:
            best_gain, best_pack = gain, list(chosen)
        for j in range(i, len(gains)):
            gj, C, g = gains[j]
            if C & used_w or g in used_g:
                continue
            pack(j + 1, used_w | C, used_g | {g}, gain + gj, chosen + [(C, g)])

    if len(gains) > 40:
        return None
    pack(0, frozenset(), frozenset(), 0.0, [])
    # the plan
    sol = FleetSolution(report=SolveReport("optimal", solver="enumeration"))
    together = set()
    for C, g in best_pack:
        (cost, n, states, splits), sides, shared = joint[(C, g)]
        together |= set(C)
        for k, ok in enumerate(shared):
            if n[k] > 0:
                key = slot_for[ok][0]
                sol.N[key] = sol.N.get(key, 0) + int(n[k])
        for side, si in zip(sides, states):
            wn = side.w.name
            _cap, _r, _i, _cost, combo = side.states[si]
            for j, cnt in combo:
                c = side.private[j]
                key = slot_for[c.okey][0]
                sol.N[key] = sol.N.get(key, 0) + cnt * int(c.instances_per_unit)
                for b in blocks:
                    sol.A[(wn, c.okey, b)] = sol.A.get((wn, c.okey, b), 0.0) + float(cnt)
        for b in blocks:
            for i, side in enumerate(sides):
                wn = side.w.name
                x = splits[b][i]
                for c, cnt in zip(side.shared, x):
                    if c is not None and cnt // int(c.instances_per_unit) > 0:
                        sol.A[(wn, c.okey, b)] = float(cnt // int(c.instances_per_unit))
                for j, cnt in side.hourly_combo(states[i], x, b):
                    ok = side.hourly[j].okey
                    sol.X[(wn, ok, b)] = sol.X.get((wn, ok, b), 0.0) + float(cnt)
    for wn in names:
        if wn in together:
            continue
        g = a_star[wn][1]
        _total, ccombo, committed, hourly, per_block = a_of(wn, g)
        for j, cnt in ccombo:
            c = committed[j]
            key = slot_for[c.okey][0]
            sol.N[key] = sol.N.get(key, 0) + cnt * int(c.instances_per_unit)
            for b in blocks:
                sol.A[(wn, c.okey, b)] = sol.A.get((wn, c.okey, b), 0.0) + float(cnt)
        for b, combo in zip(blocks, per_block):
            for j, cnt in combo:
                ok = hourly[j].okey
                sol.X[(wn, ok, b)] = sol.X.get((wn, ok, b), 0.0) + float(cnt)
    sol.cost = fleet_cost(problem, sol)
    planned = upper - best_gain
    if abs(sol.cost - planned) > 1e-6 * max(1.0, planned):
        return None  # the units do not add up to the enumeration's cost: no plan rather than a wrong one
    lb = min(sol.cost, lb_irrelevant, lb_skipped)
    gap = max(0.0, (sol.cost - lb) / sol.cost) if sol.cost > 0 else 0.0
    sol.value = 0.0
    proven = gap <= gap_rel + 1e-12
    sol.report = SolveReport("optimal" if proven else "feasible", objective=sol.cost, bound=lb,
                             gap=gap, seconds=time.perf_counter() - t0, solver="enumeration",
                             message=f"exact enumeration with shared commitments: {len(relevant)} co-locations "
                                     f"that could beat the plan apart, {len(best_pack)} used" +
                                     (f", {skipped} past the enumeration's caps (bounded)" if skipped else ""))
    return sol
