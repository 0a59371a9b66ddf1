"""Build the planning MILP: which offers, how many, for how many hours.

Three steps, kept apart (PyPSA style): :func:`candidates_for` turns offers + a workload into the candidate
"units" that can host replicas (sizing decides what fits), :func:`build_model` writes the PuLP problem,
``optimizer.solve.solve`` solves it and checks the status, ``optimizer.explain.explain`` makes tables.

The model (DESIGN.md, "The planning model", for one workload and one time block)
================================================================================

Sets
    c in C: candidate units. A unit is ``k`` instances of one offer hosting ``r`` replicas
    (``k > 1`` when one replica needs more GPUs than one instance has: multi-instance replicas, only over a
    fast interconnect; ``r > 1`` when one instance holds several replicas, e.g. 8 GPUs hosting two 4-GPU replicas).
    C = C_commit (reserved 1y/3y) U C_hourly (on-demand, spot).

Parameters
    p_c   USD per hour of one unit = k x usd_per_hour (effective, amortized rate for reserved)
    th_c  throughput of one unit = r x throughput per replica (serving: tokens/s; training: FLOP/s,
          spot already reduced by the interruption overhead)
    H     hours the work may run in: 730 for serving (a whole month); min(deadline, horizon) for training
    M_c   billed hours of a commitment: serving 730 (a month of the term; reserved is billed whatever the use);
          training (a one-off job) the WHOLE term, 8,760 or 26,280 h, since nothing else uses it afterwards
    d     serving demand in tokens/s;  W  training work in FLOPs
    B     budget in USD for the plan horizon

Variables
    U_c in Z+   units of candidate c (instances = k U_c, replicas = r U_c)
    Y_c >= 0    unit-hours of an hourly candidate (training only; serving hourly units run all H hours)

Constraints
    serving:   sum_c th_c U_c >= d
    (the demand/work row is scaled to a right-hand side of ROW_SCALE = 1000, which makes the solvers' absolute
    feasibility tolerance (1e-7) negligible; coefficients of integer variables are capped at ROW_SCALE, which
    keeps every integer solution (one unit that covers the whole demand covers it either way) and keeps tiny
    demands from giving huge coefficients; the plan is checked again after solving)
    training:  sum_{c in commit} th_c 3600 min(H, T_c) U_c + sum_{c in hourly} th_c 3600 Y_c >= W
               (a reservation works at most its term T_c = 8,760 or 26,280 h)
               Y_c <= H U_c                                   (a unit runs at most H hours before the deadline)
    budget:    cost <= B                                      (only when a budget is given)
    limits:    sum over the offers of one instance type in one region (all pricing models, payments
               and zones) of k U_c <= max_instances (a quota is per instance type and region)

Objective (minimize cost over the plan horizon)
    serving:   sum_{commit} p_c M_c U_c + sum_{hourly} p_c H U_c          (USD per month)
    training:  sum_{commit} p_c M_c U_c + sum_{hourly} p_c Y_c            (USD for the whole job)
    plus sum_c U_c >= 1 (any positive demand needs a unit; keeps tiny demands away from solver tolerances)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.errors import InputError
from gpuopt.records import HOURS_PER_MONTH, TERM_HOURS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pulp

    from optimizer.sizing import ReplicaSizing, Workload

#: Fraction of a spot instance's throughput that turns into useful work, after interruptions and the rework
#: since the last checkpoint. A stated planning assumption (not a measured figure): 10 % lost.
SPOT_INTERRUPTION_OVERHEAD = 0.10

COMMITTED = frozenset({"reserved_1y", "reserved_3y"})

#: Right-hand side the demand/work row is scaled to (see the module docstring).
ROW_SCALE = 1000.0

#: Largest tensor/pipeline replica gpuopt will build (GPUs); beyond it the planner reports "does not fit".
MAX_GPUS_PER_REPLICA = 64


@dataclass(frozen=True)
class Candidate:
    """One way to buy capacity: ``instances_per_unit`` instances of one offer hosting ``replicas_per_unit`` replicas.

    ``offer`` is the normalized offer row as a dict (gpuopt.records.OFFER_COLUMNS). ``usd_per_unit_hour`` is
    instances_per_unit x offer usd_per_hour; ``throughput_per_unit`` is in tokens/s (serve) or FLOP/s (train),
    spot already reduced by :data:`SPOT_INTERRUPTION_OVERHEAD`.
    """

    key: str
    offer: dict[str, Any]
    instances_per_unit: int
    replicas_per_unit: int
    sizing: "ReplicaSizing"
    usd_per_unit_hour: float
    throughput_per_unit: float
    shape: str = ""

    @property
    def committed(self) -> bool:
        return self.offer["pricing"] in COMMITTED


@dataclass
class PlanProblem:
    """Everything the MILP needs, for one workload and one time block.

    Attributes:
        workload: the sized workload (optimizer.sizing.Workload).
        candidates: the units that can host a replica, after pruning.
        demand_tokens_per_second: serving demand (tokens/s), None for training.
        work_flops: training work (FLOPs), None for serving.
        run_hours: H, hours hourly units may run (730 for serving; the deadline for training).
        horizon_hours: the plan horizon (730 for serving; the deadline for training).
        budget_usd: serving: USD per month; training: USD for the whole job; or None.
        max_instances_per_offer: cap on instances of one instance type in one region (over its pricing models,
            payments and zones), or None.
        rejected: why offers were not candidates: reason -> count.
        pruned: number of dominated candidates dropped before building the model.
    """

    workload: "Workload"
    candidates: list[Candidate]
    demand_tokens_per_second: float | None
    work_flops: float | None
    run_hours: float
    horizon_hours: float
    budget_usd: float | None = None
    max_instances_per_offer: int | None = None
    rejected: dict[str, int] = field(default_factory=dict)
    pruned: int = 0

    @property
    def is_training(self) -> bool:
        return self.work_flops is not None

    def committed_hours(self, c: "Candidate") -> float:
        """M_c: hours of candidate c's commitment the plan pays for: 730 a month for serving, the whole term
        (8,760 h for 1 year, 26,280 h for 3 years) for a one-off training job."""
        if self.is_training:
            return TERM_HOURS[c.offer["pricing"]]
        return HOURS_PER_MONTH

    def committed_work_hours(self, c: "Candidate") -> float:
        """Hours a committed unit works for a training job: min(deadline, its term)."""
        return min(self.run_hours, TERM_HOURS[c.offer["pricing"]])

    def horizon_cost_per_unit(self, c: "Candidate") -> float:
        """Fixed USD cost of one unit over the plan (committed: M_c hours; serving hourly: H hours)."""
        return c.usd_per_unit_hour * (self.committed_hours(c) if c.committed else self.run_hours)


def _unit_shape(sizing_fn, workload, gpu, offer_gpus: float, interconnect: str):
    """Return (instances_per_unit k, replicas_per_unit r, replica sizing) for an offer, or (None, None, reason)."""
    if offer_gpus < 1.0:
        # A fractional-GPU instance holds at most one replica, on its share of one GPU (BUG-10: never a whole GPU).
        s = sizing_fn(workload, gpu, offer_gpus)
        if s.fits:
            return 1, 1, s
        return None, None, "does_not_fit"
    best = None
    n = 1
    tried = []
    while n <= MAX_GPUS_PER_REPLICA:
        tried.append(n)
        n = n * 2 if n < 8 else n + 8
    for n in tried:
        if n > offer_gpus:
            # a replica spanning instances: only whole instances, and only over a fast interconnect
            if interconnect != "nvlink" or offer_gpus < 8 or n % int(offer_gpus) != 0:
                continue
        s = sizing_fn(workload, gpu, float(n))
        if not s.fits:
            continue
        if n <= offer_gpus:
            best = (1, int(offer_gpus // n), s)
        else:
            best = (int(n // offer_gpus), 1, s)
        break
    if best is None:
        return None, None, "does_not_fit"
    return best


def candidates_for(
    workload: "Workload",
    offers: "pd.DataFrame",
    *,
    allow_spot: bool = False,
    pricing: tuple[str, ...] | None = None,
) -> tuple[list[Candidate], dict[str, int], dict[str, "ReplicaSizing"]]:
    """Turn offers into candidate units for ``workload``.

    Args:
        workload: optimizer.sizing.Workload (validated).
        offers: normalized offers (gpuopt.records.OFFER_COLUMNS), already filtered by provider/region/GPU.
        allow_spot: keep spot offers (only when the workload may be interrupted).
        pricing: pricing models allowed (default: all but spot).

    Returns:
        (candidates, rejected, sizing_by_gpu): rejected counts offers by reason (``no_spec`` — the GPU has no
        datasheet row, ``does_not_fit`` — no replica of up to 64 GPUs fits, ``pricing_not_allowed``,
        ``spot_not_allowed``); sizing_by_gpu holds the replica sizing used per (gpu_model, gpu_count).
    """
    from optimizer.sizing import size_replica
    from optimizer.specs import load_gpu_board

    allowed = set(pricing) if pricing else {"on_demand", "reserved_1y", "reserved_3y", "spot"}
    if not allow_spot:
        allowed.discard("spot")
    rejected: dict[str, int] = {}
    shapes: dict[tuple[str, float, str], tuple] = {}
    gpu_cache: dict[str, Any] = {}
    sizing_by_gpu: dict[str, ReplicaSizing] = {}
    cands: list[Candidate] = []
    for off in offers.to_dict("records"):
        p = off["pricing"]
        if p not in allowed:
            reason = "spot_not_allowed" if p == "spot" and not allow_spot else "pricing_not_allowed"
            rejected[reason] = rejected.get(reason, 0) + 1
            continue
        gm = off["gpu_model"]
        board = (gm, str(off["interconnect"]))
        if board not in gpu_cache:
            try:
                gpu_cache[board] = load_gpu_board(gm, str(off["interconnect"]))
            except InputError:
                gpu_cache[board] = None
        gpu = gpu_cache[board]
        if gpu is None:
            rejected["no_spec"] = rejected.get("no_spec", 0) + 1
            continue
        # Size against the offer's own per-GPU memory (AWS reports an L4 as 22.35 GiB, not the datasheet's 24 GB;
        # a user catalog may say less): the datasheet row gives bandwidth and FLOPs only.
        mem = usable_gpu_memory_gib(gm, off.get("gpu_memory_gib"), gpu.memory_gib)
        shape_key = (gm, float(off["gpu_count"]), str(off["interconnect"]), round(mem, 4))
        if shape_key not in shapes:
            g = dataclasses.replace(gpu, memory_gib=mem) if abs(mem - gpu.memory_gib) > 1e-9 else gpu
            shapes[shape_key] = _unit_shape(size_replica, workload, g, float(off["gpu_count"]), str(off["interconnect"]))
        k, r, s = shapes[shape_key]
        if k is None:
            rejected["does_not_fit"] = rejected.get("does_not_fit", 0) + 1
            continue
        label = shape_label(gm, float(off["gpu_count"]), mem, str(off["interconnect"]))
        sizing_by_gpu[label] = s
        if workload.task == "serve":
            theta = s.tokens_per_second_per_replica
        else:
            theta = s.flops_per_second_per_replica or 0.0
        if p == "spot":
            theta *= 1.0 - SPOT_INTERRUPTION_OVERHEAD
        if theta <= 0:
            rejected["no_throughput"] = rejected.get("no_throughput", 0) + 1
            continue
        key = "|".join(str(off.get(c) or "") for c in ("provider", "region", "zone", "instance_type", "pricing", "payment"))
        cands.append(
            Candidate(
                key=key,
                offer=off,
                instances_per_unit=k,
                replicas_per_unit=r,
                sizing=s,
                usd_per_unit_hour=k * float(off["usd_per_hour"]),
                throughput_per_unit=r * theta,
                shape=label,
            )
        )
    return cands, rejected, sizing_by_gpu


def usable_gpu_memory_gib(gpu_model: str, offered: float | None, datasheet_gib: float) -> float:
    """Memory of one GPU to size with, GiB: the smaller of the offer's figure and the memory the clouds report
    for that GPU (providers.gpu_names.GPU_MEMORY_MIB: AWS reports an L4 as 22,888 MiB = 22.35 GiB, although
    catalogs that copy the datasheet say "24"), so the same GPU is sized the same on every provider. A user
    catalog that says less (a partitioned GPU) is honoured."""
    from providers.gpu_names import GPU_MEMORY_MIB

    vals = [datasheet_gib]
    if offered is not None and offered == offered and offered > 0:
        vals = [float(offered)]
    reported = GPU_MEMORY_MIB.get(gpu_model)
    if reported:
        vals.append(reported / 1024.0)
    return min(vals)


def shape_label(gpu_model: str, gpu_count: float, memory_gib: float, interconnect: str) -> str:
    """How a GPU shape is named in the sizing table, e.g. "L4 x4 (22.35 GiB, pcie)"."""
    return f"{gpu_model} x{gpu_count:g} ({memory_gib:.4g} GiB, {interconnect})"


def instance_group(c: "Candidate") -> tuple[str, str, str]:
    """(provider, region, instance_type): the level at which clouds set quotas (--max-instances)."""
    return (str(c.offer["provider"]), str(c.offer["region"]), str(c.offer["instance_type"]))


def prune_dominated(cands: list[Candidate], problem: "PlanProblem") -> tuple[list[Candidate], int]:
    """Drop candidates another candidate dominates: no more costly per unit and at least as capable.

    Safe here because no candidate is capped (no spot capacity or quota limits in this model): a dominated
    candidate can always be replaced unit for unit by its dominator without raising cost or losing capacity.
    (DESIGN.md warns that with capped offers this rule is wrong: callers skip pruning when a cap is set.)
    Costs are the fixed cost of a unit over the plan (PlanProblem.horizon_cost_per_unit); for serving every
    unit's cost is fixed, so one Pareto front over all candidates is exact.

    Returns: (kept candidates, number dropped). Ties (same cost, same throughput) keep the first by key.
    """
    kept: list[Candidate] = []
    best_theta = -1.0
    for c in sorted(cands, key=lambda c: (problem.horizon_cost_per_unit(c), -c.throughput_per_unit, c.key)):
        if c.throughput_per_unit > best_theta * (1 + 1e-12):
            kept.append(c)
            best_theta = c.throughput_per_unit
    return kept, len(cands) - len(kept)


def prune_training(cands: list[Candidate], problem: "PlanProblem") -> tuple[list[Candidate], int]:
    """Pruning for training problems (uncapped).

    Hourly units cost p per unit-hour, do th per unit-hour and have no fixed cost (U is free, Y <= H U):
    the hourly part is a linear choice where only the lowest USD per FLOP matters, so one hourly candidate
    is kept. Committed units are pruned by dominance (fixed cost of the commitment vs throughput).
    Returns: (kept, number dropped).
    """
    hourly = [c for c in cands if not c.committed]
    committed, dropped = prune_dominated([c for c in cands if c.committed], problem)
    if hourly:
        best = min(hourly, key=lambda c: (c.usd_per_unit_hour / c.throughput_per_unit, c.key))
        committed.append(best)
        dropped += len(hourly) - 1
    return committed, dropped


def build_model(problem: PlanProblem) -> tuple["pulp.LpProblem", dict[str, "pulp.LpVariable"], dict[str, "pulp.LpVariable"]]:
    """Write the MILP of the module docstring for ``problem``; return (model, U, Y) unsolved.

    U maps candidate key -> integer units; Y maps candidate key -> continuous unit-hours (training hourly
    candidates only). Constraints are named ``demand``, ``work``, ``budget``, ``hours_<i>``, ``cap_<i>``.
    Raises InputError if the problem has neither a demand nor a work amount.
    """
    import pulp

    if problem.demand_tokens_per_second is None and problem.work_flops is None:
        raise InputError("workload", "needs a serving demand (--tokens-per-second) or training tokens (--tokens)")
    m = pulp.LpProblem("gpuopt_plan", pulp.LpMinimize)
    U: dict[str, pulp.LpVariable] = {}
    Y: dict[str, pulp.LpVariable] = {}
    H = problem.run_hours
    cost_terms: dict[pulp.LpVariable, float] = {}
    cap_terms: dict[pulp.LpVariable, float] = {}
    for i, c in enumerate(problem.candidates):
        u = pulp.LpVariable(f"U_{i}", lowBound=0, cat=pulp.LpInteger)
        U[c.key] = u
        if c.committed:
            cost_terms[u] = c.usd_per_unit_hour * problem.committed_hours(c)
            cap_terms[u] = c.throughput_per_unit * (3600.0 * problem.committed_work_hours(c) if problem.is_training else 1.0)
        elif problem.is_training:
            y = pulp.LpVariable(f"Y_{i}", lowBound=0)
            Y[c.key] = y
            cost_terms[y] = c.usd_per_unit_hour
            cap_terms[y] = c.throughput_per_unit * 3600.0
            m += pulp.LpAffineExpression({y: 1.0, u: -H}) <= 0, f"hours_{i}"
        else:
            cost_terms[u] = c.usd_per_unit_hour * H
            cap_terms[u] = c.throughput_per_unit
    cost = pulp.LpAffineExpression(cost_terms)
    m += cost
    # The work/demand row is scaled to a right-hand side of 1: FLOP counts (~1e21) would otherwise meet the
    # solver's absolute tolerances and make CBC call a feasible model infeasible.
    need = float(problem.work_flops if problem.is_training else problem.demand_tokens_per_second)
    if need <= 0:
        raise InputError("workload", "the demand or work to plan for must be greater than 0")
    integer = {id(u) for u in U.values()}
    scaled = pulp.LpAffineExpression({
        v: (min(a / need * ROW_SCALE, ROW_SCALE) if id(v) in integer else a / need * ROW_SCALE)
        for v, a in cap_terms.items()})
    m += scaled >= ROW_SCALE, ("work" if problem.is_training else "demand")
    if problem.max_instances_per_offer is not None:
        groups: dict[tuple, dict] = {}
        for c in problem.candidates:
            g = groups.setdefault(instance_group(c), {})
            g[U[c.key]] = g.get(U[c.key], 0.0) + float(c.instances_per_unit)
        for j, (grp, terms) in enumerate(sorted(groups.items())):
            m += pulp.LpAffineExpression(terms) <= problem.max_instances_per_offer, f"cap_{j}"
    m += pulp.LpAffineExpression({u: 1.0 for u in U.values()}) >= 1.0, "at_least_one_unit"
    if problem.budget_usd is not None:
        # half a cent of slack: a budget equal to the displayed (rounded) cost must be accepted
        m += pulp.LpAffineExpression(cost_terms) <= float(problem.budget_usd) + 0.005, "budget"
    return m, U, Y
