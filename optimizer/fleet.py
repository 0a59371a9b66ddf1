"""The full planning model: several workloads, demand over time blocks, a committed base shared by the workloads,
on-demand and capped spot capacity per block, minimum cost or maximum ROI (DESIGN.md "The planning model").

Build, solve and explain are separate (:func:`build_fleet_model`, :func:`solve_fleet`, :func:`explain_fleet`);
:func:`plan_fleet` runs them with pruning, strategies and explanations.

The model
=========

Sets
    w in W: workloads (serving, or training-like: train / finetune / lora); b in B: time blocks of the planned month
    (merged blocks of the demand profiles, each lasting h_b hours, starting at s_b; sum_b h_b = 730);
    o in O_c: committed offers (reserved 1y/3y); o in O_h: hourly offers (on-demand, spot); C_w: the offers that
    can host a replica of w (sizing), each with a unit of k_wo instances holding r_wo replicas and throughput th_wo
    per unit (tokens/s for serving; FLOP/s for training; spot reduced by the interruption overhead).

Variables
    N_o   in Z+     committed instances of o in O_c, billed 730 h a month whatever the use
    A_wob >= 0      units of w placed on the committed instances of o in block b
    X_wob >= 0      units of w on hourly offer o running through block b
    (integer for serving workloads; continuous for training-like ones, whose work can be time-sliced)
    S_wb  >= 0      served demand of serving workload w in block b (ROI only; otherwise S_wb = d_wb)
    Z_w in {0,1}    training job w completed (ROI only; otherwise 1)

Constraints
    sharing:        sum_w k_wo A_wob <= N_o                                for o in O_c, every b
    spot capacity:  sum_w k_wo X_wob <= cap_o                              for spot o, every b
    serving:        sum_o th_wo (A_wob + X_wob) >= S_wb,  S_wb = d_wb (cost) or S_wb <= d_wb (ROI)
    redundancy:     sum_o r_wo (A_wob + X_wob) >= m_w, and without spot: >= m_w unless spot_only_ok
    training:       sum_{b before the deadline} sum_o th_wo 3600 h_b (A_wob + X_wob) >= W_w Z_w
    budget:         cost <= budget (USD per month)

Objective
    cost  = sum_o p_o 730 N_o + sum_{w,o in O_h,b} p_o k_wo h_b X_wob
    value = sum_{serving w} v_w 3600 h_b S_wb / 1e6 + sum_{training w} V_w Z_w
    minimize cost; or maximize ROI = (value - cost) / cost = value / cost - 1 exactly by Dinkelbach iterations:
    lambda_0 = 0; solve max value - lambda cost; lambda <- value / cost; stop when the optimum is ~0.

The fleet is a recurring monthly plan: a reservation is billed per month, because the committed base serves the
workloads every month (a one-off job planned alone goes through optimizer.plan, which charges the whole term).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.errors import InputError
from gpuopt.records import HOURS_PER_MONTH, TERM_HOURS, is_estimated
from optimizer.explain import on_demand_rates
from optimizer.model import COMMITTED, Candidate, candidates_for

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pulp

    from optimizer.sizing import Workload

TRAINING_TASKS = frozenset({"train", "finetune", "lora"})

#: Instances of one spot offer the plan may count on in a block (spot capacity is never guaranteed).
DEFAULT_SPOT_CAPACITY = 16


@dataclass
class FleetBlock:
    """A time block of the planned month: ``start_hour`` from the month start, ``hours`` long, ``demand`` per
    serving workload (tokens/s). ``label`` names it (e.g. "hour 9" or "Mon 09:00 +3 merged")."""

    start_hour: float
    hours: float
    demand: dict[str, float]
    label: str = ""
    end_hour: float | None = None  # a block spread over a stretch [start_hour, end_hour) (a repeating hour of a
    #                                daily/weekly profile): its hours are spread evenly over the stretch


@dataclass
class FleetWorkload:
    """One workload of the fleet: its sizing input and its planning terms.

    Attributes: name; workload (optimizer.sizing.Workload); allow_spot; min_replicas; spot_only_ok;
    deadline_hours (training: hours from the month start); value_per_million_tokens (serving, USD);
    value_usd (training, USD for the finished job).
    """

    name: str
    workload: "Workload"
    allow_spot: bool = False
    min_replicas: int = 0
    spot_only_ok: bool = False
    deadline_hours: float | None = None
    value_per_million_tokens: float | None = None
    value_usd: float | None = None
    divisible: bool = False  # demand met by fractions of units (a review's instance-hours), not whole replicas

    @property
    def training(self) -> bool:
        return self.workload.task in TRAINING_TASKS


@dataclass
class FleetProblem:
    """Everything the fleet MILP needs (after candidates and pruning)."""

    workloads: list[FleetWorkload]
    blocks: list[FleetBlock]
    cands: dict[str, list[Candidate]]          # workload name -> candidates (units)
    work_flops: dict[str, float]               # training workload -> FLOPs
    budget_usd: float | None = None
    objective: str = "cost"
    spot_capacity: int = DEFAULT_SPOT_CAPACITY
    pruned: int = 0
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    unpruned: dict[str, list[Candidate]] | None = None   # every candidate, for strategies over other pricing sets
    max_instances: int | None = None                      # quota per instance type and region (instances)

    @property
    def recurring(self) -> bool:
        """A plan with a serving workload is a recurring monthly fleet (reservations billed per month); a plan of
        training jobs only is one-off: a reservation is charged its whole term (nothing else will use it)."""
        return any(not w.training for w in self.workloads)

    def commit_hours(self, offer: dict[str, Any]) -> float:
        """Hours of a committed offer the plan pays for: 730 a month (recurring) or the whole term (one-off)."""
        return HOURS_PER_MONTH if self.recurring else TERM_HOURS[offer["pricing"]]

    def committed_offers(self) -> dict[str, dict[str, Any]]:
        """offer key -> offer dict, for every committed offer some workload can use."""
        out = {}
        for cs in self.cands.values():
            for c in cs:
                if c.committed:
                    out[_okey(c.offer)] = c.offer
        return dict(sorted(out.items()))

    def before_deadline(self, w: FleetWorkload, b: FleetBlock) -> float:
        """Hours of block b before w's deadline: a contiguous block [start, start + hours) counts its part before
        the deadline; a block spread over a stretch [start, end) counts its hours in proportion (demand profiles
        are split at every deadline, so in a plan this is all or nothing)."""
        d = w.deadline_hours if w.deadline_hours is not None else HOURS_PER_MONTH
        end = b.end_hour if b.end_hour is not None else b.start_hour + b.hours
        if end <= b.start_hour:
            return 0.0
        share = max(0.0, min(end, d) - b.start_hour) / (end - b.start_hour)
        return b.hours * min(1.0, share)


def _okey(o: dict[str, Any]) -> str:
    return "|".join(str(o.get(c) or "") for c in ("provider", "region", "zone", "instance_type", "pricing", "payment"))


# ------------------------------------------------------------------------------------------------ pruning
def _shape(c: Candidate) -> tuple:
    o = c.offer
    return (o["gpu_model"], float(o["gpu_count"]), c.shape, str(o["interconnect"]))


def _dominates(o2: dict[str, Candidate], o1: dict[str, Candidate], p2: float, p1: float) -> bool:
    """Offer o2 can replace offer o1 for every workload o1 can host, at no more cost. (o2/o1 map workload name ->
    that workload's candidate on the offer.) Two ways:

    - unit for unit: o2 costs no more per hour and, for each workload, its unit uses no more instances and gives
      no less throughput and no fewer replicas;
    - m instances for one (single-instance units on both): m x o2 costs no more than o1 and, for each workload,
      m units of o2 give at least o1's throughput and replicas — e.g. GCP a2-ultragpu-4g is exactly two
      a2-ultragpu-2g at twice the price, so the 4g never needs to be considered (the 2g pair can do all it does).
    """
    if not o1:
        return False
    m = 1
    for w, c1 in o1.items():
        c2 = o2.get(w)
        if c2 is None:
            return False
        if c2.instances_per_unit == 1 and c1.instances_per_unit == 1:
            need = max(math.ceil(c1.throughput_per_unit / c2.throughput_per_unit * (1 - 1e-12)),
                       math.ceil(c1.replicas_per_unit / c2.replicas_per_unit))
            m = max(m, need)
        elif c2.instances_per_unit > c1.instances_per_unit or \
                c2.throughput_per_unit < c1.throughput_per_unit * (1 - 1e-12) or c2.replicas_per_unit < c1.replicas_per_unit:
            return False
    if m > 1 and any(c.instances_per_unit != 1 for c in list(o1.values()) + list(o2.values())):
        return False
    return m * p2 <= p1 * (1 + 1e-9)


def prune_fleet(cands: dict[str, list[Candidate]], workloads: list[FleetWorkload], blocks: list[FleetBlock],
                work_flops: dict[str, float], spot_capacity: int) -> tuple[dict[str, list[Candidate]], int]:
    """Drop candidates that can never improve the plan (safe rules only; DESIGN.md "Pruning must be safe").

    - committed offers are shared by the workloads: offer o1 is dropped when another committed offer o2 dominates it
      (:func:`_dominates`: no dearer, and for EVERY workload o1 can host, o2 hosts it unit for unit with no more
      instances, no less throughput and no fewer replicas): replacing each o1 instance by an o2 instance keeps
      every constraint and does not raise the cost. Ties keep the first by key.
    - on-demand offers (uncapped, billed per block): per workload, a Pareto front of (USD per unit-hour, throughput)
      for serving; for training (continuous) only the lowest USD per unit of work;
    - spot offers are capped at ``spot_capacity`` instances each: a spot offer is dropped only when the spot offers
      that dominate it (same rule) have, together, the capacity for the peak need of every spot-eligible workload
      (so the cap can never make the dropped offer necessary).
    Returns (kept candidates per workload, number dropped).
    """
    before = sum(len(v) for v in cands.values())
    by_offer: dict[str, dict[str, Candidate]] = {}
    offer_of: dict[str, dict[str, Any]] = {}
    for w, cs in cands.items():
        for c in cs:
            k = _okey(c.offer)
            by_offer.setdefault(k, {})[w] = c
            offer_of[k] = c.offer

    def price(k: str) -> float:
        return float(offer_of[k]["usd_per_hour"])

    committed = sorted((k for k in by_offer if offer_of[k]["pricing"] in COMMITTED), key=lambda k: (price(k), k))
    keep_commit: list[str] = []
    for k in committed:  # cheapest first: a dominator always comes before what it dominates
        if not any(_dominates(by_offer[j], by_offer[k], price(j), price(k)) for j in keep_commit):
            keep_commit.append(k)
    need = 0.0
    for w in workloads:
        if w.allow_spot:
            spot_c = [c for c in cands.get(w.name, []) if c.offer["pricing"] == "spot"]
            if spot_c:
                need += max(_peak_units(w, c, blocks, work_flops) * c.instances_per_unit for c in spot_c)
    spots = sorted((k for k in by_offer if offer_of[k]["pricing"] == "spot"), key=lambda k: (price(k), k))
    keep_spot: list[str] = []
    for k in spots:
        doms = [j for j in keep_spot if _dominates(by_offer[j], by_offer[k], price(j), price(k))]
        if len(doms) * spot_capacity >= need - 1e-9 and doms:
            continue
        keep_spot.append(k)
    keep = set(keep_commit) | set(keep_spot)
    out: dict[str, list[Candidate]] = {}
    for w in workloads:
        cs = cands.get(w.name, [])
        od = [c for c in cs if c.offer["pricing"] == "on_demand"]
        if w.training:
            od = [min(od, key=lambda c: (c.usd_per_unit_hour / c.throughput_per_unit, _okey(c.offer)))] if od else []
        else:
            front, best = [], -1.0
            for c in sorted(od, key=lambda c: (c.usd_per_unit_hour, -c.throughput_per_unit, _okey(c.offer))):
                if c.throughput_per_unit > best * (1 + 1e-12):
                    front.append(c)
                    best = c.throughput_per_unit
            # uncapped and billed per block: an offer that m copies of a cheaper one match is never needed
            od = [c for c in front if not any(
                d is not c and _dominates({w.name: d}, {w.name: c}, d.usd_per_unit_hour, c.usd_per_unit_hour)
                for d in front if (d.usd_per_unit_hour, _okey(d.offer)) < (c.usd_per_unit_hour, _okey(c.offer)))]
        out[w.name] = od + [c for c in cs if c.offer["pricing"] != "on_demand" and _okey(c.offer) in keep]
    return out, before - sum(len(v) for v in out.values())


def _peak_units(w: FleetWorkload, c: Candidate, blocks: list[FleetBlock], work_flops: dict[str, float]) -> float:
    """Units of candidate c that w could need at most in one block (an upper bound used by spot pruning)."""
    if w.training:
        hours = sum(b.hours for b in blocks if b.start_hour < (w.deadline_hours or HOURS_PER_MONTH))
        return math.ceil(work_flops[w.name] / (c.throughput_per_unit * 3600.0 * max(hours, 1e-9))) + 1
    peak = max((b.demand.get(w.name, 0.0) for b in blocks), default=0.0)
    return max(math.ceil(peak / c.throughput_per_unit), math.ceil(w.min_replicas / max(c.replicas_per_unit, 1)))


# ------------------------------------------------------------------------------------------------ the MILP
@dataclass
class FleetVars:
    """The model's variables, keyed for reading the solution."""

    N: dict[str, Any] = field(default_factory=dict)                    # committed offer key -> var
    A: dict[tuple[str, str, int], Any] = field(default_factory=dict)   # (workload, offer key, block) -> var
    X: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    S: dict[tuple[str, int], Any] = field(default_factory=dict)
    Z: dict[str, Any] = field(default_factory=dict)
    cost_terms: dict[Any, float] = field(default_factory=dict)
    value_terms: dict[Any, float] = field(default_factory=dict)


def build_fleet_model(problem: FleetProblem, *, lam: float | None = None, relax: bool = False,
                      allowed: set[str] | None = None) -> tuple["pulp.LpProblem", FleetVars]:
    """Write the fleet MILP of the module docstring.

    Args:
        problem: the FleetProblem.
        lam: None for minimum cost; for ROI (Dinkelbach step), maximize value - lam x cost.
        relax: the LP relaxation (continuous N, A, X, Z) — for the duals of the explanation.
        allowed: pricing models allowed in this solve (strategies), default every candidate's.
    Returns: (model, variables). Constraint names: share_<i>_<b>, spot_<i>_<b>, demand_<w>_<b>, minrep_<w>_<b>,
        work_<w>, budget.
    """
    import pulp

    roi = lam is not None
    m = pulp.LpProblem("gpuopt_fleet", pulp.LpMaximize if roi else pulp.LpMinimize)
    V = FleetVars()
    cat_int = pulp.LpContinuous if relax else pulp.LpInteger
    commits = problem.committed_offers()
    if allowed is not None:
        commits = {k: o for k, o in commits.items() if o["pricing"] in allowed}
    for i, (k, o) in enumerate(commits.items()):
        V.N[k] = pulp.LpVariable(f"N_{i}", lowBound=0, cat=cat_int)
        V.cost_terms[V.N[k]] = float(o["usd_per_hour"]) * problem.commit_hours(o)
    share: dict[tuple[str, int], dict] = {}
    spot: dict[tuple[str, int], dict] = {}
    vid = 0
    for w in problem.workloads:
        cat = pulp.LpContinuous if (w.training or w.divisible or relax) else pulp.LpInteger
        cands = [c for c in problem.cands.get(w.name, []) if allowed is None or c.offer["pricing"] in allowed]
        work_terms: dict = {}
        for bi, b in enumerate(problem.blocks):
            cap_terms: dict = {}
            rep_terms: dict = {}
            rep_nonspot: dict = {}
            usable = b.hours if not w.training else problem.before_deadline(w, b)
            if w.training and usable <= 0:
                continue
            for c in cands:
                ok = _okey(c.offer)
                vid += 1
                if c.committed:
                    if ok not in V.N:
                        continue
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    share.setdefault((ok, bi), {})[v] = float(c.instances_per_unit)
                else:
                    v = pulp.LpVariable(f"X_{vid}", lowBound=0, cat=cat)
                    V.X[(w.name, ok, bi)] = v
                    V.cost_terms[v] = c.usd_per_unit_hour * b.hours
                    if c.offer["pricing"] == "spot":
                        spot.setdefault((ok, bi), {})[v] = float(c.instances_per_unit)
                if w.training:
                    work_terms[v] = c.throughput_per_unit * 3600.0 * usable
                else:
                    cap_terms[v] = c.throughput_per_unit
                    rep_terms[v] = float(c.replicas_per_unit)
                    if c.offer["pricing"] != "spot":
                        rep_nonspot[v] = float(c.replicas_per_unit)
            if w.training:
                continue
            d = float(b.demand.get(w.name, 0.0))
            tag = f"{_safe(w.name)}_{bi}"
            if roi:
                s = pulp.LpVariable(f"S_{tag}", lowBound=0, upBound=d)
                V.S[(w.name, bi)] = s
                V.value_terms[s] = (w.value_per_million_tokens or 0.0) * 3600.0 * b.hours / 1e6
                m += pulp.LpAffineExpression({**cap_terms, s: -1.0}) >= 0, f"demand_{tag}"
            elif d > 0:
                scale = 1000.0 / d
                m += pulp.LpAffineExpression({v: min(a * scale, 1000.0) if cat == pulp.LpInteger else a * scale
                                              for v, a in cap_terms.items()}) >= 1000.0, f"demand_{tag}"
            if w.min_replicas > 0:
                m += pulp.LpAffineExpression(rep_terms) >= w.min_replicas, f"minrep_{tag}"
                if not w.spot_only_ok:
                    m += pulp.LpAffineExpression(rep_nonspot) >= w.min_replicas, f"minrep_nonspot_{tag}"
        if w.training:
            need = float(problem.work_flops[w.name])
            if roi:
                z = pulp.LpVariable(f"Z_{_safe(w.name)}", cat=pulp.LpContinuous if relax else pulp.LpBinary)
                V.Z[w.name] = z
                V.value_terms[z] = float(w.value_usd or 0.0)
                m += pulp.LpAffineExpression({**{v: a / need * 1000.0 for v, a in work_terms.items()}, z: -1000.0}) >= 0, \
                    f"work_{_safe(w.name)}"
            else:
                m += pulp.LpAffineExpression({v: a / need * 1000.0 for v, a in work_terms.items()}) >= 1000.0, \
                    f"work_{_safe(w.name)}"
    if problem.max_instances is not None:
        idx = _cand_index(problem)
        groups: dict[tuple, list] = {}
        for k, var in V.N.items():
            o = commits[k]
            groups.setdefault((o["provider"], o["region"], o["instance_type"]), []).append((var, 1.0, None))
        for (w, ok, bi), var in V.X.items():
            o = idx[(w, ok)].offer
            groups.setdefault((o["provider"], o["region"], o["instance_type"]), []).append(
                (var, float(idx[(w, ok)].instances_per_unit), bi))
        for gi, (g, items) in enumerate(sorted(groups.items())):
            for bi in range(len(problem.blocks)):
                terms: dict = {}
                for var, k_, b_ in items:
                    if b_ is None or b_ == bi:
                        terms[var] = terms.get(var, 0.0) + k_
                if terms:
                    m += pulp.LpAffineExpression(terms) <= float(problem.max_instances), f"quota_{gi}_{bi}"
    keys = list(V.N)
    for (ok, bi), terms in share.items():
        m += pulp.LpAffineExpression({**terms, V.N[ok]: -1.0}) <= 0, f"share_{keys.index(ok)}_{bi}"
    for j, ((ok, bi), terms) in enumerate(sorted(spot.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
        m += pulp.LpAffineExpression(terms) <= float(problem.spot_capacity), f"spot_{j}_{bi}"
    cost = pulp.LpAffineExpression(V.cost_terms)
    if problem.budget_usd is not None:
        m += cost <= float(problem.budget_usd) + 0.005, "budget"
    if roi:
        m += pulp.LpAffineExpression({**V.value_terms, **{v: -lam * a for v, a in V.cost_terms.items()}})
    else:
        m += cost
    return m, V


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


# ------------------------------------------------------------------------------------------------ solving
from optimizer.solve import _SOLVE_THREADS, SolveReport, _parse_cbc_log, resolve_solver  # noqa: E402,F401
from optimizer.solve import run_solver as solve_fleet  # noqa: E402  (the fleet's name for it)


@dataclass
class FleetSolution:
    """Variable values of a solved fleet model (non-zero only), its cost and value recomputed from them."""

    report: SolveReport
    N: dict[str, int] = field(default_factory=dict)
    A: dict[tuple[str, str, int], float] = field(default_factory=dict)
    X: dict[tuple[str, str, int], float] = field(default_factory=dict)
    S: dict[tuple[str, int], float] = field(default_factory=dict)
    Z: dict[str, float] = field(default_factory=dict)
    cost: float = 0.0
    value: float = 0.0


def _val(v) -> float:
    x = v.value()
    return 0.0 if x is None else float(x)


def read_solution(problem: FleetProblem, V: FleetVars, report: SolveReport) -> FleetSolution:
    """Read the variables (rounding integers) and recompute cost and value from them (not from the objective)."""
    sol = FleetSolution(report=report)
    if report.status not in ("optimal", "time_limit"):
        return sol
    for k, v in V.N.items():
        n = round(_val(v))
        if n > 0:
            sol.N[k] = n
    for store, src in ((sol.A, V.A), (sol.X, V.X)):
        for k, v in src.items():
            x = _val(v)
            if v.cat == "Integer":
                x = float(round(x))
            if x > 1e-9:
                store[k] = x
    for k, v in V.S.items():
        sol.S[k] = _val(v)
    for k, v in V.Z.items():
        sol.Z[k] = round(_val(v))
    sol.cost = fleet_cost(problem, sol)
    sol.value = fleet_value(problem, sol)
    return sol


def _cand_index(problem: FleetProblem) -> dict[tuple[str, str], Candidate]:
    return {(w, _okey(c.offer)): c for w, cs in problem.cands.items() for c in cs}


def fleet_cost(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD per month: committed instances x rate x 730 + hourly units x rate x k x block hours."""
    commits = problem.committed_offers()
    idx = _cand_index(problem)
    total = sum(float(commits[k]["usd_per_hour"]) * problem.commit_hours(commits[k]) * n for k, n in sol.N.items())
    for (w, ok, bi), x in sol.X.items():
        total += idx[(w, ok)].usd_per_unit_hour * problem.blocks[bi].hours * x
    return total


def fleet_value(problem: FleetProblem, sol: FleetSolution) -> float:
    """USD of value: served tokens x value per million + finished training jobs x their value."""
    byname = {w.name: w for w in problem.workloads}
    total = 0.0
    for w in problem.workloads:
        if w.training:
            done = sol.Z.get(w.name, 1.0 if problem.objective == "cost" else 0.0)
            total += (w.value_usd or 0.0) * done
        else:
            for bi, b in enumerate(problem.blocks):
                served = sol.S.get((w.name, bi), b.demand.get(w.name, 0.0))
                total += (byname[w.name].value_per_million_tokens or 0.0) * 3600.0 * b.hours * served / 1e6
    return total


def solve_cost(problem: FleetProblem, *, solver="auto", time_limit_s=60.0, gap_rel=0.001,
               allowed: set[str] | None = None) -> FleetSolution:
    """Minimum-cost plan (one MILP)."""
    m, V = build_fleet_model(problem, allowed=allowed)
    return read_solution(problem, V, solve_fleet(m, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel))


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
    for _ in range(max_iterations):
        m, V = build_fleet_model(problem, lam=lam)
        rep = solve_fleet(m, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        sol = read_solution(problem, V, rep)
        if rep.status not in ("optimal", "time_limit"):
            return (best or sol), its
        first = first or sol
        f = sol.value - lam * sol.cost
        its.append({"lambda": lam, "value": round(sol.value, 6), "cost": round(sol.cost, 6), "F": round(f, 6)})
        # keep the plan with the best value/cost so far: at the optimum lambda the empty plan also scores F = 0
        if sol.cost > 1e-9 and (best is None or sol.value / sol.cost > best.value / best.cost):
            best = sol
        if sol.cost <= 1e-9 or abs(f) <= tol * max(sol.cost, 1.0):
            break
        lam = sol.value / sol.cost
    if best is not None and best.value < best.cost and all(w.min_replicas <= 0 for w in problem.workloads):
        # every plan loses money (ROI < 0) and nothing is mandatory: buying nothing is the better answer
        return FleetSolution(report=best.report), its
    return (best or first), its  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ explaining
@dataclass
class FleetLine:
    """A line of a fleet plan. count: instances (committed: bought; hourly: the most running at once); hours:
    instance-hours per instance in the month (committed: 730); monthly_usd: this line's cost per month;
    utilization: committed lines, the share of their billed hours doing work; workloads: who uses the line."""

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
    workloads: list[str]
    utilization: float | None
    break_even_utilization: float | None
    upfront_usd: float
    commitment_usd: float
    source: str
    as_of: str
    estimated: bool


@dataclass
class FleetResult:
    """The fleet plan and its explanation (what `gpuopt recommend --workload plan.yaml` renders)."""

    status: str
    objective: str = "cost"
    recurring: bool = True
    lines: list[FleetLine] = field(default_factory=list)
    total_monthly_usd: float = 0.0
    value_usd: float | None = None
    net_value_usd: float | None = None
    roi: float | None = None
    dinkelbach: list[dict[str, float]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    savings_vs_on_demand_usd: float | None = None
    savings_vs_on_demand_pct: float | None = None
    commitment: dict[str, float] = field(default_factory=dict)
    marginal: dict[str, Any] = field(default_factory=dict)
    next_best: list[dict[str, Any]] = field(default_factory=list)
    demand_sensitivity: list[dict[str, Any]] = field(default_factory=list)
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


def fleet_lines(problem: FleetProblem, sol: FleetSolution, od_rates: dict) -> list[FleetLine]:
    """The plan's lines, dearest first."""
    idx = _cand_index(problem)
    commits = problem.committed_offers()
    lines = []
    for ok, n in sol.N.items():
        o = commits[ok]
        busy = 0.0
        users = set()
        for (w, k, bi), a in sol.A.items():
            if k == ok:
                busy += idx[(w, k)].instances_per_unit * a * problem.blocks[bi].hours
                users.add(w)
        term = TERM_HOURS[o["pricing"]]
        od = od_rates.get((o["provider"], o["region"], o["instance_type"]))
        lines.append(_line(o, n, problem.commit_hours(o), float(o["usd_per_hour"]) * problem.commit_hours(o) * n, sorted(users),
                           round(busy / (n * HOURS_PER_MONTH), 4), None if not od else round(float(o["usd_per_hour"]) / od, 4),
                           float(o.get("upfront_usd") or 0.0) * n, float(o["usd_per_hour"]) * term * n))
    hourly: dict[str, dict[str, Any]] = {}
    for (w, ok, bi), x in sol.X.items():
        c = idx[(w, ok)]
        h = hourly.setdefault(ok, {"offer": c.offer, "per_block": {}, "cost": 0.0, "users": set()})
        h["per_block"][bi] = h["per_block"].get(bi, 0.0) + x * c.instances_per_unit
        h["cost"] += c.usd_per_unit_hour * problem.blocks[bi].hours * x
        h["users"].add(w)
    for ok, h in hourly.items():
        peak = max(h["per_block"].values())
        count = max(1, math.ceil(peak - 1e-9))
        inst_hours = sum(v * problem.blocks[bi].hours for bi, v in h["per_block"].items())
        lines.append(_line(h["offer"], count, round(inst_hours / count, 2), h["cost"], sorted(h["users"]), None, None, 0.0, 0.0))
    lines.sort(key=lambda ln: (-ln.monthly_usd, ln.provider, ln.region, ln.instance_type))
    return lines


def _line(o, count, hours, cost, users, util, be, upfront, commitment) -> FleetLine:
    return FleetLine(provider=o["provider"], region=o["region"], zone=str(o.get("zone") or ""),
                     instance_type=o["instance_type"], pricing=o["pricing"], payment=str(o.get("payment") or ""),
                     count=int(count), hours=float(hours), usd_per_hour=float(o["usd_per_hour"]),
                     monthly_usd=round(cost, 2), gpu_model=o["gpu_model"], gpu_count=float(o["gpu_count"]),
                     gpu_memory_gib=float(o["gpu_memory_gib"]), workloads=users, utilization=util,
                     break_even_utilization=be, upfront_usd=round(upfront, 2), commitment_usd=round(commitment, 2),
                     source=str(o.get("source") or ""), as_of=str(o.get("as_of") or ""),
                     estimated=is_estimated(o.get("source") or ""))


def workload_summaries(problem: FleetProblem, sol: FleetSolution) -> tuple[list[dict], list[dict]]:
    """Per workload (capacity vs demand, work vs need, finish hour, replicas) and per block (demand vs capacity)."""
    idx = _cand_index(problem)
    cap: dict[tuple[str, int], float] = {}
    reps: dict[tuple[str, int], float] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            c = idx[(w, ok)]
            cap[(w, bi)] = cap.get((w, bi), 0.0) + c.throughput_per_unit * x
            reps[(w, bi)] = reps.get((w, bi), 0.0) + c.replicas_per_unit * x
    out_w = []
    for w in problem.workloads:
        d: dict[str, Any] = {"name": w.name, "task": w.workload.task, "model": w.workload.model.name,
                             "shapes": sorted({c.shape for c in problem.cands.get(w.name, [])})[:6]}
        if w.training:
            done = sum(cap.get((w.name, bi), 0.0) * 3600.0 * problem.before_deadline(w, b)
                       for bi, b in enumerate(problem.blocks))
            last = max((min(b.end_hour if b.end_hour is not None else b.start_hour + b.hours,
                            w.deadline_hours or HOURS_PER_MONTH)
                        for bi, b in enumerate(problem.blocks)
                        if cap.get((w.name, bi), 0) > 0 and problem.before_deadline(w, b) > 0),
                       default=0.0)
            d.update({"work_flops_needed": problem.work_flops[w.name], "work_flops_planned": done,
                      "deadline_hours": w.deadline_hours or HOURS_PER_MONTH, "finish_by_hour": round(last, 2),
                      "completed": bool(sol.Z.get(w.name, 1))})
        else:
            short = [bi for bi, b in enumerate(problem.blocks)
                     if cap.get((w.name, bi), 0.0) < b.demand.get(w.name, 0.0) * (1 - 1e-9)]
            d.update({"peak_demand": max((b.demand.get(w.name, 0.0) for b in problem.blocks), default=0.0),
                      "min_replicas": w.min_replicas,
                      "replicas_min_max": [round(min((reps.get((w.name, bi), 0.0) for bi in range(len(problem.blocks))), default=0), 2),
                                           round(max((reps.get((w.name, bi), 0.0) for bi in range(len(problem.blocks))), default=0), 2)],
                      "blocks_short": len(short)})
        out_w.append(d)
    out_b = [{"label": b.label, "start_hour": b.start_hour, "hours": b.hours,
              "demand": {k: v for k, v in b.demand.items()},
              "capacity": {w.name: round(cap.get((w.name, bi), 0.0), 4) for w in problem.workloads if not w.training},
              "training_flops_per_s": {w.name: cap.get((w.name, bi), 0.0) for w in problem.workloads if w.training}}
             for bi, b in enumerate(problem.blocks)]
    return out_w, out_b


# ------------------------------------------------------------------------------------------------ planning
STRATEGY_SETS = {
    "all_on_demand": {"on_demand"},
    "all_reserved_1y": {"reserved_1y"},
    "all_reserved_3y": {"reserved_3y"},
    "spot_where_allowed": {"on_demand", "spot"},
}


def make_problem(workloads: list[FleetWorkload], blocks: list[FleetBlock], offers: "pd.DataFrame", *,
                 budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
                 spot_capacity: int = DEFAULT_SPOT_CAPACITY, prune: bool = True,
                 max_instances: int | None = None) -> FleetProblem:
    """Candidates per workload (sizing on every offer), filtered by pricing and spot permission, then pruned."""
    from optimizer.sizing import train_flops

    if objective not in ("cost", "roi"):
        raise InputError("objective", f"unknown objective '{objective}'", accepted="cost, roi")
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise InputError("workloads", "workload names must be unique")
    allowed_pricing = set(pricing) if pricing else {"on_demand", "reserved_1y", "reserved_3y", "spot"}
    cands: dict[str, list[Candidate]] = {}
    rejected: dict[str, dict[str, int]] = {}
    for w in workloads:
        cs, rej, _ = candidates_for(w.workload, offers, allow_spot=True, pricing=None)
        keep = []
        for c in cs:
            p = c.offer["pricing"]
            if p not in allowed_pricing:
                rej["pricing_not_allowed"] = rej.get("pricing_not_allowed", 0) + 1
            elif p == "spot" and not w.allow_spot:
                rej["spot_not_allowed"] = rej.get("spot_not_allowed", 0) + 1
            else:
                keep.append(c)
        cands[w.name] = keep
        rejected[w.name] = rej
    work = {w.name: float(train_flops(w.workload)) for w in workloads if w.training}
    problem = FleetProblem(workloads=workloads, blocks=blocks, cands=cands, work_flops=work, budget_usd=budget_usd,
                           objective=objective, spot_capacity=spot_capacity, rejected=rejected, max_instances=max_instances)
    problem.unpruned = cands
    if prune and max_instances is None:  # with quotas, dominance is not safe (DESIGN.md): keep every candidate
        problem.cands, problem.pruned = prune_fleet(cands, workloads, blocks, work, spot_capacity)
    return problem


def _verify(problem: FleetProblem, sol: FleetSolution) -> str | None:
    """Check the plan meets every serving block, every training job, the redundancy and the sharing rule."""
    idx = _cand_index(problem)
    cap: dict[tuple[str, int], float] = {}
    for store in (sol.A, sol.X):
        for (w, ok, bi), x in store.items():
            cap[(w, bi)] = cap.get((w, bi), 0.0) + idx[(w, ok)].throughput_per_unit * x
    for w in problem.workloads:
        if w.training:
            if problem.objective == "roi" and not sol.Z.get(w.name):
                continue
            done = sum(cap.get((w.name, bi), 0.0) * 3600.0 * problem.before_deadline(w, b) for bi, b in enumerate(problem.blocks))
            if done < problem.work_flops[w.name] * (1 - 1e-6):
                return f"{w.name}: {done:.6g} FLOPs planned for {problem.work_flops[w.name]:.6g} needed"
        elif problem.objective == "cost":
            for bi, b in enumerate(problem.blocks):
                if cap.get((w.name, bi), 0.0) < b.demand.get(w.name, 0.0) * (1 - 1e-9):
                    return f"{w.name}: block {b.label or bi} has {cap.get((w.name, bi), 0.0):.6g} tokens/s for {b.demand.get(w.name):.6g}"
    used: dict[tuple[str, int], float] = {}
    for (w, ok, bi), a in sol.A.items():
        used[(ok, bi)] = used.get((ok, bi), 0.0) + idx[(w, ok)].instances_per_unit * a
    for (ok, bi), u in used.items():
        if u > sol.N.get(ok, 0) + 1e-6:
            return f"committed offer {ok} over-used in block {bi}"
    return None


def trim_allocations(problem: FleetProblem, sol: FleetSolution) -> FleetSolution:
    """Committed capacity is paid whatever the use, so the solver may assign spare committed units to a workload
    that does not need them. For reporting (utilization), remove them: serving units on committed offers are taken
    away one by one while the block still meets its demand and redundancy; training work on committed offers is
    scaled down to what the job needs. Costs do not change."""
    import copy

    idx = _cand_index(problem)
    A = dict(sol.A)
    X = dict(sol.X)
    for w in problem.workloads:
        if w.training:
            need = problem.work_flops[w.name]
            work = lambda store: sum(idx[(w.name, ok)].throughput_per_unit * 3600.0 *  # noqa: E731
                                     problem.before_deadline(w, problem.blocks[bi]) * v
                                     for (wn, ok, bi), v in store.items() if wn == w.name)
            a_work, x_work = work(A), work(X)
            if a_work > 0 and a_work + x_work > need * (1 + 1e-9):
                f = max(0.0, need - x_work) / a_work * (1 + 1e-12)
                for k in [k for k in A if k[0] == w.name]:
                    A[k] *= f
            continue
        for bi, b in enumerate(problem.blocks):
            d = b.demand.get(w.name, 0.0)
            keys = sorted((k for k in A if k[0] == w.name and k[2] == bi),
                          key=lambda k: -idx[(w.name, k[1])].throughput_per_unit)
            def state():
                cap = reps = nonspot = 0.0
                for store in (A, X):
                    for (wn, ok, b2), v in store.items():
                        if wn == w.name and b2 == bi:
                            c = idx[(wn, ok)]
                            cap += c.throughput_per_unit * v
                            reps += c.replicas_per_unit * v
                            nonspot += 0.0 if c.offer["pricing"] == "spot" else c.replicas_per_unit * v
                return cap, reps, nonspot
            for k in keys:
                while A.get(k, 0) >= 1:
                    c = idx[(w.name, k[1])]
                    cap, reps, nonspot = state()
                    if (cap - c.throughput_per_unit >= d * (1 - 1e-12) and reps - c.replicas_per_unit >= w.min_replicas
                            and (w.spot_only_ok or nonspot - c.replicas_per_unit >= w.min_replicas)):
                        A[k] -= 1
                    else:
                        break
    out = copy.copy(sol)
    out.A = {k: v for k, v in A.items() if v > 1e-9}
    return out


def _strategies(problem: FleetProblem, solver, time_limit_s, gap_rel, optimal_cost) -> dict[str, dict[str, Any]]:
    out = {}
    for name, allowed in STRATEGY_SETS.items():
        if name == "spot_where_allowed" and not any(w.allow_spot for w in problem.workloads):
            continue
        base = problem.unpruned or problem.cands
        subset = {w: [c for c in cs if c.offer["pricing"] in allowed] for w, cs in base.items()}
        kept = subset if problem.max_instances is not None else \
            prune_fleet(subset, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity)[0]
        sub = FleetProblem(**{**problem.__dict__, "budget_usd": None, "objective": "cost", "cands": kept})
        if any(not cs for cs in kept.values()):
            out[name] = {"status": "no_offers", "monthly_usd": None,
                         "note": "some workload has no offer of this pricing (or may not use it)"}
            continue
        sol = solve_cost(sub, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if sol.report.status not in ("optimal", "time_limit"):
            out[name] = {"status": sol.report.status, "monthly_usd": None}
            continue
        commits = sub.committed_offers()
        commitment = sum(float(commits[k]["usd_per_hour"]) * TERM_HOURS[commits[k]["pricing"]] * n for k, n in sol.N.items())
        upfront = sum(float(commits[k].get("upfront_usd") or 0.0) * n for k, n in sol.N.items())
        out[name] = {"status": sol.report.status, "monthly_usd": round(sol.cost, 2),
                     "commitment_usd": round(commitment, 2), "upfront_usd": round(upfront, 2)}
    out["optimal_mix"] = {"status": "optimal", "monthly_usd": round(optimal_cost, 2)}
    base = out.get("all_on_demand", {}).get("monthly_usd")
    for v in out.values():
        if base and v.get("monthly_usd") is not None:
            v["savings_usd"] = round(base - v["monthly_usd"], 2)
            v["savings_pct"] = round(100.0 * (base - v["monthly_usd"]) / base, 2)
    return out


def _marginal(problem: FleetProblem, solver, time_limit_s) -> dict[str, Any]:
    """Shadow prices from the LP relaxation of the minimum-cost model: USD per month for one more token/s of
    demand in a block (top 5 blocks), and the budget's dual."""
    import pulp

    m, V = build_fleet_model(FleetProblem(**{**problem.__dict__, "objective": "cost"}), relax=True)
    rep = solve_fleet(m, solver="cbc", time_limit_s=time_limit_s)
    if rep.status != "optimal":
        return {}
    demand = []
    for name, con in m.constraints.items():
        if name.startswith("demand_") and con.pi is not None:
            wname, bi = name[len("demand_"):].rsplit("_", 1)
            b = problem.blocks[int(bi)]
            w = next((x for x in problem.workloads if _safe(x.name) == wname), None)
            d = b.demand.get(w.name, 0.0) if w else 0.0
            if d > 0:
                demand.append({"workload": w.name, "block": b.label or int(bi),
                               "usd_per_month_per_token_per_s": round(float(con.pi) * 1000.0 / d, 6)})
    demand.sort(key=lambda x: -x["usd_per_month_per_token_per_s"])
    budget = m.constraints.get("budget")
    return {"lp_relaxation_cost_usd": round(float(pulp.value(m.objective) or 0.0), 2),
            "demand": demand[:5], "budget_dual": None if budget is None or budget.pi is None else float(budget.pi)}


def _next_best(problem: FleetProblem, sol: FleetSolution, solver, time_limit_s, gap_rel) -> list[dict[str, Any]]:
    """The cheapest plan on each provider alone, and what price change would flip the choice."""
    providers = sorted({c.offer["provider"] for cs in (problem.unpruned or problem.cands).values() for c in cs})
    used = sorted({k.split("|")[0] for k in list(sol.N) + [ok for (_, ok, _) in sol.X]})
    out = []
    for p in providers:
        base = problem.unpruned or problem.cands
        subset = {w: [c for c in cs if c.offer["provider"] == p] for w, cs in base.items()}
        if problem.max_instances is None:
            subset, _ = prune_fleet(subset, problem.workloads, problem.blocks, problem.work_flops, problem.spot_capacity)
        sub = FleetProblem(**{**problem.__dict__, "budget_usd": None, "objective": "cost", "cands": subset})
        if any(not cs for cs in sub.cands.values()):
            out.append({"provider": p, "monthly_usd": None, "note": "cannot host every workload alone"})
            continue
        s = solve_cost(sub, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s.report.status not in ("optimal", "time_limit"):
            out.append({"provider": p, "monthly_usd": None, "note": f"no plan ({s.report.status})"})
            continue
        row = {"provider": p, "monthly_usd": round(s.cost, 2), "delta_usd": round(s.cost - sol.cost, 2)}
        if p not in used and s.cost > 0:
            row["flip"] = f"{p} alone would win if its prices fell {100 * (1 - sol.cost / s.cost):.1f} %"
        out.append(row)
    chosen_alone = [r for r in out if r.get("monthly_usd") is not None]
    others = [r for r in chosen_alone if r["provider"] not in used]
    if others and len(used) == 1 and sol.cost > 0:
        best_other = min(others, key=lambda r: r["monthly_usd"])
        for r in out:
            if r["provider"] == used[0]:
                r["flip"] = (f"{used[0]} stays the choice until its prices rise "
                             f"{100 * (best_other['monthly_usd'] / sol.cost - 1):.1f} % (then {best_other['provider']})")
    return out


def plan_fleet(workloads: list[FleetWorkload], blocks: list[FleetBlock], offers: "pd.DataFrame", *,
               budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
               spot_capacity: int = DEFAULT_SPOT_CAPACITY, solver: str = "auto", time_limit_s: float = 60.0,
               gap_rel: float = 0.001, explain: bool = True, merge_note: str = "",
               max_instances: int | None = None) -> FleetResult:
    """Plan several workloads over the blocks of a month (minimum cost, or maximum ROI by Dinkelbach).

    Returns a FleetResult (infeasible plans included, with ``reason``). Raises InputError for bad input.
    """
    t0 = time.perf_counter()
    problem = make_problem(workloads, blocks, offers, budget_usd=budget_usd, objective=objective, pricing=pricing,
                           spot_capacity=spot_capacity, max_instances=max_instances)
    solver = resolve_solver(solver)
    res = FleetResult(status="infeasible", objective=objective)
    res.solver = {"name": solver, "blocks": len(blocks), "merge": merge_note, "pruned": problem.pruned,
                  "candidates": {w: len(cs) for w, cs in problem.cands.items()}}
    empty = [w for w in workloads if not problem.cands.get(w.name)]
    if empty:
        w = empty[0]
        from optimizer.plan import _no_fit_reason

        why = _no_fit_reason(w.workload, offers, problem.rejected.get(w.name, {}))
        if problem.rejected.get(w.name, {}).get("spot_not_allowed") or problem.rejected.get(w.name, {}).get("pricing_not_allowed"):
            why = {"kind": "pricing", "message": f"{w.name}: no offer allowed by the pricing limits can host it "
                                                 f"(rejected: {problem.rejected[w.name]})"}
        res.reason = {**why, "workload": w.name, "message": f"{w.name}: {why['message']}"}
        return res
    if objective == "roi":
        sol, its = solve_roi(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        res.dinkelbach = its
    else:
        sol = solve_cost(problem, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
    rep = sol.report
    res.solver.update({"status": rep.status, "gap": rep.gap, "seconds": round(rep.seconds, 3), "message": rep.message})
    if rep.status == "infeasible":
        res.reason = _why_infeasible(problem, solver, time_limit_s, gap_rel)
        return res
    if rep.status not in ("optimal", "time_limit"):
        res.status = rep.status
        res.reason = {"kind": "solver", "message": f"the {solver} solver found no plan within {time_limit_s:g} s "
                                                   f"({rep.message or rep.status}); raise --time-limit or narrow the choice"}
        return res
    bad = _verify(problem, sol)
    if bad:
        res.status = "not_solved"
        res.reason = {"kind": "solver", "message": f"the solver's plan fails a check ({bad}); no plan is shown rather than a wrong one"}
        return res
    res.status = rep.status
    sol = trim_allocations(problem, sol)
    res.recurring = problem.recurring
    res.lines = fleet_lines(problem, sol, on_demand_rates(offers))
    big = [ln for ln in res.lines if ln.count > 64]
    if big:
        res.notes.append(f"{big[0].count} instances of {big[0].instance_type} in {big[0].region}: check your quota "
                         "(max_instances caps it); the plan assumes near-linear data-parallel scaling")
    if not problem.recurring and any(ln.pricing in TERM_HOURS for ln in res.lines):
        res.notes.append("a plan of training jobs only is one-off: each reservation is charged its whole term")
    res.total_monthly_usd = round(sol.cost, 2)
    res.workloads, res.blocks = workload_summaries(problem, sol)
    if objective == "roi":
        res.value_usd = round(sol.value, 2)
        res.net_value_usd = round(sol.value - sol.cost, 2)
        res.roi = None if sol.cost <= 0 else round(sol.value / sol.cost - 1.0, 6)
        if sol.cost <= 0:
            res.notes.append("no workload's value pays for its capacity: the ROI-maximizing plan buys nothing")
    if rep.status == "time_limit":
        res.notes.append(f"the solver stopped at its time limit: feasible, not proven optimal (gap {rep.gap})")
    if any(ln.estimated for ln in res.lines):
        res.notes.append("some prices are estimated (source rule:...): reserved rates derived from a documented discount rule")
    if any(ln.pricing == "spot" for ln in res.lines):
        res.notes.append(f"spot lines count 90 % of their throughput and at most {spot_capacity} instances per offer")
    commits = problem.committed_offers()
    res.commitment = {
        "total_over_term_usd": round(sum(float(commits[k]["usd_per_hour"]) * TERM_HOURS[commits[k]["pricing"]] * n
                                         for k, n in sol.N.items()), 2),
        "upfront_usd": round(sum(float(commits[k].get("upfront_usd") or 0.0) * n for k, n in sol.N.items()), 2)}
    res.binding = _binding(problem, sol)
    if explain and objective == "roi":
        res.notes.append("the strategy comparison and the provider alternatives price the FULL demand; an ROI plan "
                         "may serve less, so they are not shown (run --objective cost to compare)")
    elif explain:
        # the explanations are priced within 1 % and 10 s each: they compare, they are not the plan
        ex_limit, ex_gap = min(time_limit_s, 10.0), max(gap_rel, 0.01)
        # the three explanation families run side by side (each solve single-threaded): CBC runs as a
        # subprocess, so threads here use the cores for real
        from concurrent.futures import ThreadPoolExecutor

        def single(fn, *a):
            _SOLVE_THREADS.n = 1
            return fn(*a)

        with ThreadPoolExecutor(max_workers=max(1, min(3, os.cpu_count() or 1))) as pool:
            f_st = pool.submit(single, _strategies, problem, solver, ex_limit, ex_gap, sol.cost)
            f_mg = pool.submit(single, _marginal, problem, solver, ex_limit)
            f_nb = pool.submit(single, _next_best, problem, sol, solver, ex_limit, ex_gap)
            f_df = pool.submit(single, _demand_flip, problem, sol, solver, ex_limit, ex_gap)
            res.strategies, res.marginal, res.next_best = f_st.result(), f_mg.result(), f_nb.result()
            res.demand_sensitivity = f_df.result()
        base = res.strategies.get("all_on_demand", {}).get("monthly_usd")
        if base:
            res.savings_vs_on_demand_usd = round(base - sol.cost, 2)
            res.savings_vs_on_demand_pct = round(100.0 * (base - sol.cost) / base, 2)
        cheaper = [(n, v["monthly_usd"]) for n, v in res.strategies.items()
                   if n != "optimal_mix" and v.get("monthly_usd") is not None and v["monthly_usd"] < sol.cost - 0.01]
        cheaper += [(f"{nb['provider']} alone", nb["monthly_usd"]) for nb in res.next_best
                    if nb.get("monthly_usd") is not None and nb["monthly_usd"] < sol.cost - 0.01]
        if cheaper:
            n, v = min(cheaper, key=lambda t: t[1])
            res.notes.append(f"{n} (${v:,.2f}) is cheaper than this plan: the solver stopped before proving "
                             f"optimality; raise --time-limit")
            if "optimal_mix" in res.strategies:
                res.strategies["this_plan"] = res.strategies.pop("optimal_mix")
    res.solver["total_seconds"] = round(time.perf_counter() - t0, 3)
    return res


def _demand_flip(problem: FleetProblem, sol: FleetSolution, solver, time_limit_s, gap_rel) -> list[dict[str, Any]]:
    """What a change in demand does to the choice: the plan re-solved with every serving demand and training job
    halved and doubled; when the providers or pricing models it uses change, the change is said."""
    def used(x: FleetSolution) -> tuple[str, ...]:
        keys = list(x.N) + [ok for (_, ok, _) in x.X]
        return tuple(sorted({f"{k.split('|')[0]} {k.split('|')[4]}" for k in keys}))

    base = used(sol)
    out = []
    for factor in (0.5, 2.0):
        blocks = [FleetBlock(b.start_hour, b.hours, {w: d * factor for w, d in b.demand.items()}, b.label, b.end_hour)
                  for b in problem.blocks]
        scaled = FleetProblem(**{**problem.__dict__, "budget_usd": None, "objective": "cost", "blocks": blocks,
                                 "work_flops": {w: f * factor for w, f in problem.work_flops.items()}})
        s2 = solve_cost(scaled, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s2.report.status not in ("optimal", "time_limit"):
            continue
        now = used(s2)
        out.append({"demand_factor": factor, "monthly_usd": round(s2.cost, 2), "uses": list(now),
                    "flips": now != base,
                    "note": (f"at {factor:g}x the demand the plan would use {', '.join(now)} instead of {', '.join(base)}"
                             if now != base else f"at {factor:g}x the demand the same providers and pricing models stay best")})
    return out


def _binding(problem: FleetProblem, sol: FleetSolution) -> list[str]:
    out = []
    if problem.budget_usd is not None:
        head = problem.budget_usd - sol.cost
        out.append(f"budget: ${problem.budget_usd:,.2f}, ${head:,.2f} left"
                   + (" (binding)" if head < 0.005 * problem.budget_usd else " (not binding)"))
    idx = _cand_index(problem)
    for k, n in sol.N.items():
        peak = max((sum(idx[(w, ok)].instances_per_unit * a for (w, ok, b2), a in sol.A.items() if ok == k and b2 == bi)
                    for bi in range(len(problem.blocks))), default=0.0)
        if peak >= n - 1e-9:
            out.append(f"committed {k.split('|')[3]} ({k.split('|')[1]}): all {n} instances busy in the peak block (binding)")
    for w in problem.workloads:
        if w.training and w.deadline_hours is not None:
            out.append(f"{w.name}: must finish by hour {w.deadline_hours:g}")
    spot_full = {}
    for (w, ok, bi), x in sol.X.items():
        c = idx[(w, ok)]
        if c.offer["pricing"] == "spot":
            spot_full[(ok, bi)] = spot_full.get((ok, bi), 0.0) + x * c.instances_per_unit
    if any(v >= problem.spot_capacity - 1e-9 for v in spot_full.values()):
        out.append(f"spot capacity: some spot offers are used up to the {problem.spot_capacity}-instance cap (binding)")
    return out


def _resplit(blocks: list[FleetBlock], at: float) -> list[FleetBlock]:
    """The blocks with any block spanning hour ``at`` cut in two there (demand kept), so deadlines stay on block
    edges."""
    out = []
    for b in blocks:
        end = b.start_hour + b.hours
        if b.end_hour is None and b.start_hour < at < end:
            out.append(FleetBlock(b.start_hour, at - b.start_hour, dict(b.demand), b.label))
            out.append(FleetBlock(at, end - at, dict(b.demand), b.label))
        else:
            out.append(b)
    return out


def _why_infeasible(problem: FleetProblem, solver, time_limit_s, gap_rel) -> dict[str, Any]:
    """Which constraint cannot be met, and the cheapest relaxation: the budget it would take, the deadline it
    would take, or that spot capacity / redundancy rules block it."""
    if problem.budget_usd is not None:
        free = FleetProblem(**{**problem.__dict__, "budget_usd": None})
        s = solve_cost(free, solver=solver, time_limit_s=time_limit_s, gap_rel=gap_rel)
        if s.report.status in ("optimal", "time_limit"):
            return {"kind": "budget", "budget_needed_usd": round(s.cost, 2),
                    "message": (f"the budget is too small: the cheapest plan that meets every workload costs "
                                f"${s.cost:,.2f} per month; raise the budget by ${s.cost - problem.budget_usd:,.2f}")}
    late = [w for w in problem.workloads if w.training and w.deadline_hours is not None]
    for w in late:
        def feasible(deadline: float) -> bool:
            moved = [FleetWorkload(**{**x.__dict__, "deadline_hours": deadline}) if x is w else x
                     for x in problem.workloads]
            blocks = _resplit(problem.blocks, deadline)
            free = FleetProblem(**{**problem.__dict__, "budget_usd": None, "workloads": moved, "blocks": blocks})
            return solve_cost(free, solver=solver, time_limit_s=time_limit_s, gap_rel=0.01).report.status in \
                ("optimal", "time_limit")

        if feasible(HOURS_PER_MONTH):
            lo, hi = float(w.deadline_hours), HOURS_PER_MONTH  # infeasible at lo, feasible at hi
            for _ in range(7):
                mid = (lo + hi) / 2.0
                lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
            return {"kind": "deadline", "workload": w.name, "deadline_needed_hours": math.ceil(hi),
                    "message": (f"{w.name} cannot finish by hour {w.deadline_hours:g} with the capacity allowed "
                                f"(spot caps, pricing limits); the earliest deadline it can meet is about hour "
                                f"{math.ceil(hi)} (or allow more spot capacity / on-demand)")}
    return {"kind": "capacity", "message": ("no plan meets every constraint: spot capacity caps, redundancy "
                                            "(min_replicas without spot) or pricing limits block it; allow on-demand, "
                                            "raise spot_capacity_per_offer or lower min_replicas")}
