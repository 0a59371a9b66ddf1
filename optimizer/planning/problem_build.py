"""Make the planning problem from a request: periods of the horizon (:mod:`optimizer.planning.horizon`), demand blocks
(:mod:`optimizer.planning.demand`), the offer rows sized into candidate units (:mod:`optimizer.planning.candidates`),
a prefilter on those arrays that drops rows pruning would drop (:func:`prefilter_rows`), placement groups bounded
by their exact plans when there are very many rows, and dominance pruning (:mod:`optimizer.planning.prune`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from typing import TYPE_CHECKING, Any

from gpuopt.kernel.errors import InputError
from gpuopt.kernel.records import HOURS_PER_MONTH, PRICING_MODELS
from optimizer.planning.candidates import (COMMITTED, DEFAULT_PRICING, Candidate, UnitTable, shared_records,
                                          text_values, unit_table)
from optimizer.planning.horizon import TERM_MONTHS, Period, commitment_cost_factor, slot_starts
from optimizer.planning.owned import owned_rows
from optimizer.planning.problem import (
    CAPACITY_BLOCK,
    DEFAULT_SPOT_CAPACITY,
    PLACEMENTS,
    PURCHASED,
    SPOT_TRAINING_MAX_HOURS,
    SPREADS,
    UNDATED_SPOT_MAX_DAYS,
    Budgets,
    FleetBlock,
    FleetProblem,
    FleetWorkload,
    block_days_of,
    purchase_kind,
    committed_rate,
    committed_rate_arrays,
)
from optimizer.planning.prune import prune_fleet
from optimizer.planning.size_guard import check_candidates, check_offer_rows
from providers.zones import region_has_zones

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def _signable(w: FleetWorkload, t: UnitTable, pr, use, rej: dict[str, int], horizon_months: int):
    """The offers a team would sign for (issue 26), of those ``use`` allows for workload ``w``: no marketplace tier
    for a service unless ``allow_marketplace``; no spot for a synchronous job whose window exceeds
    SPOT_TRAINING_MAX_HOURS unless ``allow_spot_training``; no undated spot row for a workload running longer than
    UNDATED_SPOT_MAX_DAYS; nothing outside the workload's ``region`` when it has one. What is left out is counted in
    ``rej`` (marketplace_tier, spot_training_not_allowed, spot_undated, outside_region)."""
    import numpy as np

    from gpuopt.kernel.records import is_marketplace

    def drop(mask, reason: str):
        n = int(mask.sum())
        if n:
            rej[reason] = rej.get(reason, 0) + n
        return use & ~mask
    if w.region is not None:  # the workload's own region (a pool of a disaggregated deployment)
        prov, reg = text_values(t.offers["provider"]), text_values(t.offers["region"])
        away = [(str(p).lower(), str(r).lower()) != w.region for p, r in zip(prov, reg)]
        use = drop(use & np.array(away, dtype=bool), "outside_region")
    if not w.training and not w.allow_marketplace and "tier" in t.offers.columns:
        tiers = text_values(t.offers["tier"])
        use = drop(use & np.array([is_marketplace(x) for x in tiers], dtype=bool), "marketplace_tier")
    spot = use & (pr == "spot")
    if spot.any():
        window_h = (w.deadline_hours if w.training and w.deadline_hours else HOURS_PER_MONTH * horizon_months)
        if w.training and w.workload.task in ("train", "finetune") and not w.allow_spot_training \
                and window_h > SPOT_TRAINING_MAX_HOURS:
            use = drop(spot, "spot_training_not_allowed")
            spot = use & (pr == "spot")
        if spot.any() and window_h > 24.0 * UNDATED_SPOT_MAX_DAYS and "as_of" in t.offers.columns:
            dates = text_values(t.offers["as_of"])
            use = drop(spot & np.array([x is None or str(x).strip() in ("", "<NA>", "unknown") for x in dates], dtype=bool),
                       "spot_undated")
    return use


def _owned_plan_twins(cands: dict[str, list[Candidate]], workloads: list[FleetWorkload]) -> dict[str, list[Candidate]]:
    """Each workload's candidates without the rows of owned savings plans (optimizer.planning.owned) whose
    on-demand twin (same provider, region, zone, type) was pruned, and without any for a training job (a savings
    plan's spend per hour is not checked against a job's bursts: optimizer.planning.milp). An owned plan's row is its
    twin billed against the plan at the same rate, so what dominates the twin dominates the row."""
    from optimizer.planning.owned import owned_id

    def key(o) -> tuple:
        return (str(o["provider"]), str(o["region"]), str(o.get("zone") or ""), str(o["instance_type"]))

    training = {w.name for w in workloads if w.training}
    out = {}
    for name, cs in cands.items():
        od = {key(c.offer) for c in cs if c.offer["pricing"] == "on_demand"}
        out[name] = [c for c in cs if not (purchase_kind(c.offer) == "savings_plan" and owned_id(c.offer)
                                           and (name in training or key(c.offer) not in od))]
    return out


def _owned_rows(offers) -> "np.ndarray":
    """Boolean mask of the rows of commitments the team owns (``source`` ``owned:<id>``)."""
    import numpy as np

    if "source" not in offers.columns:
        return np.zeros(len(offers), dtype=bool)
    return np.array([str(v or "").startswith("owned:") for v in text_values(offers["source"])], dtype=bool)


def make_problem(workloads: list[FleetWorkload], profiles: dict | list[FleetBlock], offers: "pd.DataFrame", *,
                 budget_usd: float | None = None, objective: str = "cost", pricing: tuple[str, ...] | None = None,
                 spot_capacity: int = DEFAULT_SPOT_CAPACITY, prune: bool = True,
                 max_instances: int | None = None, horizon_months: int | None = None, leftover_value: float = 0.0,
                 placement: str = "region", spread: str = "", budgets: Budgets | None = None,
                 start_date: _dt.date | None = None, keep_unpruned: bool = True, quotas: Any = None,
                 owned: list | None = None,
                 _rows: dict[str, Any] | None = None, _tables: dict[str, Any] | None = None) -> FleetProblem:
    """The problem: periods of the horizon, the blocks of each, candidates per workload (sizing on every offer,
    filtered by pricing and spot permission), then pruned.

    Args: profiles: serving workload name -> optimizer.planning.demand.DemandProfile (blocks are made per period with
        merge_blocks, split at deadlines); or a list of FleetBlock of one typical month (then one period: horizon 1).
    Candidates are made only for the offer rows :func:`prefilter_rows` keeps (prune_fleet then keeps what it would
    keep of all of them); ``keep_unpruned``: also make every candidate, for ``FleetProblem.unpruned`` (the
    explanations price other pricing sets with them), else it is None — and then, on a big catalog
    (:data:`GROUP_BOUND_MIN_ROWS` candidate rows), placement groups that cannot hold the optimum are left out
    first (:func:`_bound_groups`). ``_rows``: workload -> rows of the offers allowed, ``_tables``: the workloads'
    unit tables over ``offers`` (that function's restricted problem). Raises InputError for bad input (objective, placement, spread, leftover value, duplicate names, horizon)
    and for a plan past the size guards (optimizer.planning.size_guard: offer rows, candidates; the model's
    estimated memory is checked where a model is built, optimizer.planning.milp.build_fleet_model).
    """
    from optimizer.planning.horizon import horizon_for, periods as make_periods
    from optimizer.sizing import train_flops

    if objective not in ("cost", "roi"):
        raise InputError("objective", f"unknown objective '{objective}'", accepted="cost, roi")
    if placement not in PLACEMENTS:
        raise InputError("placement", f"unknown placement {placement!r}", accepted=", ".join(PLACEMENTS))
    if spread not in SPREADS:
        raise InputError("spread", f"unknown spread {spread!r}", accepted="zones")
    if not (0.0 <= float(leftover_value) <= 1.0):
        raise InputError("leftover_value", f"must be between 0 and 1, got {leftover_value!r}")
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise InputError("workloads", "workload names must be unique")
    check_offer_rows(len(offers))  # issue 33: every size bounded before it is sized (size_guard)
    budgets = budgets or Budgets(monthly=budget_usd)
    if isinstance(profiles, list):
        blocks = profiles
        H, note, periods, note_m = horizon_months or 1, "", None, ""
    else:
        H, note = horizon_for([w.activity() for w in workloads], horizon_months)
        from optimizer.planning.owned import owned_window

        wins = [owned_window(c, start_date or _dt.date.today(), H) for c in (owned or [])]
        periods = make_periods([w.activity() for w in workloads], H,
                               cuts_at=[m for a, b in wins for m in (a, b) if 0 < m < H])
        merged: list[str] = []
        blocks = blocks_for_periods(periods, profiles, merged)
        note_m = "; ".join(merged)
    import numpy as np

    allowed_pricing = set(pricing) if pricing else set(DEFAULT_PRICING)
    rejected: dict[str, dict[str, int]] = {}
    tables: dict[str, UnitTable] = {}
    usable: dict[str, Any] = {}
    records = shared_records(offers)  # one dict per catalog row, whatever the number of workloads
    shapes: dict = {}  # replica shapes sized once per demand-free workload (candidates.shared_shapes)
    for w in workloads:
        t = _tables[w.name] if _tables is not None else unit_table(w.workload, offers, allow_spot=True,
                                                                   pricing=PRICING_MODELS, records=records,
                                                                   shapes=shapes)
        pr = t.pricing if t.pricing is not None else text_values(t.offers["pricing"])
        # what the team owns is never a purchase option --pricing can rule out (a breaker's find: --pricing
        # on_demand dropped an owned savings plan, $41,417.28 against $24,277.71 with it)
        allowed = np.isin(pr, sorted(allowed_pricing)) | owned_rows(t.offers).to_numpy()
        spot = pr == "spot"
        rej = dict(t.rejected)
        for reason, n in (("pricing_not_allowed", int((t.ok & ~allowed).sum())),
                          ("spot_not_allowed", int((t.ok & allowed & spot).sum()) if not w.allow_spot else 0)):
            if n:
                rej[reason] = rej.get(reason, 0) + n
        use = t.ok & allowed & (~spot if not w.allow_spot else True)
        if not w.training and not pricing:
            # by default a service is not put on capacity blocks (bursts on blocks are asked for: --pricing
            # capacity_block); training jobs are
            cb = use & (pr == CAPACITY_BLOCK)
            if cb.any():
                rej["pricing_not_allowed"] = rej.get("pricing_not_allowed", 0) + int(cb.sum())
                use = use & ~cb
        if not w.training:
            # a capacity block lasts at most 182 days: a service runs on one only in a period of at most 5 months
            runs = [p.months for p in periods if w.name in p.serving] if periods is not None else [H]
            if runs and all(block_days_of(m) is None for m in runs):
                cb = use & (pr == CAPACITY_BLOCK)
                if cb.any():
                    rej["capacity_block_past_182_days"] = rej.get("capacity_block_past_182_days", 0) + int(cb.sum())
                    use = use & ~cb
            # Flex-start runs at most 7 days, queued: capacity for training jobs, not for a service
            flex = use & (pr == "flex_start")
            if flex.any():
                rej["flex_start_training_only"] = rej.get("flex_start_training_only", 0) + int(flex.sum())
                use = use & ~flex
        use = _signable(w, t, pr, use, rej, H)
        tables[w.name], rejected[w.name] = t, rej
        usable[w.name] = use
    # capacity blocks and savings-plan rates are sized by the model itself (no instance-for-instance dominance with
    # hourly or reserved rows): kept out of the prefilter, the group bounds and the pruning, every one a candidate
    # rows of commitments the team owns too ($0 in limited supply: they dominate nothing, optimizer.planning.owned)
    bought = {w: u & (np.isin(tables[w].pricing if tables[w].pricing is not None
                              else text_values(tables[w].offers["pricing"]), sorted(PURCHASED))
                      | (_owned_rows(tables[w].offers) if owned else False))
              for w, u in usable.items()}
    usable = {w: u & ~bought[w] for w, u in usable.items()}
    budgets_ = budgets
    # with quotas dominance is not safe (DESIGN.md): keep every candidate. Owned rows ($0 but few) are kept out of
    # the dominance rules (above, and prune.prune_fleet), which stay sound among the other offers. The groups' cost
    # bounds are computed without owned capacity, which lowers what a group needs: a group they drop might have
    # been cheaper with it (the plan's owned note says the choice was narrowed); its owned rows stay
    do_prune = prune and max_instances is None and not quotas
    n_all = sum(int(u.sum()) for u in usable.values()) + sum(int(b.sum()) for b in bought.values())
    check_candidates(n_all, len(workloads))
    if _rows is not None:
        usable = {w: u & _rows[w] for w, u in usable.items()}
        bought = {w: b & _rows[w] for w, b in bought.items()}
    elif do_prune and not keep_unpruned and n_all >= GROUP_BOUND_MIN_ROWS:
        # capacity blocks and savings-plan rows enter the groups' lower bounds at their rate per unit-hour (a block
        # or a plan costs at least that per hour used) and never the plan in hand (they are not paid by the hour)
        kept = _bound_groups(workloads, profiles, offers, tables, {w: u | bought[w] for w, u in usable.items()},
                             blocks, periods, H, objective=objective, pricing=pricing, spot_capacity=spot_capacity,
                             leftover_value=leftover_value, placement=placement, spread=spread, budgets=budgets,
                             max_instances=max_instances, start_date=start_date)
        usable = {w: kept[w] & ~bought[w] for w in usable}
        bought = {w: kept[w] & bought[w] for w in bought}
    keep_rows = None
    if do_prune and workloads:
        keep_rows = prefilter_rows(tables, usable, workloads, placement=placement, spread=spread,
                                    same_payment=budgets_.monthly is not None or budgets_.upfront is not None,
                                    cc_factor=single_slot_factors(workloads, H, float(leftover_value), budgets_))
    cands: dict[str, list[Candidate]] = {}
    full: dict[str, list[Candidate]] = {}
    for w in workloads:
        t, u = tables[w.name], usable[w.name]
        if keep_unpruned or keep_rows is None:
            full[w.name] = t.candidates(np.flatnonzero(u))
            if keep_rows is not None:
                kr = keep_rows[np.flatnonzero(u)]
                cands[w.name] = [c for c, k in zip(full[w.name], kr.tolist()) if k]
            else:
                cands[w.name] = full[w.name]
        else:
            cands[w.name] = t.candidates(np.flatnonzero(u & keep_rows))
    for w in workloads:
        if bought[w.name].any():
            extra = tables[w.name].candidates(np.flatnonzero(bought[w.name]))
            cands[w.name] = list(cands[w.name]) + extra
            if keep_unpruned or keep_rows is None:
                full[w.name] = list(full[w.name]) + extra
    for w in workloads:  # the model keys offers by provider|region|zone|instance_type|pricing|payment
        seen: set[str] = set()
        for c in cands[w.name]:
            if c.okey in seen:
                raise InputError("offers", f"two offers have the same key {c.okey!r} (provider|region|zone|"
                                           "instance_type|pricing|payment): give each its zone, or drop one")
            seen.add(c.okey)
    work = {w.name: float(train_flops(w.workload)) for w in workloads if w.training}
    pruned = 0
    free_cands = None
    if do_prune:
        # the terms bought once over the horizon, by their cost over it: FleetProblem.single_slot_costs, computed
        # here for the candidates before the problem (and its slots) exists
        factor = single_slot_factors(workloads, H, float(leftover_value), budgets)
        cc = {c.okey: committed_rate(c.offer) * HOURS_PER_MONTH * factor[c.offer["pricing"]]
              for cs in cands.values() for c in cs if c.offer["pricing"] in factor}
        cands, _ = prune_fleet(cands, workloads, blocks, work, spot_capacity, placement, spread, cc,
                               budgets.monthly is not None or budgets.upfront is not None)
        cands = _owned_plan_twins(cands, workloads)
        pruned = n_all - sum(len(v) for v in cands.values())
        if budgets.monthly is not None or budgets.upfront is not None or budgets.commitment is not None:
            # (a total budget alone changes no pruning rule: the problem without it has the same candidates)
            free_cands = _free_candidates(cands, workloads, blocks, work, spot_capacity, placement, spread, H,
                                          float(leftover_value))
    problem = FleetProblem(workloads=workloads, blocks=blocks, cands=cands, work_flops=work, objective=objective,
                           spot_capacity=spot_capacity, rejected=rejected, max_instances=max_instances,
                           horizon_months=H, periods=periods, leftover_value=float(leftover_value),
                           placement=placement, spread=spread, budgets=budgets, start_date=start_date,
                           horizon_note=note, profiles=None if isinstance(profiles, list) else dict(profiles),
                           merge_note=note_m, pruned=pruned, quotas=quotas or None,
                           owned={c.commitment_discount_id: c for c in (owned or [])})
    problem.unpruned = full if keep_unpruned else None
    problem.free_cands = free_cands
    return problem


def _free_candidates(cands, workloads, blocks, work, spot_capacity, placement, spread, H, leftover_value
                     ) -> dict[str, list[Candidate]] | None:
    """The candidates of the problem without its budgets: ``cands`` (pruned under the budgets' rules, which compare
    payment options apart and terms by their months) pruned again by the rules without them (every payment option
    compared, terms bought once over the horizon by their cost over it: prune.prune_fleet). Sound for that
    problem: each rule under the budgets is one of its rules too, so its optimum is among them. None when they
    drop nothing. What optimizer.planning.solve.solve_within_limits plans first (issue 33: 200 budgeted services
    kept 629,710 candidates where the same without the budget keep 332,350, and proved nothing in the time)."""
    cc_factor = single_slot_factors(workloads, H, leftover_value, Budgets())
    cc = {c.okey: committed_rate(c.offer) * HOURS_PER_MONTH * cc_factor[c.offer["pricing"]]
          for cs in cands.values() for c in cs if c.offer["pricing"] in cc_factor}
    free, dropped = prune_fleet(cands, workloads, blocks, work, spot_capacity, placement, spread, cc, False)
    return _owned_plan_twins(free, workloads) if dropped else None


#: Largest class of committed rows the prefilter compares pairwise (larger ones are left to prune_fleet).
_PAIRWISE_MAX = 2_000


def shape_codes(t) -> "np.ndarray":
    """The replica shape (``optimizer.planning.problem.replica_shape``: shape label and precision) of each row of
    the unit table ``t`` as an integer code (-1 where the row makes no candidate)."""
    import numpy as np

    seen: dict[tuple, int] = {}
    codes = [seen.setdefault((h[3], str(getattr(h[2], "precision", "") or "")), len(seen)) if h[0] is not None
             else -1 for h in t.hardware]
    return np.array(codes + [-1], dtype=np.int64)[t.hw]


def one_shape(w: FleetWorkload) -> bool:
    """``w`` runs one replica shape per region (issue 31): a serving workload, not divisible, without
    ``mixed_replicas`` -- prune_fleet then compares only offers whose replicas have the same shape."""
    return not w.training and not w.divisible and not w.mixed_replicas


def _unit_dominated(rows, cost, g, cls, tables, usable, workloads):
    """Which committed rows (positions ``rows``, cost ``cost``, class ``g``/``cls`` as in :func:`prefilter_rows`)
    one unit of a cheaper row of their class replaces for every workload that can use them (prune_fleet's
    ``dominates``, unit for unit): both rows single-instance units for each such workload, with at least the
    throughput and replicas, at a cost below the row's by more than the margin. Only single-instance rows and
    only one for one: then whatever prune_fleet finds dominating the dominator (one for one or m copies for one)
    dominates the row too, so prune_fleet drops it whichever rows it keeps. (Its m-copies rule is not applied
    here: a chain of m copies through a row with a multi-instance unit for a third workload does not carry over;
    a random catalog found it.) Returns a boolean array over ``rows``."""
    import numpy as np
    import pandas as pd

    out = np.zeros(len(rows), dtype=bool)
    if len(rows) < 2:
        return out
    grp = pd.DataFrame({"g": g, "cls": cls}).groupby(["g", "cls"], sort=False).ngroup().to_numpy()
    order = np.argsort(grp, kind="stable")
    bounds = np.flatnonzero(np.diff(grp[order])) + 1
    def lone_of(t):  # rows whose unit a job may run on only one instance at a time (no cluster fabric)
        hw = np.array([h[0] is not None and len(h) > 6 and h[6] is not None for h in t.hardware] + [False])
        return hw[t.hw]

    per_w = [(usable[w.name][rows], tables[w.name].instances[rows], tables[w.name].throughput[rows],
              tables[w.name].replicas[rows], lone_of(tables[w.name])[rows],
              shape_codes(tables[w.name])[rows] if one_shape(w) else None) for w in workloads]
    margin = 1.0 + _PREFILTER_MARGIN
    for idx in np.split(order, bounds):
        s = len(idx)
        if s < 2 or s > _PAIRWISE_MAX:
            continue
        c = cost[idx]
        dom = np.ones((s, s), dtype=bool)  # [j, i]: j's copies replace i
        m = np.ones((s, s))
        for u_a, k_a, t_a, r_a, l_a, sh_a in per_w:
            u, k, t, r, lone = u_a[idx], k_a[idx], t_a[idx], r_a[idx], l_a[idx]
            single = (k == 1) & (t > 0) & (r > 0)
            dom &= ~u[None, :] | (u[:, None] & single[:, None] & single[None, :])
            if sh_a is not None:  # one replica shape per region: only a row of the same shape replaces it
                sh = sh_a[idx]
                dom &= ~u[None, :] | (sh[:, None] == sh[None, :])
            # as dominates: a one-instance-at-a-time unit replaces only another such unit
            dom &= ~u[None, :] | ~(lone[:, None] & ~lone[None, :])
            with np.errstate(divide="ignore", invalid="ignore"):
                mw = np.maximum(np.ceil(t[None, :] / t[:, None]), np.ceil(r[None, :] / r[:, None]))
            m = np.where(u[None, :] & single[:, None], np.maximum(m, np.nan_to_num(mw, nan=np.inf)), m)
        with np.errstate(invalid="ignore"):
            dom &= (m <= 1) & (c[:, None] * margin < c[None, :])
        np.fill_diagonal(dom, False)
        out[idx] = dom.any(axis=0)
    return out


#: Candidate rows (over all workloads) from which make_problem bounds placement groups before making candidates
#: (:func:`_bound_groups`); the shipped snapshot has ~3,000 per workload and is never bounded.
GROUP_BOUND_MIN_ROWS = 20_000


#: Placement groups per workload (the lowest lower bounds) planned first, for a plan that bounds the others.
GROUP_BOUND_FIRST = 20


def _bound_groups(workloads, profiles, offers, tables, usable, blocks, periods, H, **kw) -> dict[str, Any]:
    """Leave out, per serving workload, the placement groups no optimal plan can use; returns the usable rows per
    workload (unchanged when the bound does not apply).

    The lower bound of serving workload w in group g: the sum over the blocks w runs in (hours x months) of
    max(demand x rho_wg, p_wg), where rho_wg is the cheapest USD per token/s-hour of a row of g and p_wg its
    cheapest unit-hour — a block with demand needs at least one unit of w's (units are not shared within a
    block). A committed unit is charged at its effective rate (``committed_rate``) x the least its term costs per
    hour it covers inside the horizon, over the months it may be bought (``slot_starts``): whatever it costs, it
    costs at least that for each hour it is used. Spot caps and redundancy floors only add.
    So every plan costs at least the sum of its workloads' bounds in the groups they use.

    The upper bound: the cheaper of two plans of the whole problem. (1) Each workload alone with the same n units
    of one row in every block it runs in (n enough for its peak and its floors; an hourly row paid by the hour, a
    term bought once over the horizon paid whole), on its cheapest such row; (2) the plan of the problem with each
    workload restricted to the :data:`GROUP_BOUND_FIRST` groups of lowest bound and the as many where plan (1) is
    cheapest (``optimizer.planning.exact.solve_separable``, each workload apart when they could share), when that plans
    it. Group g is left out for w when LB_wg + the other workloads' lowest bounds > that cost: no plan using it is
    cheaper. Measured on the 500,000-offer benchmark (one Llama-2-7B service, 12 months): the bound keeps 679 of
    6,203 groups (without the one-unit term, 2,278; with 3-year terms at their effective rate, 4,346).
    Applies to minimum cost without budgets, quotas or zone spread, every workload a placed serving one (training
    jobs are not placed)."""
    import numpy as np

    from optimizer.planning.exact import solve_separable

    if kw["objective"] != "cost" or kw["placement"] == "any" or kw["spread"] or kw["budgets"].any() or \
            kw["max_instances"] is not None or any(w.training or w.divisible for w in workloads):
        return usable
    frame = tables[workloads[0].name].offers
    n = len(frame)
    if n == 0:
        return usable
    cols = {"region": ["provider", "region"], "provider": ["provider"]}[kw["placement"]]
    grp = frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()
    ng = int(grp.max()) + 1
    pr = tables[workloads[0].name].pricing
    pr = text_values(frame["pricing"]) if pr is None else pr
    com = np.isin(pr, sorted(COMMITTED))
    rate = np.zeros(n)
    if com.any():
        # committed_rate, row by row, x the least a term costs per hour it covers inside the horizon (a 3-year
        # term on a 12-month horizon is paid for 36 months and covers 12: 3x; the leftover value lowers it)
        acts = [w.activity() for w in workloads]
        lv = float(kw["leftover_value"])
        factor = {}
        for p_name, T in TERM_MONTHS.items():
            per = [(T - lv * max(0, s + T - H)) / (T - max(0, s + T - H)) for s in slot_starts(acts, H, T)]
            factor[p_name] = min(per) if per else 1.0
        f = np.ones(n)
        for p_name, fac in factor.items():  # a mask per pricing model, not a Python loop over the rows
            f[pr == p_name] = fac
        base_rate = committed_rate_arrays(frame, pr)
        rate = base_rate * f
    else:
        base_rate = np.zeros(n)
    lb: dict[str, Any] = {}
    ub_one: dict[str, Any] = {}
    cc = single_slot_factors(workloads, H, float(kw["leftover_value"]), kw["budgets"])
    for w in workloads:
        t, use = tables[w.name], usable[w.name]
        per_hour = np.where(com, rate * t.instances, t.usd_per_unit_hour)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_token = np.where(use & (t.throughput > 0), per_hour / t.throughput, np.inf)
        per_token = np.where(np.isnan(per_token), np.inf, per_token)
        unit = np.where(use & ~np.isnan(per_hour), per_hour, np.inf)
        rho, p_min = np.full(ng, np.inf), np.full(ng, np.inf)
        np.minimum.at(rho, grp, per_token)
        np.minimum.at(p_min, grp, unit)
        bound = np.zeros(ng)
        for b in blocks:
            per = periods[b.period] if periods else None
            if per is not None and w.name not in per.serving:
                continue
            d = float(b.demand.get(w.name, 0.0))
            if d > 0:
                with np.errstate(invalid="ignore"):
                    bound += b.hours * (per.months if per is not None else H) * np.maximum(d * rho, p_min)
        lb[w.name] = np.where(np.isnan(bound), np.inf, bound)
        # a plan of w alone in each group: the same n units of one row in every block it runs in, n enough for
        # its peak and its floors; hourly rows paid each hour, terms bought once over the horizon (cc) paid whole
        peak, run_hours = 0.0, 0.0
        for b in blocks:
            per = periods[b.period] if periods else None
            if per is not None and w.name not in per.serving:
                continue
            peak = max(peak, float(b.demand.get(w.name, 0.0)))
            run_hours += b.hours * (per.months if per is not None else H)
        m = int(w.min_replicas)
        with np.errstate(divide="ignore", invalid="ignore"):
            units = np.maximum.reduce([np.ceil(peak / t.throughput), np.ceil(m / np.maximum(t.replicas, 1)),
                                       np.ceil(m / np.maximum(t.instances, 1)), np.ones(n)])
            one = np.where(pr == "on_demand", units * t.usd_per_unit_hour * run_hours, np.inf)
            for p_name, fac in cc.items():
                one = np.where(pr == p_name, units * t.instances * base_rate * HOURS_PER_MONTH * fac, one)
        one = np.where(use & np.isfinite(one), one, np.inf)
        single = np.full(ng, np.inf)
        np.minimum.at(single, grp, one)
        ub_one[w.name] = single
    low = {w: float(v.min()) for w, v in lb.items()}
    if not all(math.isfinite(v) for v in low.values()):
        return usable
    rows = {}
    for w in workloads:
        first = np.concatenate([np.argsort(lb[w.name], kind="stable")[:GROUP_BOUND_FIRST],
                                np.argsort(ub_one[w.name], kind="stable")[:GROUP_BOUND_FIRST]])
        rows[w.name] = np.isin(grp, first[np.isfinite(lb[w.name][first])])
    sub = make_problem(workloads, profiles, offers, objective="cost", pricing=kw["pricing"],
                       spot_capacity=kw["spot_capacity"], horizon_months=H, leftover_value=kw["leftover_value"],
                       placement=kw["placement"], budgets=kw["budgets"], start_date=kw["start_date"],
                       keep_unpruned=False, _rows=rows, _tables=tables)
    if any(not sub.cands.get(w.name) for w in workloads):
        return usable
    sol = solve_separable(sub, apart=True)
    ub = sum(float(v.min()) for v in ub_one.values())  # each workload alone, apart: a plan of the whole problem
    if sol is not None and sol.report.status == "optimal" and math.isfinite(sol.cost):
        ub = min(ub, sol.cost)
    if not math.isfinite(ub):
        return usable
    total_low = sum(low.values())
    out = {}
    for w in workloads:
        limit = ub - (total_low - low[w.name])
        out[w.name] = usable[w.name] & (lb[w.name] <= limit * (1 + 1e-9) + 1e-6)[grp]
    return out


def single_slot_factors(workloads: list[FleetWorkload], horizon: int, leftover_value: float,
                         budgets: Budgets) -> dict[str, float]:
    """pricing -> commitment_cost_factor of a term bought once at month 0 and covering the whole horizon (the
    terms :meth:`FleetProblem.single_slot_costs` prices by their cost over the horizon); {} when that method gives
    nothing (a cash, upfront or commitment limit)."""
    if budgets.monthly is not None or budgets.upfront is not None or budgets.commitment is not None:
        return {}
    acts = [w.activity() for w in workloads]
    out = {}
    for p, t in TERM_MONTHS.items():
        if list(slot_starts(acts, horizon, t)) == [0] and t >= horizon:
            out[p] = commitment_cost_factor(0, t, horizon, leftover_value)
    return out


#: Relative price margin below which the row prefilter keeps both rows (prune_fleet, which compares the same
#: figures computed one at a time, decides between them).
_PREFILTER_MARGIN = 1e-9


def prefilter_rows(tables: dict[str, "UnitTable"], usable: dict[str, Any], workloads: list[FleetWorkload], *,
                    placement: str, spread: str, same_payment: bool, cc_factor: dict[str, float]):
    """Rows of the offers frame that :func:`prune_fleet` may keep, found on arrays before any candidate exists
    (500,000 offers: candidates for every row took 5 s and pruning them 5 s). Returns a boolean array over the
    rows of the unit tables (the same frame for every workload: make_problem sizes with the same filter).

    A row is dropped only when prune_fleet drops it, and only for a reason that leaves every other decision of
    prune_fleet as it was — so prune_fleet on the kept rows keeps exactly what it keeps on all of them
    (tests/test_prefilter.py checks this on random catalogs and on the snapshot):

    - on-demand, for each serving workload and placement group (zone too when spreading; with a redundancy floor
      of two or more, replicas and instances per unit up to it too): a row is needed by the
      workload unless another row of the group costs less per unit-hour with at least its throughput, or the same
      with more throughput (then it is not on prune_fleet's staircase); for a training job, unless its USD per
      unit of work is above the lowest. A row is kept when some workload needs it.
    - committed: among rows of the same placement group (zone when spreading, payment under a cash or upfront
      limit), the same hardware (:data:`optimizer.planning.candidates.HARDWARE_COLUMNS`: the same units for every
      workload) and the same term — or both terms bought once over the whole horizon (``cc_factor``), compared by their
      cost over it — only the cheapest are kept: the others are dominated unit for unit by a row that comes first
      in prune_fleet's order, and whatever they dominate, that row dominates too. Then, across hardware, a
      single-instance row that one unit of a cheaper one replaces for every workload (:func:`_unit_dominated`).
    - spot (not spreading over zones): of one instance type in one region with the same hardware, the cheapest
      zones (prune_fleet keeps only the cheapest zone of a capped group; the hardware, and so the capacity
      prune_fleet counts, is the same).

    Prices closer than :data:`_PREFILTER_MARGIN` (relative) count as equal: both rows are kept.
    """
    import numpy as np
    import pandas as pd

    first = tables[workloads[0].name]
    frame = first.offers
    n = len(frame)
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    hw = first.hw
    pr = first.pricing if first.pricing is not None else text_values(frame["pricing"])
    any_use = np.zeros(n, dtype=bool)
    for u in usable.values():
        any_use |= u
    if any_use.sum() < 0.9 * n:  # the rows some workload may use, alone (cheaper to group)
        idx = np.flatnonzero(any_use)
        cols = [c for c in ("provider", "region", "zone", "instance_type", "pricing", "payment", "usd_per_hour",
                            "upfront_usd", "recurring_usd_per_hour") if c in frame.columns]
        part = frame[cols].iloc[idx]  # the columns the prefilter reads, once for every workload
        sub = {w: dataclasses.replace(t, offers=part, ok=t.ok[idx], instances=t.instances[idx],
                                      replicas=t.replicas[idx], throughput=t.throughput[idx],
                                      usd_per_unit_hour=t.usd_per_unit_hour[idx], hw=t.hw[idx],
                                      pricing=pr[idx]) for w, t in tables.items()}
        keep[idx] = prefilter_rows(sub, {w: u[idx] for w, u in usable.items()}, workloads, placement=placement,
                                    spread=spread, same_payment=same_payment, cc_factor=cc_factor)
        return keep
    price = pd.to_numeric(frame["usd_per_hour"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    if spread == "zones":
        # the failure domain as providers.zones.zone_of gives it (prune_fleet groups by it): the zone of a zonal row,
        # one location per provider and region without zones, nothing more for a regional row in a zoned region
        zone_text = text_values(frame["zone"]) if "zone" in frame.columns else np.full(n, "", dtype=object)
        regions = frame[["provider", "region"]].astype(str).drop_duplicates()
        zoned = {(p_, r_) for p_, r_ in regions.itertuples(index=False) if region_has_zones(p_, r_)}
        prov, reg = text_values(frame["provider"]), text_values(frame["region"])
        failure_domain = np.array([("zone|" + str(z)) if (z == z and z) else
                                   ("" if (str(p_), str(r_)) in zoned else f"location|{p_}|{r_}")
                                   for z, p_, r_ in zip(zone_text, prov, reg)], dtype=object)
        frame = frame.assign(_failure_domain=failure_domain)

    def codes(cols: list[str]):
        """Group number of each row by ``cols`` (a missing value is a group of its own: finer than prune_fleet's
        str() of it, so never a comparison prune_fleet would not make)."""
        cols = [c for c in cols if c in frame.columns]
        if not cols:
            return np.zeros(n, dtype=np.int64)
        return frame.groupby(cols, dropna=False, sort=False, observed=True).ngroup().to_numpy()

    pg_cols = {"region": ["provider", "region"], "provider": ["provider"]}.get(placement, [])
    zone_cols = ["_failure_domain"] if spread == "zones" else []
    margin = 1.0 + _PREFILTER_MARGIN

    # on-demand: the per-workload staircase of (USD per unit-hour, throughput) in each group
    od = pr == "on_demand"
    if od.any():
        g_od = codes(pg_cols + zone_cols)
        for w in workloads:
            t = tables[w.name]
            rows = np.flatnonzero(usable[w.name] & od)
            if len(rows) == 0:
                continue
            p, th = t.usd_per_unit_hour[rows], t.throughput[rows]
            if w.training:
                # as prune_fleet's _training_front: the cheapest per unit of work without a unit limit, and every
                # row limited to one instance at a time (no cluster fabric) that is cheaper per unit of work
                ratio = p / th
                lone_hw = np.array([h[0] is not None and len(h) > 6 and h[6] is not None for h in t.hardware] + [False])
                lone = lone_hw[t.hw[rows]]
                free = ratio[~lone]
                best = np.nanmin(free) if free.size else np.inf
                keep[rows[~lone & ~(ratio > best * margin)]] = True
                keep[rows[lone & ~(ratio > best * margin)]] = True
                continue
            g = g_od[rows]
            if one_shape(w):  # one replica shape per region: a staircase per shape, as prune_fleet
                g = pd.DataFrame({"g": g, "s": shape_codes(t)[rows]}).groupby(["g", "s"], sort=False).ngroup() \
                    .to_numpy()
            if w.min_replicas > 1:  # a floor: one staircase per (replicas, instances) per unit up to it, as prune_fleet
                mr = int(w.min_replicas)
                g = pd.DataFrame({"g": g, "r": np.minimum(t.replicas[rows], mr),
                                  "k": np.minimum(t.instances[rows], mr)}).groupby(
                    ["g", "r", "k"], sort=False).ngroup().to_numpy()
            order = np.lexsort((-th, p, g))
            gs, ps, ts = g[order], p[order], th[order]
            # running max of throughput within each group, in (price, -throughput) order
            cm = pd.Series(ts).groupby(gs).cummax().to_numpy()
            start = np.ones(len(order), dtype=bool)  # first row of each run of equal (group, price)
            start[1:] = (gs[1:] != gs[:-1]) | (ps[1:] != ps[:-1])
            run = np.cumsum(start) - 1
            run_first = np.flatnonzero(start)
            # best throughput over strictly cheaper rows of the group: the running max just before the run
            before = np.full(len(run_first), -np.inf)
            prev = run_first - 1
            same_g = (prev >= 0) & (gs[np.maximum(prev, 0)] == gs[run_first])
            before[same_g] = cm[prev[same_g]]
            cheaper = before[run]
            run_max = ts[run_first][run]  # the run's best (sorted by -throughput inside it)
            needed = ~((cheaper >= ts) | (run_max > ts))
            keep[rows[order[needed]]] = True

    # committed: the cheapest of each (group, hardware, term or bought-over-the-horizon) class
    com = np.isin(pr, sorted(COMMITTED)) & any_use
    if com.any():
        rows = np.flatnonzero(com)
        rate = committed_rate_arrays(frame, pr)[rows]
        cost = price[rows].copy()
        cls = pr[rows].copy()
        for p_name, factor in cc_factor.items():
            sel = pr[rows] == p_name
            if not sel.any():
                continue
            # committed_rate x 730 x the factor, as FleetProblem.slot_cost computes it
            cost[sel] = rate[sel] * HOURS_PER_MONTH * factor
            cls[sel] = "cc"
        pay_cols = ["payment"] if same_payment else []
        g = codes(pg_cols + zone_cols + pay_cols)[rows]
        key = pd.DataFrame({"g": g, "hw": hw[rows], "cls": cls}).groupby(["g", "hw", "cls"], sort=False).ngroup()
        best = pd.Series(cost).groupby(key.to_numpy()).transform("min").to_numpy()
        left = ~(cost > best * margin)
        rows, cost, g, cls = rows[left], cost[left], g[left], cls[left]
        keep[rows[~_unit_dominated(rows, cost, g, cls, tables, usable, workloads)]] = True

    # spot: the cheapest zones of each instance type, region and hardware
    sp = (pr == "spot") & any_use
    if sp.any():
        rows = np.flatnonzero(sp)
        if spread == "zones":
            keep[rows] = True
        else:
            g = codes(["provider", "region", "instance_type"])[rows]
            key = pd.DataFrame({"g": g, "hw": hw[rows]}).groupby(["g", "hw"], sort=False).ngroup().to_numpy()
            best = pd.Series(price[rows]).groupby(key).transform("min").to_numpy()
            keep[rows[~(price[rows] > best * margin)]] = True
    # rows of any other pricing (none today) are left to prune_fleet
    other = any_use & ~od & ~np.isin(pr, sorted(COMMITTED)) & (pr != "spot")
    keep |= other
    return keep


def blocks_for_periods(periods: list[Period], profiles: dict, notes: list[str] | None = None) -> list[FleetBlock]:
    """The blocks of every period: the typical month of the serving workloads that run in it (their profiles merged
    by the load-duration curve), split at the training deadlines that fall in it. ``notes`` collects what was
    merged (optimizer.planning.demand.merge_blocks' note), once per distinct period shape."""
    from optimizer.planning.demand import merge_blocks

    out: list[FleetBlock] = []
    cache: dict[tuple, list] = {}
    for p in periods:
        key = (p.serving, tuple(sorted(set(p.splits.values()))))
        if key not in cache:
            cache[key] = merge_blocks({n: profiles[n] for n in p.serving}, sorted(set(p.splits.values())))
            if notes is not None and cache[key].note not in notes:
                notes.append(cache[key].note)
        for mb in cache[key]:
            grid = cache[key]
            out.append(FleetBlock(start_hour=float(mb.start_hour), hours=float(mb.hours), demand=dict(mb.demand),
                                  label=mb.label, end_hour=float(mb.end_hour), period=p.index, slots=tuple(mb.members),
                                  slot_labels=tuple(grid.grid_labels[j] for j in mb.members if j < len(grid.grid_labels)),
                                  grid_hours=grid.grid_period))
    return out
