"""The planning MILP, written with PuLP by :func:`build_fleet_model` (unsolved: :mod:`optimizer.planning.solve` solves
it; DESIGN.md "The planning model").

The model
=========

Sets
    w in W: workloads: serving (in the months they run) or training-like (train / finetune / lora: one-off, their work
    before a deadline). p in P: periods of alike months of the horizon (optimizer.planning.horizon: within a period the
    same serving workloads run and each training job is wholly in, out, or ends in it), n_p months each. b in B_p: the
    blocks of a typical month of period p (merged blocks of the demand profiles, split at deadlines), h_b hours each.
    o in O_c: committed offers (reserved 1y/3y) with term T_o months; s in S_o: the months a commitment of o may be
    bought (horizon start, workload starts, renewals every T_o); o in O_h: hourly offers (on-demand, spot).
    C_w: the offers that can host a replica of w (sizing), each a unit of k_wo instances holding r_wo replicas and
    giving th_wo (tokens/s serving; FLOP/s training; spot reduced by the interruption overhead). g in G: placement
    groups (one provider region, or one provider); z: zones (spot offers carry one).

Variables
    N_os  in Z+     instances of committed offer o bought at month s, covering months [s, s + T_o)
    A_wob >= 0      units of w on the committed instances of o in block b (of its period)
    X_wob >= 0      units of w on hourly offer o running through block b, in each month of its period
    (integer for serving workloads; continuous for training-like ones, whose work can be time-sliced)
    y_wg in {0,1}   serving workload w placed in group g: its placement group (region|provider; () for "any") and,
                    unless w mixes replicas, its replica shape (optimizer.planning.problem.workload_group, issue 31)
    z_wsb   {0,1}   w (--mixed-replicas with a least share) runs replicas of shape s in block b (with demand)
    u_wzb in [0,1]  zone z holds an instance of w in block b (``spread: zones`` only; integral at the optimum since
                    instance counts are); z: an offer's zone, or one location for an offer in a region without
                    zones (providers.zones.zone_of); regional offers in zoned regions count each instance
    S_wb  >= 0      served demand (ROI only; otherwise S_wb = d_wb);  Z_w in {0,1} job completed (ROI only)

Constraints
    sharing:        sum_w k_wo A_wob <= sum_{s in S_o: s <= p, p + n_p <= s + T_o} N_os        every o, b (in p)
    spot capacity:  sum_{w, o in q} k_wo X_wob <= cap          q = one spot instance type in one region (all zones)
    serving:        sum_o th_wo (A_wob + X_wob) >= S_wb,  S_wb = d_wb (cost) or S_wb <= d_wb (ROI)
    redundancy:     sum_o r_wo (A + X) >= m_w  and  sum_o k_wo (A + X) >= m_w  (replicas on at least m_w
                    instances); both without spot unless spot_only_ok;  spread: sum_z u_wzb + sum_r rho_wrb
                    >= min(m_w, 3), rho_wrb <= the region r's regional instances and <= 3 (its zones)
    N+1 (issue 26): sum_o th_wo (A + X) - L_w >= s_w S_wb;  L_w >= loss_o delta_wo;  A, X <= M_wo delta_wo
                    (delta_wo in {0,1}: w uses o; loss_o = what one failed instance of o takes away,
                    optimizer.planning.problem.failure_loss; s_w the redundancy share, 1 = N+1 at peak)
    placement:      sum_g y_wg = 1;  A_wob, X_wob <= M_wo y_wg(o)   (M_wo: the most units of o w could need):
                    one region and one replica shape per serving workload
    least share:    A_wob, X_wob <= M_wo z_wsb;  sum_{o of shape s} th_wo (A + X) >= share_w d_wb z_wsb  (d_wb > 0)
    training:       sum_{p,b} n_p sum_o th_wo 3600 h_wb (A_wob + X_wob) >= W_w Z_w, h_wb = hours of b inside w's window;
                    capacity blocks of a job: 24 x unit-days >= (1 + margin_w) x unit-hours used (schedule margin)
    quotas:         instances of one instance type in one region <= max_instances, every block; with --quota, per
                    quota q (providers.quotas: AWS vCPU classes, Azure families, GCP GPU metrics) and block:
                    sum units_q(o) k_wo (A + X) <= headroom_q (capacity blocks draw on none)
    budgets:        cash in the first month of every period <= budget (monthly spend: hourly + recurring of the
                    commitments that cover it + upfronts bought that month);  cost <= budget_total;
                    sum upfront N <= max_upfront;  sum commitment N <= max_commitment

Costs (USD over the horizon of H months)
    commitment:   c_os = rate_o x 730 x (T_o - lv x max(0, s + T_o - H))  (everything paid over the term, less the
                  leftover value lv in [0, 1] of the months that outlive the horizon; rate = recurring + upfront / term)
    hourly:       price_o x k_wo x h_b x n_p per unit of X_wob
    cost  = sum c_os N_os + sum hourly
    value = sum_{serving} v_w 3600 h_b n_p S_wb / 1e6 + sum_{training} V_w Z_w
    minimize cost; or maximize ROI = value / cost - 1 exactly by Dinkelbach iterations: lambda_0 = 0; solve
    max value - lambda cost; lambda <- value / cost; stop when the optimum is ~0.

A training job planned with others is charged exactly as alone, and a one-month horizon never buys a 1- or 3-year
term unless its whole price is below a month of on-demand (leftover value 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.records import HOURS_PER_MONTH
from providers.zones import ZONES_PER_REGION, spread_zones_needed, zone_of
from optimizer.planning.candidates import Candidate
from optimizer.planning.horizon import Period
from optimizer.planning.owned import owned_id
from optimizer.planning.problem import (
    CAPACITY_BLOCK,
    CAPACITY_BLOCK_MAX_INSTANCES,
    FleetBlock,
    FleetProblem,
    FleetWorkload,
    block_days_of,
    cluster_group,
    commitment_parts,
    failure_loss,
    committed_rate,
    job_units,
    grouped,
    purchase_kind,
    replica_shape,
    savings_plan_scope,
    spot_cap,
    spot_group,
    workload_group,
)

if TYPE_CHECKING:  # pragma: no cover
    import pulp


@dataclass
class FleetVars:
    """The model's variables, keyed for reading the solution, and the money expressions."""

    N: dict[str, Any] = field(default_factory=dict)                    # slot key -> var
    CB: dict[tuple, Any] = field(default_factory=dict)   # ("job", w, ok) unit-days | ("job_units", w, ok) units |
    #                                                      ("window", ok, start, end) instances
    SP: dict[str, Any] = field(default_factory=dict)     # savings-plan slot key -> USD/h committed
    A: dict[tuple[str, str, int], Any] = field(default_factory=dict)   # (workload, offer key, block) -> var
    X: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    S: dict[tuple[str, int], Any] = field(default_factory=dict)
    Z: dict[str, Any] = field(default_factory=dict)
    Y: dict[tuple[str, tuple], Any] = field(default_factory=dict)      # (workload, placement group) -> binary
    cost_terms: dict[Any, float] = field(default_factory=dict)
    value_terms: dict[Any, float] = field(default_factory=dict)
    upfront_terms: dict[Any, float] = field(default_factory=dict)
    commitment_terms: dict[Any, float] = field(default_factory=dict)
    cash_terms: dict[int, dict[Any, float]] = field(default_factory=dict)  # period -> its first month's cash



#: Objective weight of a USD/h of an owned Compute Savings Plan's use (a tie-break, far below a cent over a horizon).
OWNED_COMPUTE_ORDER_USD = 1e-6

def _unit_bound(w: FleetWorkload, c: Candidate, blocks: list[FleetBlock], most_loss: float = 0.0) -> float:
    """The most units of candidate c a cheapest (or best-ROI) plan gives serving workload w in one block: its peak
    demand in whole units (with an N+1 rule, the peak's share plus the largest failure loss ``most_loss`` among
    w's candidates), or its redundancy (replicas and instances), plus one."""
    peak = max((b.demand.get(w.name, 0.0) for b in blocks), default=0.0)
    if w.redundancy > 0:
        peak = max(peak, w.redundancy * peak + most_loss)
    return float(max(math.ceil(peak / c.throughput_per_unit - 1e-12),
                     math.ceil(w.min_replicas / max(c.replicas_per_unit, 1)), w.min_replicas, 1) + 1)


#: USD per unit-hour charged in the objective (never in the plan's cost) for running on an owned commitment: it
#: costs nothing, so without it the solver may report more of it in use than the plan needs.
OWNED_USE_TIEBREAK = 1e-6


def physical_key(c) -> tuple:
    """The instances a candidate runs, whatever it is billed under: provider, region, zone, type and layout."""
    o = c.offer
    return (str(o["provider"]), str(o["region"]), str(o.get("zone") or ""), str(o["instance_type"]),
            float(c.instances_per_unit), float(c.replicas_per_unit))


def build_fleet_model(problem: FleetProblem, *, lam: float | None = None, relax: bool = False,
                      allowed: set[str] | None = None, with_budgets: bool = True) -> tuple["pulp.LpProblem", FleetVars]:
    """Write the MILP of the module docstring.

    Args:
        problem: the FleetProblem.
        lam: None for minimum cost; for ROI (Dinkelbach step), maximize value - lam x cost.
        relax: the LP relaxation (continuous N, A, X, Z, y) — for the duals of the explanation.
        allowed: pricing models allowed in this solve (strategies), default every candidate's.
        with_budgets: add the budget rows (off when the explanation asks what a budget would have to be).
    Raises: optimizer.planning.size_guard.ModelTooLarge when its estimated memory is past the stated share of RAM.
    Returns: (model, variables). Constraint names: share_<i>_<b>, spot_<i>_<b>, demand_<w>_<b>, minrep_<w>_<b>,
        work_<w>, place_<w>, budget_<p>, budget_total, max_upfront, max_commitment.
    """
    import pulp

    from optimizer.planning.size_guard import check_model_size, count_model

    # its memory estimated from its counts before it is built: refused past a share of this machine's memory
    # (ModelTooLarge; a breaker's 2,000 workloads ended in a MemoryError at 7.1 GiB, issue 33). Here, not where the
    # problem is made: a plan whose budget cannot bind is planned apart and never builds the joint model
    check_model_size(count_model(problem))
    roi = lam is not None
    m = pulp.LpProblem("gpuopt_fleet", pulp.LpMaximize if roi else pulp.LpMinimize)
    V = FleetVars()
    cat_int = pulp.LpContinuous if relax else pulp.LpInteger
    periods = problem.periods or []
    slots = {k: s for k, s in problem.slots.items() if allowed is None or s.offer["pricing"] in allowed}
    for i, (k, s) in enumerate(slots.items()):
        given = problem.owned_count(s)  # an owned commitment: at most its instances, at $0 (already paid)
        v = V.N[k] = pulp.LpVariable(f"N_{i}", lowBound=0, upBound=given, cat=cat_int)
        V.cost_terms[v] = problem.slot_cost(s)
        upfront, recurring = commitment_parts(s.offer)
        V.upfront_terms[v] = upfront
        V.commitment_terms[v] = committed_rate(s.offer) * HOURS_PER_MONTH * s.term_months
        for p in periods:
            if s.start_month <= p.start_month < s.end_month:
                cash = V.cash_terms.setdefault(p.index, {})
                cash[v] = cash.get(v, 0.0) + recurring * HOURS_PER_MONTH + (upfront if s.start_month == p.start_month else 0.0)
    covering_cache: dict[tuple[str, int], list[str]] = {}

    def covering(ok: str, p: Period) -> list[str]:
        key = (ok, p.index)
        if key not in covering_cache:
            covering_cache[key] = [k for k in problem.covering(ok, p) if k in V.N]
        return covering_cache[key]

    plan_slots = {k: s for k, s in problem.plan_slots.items() if allowed is None or s.offer["pricing"] in allowed}
    for i, (k, s) in enumerate(plan_slots.items()):
        # a savings plan: v USD/h of spend at the plan's rates, committed for the term; one the team owns: at most
        # its USD/h, already paid (no cost, cash or commitment in this plan)
        v = V.SP[k] = pulp.LpVariable(f"SP_{i}", lowBound=0, upBound=s.given_usd_per_hour)
        if s.owned:
            # AWS applies EC2 Instance Savings Plans before Compute Savings Plans (Savings Plans user guide, "How
            # Savings Plans apply to your AWS usage"): a whisker of cost on an owned Compute plan's use makes the
            # solver fill the Instance plan first, as the bill will
            if str(s.offer.get("offering_class") or "") == "compute":
                V.cost_terms[v] = OWNED_COMPUTE_ORDER_USD
            continue
        V.cost_terms[v] = problem.plan_slot_cost(s)
        whole = HOURS_PER_MONTH * s.term_months
        V.upfront_terms[v] = s.upfront_share * whole
        V.commitment_terms[v] = whole
        for p in periods:
            if s.start_month <= p.start_month < s.end_month:
                cash = V.cash_terms.setdefault(p.index, {})
                cash[v] = cash.get(v, 0.0) + (1.0 - s.upfront_share) * HOURS_PER_MONTH + (
                    s.upfront_share * whole if s.start_month == p.start_month else 0.0)
    plans_cache: dict[tuple[str, int], list[str]] = {}

    def covering_plans(scope: str, p: Period) -> list[str]:
        key = (scope, p.index)
        if key not in plans_cache:
            plans_cache[key] = [k for k in problem.covering_plans(scope, p) if k in V.SP]
        return plans_cache[key]

    sp_use: dict[tuple[str, int], dict] = {}
    # an owned savings plan covers a spend per hour, not whole instances (AWS applies it to each hour's usage): an
    # instance type's units on demand and on owned plans are continuous, their sum whole (sp_twins, od_twin)
    sp_twins: dict[tuple, list] = {}
    od_twin: dict[tuple, Any] = {}
    cb_job: dict[tuple[str, str], dict] = {}
    cb_units: dict[tuple[str, str], float] = {}
    cb_scale: dict[tuple[str, str], float] = {}  # the job's scale on the offer, in units (problem.job_units)
    cb_serve: dict[tuple[str, int], dict[int, dict]] = {}
    cb_at_once: dict[tuple[str, str], list] = {}
    cb_offer: dict[str, dict] = {}
    windows = problem.block_windows()
    share: dict[tuple[str, int], dict] = {}
    spot: dict[tuple[tuple, int], dict] = {}
    spot_caps_of: dict[tuple, int] = {}  # spot group -> its cap (its GPU model's, problem.SpotCaps)
    quota: dict[tuple[tuple, int], dict] = {}
    vid = 0
    quota_rows: dict[tuple, dict] = {}
    quota_cache: dict[str, list] = {}

    def quota_of(ok: str, offer) -> list:
        if ok not in quota_cache:
            quota_cache[ok] = problem.quotas.keys_for(offer)
        return quota_cache[ok]
    for w in problem.workloads:
        cat = pulp.LpContinuous if (w.training or w.divisible or relax) else pulp.LpInteger
        cands = [c for c in problem.cands.get(w.name, []) if allowed is None or c.offer["pricing"] in allowed]
        place = grouped(problem, w)  # placement (and replica shape) binaries
        gkey = {id(c): workload_group(problem, w, c) for c in cands} if place else {}
        groups = sorted(set(gkey.values()))
        if place and len(groups) > 1:
            for gi, g in enumerate(groups):
                V.Y[(w.name, g)] = pulp.LpVariable(f"Y_{safe_name(w.name)}_{gi}", cat=pulp.LpContinuous if relax else pulp.LpBinary,
                                                   lowBound=0, upBound=1)
            m += pulp.lpSum(V.Y[(w.name, g)] for g in groups) == 1, f"place_{safe_name(w.name)}"
        if w.training:  # one synchronous job on one cluster (cluster_group), at most its job-scale units at once
            clusters = sorted({cluster_group(c.offer) for c in cands}) if w.workload.task in ("train", "finetune") \
                else []  # a LoRA job is sized as replicas of one or a few GPUs (issue 5), not laid out whole
            if len(clusters) > 1:
                for gi, g in enumerate(clusters):
                    V.Y[(w.name, g)] = pulp.LpVariable(f"C_{safe_name(w.name)}_{gi}", lowBound=0, upBound=1,
                                                       cat=pulp.LpContinuous if relax else pulp.LpBinary)
                m += pulp.lpSum(V.Y[(w.name, g)] for g in clusters) == 1, f"cluster_{safe_name(w.name)}"
        # --mixed-replicas with a least share (issue 31): z_wsb in {0,1} per replica shape s and block b with demand;
        # its units there <= M z, and its capacity there >= share x demand x z (no top-up replica for a sliver; a
        # shape may run only at the peak, carrying its share there)
        share_of = float(w.min_replica_share) if (w.mixed_replicas and not w.training and not w.divisible) else 0.0
        shape_of = {id(c): replica_shape(c) for c in cands} if share_of > 0 else {}
        shapes = sorted(set(shape_of.values())) if share_of > 0 else []
        sigma = {sh: si for si, sh in enumerate(shapes)} if len(shapes) > 1 else {}
        n1 = w.redundancy > 0 and not w.training and not w.divisible and bool(cands)
        most_loss = max((failure_loss(c) for c in cands), default=0.0) if n1 else 0.0
        bound = {id(c): _unit_bound(w, c, problem.blocks, most_loss) for c in cands} \
            if (V.Y or n1 or sigma) and not w.training else {}
        # N+1 (issue 26): L_w >= the failure loss of every candidate used (delta_wc), and in every block the capacity
        # less L_w carries the redundancy share of the demand
        # L_w is at least the least failure loss of any candidate: some unit serves every active block (a valid
        # bound that the LP relaxation, whose indicators may be near 0, does not find alone)
        # (not under ROI: a workload may then serve nothing)
        least_loss = min((failure_loss(c) for c in cands), default=0.0) if n1 and not roi else 0.0
        loss_var = pulp.LpVariable(f"L_{safe_name(w.name)}", lowBound=float(least_loss)) if n1 else None
        used_by: dict[int, list] = {}
        work_terms: dict = {}
        cluster_work: dict[tuple, dict] = {}
        for bi, b in enumerate(problem.blocks):
            p = problem.period_of(b)
            if w.training:
                usable = problem.before_deadline(w, b)
                if usable <= 0:
                    continue
            elif not problem.active(w, b):
                continue
            cap_terms: dict = {}
            shape_cap: dict[tuple, dict] = {}
            shape_bin: dict[tuple, Any] = {}
            rep_terms: dict = {}
            rep_nonspot: dict = {}
            inst_terms: dict = {}
            inst_nonspot: dict = {}
            zone_terms: dict[str, dict] = {}
            regional: dict = {}
            for c in cands:
                ok = c.okey
                vid += 1
                k = float(c.instances_per_unit)
                if w.training and problem.max_instances is not None and k > problem.max_instances:
                    continue  # a job's unit runs whole: more instances at once than the quota allows
                kind = purchase_kind(c.offer)
                if kind == CAPACITY_BLOCK:
                    if not w.training and not any(a <= p.start_month and p.end_month <= b for a, b in windows):
                        continue  # a block lasts at most 182 days: not through a period of over 5 months
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    if w.training:  # unit-hours used, bought as whole unit-days of as many units as run at once
                        cb_job.setdefault((w.name, ok), {})[v] = usable * p.months
                        cb_units.setdefault((w.name, ok), float(c.instances_per_unit))
                        cb_scale.setdefault((w.name, ok), job_units(c))
                        cb_at_once.setdefault((w.name, ok), []).append(v)
                    else:  # instances running, bought for a window of whole periods
                        cb_serve.setdefault((ok, p.index), {}).setdefault(bi, {})[v] = k
                    cb_offer[ok] = c.offer
                elif kind == "savings_plan":
                    scope = savings_plan_scope(c.offer)
                    # a training job runs in bursts (its unit-hours here are averaged over its window): a plan's
                    # spend per hour would be checked against the average, not the hours it runs -- on demand
                    if w.training or not covering_plans(scope, p):
                        continue
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    sp_use.setdefault((scope, bi), {})[v] = c.usd_per_unit_hour
                    if scope.startswith("owned:"):  # its instances may run partly on it (below: sp_twins)
                        V.cost_terms[v] = OWNED_USE_TIEBREAK * b.hours * p.months
                        sp_twins.setdefault((w.name, physical_key(c), bi), []).append(v)
                elif c.committed:
                    if not covering(ok, p):
                        continue
                    v = pulp.LpVariable(f"A_{vid}", lowBound=0, cat=cat)
                    V.A[(w.name, ok, bi)] = v
                    if owned_id(c.offer):  # free: a tie-breaker so the plan runs no more on it than it needs
                        V.cost_terms[v] = OWNED_USE_TIEBREAK * b.hours * p.months
                    share.setdefault((ok, bi), {})[v] = k
                else:
                    v = pulp.LpVariable(f"X_{vid}", lowBound=0, cat=cat)
                    V.X[(w.name, ok, bi)] = v
                    if c.offer["pricing"] == "on_demand" and not w.training:
                        od_twin[(w.name, physical_key(c), bi)] = v
                    V.cost_terms[v] = c.usd_per_unit_hour * b.hours * p.months
                    cash = V.cash_terms.setdefault(p.index, {})
                    cash[v] = cash.get(v, 0.0) + c.usd_per_unit_hour * b.hours
                    if c.offer["pricing"] == "spot":
                        spot.setdefault((spot_group(c.offer), bi), {})[v] = k
                        spot_caps_of[spot_group(c.offer)] = spot_cap(problem.spot_capacity, c.offer)
                if problem.quotas is not None and kind != CAPACITY_BLOCK:  # --quota: running instances (issue 26)
                    for qk, per in quota_of(ok, c.offer):
                        if per is None:
                            v.upBound = 0  # its size is unknown: no count of it can be shown to fit
                        else:
                            qt = quota_rows.setdefault((qk, bi), {})
                            qt[v] = qt.get(v, 0.0) + k * float(per)
                if problem.max_instances is not None and not c.committed:  # reservations: counted by N below
                    q = quota.setdefault((spot_group(c.offer), bi), {})
                    q[v] = q.get(v, 0.0) + k
                if place and (w.name, gkey[id(c)]) in V.Y:
                    y = V.Y[(w.name, gkey[id(c)])]
                    m += pulp.LpAffineExpression({v: 1.0, y: -bound[id(c)]}) <= 0
                if sigma and float(b.demand.get(w.name, 0.0)) > 0:  # its shape runs in this block: z_wsb
                    sh = shape_of[id(c)]
                    if sh not in shape_bin:
                        shape_bin[sh] = pulp.LpVariable(f"Sh_{safe_name(w.name)}_{sigma[sh]}_{bi}", lowBound=0,
                                                        upBound=1, cat=pulp.LpContinuous if relax else pulp.LpBinary)
                    m += pulp.LpAffineExpression({v: 1.0, shape_bin[sh]: -bound[id(c)]}) <= 0
                    shape_cap.setdefault(sh, {})[v] = c.throughput_per_unit
                if w.training:
                    a_work = c.throughput_per_unit * 3600.0 * usable * p.months
                    work_terms[v] = a_work
                    cap = job_units(c)  # at most the job's scale at once, and within the quota
                    if problem.max_instances is not None:
                        cap = min(cap, float(problem.max_instances // k))
                    if math.isfinite(cap):
                        v.upBound = cap if v.upBound is None else min(v.upBound, cap)
                    g = cluster_group(c.offer)
                    if (w.name, g) in V.Y:  # the work done on a cluster: none unless the job runs there
                        cluster_work.setdefault(g, {})[v] = a_work
                    continue
                cap_terms[v] = c.throughput_per_unit
                if n1:
                    used_by.setdefault(id(c), []).append((v, bi))
                rep_terms[v] = float(c.replicas_per_unit)
                inst_terms[v] = k
                if c.offer["pricing"] != "spot":
                    rep_nonspot[v] = float(c.replicas_per_unit)
                    inst_nonspot[v] = k
                zone = zone_of(c.offer)  # issue 26: offers without zones count as one location
                if zone:
                    zone_terms.setdefault(zone, {})[v] = k
                else:
                    regional.setdefault((str(c.offer["provider"]), str(c.offer["region"])), {})[v] = k
            if w.training:
                # a job's data-parallel group crosses instances only over a cluster fabric: on offers without one
                # (Candidate.max_units = 1) it runs on one instance at a time
                # (an LpVariable is falsy before the solve: `A.get(...) or X.get(...)` dropped every A variable)
                lone = {}
                for c in cands:
                    if c.max_units == 1:
                        v = V.A.get((w.name, c.okey, bi))
                        if v is None:
                            v = V.X.get((w.name, c.okey, bi))
                        if v is not None:
                            lone[v] = float(c.instances_per_unit)
                if len(lone) > 0:
                    m += pulp.LpAffineExpression(lone) <= 1.0, f"nofabric_{safe_name(w.name)}_{bi}"
                continue
            d = float(b.demand.get(w.name, 0.0))
            tag = f"{safe_name(w.name)}_{bi}"
            if roi:
                s = pulp.LpVariable(f"S_{tag}", lowBound=0, upBound=d)
                V.S[(w.name, bi)] = s
                V.value_terms[s] = (w.value_per_million_tokens or 0.0) * 3600.0 * b.hours * p.months / 1e6
                m += pulp.LpAffineExpression({**cap_terms, s: -1.0}) >= 0, f"demand_{tag}"
            elif d > 0:
                scale = 1000.0 / d
                m += pulp.LpAffineExpression({v: min(a * scale, 1000.0) if cat == pulp.LpInteger else a * scale
                                              for v, a in cap_terms.items()}) >= 1000.0, f"demand_{tag}"
            if sigma and d > 0:
                for si, (sh, terms) in enumerate(sorted(shape_cap.items())):
                    row = {v: a / d for v, a in terms.items()}
                    row[shape_bin[sh]] = -share_of
                    m += pulp.LpAffineExpression(row) >= 0, f"share_{tag}_{si}"
            if n1 and (roi or d > 0):
                # capacity less the largest failure loss >= share x demand (served demand under ROI)
                scale = 1000.0 / max(d, 1e-3) if d > 0 else 1.0  # a demand of 1e-308 tokens/s: no inf
                row = {v: a * scale for v, a in cap_terms.items()}
                row[loss_var] = -scale
                if roi:
                    row[V.S[(w.name, bi)]] = -w.redundancy * scale
                    m += pulp.LpAffineExpression(row) >= 0, f"nplus1_{tag}"
                else:
                    m += pulp.LpAffineExpression(row) >= 1000.0 * w.redundancy, f"nplus1_{tag}"
            if w.min_replicas > 0:
                m += pulp.LpAffineExpression(rep_terms) >= w.min_replicas, f"minrep_{tag}"
                if not w.divisible:
                    m += pulp.LpAffineExpression(inst_terms) >= w.min_replicas, f"mininst_{tag}"
                if not w.spot_only_ok:
                    m += pulp.LpAffineExpression(rep_nonspot) >= w.min_replicas, f"minrep_nonspot_{tag}"
                    if not w.divisible:
                        m += pulp.LpAffineExpression(inst_nonspot) >= w.min_replicas, f"mininst_nonspot_{tag}"
                if problem.spread == "zones" and w.min_replicas > 1:
                    us = {}
                    for zi, (zone, terms) in enumerate(sorted(zone_terms.items())):
                        u = pulp.LpVariable(f"u_{tag}_{zi}", lowBound=0, upBound=1)
                        m += pulp.LpAffineExpression({**terms, u: -1.0}) >= 0
                        us[u] = 1.0
                    # a region's regional instances count as distinct zones up to the zones it has
                    for ri, (_reg, terms) in enumerate(sorted(regional.items())):
                        rho = pulp.LpVariable(f"r_{tag}_{ri}", lowBound=0, upBound=ZONES_PER_REGION)
                        m += pulp.LpAffineExpression({**terms, rho: -1.0}) >= 0
                        us[rho] = 1.0
                    m += pulp.LpAffineExpression(us) >= spread_zones_needed(w.min_replicas), f"spread_{tag}"
        if n1:
            # one indicator per distinct failure loss, not per candidate: the loss is a property of the hardware
            # (throughput of a unit over its instances or replicas), shared by every price and region of it, so
            # the same rows with far fewer binaries (the example plan: ~25 levels for ~500 candidates)
            used = [(c, float(failure_loss(c))) for c in cands if used_by.get(id(c))]
            top: dict[float, float] = {}  # level (9 significant digits) -> the largest loss in it
            for c, loss in used:
                key = float(f"{loss:.9g}")
                top[key] = max(top.get(key, 0.0), loss)
            levels: dict[float, Any] = {}
            for li, (key, loss) in enumerate(sorted(top.items())):
                levels[key] = pulp.LpVariable(f"D_{safe_name(w.name)}_{li}", lowBound=0, upBound=1,
                                              cat=pulp.LpContinuous if relax else pulp.LpBinary)
                m += pulp.LpAffineExpression({loss_var: 1.0, levels[key]: -loss}) >= 0
            # a level's units in each block, each over its bound, at most the level's count of candidates x D
            # (one row per level and block: summed, the rows v <= bound x D of each candidate; 1,570 rows of those
            # made each MILP of the example plan 6 s instead of 0.8 s)
            rows: dict[tuple, dict] = {}
            for c, loss in used:
                key = float(f"{loss:.9g}")
                for v, bi in used_by[id(c)]:
                    rows.setdefault((key, bi), {})[v] = 1.0 / bound[id(c)]
            for (key, _b), row in rows.items():
                row = dict(row)
                row[levels[key]] = -float(len(row))
                m += pulp.LpAffineExpression(row) <= 0
        if w.training:
            need = float(problem.work_flops[w.name])
            for gi, (g, terms) in enumerate(sorted(cluster_work.items())):
                # work on cluster g <= the whole job x Y_g (scaled like the work row): one cluster per job
                m += pulp.LpAffineExpression({**{v: a / need * 1000.0 for v, a in terms.items()},
                                              V.Y[(w.name, g)]: -1000.0}) <= 0, f"onecluster_{safe_name(w.name)}_{gi}"
            if roi:
                z = pulp.LpVariable(f"Z_{safe_name(w.name)}", cat=pulp.LpContinuous if relax else pulp.LpBinary)
                V.Z[w.name] = z
                V.value_terms[z] = float(w.value_usd or 0.0)
                m += pulp.LpAffineExpression({**{v: a / need * 1000.0 for v, a in work_terms.items()}, z: -1000.0}) >= 0, \
                    f"work_{safe_name(w.name)}"
            else:
                m += pulp.LpAffineExpression({v: a / need * 1000.0 for v, a in work_terms.items()}) >= 1000.0, \
                    f"work_{safe_name(w.name)}"
    keys = list(V.N)
    ok_index = {ok: i for i, ok in enumerate(sorted({s.okey for s in slots.values()}))}
    for (ok, bi), terms in share.items():
        p = problem.period_of(problem.blocks[bi])
        m += pulp.LpAffineExpression({**terms, **{V.N[k]: -1.0 for k in covering(ok, p)}}) <= 0, \
            f"share_{ok_index[ok]}_{bi}"
    for j, ((g, bi), terms) in enumerate(sorted(spot.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
        m += pulp.LpAffineExpression(terms) <= float(spot_caps_of.get(g, int(problem.spot_capacity))), f"spot_{j}_{bi}"
    if not relax:
        for j, (key, covered) in enumerate(sorted(sp_twins.items(), key=lambda kv: str(kv[0]))):
            od = od_twin.get(key)
            if od is None:
                continue  # no on-demand twin: whole units on the plan
            for v in covered + [od]:
                v.cat = pulp.LpContinuous
            whole = pulp.LpVariable(f"SPW_{j}", lowBound=0, cat=pulp.LpInteger)
            m += pulp.LpAffineExpression({od: 1.0, **{v: 1.0 for v in covered}, whole: -1.0}) == 0, f"spw_{j}"
    scope_index = {sc: i for i, sc in enumerate(sorted({sc for sc, _ in sp_use}))}
    for (scope, bi), terms in sp_use.items():
        p = problem.period_of(problem.blocks[bi])
        m += pulp.LpAffineExpression({**terms, **{V.SP[k]: -1.0 for k in covering_plans(scope, p)}}) <= 0, \
            f"plan_{scope_index[scope]}_{bi}"
    wl = {w.name: w for w in problem.workloads}
    for j, ((wn, ok), terms) in enumerate(sorted(cb_job.items())):
        # training on capacity blocks: U units bought (as many as run at once, at most one block's 64 instances;
        # quota), D unit-days (each unit at least a day, at most the job's window in days): unit-hours used
        # <= 24 D; paid whole in the job's first month
        w, k = wl[wn], cb_units[(wn, ok)]
        units_max = max(1, int(CAPACITY_BLOCK_MAX_INSTANCES // k))
        scale = cb_scale.get((wn, ok), math.inf)
        if math.isfinite(scale):  # never more units at once than the job runs (its scale on this offer)
            units_max = max(1, min(units_max, int(scale)))
        if problem.max_instances is not None:
            units_max = max(0, min(units_max, int(problem.max_instances // k)))
        g = 1.0 + max(0.0, float(w.schedule_margin))
        # the schedule margin (issue 26) buys time, not instances: each unit's blocks may run past the job's
        # window by the margin (the work is still done inside it, as the work rows say)
        days_max = problem.job_block_days(w, margin=g - 1.0)
        window = problem.job_window_hours(w)
        f_days, rem = int(window // 24.0), window - 24.0 * int(window // 24.0)
        u = V.CB[("job_units", wn, ok)] = pulp.LpVariable(f"CBU_{j}", lowBound=0, upBound=units_max, cat=cat_int)
        d = V.CB[("job", wn, ok)] = pulp.LpVariable(f"CBJ_{j}", lowBound=0, upBound=units_max * days_max, cat=cat_int)
        # the unit-days bought hold (1 + margin) x the unit-hours the estimate uses
        m += pulp.LpAffineExpression({**{v: a * g for v, a in terms.items()}, d: -24.0}) <= 0, f"cbjob_{j}"
        m += pulp.LpAffineExpression({u: 1.0, d: -1.0}) <= 0, f"cbday_{j}"
        m += pulp.LpAffineExpression({d: 1.0, u: -float(days_max)}) <= 0, f"cbwin_{j}"
        # whole days in a window that is not: a unit's last day gives only the window's remaining hours
        # (30 h: one day and 6 h), so unit-hours <= rem x D + (24 - rem) x floor(window / 24) x U
        # inside the window (without the margin, which may run past it): each unit at most the window's hours
        m += pulp.LpAffineExpression({**terms, u: -window}) <= 0, f"cbhours_{j}"
        if rem > 1e-9 and g <= 1.0:
            m += pulp.LpAffineExpression({**terms, d: -rem, u: -(24.0 - rem) * f_days}) <= 0, f"cbrem_{j}"
        for i, v in enumerate(cb_at_once[(wn, ok)]):
            m += pulp.LpAffineExpression({v: 1.0, u: -1.0}) <= 0, f"cbonce_{j}_{i}"
        usd = float(cb_offer[ok]["usd_per_hour"]) * k * 24.0
        V.cost_terms[d] = V.upfront_terms[d] = V.commitment_terms[d] = usd
        first = next((p.index for p in periods if p.start_month <= w.start_month < p.end_month), 0)
        cash = V.cash_terms.setdefault(first, {})
        cash[d] = cash.get(d, 0.0) + usd
    serve_ok = sorted({ok for ok, _ in cb_serve})
    for j, ok in enumerate(serve_ok):
        # serving on capacity blocks: instances bought for a window of whole periods (at most 5 months), paid whole
        # in its first month; the blocks covering a period hold what runs in each of its blocks
        cover: dict[int, dict] = {}
        for wi, (a, b) in enumerate(windows):
            n = V.CB[("window", ok, a, b)] = pulp.LpVariable(f"CBW_{j}_{wi}", lowBound=0,
                                                             upBound=CAPACITY_BLOCK_MAX_INSTANCES, cat=cat_int)
            usd = float(cb_offer[ok]["usd_per_hour"]) * 24.0 * block_days_of(b - a)
            V.cost_terms[n] = V.upfront_terms[n] = V.commitment_terms[n] = usd
            pi = next(p.index for p in periods if p.start_month == a)
            cash = V.cash_terms.setdefault(pi, {})
            cash[n] = cash.get(n, 0.0) + usd
            for p in periods:
                if a <= p.start_month and p.end_month <= b:
                    cover.setdefault(p.index, {})[n] = -1.0
        for (ok2, pi), by_block in cb_serve.items():
            if ok2 != ok:
                continue
            for bi, terms in by_block.items():
                m += pulp.LpAffineExpression({**terms, **cover.get(pi, {})}) <= 0, f"cbserve_{j}_{bi}"
    if problem.max_instances is not None:
        # committed instances count in every block of the periods they cover
        for k in keys:
            s = slots[k]
            for bi, b in enumerate(problem.blocks):
                p = problem.period_of(b)
                if s.start_month <= p.start_month < s.end_month:
                    q = quota.setdefault((spot_group(s.offer), bi), {})
                    q[V.N[k]] = q.get(V.N[k], 0.0) + 1.0
        for j, ((g, bi), terms) in enumerate(sorted(quota.items(), key=lambda kv: (kv[0][0], kv[0][1]))):
            m += pulp.LpAffineExpression(terms) <= float(problem.max_instances), f"quota_{j}_{bi}"
    for j, ((qk, bi), terms) in enumerate(sorted(quota_rows.items(), key=lambda kv: (kv[0][0].label, kv[0][1]))):
        m += pulp.LpAffineExpression(terms) <= float(problem.quotas.headroom(qk)) + 1e-9, f"vquota_{j}_{bi}"
    cost = pulp.LpAffineExpression(V.cost_terms)
    bg = problem.budgets
    if with_budgets:
        if bg.monthly is not None:
            for pi, terms in sorted(V.cash_terms.items()):
                m += pulp.LpAffineExpression(terms) <= float(bg.monthly) + 0.005, f"budget_{pi}"
        if bg.total is not None:
            m += cost <= float(bg.total) + 0.005, "budget_total"
        if bg.upfront is not None:
            m += pulp.LpAffineExpression(V.upfront_terms) <= float(bg.upfront) + 0.005, "max_upfront"
        if bg.commitment is not None:
            m += pulp.LpAffineExpression(V.commitment_terms) <= float(bg.commitment) + 0.005, "max_commitment"
    if roi:
        m += pulp.LpAffineExpression({**V.value_terms, **{v: -lam * a for v, a in V.cost_terms.items()}})
    else:
        m += cost
    return m, V


def safe_name(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]
