"""Safe dominance pruning of the candidates (DESIGN.md "Making it fast"): an offer is dropped only when others that
stand in for it in every plan remain (:func:`prune_fleet`, :func:`dominates`), and commitments only training jobs could
use are dropped when they cost more than the jobs on demand (:func:`drop_lone_training_commitments`). Every rule keeps
the optimum; the docstrings give the exchange argument.
"""

from __future__ import annotations

import math
from typing import Any

from gpuopt.kernel.records import HOURS_PER_MONTH
from optimizer.planning.candidates import COMMITTED, Candidate
from optimizer.planning.horizon import TERM_MONTHS
from optimizer.planning.owned import owned_id
from optimizer.planning.problem import (
    HOURLY_UNCAPPED,
    FleetBlock,
    FleetProblem,
    FleetWorkload,
    cluster_group,
    commitment_parts,
    job_units,
    placement_group,
    purchase_kind,
    replica_shape,
    spot_cap,
    spot_group,
)
from providers.zones import zone_of


def dominates(o2: dict[str, Candidate], o1: dict[str, Candidate], p2: float, p1: float,
              one_shape: frozenset[str] | set[str] = frozenset()) -> bool:
    """Offer o2 can replace offer o1 for every workload o1 can host, at no more cost. (o2/o1 map workload name ->
    that workload's candidate on the offer.) Two ways:

    - unit for unit: o2 costs no more per hour and, for each workload, its unit uses no more instances and gives
      no less throughput and no fewer replicas;
    - m instances for one (single-instance units on both): m x o2 costs no more than o1 and, for each workload,
      m units of o2 give at least o1's throughput and replicas — e.g. GCP a2-ultragpu-4g is exactly two
      a2-ultragpu-2g at twice the price, so the 4g never needs to be considered (the 2g pair can do all it does).
      (With the instance rule of min_replicas, m instances of o2 count as at least one of o1.)

    ``one_shape``: workloads that run one replica shape per region (``FleetWorkload.mixed_replicas`` false, issue
    31): for them o2 replaces o1 only with replicas of the same shape (``replica_shape``), since a plan that runs o1
    beside another offer of o1's shape could not swap o1 alone for a unit of another shape.
    """
    if not o1:
        return False
    if one_shape and any(w in one_shape and w in o2 and replica_shape(o2[w]) != replica_shape(c1)
                         for w, c1 in o1.items()):
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
    # a unit limited to one instance at a time (a training job on an offer without a cluster fabric: the model's
    # nofabric row) replaces only another such unit, one for one (a breaker's 4 x g6e.xlarge spot "replaced" the
    # EFA g6e.12xlarge a 24-hour job needed)
    for w, c1 in o1.items():
        c2 = o2[w]
        if c2.max_units is not None and (c1.max_units is None or m > 1):
            return False
    return m * p2 <= p1 * (1 + 1e-9)


def _same_place(a: dict[str, Any], b: dict[str, Any], placement: str, spread: str, any_term: bool = False,
                same_payment: bool = False) -> bool:
    """Dominance is only safe between offers a plan may swap: the same placement group (and, when replicas are
    spread over zones, the same zone) and, for commitments, the same term."""
    if placement_group(a, placement) != placement_group(b, placement):
        return False
    if spread == "zones" and zone_of(a) != zone_of(b):  # one failure domain (providers.zones, issue 26)
        return False
    if a["pricing"] in COMMITTED and a["pricing"] != b["pricing"] and not any_term:
        return False
    if same_payment and str(a.get("payment") or "") != str(b.get("payment") or ""):
        return False  # under a cash or upfront limit, a dearer no-upfront term may be the one that fits
    return True


def prune_fleet(cands: dict[str, list[Candidate]], workloads: list[FleetWorkload], blocks: list[FleetBlock],
                work_flops: dict[str, float], spot_capacity: int, placement: str = "any",
                spread: str = "", commit_cost: dict[str, float] | None = None,
                same_payment: bool = False) -> tuple[dict[str, list[Candidate]], int]:
    """Drop candidates that can never improve the plan (safe rules only; DESIGN.md "Pruning must be safe").

    Offers are compared only within what a plan may swap (:func:`_same_place`: the placement group, the zone when
    spreading over zones, the commitment term; with ``same_payment``, under a monthly-cash or upfront limit, the
    payment option too: an all-upfront term that is cheaper over the horizon may not fit the month it is paid in).
    ``commit_cost`` (offer key -> USD over the horizon of one instance)
    is given for the commitments bought once, at the horizon's start, and covering all of it
    (:meth:`FleetProblem.single_slot_costs`): those are compared by that cost, across terms (on a 12-month horizon a
    3-year term is charged 36 months, so a 1-year one with the capacity for less replaces it).

    - committed offers are shared by the workloads: offer o1 is dropped when another committed offer o2 dominates it
      (:func:`dominates`) for EVERY workload o1 can host: replacing each o1 instance by o2 keeps every constraint
      and does not raise the cost. Ties keep the first by key.
    - on-demand and Flex-start offers (uncapped, billed per block; Flex-start only training jobs use): per workload, a Pareto front of (USD per unit-hour, throughput)
      for serving (with a redundancy floor of two or more, one per replicas and instances per unit up to it), then
      "m copies of a cheaper one" (with such a floor, of as many instances up to it); for training (continuous) only the lowest USD per unit of work;
    - spot offers are capped per instance type and region: of one capped group only its cheapest zone is kept (they
      share the cap; not when spreading over zones), and a spot offer is dropped only when dominating spot offers of
      other groups have, together, the capacity for the peak need of every spot-eligible workload.
    - capacity blocks and savings-plan rates are kept, every one: the model sizes them (a block's days, a plan's
      USD/h), so no instance-for-instance rule compares them with hourly or reserved offers; so are the rows of
      commitments the team owns (optimizer.planning.owned: $0 in limited supply, they dominate nothing and are
      never dropped; the rules among the other offers hold whatever they add).
    Returns (kept candidates per workload, number dropped).
    """
    def kept_out(c: Candidate) -> bool:  # sized by the model, or owned ($0 in limited supply: never a dominator)
        return bool(purchase_kind(c.offer)) or bool(owned_id(c.offer))

    bought = {w: [c for c in cs if kept_out(c)] for w, cs in cands.items()}
    if any(bought.values()):
        rest = {w: [c for c in cs if not kept_out(c)] for w, cs in cands.items()}
        kept, dropped = prune_fleet(rest, workloads, blocks, work_flops, spot_capacity, placement, spread,
                                    commit_cost, same_payment)
        return {w: kept.get(w, []) + bought[w] for w in cands}, dropped
    before = sum(len(v) for v in cands.values())
    one_shape = frozenset(w.name for w in workloads if not w.training and not w.divisible and not w.mixed_replicas)
    by_offer: dict[str, dict[str, Candidate]] = {}
    offer_of: dict[str, dict[str, Any]] = {}
    for w, cs in cands.items():
        for c in cs:
            k = c.okey
            by_offer.setdefault(k, {})[w] = c
            offer_of[k] = c.offer

    def price(k: str) -> float:
        return float(offer_of[k]["usd_per_hour"])

    cc = commit_cost or {}

    def term_cost(k: str) -> float:
        o = offer_of[k]
        return cc[k] if k in cc else price(k) * HOURS_PER_MONTH * TERM_MONTHS[o["pricing"]]

    def commit_dominates(j: str, k: str) -> bool:
        """j replaces k; j is a rival of k (below): same loc, and the same term unless both are in cc, so
        _same_place holds by construction."""
        if j in cc and k in cc:  # both bought once for the whole horizon: compare what they cost in it
            return dominates(by_offer[j], by_offer[k], cc[j], cc[k], one_shape)
        return dominates(by_offer[j], by_offer[k], price(j), price(k), one_shape)

    def loc(o: dict[str, Any]) -> tuple:
        """What _same_place compares besides the term: only offers with the same loc can dominate each other."""
        return placement_group(o, placement) + (zone_of(o) if spread == "zones" else ()) + \
            ((str(o.get("payment") or ""),) if same_payment else ())

    committed = sorted((k for k in by_offer if offer_of[k]["pricing"] in COMMITTED), key=lambda k: (term_cost(k), k))
    keep_commit: list[str] = []
    kept_cc: dict[tuple, list[str]] = {}      # kept offers of the cross-term kind, by loc
    kept_term: dict[tuple, list[str]] = {}    # kept offers by loc and term
    for k in committed:  # cheapest first: a dominator always comes before what it dominates
        lk = loc(offer_of[k])
        rivals = (kept_cc.get(lk, []) if k in cc else []) + kept_term.get(lk + (offer_of[k]["pricing"],), [])
        if not any(commit_dominates(j, k) for j in rivals):
            keep_commit.append(k)
            if k in cc:
                kept_cc.setdefault(lk, []).append(k)
            kept_term.setdefault(lk + (offer_of[k]["pricing"],), []).append(k)
    need = 0.0
    for w in workloads:
        if w.allow_spot:
            spot_c = [c for c in cands.get(w.name, []) if c.offer["pricing"] == "spot"]
            if spot_c:
                need += max(_peak_units(w, c, blocks, work_flops) * c.instances_per_unit for c in spot_c)
    spots = sorted((k for k in by_offer if offer_of[k]["pricing"] == "spot"), key=lambda k: (price(k), k))
    keep_spot: list[str] = []
    seen_group: set[tuple] = set()
    for k in spots:
        g = spot_group(offer_of[k])
        if spread != "zones" and g in seen_group:
            continue  # a dearer zone of a group already kept: same capacity under the same cap
        doms = [j for j in keep_spot if _same_place(offer_of[j], offer_of[k], placement, spread)
                and spot_group(offer_of[j]) != g and dominates(by_offer[j], by_offer[k], price(j), price(k), one_shape)]
        groups = {spot_group(offer_of[j]): spot_cap(spot_capacity, offer_of[j]) for j in doms}
        if doms and sum(groups.values()) >= need - 1e-9:
            continue
        keep_spot.append(k)
        seen_group.add(g)
    keep = set(keep_commit) | set(keep_spot)
    out: dict[str, list[Candidate]] = {}
    for w in workloads:
        cs = cands.get(w.name, [])
        od_all = [c for c in cs if c.offer["pricing"] in HOURLY_UNCAPPED]
        groups: dict[tuple, list[Candidate]] = {}
        for c in od_all:
            key = placement_group(c.offer, placement) + (zone_of(c.offer) if spread == "zones" else ()) + \
                ((replica_shape(c),) if w.name in one_shape else ())
            groups.setdefault(key, []).append(c)
        od: list[Candidate] = []
        if w.training and w.workload.task in ("train", "finetune"):  # one cluster per job: per cluster, the
            groups = {}                                               # lowest USD per unit of work (and the fast)
            for c in od_all:
                groups.setdefault(cluster_group(c.offer), []).append(c)
        elif w.training:  # LoRA: continuous, not placed: only the lowest USD per unit of work matters
            groups = {(): od_all} if od_all else {}
        # a floor of one replica on one instance is met by any unit: only from two on do replicas and instances per
        # unit tell units apart (counted up to the floor: more than it is the same)
        floors = (not w.training) and w.min_replicas > 1
        mr = int(w.min_replicas)
        if w.training:
            od.extend(_cluster_front([_training_front(grp) for grp in groups.values()])
                      if w.workload.task in ("train", "finetune") else
                      [c for grp in groups.values() for c in _training_front(grp)])
        for grp in groups.values():
            if w.training:
                continue
            # with a redundancy floor, units of other replicas or instances per unit are not on one staircase: a
            # dearer unit of less throughput may be the cheap way to the floor (a breaker's case: 3 x a 1-replica
            # unit "optimal" at $3,285 where it plus a 2-replica unit cost $2,263)
            classes: dict[tuple, list[Candidate]] = {}
            for c in grp:
                classes.setdefault((min(c.replicas_per_unit, mr), min(c.instances_per_unit, mr)) if floors else (),
                                   []).append(c)
            front = []
            for cls in classes.values():
                best = -1.0
                for c in sorted(cls, key=lambda c: (c.usd_per_unit_hour, -c.throughput_per_unit, c.okey)):
                    if c.throughput_per_unit > best * (1 + 1e-12):
                        front.append(c)
                        best = c.throughput_per_unit
            # uncapped and billed per block: an offer that m copies of a cheaper one match is never needed (with a
            # floor, only by units of as many instances: one of fewer would not count as many towards it)
            od += [c for c in front if not any(
                d is not c and (not floors or min(d.instances_per_unit, mr) == min(c.instances_per_unit, mr))
                and dominates({w.name: d}, {w.name: c}, d.usd_per_unit_hour, c.usd_per_unit_hour)
                for d in front if (d.usd_per_unit_hour, d.okey) < (c.usd_per_unit_hour, c.okey))]
        out[w.name] = od + [c for c in cs if c.offer["pricing"] not in HOURLY_UNCAPPED and c.okey in keep]
    return out, before - sum(len(v) for v in out.values())


def job_hourly_cost(problem: "FleetProblem", w: FleetWorkload) -> float:
    """An upper bound, USD, on what training job ``w`` costs alone on on-demand capacity: the least, over its
    on-demand candidates that can finish its work before the deadline at the job's scale (``job_units``; one
    instance at a time on an offer without a cluster fabric), of work / (throughput x 3600) x USD per unit-hour,
    charged at the worst ratio of block hours to usable hours (blocks are split at deadlines, so that is 1 in a
    plan built by :func:`make_problem`). ``math.inf`` when none can (or ``w`` is not a training job)."""
    if not w.training:
        return math.inf
    need = float(problem.work_flops.get(w.name, 0.0))
    use = [(problem.before_deadline(w, b), b.hours, problem.months(b)) for b in problem.blocks]
    use = [(u, h, n) for u, h, n in use if u > 1e-12]
    if not use:
        return math.inf
    window = sum(u * n for u, _, n in use)
    worst = max(h / u for u, h, _ in use)
    best = math.inf
    for c in problem.cands.get(w.name, []):
        if c.offer["pricing"] != "on_demand" or c.throughput_per_unit <= 0:
            continue
        cap = job_units(c)
        if c.max_units is not None:
            cap = min(cap, float(c.max_units))
        if c.max_units == 1:
            cap = min(cap, 1.0 / float(c.instances_per_unit))
        if problem.max_instances is not None:
            cap = min(cap, float(problem.max_instances // max(1, int(c.instances_per_unit))))
        if cap <= 0 or c.throughput_per_unit * 3600.0 * cap * window < need * (1 + 1e-9):
            continue
        best = min(best, need / (c.throughput_per_unit * 3600.0) * c.usd_per_unit_hour * worst)
    return best


def drop_lone_training_commitments(problem: "FleetProblem") -> "FleetProblem":
    """The problem without the reservations that only training jobs could use and that cost more than those jobs
    would on on-demand capacity (safe: the optimum is kept).

    A committed offer o that no serving workload can use is bought, if at all, for training jobs. Take a plan that
    buys N_o >= 1 of it: moving every job that uses o to its cheapest on-demand plan (:func:`job_hourly_cost`, an
    upper bound c_j of what the job costs alone, deadline met) and dropping the N_o instances changes the cost by
    at most sum_j c_j - N_o x min_s c_os <= 0 when one instance of o costs at least sum_j c_j in its cheapest slot
    (c_os: FleetProblem.slot_cost). Under a monthly budget one month of its recurring charge must also be at least
    sum_j c_j (the jobs' hourly spend then fits in any month the dropped instances paid for); with a quota per
    instance type nothing is dropped (the on-demand instances might not fit it). Jobs' other commitments and
    serving are untouched. Without this the example plan's two training jobs carried ~80 reservations each in every
    node of the placement search (issue 25: 23 leaf MILPs of 1.5-2.3k integers)."""
    if problem.capped:
        return problem
    serving_offers = {c.okey for w in problem.workloads if not w.training
                      for c in problem.cands.get(w.name, []) if c.committed}
    users: dict[str, list[str]] = {}
    for w in problem.workloads:
        if w.training:
            for c in problem.cands.get(w.name, []):
                if c.offer["pricing"] in COMMITTED and c.okey not in serving_offers:
                    users.setdefault(c.okey, []).append(w.name)
    if not users:
        return problem
    ub = {w.name: job_hourly_cost(problem, w) for w in problem.workloads if w.training}
    slot_min: dict[str, float] = {}
    for s in problem.slots.values():
        cost = problem.slot_cost(s)
        slot_min[s.okey] = min(slot_min.get(s.okey, math.inf), cost)
    drop: set[str] = set()
    for ok, ws in users.items():
        total = sum(ub[w] for w in ws)
        if not math.isfinite(total) or ok not in slot_min or slot_min[ok] < total:
            continue
        if problem.budgets.monthly is not None:
            offer = next(c.offer for c in problem.cands[ws[0]] if c.okey == ok)
            _, recurring = commitment_parts(offer)
            if recurring * HOURS_PER_MONTH < total:
                continue
        drop.add(ok)
    if not drop:
        return problem
    cands = {w: [c for c in cs if c.okey not in drop or c.offer["pricing"] not in COMMITTED] for w, cs in
             problem.cands.items()}
    return problem.replace(cands=cands, pruned=problem.pruned + sum(len(v) for v in problem.cands.values())
                           - sum(len(v) for v in cands.values()))


def _cluster_front(fronts: list[list[Candidate]]) -> list[Candidate]:
    """The clusters (hourly candidates of one instance type in one region) a training job may need: those no other
    cluster beats on both USD per unit of work and the most work per hour it can run at the job's scale
    (:func:`job_units` x throughput per unit): one synchronous job runs on one cluster (build_fleet_model's
    ``cluster_<w>`` row), so a cheaper cluster that is too small for the deadline does not replace a faster one."""
    def ratio(c):
        return c.usd_per_unit_hour / c.throughput_per_unit

    stats = []
    for front in fronts:
        if not front:
            continue
        stats.append((min(ratio(c) for c in front),
                      max(c.throughput_per_unit * min(job_units(c), 1e12) for c in front), front))
    out = []
    for r, rate, front in stats:
        if not any((r2 < r * (1 - 1e-12) and rate2 >= rate) or (r2 <= r and rate2 > rate * (1 + 1e-12))
                   for r2, rate2, _ in stats):
            out.extend(front)
    return out


def _training_front(grp: list[Candidate]) -> list[Candidate]:
    """The hourly candidates a training job may need: the lowest USD per unit of work among those without a unit
    limit, and, of those limited to one instance at a time (``max_units`` 1, no cluster fabric: they share
    build_fleet_model's ``nofabric`` row, sum of k x units <= 1), the front of (USD per unit of work, throughput
    per instance) that is cheaper per unit of work than it — a job with a near deadline needs the fastest of them,
    not the cheapest (the example plan's pretrain-1b on a one-GPU RunPod L40S: cheapest per FLOP, too slow alone)."""
    ratio = lambda c: c.usd_per_unit_hour / c.throughput_per_unit  # noqa: E731
    free = [c for c in grp if c.max_units is None]
    out = [min(free, key=lambda c: (ratio(c), c.okey))] if free else []
    limit = ratio(out[0]) if out else math.inf
    best = -1.0
    for c in sorted((c for c in grp if c.max_units is not None and ratio(c) < limit),
                    key=lambda c: (ratio(c), -c.throughput_per_unit / c.instances_per_unit, c.okey)):
        th = c.throughput_per_unit / c.instances_per_unit
        if th > best * (1 + 1e-12):
            out.append(c)
            best = th
    return out


def _peak_units(w: FleetWorkload, c: Candidate, blocks: list[FleetBlock], work_flops: dict[str, float]) -> float:
    """Units of candidate c that w could need at most in one block (an upper bound used by spot pruning)."""
    if w.training:
        hours = sum(b.hours for b in blocks)
        return math.ceil(work_flops[w.name] / (c.throughput_per_unit * 3600.0 * max(min(hours, w.deadline_hours or hours), 1e-9))) + 1
    peak = max((b.demand.get(w.name, 0.0) for b in blocks), default=0.0)
    return max(math.ceil(peak / c.throughput_per_unit), math.ceil(w.min_replicas / max(c.replicas_per_unit, 1)),
               w.min_replicas)
