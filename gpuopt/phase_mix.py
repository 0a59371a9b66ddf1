"""A serving workload planned as two pools, prefill and decode, each on the GPU type that serves it cheapest, when
that is cheaper (issue 27, point 5: "prefill and decode pools (possibly different GPU types) with KV transfer over
the fabric").

Engines run prefill and decode on separate replicas (NVIDIA Dynamo, SGLang, vLLM's KV connectors; DistServe, OSDI
2024; Splitwise, ISCA 2024 -- which puts prefill on compute-rich and decode on bandwidth-rich GPUs). A unit of both
pools on one offer is a candidate of the planner itself (``--disaggregate``, optimizer.planning.candidates). Here a
serving workload with ``disaggregate`` auto or on is also planned as two workloads, ``NAME/prefill`` and
``NAME/decode`` (``serve_phase``, sized by :func:`optimizer.sizing.disaggregated.pool_sizing`), each carrying the
workload's whole demand with its own floors and N+1, solved together in one MILP so each pool takes the GPU type and
purchase option that serve it cheapest. The KV cache of every request moves from one pool to the other, so both pools
of a workload must share one provider's region: when the MILP puts them apart, both are pinned to each region one
of them used (up to :data:`MAX_REGIONS_TRIED`, the dearest first) and planned again, the cheapest kept. The split is
kept per workload where it costs less than the plan with one pool (co-located replicas, or units of both pools on
one offer): with several workloads split, each is put back whole in turn and left so where that is cheaper. The plan
says how many replicas of which instances run each pool, in which region, and what the split saved.

Not split: plans maximising ROI (a note says so), workloads already one pool (``serve_phase``), a workload whose
generated pool names are taken by another workload (a note says so).
"""

from __future__ import annotations

from typing import Any

PHASES = ("prefill", "decode")
#: Regions a split whose pools landed apart is pinned to and planned again, at most (one MILP each).
MAX_REGIONS_TRIED = 3


def split_request(plan, only: set[str] | None = None) -> tuple[Any, list[str], list[str]]:
    """(the plan with each serving workload whose ``disaggregate`` is auto or on -- of ``only`` when given -- replaced
    by its prefill and decode pools, or None when none is; the names split; notes on workloads left whole)."""
    names = {it.name for it in plan.workloads}
    asked = [it for it in plan.workloads if it.task == "serve" and (it.disaggregate or "off") != "off"
             and it.serve_phase is None and (only is None or it.name in only)]
    if not asked:
        return None, [], []
    if plan.objective == "roi":
        return None, [], [f"{', '.join(it.name for it in asked)}: prefill and decode pools on their own GPU types are "
                          "not planned for --objective roi (units of both pools on one offer are)"]
    items, split, notes = [], [], []
    for item in plan.workloads:
        if item not in asked:
            items.append(item)
            continue
        clash = [f"{item.name}/{ph}" for ph in PHASES if f"{item.name}/{ph}" in names]
        if clash:
            notes.append(f"{item.name}: not split into prefill and decode pools: the pool name {clash[0]} is another "
                         "workload's")
            items.append(item)
            continue
        split.append(item.name)
        for phase in PHASES:
            items.append(item.model_copy(update={"name": f"{item.name}/{phase}", "serve_phase": phase,
                                                 "disaggregate": "off", "mix_by_size": "off"}))
    if not split:
        return None, [], notes
    return _with(plan, items), split, notes


def _with(plan, items):
    new = plan.model_copy(update={"workloads": items})
    new._profiles = None  # the demand profiles are read again: one per pool
    return new


def _lines_of(result, pool: str) -> list:
    return [ln for ln in result.plan.lines if pool in (getattr(ln, "workloads", None) or [])]


def pool_regions(result, names: list[str]) -> dict[str, set]:
    """Per split workload: the (provider, region) pairs of the lines either pool runs on."""
    return {n: {(str(ln.provider), str(ln.region)) for ph in PHASES for ln in _lines_of(result, f"{n}/{ph}")}
            for n in names}


def colocated(result, names: list[str]) -> bool:
    """Whether each split workload's two pools run in one provider's region."""
    return all(len(r) <= 1 for r in pool_regions(result, names).values())


def _pinned(plan, where: dict[str, str]):
    """``plan`` (a split plan) with both pools of each workload in ``where`` pinned to its provider/region."""
    items = [it.model_copy(update={"region": where[it.name.rsplit("/", 1)[0]]})
             if it.serve_phase and it.name.rsplit("/", 1)[0] in where else it for it in plan.workloads]
    return _with(plan, items)


def _solve_colocated(split, names, plan_once, solver_given):
    """(the split plan solved with each workload's pools in one region, its request, why not: "" or the reason),
    or (None, split, reason): planned anywhere first; where pools land apart, pinned to each region they used (the
    dearest first, at most :data:`MAX_REGIONS_TRIED`), the cheapest feasible kept."""
    res = plan_once(split, explain=False, solver_given=solver_given)
    if not res.plan.feasible:
        return None, split, str((res.plan.reason or {}).get("message") or "")
    if colocated(res, names):
        return res, split, ""
    apart = [n for n, r in pool_regions(res, names).items() if len(r) > 1]
    cost: dict[str, dict[str, float]] = {n: {} for n in apart}
    for n in apart:
        for ph in PHASES:
            for ln in _lines_of(res, f"{n}/{ph}"):
                key = f"{ln.provider}/{ln.region}".lower()
                cost[n][key] = cost[n].get(key, 0.0) + ln.total_usd
    choices = {n: sorted(c, key=lambda k: -c[k])[:MAX_REGIONS_TRIED] for n, c in cost.items()}
    best, best_req = None, split
    for i in range(max(len(c) for c in choices.values())):
        where = {n: c[min(i, len(c) - 1)] for n, c in choices.items()}
        req = _pinned(split, where)
        r = plan_once(req, explain=False, solver_given=solver_given)
        if r.plan.feasible and colocated(r, names) and (best is None or r.plan.total_usd < best.plan.total_usd):
            best, best_req = r, req
    return best, best_req, ("" if best else "its pools land in different regions and no one region serves both")


def _num(x):
    return int(x) if x is not None and float(x).is_integer() else x


def _pool_table(result, name: str) -> dict[str, Any]:
    """Where a workload's pools run in ``result``: region, and per pool its replicas at the peak, the GPUs per
    replica of its shapes, and its lines -- count x instance type (pricing), naming the other pools or workloads
    whose replicas share the line's instances (a plan's lines count instances, not which replica runs where)."""
    summ = {w["name"]: w for w in result.plan.to_dict()["workloads"]}
    regions = sorted(pool_regions(result, [name])[name])
    out: dict[str, Any] = {"region": "/".join(regions[0]) if len(regions) == 1 else None}
    for ph in PHASES:
        w = summ.get(f"{name}/{ph}", {})
        lines = _lines_of(result, f"{name}/{ph}")
        out[ph] = {"replicas": _num((w.get("replicas_min_max") or [0, 0])[1]),
                   "gpus_per_replica": sorted({_num(s.get("gpus_per_replica")) for s in (w.get("sizing") or [])
                                               if s.get("gpus_per_replica")}),
                   "on": [f"{ln.count:g} x {ln.instance_type} ({ln.pricing})"
                          + (", shared with " + ", ".join(x for x in ln.workloads if x != f"{name}/{ph}")
                             if len(ln.workloads) > 1 else "") for ln in lines]}
    return out


def _pool_text(name: str, t: dict[str, Any]) -> str:
    parts = []
    for ph in PHASES:
        p = t[ph]
        gpr = "/".join(f"{g:g}" for g in p["gpus_per_replica"]) or "?"
        parts.append(f"{ph} pool {name}/{ph}: {p['replicas']:g} replica(s) of {gpr} GPU(s) on "
                     f"{'; '.join(p['on']) or 'nothing'}")
    return (f"{name}: disaggregated into prefill and decode pools in {t['region']}: " + "; ".join(parts)
            + "; each prompt's KV cache moves over the region's cluster network (optimizer/sizing/disaggregated.py)")


def choose(one, split, names: list[str], split_reason: str = ""):
    """The plan to present of ``one`` (one pool per workload) and ``split`` (prefill and decode pools, co-located;
    None when it could not be planned so), both RecommendResults: the split when feasible and cheaper, with notes
    giving each pool's replicas and instances and the saving, and ``disaggregated_pools`` in the JSON; else
    ``one``, with a note of what the split would have cost or why it was not planned (``split_reason``)."""
    a = one.plan
    b = split.plan if split is not None else None
    take = b is not None and b.feasible and (not a.feasible or b.total_usd < a.total_usd - 0.005)
    chosen = split if take else one
    table: dict[str, Any] = {"kept": "pools" if take else "one pool",
                             "one_pool_usd": a.total_usd if a.feasible else None,
                             "pools_usd": b.total_usd if b is not None and b.feasible else None,
                             "workloads": {n: (_pool_table(split, n) if b is not None and b.feasible else {})
                                           for n in names}}
    chosen.plan.disaggregated_pools = table
    names_txt = ", ".join(names)
    if not take:
        if b is not None and b.feasible and a.feasible:
            a.notes.append(f"prefill and decode pools ({names_txt}) would cost {b.total_usd - a.total_usd:,.2f} USD "
                           "more: one pool per workload kept (" + "; ".join(
                               _pool_text(n, table["workloads"][n]) for n in names) + ")")
        else:
            a.notes.append(f"prefill and decode pools on their own GPU types ({names_txt}): not feasible -- "
                           + (split_reason or "no plan keeps both pools of a workload in one region") + "; one pool "
                           "per workload kept")
        return one
    for n in names:
        b.notes.append(_pool_text(n, table["workloads"][n]))
    if a.feasible:
        saved = a.total_usd - b.total_usd
        b.notes.append(f"prefill and decode pools ({names_txt}): {saved:,.2f} USD less ({100 * saved / a.total_usd:.1f} "
                       f"%) than one pool per workload ({a.total_usd:,.2f} USD)")
    return split


def plan_pools(plan, one, plan_once, *, explain: bool = True, solver_given: bool = False):
    """``one`` (the plan of ``plan`` as given), or the plan with prefill and decode pools of the workloads that ask
    for disaggregation (:func:`split_request`) where that is cheaper (:func:`choose`). ``plan_once`` plans a
    request (gpuopt.api._plan_once). Pools are kept in one region (:func:`_solve_colocated`); with several
    workloads split, each is put back whole in turn and left so where that is cheaper."""
    from optimizer.planning import progress

    split, names, notes = split_request(plan)
    one.plan.notes.extend(notes)
    if split is None:
        return one
    progress.update("planning prefill and decode pools on their own GPU types")
    res, req, reason = _solve_colocated(split, names, plan_once, solver_given)
    if res is not None and len(names) > 1:  # per workload: put each back whole where that is cheaper
        for n in list(names):
            rest = [x for x in names if x != n]
            back, _, _ = split_request(plan, only=set(rest))
            if back is None:
                continue
            r2, req2, _ = _solve_colocated(back, rest, plan_once, solver_given)
            if r2 is not None and r2.plan.total_usd < res.plan.total_usd - 0.005:
                res, req, names = r2, req2, rest
    chosen = choose(one, res, names, reason)
    if chosen is not one:
        chosen.plan.size_mix = one.plan.size_mix  # the split by prompt length that was weighed before
    if chosen is not one and explain:  # explain the plan presented
        kept, table, mix = list(chosen.plan.notes), chosen.plan.disaggregated_pools, chosen.plan.size_mix
        chosen = plan_once(req, explain=True, solver_given=solver_given)
        chosen.plan.notes.extend(n for n in kept if n not in chosen.plan.notes)
        chosen.plan.disaggregated_pools, chosen.plan.size_mix = table, mix
    return chosen
