"""Lower bounds on a plan's cost that split by workload, for the placement search (``optimizer.planning.solve``)
where the exact enumerations do not apply: workloads that may share a reservation, a savings plan or a capacity
block, and training jobs beside serving.

Spreading every sized purchase over the hours it covers
=======================================================

The MILP (``optimizer.planning.milp``) couples the workloads only through what they may share: committed instances
(``sharing`` rows), savings-plan dollars per hour (``plan`` rows), capacity-block instances, spot caps, quotas and
budgets. Drop the last three (a relaxation) and charge each shared purchase by its use:

* a reservation slot s of offer o, N_s instances bought at cost c_s over the horizon, covering hours H_s of the
  horizon (its periods' blocks x months): in each covered block b the instances used u_sb <= N_s, so
  c_s N_s >= sum_b H_b u_sb c_s / H_s. An instance of o used in any block costs at least
  rate_o = min_s c_s / H_s per hour of use (the cost spread evenly over every hour it could serve);
* a savings-plan slot of scope q, v USD/h committed at cost cost_s v over the horizon (``plan_slot_cost``),
  covering hours H_s: the use at the plan's rates in each covered block is <= v, so a unit of a savings-plan
  candidate costs at least its plan rate x min_s cost_s / H_s per hour;
* a capacity block is paid for whole days of whole windows: at least its USD per instance-hour for each hour used;
* on-demand, spot and flex-start units cost their USD per hour.

Every unit then has a price per hour of use, and the plan's cost is at least the sum over workloads of what each
alone pays at those prices — the purchases' cost is spread over all their users, whoever they are. That sum splits:

* a serving workload w placed in group g: in each block b where it runs, the cheapest integer combination of units
  meeting the demand d_wb, min_replicas replicas and instances (non-spot unless spot_only_ok), times H_b — the
  Pareto frontiers of :mod:`optimizer.planning.exact` (:func:`~optimizer.planning.exact.frontier`,
  :func:`floor_staircase`, the one entry of :func:`~optimizer.planning.exact.hourly_table` a bound needs). :meth:`SpreadMinima.best` takes the least over the groups a
  node of the placement search allows;
* a training job (cost objective: it must finish): its work W_w over the cheapest throughput-hour of its
  candidates, W_w / (3600 th_c) x rate_c (the hours before its deadline, its scale and the blocks' granularity
  only add to it) — :meth:`SpreadMinima.training`.

These bounds hold for any problem of the planner with the cost objective; they are exact where nothing is shared
and every commitment would be used in every hour, and weaker as idle committed hours grow. The placement search
takes the larger of this and its other bounds.
"""

from __future__ import annotations

import math
from typing import Any

from optimizer.planning.exact import TOL, TooBig, frontier, frontier_deadline, hourly_units
from optimizer.planning.problem import (CAPACITY_BLOCK, FleetProblem, placement_part, purchase_kind, savings_plan_scope,
                                       workload_group)


def floor_staircase(front: dict, m: int):
    """(capacities ascending, cheapest cost of a combination with at least that capacity) over the classes of the
    hourly frontier ``front`` (exact.frontier) that meet both floors ``m``: exact.hourly_table's ``(m, m)`` entry
    without the other (m+1)^2 - 1 entries (issue 33: with --min-replicas 100 building them all ran past the time
    limit)."""
    import numpy as np

    pts = [s for (r, i), lst in front.items() if r >= m and i >= m for s in lst]
    if not pts:
        return np.zeros(0), np.zeros(0)
    pts.sort(key=lambda s: (s[0], s[1]))
    caps = np.array([s[0] for s in pts])
    cost = np.array([s[1] for s in pts])
    return caps, np.minimum.accumulate(cost[::-1])[::-1]


class SpreadMinima:
    """Per-workload lower bounds (USD over the horizon) with every sized purchase charged per hour of use (module
    docstring). ``problem``: a FleetProblem with the cost objective (``ok`` is False otherwise: nothing is
    bounded); ``allowed``: the pricing models of the solve (None: all).

    :meth:`best` (serving workload, groups) and :meth:`training` (all training jobs) are cached; a frontier past
    the enumeration's caps falls back to the per-block cheapest USD per throughput-hour, still a bound.
    """

    def __init__(self, problem: FleetProblem, allowed: set[str] | None = None,
                 deadline: float | None = None) -> None:
        import numpy as np

        self.problem, self.allowed, self.deadline = problem, allowed, deadline
        self.ok = problem.objective == "cost"
        blocks = problem.blocks
        self.hours = np.array([b.hours * problem.months(b) for b in blocks]) if self.ok else np.zeros(0)
        self._rate: dict[str, float | None] = {}
        self._plan_factor: dict[str, float | None] = {}
        self._groups: dict[str, dict[Any, tuple]] = {}
        self._exact: dict[tuple[str, Any], float] = {}
        self._training: float | None = None

    # ------------------------------------------------------------------------------------------ prices per hour
    def _covered_hours(self, start_month: int, end_month: int) -> float:
        """Hours of the horizon's blocks (x months) in the periods a term [start, end) covers."""
        pr = self.problem
        inside = {p.index for p in pr.periods or [] if start_month <= p.start_month and p.end_month <= end_month}
        return float(sum(h for b, h in zip(pr.blocks, self.hours) if b.period in inside))

    def unit_rate(self, c) -> float | None:
        """Least USD per hour of use of one unit of candidate ``c`` (module docstring), None when it cannot be used
        (a committed or savings-plan offer with no slot covering a block)."""
        pr = self.problem
        kind = purchase_kind(c.offer)
        if kind == CAPACITY_BLOCK:
            return float(c.offer["usd_per_hour"]) * float(c.instances_per_unit)
        if kind == "savings_plan":
            scope = savings_plan_scope(c.offer)
            if scope not in self._plan_factor:
                f = [pr.plan_slot_cost(s) / h for s in pr.plan_slots.values() if s.scope == scope
                     for h in (self._covered_hours(s.start_month, s.end_month),) if h > 0]
                self._plan_factor[scope] = min(f) if f else None
            f = self._plan_factor[scope]
            return None if f is None else float(c.usd_per_unit_hour) * f
        if c.committed:
            if c.okey not in self._rate:
                r = [pr.slot_cost(pr.slots[k]) / h for k in pr.slots_of(c.okey)
                     for h in (self._covered_hours(pr.slots[k].start_month, pr.slots[k].end_month),) if h > 0]
                self._rate[c.okey] = min(r) if r else None
            r = self._rate[c.okey]
            return None if r is None else r * float(c.instances_per_unit)
        return float(c.usd_per_unit_hour)

    # ------------------------------------------------------------------------------------------------ serving
    def _setup(self, w) -> dict[Any, tuple]:
        """group -> (units (throughput, replicas, instances, USD/h[, most]), cheapest USD per throughput-hour,
        cheapest unit USD/h) of serving workload ``w``; plus the key None -> (demand, busy) arrays."""
        import numpy as np

        if w.name in self._groups:
            return self._groups[w.name]
        pr, allowed = self.problem, self.allowed
        by_group: dict[Any, list] = {}
        for c in pr.cands.get(w.name, []):
            if allowed is not None and c.offer["pricing"] not in allowed:
                continue
            if c.throughput_per_unit <= 0:
                continue
            by_group.setdefault(workload_group(pr, w, c), []).append(c)
        active = np.array([pr.active(w, b) for b in pr.blocks], dtype=bool)
        demand = np.array([float(b.demand.get(w.name, 0.0)) for b in pr.blocks]) * active
        busy = active & ((demand > 0) | (w.min_replicas > 0))
        out: dict[Any, tuple] = {None: (demand, busy)}
        for g, cs in by_group.items():
            hourly = [c for c in cs if c.offer["pricing"] == "spot" or
                      (not c.committed and not purchase_kind(c.offer))]
            units = hourly_units(w, hourly, pr.spot_capacity)
            hourly_ids = {id(c) for c in hourly}
            for c in cs:
                if id(c) in hourly_ids:  # by identity: equality would compare every offer's dict
                    continue
                r = self.unit_rate(c)
                if r is not None:
                    units.append((c.throughput_per_unit, int(c.replicas_per_unit), int(c.instances_per_unit), r))
            if units:
                per_tp = min(u[3] / u[0] for u in units)
                floor_unit = min((u[3] for u in units if u[1] > 0 and u[2] > 0), default=math.inf)
                out[g] = (units, per_tp, floor_unit)
        self._groups[w.name] = out
        return out

    def _cheap(self, w, g) -> float:
        """A quick bound of ``w`` in ``g``: each busy block at the cheapest USD per throughput-hour, and at least one
        unit that counts towards the floors where min_replicas > 0."""
        import numpy as np

        demand, busy = self._setup(w)[None]
        _units, per_tp, floor_unit = self._setup(w)[g]
        floor = np.where(busy & (w.min_replicas > 0), floor_unit, 0.0)
        return float(np.maximum(per_tp * demand, floor) @ self.hours)

    def exact(self, w, g) -> float:
        """The bound of ``w`` alone in group ``g`` (module docstring): the cheapest cover of every busy block at the
        units' prices per hour; math.inf when no combination meets a block."""
        import numpy as np

        key = (w.name, g)
        if key in self._exact:
            return self._exact[key]
        demand, busy = self._setup(w)[None]
        units, _per_tp, _fu = self._setup(w)[g]
        m = int(w.min_replicas)
        val = 0.0
        if busy.any() and w.redundancy > 0 and (demand > 0).any():
            val = self._exact_n1(w, units, demand, busy, m)
        elif busy.any():
            table = self._staircase(units, float(demand.max(initial=0.0)), m)
            if table is None:
                val = self._cheap(w, g)
            else:
                caps, order = table
                need = demand[busy] * (1.0 - TOL)
                idx = np.searchsorted(caps, need, side="left") if len(caps) else np.full(len(need), 0)
                if len(caps) == 0 or (idx >= len(caps)).any():
                    val = math.inf
                else:
                    val = float(order[idx] @ self.hours[busy])
        self._exact[key] = val
        return val

    def _staircase(self, units, need: float, m: int):
        """(capacities, cheapest hourly cost of each) of ``units`` covering up to ``need`` with floor ``m``
        (exact.frontier within this bound's deadline), or None when the frontier is too big."""
        frontier_deadline(self.deadline)
        try:
            front = frontier(units, need, m)
        finally:
            frontier_deadline(None)
        if front is None:
            return None
        return floor_staircase(front, m)

    def _exact_n1(self, w, units, demand, busy, m) -> float:
        """:meth:`exact` under an N+1 rule (issue 26), block by block: the least over thresholds t of the units'
        failure losses (throughput / min(replicas, instances)) of the cheapest cover, by the units losing at most t,
        of max(d, s x d + t) -- in each block the plan's own largest loss is one such t, so this is a lower bound of
        the workload alone (the model's loss is one over the whole month, at least each block's)."""
        import numpy as np

        def loss(u) -> float:
            return float(u[0]) / max(1.0, float(min(u[1], u[2]) or 1))
        s = float(w.redundancy)
        best = np.full(int(busy.sum()), np.inf)
        d = demand[busy]
        levels = sorted({loss(u) for u in units})
        hb = self.hours[busy]
        floor = m > 0

        def low_of(t):
            # per block, what the units losing at most t cost at least: the cheapest USD per throughput-hour among
            # them times need(t), and one unit that counts towards the floor (cheap: no frontier; a first user's
            # --budget run spent 14 s in frontiers of every unit)
            sub = [u for u in units if loss(u) <= t + 1e-9]
            per_tp = min(u[3] / u[0] for u in sub)
            fu = min((u[3] for u in sub if u[1] > 0 and u[2] > 0), default=math.inf)
            need = np.where(d > 0, np.maximum(d, s * d + t), d)
            return np.maximum(per_tp * need, fu if floor else 0.0)
        lows = {t: low_of(t) for t in levels}
        # the thresholds in the order of their lower bound: the first ones set the best, the rest are skipped when
        # their bound is no lower in any block
        for t in sorted(levels, key=lambda t: (float(np.where(np.isfinite(lows[t]), lows[t], 1e18) @ hb), t)):
            if (lows[t] >= best - 1e-9).all():
                continue
            need = np.where(d > 0, np.maximum(d, s * d + t), d)
            sub = [u for u in units if loss(u) <= t + 1e-9]
            table = self._staircase(sub, float(need.max(initial=0.0)), m)
            if table is None:
                raise TooBig(w.name)  # best() falls back to the quick bound
            caps, order = table
            if not len(caps):
                continue
            idx = np.searchsorted(caps, need * (1.0 - TOL), side="left")
            cost = np.where(idx < len(caps), order[np.minimum(idx, len(caps) - 1)], np.inf)
            best = np.minimum(best, cost)
        if not np.isfinite(best).all():
            return math.inf
        return float(best @ self.hours[busy])

    def best(self, w, groups=None) -> tuple[float] | None:
        """(the least bound of serving workload ``w`` over ``groups``,) (default: every group it has), or None when
        no group can hold it. Groups are tried in the order of their quick bound, stopping when that is not below
        the best found."""
        setup = self._setup(w)
        gs = [g for g in setup if g is not None and (groups is None or placement_part(g) in groups)]
        best = math.inf
        for g in sorted(gs, key=lambda g: (self._cheap(w, g), str(g))):
            if self._cheap(w, g) >= best - 1e-9:
                break
            try:
                best = min(best, self.exact(w, g))
            except TooBig:
                best = min(best, self._cheap(w, g))
        return None if not math.isfinite(best) else (best,)

    def needs_nothing(self, w) -> bool:
        """``w`` has no demand and no redundancy floor in any block it runs: its plan is no units."""
        _demand, busy = self._setup(w)[None]
        return not busy.any()

    # ----------------------------------------------------------------------------------------------- training
    def job(self, w) -> float:
        """Least cost (USD) of training job ``w``'s work at its candidates' prices per hour of use (0 without work
        or candidates with a throughput)."""
        need = float(self.problem.work_flops.get(w.name, 0.0))
        if need <= 0:
            return 0.0
        best = math.inf
        for c in self.problem.cands.get(w.name, []):
            if self.allowed is not None and c.offer["pricing"] not in self.allowed:
                continue
            if c.throughput_per_unit <= 0:
                continue
            r = self.unit_rate(c)
            if r is not None:
                best = min(best, need / (c.throughput_per_unit * 3600.0) * r)
        return best if math.isfinite(best) else 0.0

    def training(self) -> float:
        """The sum of :meth:`job` over the problem's training jobs (USD; 0 unless the objective is cost)."""
        if self._training is None:
            self._training = sum(self.job(w) for w in self.problem.workloads if w.training) if self.ok else 0.0
        return self._training


class JobBounds:
    """The training jobs' least cost beside the serving workloads' exact minima (the placement search's bound when
    its serving workloads are separable, ``optimizer.planning.exact.GroupMinima``).

    Split the plan's cost in two: the commitments serving could use in the node (offers of the serving workloads'
    candidates in the groups it allows) with the serving workloads' hourly units — at least the serving exact
    minimum, the serving workloads' plan being one of its plans — and the rest: the jobs' hourly units, their
    capacity blocks and savings plans, and the commitments no serving workload could use. A job that does its work
    W on candidate c (throughput th, k instances a unit) pays in that rest:

    * hourly: W / (3600 th) x USD per unit-hour; a capacity block or savings plan: the same at its price per hour of
      use (:meth:`SpreadMinima.unit_rate`);
    * a commitment serving could use: nothing (serving pays for it);
    * a commitment o only jobs use: N_o instances held through the job's usable hours T (before its deadline), at
      least its average use W k / (3600 th T), each at least s_o, the cheapest slot's cost; n_o jobs may share
      them, so each is charged s_o W k / (3600 th T n_o) (the instances cover the busiest of them: their sum over
      the n_o jobs is at most s_o N_o).

    Each charge is linear in the share of the work done on c, so a job splitting its work pays at least the least
    of them: :meth:`total` sums that least over the jobs. 0 for a job without work (ROI objective: none)."""

    def __init__(self, problem: FleetProblem, allowed: set[str] | None = None) -> None:
        self.problem = problem
        spread = SpreadMinima(problem, allowed)
        self.jobs: list[tuple[float, float, frozenset[str]]] = []  # (hourly least, job-only least, its offers)
        if problem.objective != "cost":
            return
        users: dict[str, set[str]] = {}
        for w in problem.workloads:
            if w.training:
                for c in problem.cands.get(w.name, []):
                    if c.committed and (allowed is None or c.offer["pricing"] in allowed):
                        users.setdefault(c.okey, set()).add(w.name)
        slot_min = {}
        for s in problem.slots.values():
            slot_min[s.okey] = min(slot_min.get(s.okey, math.inf), problem.slot_cost(s))
        for w in problem.workloads:
            need = float(problem.work_flops.get(w.name, 0.0)) if w.training else 0.0
            if need <= 0:
                continue
            usable = sum(problem.before_deadline(w, b) * problem.months(b) for b in problem.blocks)
            hourly, committed = math.inf, []
            for c in problem.cands.get(w.name, []):
                if c.throughput_per_unit <= 0 or (allowed is not None and c.offer["pricing"] not in allowed):
                    continue
                unit_hours = need / (3600.0 * c.throughput_per_unit)
                if c.committed:
                    if usable > 0 and c.okey in slot_min:
                        committed.append((c.okey, slot_min[c.okey] * unit_hours * c.instances_per_unit
                                          / usable / len(users[c.okey])))
                    else:
                        committed.append((c.okey, 0.0))
                else:
                    r = spread.unit_rate(c)
                    if r is not None:
                        hourly = min(hourly, unit_hours * r)
            self.jobs.append((hourly, min((x for _, x in committed), default=math.inf),
                              frozenset(o for o, _ in committed)))

    def total(self, serving_offers: set[str]) -> float:
        """The jobs' least cost (USD) when the commitments of ``serving_offers`` (offer keys) are paid by serving."""
        out = 0.0
        for hourly, own, offers in self.jobs:
            if not offers.isdisjoint(serving_offers):
                continue  # it may run on what serving pays for
            best = min(hourly, own)
            out += best if math.isfinite(best) else 0.0
        return out
